"""Ranking: the document's passages indexed as a reader sees them, and the best ones for a question.

Each chunk is indexed by its readable text (boilerplate left out, :mod:`.boilerplate`) and its context (the
chapter its page is in, the section heading it falls under), in SQLite FTS5 (:class:`memread.chunkstore.ChunkStore`:
a private temporary file, so a 2 GB log keeps memory flat). A question ranks the passages by BM25 of its words,
and, once the evidence names things the question does not (the second hop of a two-step question: the solver
an example uses, then that solver's options), of those names too. A question whose every word is common (in half
the passages or more) is ranked with Lucene's IDF, under which the rarer of them still counts.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from memread.chunkstore import ChunkStore
from memread.document import Chunk
from memread.fulltext import FullTextIndex
from memread.recall import query_terms
from memread.strategies.evidence.boilerplate import Boilerplate, detect
from memread.strategies.evidence.units import HEADING, LINE, Unit, heading_key, units

CANDIDATES = 200  # best matches asked of the index per query
_BATCH = 256  # chunks indexed per transaction
_NAME = re.compile(r"\b(?:[A-Z][\w'’-]*[A-Za-z0-9]|\w+(?:[-_.=/:+]\w+)+|[^\W\d]+\d\w*|\d{3,})\b")


class Passages:
    """Every chunk of the document, with what a reader of it needs: its readable units and its context line."""

    def __init__(self, chunks: Iterable[Chunk], *, outline: Callable[[], Sequence[Any]] = list) -> None:
        self.store = ChunkStore()
        self.store.add_all(chunks)  # read once; boilerplate needs every chunk before the reader's index is built
        # The document's own headings (PDF bookmarks, HTML/EPUB/Markdown headings), complete once it is read.
        self.outline = list(outline())
        self.titles = frozenset(heading_key(h.title) for h in self.outline if heading_key(h.title))
        self.boilerplate: Boilerplate = detect(self._chunks())
        self.labels: list[str] = []
        self.contexts: list[str] = []
        self.records: list[str] = []  # the first line of the record a chunk begins inside of (open_record)
        self._units: dict[int, tuple[Unit, ...]] = {}
        self._unheld: dict[tuple[str, ...], list[str]] = {}
        self._holding: dict[str, list[int]] = {}
        # What a reader sees of each chunk, indexed apart (a private temporary database, as the store's).
        self._db = sqlite3.connect("", check_same_thread=False)
        self.index = FullTextIndex(self._db)
        for number, (index, text) in enumerate(self._indexed(), 1):
            self.index.add(index, text)
            if number % _BATCH == 0:
                self._db.commit()
        self._db.commit()

    def _chunks(self) -> Iterator[Chunk]:
        for index in range(len(self.store)):
            yield self.store.get(index)

    def _indexed(self) -> Iterator[tuple[int, str]]:
        """Each chunk's indexed text (its context, the record it begins inside of, its readable units), its label,
        context and record noted."""
        section, record, source = "", "", None
        previous: Sequence[Unit] = ()
        for chunk in self._chunks():
            found = units(chunk.text, boilerplate=self.boilerplate, headings=self.titles)
            same_file = bool(chunk.spans) and chunk.spans[0].source == source
            record = open_record(previous, found, record) if same_file else ""
            source = chunk.spans[-1].source if chunk.spans else None
            context = self._page_context(chunk) or section
            self.contexts.append(context)
            self.records.append(record)
            previous = found
            self.labels.append(_place(chunk) + (f" · {context}" if context else ""))
            headings = [unit.text for unit in found if unit.kind == HEADING]
            if headings:
                section = headings[-1]
            yield chunk.index, "\n".join([context, record, *(unit.text for unit in found if unit.readable)])

    def __len__(self) -> int:
        return len(self.store)

    def get(self, index: int) -> Chunk:
        return self.store.get(index)

    def units(self, index: int, *, keep: bool = True) -> tuple[Unit, ...]:
        """The chunk's units (boilerplate included, flagged), computed once and kept for the chunks read
        (``keep=False``: not kept, for a scan of the whole document)."""
        if index in self._units:
            return self._units[index]
        found = tuple(units(self.get(index).text, boilerplate=self.boilerplate, headings=self.titles))
        if keep:
            self._units[index] = found
        return found

    def readable(self, index: int) -> tuple[Unit, ...]:
        return tuple(unit for unit in self.units(index) if unit.readable)

    def _page_context(self, chunk: Chunk) -> str:
        for span in chunk.spans:
            if span.page_first is not None:
                found = self.boilerplate.page_context.get((span.source, span.page_first))
                if found:
                    return found
            if span.chapters:
                return span.chapters[-1]
        return ""

    def rank(self, question: str, names: Sequence[str], *, skip: set[int], limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best unread passages for ``question`` and the evidence's ``names``, best first (BM25 of
        each, added; the earliest among equals)."""
        asked = dict(self.index.top(question, CANDIDATES + len(skip), grade_common=True))
        named = dict(self.index.top(" ".join(names), CANDIDATES + len(skip))) if names else {}
        # A passage holding one of the question's identifiers as written ("2.7-3", "urgency=high": words BM25 sees
        # apart, or not at all when they are one character long) counts as much as the best match: it names what
        # the question names, where the best match may only share its other words (a test log's
        # "libgomp.fortran/error-1.f90" against "optimization option"). One half the passages hold identifies
        # nothing ("excess-errors", in a test log's every "(test for excess errors)").
        best = max(asked.values(), default=0.0)
        exact: dict[int, float] = {}
        for phrase in identifier_phrases(question):
            held = self.index.matching(f'"{phrase}"')
            if 2 * len(held) >= len(self):
                continue
            for chunk in held[:CANDIDATES + len(skip)]:
                exact[chunk] = exact.get(chunk, 0.0) + best
        scored = [(chunk, asked.get(chunk, 0.0) + named.get(chunk, 0.0) + exact.get(chunk, 0.0))
                  for chunk in {*asked, *named, *exact} if chunk not in skip]
        return sorted(scored, key=lambda item: (-item[1], item[0]))[:limit]

    def holding(self, terms: Sequence[str]) -> list[int]:
        """The chunks that hold every one of ``terms`` (each a word, or words that must stand in a row), in
        document order."""
        if not terms:
            return []
        match = " AND ".join('"' + " ".join(query_terms(term)) + '"' for term in terms if query_terms(term))
        return self.index.matching(match) if match else []

    def unheld(self, names: Sequence[str], find: Callable[[str, str], str | None]) -> list[str]:
        """The ``names`` no passage holds, as ``find(name, text)`` looks for them (punctuation and case aside);
        remembered, since every step of a question asks again."""
        if tuple(names) not in self._unheld:
            left = list(names)
            for index in range(len(self)) if left else ():
                text = self.get(index).text
                left = [name for name in left if find(name, text) is None]
                if not left:
                    break
            self._unheld[tuple(names)] = left
        return self._unheld[tuple(names)]

    def holding_name(self, name: str, find: Callable[[str, str], str | None]) -> list[int]:
        """The chunks whose place, record line or text holds ``name`` as ``find`` looks for it (computed once)."""
        if name not in self._holding:
            self._holding[name] = [index for index in range(len(self)) if find(name, "\n".join(
                (self.labels[index], self.records[index], self.get(index).text))) is not None]
        return self._holding[name]

    def close(self) -> None:
        self.store.close()
        self._db.close()


_ITEM = re.compile(r"[-*+•]\s")  # a list item's mark


def open_record(previous: Sequence[Unit], found: Sequence[Unit], carried: str = "") -> str:
    """The first line of the record a chunk begins inside of, when a chunk boundary cut one: the chunk opens with
    an indented list item, and the last line of the chunk before that is not indented is that record's (a changelog
    entry's header, ``binutils (2.22-4) unstable``, above items the next chunk holds: design question
    binutils-changelog-04 never read the items its version named). ``carried``: the previous chunk's own."""
    first = next((unit for unit in found if unit.readable), None)
    if first is None or first.kind != LINE or first.indent == 0 or not _ITEM.match(first.text):
        return ""  # (lines aligned in columns, "  Raid Devices : 2" in a program's output, are no record's items)
    for unit in reversed(previous):
        if unit.readable and unit.indent == 0:
            return unit.text if unit.kind == LINE and not unit.heading else ""
    return carried  # the whole chunk before is inside the record too


def _place(chunk: Chunk) -> str:
    """Where a chunk is, without the document's name: "p. 48", "lines 1230-1290", "§ Chapter 4"."""
    places = []
    for span in chunk.spans:
        described = span.describe()
        source, _, rest = described.partition(" ")
        if rest and span.source and described.startswith(span.source):
            described = rest if span.page_first is not None or span.line_first is not None or span.chapters else described
        places.append(described)
    return "; ".join(places)


def names_in(texts: Iterable[str], question: str) -> list[str]:
    """The names the texts bring up that the question does not (capitalised words, identifiers such as
    ``lsode_options`` or ``libgomp.fortran/x.f90``, words with digits, long numbers), lower-case, each once:
    what to look for next."""
    asked = set(query_terms(question))
    found: list[str] = []
    for text in texts:
        for name in _NAME.findall(text):
            for word in query_terms(name):
                if word not in asked and word not in found:
                    found.append(word)
    return found[:24]


def identifier_phrases(question: str) -> list[str]:
    """The question's identifiers with punctuation inside ("2.7-3", "urgency=high", "java.opts"), as phrases."""
    found = []
    for token in re.findall(r"[\w.+-]*\w[=./:+-]+\w[\w.+/-]*", question):
        phrase = " ".join(re.findall(r"\w+", token.lower()))
        if len(phrase.split()) > 1 and phrase not in found:
            found.append(phrase)
    return found


# A name with a digit in it ("CVE-2022-38533", "loongarch64", "libgomp.fortran/x-1.f90") or a Debian version with
# its revision ("2.7-3"): words a document spells one way, so one it never holds is one it says nothing about.
_IDENTIFIER = re.compile(r"(?<![\w.+/-])(?:[A-Za-z][\w.+/-]*\d[\w.+/-]*|\d+(?:\.\d+)+-[\w.+~]+)")


def identifiers(question: str) -> list[str]:
    """The question's identifiers (see ``_IDENTIFIER``), as written, each once."""
    found: list[str] = []
    for match in _IDENTIFIER.finditer(question):
        name = match.group().rstrip(".,;:!?/-")
        if name not in found:
            found.append(name)
    return found
