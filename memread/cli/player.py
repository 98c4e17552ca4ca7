"""Replaying a trace: the live view's frames, step by step, rebuilt from the recorded events.

No model is needed. A *position* is the moment a chunk has been read by every lane reading it, plus a last
position after the answers. :class:`Player` knows the positions and which one is shown; the command in
``cmd_replay`` drives it from the keyboard or a timer.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memread.cli.viewstate import ViewState
from memread.events import Event, StepStarted, step_summary
from memread.traces.reader import Trace


class Player:
    """Positions in a trace and the view state at each."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.events: list[tuple[float, Event]] = list(trace.events())
        # A run that indexed the document first (evidence) recorded how many chunks it has; otherwise a finished
        # run knows how many chunks it read, and an unfinished one shows how far it got, no total.
        indexed = any(record.get("type") == "indexed" for record in trace.records)
        total = len(trace.chunks()) if trace.status() == "ok" and not indexed else None
        self.positions: list[int] = []  # index of the last event of each position
        self._states: list[ViewState] = []
        state = ViewState(total=total)
        for index, (at, event) in enumerate(self.events):
            # A position ends where the next chunk starts, so it includes the step's exits and warnings.
            if isinstance(event, StepStarted) and state.steps_done > 0:
                self._snapshot(index - 1, state)
            state.apply(event, at)
        self._snapshot(len(self.events) - 1, state)
        self.index = len(self.positions) - 1

    def _snapshot(self, index: int, state: ViewState) -> None:
        # Views are small (a few memories); a copy per position makes stepping back instant.
        self.positions.append(index)
        self._states.append(copy.deepcopy(state))

    def __len__(self) -> int:
        return len(self.positions)

    def state(self, position: int | None = None) -> ViewState:
        return self._states[self.index if position is None else position]

    def is_final(self, position: int | None = None) -> bool:
        position = self.index if position is None else position
        return position == len(self.positions) - 1

    def label(self, position: int | None = None) -> str:
        position = self.index if position is None else position
        return f"replay {self.trace.run_id} · position {position + 1}/{len(self.positions)}"

    def position_of_step(self, step: int) -> int:
        """The position after chunk ``step`` (1-based, as shown); clamps to the run."""
        for position, state in enumerate(self._states):
            if state.steps_done >= step:
                return position
        return len(self.positions) - 1

    def handle(self, key: str) -> bool:
        """Apply one key (``right``/``left``/``home``/``end``); False for ``quit``."""
        if key == "quit":
            return False
        if key == "right":
            self.index = min(self.index + 1, len(self.positions) - 1)
        elif key == "left":
            self.index = max(self.index - 1, 0)
        elif key == "home":
            self.index = 0
        elif key == "end":
            self.index = len(self.positions) - 1
        return True

    def citations(self) -> dict[int, str]:
        from memread.citations import cite, describe

        return {lane: describe(cite(self.trace.steps(lane))) for lane in range(len(self.trace.questions))}

    def frame(self, position: int | None = None, *, height: int = 40, width: int = 110) -> Any:
        from memread.cli.render import frame

        position = self.index if position is None else position
        final = self.is_final(position)
        return frame(self.state(position), height=height, width=width, final=final,
                     citations=self.citations() if final else None)


def memory_diffs(trace: Trace) -> Iterator[str]:
    """Unified diffs of each lane's memory, step by step, as lines (no colour)."""
    many = len(trace.questions) > 1
    for step in trace.steps():
        who = f"lane {step.lane + 1}, " if many else ""
        where = step.chunk.describe()
        # A strategy that chooses its reading order reads chunk k at step n: name both.
        at = f"chunk {step.step + 1}" if step.step == step.chunk.index else \
            f"step {step.step + 1} (chunk {step.chunk.index + 1})"
        if not step.memory_changed:
            yield f"= {who}{at} ({where}): memory unchanged ({step_summary(step)})"
            continue
        yield from difflib.unified_diff(
            step.memory_before.splitlines(), step.memory.splitlines(),
            fromfile=f"{who}memory before {at}",
            tofile=f"{who}memory after {at} ({where})", lineterm="")
        if step.truncated:
            yield "! the reply hit the memory limit: this memory may be cut off"


def colour_diff(line: str) -> str:
    """ANSI colours for a diff line on a terminal."""
    if line.startswith(("+++", "---")):
        return f"\x1b[1m{line}\x1b[0m"
    if line.startswith("+"):
        return f"\x1b[32m{line}\x1b[0m"
    if line.startswith("-"):
        return f"\x1b[31m{line}\x1b[0m"
    if line.startswith("@@"):
        return f"\x1b[36m{line}\x1b[0m"
    return line


def export(player: Player, path: Path, *, step: int | None = None, width: int = 110, height: int = 40) -> None:
    """Save one position (``step``) or the whole run as SVG or HTML (by suffix) through Rich's recording.

    The whole run is every position, one after another, for HTML; the final frame for SVG.
    """
    import io

    from rich.console import Console
    from rich.rule import Rule

    console = Console(file=io.StringIO(), record=True, width=width, height=height, force_terminal=True,
                      color_system="truecolor", highlight=False)
    svg = path.suffix.lower() == ".svg"
    if step is not None:
        positions = [player.position_of_step(step)]
    elif svg:
        positions = [len(player) - 1]
    else:
        positions = list(range(len(player)))
    for position in positions:
        if len(positions) > 1:
            console.print(Rule(player.label(position)))
        console.print(player.frame(position, height=height, width=width))
    title = f"memread replay {player.trace.run_id}"
    if svg:
        console.save_svg(str(path), title=title)
    else:
        console.save_html(str(path))
