"""Events: the only way the reading loop talks to the outside.

Sinks (the plain progress printer, the Rich live view, the JSONL trace writer, ``--json``) subscribe to
these. Every event is a frozen dataclass of JSON-friendly values plus, where useful, a :class:`Chunk`.
Field names are part of the trace format: add fields freely, never rename or remove one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memread.document import Chunk


@dataclass(frozen=True)
class RunStarted:
    run_id: str
    document: str
    backend: str
    model: str
    strategy: str
    questions: tuple[str, ...]
    settings: dict[str, Any]  # every knob that shapes the run (chunk/memory tokens, sampling, seed, ...)
    resumed_from_step: int | None = None  # chunk index the run resumes at, if resumed


@dataclass(frozen=True)
class StepStarted:
    step: int  # chunk index, 0-based
    chunk: Chunk
    lanes: tuple[int, ...]  # active lanes (question indices) reading this chunk


@dataclass(frozen=True)
class StepFinished:
    """One lane has read one chunk. Carries everything needed to replay or resume the step."""

    lane: int
    step: int
    chunk: Chunk
    memory_before: str
    recalled_before: str | None  # the <recalled_memory> shown in this step's prompt (callback only)
    prompt: str  # the full user message sent
    reply: str  # the model's raw reply
    finish_reason: str
    memory: str  # memory after this step
    memory_changed: bool
    truncated: bool  # the reply hit the generation limit (memory may be cut off)
    update: bool | None = None  # gated: <check> decision as applied (None for other strategies)
    exit: bool = False  # gated: <next>end</next> accepted (the lane stops reading)
    recall_query: str | None = None  # callback: the <recall> query the reply asked for
    recalled: str | None = None  # callback: what the query brought back (shown at the next step)
    parse_issues: tuple[str, ...] = ()  # every deviation from the expected reply format
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0  # wall time of the model call for this lane's request
    state: dict[str, Any] = field(default_factory=dict)  # strategy state after the step (JSON-able)
    stopped_early: bool = False  # gated: generation was stopped at <check>no</check> (memread's speed feature)
    prompt_seconds: float | None = None  # prefill part of ``seconds`` (Completion.prompt_seconds), if reported


@dataclass(frozen=True)
class LaneExited:
    lane: int
    step: int
    reason: str  # "exit-gate"


@dataclass(frozen=True)
class Answered:
    lane: int
    question: str
    answer: str  # content of the last \boxed{} (or the fallback)
    reply: str  # the raw final reply
    boxed: bool  # False when no \boxed{} was found and the whole reply is used
    prompt: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Warned:
    message: str
    lane: int | None = None
    step: int | None = None


@dataclass(frozen=True)
class RunFinished:
    status: str  # "ok" | "interrupted" | "failed"
    chunks_read: int
    prompt_tokens: int
    completion_tokens: int
    wall_seconds: float
    model_seconds: float  # time inside backend calls
    error: str | None = None


Event = RunStarted | StepStarted | StepFinished | LaneExited | Answered | Warned | RunFinished
Sink = Callable[[Event], None]
