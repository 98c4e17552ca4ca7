"""The chunk store the evidence strategy reads from: every chunk back by index with its provenance, BM25 ranking,
and nothing on disk that outlives it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memread.chunk import Chunker
from memread.chunkstore import ChunkStore
from memread.document import Provenance, Segment
from memread.testing.documents import COMMON_WORDS_QUESTION, common_words_chunks
from memread.tokens import CharTokenizer


def chunks() -> list:  # type: ignore[type-arg]
    segments = [Segment(f"Page {n}: the ferry left at nine.\n" + ("Gulls on the pier. " * 5) + "\n\n",
                        Provenance("log.pdf", page=n, page_label=f"p{n}")) for n in range(1, 7)]
    segments.append(Segment("The lighthouse lamp was repaired by Ada Quist.\n", Provenance("log.pdf", page=7)))
    return list(Chunker(CharTokenizer(), 160).chunks(segments))


def test_chunks_come_back_whole_with_their_pages_and_rank_by_bm25() -> None:
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
    store.close()
    with pytest.raises(KeyError):
        ChunkStore().get(0)


def test_a_question_made_only_of_common_words_still_ranks_the_rarer_of_them_first() -> None:
    # Every chunk says "package", half say "field": FTS5's BM25 gives both words an IDF of 1e-6, so the chunk
    # that says "package" three times and "field" never comes first. grade_common ranks by Lucene's IDF there.
    store = ChunkStore()
    store.add_all(common_words_chunks())
    crumbs = store.top(COMMON_WORDS_QUESTION, 6)
    assert crumbs[0][0] == 0 and all(0 < score < 1e-4 for _, score in crumbs)
    assert store.collapses(COMMON_WORDS_QUESTION) and not store.collapses("signed package")
    graded = store.top(COMMON_WORDS_QUESTION, 6, grade_common=True)
    assert [index for index, _ in graded] == [1, 2, 3, 0, 4, 5] and graded[3][1] > 0
    assert graded == store.lucene_top(COMMON_WORDS_QUESTION, 6)
    assert store.top(COMMON_WORDS_QUESTION, 2, among=[0, 4, 3], grade_common=True)[0][0] == 3
    # A query with a word in fewer than half the chunks ("signed": one of six) ranks as FTS5 does.
    assert store.top("signed package", 6, grade_common=True) == store.top("signed package", 6)
    store.close()


# Run in a fresh interpreter: SQLite reads TMPDIR once, when the sqlite3 module starts, so a test cannot point
# it at its own folder from inside this process. The store is filled past its page cache (_CACHE_KIB), which is
# when SQLite writes it to a file at all; the child reports the files it holds open there, as /proc names them.
_CHILD = """
import gc, json, os, sys
from memread.chunkstore import _CACHE_KIB, ChunkStore
from memread.document import Chunk, Span

folder = os.environ["TMPDIR"]
line = " ".join(f"w{n}" for n in range(5000))  # 29 KB of distinct words: text and full-text index both grow
total = 0
chunks = []
while total < 1.5 * _CACHE_KIB * 1024:
    chunks.append(Chunk(len(chunks), f"chunk {len(chunks)} {line}", 5000, (Span("big.log"),)))
    total += len(chunks[-1].text)

def held():
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return [name for name in names if name.startswith(folder + os.sep)]

def filled():
    store = ChunkStore()
    store.add_all(chunks)
    return store

def report(**seen):
    print(json.dumps(seen), flush=True)

store = filled()
report(held=held(), listed=os.listdir(folder))
store.close()
report(held=held(), listed=os.listdir(folder))
store = filled()
report(held=held(), listed=os.listdir(folder))
del store
gc.collect()
report(held=held(), listed=os.listdir(folder))
store = filled()
report(held=held(), listed=os.listdir(folder))
sys.stdin.read()  # in use until the test kills this process
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads open files from /proc (Linux)")
def test_a_large_store_is_a_file_no_one_can_see_and_nothing_of_it_outlives_the_store(tmp_path: Path) -> None:
    folder = str(tmp_path.resolve())
    child = subprocess.Popen([sys.executable, "-c", _CHILD], cwd=Path(__file__).resolve().parents[1],
                             env={**os.environ, "TMPDIR": folder, "SQLITE_TMPDIR": folder},
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        in_use, closed, in_use_again, dropped, killed = (json.loads(child.stdout.readline()) for _ in range(5))
        for seen in (in_use, in_use_again, killed):
            # On disk in this folder (past the cache), open, and already unlinked: nothing to see, nothing to leave.
            assert seen["held"] and all(name.endswith(" (deleted)") for name in seen["held"]), seen
            assert seen["listed"] == []
        assert closed == {"held": [], "listed": []}  # close() lets go of it
        assert dropped == {"held": [], "listed": []}  # so does dropping the store unclosed
        child.kill()  # kill -9 mid-use: the kernel frees an unlinked file with its last descriptor
        child.wait(timeout=30)
        assert os.listdir(folder) == []
    finally:
        child.kill()
        child.wait(timeout=30)
