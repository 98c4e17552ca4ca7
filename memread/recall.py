"""Recall: find the earlier text that best matches a ``<recall>`` query, with SQLite FTS5's BM25.

Used by the callback strategy (ReMemR1) to bring back an earlier memory, and, with
``recall_from="chunks"``, a passage of the source text already read. The index runs in memory or in a temporary
file (so a long document's passages stay out of RAM) and ranks as :mod:`memread.fulltext` does.

Rules (ReMemR1's own code had none of them):

* **No match is possible**: a text must share a searchable word with the query (:func:`query_terms`), and its
  BM25 score must exceed ``min_score`` (0 by default). Otherwise nothing is recalled.
* **Deterministic**: equal scores go to the earliest text (the smallest key).
* The caller decides what is searchable: the callback strategy searches *before* inserting the memory of
  the current step, and indexes a chunk only after every lane has read it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from memread.fulltext import STOP_WORDS, FullTextIndex, query_terms

__all__ = ["STOP_WORDS", "Hit", "TextIndex", "query_terms"]


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
        self._words = FullTextIndex(self._db)

    def __len__(self) -> int:
        return len(self._words)

    def add(self, key: int, text: str) -> None:
        self._words.add(key, text)

    def search(self, query: str, *, min_score: float = 0.0) -> Hit | None:
        """The best-matching text, or None when no text shares a searchable word with the query."""
        best = self.top(query, 1)
        if not best or best[0].score <= min_score:
            return None
        return best[0]

    def top(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best-matching texts, best first (the earliest wins a tie); [] when none shares a word."""
        return [Hit(key, self._words.text(key), score) for key, score in self._words.top(query, k)]

    def close(self) -> None:
        self._db.close()
