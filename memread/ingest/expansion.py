"""Refusing decompression bombs: compressed inputs (``.gz``/``.bz2``/``.xz``, EPUB zips) that expand far beyond
what any text does.

The rule: an input is refused once its decompressed size is past :data:`FLOOR_BYTES` (32 MiB) **and** more than
``ratio`` times the compressed bytes it came from. ``ratio`` is :data:`DEFAULT_RATIO` (200), or
``MEMREAD_MAX_EXPANSION`` (``0`` turns the check off). Real text and logs compress 3-60x (a log of identical
lines reaches a few hundred with gzip, thousands with xz: raise the limit for those); a gzip bomb expands about
1,000x, bzip2 and nested bombs far more. Below the floor nothing is refused, so small inputs never are.

Streams are checked as they are read (the compressed bytes consumed so far against the bytes produced), so a
bomb is refused after at most 32 MiB of output; files are also checked when opened (:func:`precheck`), so
a bomb is refused before anything is read from it.
"""

from __future__ import annotations

import io
import math
import os
from typing import IO, Any

from memread.errors import InputError, UsageError

FLOOR_BYTES = 32 * 1024 * 1024
DEFAULT_RATIO = 200
ENV = "MEMREAD_MAX_EXPANSION"
PRECHECK_READ = 8 * 1024


def max_ratio() -> float:
    """The expansion ratio beyond which a large input is refused (0: no limit), from ``MEMREAD_MAX_EXPANSION``."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return DEFAULT_RATIO
    try:
        ratio = float(value)
        if not math.isfinite(ratio):  # NaN would turn the check off unsaid (every comparison with it is false)
            raise ValueError(value)
    except ValueError:
        raise UsageError(
            f"{ENV}={value!r} is not a number", hint=f"set {ENV} to a ratio such as 1000, or 0 for no limit"
        ) from None
    return max(ratio, 0.0)


def is_bomb(expanded: int, packed: int, ratio: float | None = None) -> bool:
    """Is ``expanded`` bytes out of ``packed`` compressed bytes past the floor and the ratio?"""
    ratio = max_ratio() if ratio is None else ratio
    return bool(ratio) and expanded > FLOOR_BYTES and expanded > ratio * max(packed, 1)


def bomb_error(label: str, expanded: int, packed: int, what: str = "compressed data") -> InputError:
    shown = "standard input" if label == "-" else label
    return InputError(
        f"{shown}: refused: its {what} expands more than {expanded // max(packed, 1):,}x "
        f"({_size(packed)} gave {_size(expanded)}, limit {max_ratio():g}x past {_size(FLOOR_BYTES)}); "
        "a decompression bomb?",
        hint=f"if the file is genuine (e.g. a log of identical lines), raise the limit: {ENV}=5000 (0: no limit)",
    )


class _ReadingStream(io.RawIOBase):
    """A readable raw stream whose subclass defines ``read``; ``readinto`` is served from it."""

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        raise NotImplementedError

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class CountingReader(_ReadingStream):
    """The compressed side: passes reads through and counts the bytes handed to the decompressor."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__()
        self._stream = stream
        self.count = 0
        self.cap: int | None = None  # largest read passed on (limits a decompressor's read-ahead)

    def read(self, size: int | None = -1) -> bytes:
        size = -1 if size is None else size
        if self.cap is not None:
            size = self.cap if size < 0 else min(size, self.cap)
        data = self._stream.read(size)
        self.count += len(data)
        return data

    def read1(self, size: int = -1) -> bytes:
        read1 = getattr(self._stream, "read1", self._stream.read)
        size = size if size is not None and size >= 0 else io.DEFAULT_BUFFER_SIZE
        data: bytes = read1(min(size, self.cap) if self.cap is not None else size)
        self.count += len(data)
        return data

    def close(self) -> None:
        self._stream.close()
        super().close()


class GuardedReader(_ReadingStream):
    """The decompressed side: counts what comes out and raises InputError when it is a bomb."""

    def __init__(self, inner: IO[bytes], counter: CountingReader, label: str) -> None:
        super().__init__()
        self._inner = inner
        self._counter = counter
        self._label = label
        self._ratio = max_ratio()
        self.produced = 0

    @property
    def consumed(self) -> int:
        return self._counter.count

    def _checked(self, data: bytes) -> bytes:
        self.produced += len(data)
        if is_bomb(self.produced, self.consumed, self._ratio):
            raise bomb_error(self._label, self.produced, self.consumed)
        return data

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        return self._checked(self._inner.read(size))

    def read1(self, size: int = -1) -> bytes:
        read1 = getattr(self._inner, "read1", self._inner.read)
        return self._checked(read1(size if size is not None and size >= 0 else io.DEFAULT_BUFFER_SIZE))

    def readall(self) -> bytes:
        parts = []
        while data := self.read(io.DEFAULT_BUFFER_SIZE * 8):
            parts.append(data)
        return b"".join(parts)

    def close(self) -> None:
        self._inner.close()
        self._counter.close()
        super().close()


def precheck(stream: GuardedReader, block: int = 1024 * 1024) -> None:
    """Read ``stream`` until its expansion is clearly within the limit, past the floor, or at its end; raises
    for a bomb, before any of it is read for real.

    Text settles at half the limit within a MiB or two. The decompressor's read-ahead is held to
    :data:`PRECHECK_READ` bytes meanwhile, so early ratios are not diluted by compressed bytes it has not
    used yet (gzip reads 128 KiB ahead).
    """
    ratio = stream._ratio
    if not ratio:
        return
    counter = stream._counter
    counter.cap = PRECHECK_READ
    try:
        while stream.read(block):
            if stream.produced > FLOOR_BYTES:
                return  # past the floor without being refused: not a bomb so far; streaming checks the rest
            if stream.produced >= block and 2 * stream.produced <= ratio * (stream.consumed - PRECHECK_READ):
                return
    finally:
        counter.cap = None


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"
