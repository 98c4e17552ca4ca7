"""Text and logs (plain, or gzip/bzip2/xz compressed, from a file or a pipe), streamed as line-ranged segments.

The text is normalised as it streams: ``\\r\\n`` and lone ``\\r`` become ``\\n`` (so line numbers count
normalised lines, which equals ``grep -n`` for LF and CRLF files), terminal colour codes and control characters
other than ``\\t``/``\\n`` are dropped, and bytes that are not valid in the encoding become U+FFFD (with one
warning). Segments hold at most :data:`SEGMENT_CHARS` characters and end at a line break when one is near, so
memory stays flat whatever the input size; a line longer than that is cut into several segments that all carry
its line number. A Markdown file's headings are its outline (:mod:`memread.ingest.markdown`).
"""

from __future__ import annotations

import codecs
import lzma
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import IO

from memread.document import Document, Provenance, Segment
from memread.errors import InputError
from memread.ingest.markdown import is_markdown, with_headings
from memread.ingest.sniff import bom_encoding, describe_binary, looks_binary, utf16_without_bom
from memread.ingest.source import Source, corrupt_compression, display, empty_input

SEGMENT_CHARS = 256 * 1024
READ_BYTES = 256 * 1024

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ANSI = re.compile("\x1b\\[[0-9;?]*[ -/]*[@-~]")  # terminal colours/cursor moves, common in CI logs
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_ESCAPED_BYTES = re.compile("[\udc80-\udcff]+")  # what the surrogateescape handler makes of invalid bytes


def open_text(source: Source, document: Document) -> Iterator[Segment]:
    """Open a text source: raise for empty or binary input now, stream its segments lazily."""
    encoding = bom_encoding(source.head) or utf16_without_bom(source.head) or "utf-8"
    if looks_binary(source.head):  # e.g. a PNG or an executable renamed notes.txt
        kind = describe_binary(source.head) or "binary file"
        raise InputError(
            f"{display(source.label)} looks like a {kind}, not text, despite its name",
            hint="memread reads PDF, EPUB and text files; check what the file really is with `file`",
        )
    if source.complete and not source.head.decode(encoding, errors="replace").strip():
        raise empty_input(source.label)
    interactive = source.path is None  # a pipe: hand over each line as soon as it arrived
    return _stream(source, document, encoding, interactive)


def _stream(source: Source, document: Document, encoding: str, interactive: bool) -> Iterator[Segment]:
    stream = source.open()
    try:
        blocks = decoded_blocks(
            stream,
            encoding,
            on_invalid=lambda: document.warn(
                f"{display(source.label)}: not valid {encoding.upper()}; undecodable bytes were replaced by U+FFFD"
            ),
            interactive=interactive,
        )
        segments = line_segments(blocks, source.label, document, interactive=interactive)
        if is_markdown(source.name):
            segments = with_headings(segments, source.label, document)
        yield from segments
    except (EOFError, lzma.LZMAError, zlib.error) as error:  # truncated gzip: EOFError; bad data: zlib.error
        raise corrupt_compression(source.label, source.compression, error) from error
    except OSError as error:
        if source.compression:
            raise corrupt_compression(source.label, source.compression, error) from error
        raise InputError(
            f"{display(source.label)}: read failed ({error.strerror or error})",
            hint="check the disk or the pipe",
        ) from error
    finally:
        stream.close()


def decoded_blocks(
    stream: IO[bytes],
    encoding: str,
    *,
    on_invalid: Callable[[], None],
    interactive: bool = False,
) -> Iterator[str]:
    """Decode ``stream`` block by block into normalised text (newlines unified, control characters dropped)."""
    utf8 = encoding.replace("-", "").lower() in ("utf8", "utf8sig")
    # UTF-8 is decoded strictly (fast) until the first invalid byte; from then on surrogateescape marks invalid
    # bytes so they can be counted once and turned into U+FFFD. Other encodings simply replace.
    decoder = codecs.getincrementaldecoder(encoding)(errors="strict" if utf8 else "replace")
    read: Callable[[int], bytes] = getattr(stream, "read1", stream.read) if interactive else stream.read
    held_cr = False  # a "\r" at the end of a block may be the first half of "\r\n"
    while True:
        data = read(READ_BYTES)
        final = not data
        try:
            text = decoder.decode(data, final=final)
        except UnicodeDecodeError:  # the decoder keeps its state when it raises: retry the same bytes
            on_invalid()
            decoder.errors = "surrogateescape"
            text = decoder.decode(data, final=final)
        if decoder.errors == "surrogateescape" and not text.isascii():
            text = _ESCAPED_BYTES.sub(lambda m: "\ufffd" * len(m.group()), text)
        # Control bytes never occur inside UTF-8 multi-byte sequences, so the (much faster) bytes check is exact.
        controls = len(data.translate(None, _CONTROL_BYTES)) != len(data) if utf8 else _CONTROL.search(text)
        if held_cr:
            text = "\r" + text
        held_cr = not final and text.endswith("\r")
        if held_cr:
            text = text[:-1]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if controls:
            text = _CONTROL.sub("", _ANSI.sub("", text))
        if text:
            yield text
        if final:
            return


def line_segments(
    blocks: Iterable[str],
    label: str,
    document: Document,
    *,
    interactive: bool = False,
    max_chars: int = SEGMENT_CHARS,
) -> Iterator[Segment]:
    """Cut a stream of text blocks into segments of at most ``max_chars``, at line breaks where possible.

    With ``interactive``, every complete line is handed over as soon as its block arrived (stdin while the
    writer is still writing). Raises the empty-input error at the end when the text was only whitespace.
    """
    line = 1  # line number of the next character to emit
    saw_text = False
    last_piece = ""

    def segment(piece: str) -> Segment:
        nonlocal line, saw_text, last_piece
        newlines = piece.count("\n")
        last = line + newlines - (1 if piece.endswith("\n") else 0)
        made = Segment(piece, Provenance(label, line_start=line, line_end=last))
        line += newlines
        document.stats.lines += newlines
        saw_text = saw_text or bool(piece.strip())
        last_piece = piece
        return made

    parts: list[str] = []
    size = 0
    for block in blocks:
        parts.append(block)
        size += len(block)
        if size < max_chars and not (interactive and "\n" in block):
            continue
        text = "".join(parts)
        while len(text) >= max_chars:
            cut = text.rfind("\n", 0, max_chars) + 1 or max_chars
            yield segment(text[:cut])
            text = text[cut:]
        if interactive and (cut := text.rfind("\n") + 1):
            yield segment(text[:cut])
            text = text[cut:]
        parts, size = ([text], len(text)) if text else ([], 0)
    if parts:
        yield segment("".join(parts))
    if last_piece and not last_piece.endswith("\n"):
        document.stats.lines += 1  # the last line has no newline but is a line
    if not saw_text:
        raise empty_input(label)
