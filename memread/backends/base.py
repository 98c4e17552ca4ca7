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
    # The reply begins with this text, which the model continues ("\\boxed{" for a final answer), on a backend
    # that continues_replies; Completion.text then starts with it too. Others are sent requests without it.
    reply_start: str = ""


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


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do. The loop, the run's backend builder and ``memread bench`` ask this, never a
    backend's name. A backend declares it as ``capabilities`` (class or instance attribute; an instance may
    refine it once it knows its server); its registry factory carries the same as ``factory.capabilities``
    for what is decided before the backend exists. Everything defaults to the cautious answer.
    """

    # Completion.stop_reason always names the stop string that fired (None then means a natural end).
    names_stop_strings: bool = False
    # Message contents are always tokenized as plain text: a document holding "<|im_end|>" can never become a
    # control token. Otherwise the loop breaks such strings itself (memread.backends.text_guard).
    tokenizes_text_safely: bool = False
    # complete() may be called from several threads at once (a batching server): bench --parallel.
    concurrent_calls: bool = False
    # ChatRequest.reply_start is honoured: the model continues a reply begun with it (llama.cpp, vLLM, vllm serve).
    continues_replies: bool = False
    # What the factory takes from the run's backend builder (memread.run.open_backend):
    sizes_context: bool = False  # needs=: a function tokenizer -> tokens the run needs; the engine allocates it
    pulls_models: bool = False  # progress=: a callback for model downloads (memread.models.PullProgress)
    seeded_at_load: bool = False  # seed=: the engine takes its sampling seed when it loads


def capabilities(backend: object) -> Capabilities:
    """``backend.capabilities``; for a backend written before they existed (a plugin), its older attributes
    ``tokenizes_text_safely``, ``concurrent_calls`` and ``reports_stop_reason``."""
    declared = getattr(backend, "capabilities", None)
    if isinstance(declared, Capabilities):
        return declared
    return Capabilities(names_stop_strings=bool(getattr(backend, "reports_stop_reason", False)),
                        tokenizes_text_safely=bool(getattr(backend, "tokenizes_text_safely", False)),
                        concurrent_calls=bool(getattr(backend, "concurrent_calls", False)))


@runtime_checkable
class Backend(Protocol):
    """An inference engine. Implementations: llama.cpp (in-process), OpenAI-compatible HTTP, vLLM.

    What it can do beyond this protocol is its :class:`Capabilities` (``capabilities``); ``warnings`` lists
    what the user should be told when it starts.
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
