"""The full-text index under recall and the chunk store: BM25 over texts keyed by integers."""

from __future__ import annotations

import sqlite3

import pytest

from memread.fulltext import FullTextIndex
from memread.testing.documents import common_words_chunks

QUESTION = "What is a package?"  # "package" is in all six chunks: FTS5 weighs it at 1e-6


def filled() -> FullTextIndex:
    index = FullTextIndex(sqlite3.connect(":memory:"))
    for chunk in common_words_chunks():
        index.add(chunk.index, chunk.text)
    return index


def test_a_question_of_one_word_in_every_text_is_ranked_by_lucenes_idf_not_refused() -> None:
    # With a single word, Lucene's ranking once made SQLite refuse the query ("unable to use function bm25 in
    # the requested context"), so the evidence strategy failed on such a question.
    index = filled()
    assert index.collapses(QUESTION)
    graded = index.top(QUESTION, 6, grade_common=True)
    assert graded == index.lucene_top(QUESTION, 6)
    assert len(graded) == 6 and all(score > 0 for _, score in graded)
    # One word: Lucene's score is FTS5's times a constant, so the order is FTS5's own.
    assert [key for key, _ in graded] == [key for key, _ in index.top(QUESTION, 6)]
    among = index.lucene_top(QUESTION, 2, among=[4, 5, 3])
    assert [key for key, _ in among] == [key for key, _ in index.top(QUESTION, 2, among=[4, 5, 3])]


def test_texts_come_back_by_key_and_a_missing_key_is_a_key_error() -> None:
    index = filled()
    assert index.text(4) == "A package is built." and len(index) == 6
    with pytest.raises(KeyError):
        index.text(9)
