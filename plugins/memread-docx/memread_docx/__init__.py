"""memread plugin: Word documents (.docx) through python-docx.

Registered through the entry point ``docx = "memread_docx:LOADER"`` in the group ``memread.loaders.v1``. The
module imports only memread's registry; python-docx is imported when a Word document is opened.

memread's text of a document has one line per body paragraph (empty ones included, so line N is paragraph N)
and per table row; segments are cut at headings and carry the heading path as their chapter.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from memread.document import Document, Provenance, Segment
from memread.errors import InputError
from memread.ingest import Loader, Source
from memread.ingest.source import display, empty_input

__version__ = "0.1.0"
__all__ = ["LOADER", "open_docx"]

HEADING_SEPARATOR = " > "
_HEADING_STYLE = re.compile(r"heading\s*([1-9])$", re.IGNORECASE)
_LINE_BREAKS = re.compile(r"[\r\n\v\f\u2028\u2029]+")
_SPACES = re.compile(r"[ \t\u00a0]+")


@dataclass(frozen=True)
class Block:
    """One line of the document's text: a paragraph or a table row."""

    text: str
    heading_level: int | None = None  # 0 for the Title style, 1-9 for Heading 1-9, None for body text


def looks_like_docx(head: bytes) -> bool:
    """A ZIP archive whose first entries are a Word document's ([Content_Types].xml and word/...)."""
    return head.startswith(b"PK\x03\x04") and b"word/" in head and b"[Content_Types].xml" in head


def open_docx(source: Source, document: Document) -> Iterator[Segment]:
    """Parse the document now (InputError if it is not a readable .docx), return its sections lazily."""
    blocks = read_blocks(source)
    if not any(block.text for block in blocks):
        raise empty_input(source.label)
    document.stats.lines = len(blocks)
    document.stats.chapters = sum(1 for block in blocks if block.heading_level is not None)
    return _segments(blocks, source.label)


def read_blocks(source: Source) -> list[Block]:
    import docx  # python-docx

    stream = source.open_seekable()
    try:
        word = docx.Document(stream)  # python-docx reads the whole package here
    except Exception as error:  # BadZipFile, PackageNotFoundError, KeyError, XMLSyntaxError: a damaged file
        raise _unreadable(source, error) from error
    finally:
        stream.close()
    return list(_blocks(word))


def _unreadable(source: Source, error: BaseException) -> InputError:
    reason = " ".join(str(error).split())[:160] or type(error).__name__
    return InputError(
        f"{display(source.label)}: not a readable Word document ({reason})",
        hint="memread-docx reads .docx (Word 2007 and later); save a .doc or a password-protected file as "
        "a plain .docx first",
    )


def _blocks(word: Any) -> Iterator[Block]:
    from docx.table import Table

    for item in word.iter_inner_content():
        if isinstance(item, Table):
            yield from _table_rows(item)
        else:
            yield Block(_clean(item.text), _heading_level(item))


def _table_rows(table: Any) -> Iterator[Block]:
    for row in table.rows:
        cells: list[str] = []
        seen: set[int] = set()
        for cell in row.cells:
            if id(cell._tc) in seen:  # a merged cell is returned once per grid column it spans
                continue
            seen.add(id(cell._tc))
            parts = [_clean(paragraph.text) for paragraph in cell.paragraphs]
            for inner in cell.tables:  # nested tables: their rows, flattened into the cell
                parts.extend(block.text for block in _table_rows(inner))
            cells.append(" ".join(part for part in parts if part))
        yield Block(" | ".join(cells) if any(cells) else "")


def _heading_level(paragraph: Any) -> int | None:
    style = paragraph.style
    while style is not None:  # a custom style based on "Heading 2" is a heading too
        name = (style.name or "").strip()
        if name.lower() == "title":
            return 0
        match = _HEADING_STYLE.match(name)
        if match:
            return int(match.group(1))
        style = style.base_style
    return None


def _clean(text: str) -> str:
    """One paragraph, one line: soft line breaks become spaces, runs of spaces one space."""
    return _SPACES.sub(" ", _LINE_BREAKS.sub(" ", text)).strip()


def _segments(blocks: list[Block], label: str) -> Iterator[Segment]:
    """One segment per run of paragraphs under the same heading path; line numbers are paragraph numbers."""
    path: list[tuple[int, str]] = []  # (level, heading text)
    start = 0
    while start < len(blocks):
        block = blocks[start]
        if block.heading_level is not None and block.text:
            # Headings above this one stay; the Title (level 0) heads only what comes before the first heading.
            path = [(level, text) for level, text in path if 0 < level < block.heading_level]
            path.append((block.heading_level, block.text))
        end = start + 1
        while end < len(blocks) and not (blocks[end].heading_level is not None and blocks[end].text):
            end += 1
        # Every line ends with its newline (the last one too): line numbers stay exact through the chunker.
        text = "".join(b.text + "\n" for b in blocks[start:end])
        chapter = HEADING_SEPARATOR.join(heading for _, heading in path) or None
        yield Segment(text, Provenance(label, chapter=chapter, line_start=start + 1, line_end=end))
        start = end


LOADER = Loader(
    name="docx",
    format="docx",
    extensions=(".docx", ".docm"),
    sniff=looks_like_docx,
    open=open_docx,
)
