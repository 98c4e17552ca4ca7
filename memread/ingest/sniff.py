"""Recognising what a stream of bytes is from its first few KiB: magic numbers, byte-order marks, text vs binary.

Everything here looks only at ``head`` (the first :data:`HEAD_SIZE` bytes), so it never reads a whole input.
"""

from __future__ import annotations

import codecs
import re

HEAD_SIZE = 8192  # git's binary heuristic looks at the first 8 KiB too

PDF_MAGIC = b"%PDF-"
ZIP_MAGIC = b"PK\x03\x04"
EPUB_MIMETYPE = b"application/epub+zip"

# Compressed containers memread opens transparently, by magic number (the extension is only a fallback).
COMPRESSION_MAGIC: dict[str, bytes] = {
    "gzip": b"\x1f\x8b",
    "bzip2": b"BZh",
    "xz": b"\xfd7zXZ\x00",
}
COMPRESSION_SUFFIXES: dict[str, str] = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}

# Byte-order marks, longest first: the UTF-32 LE mark starts with the UTF-16 LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

# Formats memread cannot read, named so the error message can say what the file is.
_KNOWN_BINARIES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "PNG image"),
    (0, b"\xff\xd8\xff", "JPEG image"),
    (0, b"GIF8", "GIF image"),
    (0, b"\x7fELF", "ELF executable"),
    (0, b"MZ", "Windows executable"),
    (0, b"SQLite format 3\x00", "SQLite database"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "legacy Microsoft Office document"),
    (0, b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (0, b"Rar!", "RAR archive"),
    (0, b"\x28\xb5\x2f\xfd", "Zstandard-compressed file"),
    (0, b"OggS", "Ogg media file"),
    (0, b"fLaC", "FLAC audio file"),
    (0, b"ID3", "MP3 audio file"),
    (0, b"\x00asm", "WebAssembly module"),
    (0, b"\xca\xfe\xba\xbe", "Java class file"),
    (257, b"ustar", "tar archive"),
    (4, b"ftyp", "MP4/QuickTime media file"),
)


def is_pdf(head: bytes) -> bool:
    # The spec tolerates junk before the header; such files still reach the PDF loader by their extension.
    return head.startswith(PDF_MAGIC)


def is_epub(head: bytes) -> bool:
    """An EPUB is a zip whose first entry is ``mimetype`` (stored, uncompressed) = ``application/epub+zip``."""
    return head.startswith(ZIP_MAGIC) and b"mimetype" in head[26:80] and EPUB_MIMETYPE in head[30:200]


def compression_of(head: bytes) -> str | None:
    """``"gzip"``, ``"bzip2"`` or ``"xz"`` when ``head`` starts with that format's magic number."""
    for name, magic in COMPRESSION_MAGIC.items():
        if head.startswith(magic):
            # "BZh" alone could start a text file; bzip2 follows it with the block size digit.
            if name == "bzip2" and not head[3:4].isdigit():
                continue
            return name
    return None


def bom_encoding(head: bytes) -> str | None:
    """The codec named by a byte-order mark at the start of ``head`` (the codec strips the mark)."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    return None


def describe_binary(head: bytes) -> str | None:
    """A human name for a binary format memread cannot read ("PNG image"), or None."""
    for offset, magic, name in _KNOWN_BINARIES:
        if head[offset : offset + len(magic)] == magic:
            return name
    if head.startswith(ZIP_MAGIC):
        return "zip archive"
    return None


def looks_like_text(head: bytes) -> bool:
    """True when ``head`` reads as text: a BOM, or no NUL byte and few control characters (git's heuristic)."""
    if bom_encoding(head):
        return True
    if not head:
        return True
    if b"\x00" in head or describe_binary(head):
        return False
    # Allowed controls: \t \n \f \r, backspace and ESC (terminal colours in logs).
    controls = sum(1 for byte in head if byte < 32 and byte not in (8, 9, 10, 12, 13, 27)) + head.count(127)
    return controls <= len(head) // 100


_PADDING = re.compile(rb"\x00{16,}")  # runs of NULs: a log's zero-filled tail after a crash, not binary data


def utf16_without_bom(head: bytes) -> str | None:
    """``"utf-16-le"``/``"utf-16-be"`` when ``head`` is mostly-ASCII UTF-16 without a byte-order mark (every
    other byte NUL), else None."""
    sample = head[: len(head) // 2 * 2]
    half = len(sample) // 2
    if half < 8:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    if odd >= 0.4 * half and even <= 0.02 * half:
        return "utf-16-le"
    if even >= 0.4 * half and odd <= 0.02 * half:
        return "utf-16-be"
    return None


def looks_binary(head: bytes) -> bool:
    """True when a file whose *name* says text (``notes.txt``) holds binary data: more than 5 % control bytes.

    More lenient than :func:`looks_like_text` (which decides for files without a telling name): runs of NULs
    (zero-filled log tails) are ignored, and text in legacy 8-bit encodings is never binary here.
    """
    if bom_encoding(head) or utf16_without_bom(head):
        return False
    sample = _PADDING.sub(b"", head)
    if not sample:
        return False
    controls = sum(1 for byte in sample if byte < 32 and byte not in (8, 9, 10, 12, 13, 27)) + sample.count(127)
    return controls > len(sample) // 20


_MAGICS = (PDF_MAGIC, ZIP_MAGIC, *COMPRESSION_MAGIC.values(), *(bom for bom, _ in _BOMS))


def needs_more_for_magic(head: bytes) -> bool:
    """True while ``head`` is too short to tell a magic number (or an EPUB's mimetype entry) from text."""
    if head.startswith(ZIP_MAGIC):
        return len(head) < 200
    return any(len(head) < len(magic) and magic.startswith(head) for magic in _MAGICS)
