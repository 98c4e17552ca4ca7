"""One input a loader reads: a file on disk (maybe compressed) or a one-shot stream such as stdin.

A :class:`Source` hands a loader a binary stream of the *decompressed* content plus its first bytes (``head``,
already read for sniffing). Streams are read incrementally: nothing here reads a whole input into memory, except
:meth:`Source.open_seekable` for compressed or piped PDFs/EPUBs, which spools to a temporary file past 32 MiB.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import re
import shutil
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

from memread.errors import InputError
from memread.ingest.expansion import CountingReader, GuardedReader, precheck
from memread.ingest.sniff import COMPRESSION_SUFFIXES, HEAD_SIZE, compression_of, needs_more_for_magic

SPOOL_IN_MEMORY = 32 * 1024 * 1024  # spooled streams move to a temporary file beyond this
# What damaged compressed data raises: gzip an OSError, EOFError (truncated) or zlib.error (bad deflate data),
# bzip2 an OSError, xz an LZMAError.
DECOMPRESSION_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, lzma.LZMAError, zlib.error)


class PartialReader(io.RawIOBase):
    """A stream whose ``read(n)`` returns what is available now (``read1``) instead of waiting for ``n`` bytes.

    Decompressors call ``read(n)`` on the stream they wrap; on a pipe that would block until ``n`` bytes or EOF
    arrive, which would hold back text a writer has already sent. ``prefix`` is served first: it holds the bytes
    already consumed for sniffing.
    """

    def __init__(self, stream: IO[bytes], prefix: bytes = b"") -> None:
        super().__init__()
        self._stream = stream
        self._prefix = prefix
        self._read1: Callable[[int], bytes] = getattr(stream, "read1", stream.read)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.read1(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        return self.read1(size)

    def read1(self, size: int = -1) -> bytes:
        if self._prefix:
            size = len(self._prefix) if size is None or size < 0 else size
            data, self._prefix = self._prefix[:size], self._prefix[size:]
            return data
        return self._read1(size if size is not None and size >= 0 else io.DEFAULT_BUFFER_SIZE)

    def readall(self) -> bytes:
        parts = []
        while data := self.read1(io.DEFAULT_BUFFER_SIZE):
            parts.append(data)
        return b"".join(parts)


def decompressor(compression: str, stream: IO[bytes]) -> IO[bytes]:
    """A streaming decompressed view of ``stream`` (``gzip`` also handles concatenated members)."""
    if compression == "gzip":
        return cast(IO[bytes], gzip.GzipFile(fileobj=stream, mode="rb"))
    if compression == "bzip2":
        return cast(IO[bytes], bz2.BZ2File(stream, mode="rb"))
    if compression == "xz":
        return cast(IO[bytes], lzma.LZMAFile(stream, mode="rb"))
    raise ValueError(f"unknown compression {compression!r}")


def guarded_decompressor(compression: str, stream: IO[bytes], label: str) -> GuardedReader:
    """:func:`decompressor`, refusing a decompression bomb as it streams (see :mod:`memread.ingest.expansion`)."""
    counter = CountingReader(stream)
    return GuardedReader(decompressor(compression, cast(IO[bytes], counter)), counter, label)


def read_head(stream: IO[bytes], size: int = HEAD_SIZE) -> tuple[bytes, bool]:
    """Up to ``size`` bytes from ``stream`` and whether that was the whole stream.

    On a pipe this returns as soon as the bytes that arrived settle the format (a magic number needs up to 6
    bytes, an EPUB's ``mimetype`` entry ~60), so a writer that sends one short line and keeps the pipe open
    is not waited on.
    """
    read1: Callable[[int], bytes] = getattr(stream, "read1", stream.read)
    head = b""
    while not head or (needs_more_for_magic(head) and len(head) < size):
        data = read1(size - len(head))
        if not data:
            return head, True
        head += data
    return head, False


@dataclass
class Source:
    """The bytes of one document, as a loader sees them.

    ``label`` is what provenance calls it (the path the user gave, a path relative to a directory, or ``"-"``).
    ``name`` is the file name without a compression suffix, used for extension dispatch (``"policy.pdf"`` for
    ``policy.pdf.gz``).
    """

    label: str
    name: str
    head: bytes  # first bytes of the decompressed content
    complete: bool  # ``head`` is the whole content
    path: Path | None = None
    compression: str | None = None
    size_bytes: int | None = None  # size on disk (compressed size for compressed files)
    password: str | None = None
    _stream: IO[bytes] | None = field(default=None, repr=False)  # one-shot streams (stdin)

    def open(self) -> IO[bytes]:
        """A binary stream of the decompressed content, from its first byte. One-shot sources open once."""
        if self._stream is not None:
            stream, self._stream = self._stream, None
            return stream
        if self.path is None:
            raise RuntimeError(f"{self.label} was already read")
        raw: IO[bytes] = open(self.path, "rb")  # noqa: SIM115 - the caller owns and closes it
        if not self.compression:
            return raw
        return cast(IO[bytes], guarded_decompressor(self.compression, raw, self.label))

    def open_seekable(self) -> BinaryIO:
        """A seekable stream (pypdf and zipfile seek): the file itself, or a spooled copy when compressed/piped."""
        if self.path is not None and self.compression is None and self._stream is None:
            return open(self.path, "rb")  # noqa: SIM115
        stream = self.open()
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
        try:
            shutil.copyfileobj(stream, spool, 1024 * 1024)
        except DECOMPRESSION_ERRORS as error:
            spool.close()
            raise corrupt_compression(self.label, self.compression, error) from error
        except BaseException:  # a decompression bomb (InputError), Ctrl-C
            spool.close()
            raise
        finally:
            stream.close()
        spool.seek(0)
        return spool  # type: ignore[return-value]


class EmptyInputError(InputError):
    """The input has no text at all (zero bytes or only whitespace); directories skip such files."""


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\n``, ``\\x1b``), for messages that quote names from outside
    (file names, zip members): a newline in a file name must not split a one-line error, nor an escape
    sequence reach the terminal."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def display(label: str) -> str:
    """How messages name a source: its path (control characters escaped), or "standard input" for ``-``."""
    return "standard input" if label == "-" else printable(label)


def empty_input(label: str) -> EmptyInputError:
    return EmptyInputError(
        f"{display(label)} is empty (no text to read)",
        hint="check that the file or the command feeding the pipe produced output",
    )


def corrupt_compression(label: str, compression: str | None, error: BaseException) -> InputError:
    return InputError(
        f"{display(label)}: the {compression or 'compressed'} data is truncated or corrupt ({error})",
        hint="check the file with e.g. `gzip -t`; a partial download can be fetched again",
    )


def file_source(path: Path, label: str, *, password: str | None = None) -> Source:
    """Open ``path`` far enough to sniff it (raises ``OSError``; the caller turns it into an InputError)."""
    size = path.stat().st_size
    with open(path, "rb") as raw:
        head = raw.read(HEAD_SIZE)
    complete = len(head) < HEAD_SIZE
    compression = compression_of(head)
    name = path.name
    if compression:
        for suffix in COMPRESSION_SUFFIXES:
            if name.lower().endswith(suffix):
                name = name[: -len(suffix)]
                break
        with guarded_decompressor(compression, open(path, "rb"), label) as inner:
            try:
                head = inner.read(HEAD_SIZE)
                precheck(inner)  # a bomb is refused now, before a loader spends time on it
            except DECOMPRESSION_ERRORS as error:
                raise corrupt_compression(label, compression, error) from error
        complete = len(head) < HEAD_SIZE
    return Source(
        label, name, head, complete, path=path, compression=compression, size_bytes=size, password=password
    )


def stream_source(stream: IO[bytes], label: str = "-", *, password: str | None = None) -> Source:
    """Wrap a one-shot binary stream (stdin), decompressing it when it starts with a gzip/bzip2/xz magic."""
    head, complete = read_head(stream)
    compression = compression_of(head)
    reader = cast(IO[bytes], PartialReader(stream, head))
    if compression:
        inner = cast(IO[bytes], guarded_decompressor(compression, reader, label))
        try:
            head, complete = read_head(inner)
        except DECOMPRESSION_ERRORS as error:
            raise corrupt_compression(label, compression, error) from error
        reader = cast(IO[bytes], PartialReader(inner, head))
    return Source(label, label, head, complete, compression=compression, password=password, _stream=reader)
