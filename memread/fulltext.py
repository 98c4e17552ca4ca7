"""A full-text index of texts keyed by integers, ranked against a query with SQLite FTS5's BM25.

One class serves recall (:class:`memread.recall.TextIndex`) and the chunk store
(:class:`memread.chunkstore.ChunkStore`). SQLite ships with Python, and FTS5 ranks with BM25, so memread keeps
no hand-written scoring.

Rules:

* **No match is possible**: the query's words are lower-cased, stop words and one-letter words dropped, and the
  remaining words OR-ed; a text must share at least one of them (after Porter stemming) to be ranked at all.
* **Deterministic**: equal scores go to the earliest text (the smallest key).
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterable
from typing import Any

# Words that carry no evidence; without this list "the" would match every text.
_STOP_TEXT = """
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have having
he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
nor not now of off on once only or other our ours ourselves out over own same she should so some such than
that the their theirs them themselves then there these they this those through to too under until up very
was we were what when where which while who whom why will with would you your yours yourself yourselves
s t don doesn didn isn wasn weren won wouldn shouldn couldn ll re ve d m o y
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


def query_terms(query: str) -> list[str]:
    """The searchable words of a query, in order, without duplicates."""
    seen: list[str] = []
    for word in re.findall(r"\w+", query.lower()):
        if len(word) > 1 and word not in STOP_WORDS and word not in seen:
            seen.append(word)
    return seen


class FullTextIndex:
    """Texts keyed by integers in an FTS5 table (``words``) of the database ``db``, which its owner opens, commits
    and closes: the owner decides where the texts live (memory or a temporary file) and what else sits beside
    them."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._db.execute("CREATE VIRTUAL TABLE words USING fts5(text, tokenize='porter unicode61')")
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, key: int, text: str) -> None:
        self._db.execute("INSERT INTO words (rowid, text) VALUES (?, ?)", (key, text))
        self._count += 1

    def text(self, key: int) -> str:
        """The text stored under ``key``; KeyError when there is none."""
        row = self._db.execute("SELECT text FROM words WHERE rowid = ?", (key,)).fetchone()
        if row is None:
            raise KeyError(key)
        return str(row[0])

    def matching(self, match: str) -> list[int]:
        """The keys whose text matches the FTS5 query ``match`` (e.g. ``"urgency high" AND "binutils"``), in order."""
        rows = self._db.execute("SELECT rowid FROM words WHERE words MATCH ? ORDER BY rowid", (match,))
        return [int(row[0]) for row in rows]

    def top(self, query: str, limit: int, *, among: Iterable[int] | None = None,
            grade_common: bool = False) -> list[tuple[int, float]]:
        """The ``limit`` keys (of those ``among``, when given) whose texts best match ``query`` by BM25, with their
        scores (higher is better), best first (the earliest among equals); [] when no text shares a searchable
        word with it.

        FTS5's BM25 gives a word in half the texts or more an IDF of 1e-6: when every word of the query is such a
        word (a manual whose every chunk says "package"), its scores are crumbs that weigh the words alike.
        ``grade_common`` then ranks by BM25 with Lucene's IDF, log(1 + (N - n + 0.5) / (n + 0.5)), never zero, so
        the rarer of those words still counts for more; a query with any word in fewer texts is ranked as
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
        """Whether every word of ``query`` that some text holds is in half the texts or more, so that FTS5's BM25
        weighs them all at 1e-6 (``top(grade_common=True)`` then ranks by :meth:`lucene_top`)."""
        return _collapsed(self._idf_ratios(query_terms(query)))

    def _idf_ratios(self, terms: list[str]) -> dict[str, float]:
        """(N - n + 0.5) / (n + 0.5) for each of ``terms`` that some text holds (n of the N texts)."""
        ratios = {}
        for term in terms:
            held = self._db.execute("SELECT count(*) FROM words WHERE words MATCH ?", (f'"{term}"',)).fetchone()[0]
            if held:
                ratios[term] = (self._count - held + 0.5) / (held + 0.5)
        return ratios

    def _lucene_top(self, ratios: dict[str, float], limit: int,
                    among: Iterable[int] | None) -> list[tuple[int, float]]:
        """The best ``limit`` keys by the sum, over the words of ``ratios``, of each word's FTS5 score with FTS5's
        IDF (log(ratio), or 1e-6) taken out and Lucene's, log(1 + ratio), put in."""
        if not ratios:
            return []
        within, chosen = _within(among)
        parts: list[str] = []
        values: list[Any] = []
        for term, ratio in ratios.items():
            parts.append(f"SELECT rowid, ? * -bm25(words) AS score FROM words WHERE words MATCH ?{within}")
            values += [math.log(1 + ratio) / (math.log(ratio) if ratio > 1 else 1e-6), f'"{term}"', *chosen]
        if len(parts) == 1:  # SQLite would fold a lone subquery into the GROUP BY, where bm25() cannot run
            rows = self._db.execute(f"{parts[0]} ORDER BY score DESC, rowid ASC LIMIT ?", (*values, limit))
        else:
            rows = self._db.execute(f"SELECT rowid, sum(score) AS total FROM ({' UNION ALL '.join(parts)}) "
                                    "GROUP BY rowid ORDER BY total DESC, rowid ASC LIMIT ?", (*values, limit))
        return [(int(row[0]), float(row[1])) for row in rows]


def _collapsed(ratios: dict[str, float]) -> bool:
    """Whether FTS5 weighs every word of ``ratios`` at 1e-6: its IDF is log(ratio), 1e-6 when that is not above 0."""
    return bool(ratios) and max(ratios.values()) <= 1


def _within(among: Iterable[int] | None) -> tuple[str, tuple[str, ...]]:
    """The SQL that keeps a full-text query to the keys ``among`` (none: every key), and its value."""
    if among is None:
        return "", ()
    return " AND rowid IN (SELECT value FROM json_each(?))", (json.dumps(sorted(set(among))),)
