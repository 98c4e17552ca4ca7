"""Numbering: a passage cut into the units a reader can pick and keep, from the text's own structure.

A unit is a sentence of prose, or a line that stands on its own: a log line, a record, a list item (with the
lines it wraps onto), a table row, a line of code or configuration, a heading. Prose wrapped at a fixed width
(a PDF page, a hard-wrapped changelog item) is joined before it is cut into sentences, so a sentence is not cut
at a line end. Nothing is guessed from a line's length: a short line is a unit like any other; it is a heading
only when the text marks it as one (a numbered section title, a ``===`` banner) or the document's outline names
it (a Markdown ``#`` heading comes from the loader's outline: in a log or a configuration file ``# …`` is a
comment or a record, "# of unexpected failures 21"). Boilerplate lines (:mod:`.boilerplate`) are kept as units of their own, flagged, so they can be
left out of what is shown, ranked and kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

MAX_UNITS = 150  # units per passage at most (shorter neighbours are joined): bounds the numbering

# A sentence ends at . ! ? (and closing quotes or brackets), followed by space and what can start a sentence;
# not after an initial ("John C. Whitcomb"), a common abbreviation or "e.g."/"i.e.".
_ABBREVIATIONS = ("v", "vs", "Mr", "Mrs", "Ms", "Dr", "St", "Mt", "Jr", "Sr", "No", "Prof", "e.g", "i.e", "etc",
                  "cf", "Fig", "Sec", "Vol", "approx")
_SENTENCE_END = re.compile(
    r"(?<!\b[A-Z]\.)" + "".join(rf"(?<!\b{re.escape(word)}\.)" for word in _ABBREVIATIONS)
    + r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9À-Þ])")

# Lines that start a unit of their own whatever comes before: list items, numbered steps, table rows, quoted or
# bracketed lines, dated or timed log lines, "KEY: value" records ("PASS: …", "Depends: …"), banners, code fences.
_BLOCK_START = re.compile(
    r"\s*(?:[-*+•·]\s|\d{1,3}[.)]\s|#|\||```|>|\[|=|\d{4}-\d\d-\d\d|(?:\S+\s+){0,3}\d{1,2}:\d\d:\d\d|"
    r"[A-Z][A-Z0-9_]+:\s)")
_LINE_END = re.compile(r"[.!?…:;][\"'”’)\]*_]*$")
_LOWER_START = re.compile(r"[a-zß-ÿ(\"'“‘]")
# A heading the text marks: a numbered section title ("2.4.5 Commands for Manipulating the History",
# "12.1. RAID and LVM", "Chapter 3. Inputs", "Appendix A"), a Markdown heading, a banner ("=== g++ Summary ===").
# A title after a dotted number may be a lower-case name ("1.2.1. lintian", "A.2. Ubuntu"), which a numbered list
# item ("1. install it") never has; after a lone number it is a short title in title case ("1 A Brief
# Introduction to Octave", not "51 Franklin Street, Suite 500" nor a sentence that starts with a number).
_DOTTED_TITLE = re.compile(r"(?:\d+|[A-Z])(?:\.\d+)+\.?\s+[\w\"'“][^.!?]*$")
_LONE_NUMBER_TITLE = re.compile(r"\d{1,2}\.?\s+[A-Z][^.!?,;:]*$")
_LABELLED_TITLE = re.compile(r"(?:Chapter|Appendix|Part|Section)\s+(?:\d+|[A-Z]|[IVXLC]+)\b[.:]?(?:\s+\S.*)?$")
_BANNER = re.compile(r"(?:={3,}|\*{3,}|-{3,}|#{3,})\s*\S.*?\s*(?:={3,}|\*{3,}|-{3,}|#{3,})$")
_HYPHEN_BREAK = re.compile(r"(?<=\w-)[ \t]*\r?\n\s*(?=[a-zß-ÿ])")
_BREAK = re.compile(r"\s*\r?\n\s*")

HEADING, SENTENCE, LINE, BOILERPLATE = "heading", "sentence", "line", "boilerplate"


@dataclass(frozen=True)
class Unit:
    """A unit of a passage: where it is in the chunk's text, its text on one line, and what it is."""

    start: int
    end: int
    text: str
    kind: str  # HEADING | SENTENCE | LINE | BOILERPLATE
    block: int  # the paragraph or line group it belongs to (sentences of one paragraph share it)
    indent: int = 0  # leading spaces of its first line (tabs count 8): nesting, as in a changelog entry's items

    @property
    def heading(self) -> bool:
        return self.kind == HEADING

    @property
    def readable(self) -> bool:
        """Whether a reader sees it (boilerplate is left out of what is shown, ranked and kept)."""
        return self.kind != BOILERPLATE


def one_line(text: str) -> str:
    """``text`` with its line breaks made spaces, and none after a hyphen that ends a line ("twenty-|six")."""
    if "\n" not in text and "\r" not in text:
        return text
    return _BREAK.sub(" ", _HYPHEN_BREAK.sub("", text))


def is_marked_heading(line: str) -> bool:
    """Whether a line is a heading by the text's own marks (numbering, ``#``, a banner), not by its length."""
    line = line.strip()
    if not line or len(line) > 120:
        return False
    words = line.split()
    if is_banner(line):
        return True
    if len(words) < 2 or len(words) > 12 or line.endswith((",", ";", ")")):
        return False
    if _LABELLED_TITLE.match(line) or _DOTTED_TITLE.fullmatch(line):
        return True
    long_words = [word for word in words[1:] if len(word) >= 4]
    capitalised = sum(1 for word in long_words if word[0].isupper())
    return bool(_LONE_NUMBER_TITLE.fullmatch(line)) and capitalised >= max(1, 0.6 * len(long_words))


def is_banner(line: str) -> bool:
    """Whether a line is a banner ("=== g++ tests ==="): how a log or a report titles its sections."""
    return bool(_BANNER.fullmatch(line.strip()))


_NUMBER_PREFIX = re.compile(r"^\s*(?:(?:chapter|appendix|part|section)\s+)?(?:\d+|[a-z])(?:\.\d+)*\.?\s+")


def heading_key(title: str) -> str:
    """A heading's title as lines are matched to it: lower case, spaces collapsed, its numbering dropped (a
    PDF bookmark "Running Octave" is the page's "1.1 Running Octave")."""
    key = " ".join(title.lower().split())
    return _NUMBER_PREFIX.sub("", key) if len(key.split()) > 1 else key


def _indent(line: str) -> int:
    expanded = line.expandtabs(8)
    return len(expanded) - len(expanded.lstrip())


def units(text: str, *, boilerplate: Callable[[str], bool] = lambda line: False,
          headings: frozenset[str] = frozenset()) -> list[Unit]:
    """The passage's units, in order, at most :data:`MAX_UNITS` (neighbours joined). ``boilerplate`` says which
    lines are boilerplate (given the stripped line); ``headings`` are the titles the document's own structure
    declares (:func:`heading_key`)."""
    found: list[Unit] = []
    for number, (offset, body, kind) in enumerate(_blocks(text, boilerplate, headings)):
        indent = _indent(body)
        stripped = body.strip()
        if kind != "prose":
            start = offset + len(body) - len(body.lstrip())
            found.append(Unit(start, start + len(stripped), one_line(stripped), kind, number, indent))
            continue
        cursor = 0
        for piece in _SENTENCE_END.split(body):
            at = body.find(piece, cursor)
            cursor = at + len(piece)
            if not piece.strip():
                continue
            start = offset + at + (len(piece) - len(piece.lstrip()))
            found.append(Unit(start, start + len(piece.strip()), one_line(piece.strip()), SENTENCE, number, indent))
    while len(found) > MAX_UNITS:  # join neighbours of one kind, shortest pair first, until the numbering is bounded
        pairs = [i for i in range(len(found) - 1) if found[i].readable == found[i + 1].readable] or \
            list(range(len(found) - 1))
        pair = min(pairs, key=lambda i: (len(found[i].text) + len(found[i + 1].text), i))
        a, b = found[pair], found[pair + 1]
        kind = a.kind if a.kind == b.kind else LINE
        found[pair:pair + 2] = [Unit(a.start, b.end, one_line(text[a.start:b.end].strip()), kind, a.block, a.indent)]
    return found


def _blocks(text: str, boilerplate: Callable[[str], bool],
            headings: frozenset[str]) -> list[tuple[int, str, str]]:
    """The passage's lines grouped: (offset, text, kind) where kind is "prose" (a paragraph to cut into
    sentences: wrapped lines joined), LINE, HEADING or BOILERPLATE."""
    lines = text.splitlines(keepends=True)
    widths = sorted(len(line.rstrip()) for line in lines if line.strip())
    width = widths[int(0.9 * (len(widths) - 1))] if widths else 0
    blocks: list[tuple[int, str, str]] = []
    offset = 0
    for line in lines:
        body = line.rstrip("\n\r")
        stripped = body.strip()
        if not stripped:
            offset += len(line)
            continue
        if boilerplate(stripped):
            kind = BOILERPLATE
        elif (headings and heading_key(stripped) in headings) or is_marked_heading(stripped):
            kind = HEADING
        else:
            kind = "prose" if _prose_like(stripped) else LINE
        if blocks and kind in ("prose", LINE) and _continues(blocks[-1], body, width):
            start, before, was = blocks[-1]
            blocks[-1] = (start, text[start:offset + len(body)], "prose" if was == "prose" or kind == "prose" else was)
        else:
            blocks.append((offset, body, kind))
        offset += len(line)
    return blocks


def _prose_like(line: str) -> bool:
    """A line that reads as (part of) running text: several words, mostly lower case, not a record."""
    if _BLOCK_START.match(line):
        return False
    words = line.split()
    lower = sum(1 for word in words if word[:1].islower())
    return len(words) >= 6 and lower >= len(words) / 2


def _continues(block: tuple[int, str, str], line: str, width: int) -> bool:
    """Whether ``line`` goes on with the block before it: prose wrapped at a fixed width, or a list item's
    wrapped continuation (indented past the item's marker)."""
    start, before, kind = block
    if kind not in ("prose", LINE):
        return False
    last = before.rsplit("\n", 1)[-1]
    head = line.strip()
    if _BLOCK_START.match(line) or is_marked_heading(head):
        return False
    first = before.split("\n", 1)[0]
    if _indent(line) < _indent(first):
        return False  # less indented than the block's first line: the next record ("binutils (2.30-4) …")
    marker = re.match(r"(\s*(?:[-*+•·]|\d{1,3}[.)])\s+)", first)
    if marker and _indent(line) >= len(marker.group(1).expandtabs(8)) and _indent(line) > _indent(first):
        return True  # "  * binutils-source: Depend on …" wrapped onto "    pkg-config, libzstd-dev."
    if width < 30 or len(last.rstrip()) < 0.6 * width or _LINE_END.search(last.rstrip()):
        return False
    if _indent(line) != _indent(last) and not marker:
        return False
    if kind == "prose" and _prose_like(last.strip()):
        return True  # running text broken at the width: "… by the environment variable" | "OCTAVE_HISTSIZE."
    return bool(_LOWER_START.match(head)) or last.rstrip().endswith((",", "-", "–", "(", "and", "or", "the", "of",
                                                                    "to", "a", "an", "in", "for", "with"))
