"""benchmarks/accuracy/goal35.py: issue 35's goal and default-strategy rule from results folders (synthetic
scores, no model)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.accuracy import goal35
from memread.bench.docqa import DOCS, KINDS

MODEL = "m"

# 45 synthetic questions: nine a document, kinds in turn, even-numbered ones the design set
QUESTIONS = [{"id": f"q{i:02d}", "doc": list(DOCS)[i // 9], "kind": KINDS[i % len(KINDS)],
              "split": "design" if i % 2 == 0 else "held-out"} for i in range(45)]
SMALL = [q for q in QUESTIONS if q["doc"] in goal35.OVERWRITE_DOCS]  # the 27 overwrite reads


def _append(folder: Path, records: list[dict[str, object]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "scores.jsonl").open("a", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")


def _timing(seconds: float, tokens: int, machine: str | None, rate: float | None) -> dict[str, object]:
    # a reading loop's record: prefill at ``rate`` tokens/s over its prompt (what × whole read divides by)
    timing: dict[str, object] = {"status": "ok", "boxed": True, "seconds": seconds, "prompt_tokens": tokens,
                                 "completion_tokens": 0, "chunks_read": 2, "machine": machine}
    if rate:
        timing.update(prefill_tokens=tokens, prefill_seconds=tokens / rate)
    return timing


def docqa(bench: Path, method: str, right: set[str], questions: list[dict[str, str]] | None = None,
          seconds: float = 10.0, tokens: int = 1000, machine: str | None = None, rate: float | None = 100.0) -> None:
    """``method``'s records on docqa: right on the question ids in ``right``."""
    _append(bench / f"docqa-{MODEL}", [
        {"schema": 1, "key": f"docqa/1/{i}/{method}", "task": "docqa", "length": 1, "unit": "questions",
         "index": i, "method": method, "metric": "docqa", "doc_tokens": 50_000, "score": float(q["id"] in right),
         "docqa": q, **_timing(seconds, tokens, machine, rate)}
        for q in questions or QUESTIONS for i in [QUESTIONS.index(q)]])  # a question's index is its place in all 45


def hqa(bench: Path, method: str, scores: list[int], seconds: float = 10.0, tokens: int = 1000,
        machine: str | None = None, rate: float | None = 100.0) -> None:
    _append(bench / f"hqa50-seed1127-{MODEL}", [
        {"schema": 1, "key": f"hqa/50/{i}/{method}", "task": "hqa", "length": 50, "unit": "docs", "index": i,
         "method": method, "metric": "qa", "doc_tokens": 6500, "scores": {"lenient": float(s)}, "score": float(s),
         **_timing(seconds, tokens, machine, rate)}
        for i, s in enumerate(scores)])


def ask_file(tmp_path: Path, *walls: float) -> Path:
    path = tmp_path / "ask.json"
    path.write_text(json.dumps({"measured": "today", "asks": [{"wall_s": w} for w in walls]}), encoding="utf-8")
    return path


def results(tmp_path: Path, ask: Path | None = None) -> goal35.Results:
    return goal35.Results(tmp_path, MODEL, ask)


def ids(questions: list[dict[str, str]], keep: object = lambda q: True) -> set[str]:
    return {q["id"] for q in questions if keep(q)}  # type: ignore[operator]


def test_nothing_run_is_not_measured(tmp_path: Path) -> None:
    found = goal35.verdicts(results(tmp_path))
    assert [v.status for v in found] == ["not measured"] * len(found)
    choice, conditions = goal35.default_rule(results(tmp_path))
    assert choice == "not decided yet" and {v.status for v in conditions} == {"not measured"}
    text = goal35.report(results(tmp_path), MODEL)
    assert text.startswith(f"# Issue 35's goal, {MODEL}: not fully measured yet\n")
    assert text.count("| not run |") == 9 and "0 of the 9 cells" in text


def test_the_goal_met_on_every_criterion(tmp_path: Path) -> None:
    # evidence right on 43 of 45 (two two-hop questions wrong), BM25-RAG on 10 of those: 33 questions to 0. Evidence's 10 s of a 50,000-token document at 100 tokens/s is 0.02× a whole read.
    wrong = ids(QUESTIONS, lambda q: q["kind"] == "two-hop" and int(q["id"][1:]) < 10)
    assert len(wrong) == 2
    docqa(tmp_path, "evidence", ids(QUESTIONS) - wrong)
    docqa(tmp_path, "bm25", set(sorted(ids(QUESTIONS) - wrong)[:10]))
    found = goal35.verdicts(results(tmp_path, ask_file(tmp_path, 82.7, 80.1)))
    assert [(v.status, v.provisional) for v in found] == [("met", False)] * len(found), found
    assert found[0].figures == "96 % (43/45)"
    assert "two-hop 78 % (7/9)" in found[2].figures
    assert "33 samples to 0" in found[5].figures
    assert found[6].figures.startswith("82.7 s, 80.1 s")
    assert found[7].figures.startswith("0.02×")
    text = goal35.report(results(tmp_path, ask_file(tmp_path, 82.7)), MODEL)
    assert text.startswith(f"# Issue 35's goal, {MODEL}: met\n")


@pytest.mark.parametrize(("criterion", "wrong"), [
    (2, lambda q: q["kind"] == "aggregate" and int(q["id"][1:]) < 25),  # aggregate 4 of 9: 44 % < 50 %
    (3, lambda q: q["kind"] == "absent" and int(q["id"][1:]) < 10),  # absent 7 of 9: 78 % < 80 %
    (4, lambda q: q["doc"] == goal35.LOG_DOC and int(q["id"][1:]) < 21),  # the log 6 of 9: 67 % < 70 %
])
def test_each_floor_is_held(tmp_path: Path, criterion: int, wrong: object) -> None:
    docqa(tmp_path, "evidence", ids(QUESTIONS) - ids(QUESTIONS, wrong))
    found = goal35.verdicts(results(tmp_path))
    assert found[criterion].status == "not met" and not found[criterion].provisional
    assert found[0].status == "met"


def test_a_gain_the_paired_test_does_not_call_real_is_not_met(tmp_path: Path) -> None:
    # 5 questions to 1 (p = 0.22), on all 45
    docqa(tmp_path, "evidence", ids(QUESTIONS[:5]))
    docqa(tmp_path, "bm25", ids(QUESTIONS[5:6]))
    verdict = goal35.ahead_of_bm25(results(tmp_path))
    assert (verdict.status, verdict.provisional) == ("not met", False)
    assert "5 samples to 1, McNemar p = 0.22" in verdict.figures


def test_a_slow_manual_question_or_a_partial_sweep(tmp_path: Path) -> None:
    assert goal35.manual_question(results(tmp_path, ask_file(tmp_path, 120.0, 181.0))).status == "not met"
    docqa(tmp_path, "evidence", ids(QUESTIONS), questions=QUESTIONS[:30])
    found = goal35.verdicts(results(tmp_path))
    assert (found[0].status, found[0].provisional) == ("met", True)
    assert "| docqa | evidence (verbatim evidence) | 30 | ≥ 45 | 15 to go |" in goal35.report(results(tmp_path), MODEL)


def _default_cells(bench: Path, *, hqa_overwrite_seconds: float = 100.0, docqa_overwrite: set[str] | None = None,
                   hqa_samples: int = 48) -> None:
    # docqa's three documents: evidence right on 20 of 27, overwrite (by default) on the same 20; HotpotQA:
    # evidence 20 of 48, overwrite 18 of those. Evidence 10 s a question; overwrite 100 s (docqa) and as given.
    right = set(sorted(ids(SMALL))[:20])
    docqa(bench, "evidence", right)
    docqa(bench, "overwrite", right if docqa_overwrite is None else docqa_overwrite, questions=SMALL, seconds=100.0)
    hqa(bench, "evidence", [1] * 20 + [0] * (hqa_samples - 20))
    hqa(bench, "overwrite", [1] * 18 + [0] * (hqa_samples - 18), seconds=hqa_overwrite_seconds)


def test_the_default_rule_chooses_evidence_when_every_condition_holds_on_the_samples_asked_for(
        tmp_path: Path) -> None:
    _default_cells(tmp_path)
    choice, conditions = goal35.default_rule(results(tmp_path))
    assert choice == "evidence", conditions
    assert conditions[0].figures.startswith("+0.0 points [") and "on 27 samples" in conditions[0].figures
    assert conditions[2].figures.startswith("0.10× in seconds (10 s against 100 s a sample)")


def test_the_time_condition_is_held_on_each_cell(tmp_path: Path) -> None:
    _default_cells(tmp_path, hqa_overwrite_seconds=16.0)  # 10 s against 16 s: 0.62× at 50 documents
    choice, conditions = goal35.default_rule(results(tmp_path))
    assert choice == "overwrite stays"
    assert (conditions[3].status, conditions[3].provisional) == ("not met", False)
    assert conditions[2].status == "met"


def test_a_lower_bound_below_minus_ten_keeps_overwrite(tmp_path: Path) -> None:
    # overwrite right on evidence's 20 questions and 2 more: −7.4 points, but the interval reaches below −10
    right = sorted(ids(SMALL))
    _default_cells(tmp_path, docqa_overwrite=set(right[:22]))
    choice, conditions = goal35.default_rule(results(tmp_path))
    assert choice == "overwrite stays" and conditions[0].status == "not met" and not conditions[0].provisional
    assert conditions[0].figures.startswith("-7.4 points [-")


def test_partial_cells_leave_the_choice_open(tmp_path: Path) -> None:
    _default_cells(tmp_path, hqa_samples=30)
    choice, conditions = goal35.default_rule(results(tmp_path))
    assert choice == "not decided yet"
    assert conditions[1].provisional and conditions[3].provisional and not conditions[0].provisional


def test_time_on_different_machines_is_compared_as_each_one_s_whole_read(tmp_path: Path) -> None:
    # evidence 30 s where prefill runs at 100 tokens/s; overwrite 300 s on a CPU ten times slower: 0.10× in
    # seconds, 1.00× as whole reads (0.06 against 0.06 of a 50,000-token document)
    docqa(tmp_path, "evidence", set(), questions=SMALL, seconds=30.0, machine="fast")
    docqa(tmp_path, "overwrite", set(), questions=SMALL, seconds=300.0, machine="slow", rate=10.0)
    _, conditions = goal35.default_rule(results(tmp_path))
    assert conditions[2].status == "not met"
    assert conditions[2].figures.startswith("1.00× as × whole read on each run's own machine")
    assert "on one CPU" not in conditions[2].figures  # no sample was read by both on one CPU


def test_samples_both_methods_read_on_one_cpu_are_also_compared_in_seconds(tmp_path: Path) -> None:
    # both on one CPU, evidence's calls prefilling twice as fast as overwrite's (shorter prompts): 0.30× in
    # seconds, but 0.60× as each method's own whole read; the verdict reads the latter, as written
    docqa(tmp_path, "evidence", set(), questions=SMALL[1:], seconds=30.0, machine="one", rate=200.0)
    docqa(tmp_path, "evidence", set(), questions=SMALL[:1], seconds=30.0, machine="other", rate=200.0)
    docqa(tmp_path, "overwrite", set(), questions=SMALL, seconds=100.0, machine="one", rate=100.0)
    _, conditions = goal35.default_rule(results(tmp_path))
    assert conditions[2].status == "not met"
    assert conditions[2].figures.startswith("0.60× as × whole read on each run's own machine")
    assert f"; 0.30× in seconds on the {len(SMALL) - 1} samples both read on one CPU" in conditions[2].figures


def test_only_a_later_candidates_own_records_stand_for_evidence(tmp_path: Path) -> None:
    docqa(tmp_path, "evidence", set())  # v7: none right
    docqa(tmp_path, "bm25", set())
    hqa(tmp_path, "evidence", [1, 1, 1])  # v7's at 50 documents: v8 has none there yet
    later = tmp_path / "v8"
    docqa(later, "evidence", ids(QUESTIONS))  # v8: all right, in a folder of its own
    (later / f"docqa-{MODEL}").rename(tmp_path / f"docqa-v8-{MODEL}")
    assert goal35.verdicts(results(tmp_path))[0].figures == "0 % (0/45)"
    chosen = goal35.Results(tmp_path, MODEL, None, "v8")
    assert goal35.verdicts(chosen)[0].figures == "100 % (45/45)"
    assert "45 samples to 0" in goal35.ahead_of_bm25(chosen).figures  # against the same BM25-RAG records
    assert chosen.n("hqa50-seed1127", "evidence") == 0 and results(tmp_path).n("hqa50-seed1127", "evidence") == 3
    assert f"`docqa-v8-{MODEL}`" in goal35.report(chosen, MODEL) and f"`hqa50-seed1127-v8-{MODEL} (none yet)`" in \
        goal35.report(chosen, MODEL)


def test_the_report_writes_the_file(tmp_path: Path) -> None:
    hqa(tmp_path, "overwrite", [1, 0, 1])
    out = tmp_path / "goal.md"
    assert goal35.main(["--bench", str(tmp_path), "--model", MODEL, "--ask", str(tmp_path / "none.json"),
                        "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "| hqa50-seed1127 | overwrite (MemAgent) | 3 | ≥ 48 | 45 to go |" in text
    assert "## The default strategy: not decided yet" in text


def test_a_baseline_read_again_in_the_candidates_folder_replaces_the_base_record(tmp_path: Path) -> None:
    docqa(tmp_path, "bm25", set())  # the base folder's BM25-RAG: none right
    later = tmp_path / "v9"
    docqa(later, "evidence", ids(QUESTIONS))
    docqa(later, "bm25", ids(QUESTIONS[:9]), questions=QUESTIONS[:9])  # read again on the candidate's text
    (later / f"docqa-{MODEL}").rename(tmp_path / f"docqa-v9-{MODEL}")
    chosen = goal35.Results(tmp_path, MODEL, None, "v9")
    assert chosen.n("docqa", "bm25") == 45 and chosen.n("docqa", "evidence") == 45
    assert "36 samples to 0" in goal35.ahead_of_bm25(chosen).figures  # 9 now right for BM25-RAG too


def _overwrite_again(tmp_path: Path, scores: list[int], seconds: float, machine: str) -> None:
    """overwrite's 50-document samples read again, in the folder the check looks for."""
    again = tmp_path / "again"
    hqa(again, "overwrite", scores, seconds=seconds, machine=machine, rate=50.0)
    (again / f"hqa50-seed1127-{MODEL}").rename(tmp_path / f"hqa50-seed1127-overwrite-{MODEL}")


def test_overwrite_read_again_on_the_candidates_cpu_stands_for_overwrite_once_all_48_are_in(tmp_path: Path) -> None:
    # evidence on one CPU, overwrite first on another (as × whole read: 1.00×, not met), then read again on
    # evidence's: seconds compare (0.30×), and the first records' figures are shown beside, not read
    hqa(tmp_path, "evidence", [1] * 48, seconds=30.0, machine="one", rate=200.0)
    hqa(tmp_path, "overwrite", [1] * 48, seconds=60.0, machine="other", rate=100.0)
    assert goal35.default_rule(results(tmp_path))[1][3].status == "not met"
    _overwrite_again(tmp_path, [1] * 47, seconds=100.0, machine="one")  # one short: the first records stand
    assert results(tmp_path).first_overwrite == []
    assert goal35.default_rule(results(tmp_path))[1][3].figures.startswith("1.00× as × whole read")
    (tmp_path / f"hqa50-seed1127-overwrite-{MODEL}" / "scores.jsonl").unlink()
    _overwrite_again(tmp_path, [1] * 46 + [0, 0], seconds=100.0, machine="one")
    found = results(tmp_path)
    _, conditions = goal35.default_rule(found)
    assert conditions[3].status == "met" and conditions[3].figures.startswith("0.30× in seconds")
    assert "+4.2 points" in conditions[1].figures  # the paired difference reads the same records
    text = goal35.report(found, MODEL)
    assert f"overwrite's records are `hqa50-seed1127-overwrite-{MODEL}`" in text
    assert "| `evidence` takes ≤ 0.5× overwrite's time, HotpotQA 50 documents | **not met** | 1.00× as" in text
    assert f"`hqa50-seed1127-overwrite-{MODEL}`" not in text.split("\n")[2].split("records come from")[1]


def test_the_held_out_history_is_a_row_a_version_with_the_ids_that_moved(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.accuracy import held_out_history

    def read(folder: str, wrong: set[str]) -> None:
        _append(tmp_path / folder, [{"method": "evidence", "status": "ok", "docqa": q, "score": 0.0 if q["id"] in wrong
                                     else 1.0} for q in QUESTIONS] + [{"method": "rag", "status": "ok",
                                                                       "docqa": QUESTIONS[0], "score": 0.0}])
    read(f"docqa-{MODEL}", {"q00", "q01", "q03"})
    read(f"docqa-v12-{MODEL}", {"q01", "q02"})
    read(f"docqa-v9-{MODEL}", {"q01", "q03"})
    read(f"docqa-v9-other-{MODEL}", set())  # not a version's folder
    (tmp_path / f"hqa50-seed1127-v9-{MODEL}").mkdir()
    assert held_out_history.main(["--bench", str(tmp_path), "--model", MODEL]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("| v7", "| v9", "| v12"))]

    def figures(wrong: set[str]) -> list[str]:
        def right(keep: Callable[[dict[str, str]], bool]) -> str:
            picked = [q for q in QUESTIONS if keep(q)]
            return f"{sum(q['id'] not in wrong for q in picked)}/{len(picked)}"
        return [right(lambda q: True), right(lambda q: q["split"] == "design"),
                right(lambda q: q["split"] == "held-out"), right(lambda q: q["kind"] == "two-hop")]

    assert [line.split(" | ")[1:5] for line in lines] == [figures({"q00", "q01", "q03"}), figures({"q01", "q03"}),
                                                          figures({"q01", "q02"})]
    assert lines[0].endswith("| — | — |")
    assert lines[1].endswith("| +q00 | — |") and lines[2].endswith("| −q02 | +q03 |")
    with pytest.raises(SystemExit) as stopped:
        held_out_history.main(["--bench", str(tmp_path / "none")])
    assert stopped.value.code == 2 and "no such folder" in capsys.readouterr().err
