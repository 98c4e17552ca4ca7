"""``memread replay``: watch a saved run again, step through it, diff its memory, export it. No model needed."""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

KEYS = {"\x1b[C": "right", "\x1b[D": "left", "l": "right", "h": "left", "n": "right", "p": "left",
        "\x1b[H": "home", "\x1b[F": "end", "g": "home", "G": "end", "q": "quit", "\x1b": "quit", " ": "pause",
        "\x03": "quit"}


def replay(
    trace: str = typer.Argument(..., help="A trace file, a run id, or a unique prefix of one."),
    speed: float = typer.Option(2.0, "--speed", min=0.1, help="Steps per second when playing."),
    step: int = typer.Option(None, "--step", min=1, help="Show the view after chunk N (1-based)."),
    diff: bool = typer.Option(False, "--diff", help="Print the memory's unified diff, step by step, to stdout."),
    export_html: Annotated[Path | None, typer.Option("--export-html",
                                                        help="Save the run (or --step N) as HTML.")] = None,
    export_svg: Annotated[Path | None, typer.Option("--export-svg",
                                                       help="Save the final view (or --step N) as SVG.")] = None,
) -> None:
    """Replay a saved run: the live view again, with ←/→ to step, space to pause, q to quit.

    Off a terminal, prints the view at --step N (or at the end) as plain text to stdout.
    """
    from memread.cli.environment import current
    from memread.cli.player import Player, colour_diff, export, memory_diffs
    from memread.traces.index import resolve_run
    from memread.traces.reader import read_trace

    env = current()
    loaded = read_trace(resolve_run(trace))
    if loaded.torn_lines:
        env.err(f"warning: skipped {loaded.torn_lines} unreadable line(s) (a run cut short mid-write)")
    if diff:
        paint = env.stdout_isatty and not env.no_color
        for line in memory_diffs(loaded):
            env.out(colour_diff(line) if paint else line)
        return
    player = Player(loaded)
    if step is not None:
        player.index = player.position_of_step(step)
    if export_html or export_svg:
        for path in (export_html, export_svg):
            if path is not None:
                _create_private(path)
                export(player, path, step=step)
                env.err(f"saved {path}")
        return
    if env.stderr_isatty:
        _play(player, env, speed=speed, paused=step is not None)
        return
    from rich.console import Console

    console = Console(file=env.stdout, force_terminal=False, no_color=True, width=env.columns or 110,
                      highlight=False, _environ=env.environ)
    console.print(player.frame(height=40, width=console.width))


def _create_private(path: Path) -> None:
    """Exports hold the document's text: create the file 0600, like traces, before Rich writes into it
    (Rich opens with "w", which keeps the mode of an existing file)."""
    from memread.errors import MemreadError

    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        os.chmod(path, 0o600)
    except OSError as error:
        raise MemreadError(f"cannot write {path}: {error.strerror or error}",
                           hint="choose a writable place for the export") from error


def _play(player: Any, env: Any, *, speed: float, paused: bool) -> None:
    """Auto-play at ``speed`` steps per second; keys step and pause when stdin is a terminal."""
    from rich.live import Live

    from memread.cli.live import stderr_console

    console = stderr_console(env)
    if not paused:
        player.index = 0
    live = Live(console=console, auto_refresh=False, redirect_stdout=False, redirect_stderr=False,
                vertical_overflow="crop")

    def show() -> None:
        live.update(player.frame(height=console.height, width=console.width), refresh=True)

    keys = _Keys(env.stdin) if env.stdin_isatty else None
    with live:
        show()
        if keys is None and paused:
            return  # --step N without a keyboard: show that view and stop
        try:
            next_at = time.monotonic() + 1 / speed
            while True:
                wait = max(0.0, next_at - time.monotonic()) if not paused else None
                if keys:
                    key = keys.read(wait)
                else:
                    time.sleep(wait or 0)
                    key = None
                if key is None:  # the timer fired
                    if paused:
                        continue
                    if player.is_final():
                        break
                    player.handle("right")
                    next_at = time.monotonic() + 1 / speed
                elif key == "":
                    continue  # a key we do not use
                elif key == "pause":
                    paused = not paused
                    next_at = time.monotonic() + 1 / speed
                elif not player.handle(key):
                    break
                else:
                    paused = True
                show()
                if keys is None and player.is_final():
                    break
        finally:
            if keys:
                keys.restore()


def split_keys(data: str) -> list[str]:
    """Key names from what one read returned (several presses can arrive together)."""
    keys = []
    while data:
        if data.startswith("\x1b[") and len(data) >= 3:
            chunk, data = data[:3], data[3:]
        else:
            chunk, data = data[0], data[1:]
        keys.append(KEYS.get(chunk, ""))
    return keys


class _Keys:
    """Single key presses from a terminal (cbreak mode), with a timeout."""

    def __init__(self, stream: Any) -> None:
        import termios
        import tty

        self.fd = stream.fileno()
        self.saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd)
        self.pending: list[str] = []

    def read(self, timeout: float | None) -> str | None:
        if not self.pending:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return None
            self.pending = split_keys(os.read(self.fd, 64).decode(errors="ignore"))
        return self.pending.pop(0) if self.pending else ""

    def restore(self) -> None:
        import termios

        termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
        sys.stderr.flush()
