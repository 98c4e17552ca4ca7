"""Keeping document text plain text on backends that cannot promise it.

A chat model's template marks turns with control tokens (``<|im_start|>``, ``<|im_end|>``, ``<|eot_id|>``,
``<start_of_turn>`` …). An engine that renders the template to one string and tokenizes it with special
tokens enabled turns those strings into control tokens wherever they appear, also inside a document. A
document could then close the user's turn and write its own. Measured, not assumed: ``python -m
llama_cpp.server`` reads ``<|im_end|>`` in a message as one control token (SmolLM2: 39 prompt tokens where
the text takes 44), and vLLM's ``LLM.chat`` renders and tokenizes the same way.

A backend says what it guarantees with ``Capabilities.tokenizes_text_safely``: True when message contents are tokenized
as plain text whatever they contain (the in-process llama.cpp backend renders the template around
placeholders and tokenizes contents with special tokens off). For every other backend — the OpenAI-compatible
server, vLLM, and any plugin that does not say — :func:`guard` wraps it so that each control-token string in
a message's content gets an invisible U+2060 WORD JOINER after its first character before it is sent. The
model then sees the characters, never the control token. The chat template's own tokens are untouched (the
server adds them around the contents), and the wrapper's tokenizer measures the text as sent, so chunk
budgets include the few extra tokens. The loop records the first neutralisation as a warning in the trace.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memread.backends.base import Backend, Capabilities, ChatRequest, Completion, Message, capabilities
from memread.tokens import Tokenizer

# U+2060 WORD JOINER: invisible, no width, no meaning of its own (unlike U+200D, which joins emoji).
JOINER = "\u2060"

# Control-token spellings of the chat templates in use. Broad on purpose: breaking a look-alike that a given
# model would have read as text costs one invisible character; missing a real one hands the turn over.
CONTROL_STRINGS = re.compile(
    r"<\|[A-Za-z0-9_.:\- ]{1,48}\|>"  # ChatML, Qwen, Llama-3, Phi, GPT: <|im_end|>, <|eot_id|>, <|endoftext|>
    r"|<｜[^｜<>\n]{1,48}｜>"  # DeepSeek (full-width bars): <｜end▁of▁sentence｜>
    r"|</?(?:start|end)_of_[a-z_]{1,24}>"  # Gemma: <start_of_turn>, <end_of_turn>
    r"|</?(?:s|bos|eos|pad|unk)>"  # SentencePiece models: <s>, </s>
    r"|<</?SYS>>"  # Llama-2
    r"|\[/?(?:INST|SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS)\]"  # Mistral
)


def neutralise(text: str) -> tuple[str, list[str]]:
    """``text`` with every control-token string broken by :data:`JOINER`, and the strings found (in order)."""
    found: list[str] = []

    def split(match: re.Match[str]) -> str:
        found.append(match.group(0))
        return match.group(0)[0] + JOINER + match.group(0)[1:]

    return CONTROL_STRINGS.sub(split, text), found


def tokenizes_text_safely(backend: object) -> bool:
    """Whether ``backend`` promises that message contents are tokenized as plain text (default: no)."""
    return capabilities(backend).tokenizes_text_safely


def guard(backend: Backend) -> Backend:
    """``backend`` itself when it tokenizes text safely, else a :class:`GuardedBackend` around it."""
    if tokenizes_text_safely(backend):
        return backend
    return GuardedBackend(backend)


class GuardedTokenizer:
    """Counts text as the guarded backend will send it (control strings broken)."""

    def __init__(self, inner: Tokenizer) -> None:
        self.inner = inner
        self.name = inner.name

    def count(self, text: str) -> int:
        return self.inner.count(neutralise(text)[0])

    def encode(self, text: str) -> list[int]:
        return self.inner.encode(neutralise(text)[0])

    def decode(self, ids: Sequence[int]) -> str:
        return self.inner.decode(ids)


class GuardedBackend:
    """A backend whose message contents are sent with control-token strings broken (see the module doc).

    ``found`` lists each distinct control string neutralised so far, in the order first seen; anything not
    defined here (``warnings``, ``tokenizer_source`` …) is the wrapped backend's.
    """

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.context_length = inner.context_length
        self.found: list[str] = []
        self._tokenizer = GuardedTokenizer(inner.tokenizer)

    def __getattr__(self, name: str) -> Any:
        if name == "inner" or name.startswith("__"):  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def capabilities(self) -> Capabilities:
        return replace(capabilities(self.inner), tokenizes_text_safely=True)  # now it does

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def count_prompt(self, messages: Sequence[Message]) -> int:
        return self.inner.count_prompt(self._safe(messages, record=False))

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return self.inner.complete([replace(r, messages=self._safe(r.messages, record=True)) for r in requests])

    def close(self) -> None:
        self.inner.close()

    def _safe(self, messages: Sequence[Message], *, record: bool) -> tuple[Message, ...]:
        safe = []
        for message in messages:
            content, found = neutralise(message.content)
            if record:
                self.found.extend(s for s in dict.fromkeys(found) if s not in self.found)
            safe.append(Message(message.role, content) if found else message)
        return tuple(safe)
