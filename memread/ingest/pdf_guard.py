"""Decompression bombs inside a PDF: streams that would inflate far past what any page holds.

PDFium decodes a page's content streams, form XObjects, fonts and the object streams it parses in memory before
it gives a character: a 1 MiB content stream that inflates to 1 GiB took it 12 s and 2 GiB of memory. So streams
are measured before PDFium reads them, by the rule every compressed input follows
(:mod:`memread.ingest.expansion`: past 32 MiB and more than ``MEMREAD_MAX_EXPANSION`` times the packed bytes),
with a bounded inflate that keeps nothing. Images are left alone: text extraction does not decode them.

Two passes, the cheap one first:

* :func:`scan_file` reads the file once and inflates every deflated stream that is not an image, with no parser
  at all (a deflate stream ends itself). Most PDFs stop here: no bomb, nothing more to do.
* :class:`StreamGuard` walks one page's resources with pypdf, for the PDFs the scan cannot judge (encrypted: the
  scan sees ciphertext) or where it found a bomb: only the pages that use it are skipped.
"""

from __future__ import annotations

import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from memread.ingest.expansion import FLOOR_BYTES, is_bomb, max_ratio
from memread.ingest.pdf_pypdf import PageNode

MAX_DEFLATE_RATIO = 1032  # zlib's theoretical maximum
_FLATE = ("/FlateDecode", "/Fl")
_CHUNK = 1 << 20
_FEED = 16 << 10
MAX_DEPTH = 8  # form XObjects inside form XObjects (and Type 3 fonts' resources)


class Bomb(Exception):
    """A stream of a page expands past the limit."""

    def __init__(self, expanded: int, packed: int) -> None:
        super().__init__(f"{expanded} bytes from {packed}")
        self.expanded = expanded
        self.packed = packed


_STREAM_KEYWORD = re.compile(rb"(?<!end)stream(?:\r\n|\n|\r)")
_OBJECT_HEADER = re.compile(rb"(\d+)\s+\d+\s+obj")
_DIRECT_LENGTH = re.compile(rb"/Length\s+(\d+)(?![\d.]|\s+\d+\s+R)")
_ONLY_FLATE = re.compile(rb"/Filter\s*(?:/FlateDecode|\[\s*/FlateDecode\s*\])")
_BLOCK = 4 << 20
_DICTIONARY_REACH = 4096  # how far back from "stream" its dictionary is looked for


@dataclass
class Scan:
    """What :func:`scan_file` found: the object numbers (0 when unknown) of streams past the limit, and how many
    streams claim to be deflated but do not inflate (damage: a page drawing from one may come out empty)."""

    bombs: list[int] = field(default_factory=list)
    damaged: int = 0


def scan_file(stream: IO[bytes]) -> Scan:
    """Inflate the deflated, non-image streams of ``stream`` (no bomb is looked for when the limit is off:
    ``MEMREAD_MAX_EXPANSION=0``). The stream's position is left anywhere."""
    ratio = max_ratio()
    scan = Scan()
    size = stream.seek(0, io.SEEK_END)
    start = 0
    while start < size:
        stream.seek(start)
        block = stream.read(_BLOCK + 16)  # the overlap finds a keyword cut by the block's end
        for found in _STREAM_KEYWORD.finditer(block):
            if found.start() >= _BLOCK:
                break
            head = block[found.end(): found.end() + 2]
            deflated = len(head) == 2 and _zlib_header(head)
            dictionary = _dictionary_before(stream, block, start, found.start())
            if not deflated:
                scan.damaged += _ONLY_FLATE.search(dictionary) is not None
                continue
            if not ratio or b"/Image" in dictionary or _too_small(dictionary, block, found.end()):
                continue
            expanded, packed, intact = _inflate_from(stream, block, start, start + found.end(), ratio)
            scan.damaged += not intact
            if is_bomb(expanded, packed, ratio):
                header = _OBJECT_HEADER.match(dictionary)
                scan.bombs.append(int(header.group(1)) if header else 0)
        start += _BLOCK
    return scan


def _too_small(dictionary: bytes, block: bytes, data: int) -> bool:
    """Is the stream's data (at ``data`` in ``block``) too short to inflate past the floor, by its own /Length?

    Only a /Length that lands on "endstream" counts: PDFium reads on to "endstream" when /Length is wrong."""
    length = _DIRECT_LENGTH.search(dictionary)
    if length is None or int(length.group(1)) * MAX_DEFLATE_RATIO > FLOOR_BYTES:
        return False
    end = data + int(length.group(1))
    return block[end: end + 12].lstrip(b"\r\n \t").startswith(b"endstream")


def _zlib_header(head: bytes) -> bool:
    """Do two bytes open a zlib stream (deflate, a valid check value)? A PDF's /FlateDecode data does."""
    return head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and (head[0] << 8 | head[1]) % 31 == 0


def _dictionary_before(stream: IO[bytes], block: bytes, block_start: int, keyword: int) -> bytes:
    """The bytes from the last object header ("12 0 obj") before ``keyword`` (a "stream" keyword at that offset
    of ``block``) up to it: the stream's dictionary."""
    if keyword >= _DICTIONARY_REACH:
        window = block[keyword - _DICTIONARY_REACH: keyword]
    else:
        reach = min(_DICTIONARY_REACH, block_start + keyword)
        stream.seek(block_start + keyword - reach)
        window = stream.read(reach)
    header = window.rfind(b"obj")
    while header >= 3 and window[header - 3: header] == b"end":
        header = window.rfind(b"obj", 0, header - 3)
    if header < 0:
        return window
    number = _OBJECT_HEADER.search(window, max(0, header - 32), header + 3)
    return window[number.start() if number else header:]


def _inflate_from(
    stream: IO[bytes], block: bytes, block_start: int, offset: int, ratio: float
) -> tuple[int, int, bool]:
    """Inflate the deflate stream at file ``offset`` to its end (or until it passes the limit), keeping nothing:
    (bytes out, bytes in, whether it inflated without error). Input is fed in small pieces: zlib copies what it
    does not use."""
    inflater = zlib.decompressobj()
    expanded = packed = 0
    view = memoryview(block)
    position = offset
    try:
        while True:
            inside = position - block_start
            if inside < len(block):
                piece: bytes | memoryview = view[inside: inside + _FEED]
            else:
                stream.seek(position)
                piece = stream.read(_FEED)
                if not piece:
                    break
            position += len(piece)
            while piece:
                out = inflater.decompress(piece, _CHUNK)
                expanded += len(out)
                piece = inflater.unconsumed_tail
                if inflater.eof or is_bomb(expanded, packed + len(piece), ratio):
                    break
            packed = position - offset - len(inflater.unconsumed_tail) - len(inflater.unused_data)
            if inflater.eof or is_bomb(expanded, packed, ratio):
                break
    except zlib.error:
        return expanded, packed, False
    return expanded, packed, True


class StreamGuard:
    """Checks each page's streams once (fonts and forms shared by many pages are measured the first time)."""

    def __init__(self) -> None:
        self.ratio = max_ratio()
        self._measured: set[tuple[int, int]] = set()

    def check(self, node: PageNode) -> None:
        """Raise :class:`Bomb` if a stream ``node``'s text extraction decodes expands past the limit.

        pypdf's own errors (an unreadable object) propagate: the caller decides what an unverifiable page is."""
        if not self.ratio:
            return
        for stream in _page_streams(node):
            key = _key(stream)
            if key is not None:
                if key in self._measured:
                    continue
                self._measured.add(key)
            self._measure(stream.get_object())

    def _measure(self, stream: Any) -> None:
        raw = getattr(stream, "_data", b"") or b""
        filters = _filters(stream)
        if not filters:
            return
        if len(filters) == 1 and filters[0] in _FLATE:
            if len(raw) * MAX_DEFLATE_RATIO <= FLOOR_BYTES:
                return
            expanded = _inflated_size(raw, self._cap(len(raw)))
        else:  # chains and other filters are rare: let pypdf decode them, within its own output limits
            expanded = _decoded_size(stream)
        if is_bomb(expanded, len(raw), self.ratio):
            raise Bomb(expanded, len(raw))

    def _cap(self, packed: int) -> int:
        return int(max(FLOOR_BYTES, self.ratio * packed)) + 1


def _page_streams(node: PageNode) -> Iterator[Any]:
    """The (unresolved) streams PDFium decodes to extract a page's text: contents, forms, fonts."""
    contents = node.page.get("/Contents")
    if contents is not None:
        resolved = contents.get_object()
        yield from (resolved if isinstance(resolved, list) else [contents])
    resources = node.get("/Resources")
    if resources is not None:
        yield from _resource_streams(resources, 0)


def _resource_streams(resources: Any, depth: int) -> Iterator[Any]:
    if depth > MAX_DEPTH or not hasattr(resources, "get"):
        return
    fonts = resources.get("/Font")
    for font in (fonts.get_object().values() if fonts is not None else ()):
        yield from _font_streams(font.get_object(), depth)
    xobjects = resources.get("/XObject")
    for reference in (xobjects.get_object().values() if xobjects is not None else ()):
        xobject = reference.get_object()
        if xobject.get("/Subtype") == "/Form":
            yield reference
            inner = xobject.get("/Resources")
            if inner is not None:
                yield from _resource_streams(inner.get_object(), depth + 1)


def _font_streams(font: Any, depth: int) -> Iterator[Any]:
    if not hasattr(font, "get"):
        return
    if font.get("/ToUnicode") is not None:
        yield font["/ToUnicode"]
    descriptor = font.get("/FontDescriptor")
    if descriptor is not None:
        descriptor = descriptor.get_object()
        for name in ("/FontFile", "/FontFile2", "/FontFile3"):
            if descriptor.get(name) is not None:
                yield descriptor[name]
    for descendant in (font.get("/DescendantFonts") or ()):
        yield from _font_streams(descendant.get_object(), depth + 1)
    procedures = font.get("/CharProcs")  # Type 3 glyphs are little content streams
    yield from (procedures.get_object().values() if procedures is not None else ())
    inner = font.get("/Resources")
    if inner is not None:
        yield from _resource_streams(inner.get_object(), depth + 1)


def _filters(stream: Any) -> list[str]:
    value = stream.get("/Filter")
    if value is None:
        return []
    value = value.get_object()
    return [str(item.get_object()) for item in value] if isinstance(value, list) else [str(value)]


def _inflated_size(data: bytes, cap: int) -> int:
    """How many bytes ``data`` inflates to, counting up to just past ``cap`` and keeping none of them.

    Damaged data counts what inflated before the damage (PDFium will make of the rest what it can)."""
    inflater = zlib.decompressobj()
    total = 0
    try:
        while total <= cap:
            out = inflater.decompress(data, _CHUNK)
            data = inflater.unconsumed_tail
            total += len(out)
            if inflater.eof or (not out and not data):
                break
    except zlib.error:
        pass
    return total


def _decoded_size(stream: Any) -> int:
    from pypdf.filters import decode_stream_data

    try:
        return len(decode_stream_data(stream))
    except Exception as error:  # LimitReachedError (pypdf's cap: 75 MB) is a bomb; damage is PDFium's to meet
        if type(error).__name__ == "LimitReachedError":
            return FLOOR_BYTES * 1024  # past any limit but "off"
        return 0


def _key(reference: Any) -> tuple[int, int] | None:
    idnum = getattr(reference, "idnum", None)
    return (idnum, reference.generation) if idnum is not None else None
