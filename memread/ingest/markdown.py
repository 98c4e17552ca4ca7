"""The headings of a Markdown file, found line by line as its text streams past (:func:`with_headings`).

ATX headings (``## Title``, closing ``#``s dropped) and setext headings (a paragraph underlined with ``===`` or
``---``), as CommonMark reads them at the top level of the document. Not headings: lines in fenced or indented
code (a shell comment ``# install``), YAML/TOML front matter, HTML blocks and comments, block quotes and list
items, and a ``---`` after a blank line (a thematic break). Titles keep their inline markup (``**`` or
backticks): memread reads Markdown as text, so that is how the line reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memread.document import Document, Heading, Segment

MARKDOWN_EXTENSIONS = (".md", ".markdown")
MAX_LINE = 4096  # characters of a line kept for scanning; longer lines are prose, not headings

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_BREAK = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")  # thematic break
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)$")
_CONTAINER = re.compile(r" {0,3}(?:>|[-+*](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|<[A-Za-z/?!])")
_FRONT_MATTER = {"---": ("---", "..."), "+++": ("+++",)}
_FRONT_MATTER_LINES = 1000  # an opening "---" not closed by then was a thematic break


def is_markdown(name: str) -> bool:
    """Is a file called ``name`` (compression suffix removed) Markdown?"""
    return name.lower().endswith(MARKDOWN_EXTENSIONS)


def with_headings(segments: Iterator[Segment], label: str, document: Document) -> Iterator[Segment]:
    """Pass ``segments`` through, adding the headings of their text to ``document.outline`` as they appear."""
    scanner = MarkdownHeadings(label, document.outline)
    for segment in segments:
        scanner.feed(segment.text)
        yield segment
    scanner.close()


class MarkdownHeadings:
    """Scans Markdown text fed in pieces (lines may be split between them) and appends its headings to ``into``,
    with 1-based line numbers counted from the first piece."""

    def __init__(self, source: str, into: list[Heading]) -> None:
        self.source = source
        self.into = into
        self._line = 0  # number of the last complete line scanned
        self._partial = ""  # a line not ended yet
        self._fence: str | None = None  # inside a fenced code block: its opening run of ` or ~
        self._front: list[str] | None = None  # front matter lines, held until it closes
        self._front_end: tuple[str, ...] = ()
        self._comment = False  # inside an HTML comment
        self._paragraph: list[str] = []  # the open paragraph's lines (a setext heading's title), up to MAX_LINE
        self._paragraph_line = 0  # its first line; 0: no paragraph is open
        self._paragraph_chars = 0
        self._other = False  # inside a block quote, list item or HTML block: no top-level paragraph

    def feed(self, text: str) -> None:
        lines = text.split("\n")
        lines[0] = self._partial + lines[0]
        self._partial = lines.pop()[:MAX_LINE]
        for line in lines:
            self._line += 1
            self._scan(line[:MAX_LINE], self._line)

    def close(self) -> None:
        if self._partial:
            self._line += 1
            self._scan(self._partial, self._line)
            self._partial = ""
        if self._front is not None:  # never closed: it was Markdown after all
            self._replay_front()

    def _scan(self, line: str, number: int) -> None:
        if self._front is not None:
            self._in_front_matter(line)
            return
        if number == 1 and line.rstrip() in _FRONT_MATTER:
            self._front, self._front_end = [line], _FRONT_MATTER[line.rstrip()]
            return
        self._markdown(_untabbed(line), number)

    def _in_front_matter(self, line: str) -> None:
        assert self._front is not None
        if line.rstrip() in self._front_end:
            self._front = None
        else:
            self._front.append(line)
            if len(self._front) > _FRONT_MATTER_LINES:
                self._replay_front()

    def _replay_front(self) -> None:
        held, self._front = self._front or [], None
        for offset, line in enumerate(held):
            self._markdown(_untabbed(line), self._line - len(held) + 1 + offset)

    def _markdown(self, line: str, number: int) -> None:
        if self._fence is not None:
            closing = _FENCE.match(line)
            if closing and closing.group(1).startswith(self._fence) and not closing.group(2).strip():
                self._fence = None
            return
        if self._comment:
            self._comment = "-->" not in line
            return
        if not line.strip():
            self._end_paragraph()
            self._other = False
            return
        indented = len(line) - len(line.lstrip(" ")) >= 4
        if indented and not self._paragraph_line:  # indented code, or a list item's continuation
            return
        if not indented:
            if self._heading(line, number):
                return
            fence = _FENCE.match(line)
            if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
                self._end_paragraph()
                self._fence = fence.group(1)
                return
            if _BREAK.match(line) or _CONTAINER.match(line):
                self._end_paragraph()
                self._other = True
                self._comment = line.lstrip().startswith("<!--") and "-->" not in line
                return
        if self._other:  # a lazy continuation line of a list item or block quote
            return
        if not self._paragraph_line:
            self._paragraph_line = number
        if self._paragraph_chars < MAX_LINE:  # memory stays flat in a file without blank lines
            self._paragraph.append(line.strip())
            self._paragraph_chars += len(line)

    def _heading(self, line: str, number: int) -> bool:
        """Append the heading ``line`` is or ends (an ATX line, a setext underline); False when it is neither."""
        atx = _ATX.match(line)
        if atx:
            self._end_paragraph()
            self._other = False
            title = _CLOSING.sub("", atx.group(2) or "").strip()
            if title:
                self.into.append(Heading(len(atx.group(1)) - 1, title, self.source, line=number))
            return True
        setext = _SETEXT.match(line)
        if setext and self._paragraph_line and not self._other:
            level = 0 if setext.group(1)[0] == "=" else 1
            self.into.append(Heading(level, " ".join(self._paragraph), self.source, line=self._paragraph_line))
            self._end_paragraph()
            return True
        return False

    def _end_paragraph(self) -> None:
        self._paragraph, self._paragraph_line, self._paragraph_chars = [], 0, 0


def _untabbed(line: str) -> str:
    """The line with the tabs of its indentation expanded (to 4 columns, as CommonMark counts them)."""
    if "\t" not in line:
        return line
    text = line.lstrip(" \t")
    return line[: len(line) - len(text)].expandtabs(4) + text
