"""The streams a command talks to, injectable so tests can fake a terminal (httpie's ``Environment``).

stdout is data (the answer, ``--json``); everything else (progress, live view, warnings, errors) goes to
stderr.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import IO, Any, BinaryIO, cast


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@dataclass
class Environment:
    stdin: IO[Any] = field(default_factory=lambda: sys.stdin)
    stdout: IO[str] = field(default_factory=lambda: sys.stdout)
    stderr: IO[str] = field(default_factory=lambda: sys.stderr)
    stdin_isatty: bool | None = None
    stdout_isatty: bool | None = None
    stderr_isatty: bool | None = None
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    columns: int | None = None  # terminal width override (tests)

    def __post_init__(self) -> None:
        if self.stdin_isatty is None:
            self.stdin_isatty = _isatty(self.stdin)
        if self.stdout_isatty is None:
            self.stdout_isatty = _isatty(self.stdout)
        if self.stderr_isatty is None:
            self.stderr_isatty = _isatty(self.stderr)

    @property
    def no_color(self) -> bool:
        return bool(self.environ.get("NO_COLOR"))

    def stdin_binary(self) -> BinaryIO:
        """stdin as bytes (documents are decoded by the loaders, not by Python's stdin wrapper)."""
        buffer = getattr(self.stdin, "buffer", None)
        return cast(BinaryIO, buffer if buffer is not None else self.stdin)

    def err(self, message: str) -> None:
        print(message, file=self.stderr, flush=True)

    def out(self, message: str) -> None:
        print(message, file=self.stdout, flush=True)


_current: Environment | None = None


def current() -> Environment:
    """The environment of this process; tests replace it with :func:`use`."""
    global _current
    if _current is None:
        _current = Environment()
    return _current


def use(environment: Environment | None) -> None:
    global _current
    _current = environment
