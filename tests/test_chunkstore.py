"""The chunk store the evidence strategy reads from: every chunk back by index with its provenance, BM25 ranking,
and nothing on disk that outlives it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memread.chunk import Chunker
from memread.chunkstore import ChunkStore
from memread.document import Provenance, Segment
from memread.tokens import CharTokenizer


def chunks() -> list:  # type: ignore[type-arg]
    segments = [Segment(f"Page {n}: the ferry left at nine.\n" + ("Gulls on the pier. " * 5) + "\n\n",
                        Provenance("log.pdf", page=n, page_label=f"p{n}")) for n in range(1, 7)]
    segments.append(Segment("The lighthouse lamp was repaired by Ada Quist.\n", Provenance("log.pdf", page=7)))
    return list(Chunker(CharTokenizer(), 160).chunks(segments))


def test_chunks_come_back_whole_with_their_pages_and_rank_by_bm25(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    made = chunks()
    store = ChunkStore()
    store.add_all(iter(made))
    assert len(store) == len(made) and store.tokens == sum(c.tokens for c in made)
    back = store.get(made[-1].index)
    assert back == made[-1] and back.marks == made[-1].marks
    start = back.text.index("Ada Quist")
    assert [s.describe() for s in back.locate(start, start + 9)] == ["log.pdf p. 7"]
    best = store.top("who repaired the lighthouse lamp", 3)
    assert best[0][0] == made[-1].index and best[0][1] > 0 and len(best) == 1
    assert store.top("the of", 5) == []  # stop words only: nothing to match
    assert store.first_not_in({0, 1}) == 2 and store.first_not_in({c.index for c in made}) is None
    assert os.listdir(tmp_path) == []  # SQLite's private temporary database is unlinked at open
    store.close()
    with pytest.raises(KeyError):
        ChunkStore().get(0)
