"""How a conversation becomes the prompt ids a model reads, and its reply ids become text, for training.

The rule is the llama.cpp backend's (:mod:`memread.backends.chat_prompt`): the chat template is rendered with a
placeholder for each message's content, the template's own text is tokenized with special tokens on and the
contents with special tokens off, so a document holding ``<|im_end|>`` stays text. :class:`LlamaChatTokenizer`
asks a loaded :class:`~memread.backends.llamacpp.LlamaCppBackend` (what ``memread ask`` sends, by definition);
:class:`HFChatTokenizer` applies the same rule with a Hugging Face tokenizer (the one verl trains with), so the
ids a policy is trained on are the ids ``memread ask`` sends it later (tests/test_train_verl.py checks this
token for token on SmolLM2).

A :class:`ChatTokenizer` also says which ids end a reply, and decodes a reply without them.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from memread.backends.base import Message
from memread.backends.chat_prompt import END_OF_TURN
from memread.tokens import Tokenizer


@runtime_checkable
class ChatTokenizer(Protocol):
    """What an episode needs from a model's tokenizer."""

    @property
    def tokenizer(self) -> Tokenizer:
        """Plain-text tokenizer: chunk budgets are counted with it."""
        ...

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        """The ids of the whole prompt: template, contents as plain text, the generation prompt."""
        ...

    def text_ids(self, text: str) -> list[int]:
        """``text`` as plain text (a reply begun for the model, e.g. ``\\boxed{``)."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """A reply's text; control tokens (the end of turn) give no text."""
        ...

    def is_end(self, token: int) -> bool:
        """Does ``token`` end a reply (end of turn, end of sequence)?"""
        ...


class LlamaChatTokenizer:
    """The llama.cpp backend's own prompt ids (``memread ask``'s default backend)."""

    def __init__(self, backend: Any) -> None:
        import llama_cpp

        self._backend = backend
        llm = backend._llm  # the loaded model; the backend keeps it private but this module mirrors its rule
        self._vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self._is_eog = llama_cpp.llama_vocab_is_eog
        self._stop_ids: set[int] = set(getattr(backend, "_stop_ids", set()))

    @property
    def tokenizer(self) -> Tokenizer:
        tokenizer: Tokenizer = self._backend.tokenizer
        return tokenizer

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        return list(self._backend.prompt_tokens(messages))

    def text_ids(self, text: str) -> list[int]:
        return self.tokenizer.encode(text) if text else []

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode([i for i in ids if not self.is_end(i)])

    def is_end(self, token: int) -> bool:
        return token in self._stop_ids or bool(self._is_eog(self._vocab, token))


class HFTextTokenizer:
    """A Hugging Face tokenizer as a :class:`memread.tokens.Tokenizer`: plain text, special-token strings in the
    text counted as text (as :class:`~memread.backends.llamacpp.LlamaTokenizer` does)."""

    def __init__(self, tokenizer: Any, name: str | None = None) -> None:
        self._tok = tokenizer
        self.name = f"hf:{name or getattr(tokenizer, 'name_or_path', '') or type(tokenizer).__name__}"

    def encode(self, text: str) -> list[int]:
        if not text:
            return []
        return list(self._tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=True))


class HFChatTokenizer:
    """The llama.cpp backend's rule with a Hugging Face tokenizer and its chat template.

    ``add_bos``: put the BOS token first when the template does not write it (llama.cpp does so when the GGUF
    says ``tokenizer.ggml.add_bos_token``); None asks the tokenizer (``add_bos_token``). ``end_ids``: the ids
    that end a reply; None: the EOS token and the end-of-turn markers of the common templates that are single
    tokens of this vocabulary.
    """

    def __init__(self, tokenizer: Any, *, add_bos: bool | None = None, end_ids: Sequence[int] | None = None,
                 chat_template: str | None = None) -> None:
        self._tok = tokenizer
        self._text = HFTextTokenizer(tokenizer)
        self._template = chat_template
        self._add_bos = bool(getattr(tokenizer, "add_bos_token", False)) if add_bos is None else add_bos
        if end_ids is None:
            found: set[int] = set()
            if tokenizer.eos_token_id is not None:
                found.add(int(tokenizer.eos_token_id))
            vocab = tokenizer.get_vocab()
            for markers in END_OF_TURN.values():
                found.update(int(vocab[m]) for m in markers if m in vocab)
            end_ids = sorted(found)
        self._end = frozenset(int(i) for i in end_ids)

    @property
    def tokenizer(self) -> Tokenizer:
        return self._text

    def render(self, messages: Sequence[Message]) -> list[tuple[str, bool]]:
        """The prompt as (text, is_content) pieces, as :meth:`memread.backends.chat_prompt.ChatPrompt.render`."""
        nonce = secrets.token_hex(8)
        keys = [f"[[memread-{nonce}-{i}]]" for i in range(len(messages))]
        chat = [{"role": m.role, "content": key} for m, key in zip(messages, keys, strict=True)]
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": True}
        if self._template is not None:
            kwargs["chat_template"] = self._template
        rendered = str(self._tok.apply_chat_template(chat, **kwargs))
        contents = {key: m.content for key, m in zip(keys, messages, strict=True)}
        pieces: list[tuple[str, bool]] = []
        for i, part in enumerate(re.split(rf"(\[\[memread-{nonce}-\d+\]\])", rendered)):
            if i % 2:
                pieces.append((contents[part], True))
            elif part:
                pieces.append((part, False))
        return pieces

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        ids: list[int] = []
        for text, is_content in self.render(messages):
            if not text:
                continue
            if is_content:
                ids.extend(self._text.encode(text))
            else:
                ids.extend(self._tok(text, add_special_tokens=False)["input_ids"])
        bos = self._tok.bos_token_id
        if self._add_bos and bos is not None and ids[:1] != [bos]:
            ids.insert(0, int(bos))
        return ids

    def text_ids(self, text: str) -> list[int]:
        return self._text.encode(text)

    @property
    def end_ids(self) -> list[int]:
        """The ids that end a reply."""
        return sorted(self._end)

    def decode(self, ids: Sequence[int]) -> str:
        return self._text.decode([i for i in ids if i not in self._end])

    def is_end(self, token: int) -> bool:
        return token in self._end
