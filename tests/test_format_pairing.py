"""benchmarks/studies/format_pairing.py: two model formats paired on the same samples."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.studies import format_pairing
from tests.test_bench_stats import record


def _folder(path: Path, model: str, rows: list[dict[str, Any]]) -> Path:
    path.mkdir()
    with open(path / "results.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps({**row, "model": model}) + "\n")
    return path


def test_the_formats_are_paired_by_sample_on_the_boxed_answer_and_the_whole_reply(tmp_path: Path) -> None:
    # A (as published) right on 0-3; B (converted) right on 0-2, and on 3 right but without \boxed{}.
    a = _folder(tmp_path / "a", "q4_k_m", [record("bm25", i, right) for i, right in enumerate([True] * 4 + [False] * 4)])
    b = _folder(tmp_path / "b", "q4_0", [record("bm25", i, right)
                                         for i, right in enumerate([True] * 3 + [None] + [False] * 4)])
    text = format_pairing.report(a, b)
    rows = {line.split(" | ")[4]: line for line in text.splitlines() if line.startswith("| hqa | 50 | bm25 | 8 | ")}
    assert "| 50.0 | 37.5 | −12.5 [" in rows["lenient (boxed answer)"] and rows["lenient (boxed answer)"].endswith(
        "| 0 | 1 | 1 |")
    assert "| 50.0 | 50.0 | +0.0 [−20.1, +20.1] | 0 | 0 | 1 |" in rows["lenient of the whole reply"]  # Newcombe
    assert "| hqa | 50 | bm25 | 8 | 7 | 7 | 0 | 1 | 10.0 | 10.0 |" in text  # same answer, same reply, unboxed, s


def test_folders_with_scores_only_are_paired_without_the_text_columns(tmp_path: Path) -> None:
    # scores.jsonl (committed) holds no reply: the intervals and tests stand, same answer and same reply cannot.
    from memread.bench.results import rescore, scores_record

    folders = []
    for name, rights in (("a", [True] * 4 + [False] * 4), ("b", [True] * 3 + [False] * 5)):
        path = tmp_path / name
        path.mkdir()
        with open(path / "scores.jsonl", "w", encoding="utf-8") as handle:
            for i, right in enumerate(rights):
                handle.write(json.dumps(scores_record(rescore({**record("bm25", i, right), "model": name}))) + "\n")
        folders.append(path)
    text = format_pairing.report(*folders)
    assert "| hqa | 50 | bm25 | 8 | lenient (boxed answer) | 50.0 | 37.5 | −12.5 [" in text
    assert "| hqa | 50 | bm25 | 8 | — | — | 0 | 0 | 10.0 | 10.0 |" in text


def test_folders_of_different_samples_are_refused(tmp_path: Path) -> None:
    a = _folder(tmp_path / "a", "x", [record("bm25", 0, True)])
    b = _folder(tmp_path / "b", "y", [record("bm25", 0, True, doc_tokens=9000)])
    with pytest.raises(Exception, match="different samples"):
        format_pairing.report(a, b)


def test_the_script_refuses_bad_folders_with_one_line_and_a_hint(tmp_path: Path) -> None:
    import subprocess

    from memread.errors import ExitStatus

    a = _folder(tmp_path / "a", "x", [record("bm25", 0, True)])
    done = subprocess.run([sys.executable, "-m", "benchmarks.studies.format_pairing", str(a), str(tmp_path / "missing")],
                          capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == ExitStatus.USAGE
    assert done.stderr.startswith(f"error: there are no results in {tmp_path / 'missing'}\n\nhint: ")
    assert "Traceback" not in done.stderr
