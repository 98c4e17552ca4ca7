"""The contract between the reading loop and an inference engine.

A backend turns a batch of chat requests into completions. It knows nothing of memory, strategies or
documents. The loop sends one request per active lane per step, in one call, so engines that batch
(vLLM, a server with continuous batching) can serve the lanes together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from memread.tokens import Tokenizer


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple[Message, ...]
    max_tokens: int
    stop: tuple[str, ...] = ()
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    tag: str = ""  # free-form label for logs (e.g. "lane 2, step 7")


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str  # "stop" (natural end or a stop string) | "length" (hit max_tokens)
    prompt_tokens: int
    completion_tokens: int
    stop_reason: str | None = None  # the stop string that fired, when the engine says (vLLM does)
    seconds: float = 0.0  # wall time of this request inside the backend
    prompt_seconds: float | None = None  # prefill time, when the engine reports it
    cached_prompt_tokens: int | None = None  # prefix-cache hits, when the engine reports it
    extra: dict[str, object] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    """An inference engine. Implementations: llama.cpp (in-process), OpenAI-compatible HTTP, vLLM.

    Optional capabilities, read with ``getattr`` and a safe default: ``tokenizes_text_safely`` (True only
    when message contents are always tokenized as plain text, so a document containing ``<|im_end|>`` can
    never become a control token; the loop otherwise breaks such strings itself, see
    :mod:`memread.backends.text_guard`), ``concurrent_calls`` (True when ``complete`` may be called from
    several threads at once, as a batching server allows), ``reports_stop_reason`` and ``warnings``.
    """

    name: str  # "llamacpp" | "openai" | "vllm" | ...
    model: str  # model path or name, as recorded in traces
    context_length: int  # tokens the engine accepts for prompt + completion

    @property
    def tokenizer(self) -> Tokenizer: ...

    def count_prompt(self, messages: Sequence[Message]) -> int:
        """Tokens the engine will see for these messages, chat template included."""
        ...

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Run a batch of requests; return completions in the same order. Raise BackendError on failure."""
        ...

    def close(self) -> None: ...
