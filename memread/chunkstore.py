"""The document's chunks kept aside, for a strategy that reads them in an order of its own.

A :class:`ChunkStore` takes every chunk once (a file, a directory or standard input alike: the stream is read
to its end) and can then hand any chunk back by index and rank them all against a query with BM25 (SQLite
FTS5, as :mod:`memread.recall`). It lives in SQLite's private temporary database: pages past a small cache go
to a file that SQLite unlinks as soon as it opens it, so a 2 GB log keeps the process's memory flat and nothing
is left behind when the process is killed.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from memread.document import Chunk, Mark, Provenance, Span
from memread.recall import query_terms

# Pages SQLite keeps in memory for this store (negative: KiB): the rest of a large document stays on disk.
_CACHE_KIB = 8 * 1024
_BATCH = 256  # chunks per transaction


class ChunkStore:
    """Every chunk of one document, by index, with a full-text index over their texts."""

    def __init__(self) -> None:
        self._db = sqlite3.connect("", check_same_thread=False)  # "": the private temporary database
        self._db.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        self._db.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, tokens INTEGER, text TEXT, spans TEXT, "
                         "marks TEXT)")
        self._db.execute("CREATE VIRTUAL TABLE words USING fts5(text, content='chunks', content_rowid='id', "
                         "tokenize='porter unicode61')")
        self._count = 0
        self._tokens = 0

    def __len__(self) -> int:
        return self._count

    @property
    def tokens(self) -> int:
        """The document's tokens, as the chunker counted them."""
        return self._tokens

    def add_all(self, chunks: Iterable[Chunk]) -> None:
        """Take every chunk of ``chunks``, committed every :data:`_BATCH` chunks: fast, and the full-text index's
        pending terms never pile up in memory."""
        for chunk in chunks:
            self._db.execute("INSERT INTO chunks (id, tokens, text, spans, marks) VALUES (?, ?, ?, ?, ?)",
                             (chunk.index, chunk.tokens, chunk.text,
                              json.dumps([span.to_dict() for span in chunk.spans]),
                              json.dumps([_mark_record(mark) for mark in chunk.marks])))
            self._db.execute("INSERT INTO words (rowid, text) VALUES (?, ?)", (chunk.index, chunk.text))
            self._count += 1
            self._tokens += chunk.tokens
            if self._count % _BATCH == 0:
                self._db.commit()
        self._db.commit()

    def get(self, index: int) -> Chunk:
        row = self._db.execute("SELECT tokens, text, spans, marks FROM chunks WHERE id = ?", (index,)).fetchone()
        if row is None:
            raise KeyError(index)
        spans = tuple(Span.from_dict(span) for span in json.loads(row[2]))
        marks = tuple(_mark_from(record) for record in json.loads(row[3]))
        return Chunk(index, row[1], int(row[0]), spans, marks)

    def top(self, query: str, limit: int, *, among: Iterable[int] | None = None,
            grade_common: bool = False) -> list[tuple[int, float]]:
        """The ``limit`` chunks (of those ``among``, when given) that best match ``query`` by BM25, best first (the
        earliest among equals); [] when no chunk shares a searchable word with it.

        FTS5's BM25 gives a word in half the chunks or more an IDF of 1e-6: when every word of the query is such a
        word (a manual whose every chunk says "package"), its scores are crumbs that weigh the words alike.
        ``grade_common`` then ranks by BM25 with Lucene's IDF, log(1 + (N - n + 0.5) / (n + 0.5)), never zero, so
        the rarer of those words still counts for more; a query with any word in fewer chunks is ranked as
        without it (there FTS5's IDF keeps the common words out of the way, which finds HotpotQA's evidence
        sooner than Lucene's: benchmarks/results/idf.md)."""
        terms = query_terms(query)
        if not terms or not self._count:
            return []
        if grade_common:
            ratios = self._idf_ratios(terms)
            if _collapsed(ratios):
                return self._lucene_top(ratios, limit, among)
        within, chosen = _within(among)
        match = " OR ".join(f'"{term}"' for term in terms)
        rows = self._db.execute(f"SELECT rowid, bm25(words) AS rank FROM words WHERE words MATCH ?{within} "
                                "ORDER BY rank ASC, rowid ASC LIMIT ?", (match, *chosen, limit))
        return [(int(row[0]), -float(row[1])) for row in rows]

    def lucene_top(self, query: str, limit: int, *, among: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """As :meth:`top`, by BM25 with Lucene's IDF for every word of ``query`` (benchmarks/idf.py compares the
        two; ``top(grade_common=True)`` uses it only when FTS5's IDF weighs every word at nothing)."""
        terms = query_terms(query)
        return self._lucene_top(self._idf_ratios(terms), limit, among) if terms and self._count else []

    def collapses(self, query: str) -> bool:
        """Whether every word of ``query`` that some chunk holds is in half the chunks or more, so that FTS5's
        BM25 weighs them all at 1e-6 (``top(grade_common=True)`` then ranks by :meth:`lucene_top`)."""
        return _collapsed(self._idf_ratios(query_terms(query)))

    def _idf_ratios(self, terms: list[str]) -> dict[str, float]:
        """(N - n + 0.5) / (n + 0.5) for each of ``terms`` that some chunk holds (n of the N chunks)."""
        ratios = {}
        for term in terms:
            held = self._db.execute("SELECT count(*) FROM words WHERE words MATCH ?", (f'"{term}"',)).fetchone()[0]
            if held:
                ratios[term] = (self._count - held + 0.5) / (held + 0.5)
        return ratios

    def _lucene_top(self, ratios: dict[str, float], limit: int,
                    among: Iterable[int] | None) -> list[tuple[int, float]]:
        """The best ``limit`` chunks by the sum, over the words of ``ratios``, of each word's FTS5 score with FTS5's
        IDF (log(ratio), or 1e-6) taken out and Lucene's, log(1 + ratio), put in."""
        if not ratios:
            return []
        within, chosen = _within(among)
        parts: list[str] = []
        values: list[Any] = []
        for term, ratio in ratios.items():
            parts.append(f"SELECT rowid, ? * -bm25(words) AS score FROM words WHERE words MATCH ?{within}")
            values += [math.log(1 + ratio) / (math.log(ratio) if ratio > 1 else 1e-6), f'"{term}"', *chosen]
        rows = self._db.execute(f"SELECT rowid, sum(score) AS total FROM ({' UNION ALL '.join(parts)}) "
                                "GROUP BY rowid ORDER BY total DESC, rowid ASC LIMIT ?", (*values, limit))
        return [(int(row[0]), float(row[1])) for row in rows]

    def first_not_in(self, skip: set[int]) -> int | None:
        """The first chunk, in document order, whose index is not in ``skip``."""
        for (index,) in self._db.execute("SELECT id FROM chunks ORDER BY id"):
            if index not in skip:
                return int(index)
        return None

    def close(self) -> None:
        self._db.close()


def _collapsed(ratios: dict[str, float]) -> bool:
    """Whether FTS5 weighs every word of ``ratios`` at 1e-6: its IDF is log(ratio), 1e-6 when that is not above 0."""
    return bool(ratios) and max(ratios.values()) <= 1


def _within(among: Iterable[int] | None) -> tuple[str, tuple[str, ...]]:
    """The SQL that keeps a full-text query to the chunks ``among`` (none: every chunk), and its value."""
    if among is None:
        return "", ()
    return " AND rowid IN (SELECT value FROM json_each(?))", (json.dumps(sorted(set(among))),)


def _mark_record(mark: Mark) -> dict[str, Any]:
    return {"offset": mark.offset, "line": mark.line, "provenance": asdict(mark.provenance)}


def _mark_from(record: dict[str, Any]) -> Mark:
    return Mark(int(record["offset"]), Provenance(**record["provenance"]), record.get("line"))
