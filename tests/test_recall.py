"""Recall ranks with SQLite FTS5's BM25: no match is possible, ties go to the earliest text."""

from __future__ import annotations

import os

from memread.recall import TextIndex, query_terms


def test_query_terms_drop_stop_words_and_duplicates() -> None:
    assert query_terms("Who's the president of the United States? The president!") == ["president", "united",
                                                                                         "states"]
    assert query_terms("the of a is") == []


def test_best_match_wins_and_nothing_is_returned_without_a_shared_word() -> None:
    index = TextIndex()
    assert index.search("lamp") is None  # empty library
    index.add(0, "The pier was closed for 12 days after the storm.")
    index.add(1, "Ada Quist, the harbour engineer, repaired the lighthouse lamp in October.")
    index.add(2, "Tourism rose; the ferry added a crossing.")
    hit = index.search("Who repaired the lighthouse?")
    assert hit is not None and hit.key == 1 and hit.score > 0
    assert index.search("Who is the mayor?") is None  # only stop words and unknown words
    assert index.search("repairs") is not None  # Porter stemming: repairs ~ repaired
    index.close()


def test_ties_go_to_the_earliest_text() -> None:
    index = TextIndex()
    for key in (5, 3, 9):
        index.add(key, "The same memory text about the lamp.")
    hit = index.search("lamp")
    assert hit is not None and hit.key == 3
    index.close()


def test_a_temporary_index_lives_in_a_file_removed_on_close() -> None:
    index = TextIndex(temporary=True)
    path = index._path
    assert path is not None and os.path.exists(path)
    index.add(0, "passage about cranes")
    assert index.search("crane") is not None
    index.close()
    assert not os.path.exists(path)
