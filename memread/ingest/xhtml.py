"""XHTML (EPUB chapters) to plain text that keeps the document's structure for the chunker.

Block elements (paragraphs, headings, list items, table rows…) become paragraphs separated by ``"\\n\\n"``, so
a heading stays a line of its own and the chunker can cut between paragraphs; ``<br>`` is a line break; text
inside ``<pre>`` keeps its lines and indentation; everything else has its whitespace collapsed as a browser would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.entities import name2codepoint
from typing import Any

BLOCKS = frozenset(
    [
        "p",
        "div",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "li",
        "blockquote",
        "pre",
        "tr",
        "ul",
        "ol",
        "dl",
        "dt",
        "dd",
        "table",
        "thead",
        "tbody",
        "tfoot",
        "caption",
        "section",
        "article",
        "header",
        "footer",
        "aside",
        "nav",
        "figure",
        "figcaption",
        "hr",
        "address",
        "main",
        "body",
        "details",
        "summary",
        "fieldset",
        "form",
        "center",
        "hgroup",
    ]
)
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_LEVELS = {name: level for level, name in enumerate(HEADINGS, start=1)}
_SKIP = frozenset(["head", "script", "style", "template", "noscript"])
_CELLS = frozenset(("td", "th"))
_XML_ENTITIES = frozenset((b"amp", b"lt", b"gt", b"quot", b"apos"))
_ENTITY = re.compile(rb"&([A-Za-z][A-Za-z0-9]*);")
_WHITESPACE = re.compile(r"[ \t\r\n\f\u00a0]+")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_BREAK = object()  # paragraph boundary marker in the piece list
_HEADING_END = object()  # closes a heading opened by its level (an int) in the piece list


@dataclass(frozen=True)
class Page:
    """One XHTML document as text: the body text, its first heading and its <title>, and every ``<h1>``-``<h6>``
    of the body as ``(level 1-6, text)`` in order, the text as it stands in ``text`` (on one line)."""

    text: str
    heading: str | None
    title: str | None
    headings: tuple[tuple[int, str], ...] = ()


def xhtml_to_text(content: bytes) -> Page:
    """Convert one XHTML/HTML document (bytes, any declared encoding) into paragraphs of text."""
    root = _parse(content)
    if root is None:
        return Page("", None, None)
    title = heading = None
    for element in root.iter():
        name = _local(element)
        if name == "title" and title is None:
            title = _collapse("".join(element.itertext())) or None
        elif name in HEADINGS and heading is None:
            heading = _collapse("".join(element.itertext())) or None
        if heading is not None:
            break
    pieces: list[Any] = []
    body = next((el for el in root.iter() if _local(el) == "body"), root)
    _walk(body, pieces, pre=False)
    text, headings = _assemble(pieces)
    return Page(text, heading, title, headings)


def _parse(content: bytes) -> Any:
    from lxml import etree, html

    # XHTML files use HTML entities (&nbsp;) that an XML parser without the DTD would drop; spell them out.
    content = _ENTITY.sub(_numeric_entity, content)
    parser = etree.XMLParser(recover=True, resolve_entities=False, no_network=True, huge_tree=True)
    try:
        root = etree.fromstring(content, parser=parser)
    except etree.XMLSyntaxError:
        root = None
    # Not XML at all (HTML tag soup), or a fragment ("<h1>…</h1><p>…</p>"), of which XML recovery keeps the
    # first element only: read as HTML, which keeps every element of it.
    if root is None or _local(root) != "html":
        try:
            root = html.document_fromstring(content)
        except (etree.ParserError, ValueError):
            return None
    return root


def _numeric_entity(match: re.Match[bytes]) -> bytes:
    name = match.group(1)
    if name in _XML_ENTITIES or name.decode() not in name2codepoint:
        return match.group(0)
    return b"&#%d;" % name2codepoint[name.decode()]


def _local(element: Any) -> str | None:
    tag = element.tag
    if not isinstance(tag, str):  # comments and processing instructions
        return None
    return tag.rsplit("}", 1)[-1].lower()


def _collapse(text: str) -> str:
    return _WHITESPACE.sub(" ", _CONTROL.sub("", text)).strip()


def _walk(element: Any, out: list[Any], *, pre: bool) -> None:
    name = _local(element)
    if name is None or name in _SKIP:
        return
    if name == "br":
        out.append("\n")
        return
    block = name in BLOCKS
    pre = pre or name == "pre"
    if block:
        out.append(_BREAK)
    if name in _LEVELS:
        out.append(_LEVELS[name])
    if element.text:
        out.append(_inline(element.text, pre))
    for child in element:
        _walk(child, out, pre=pre)
        if child.tail:
            out.append(_inline(child.tail, pre))
    if name in _CELLS:
        out.append(" ")
    if block:
        out.append(_BREAK)
    if name in _LEVELS:
        out.append(_HEADING_END)


def _inline(text: str, pre: bool) -> str:
    text = _CONTROL.sub(
        "", text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    " if pre else " ")
    )
    if pre:
        return text.replace("\n", "\x00")  # marks a kept line break; spaces around it are not collapsed
    return _WHITESPACE.sub(" ", text)


def _assemble(pieces: list[Any]) -> tuple[str, tuple[tuple[int, str], ...]]:
    """The paragraphs joined by blank lines; and the headings: the first paragraph of each heading element."""
    paragraphs: list[str] = []
    current: list[str] = []
    headings: list[tuple[int, str]] = []
    level: int | None = None  # inside a heading that has no paragraph yet

    def flush() -> None:
        nonlocal level
        raw = "".join(current)
        current.clear()
        if "\x00" in raw:  # preformatted: keep indentation, trim line ends
            lines = [line.rstrip() for line in raw.replace("\n", "\x00").split("\x00")]
            text = "\n".join(lines).strip("\n")
        else:
            text = "\n".join(" ".join(line.split()) for line in raw.split("\n")).strip("\n")
        if text.strip():
            paragraphs.append(text)
            if level is not None:
                headings.append((level, " ".join(text.split())))
                level = None

    for piece in pieces:
        if piece is _BREAK:
            flush()
        elif piece is _HEADING_END:
            level = None
        elif isinstance(piece, int):
            level = piece
        else:
            current.append(piece)
    flush()
    return "\n\n".join(paragraphs), tuple(headings)
