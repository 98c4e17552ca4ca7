"""HTML pages (saved reports, exported docs): the visible text in paragraphs, not the markup.

A page is converted whole (pages are small); one larger than :data:`MAX_HTML_BYTES` is streamed as plain text
instead, tags and all, so memory stays bounded (and without an outline). The page's ``<h1>``-``<h6>`` are its
outline: ``<h1>`` at level 0.
"""

from __future__ import annotations

from collections.abc import Iterator

from memread.document import Document, Heading, Provenance, Segment
from memread.ingest.source import Source, empty_input
from memread.ingest.text import open_text
from memread.ingest.xhtml import xhtml_to_text

MAX_HTML_BYTES = 32 * 1024 * 1024


def open_html(source: Source, document: Document) -> Iterator[Segment]:
    """Convert the page now when it is small enough, else read it as text."""
    if source.size_bytes is None or source.size_bytes > MAX_HTML_BYTES or source.compression:
        return open_text(source, document)
    with source.open() as stream:
        page = xhtml_to_text(stream.read())
    if not page.text:
        raise empty_input(source.label)
    title = page.title or page.heading
    document.outline.extend(Heading(level - 1, text, source.label, chapter=title) for level, text in page.headings)
    return iter([Segment(page.text, Provenance(source.label, chapter=title))])
