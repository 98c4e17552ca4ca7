"""Recall ranks with SQLite FTS5's BM25: no match is possible, ties go to the earliest text."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

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


def test_a_temporary_index_spills_to_a_file_nobody_can_leave_behind_not_even_kill_9(tmp_path: Path) -> None:
    folder = tmp_path / "tmp"
    folder.mkdir()
    script = (
        "import sys, time\n"
        "from memread.recall import TextIndex\n"
        "index = TextIndex(temporary=True)\n"
        "for key in range(3000):\n"
        "    index.add(key, f'passage {key} about cranes and ' + 'harbour lamp keeper ' * 200)\n"
        "assert index.search('cranes') is not None\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, "TMPDIR": str(folder)}
    env.pop("SQLITE_TMPDIR", None)
    child = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        fd_dir = Path(f"/proc/{child.pid}/fd")
        if fd_dir.exists():  # Linux: the index is on disk (not in RAM), in TMPDIR, and already unlinked
            open_files = [os.readlink(fd) for fd in fd_dir.iterdir() if fd.is_symlink()]
            assert any(name.startswith(str(folder)) and name.endswith("(deleted)") for name in open_files)
        assert list(folder.iterdir()) == []
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert list(folder.iterdir()) == []
