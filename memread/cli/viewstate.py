"""What the live view, the plain progress lines and replay show, as plain state built from events.

The view never mutates this state; sinks call :meth:`ViewState.apply` with each event and the time it
happened (the wall clock while running, the trace's timestamps during replay), and renderers read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memread.cli.places import with_places
from memread.document import Chunk
from memread.events import (
    Answered,
    Event,
    Indexed,
    LaneExited,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    Warned,
    note_read,
)
from memread.report import sessions_seconds
from memread.settings import read_limit

# Said when an exit gate stopped reading before the end: a "list all" question needs every chunk.
EXIT_GATE_HINT = "--all answers from the whole document"
_RATE_WINDOW = 10  # steps the rate and ETA estimates look back over


def indexing_text(event: Indexed) -> str:
    """``indexing: 1,204 chunks, 1,806,000 tokens so far (42s)``, or ``indexed …`` once the document is in."""
    size = f"{event.chunks:,} chunk{'s' if event.chunks != 1 else ''}, {event.tokens:,} tokens"
    if event.done:
        return f"indexed {size} in {duration(event.seconds)}"
    return f"indexing: {size} so far ({duration(event.seconds)}); reading starts once the whole input is in"


def approx_tokens(text: str) -> int:
    """About four characters per token: what the views show when no tokenizer was given."""
    return (len(text) + 3) // 4


@dataclass
class LaneView:
    lane: int
    question: str
    memory: str = ""
    previous: str = ""  # the memory before the last step of this lane
    steps: int = 0
    last: StepFinished | None = None
    exited_at: int | None = None  # the step (not the chunk) after which the lane stopped reading
    whole: bool = False  # it stopped having searched every chunk through the index (a count, a list)
    answer: Answered | None = None
    read: dict[int, int] = field(default_factory=dict)  # chunk index -> the step this lane first read it at
    again: set[int] = field(default_factory=set)  # the steps at which this lane read a chunk again
    sources: Any = None  # where the memory's entries come from, when the strategy says (``state["sources"]``)
    previous_sources: Any = None  # the same for ``previous``

    @property
    def chunks_read(self) -> int:
        """Distinct chunks this lane has read: a chunk read again counts once."""
        return len(self.read)


@dataclass
class ViewState:
    """Everything on screen. ``total`` is the number of chunks when known (files), None for streams."""

    total: int | None = None
    count_tokens: Callable[[str], int] = approx_tokens
    exact_tokens: bool = False  # count_tokens is the model's tokenizer (else shown as approximate)
    run_id: str = ""
    document: str = ""
    model: str = ""
    backend: str = ""
    strategy: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    resumed_from: int | None = None
    started_at: float | None = None
    now: float = 0.0
    step: int | None = None  # the step being read (or last read): the chunk index, unless the strategy chooses
    chunk: Chunk | None = None
    reason: str = ""  # why the strategy chose this chunk now (strategies that choose the reading order)
    step_started_at: float | None = None
    step_active: tuple[int, ...] = ()
    step_done: set[int] = field(default_factory=set)
    tokens_this_step: int = 0
    steps_done: int = 0  # steps every active lane has finished (a strategy that chooses its order may read a
    # chunk again, so steps can outnumber chunks: the chunk counts shown are chunks_done and chunks_started)
    first_read: dict[int, int] = field(default_factory=dict)  # chunk index -> the step that first read it
    again: set[int] = field(default_factory=set)  # the steps that read a chunk an earlier step read
    tokens_read: int = 0  # chunk tokens read so far
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_seconds: float = 0.0  # prefill time, when the backend reports it
    prompt_timed_tokens: int = 0
    decode_seconds: float = 0.0
    decode_timed_tokens: int = 0
    step_walls: list[float] = field(default_factory=list)  # wall time of each finished step
    step_tokens: list[int] = field(default_factory=list)  # prompt + completion tokens of each finished step
    lanes: list[LaneView] = field(default_factory=list)
    # (step, text) of each warning, step None for the run's own: a resumed run redoes a step's warnings with it.
    warned: list[tuple[int | None, str]] = field(default_factory=list)
    focus: int = 0  # the lane that changed last (shown in full when lanes are many)
    finished: RunFinished | None = None
    indexed: Indexed | None = None  # how far a strategy that indexes the whole document first has got
    # Each session's start (a resumed run has several) and each finished step kept, (lane, step) -> (session,
    # prompt tokens, completion tokens, model seconds, when): a step a crash cut short is forgotten when the
    # next session redoes it, so the run's figures count it once.
    session_starts: list[float] = field(default_factory=list)
    session_ends: dict[int, RunFinished] = field(default_factory=dict)  # session -> its clean end (Ctrl-C too)
    kept: dict[tuple[int, int], tuple[int, int, int, float, float]] = field(default_factory=dict)

    def apply(self, event: Event, at: float) -> None:
        """Update from one event that happened at wall time ``at``."""
        self.now = max(self.now, at)
        if isinstance(event, RunStarted):
            if self.started_at is None or event.resumed_from_step is not None:
                self.started_at = at
                self.session_starts.append(at)
            self.run_id, self.document, self.model = event.run_id, event.document, event.model
            self.backend, self.strategy, self.settings = event.backend, event.strategy, dict(event.settings)
            self.resumed_from = event.resumed_from_step
            if not self.lanes:
                self.lanes = [LaneView(i, q) for i, q in enumerate(event.questions)]
            if event.resumed_from_step is not None:
                self._forget_from(event.resumed_from_step)
            self.finished = None
        elif isinstance(event, Indexed):
            self.indexed = event
            if event.done and self.total is None:  # a stream: its length is known once it is in
                self.total = event.chunks
        elif isinstance(event, StepStarted):
            self.step, self.chunk, self.step_started_at = event.step, event.chunk, at
            note_read(self.first_read, self.again, event.step, event.chunk.index)
            self.reason = event.reason
            self.step_active, self.step_done = event.lanes, set()
            self.tokens_read += event.chunk.tokens
            self.tokens_this_step = 0
        elif isinstance(event, StepFinished):
            self._finish_lane_step(event, at)
        elif isinstance(event, LaneExited):
            self._lane(event.lane).exited_at = event.step
            self._lane(event.lane).whole = event.whole
        elif isinstance(event, Answered):
            self._lane(event.lane).answer = event
            self.prompt_tokens += event.prompt_tokens
            self.completion_tokens += event.completion_tokens
        elif isinstance(event, Warned):
            named = event.lane is None or len(self.lanes) < 2 or event.message.startswith(("lane", "question"))
            self.warned.append((event.step, event.message if named or event.lane is None
                                else f"lane {event.lane + 1}: {event.message}"))
        elif isinstance(event, RunFinished):
            self.finished = event
            self.session_ends[len(self.session_starts) - 1] = event

    @property
    def warnings(self) -> list[str]:
        """The warnings to show, in order."""
        return [text for _, text in self.warned]

    def _forget_from(self, step: int) -> None:
        """A resumed run redoes the step a crash cut short: what was seen of it and after it does not count."""
        _forget_reads(self.first_read, self.again, step)
        self.warned = [(at, text) for at, text in self.warned if at is None or at < step]
        for key in [key for key in self.kept if key[1] >= step]:
            _, prompt, completion, _, _ = self.kept.pop(key)
            self.prompt_tokens -= prompt
            self.completion_tokens -= completion
        for view in self.lanes:
            _forget_reads(view.read, view.again, step)
            view.steps = len(view.read) + len(view.again)
            if view.exited_at is not None and view.exited_at >= step:
                view.exited_at, view.whole = None, False

    def _lane(self, lane: int) -> LaneView:
        while len(self.lanes) <= lane:
            self.lanes.append(LaneView(len(self.lanes), ""))
        return self.lanes[lane]

    def _finish_lane_step(self, event: StepFinished, at: float) -> None:
        view = self._lane(event.lane)
        view.previous, view.memory, view.last = event.memory_before, event.memory, event
        view.previous_sources, view.sources = view.sources, event.state.get("sources")
        note_read(view.read, view.again, event.step, event.chunk.index)
        view.steps = len(view.read) + len(view.again)
        if event.memory_changed or len(self.lanes) == 1:
            self.focus = event.lane
        self.prompt_tokens += event.prompt_tokens
        self.completion_tokens += event.completion_tokens
        self.kept[event.lane, event.step] = (len(self.session_starts) - 1, event.prompt_tokens,
                                             event.completion_tokens, event.seconds, at)
        self.tokens_this_step += event.prompt_tokens + event.completion_tokens
        prompt_seconds = event.prompt_seconds  # not every backend reports prefill time
        if prompt_seconds:
            self.prompt_seconds += prompt_seconds
            self.prompt_timed_tokens += event.prompt_tokens
            self.decode_seconds += max(event.seconds - prompt_seconds, 0.0)
            self.decode_timed_tokens += event.completion_tokens
        self.step_done.add(event.lane)
        if self.step_done >= set(self.step_active) and self.step_started_at is not None:
            self.steps_done = event.step + 1
            self.step_walls.append(max(at - self.step_started_at, 0.0))
            self.step_tokens.append(self.tokens_this_step)

    # --- derived figures ------------------------------------------------------------------------------

    @property
    def elapsed(self) -> float:
        return max(self.now - self.started_at, 0.0) if self.started_at is not None else 0.0

    def earlier_seconds(self) -> tuple[float, float]:
        """(wall, model) seconds of a resumed run's earlier sessions: a session that ended cleanly (Ctrl-C too)
        by its RunFinished, one killed without an end until its last step kept (as the --json stats count)."""
        current = len(self.session_starts) - 1
        return sessions_seconds((end for session, end in self.session_ends.items() if 0 <= session < current),
                                ((session, step, seconds, at - self.session_starts[session])
                                 for (_, step), (session, _, _, seconds, at) in self.kept.items()
                                 if 0 <= session < current and session not in self.session_ends))

    def seconds_per_step(self) -> float | None:
        recent = self.step_walls[-_RATE_WINDOW:]
        return sum(recent) / len(recent) if recent else None

    def tokens_per_second(self) -> float | None:
        """Prompt + generated tokens per second of step wall time, over recent steps."""
        walls, tokens = self.step_walls[-_RATE_WINDOW:], self.step_tokens[-_RATE_WINDOW:]
        # Below 50 ms of measured time the ratio means nothing (a synthetic or instant trace).
        return sum(tokens) / sum(walls) if walls and sum(walls) >= 0.05 else None

    def prefill_rate(self) -> float | None:
        return self.prompt_timed_tokens / self.prompt_seconds if self.prompt_seconds > 0 else None

    def decode_rate(self) -> float | None:
        return self.decode_timed_tokens / self.decode_seconds if self.decode_seconds > 0 else None

    # A strategy that chooses its reading order may read a chunk again: the chunks shown count each chunk once.
    # Counted as steps less the steps that read a chunk again (not as the chunks seen), so a view that did not
    # see a resumed run's earlier steps still counts them.

    def reads_again(self, steps: int | None = None) -> int:
        """How many of the first ``steps`` steps (default: those started) read a chunk an earlier step read."""
        upto = self._steps_started() if steps is None else steps
        return sum(1 for step in self.again if step < upto)

    @property
    def chunks_done(self) -> int:
        """Distinct chunks the finished steps read (a chunk read again counts once), never more than ``total``."""
        return self._at_most_total(self.steps_done - self.reads_again(self.steps_done))

    @property
    def chunks_started(self) -> int:
        """The same with the chunk being read: the ``i`` of ``chunk i/N``."""
        started = self._steps_started()
        return self._at_most_total(started - self.reads_again(started))

    @property
    def reading_again(self) -> bool:
        """Whether the step being read (or last read) reads a chunk an earlier step read."""
        return self.step is not None and self.step in self.again

    def _steps_started(self) -> int:
        return self.steps_done if self.step is None else max(self.steps_done, self.step + 1)

    def _at_most_total(self, count: int) -> int:
        return max(0, count if self.total is None else min(count, self.total))

    def _options(self) -> dict[str, Any]:
        options = self.settings.get("options")
        return options if isinstance(options, dict) else {}

    def _budget(self) -> int | None:
        """The steps each question reads at most when the strategy gives each its own share of the chunks
        (``max_read``, the evidence strategy: a chunk read again counts again), else None."""
        share = self._options().get("max_read")
        if self.total is None or isinstance(share, bool) or not isinstance(share, (int, float)) \
                or not 0 < share <= 1:
            return None
        return read_limit(share, self.total)

    def _reading(self, budget: int | None) -> list[LaneView]:
        """The lanes that may read more: not stopped, not answered, their budget not spent."""
        return [view for view in self.lanes if view.exited_at is None and view.answer is None
                and (budget is None or view.steps < budget)]

    def _bounded_steps_left(self) -> int | None:
        """The steps left by the strategy's own bounds (``StepFinished.steps_left``: evidence's rounds of passages),
        when every question still reading has given one; a step serves one question at least, so their sum."""
        reading = self._reading(None)
        if not reading:
            return 0 if self.lanes else None  # every question stopped or answered: no step is left
        bounds = [view.last.steps_left if view.last is not None else None for view in reading]
        if any(bound is None for bound in bounds):
            return None
        return sum(bound or 0 for bound in bounds)

    def steps_left(self) -> int | None:
        """The steps the run reads at most from here (the one being read included); None when unknown (no
        number of chunks, or a strategy that reads chunks again with no budget the view knows)."""
        bounded = self._bounded_steps_left()
        if bounded is not None:
            return bounded
        if self.total is None:
            return None
        budget = self._budget()
        if budget is None:
            # Every lane reads in document order, in lock-step: chunk i at step i, to the end at most.
            return None if self.again else max(self.total - self.steps_done, 0)
        # Each question reads its budget at most, and a step serves one question at least (several when they pick
        # the same chunk): so the run reads at most what the questions still may, in all, and at most
        # questions x budget steps from its start.
        by_lane = sum(max(budget - view.steps, 0) for view in self._reading(budget))
        by_run = len(self.lanes) * budget - self.steps_done
        return max(min(by_lane, by_run), 0)

    def eta(self) -> float | None:
        """Seconds left, from the measured time per step, for :meth:`steps_left`; None when the number of steps
        left or the time per step is unknown. When the run may stop sooner it is a bound (:attr:`eta_is_bound`)."""
        per_step = self.seconds_per_step()
        left = self.steps_left()
        if left is None or per_step is None or self.finished is not None:
            return None
        return left * per_step

    @property
    def eta_is_bound(self) -> bool:
        """Whether the run may read fewer steps than :meth:`eta` counts: an exit gate (gated, evidence) may stop a
        question sooner, and questions with their own budgets (evidence) share a step when they pick the same
        chunk, so only one question still reading its budget, without an exit gate, reads exactly that."""
        if self._options().get("exit_gate"):
            return True
        budget = self._budget()
        return budget is not None and len(self._reading(budget)) > 1

    def eta_text(self) -> str | None:
        """``ETA 3m05s``, or ``ETA ≤ 3m05s`` when the run may stop sooner; None without an estimate."""
        eta = self.eta()
        return None if eta is None else f"ETA {'≤ ' if self.eta_is_bound else ''}{duration(eta)}"

    def memory_tokens(self, lane: int) -> int:
        return self.count_tokens(self.lanes[lane].memory) if lane < len(self.lanes) else 0

    @property
    def document_name(self) -> str:
        """The document as messages name it: its path with control characters escaped, "standard input" for ``-``."""
        from memread.ingest.source import display  # any run has loaded it; the view alone (replay) need not

        return display(self.document) if self.document else "?"

    def shown_memory(self, view: LaneView) -> tuple[str, str]:
        """The lane's memory before its last step and after it, as the memory pane shows them: each entry led by
        where it comes from when the strategy says (:func:`memread.cli.places.with_places`). Only the view shows
        these places; the model's memory (``view.memory``, its token count) stays as it is."""
        return (with_places(view.previous, view.previous_sources, self.document),
                with_places(view.memory, view.sources, self.document))


def _forget_reads(first: dict[int, int], again: set[int], step: int) -> None:
    """Forget the reads of ``step`` and after (kept in place: the caller's containers)."""
    for chunk in [chunk for chunk, at in first.items() if at >= step]:
        del first[chunk]
    again.difference_update({at for at in again if at >= step})


class LaneSteps:
    """Each lane's finished steps, kept for the citations shown at the end (a step redone after a resume
    replaces the one the crash cut short)."""

    def __init__(self) -> None:
        self.steps: dict[int, list[StepFinished]] = {}

    def add(self, event: Event) -> None:
        if isinstance(event, StepFinished):
            self.steps.setdefault(event.lane, []).append(event)
        elif isinstance(event, RunStarted) and event.resumed_from_step is not None:
            start = event.resumed_from_step
            self.steps = {lane: [s for s in steps if s.step < start] for lane, steps in self.steps.items()}

    def citations(self) -> dict[int, str]:
        """Lane -> where its evidence came from, in one line."""
        from memread.citations import cite, describe

        return {lane: describe(cite(steps)) for lane, steps in self.steps.items()}


def duration(seconds: float | None) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    if seconds is None:
        return "–"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
