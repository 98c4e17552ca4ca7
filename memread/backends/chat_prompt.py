"""Chat templates rendered so that message contents stay plain text.

A chat template turns messages into one prompt string. Tokenizing that string with special tokens
enabled (as llama-cpp-python's chat completion does) lets a document that contains ``<|im_end|>`` close
the turn and inject its own instructions. Instead we render the template with a unique placeholder for
each message's content and split the result: the template's own text is tokenized with special tokens,
the contents without. The model sees exactly the template's layout, and a document can only ever be text.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

# Templates for models whose GGUF carries none (chosen with ``chat_format``). ChatML is the fallback: it is
# what both registry models and most small instruct models use.
BUILTIN_TEMPLATES: dict[str, str] = {
    "chatml": (
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    ),
    "llama-3": (
        "{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>"
        "\n\n{{ message['content'] }}<|eot_id|>{% endfor %}"
        "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
    ),
    # Gemma has no system role: a system message becomes a user turn of its own.
    "gemma": (
        "{{ bos_token }}{% for message in messages %}<start_of_turn>"
        "{{ 'model' if message['role'] == 'assistant' else 'user' }}\n{{ message['content'] }}<end_of_turn>\n"
        "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
    ),
}
END_OF_TURN: dict[str, tuple[str, ...]] = {
    "chatml": ("<|im_end|>",),
    "llama-3": ("<|eot_id|>",),
    "gemma": ("<end_of_turn>",),
}
FALLBACK = "chatml"


def resolve_template(metadata: Mapping[str, str], chat_format: str | None) -> tuple[str, str, str | None]:
    """Pick the chat template: ``chat_format`` (a built-in name or a Jinja template) if given, else the
    GGUF's ``tokenizer.chat_template``, else the ChatML fallback. Returns (template, label, warning)."""
    if chat_format:
        if chat_format in BUILTIN_TEMPLATES:
            return BUILTIN_TEMPLATES[chat_format], chat_format, None
        if "{{" in chat_format or "{%" in chat_format:
            return chat_format, "custom", None
        from memread.errors import UsageError

        raise UsageError(f"unknown chat format {chat_format!r}",
                         hint=f"use one of {', '.join(BUILTIN_TEMPLATES)} or a Jinja chat template")
    template = metadata.get("tokenizer.chat_template")
    if template:
        return template, "gguf", None
    warning = (f"the model has no chat template (tokenizer.chat_template missing from the GGUF); using the "
               f"{FALLBACK!r} fallback. If replies look wrong, choose one with --chat-format "
               f"({', '.join(BUILTIN_TEMPLATES)})")
    return BUILTIN_TEMPLATES[FALLBACK], f"{FALLBACK} (fallback)", warning


class ChatPrompt:
    """A chat template that renders messages as (text, is_content) pieces."""

    def __init__(self, template: str, bos_token: str, eos_token: str) -> None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # HF-compatible sandboxed Jinja

        self._formatter = Jinja2ChatFormatter(template=template, eos_token=eos_token, bos_token=bos_token,
                                              add_generation_prompt=True)
        label = next((name for name, text in BUILTIN_TEMPLATES.items() if text == template), None)
        self.end_of_turn: tuple[str, ...] = END_OF_TURN.get(label or "", ())

    def render(self, messages: Sequence[tuple[str, str]]) -> list[tuple[str, bool]]:
        """Pieces of the prompt in order; ``is_content`` marks text that came from a message's content.

        A content placeholder the template repeats is filled each time; one it drops stays dropped
        (the template's choice, e.g. a model without a system role).
        """
        nonce = secrets.token_hex(8)
        placeholders = {f"[[memread-{nonce}-{i}]]": content for i, (_role, content) in enumerate(messages)}
        chat: list[Any] = [{"role": role, "content": key}
                           for key, (role, _c) in zip(placeholders, messages, strict=True)]
        rendered = self._formatter(messages=chat).prompt
        pieces: list[tuple[str, bool]] = []
        for i, part in enumerate(re.split(rf"(\[\[memread-{nonce}-\d+\]\])", rendered)):
            if i % 2:
                pieces.append((placeholders[part], True))
            elif part:
                pieces.append((part, False))
        return pieces
