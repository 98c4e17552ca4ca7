"""Recall: find the earlier text that best matches a ``<recall>`` query, with SQLite FTS5's BM25.

Used by the callback strategy (ReMemR1) to bring back an earlier memory, and, with
``recall_from="chunks"``, a passage of the source text already read. SQLite ships with Python, runs in
memory or in a temporary file (so a long document's passages stay out of RAM), and ranks with BM25, so
memread keeps no hand-written scoring.

Rules (ReMemR1's own code had none of them):

* **No match is possible**: the query's words are lower-cased, stop words and one-letter words dropped,
  and the remaining words OR-ed; a text must share at least one of them (after Porter stemming) to be a
  candidate, and its BM25 score must exceed ``min_score`` (0 by default). Otherwise nothing is recalled.
* **Deterministic**: equal scores go to the earliest text (the smallest key).
* The caller decides what is searchable: the callback strategy searches *before* inserting the memory of
  the current step, and indexes a chunk only after every lane has read it.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

# Words that carry no evidence; without this list "the" would match every memory.
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


@dataclass(frozen=True)
class Hit:
    key: int  # what the caller stored the text under (a step index, a passage number)
    text: str
    score: float  # BM25, higher is better


class TextIndex:
    """A full-text index of short texts keyed by integers.

    In memory by default; ``temporary=True`` (for indexes that grow with the document) uses SQLite's private
    temporary database instead: pages past its cache go to a file that SQLite unlinks as soon as it opens it,
    so nothing is left behind even when the process is killed.
    """

    def __init__(self, *, temporary: bool = False) -> None:
        self._db = sqlite3.connect("" if temporary else ":memory:", check_same_thread=False)
        self._db.execute("CREATE VIRTUAL TABLE texts USING fts5(body, tokenize='porter unicode61')")
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, key: int, text: str) -> None:
        self._db.execute("INSERT INTO texts(rowid, body) VALUES (?, ?)", (key, text))
        self._count += 1

    def search(self, query: str, *, min_score: float = 0.0) -> Hit | None:
        """The best-matching text, or None when no text shares a searchable word with the query."""
        best = self.top(query, 1)
        if not best or best[0].score <= min_score:
            return None
        return best[0]

    def top(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best-matching texts, best first (the earliest wins a tie); [] when none shares a word."""
        terms = query_terms(query)
        if not terms or not self._count:
            return []
        match = " OR ".join(f'"{term}"' for term in terms)
        rows = self._db.execute(
            "SELECT rowid, body, bm25(texts) AS rank FROM texts WHERE texts MATCH ? "
            "ORDER BY rank ASC, rowid ASC LIMIT ?", (match, k)).fetchall()
        return [Hit(int(row[0]), str(row[1]), -float(row[2])) for row in rows]

    def close(self) -> None:
        self._db.close()
