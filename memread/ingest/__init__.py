"""Turning what the user has (a PDF, an EPUB, a log, a folder, a pipe) into a :class:`~memread.document.Document`.

``open_document`` checks the input eagerly (missing, unreadable, empty, corrupt, encrypted, binary → InputError
with a hint) and returns a Document whose segments are read lazily, a page / chapter / few thousand lines at a
time. Which loader reads a file is decided by :mod:`memread.ingest.registry` (magic bytes, then extension, then
"looks like text"); gzip/bzip2/xz inputs are decompressed transparently as they stream.
"""

from __future__ import annotations

import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from memread.document import Document, Segment
from memread.errors import InputError
from memread.ingest.registry import Loader, find_loader, loaders, plugin_suggestion, register_loader
from memread.ingest.sniff import describe_binary
from memread.ingest.source import EmptyInputError, Source, display, empty_input, file_source, stream_source

__all__ = [
    "EmptyInputError",
    "Loader",
    "Source",
    "find_loader",
    "load_source",
    "loaders",
    "open_document",
    "register_loader",
]

SUPPORTED = "memread reads PDF, EPUB and text files (also .gz/.bz2/.xz compressed), directories and stdin"


def open_document(source: str, *, stdin: BinaryIO | None = None, password: str | None = None) -> Document:
    """Open a path, a directory, or ``"-"`` (``stdin``, bytes) as a lazily read :class:`Document`.

    Raises :class:`~memread.errors.InputError` (one-line message and a hint) when the input cannot be read.
    The document's segments can be iterated once; ``warnings`` and ``stats`` are complete after that.
    """
    if source == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        src = stream_source(stream, "-", password=password)
        if src.complete and not src.head:
            raise empty_input("-")
        loader = _loader_for(src)
        return load_source(src, loader, name="-", format="stdin" if loader.name == "text" else None)

    path = Path(source)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(
            f"{display(source)}: no such file or directory", hint="check the path; pass - to read standard input"
        ) from None
    except OSError as error:
        raise _os_error(source, error) from None
    if stat.S_ISDIR(mode):
        from memread.ingest.directory import open_directory

        return open_directory(path, source, password=password)
    if not stat.S_ISREG(mode):  # a named pipe such as <(zcat app.log.gz), or a device: stream it like stdin
        try:
            src = stream_source(open(path, "rb"), source, password=password)  # noqa: SIM115 - read lazily
        except OSError as error:
            raise _os_error(source, error) from None
        if src.complete and not src.head:
            raise empty_input(source)
        return load_source(src, _loader_for(src), name=source)
    try:
        src = file_source(path, source, password=password)
    except OSError as error:
        raise _os_error(source, error) from None
    if src.size_bytes == 0:
        raise empty_input(source)
    return load_source(src, _loader_for(src), name=source)


def load_source(src: Source, loader: Loader, *, name: str, format: str | None = None) -> Document:
    """Run ``loader`` on ``src`` (its eager checks now) and wrap its segments in a Document."""
    pending: list[Iterator[Segment]] = []

    def segments(_document: Document) -> Iterator[Segment]:
        if not pending:
            raise RuntimeError(f"the segments of {name} were already read; open the document again")
        return pending.pop()

    document = Document(name, format or loader.format, segments, size_bytes=src.size_bytes)
    pending.append(loader.open(src, document))
    document.stats.files = 1
    document.stats.formats[loader.format] = 1
    return document


def _loader_for(src: Source) -> Loader:
    loader = find_loader(src.name, src.head)
    if loader is not None:
        return loader
    what = display(src.label)
    plugin = plugin_suggestion(src.name)
    if plugin:
        raise InputError(
            f"{what}: memread reads this format with the {plugin} plugin, which is not installed",
            hint=f"pip install ./plugins/{plugin} (from a memread checkout); `memread plugins` lists what is installed",
        )
    kind = describe_binary(src.head)
    if kind:
        article = "an" if kind[0].lower() in "aeiou" else "a"
        raise InputError(f"{what} is {article} {kind}, which memread cannot read", hint=SUPPORTED)
    raise InputError(f"{what} looks like a binary file, not a document", hint=SUPPORTED)


def _os_error(source: str, error: OSError) -> InputError:
    if isinstance(error, PermissionError):
        return InputError(f"{display(source)}: permission denied", hint="check the file's permissions (ls -l)")
    return InputError(f"{display(source)}: cannot be read ({error.strerror or error})", hint="check the path")
