"""The live view: a Rich ``Live`` on stderr that shows the run as it happens (only on a terminal).

A sink: give it every event. It keeps a :class:`ViewState` and repaints the frame from it. stdout is never
touched (``redirect_stdout=False``), so ``memread ask … | tee answer.txt`` gets only the answer, which the
caller prints after the run ends (when this view has stopped).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from rich.console import Console
from rich.live import Live

from memread.cli.environment import Environment
from memread.cli.render import answer_panels, frame
from memread.cli.viewstate import LaneSteps, ViewState, approx_tokens
from memread.events import Event, RunFinished, RunStarted
from memread.tokens import Tokenizer


def stderr_console(env: Environment, *, record: bool = False) -> Console:
    """A Rich console on the environment's stderr that respects its TTY flag, NO_COLOR, COLUMNS and LINES."""
    return Console(file=env.stderr, force_terminal=bool(env.stderr_isatty), no_color=env.no_color,
                   width=env.columns, highlight=False, record=record, _environ=env.environ)


class LiveView:
    """Sink that draws the live view on stderr. Call :meth:`close` in a ``finally`` (Ctrl-C, errors).

    ``total``: number of chunks when known (None for stdin). ``tokenizer``: the model's, for exact memory
    sizes (else approximated). ``history``: (time, event) pairs of a trace being resumed, so the view
    starts with the memory and citations already read.
    """

    def __init__(self, env: Environment, *, total: int | None = None, tokenizer: Tokenizer | None = None,
                 history: Iterable[tuple[float, Event]] = (), refresh_per_second: float = 4,
                 clock: Callable[[], float] = time.time) -> None:
        self.console = stderr_console(env)
        self.state = ViewState(total=total, count_tokens=tokenizer.count if tokenizer else approx_tokens,
                               exact_tokens=tokenizer is not None)
        self.sources = LaneSteps()
        self._clock = clock
        self._lock = threading.Lock()
        self._refresh = refresh_per_second
        self._live: Live | None = None
        for at, event in history:  # an earlier session's end counts its time, but this run has not ended
            self.state.apply(event, at)
            self.sources.add(event)
        self.state.finished = None

    def _frame(self) -> Any:
        with self._lock:
            self.state.now = max(self.state.now, self._clock())
            return frame(self.state, height=self.console.height, width=self.console.width)

    def __call__(self, event: Event) -> None:
        with self._lock:
            self.state.apply(event, self._clock())
            self.sources.add(event)
        if isinstance(event, RunStarted) and self._live is None:
            self._live = Live(console=self.console, get_renderable=self._frame, auto_refresh=True,
                              refresh_per_second=self._refresh, redirect_stdout=False, redirect_stderr=False,
                              transient=False, vertical_overflow="crop")
            self._live.start(refresh=True)
        elif isinstance(event, RunFinished):
            self.close()
            self.console.print(answer_panels(self.state, citations=self.sources.citations()))
        elif self._live is not None:
            self._live.refresh()

    def close(self) -> None:
        """Stop repainting (idempotent). The last frame stays on screen."""
        live, self._live = self._live, None
        if live is not None:
            live.stop()
