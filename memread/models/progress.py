"""What a pull reports while it runs, for a progress bar (``memread models pull``, a first ``memread ask``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class PullProgress:
    """What a pull is doing, for a progress bar. ``phase`` is "download", "assemble", "convert" or "verify"."""

    model: str
    phase: str
    done: int
    total: int
    detail: str = ""


ProgressCallback = Callable[[PullProgress], None]
