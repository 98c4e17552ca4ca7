"""benchmarks/studies/own_absent.py and identifiers_held.py: design checks of `evidence` (no model or document here:
the reads are replaced; the studies themselves read with the default model and docqa's documents)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.studies import own_absent


def test_the_questions_are_the_design_sets_six_each_with_a_check() -> None:
    found = own_absent.own_questions()
    assert len(found) == 6 and all(q["kind"] == "absent" and q["absent_regex"] for q in found)
    question = next(q for q in found if q["id"] == "own-absent-01")
    assert own_absent.check_absent(question, "Octave calls Python through its py functions.")
    assert not own_absent.check_absent(question, "pyenv selects the interpreter.")


def test_rows_are_scored_cached_and_not_asked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def fake_ask(question: dict[str, Any], **options: Any) -> dict[str, Any]:
        from memread.bench.docqa import says_absent

        asked.append(question["id"])
        answer = "The document does not say." if question["id"].endswith(("1", "2")) else "Python 3.9"
        return {"id": question["id"], "doc": question["doc"], "strategy": options["strategy"], "answer": answer,
                "right": says_absent(answer), "seconds": 1.0}

    monkeypatch.setattr(own_absent, "ask", fake_ask)
    cache, out = tmp_path / "rows.jsonl", tmp_path / "table.md"
    assert own_absent.main(["--cache", str(cache), "--out", str(out)]) == 0
    assert len(asked) == 6 and "Said absent: 2 of 6." in out.read_text(encoding="utf-8")
    assert own_absent.main(["--cache", str(cache)]) == 0
    assert len(asked) == 6  # the second run read nothing
    assert own_absent.main(["--cache", str(cache), "--strategy", "overwrite"]) == 0
    assert len(asked) == 12  # another strategy is another row


def test_the_identifier_check_reports_where_the_rule_would_fire(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.studies import identifiers_held

    monkeypatch.setattr(identifiers_held, "rows", lambda: [("docqa design", "binutils-changelog-02", ["riscv64"], []),
                                                           ("HotpotQA seed 11", "hqa/50/6", ["Sk8er"], ["Sk8er"])])
    out = tmp_path / "held.md"
    assert identifiers_held.main(["--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "| HotpotQA seed 11 | hqa/50/6 | Sk8er | Sk8er |" in text and "the rule fires on 1." in text
