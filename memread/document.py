"""What a document is to memread: a lazy stream of text segments, each knowing where it came from.

Invariant every loader keeps: concatenating the ``text`` of all segments, in order, gives the document's
normalised text. Loaders put the separators (``"\\n\\n"`` between pages, files and chapters) inside the
segment texts, so the chunker never invents or drops a character.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Provenance:
    """Where a segment of text came from. Every field but ``source`` is optional."""

    source: str  # file path as the user gave it, relative path inside a directory, or "-" for stdin
    page: int | None = None  # 1-based physical page number (PDF)
    page_label: str | None = None  # printed page label, e.g. "iv" (PDF /PageLabels)
    chapter: str | None = None  # chapter / item title (EPUB)
    line_start: int | None = None  # 1-based first line (text and logs)
    line_end: int | None = None  # 1-based last line, inclusive


@dataclass(frozen=True)
class Segment:
    text: str
    provenance: Provenance


@dataclass(frozen=True)
class Heading:
    """A heading the document's own structure declares (a PDF bookmark, an HTML/EPUB ``<h1>``-``<h6>``, a
    Markdown ``#`` line), not one guessed from the text.

    ``title`` is the heading's text as it appears in the document's text, except where the source states it
    differently (a PDF bookmark may omit the section number the page prints). Where it is, in the same terms as
    :class:`Provenance`: ``source``, ``page`` (1-based physical page), ``chapter`` (the chapter of the segment
    the heading is in), ``line`` (1-based line in the source).
    """

    level: int  # 0 = top level (a PDF's outermost bookmark, <h1>, "#"); deeper headings count up
    title: str
    source: str
    page: int | None = None
    chapter: str | None = None
    line: int | None = None


@dataclass
class DocumentStats:
    """Counters a loader fills while it is iterated (so they are complete only after iteration)."""

    files: int = 0  # files read
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count (hidden, gitignored, binary, ...)
    pages: int = 0
    empty_pages: list[int] = field(default_factory=list)  # physical page numbers with no text layer
    chapters: int = 0
    lines: int = 0
    characters: int = 0
    formats: dict[str, int] = field(default_factory=dict)  # format -> number of files


class Document:
    """A lazy stream of segments. Iterate :meth:`segments` once; warnings, stats and the outline fill as you go
    (a loader that knows the outline up front, as a PDF's bookmarks, fills it when the document is opened)."""

    def __init__(
        self,
        name: str,
        format: str,
        segments: Callable[[Document], Iterator[Segment]],
        *,
        size_bytes: int | None = None,
    ) -> None:
        self.name = name  # what the user passed ("book.pdf", "reports/", "-")
        self.format = format  # "pdf", "epub", "text", "directory", "stdin", ...
        self.size_bytes = size_bytes
        self.warnings: list[str] = []
        self.stats = DocumentStats()
        self.outline: list[Heading] = []  # the document's headings in reading order (complete after iteration)
        self._segments = segments

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def segments(self) -> Iterator[Segment]:
        for segment in self._segments(self):
            self.stats.characters += len(segment.text)
            yield segment

    def __repr__(self) -> str:
        return f"Document({self.name!r}, format={self.format!r})"


@dataclass(frozen=True)
class Span:
    """The part of one source that a chunk covers."""

    source: str
    page_first: int | None = None
    page_last: int | None = None
    label_first: str | None = None
    label_last: str | None = None
    chapters: tuple[str, ...] = ()
    line_first: int | None = None
    line_last: int | None = None

    def describe(self) -> str:
        """Human-readable location, e.g. ``book.pdf p. 3-5``, ``notes.txt lines 10-240``, ``stdin line 7`` (the
        source ``-``)."""
        parts = ["stdin" if self.source == "-" else self.source]
        if self.page_first is not None:
            first = self.label_first or str(self.page_first)
            last = self.label_last or str(self.page_last)
            parts.append(f"p. {first}" if self.page_first == self.page_last else f"pp. {first}-{last}")
        if self.chapters:
            parts.append("§ " + " / ".join(self.chapters))
        if self.line_first is not None:
            if self.line_first == self.line_last:
                parts.append(f"line {self.line_first}")
            else:
                parts.append(f"lines {self.line_first}-{self.line_last}")
        return " ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items() if v not in (None, ())}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Span:
        """A span as :meth:`to_dict` wrote it."""
        fields: dict[str, Any] = {key: tuple(value) if key == "chapters" else value for key, value in data.items()}
        return cls(**fields)


@dataclass(frozen=True)
class Mark:
    """Where the text from ``offset`` on (within its chunk) comes from, until the next mark: a new source, page
    or chapter starts a mark. ``line`` is the source line at ``offset``; later lines are counted from it."""

    offset: int
    provenance: Provenance
    line: int | None = None


@dataclass(frozen=True)
class Chunk:
    """A piece of the document that fits the token budget, with where it came from."""

    index: int  # 0-based position in the document
    text: str
    tokens: int  # counted with the tokenizer the chunker was given
    spans: tuple[Span, ...]  # one per source touched, in order
    # Finer provenance inside the chunk, for locating a part of it (:meth:`locate`); kept by the chunker, not
    # by traces (a chunk read back from a trace has none and locates to its spans).
    marks: tuple[Mark, ...] = field(default=(), compare=False, repr=False)

    def describe(self) -> str:
        return "; ".join(span.describe() for span in self.spans)

    def locate(self, start: int, end: int) -> tuple[Span, ...]:
        """Where ``text[start:end]`` comes from: its own pages, chapter and lines when the chunk has marks, else
        the chunk's spans."""
        if not self.marks:
            return self.spans
        end = max(end, start + 1)
        spans: list[Span] = []
        for number, mark in enumerate(self.marks):
            stop = self.marks[number + 1].offset if number + 1 < len(self.marks) else len(self.text)
            low, high = max(start, mark.offset), min(end, stop)
            if low >= high:
                continue
            where = mark.provenance
            first = last = None
            if mark.line is not None:
                first = mark.line + self.text.count("\n", mark.offset, low)
                last = first + self.text.count("\n", low, max(low, high - 1))
            span = Span(where.source, page_first=where.page, page_last=where.page, label_first=where.page_label,
                        label_last=where.page_label, chapters=(where.chapter,) if where.chapter else (),
                        line_first=first, line_last=last)
            if spans and spans[-1].source == span.source:  # one span per source, as the chunk's own
                spans[-1] = _merged(spans[-1], span)
            else:
                spans.append(span)
        return tuple(spans) or self.spans


def _merged(a: Span, b: Span) -> Span:
    chapters = a.chapters + tuple(c for c in b.chapters if c not in a.chapters)
    return replace(a, page_first=a.page_first if a.page_first is not None else b.page_first,
                   label_first=a.label_first if a.page_first is not None else b.label_first,
                   page_last=b.page_last if b.page_last is not None else a.page_last,
                   label_last=b.label_last if b.page_last is not None else a.label_last, chapters=chapters,
                   line_first=a.line_first if a.line_first is not None else b.line_first,
                   line_last=b.line_last if b.line_last is not None else a.line_last)
