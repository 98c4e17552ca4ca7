"""The document's chunks kept aside, for a strategy that reads them in an order of its own.

A :class:`ChunkStore` takes every chunk once (a file, a directory or standard input alike: the stream is read
to its end) and can then hand any chunk back by index and rank them all against a query with BM25
(:class:`memread.fulltext.FullTextIndex`, as :mod:`memread.recall`). It lives in SQLite's private temporary
database: pages past a small cache go to a file that SQLite unlinks as soon as it opens it, so a 2 GB log keeps
the process's memory flat and nothing is left behind when the process is killed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from memread.document import Chunk, Mark, Provenance, Span
from memread.fulltext import FullTextIndex

# Pages SQLite keeps in memory for this store (negative: KiB): the rest of a large document stays on disk.
_CACHE_KIB = 8 * 1024
_BATCH = 256  # chunks per transaction


class ChunkStore:
    """Every chunk of one document, by index, with a full-text index over their texts."""

    def __init__(self) -> None:
        self._db = sqlite3.connect("", check_same_thread=False)  # "": the private temporary database
        self._db.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        # The chunk's text lives in the full-text index; this table holds the rest of it.
        self._db.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, tokens INTEGER, spans TEXT, marks TEXT)")
        self._words = FullTextIndex(self._db)
        self._tokens = 0

    def __len__(self) -> int:
        return len(self._words)

    @property
    def tokens(self) -> int:
        """The document's tokens, as the chunker counted them."""
        return self._tokens

    def add_all(self, chunks: Iterable[Chunk]) -> None:
        """Take every chunk of ``chunks``, committed every :data:`_BATCH` chunks: fast, and the full-text index's
        pending terms never pile up in memory."""
        for chunk in chunks:
            self._db.execute("INSERT INTO chunks (id, tokens, spans, marks) VALUES (?, ?, ?, ?)",
                             (chunk.index, chunk.tokens,
                              json.dumps([span.to_dict() for span in chunk.spans]),
                              json.dumps([_mark_record(mark) for mark in chunk.marks])))
            self._words.add(chunk.index, chunk.text)
            self._tokens += chunk.tokens
            if len(self._words) % _BATCH == 0:
                self._db.commit()
        self._db.commit()

    def get(self, index: int) -> Chunk:
        row = self._db.execute("SELECT tokens, spans, marks FROM chunks WHERE id = ?", (index,)).fetchone()
        if row is None:
            raise KeyError(index)
        spans = tuple(Span.from_dict(span) for span in json.loads(row[1]))
        marks = tuple(_mark_from(record) for record in json.loads(row[2]))
        return Chunk(index, self._words.text(index), int(row[0]), spans, marks)

    def top(self, query: str, limit: int, *, among: Iterable[int] | None = None,
            grade_common: bool = False) -> list[tuple[int, float]]:
        """The ``limit`` chunks (of those ``among``, when given) that best match ``query`` by BM25, best first (the
        earliest among equals); [] when no chunk shares a searchable word with it. ``grade_common``: see
        :meth:`memread.fulltext.FullTextIndex.top`."""
        return self._words.top(query, limit, among=among, grade_common=grade_common)

    def lucene_top(self, query: str, limit: int, *, among: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """As :meth:`top`, by BM25 with Lucene's IDF for every word of ``query`` (benchmarks/idf.py compares the
        two; ``top(grade_common=True)`` uses it only when FTS5's IDF weighs every word at nothing)."""
        return self._words.lucene_top(query, limit, among=among)

    def collapses(self, query: str) -> bool:
        """Whether every word of ``query`` that some chunk holds is in half the chunks or more, so that FTS5's
        BM25 weighs them all at 1e-6 (``top(grade_common=True)`` then ranks by :meth:`lucene_top`)."""
        return self._words.collapses(query)

    def first_not_in(self, skip: set[int]) -> int | None:
        """The first chunk, in document order, whose index is not in ``skip``."""
        for (index,) in self._db.execute("SELECT id FROM chunks ORDER BY id"):
            if index not in skip:
                return int(index)
        return None

    def close(self) -> None:
        self._db.close()


def _mark_record(mark: Mark) -> dict[str, Any]:
    return {"offset": mark.offset, "line": mark.line, "provenance": asdict(mark.provenance)}


def _mark_from(record: dict[str, Any]) -> Mark:
    return Mark(int(record["offset"]), Provenance(**record["provenance"]), record.get("line"))
