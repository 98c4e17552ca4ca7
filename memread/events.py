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
class Indexed:
    """Progress of a strategy that takes in the whole document before it reads (evidence, in relevance order): so
    far ``chunks`` chunks of ``tokens`` tokens are stored and indexed, in ``seconds``; ``done`` once the document is
    in. Sent at most every :data:`memread.loop.INDEX_PROGRESS_SECONDS` and once at the end; traces record only the
    last (how many chunks the document has), as progress is not state."""

    chunks: int
    tokens: int
    seconds: float
    done: bool = False


@dataclass(frozen=True)
class StepStarted:
    step: int  # 0-based; the chunk's index, unless the strategy chooses the reading order
    chunk: Chunk
    lanes: tuple[int, ...]  # active lanes (question indices) reading this chunk
    reason: str = ""  # why this chunk now, when the strategy chose it (e.g. its relevance rank)


@dataclass(frozen=True)
class StepFinished:
    """One lane has read one chunk. Carries everything needed to replay or resume the step.

    ``decisions`` are the strategy's own (JSON-able; gated: ``update``, ``next``, ``stopped_early``; callback:
    ``recalled_before``, ``recall_query``, ``recalled``) and ``summary`` says in a few words what the step did,
    as the strategy describes it. The fields below ``exit`` that repeat built-in decisions are kept for readers
    of format 1 traces written before ``decisions`` existed; the loop fills them from ``decisions``.
    """

    lane: int
    step: int
    chunk: Chunk
    memory_before: str
    recalled_before: str | None = None  # callback: the <recalled_memory> shown in this step's prompt
    prompt: str = ""  # the full user message sent
    reply: str = ""  # the model's raw reply
    finish_reason: str = "stop"
    memory: str = ""  # memory after this step
    memory_changed: bool = False
    truncated: bool = False  # the reply hit the generation limit (memory may be cut off)
    update: bool | None = None  # gated: <check> decision as applied (None for other strategies)
    exit: bool = False  # the lane stops reading after this step (gated: <next>end</next> accepted)
    recall_query: str | None = None  # callback: the <recall> query the reply asked for
    recalled: str | None = None  # callback: what the query brought back (shown at the next step)
    parse_issues: tuple[str, ...] = ()  # every deviation from the expected reply format
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0  # wall time of the model call for this lane's request
    state: dict[str, Any] = field(default_factory=dict)  # strategy state after the step (JSON-able)
    stopped_early: bool = False  # gated: generation was stopped at <check>no</check> (memread's speed feature)
    prompt_seconds: float | None = None  # prefill part of ``seconds`` (Completion.prompt_seconds), if reported
    steps_left: int | None = None  # the lane's steps after this one, at most, when its strategy bounds them
    decisions: dict[str, Any] = field(default_factory=dict)  # the strategy's own decisions
    summary: str = ""  # what the step did, in a few words (the strategy's description)
    exit_reason: str | None = None  # why the lane stops, when ``exit``


def note_read(first: dict[int, int], again: set[int], step: int, chunk: int) -> None:
    """Record that ``step`` read ``chunk``: ``first`` maps each chunk to the step that first read it, ``again``
    holds the steps that read a chunk an earlier step had read (a strategy that chooses its order may read a
    chunk again). Fed in step order; the steps of several lanes at one step count once."""
    if first.get(chunk, step) < step:
        again.add(step)
    else:
        first[chunk] = step
        again.discard(step)


def step_summary(step: StepFinished) -> str:
    """What the step did, in a few words: the strategy's own ``summary``; for a step of a trace written
    before summaries existed, the same words from its decision fields."""
    if step.summary:
        return step.summary
    if step.update is not None:
        return f"check {'yes' if step.update else 'no'} · next {'end' if step.exit else 'continue'}"
    parts = ["rewritten" if step.memory_changed else "unchanged"]
    if step.recall_query:
        got = " ".join(step.recalled.split())[:30] if step.recalled else "nothing"
        parts.append(f"recall {' '.join(step.recall_query.split())[:30]!r} → {got}")
    return " · ".join(parts)


# An exit reason that begins so: the lane searched every chunk through the document's index (a count or a list),
# though it stepped through few, so no hint to read the whole document is due.
WHOLE_DOCUMENT = "counted the whole document"


@dataclass(frozen=True)
class LaneExited:
    lane: int
    step: int
    reason: str  # the strategy's reason: "exit-gate" (gated), ...

    @property
    def whole(self) -> bool:
        return self.reason.startswith(WHOLE_DOCUMENT)


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


Event = RunStarted | Indexed | StepStarted | StepFinished | LaneExited | Answered | Warned | RunFinished
Sink = Callable[[Event], None]
