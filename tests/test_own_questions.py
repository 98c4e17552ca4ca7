"""benchmarks/studies/own_questions.py and identifiers_held.py: design checks of `evidence` (no model or document here:
the reads are replaced; the studies themselves read with the default model and docqa's documents)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.studies import own_questions


def test_the_questions_are_the_design_sets_six_each_with_a_check() -> None:
    found = own_questions.own_questions()
    assert len(found) == 6 and all(q["kind"] == "absent" and q["absent_regex"] for q in found)
    question = next(q for q in found if q["id"] == "own-absent-01")
    assert own_questions.check_absent(question, "Octave calls Python through its py functions.")
    assert not own_questions.check_absent(question, "pyenv selects the interpreter.")


def test_rows_are_scored_cached_and_not_asked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def fake_ask(question: dict[str, Any], **options: Any) -> dict[str, Any]:
        from memread.bench.docqa import says_absent

        asked.append(question["id"])
        answer = "The document does not say." if question["id"].endswith(("1", "2")) else "Python 3.9"
        return {"id": question["id"], "doc": question["doc"], "strategy": options["strategy"], "answer": answer,
                "right": says_absent(answer), "seconds": 1.0}

    monkeypatch.setattr(own_questions, "ask", fake_ask)
    cache, out = tmp_path / "rows.jsonl", tmp_path / "table.md"
    assert own_questions.main(["--cache", str(cache), "--out", str(out)]) == 0
    assert len(asked) == 6 and "Said absent: 2 of 6." in out.read_text(encoding="utf-8")
    assert own_questions.main(["--cache", str(cache)]) == 0
    assert len(asked) == 6  # the second run read nothing
    assert own_questions.main(["--cache", str(cache), "--strategy", "overwrite"]) == 0
    assert len(asked) == 12  # another strategy is another row
    assert own_questions.main(["--cache", str(cache), "--chunk-tokens", "200", "-o", "passages=16"]) == 0
    assert len(asked) == 18  # other passages, another row
    assert own_questions.main(["--cache", str(cache), "--chunk-tokens", "200", "-o", "passages=16"]) == 0
    assert len(asked) == 18
    with pytest.raises(SystemExit) as stopped:
        own_questions.main(["--cache", str(cache), "-o", "passages"])
    assert stopped.value.code == 2


def test_the_aggregate_questions_golds_are_computed_from_the_text() -> None:
    found = own_questions.own_questions("aggregate")
    assert len(found) == 31 and {q["kind"] for q in found} == {"aggregate"}
    assert {how for q in found for how in q["check"]} == {"count", "distinct", "first", "last", "within"}
    log = "=== g++ tests ===\nFAIL: a.C\n=== gcc tests ===\nFAIL: b.c\n=== g++ tests ===\n"
    counted = next(q for q in found if q["id"] == "own-aggregate-01")
    assert own_questions.computed(counted, log) == "2"  # distinct: g++ once
    first = next(q for q in found if q["id"] == "own-aggregate-03")
    assert own_questions.computed(first, log) == "a.C" and not own_questions.checked(first, log)
    changelog = ("binutils (2.9-1) unstable; urgency=low\n\n  * x\n\n -- Matthias Klose <d@d.org>  Mon\n\n"
                 "binutils (2.8-1) unstable; urgency=low\n\n  * y\n\n -- Other <o@d.org>  Sun\n\n"
                 "binutils (2.7-3) unstable; urgency=low\n\n  * z\n\n -- Matthias Klose <d@d.org>  Sat\n")
    klose = next(q for q in found if q["id"] == "own-aggregate-07")
    assert own_questions.computed(klose, changelog) == "2.7-3"  # the last entry he signed, not the last entry
    uploads = next(q for q in found if q["id"] == "own-aggregate-04")
    assert own_questions.computed(uploads, changelog.replace("Matthias Klose", "Galen Hazelwood")) == "2"


def test_a_non_absent_question_is_scored_by_its_golds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memread.bench import docqa

    class Answered:
        def __init__(self, request: Any) -> None:
            self.request = request

        def read(self, sinks: Any = ()) -> list[Any]:  # as memread.run.Run.read
            return [type("Result", (), {"answer": "19 testsuites"})()]

        def close(self) -> None:
            pass

    monkeypatch.setattr(docqa, "document_path", lambda doc: tmp_path / "log.txt")
    monkeypatch.setattr("memread.run.Run", Answered)
    (tmp_path / "log.txt").write_text("=== g++ tests ===\n", encoding="utf-8")
    question = own_questions.own_questions("aggregate")[0]
    assert own_questions.ask(question, strategy="evidence", model=None, threads=1)["right"]
    assert not own_questions.ask({**question, "golds": ["20"]}, strategy="evidence", model=None, threads=1)["right"]


def test_the_identifier_check_reports_where_the_rule_would_fire(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.studies import identifiers_held

    monkeypatch.setattr(identifiers_held, "rows", lambda: [("docqa design", "binutils-changelog-02", ["riscv64"], []),
                                                           ("HotpotQA seed 11", "hqa/50/6", ["Sk8er"], ["Sk8er"])])
    out = tmp_path / "held.md"
    assert identifiers_held.main(["--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "| HotpotQA seed 11 | hqa/50/6 | Sk8er | Sk8er |" in text and "the rule fires on 1." in text


def test_the_list_questions_golds_are_the_items_code_finds_and_every_one_must_be_answered() -> None:
    found = own_questions.own_questions("list")
    assert len(found) == 12 and {q["kind"] for q in found} == {"list"} and all(q["golds"] for q in found)
    log = ("=== objc tests ===\nFAIL: a.m\nFAIL: a.m\nFAIL: b.m\n=== gotools tests ===\nFAIL: c.go\n")
    objc = next(q for q in found if q["id"] == "own-list-01")
    assert own_questions.computed(objc, log) == "a.m; b.m"  # only inside its section, each test once
    assert own_questions.computed(objc, log.replace("objc", "objc++")) is None
    changelog = ("binutils (2.9-1) unstable; urgency=low\n\n  * x\n\n -- Galen Hazelwood <g@m.net>  Mon\n\n"
                 "binutils (2.8-1) unstable; urgency=low\n\n  * y\n\n -- Other <o@d.org>  Sun\n\n"
                 "binutils (2.7-3) unstable; urgency=low\n\n  * z\n\n -- Galen Hazelwood <g@m.net>  Sat\n")
    galen = next(q for q in found if q["id"] == "own-list-08")
    assert own_questions.computed(galen, changelog) == "2.9-1; 2.7-3"  # not 2.8-1, signed by another
    question = {"kind": "list", "golds": ["a.m", "b.m"]}
    assert own_questions.right(question, "Two tests: a.m and b.m.")
    assert not own_questions.right(question, "a.m")  # one item missing: wrong
    assert own_questions.right({"kind": "aggregate", "golds": ["2", "two"]}, "two")
    many = {"kind": "list", "golds": [f"1.{n}-1" for n in range(40)]}  # longer than an answer writes out
    written_out = "; ".join(f"tool (1.{n}-1)" for n in range(30))
    assert own_questions.right(many, f"40 lines: {written_out}; … and 10 more")
    assert not own_questions.right(many, f"41 lines: {written_out}; … and 11 more")  # the count must be right
    assert not own_questions.right(many, "40 lines: tool (1.0-1); … and 39 more")
    twice = {**many, "entries": 41}  # one version uploaded twice: 41 uploads, 40 versions
    assert own_questions.right(twice, f"41 lines, 40 different: {written_out}; … and 11 more")
    assert not own_questions.right(twice, f"42 lines: {written_out}; … and 12 more")


def test_the_lookups_each_find_their_gold_with_their_check() -> None:
    found = own_questions.own_questions("lookup")
    assert len(found) == 48 and {q["kind"] for q in found} == {"single", "paraphrase", "two-hop"}
    assert all(list(q["check"]) == ["first"] for q in found)
    question = next(q for q in found if q["id"] == "own-lookup-05")
    assert own_questions.checked(question, "The --force-confask option requires dpkg to display the questions")
    assert not own_questions.checked(question, "The --force-confdef option requires dpkg to pick the default")
