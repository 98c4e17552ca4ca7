"""memread plugin: HTML files and saved web pages as readable text, through BeautifulSoup.

Registered through the entry point ``readable-html = "memread_html:LOADER"`` in the group ``memread.loaders.v1``.
Registered after memread's built-in html loader, it is asked first, so it reads ``.html``/``.htm``/``.xhtml``
(and pages without an extension that start with ``<!DOCTYPE html``/``<html``).

What is kept: the page's main content (``<main>``, else its only ``<article>``, else ``<body>``) as paragraphs,
headings, list items (``- ``), table rows (cells joined by `` | ``) and preformatted blocks. What is dropped:
scripts, styles, navigation, site headers and footers, sidebars, forms, hidden elements and the usual
boilerplate (cookie banners, share buttons, breadcrumbs, ads). Provenance: the heading path
(``Guide > Installing > On Linux``) as the chapter; text before the first heading carries the page title.
The kept headings are the document's outline (``<h1>`` at level 0), each with the heading path it starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from memread.document import Document, Heading, Provenance, Segment
from memread.errors import InputError
from memread.ingest import Loader, Source
from memread.ingest.source import display, empty_input

__version__ = "0.1.0"
__all__ = ["LOADER", "open_html", "page_blocks"]

HEADING_SEPARATOR = " > "
MAX_PAGE_BYTES = 64 * 1024 * 1024  # larger "pages" (HTML dumps, logs) are read as text by memread instead

_DROPPED_TAGS = {
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "nav", "aside",
    "form", "button", "select", "input", "textarea", "label", "dialog", "menu", "head", "meta", "link",
}  # fmt: skip
_DROPPED_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar", "dialog"}
# Whole words of class/id names that mark page furniture rather than content.
_BOILERPLATE_WORDS = {
    "menu", "sidebar", "toc", "breadcrumb", "breadcrumbs", "cookie", "cookies",
    "consent", "gdpr", "banner", "advert", "advertisement", "ads", "ad", "sponsored", "share", "sharing",
    "social", "newsletter", "subscribe", "popup", "modal", "skip", "toolbar", "masthead", "pagination",
}  # fmt: skip
_BLOCK_TAGS = {
    "address", "article", "blockquote", "body", "caption", "center", "dd", "details", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "header", "hr", "li", "main", "ol", "p", "section", "summary",
    "table", "tbody", "tfoot", "thead", "ul",
}  # fmt: skip
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_WORD = re.compile(r"[a-z0-9]+")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Block:
    """One paragraph of readable text, or a heading (``level`` 1-6)."""

    text: str
    level: int | None = None


def looks_like_html(head: bytes) -> bool:
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:64].lower()
    return start.startswith((b"<!doctype html", b"<html"))


def open_html(source: Source, document: Document) -> Iterator[Segment]:
    """Parse the page now (InputError if it has no readable text) and return its sections."""
    if source.size_bytes is not None and source.size_bytes > MAX_PAGE_BYTES:
        from memread.ingest.text import open_text

        document.warn(f"{display(source.label)} is too large for the HTML reader; it is read as plain text")
        return open_text(source, document)
    with source.open() as stream:
        data = stream.read(MAX_PAGE_BYTES + 1)
    if len(data) > MAX_PAGE_BYTES:
        raise InputError(
            f"{display(source.label)}: the page is larger than {MAX_PAGE_BYTES // 2**20} MB once decompressed",
            hint="decompress it and read it as text (memread ask page.txt …)",
        )
    title, blocks = page_blocks(data)
    if not any(block.text for block in blocks):
        raise empty_input(source.label)
    document.stats.chapters = sum(1 for block in blocks if block.level is not None)
    return _segments(blocks, title, source.label, document)


def page_blocks(markup: bytes | str) -> tuple[str | None, list[Block]]:
    """The page's title and its readable blocks, boilerplate removed."""
    import warnings

    from bs4 import BeautifulSoup

    with warnings.catch_warnings():  # XHTML (an <?xml?> prolog) read as HTML is what we want; do not say so
        warnings.simplefilter("ignore")
        soup = BeautifulSoup(markup, _parser())
    title = _text(soup.title.get_text()) if soup.title else None
    for tag in soup.find_all(_is_boilerplate):
        if not tag.decomposed:
            tag.decompose()
    root = soup.find("main") or soup.find(attrs={"role": "main"})
    if root is None:
        articles = soup.find_all("article")
        root = articles[0] if len(articles) == 1 else (soup.body or soup)
    walker = _Walker()
    walker.walk(root)
    walker.flush()
    return title or None, walker.blocks


def _parser() -> str:
    try:
        import lxml  # noqa: F401 - faster and more lenient, when installed
    except ImportError:
        return "html.parser"
    return "lxml"


def _is_boilerplate(tag: Any) -> bool:
    if tag.decomposed or not getattr(tag, "name", None):
        return False
    name = tag.name.lower()
    attrs = tag.attrs or {}
    if name in _DROPPED_TAGS:
        return True
    if "hidden" in attrs or str(attrs.get("aria-hidden", "")).lower() == "true":
        return True
    if re.search(r"display\s*:\s*none", str(attrs.get("style", "")), re.IGNORECASE):
        return True
    if str(attrs.get("role", "")).lower() in _DROPPED_ROLES:
        return True
    if name in ("header", "footer") and tag.find_parent(["article", "main", "section"]) is None:
        return True  # the site's header and footer; an article's own header (its title, byline) stays
    if name in ("body", "html", "main", "article"):
        return False
    classes = attrs.get("class") or []
    words = set(_WORD.findall(" ".join([*classes, str(attrs.get("id", ""))]).lower()))
    # "nav", "navbar", "navheader" (DocBook), "navigation"...: navigation, whatever the site calls it
    return bool(words & _BOILERPLATE_WORDS) or any(word.startswith("nav") for word in words)


class _Walker:
    """Depth-first over the kept tree: inline text accumulates; block boundaries flush it into a Block."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self._parts: list[str] = []
        self._prefix = ""

    def walk(self, node: Any) -> None:
        from bs4 import NavigableString, Tag
        from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

        for child in node.children:
            if isinstance(child, (Comment, Declaration, Doctype, ProcessingInstruction)):
                continue
            if isinstance(child, NavigableString):
                self._parts.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name.lower()
            if name in _HEADINGS:
                self.flush()
                heading = _text(child.get_text(" "))
                if heading:
                    self.blocks.append(Block(heading, _HEADINGS[name]))
            elif name == "tr":
                self.flush()
                cells = [_text(cell.get_text(" ")) for cell in child.find_all(["td", "th"], recursive=False)]
                if any(cells):
                    self.blocks.append(Block(" | ".join(cells)))
            elif name == "pre":
                self.flush()
                text = child.get_text().strip("\n")
                if text.strip():
                    self.blocks.append(Block(text))
            elif name == "br":
                self._parts.append("\n")
            elif name == "li":
                self.flush()
                self._prefix = "- "
                self.walk(child)
                self.flush()
            elif name in _BLOCK_TAGS:
                self.flush()
                self.walk(child)
                self.flush()
            else:
                self.walk(child)

    def flush(self) -> None:
        lines = [_text(line) for line in "".join(self._parts).split("\n")]
        text = "\n".join(line for line in lines if line)
        self._parts = []
        if text:
            self.blocks.append(Block(self._prefix + text))
            self._prefix = ""


def _text(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _segments(blocks: list[Block], title: str | None, label: str, document: Document) -> Iterator[Segment]:
    """One segment per section (a heading and what follows it), paragraphs separated by blank lines; each
    heading joins the document's outline as its section is read."""
    path: list[tuple[int, str]] = []
    start = 0
    while start < len(blocks):
        block = blocks[start]
        if block.level is not None:
            path = [(level, text) for level, text in path if level < block.level]
            path.append((block.level, block.text))
        end = start + 1
        while end < len(blocks) and blocks[end].level is None:
            end += 1
        text = ("\n\n" if start else "") + "\n\n".join(b.text for b in blocks[start:end])
        chapter = HEADING_SEPARATOR.join(heading for _, heading in path) or title
        if block.level is not None:
            document.outline.append(Heading(block.level - 1, block.text, label, chapter=chapter))
        yield Segment(text, Provenance(label, chapter=chapter))
        start = end


LOADER = Loader(
    name="readable-html",
    format="html",
    extensions=(".html", ".htm", ".xhtml", ".shtml"),
    sniff=looks_like_html,
    open=open_html,
)
