"""Boilerplate: the lines a document repeats for navigation, which answer nothing and mislead ranking.

Recognised from the whole document at once (every chunk is seen before the first step):

* **dot leaders** — a table of contents or an index line ("1.2.5 Integrating Differential Equations . . . 9",
  "history_size . . . . 32"): a run of four or more leader dots;
* **running headers and footers** — the first or last line of a page that carries the page's own number
  ("32 GNU Octave (version 7.3.0)", "Chapter 24: Differential Equations 721"), or whose wording, numbers aside,
  opens or closes many pages;
* **navigation** — in a document of many parts (a folder of pages, a book's chapters), a line that, numbers
  aside, recurs in a fifth of the parts or more ("Prev", "Next", "Home", the site's name on every page).

A running header names the chapter its page is in: it is kept as the page's *context* (shown with the
passage, not as evidence).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from memread.document import Chunk

_LEADERS = re.compile(r"(?:\.\s?){4,}|…{2,}|(?:·\s?){4,}")
_DIGITS = re.compile(r"\d+")
_EDGE_SHARE = 0.02  # of the pages: a page-edge wording this common is a running header or footer
_PART_SHARE = 0.2  # of the parts: a line this common is navigation
_MIN_REPEATS = 3
_MIN_PARTS = 10  # parts a document needs for the navigation rule (a book of 3 chapters repeats little)
_MIN_PART_REPEATS = 5


def shape(line: str) -> str:
    """A line's wording with its numbers blanked: "32 GNU Octave (version 7.3.0)" → "# GNU Octave (version #.#.#)"."""
    return _DIGITS.sub("#", " ".join(line.split()))


@dataclass
class Boilerplate:
    """What a document repeats: the wordings (:func:`shape`) to leave out, and the running header of each page."""

    shapes: set[str] = field(default_factory=set)
    lines: set[str] = field(default_factory=set)  # exact lines: a page's edge line that carries its number
    page_context: dict[tuple[str, int], str] = field(default_factory=dict)  # (source, page) -> its running header

    def __call__(self, line: str) -> bool:
        """Whether ``line`` (stripped) is boilerplate."""
        return bool(_LEADERS.search(line)) or line in self.lines or shape(line) in self.shapes


def _page_edges(chunk: Chunk) -> Iterable[tuple[tuple[str, int, str | None], str, str]]:
    """(page, first line, last line) of each page that starts and ends inside ``chunk`` (a page cut by a chunk
    boundary gives the edge it has)."""
    marks = [m for m in chunk.marks if m.provenance.page is not None]
    for number, mark in enumerate(marks):
        end = marks[number + 1].offset if number + 1 < len(marks) else len(chunk.text)
        lines = [line.strip() for line in chunk.text[mark.offset:end].splitlines() if line.strip()]
        if lines:
            where = mark.provenance
            assert where.page is not None
            yield (where.source, where.page, where.page_label), lines[0], lines[-1]


def detect(chunks: Iterable[Chunk]) -> Boilerplate:
    """The boilerplate of a document, from all its chunks."""
    edges: dict[tuple[str, int, str | None], tuple[str, str]] = {}
    parts: dict[str, set[str]] = {}  # shape -> the parts (sources, chapters) it occurs in
    part_names: set[str] = set()
    for chunk in chunks:
        for where, first, last in _page_edges(chunk):
            if where not in edges:  # a page's first chunk has its first line
                edges[where] = (first, last)
            else:
                edges[where] = (edges[where][0], last)
        for mark_number, mark in enumerate(chunk.marks or ()):
            part = mark.provenance.chapter or (mark.provenance.source if mark.provenance.page is None else None)
            if part is None:
                continue
            part_names.add(part)
            end = chunk.marks[mark_number + 1].offset if mark_number + 1 < len(chunk.marks) else len(chunk.text)
            for line in chunk.text[mark.offset:end].splitlines():
                if line.strip() and len(line) <= 80:
                    parts.setdefault(shape(line), set()).add(part)
    found = Boilerplate()
    counts = Counter(shape(line) for first, last in edges.values() for line in {first, last})
    need = max(_MIN_REPEATS, int(_EDGE_SHARE * len(edges)))
    for (source, page, label), (first, last) in edges.items():
        for line in (first, last):
            words = line.split()
            carries_number = bool(label) and bool(words) and label in (words[0], words[-1])
            if carries_number:
                found.lines.add(" ".join(words))
            elif counts[shape(line)] >= need and re.search(r"[^\W\d_]{2}", line):  # words, not a lone number
                found.shapes.add(shape(line))
            if line == first and carries_number:
                found.page_context[(source, page)] = _without_number(line, label)
    # The header every other page carries is the book's title, not the page's chapter: pages with it (or none)
    # take the chapter of the page before.
    common = Counter(found.page_context.values()).most_common(1)
    title = common[0][0] if common and common[0][1] > len(found.page_context) / 3 else None
    chapter = None
    for key in sorted(edges, key=lambda page: (page[0], page[1])):
        place = (key[0], key[1])
        if found.page_context.get(place) not in (None, title):
            chapter = found.page_context[place]
        elif chapter is not None:
            found.page_context[place] = chapter
        else:
            found.page_context.pop(place, None)
    if len(part_names) >= _MIN_PARTS:
        need = max(_MIN_PART_REPEATS, int(_PART_SHARE * len(part_names)))
        found.shapes |= {s for s, where in parts.items() if len(where) >= need}
    return found


def _without_number(line: str, label: str | None) -> str:
    words = line.split()
    if label and words and words[0] == label:
        words = words[1:]
    elif label and words and words[-1] == label:
        words = words[:-1]
    return " ".join(words)
