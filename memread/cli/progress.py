"""Progress off a terminal (pipes, CI logs): throttled plain lines on stderr, no control codes.

Also the one place that decides which progress a run shows: :func:`progress_sink` picks the live view
on a terminal, plain lines elsewhere, and only warnings with ``--quiet``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from memread.cli.environment import Environment
from memread.cli.viewstate import (
    EXIT_GATE_HINT,
    LaneSteps,
    ViewState,
    approx_tokens,
    indexing_text,
)
from memread.cli.viewtext import progress_line, stats_line
from memread.events import Answered, Event, Indexed, LaneExited, RunFinished, RunStarted, StepFinished, Warned
from memread.tokens import Tokenizer

MODES = ("auto", "live", "plain", "none")


class PlainProgress:
    """Sink printing at most one progress line per ``interval`` seconds (plus the first and last step).

    Warnings are always printed; ``quiet`` drops everything else.
    """

    def __init__(self, env: Environment, *, total: int | None = None, tokenizer: Tokenizer | None = None,
                 quiet: bool = False, interval: float = 2.0, history: Iterable[tuple[float, Event]] = (),
                 clock: Callable[[], float] = time.time) -> None:
        self.env = env
        self.quiet = quiet
        self.interval = interval
        self.state = ViewState(total=total, count_tokens=tokenizer.count if tokenizer else approx_tokens,
                               exact_tokens=tokenizer is not None)
        self._clock = clock
        self._last_print: float | None = None
        self._hinted = False
        self.sources = LaneSteps()
        for at, event in history:  # an earlier session's end counts its time, but this run has not ended
            self.state.apply(event, at)
            self.sources.add(event)
        self.state.finished = None

    def _say(self, line: str) -> None:
        self.env.err(line)

    def __call__(self, event: Event) -> None:
        now = self._clock()
        done_before = self.state.steps_done
        self.state.apply(event, now)
        self.sources.add(event)
        if isinstance(event, Warned):
            self._say(f"warning: {self.state.warnings[-1]}")
        if self.quiet:
            return
        if isinstance(event, RunStarted):
            lanes = len(event.questions)
            resumed = f", resuming at chunk {event.resumed_from_step + 1}" if event.resumed_from_step is not None \
                else ""
            self._say(f"reading {self.state.document_name} with {event.model} ({event.backend}, {event.strategy}"
                      f"{f', {lanes} questions' if lanes > 1 else ''}{resumed})")
        elif isinstance(event, Indexed):
            if event.done or self._last_print is None or now - self._last_print >= self.interval:
                self._last_print = None if event.done else now  # the first step's line follows at once
                self._say(indexing_text(event))
        elif isinstance(event, StepFinished) and self.state.steps_done > done_before:
            last = self.state.total is not None and self.state.chunks_done >= self.state.total
            if self._last_print is None or now - self._last_print >= self.interval or last:
                self._last_print = now
                self._say(progress_line(self.state))
        elif isinstance(event, LaneExited):
            total = self.state.total
            read = self.state.lanes[event.lane].chunks_read  # its distinct chunks: not the step, nor re-reads
            line = f"lane {event.lane + 1} stopped reading after {read}{f' of {total}' if total else ''} chunk(s) " \
                   f"({event.reason})"
            if event.whole:  # it searched every chunk through the index, and stepped through few
                line = f"lane {event.lane + 1} {event.reason}{f', all {total} chunks searched' if total else ''}"
            elif total and read < total and not self._hinted:  # once a run
                self._hinted = True
                line += f"; {EXIT_GATE_HINT}"
            self._say(line)
        elif isinstance(event, Answered) and len(self.state.lanes) > 1:
            self._say(f"answer {event.lane + 1}: {event.answer}")
        elif isinstance(event, RunFinished):
            for lane, where in sorted(self.sources.citations().items()):
                if where:
                    label = f" {lane + 1}" if len(self.state.lanes) > 1 else ""
                    self._say(f"sources{label}: {where}")
            self._say(stats_line(self.state))

    def close(self) -> None:
        """Nothing to stop; here so every progress sink can be closed the same way."""


class _Silent:
    def __call__(self, event: Event) -> None:
        pass

    def close(self) -> None:
        pass


def live_terminal(env: Environment) -> bool:
    """Whether progress may redraw in place: stderr is a terminal that is not dumb, and MEMREAD_NO_PROGRESS
    does not ask for plain lines."""
    dumb = env.environ.get("TERM", "") in ("dumb", "unknown")
    return bool(env.stderr_isatty) and not dumb and not env.environ.get("MEMREAD_NO_PROGRESS")


def progress_sink(env: Environment, *, mode: str = "auto", quiet: bool = False, total: int | None = None,
                  tokenizer: Tokenizer | None = None, history: Iterable[tuple[float, Event]] = ()) -> Any:
    """The progress sink for a run: the live view on a terminal, plain lines off one.

    ``mode``: ``auto`` | ``live`` | ``plain`` | ``none``; ``quiet`` keeps warnings only. ``MEMREAD_NO_PROGRESS``
    or ``TERM=dumb`` turn ``auto`` into plain lines. The result has ``close()``; call it in a ``finally``.
    """
    if mode not in MODES:
        from memread.errors import UsageError

        raise UsageError(f"unknown progress mode {mode!r}", hint="use one of: " + ", ".join(MODES))
    history = list(history)
    if quiet:
        return PlainProgress(env, total=total, tokenizer=tokenizer, quiet=True, history=history)
    if mode == "none":
        return _Silent()
    if mode == "auto":
        mode = "live" if live_terminal(env) else "plain"
    if mode == "live":
        from memread.cli.live import LiveView

        return LiveView(env, total=total, tokenizer=tokenizer, history=history)
    return PlainProgress(env, total=total, tokenizer=tokenizer, history=history)
