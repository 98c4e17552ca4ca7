"""``memread bench`` reports: 95 % intervals per cell, paired differences between methods on the same samples,
results folders compared with each other, and a results folder that survives a new setting.

The statistics are checked against published values (Newcombe 1998, Statistics in Medicine 17:857, Table I,
for Wilson intervals) and exact binomial sums done by hand; the tables against synthetic records whose
right and wrong answers are chosen so that every figure is known in advance.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from memread.bench.cells import cells
from memread.bench.compare import combine, pairs
from memread.bench.report import build, headline, markdown, summary, write_report
from memread.bench.results import ResultsFolder, compare_configs
from memread.bench.stats import (
    bootstrap_mean,
    mean_interval,
    newcombe,
    newcombe_paired,
    paired,
    sign_test,
    wilson,
)
from memread.bench.whole_read import prefill_rate
from memread.errors import UsageError
from memread.loop import LoopSettings
from tests.cli_runner import run_memread

# --- intervals ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("successes", "n", "low", "high"), [
    (81, 263, 0.2553, 0.3662),  # Newcombe (1998), Table I, examples (a)-(d): the score method without correction
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_wilson_intervals_match_the_published_values(successes: int, n: int, low: float, high: float) -> None:
    interval = wilson(successes, n)
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)
    assert interval.method == "wilson"


def test_wilson_at_none_and_all_right_has_its_closed_form() -> None:
    z2 = 1.959963984540054 ** 2
    assert wilson(0, 24).low == 0.0 and wilson(0, 24).high == pytest.approx(z2 / (24 + z2))
    assert wilson(24, 24).high == 1.0 and wilson(24, 24).low == pytest.approx(24 / (24 + z2))
    with pytest.raises(ValueError):
        wilson(0, 0)


def test_the_bootstrap_is_seeded_and_agrees_with_the_normal_interval_on_a_large_sample() -> None:
    values = [i / 199 for i in range(200)]  # mean 0.5, population sd 0.2901
    first = bootstrap_mean(values, seed="cell|x")
    assert first == bootstrap_mean(list(reversed(values))[::-1], seed="cell|x")  # same data, same seed
    assert first != bootstrap_mean(values, seed="cell|y")
    half = 1.959963984540054 * math.sqrt(sum((v - 0.5) ** 2 for v in values) / 200) / math.sqrt(200)
    assert first.low == pytest.approx(0.5 - half, abs=0.006) and first.high == pytest.approx(0.5 + half, abs=0.006)
    assert bootstrap_mean([0.5, 0.5, 0.5], seed="s").to_list() == [0.5, 0.5]
    # A cell picks Wilson for 0/1 scores and the bootstrap for the rest; no values, no interval.
    assert mean_interval([1.0, 0.0, 1.0], seed="s") == wilson(2, 3)
    assert mean_interval([1.0, 0.5], seed="s").method == "bootstrap"  # type: ignore[union-attr]
    assert mean_interval([], seed="s") is None


def test_mcnemar_s_exact_test_is_the_two_sided_binomial_tail_of_the_discordant_pairs() -> None:
    assert sign_test(1, 9) == 2 * (1 + 10) / 1024  # 2 · [C(10,0) + C(10,1)] / 2^10
    assert sign_test(9, 1) == sign_test(1, 9)
    assert sign_test(0, 6) == 2 / 64
    assert sign_test(5, 5) == 1.0 and sign_test(0, 0) == 1.0
    assert sign_test(0, 1) == 1.0  # one discordant pair proves nothing


def test_a_paired_difference_counts_discordant_samples_and_resamples_pairs_together() -> None:
    a = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    b = [0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    result = paired(a, b, seed="p")
    assert (result.n, result.a_better, result.b_better) == (8, 4, 1)
    assert result.difference == pytest.approx(3 / 8) and result.mean_a == 0.75 and result.mean_b == 0.375
    assert result.p_value == 2 * (1 + 5) / 32 and result.test == "mcnemar-exact"
    assert result.interval.low <= 3 / 8 <= result.interval.high and result.interval.method == "newcombe"
    # Every pair moves together: with A always exactly B + 0.25 the interval is a single point.
    same = paired([0.5, 0.75, 1.0], [0.25, 0.5, 0.75], seed="q")  # scores between 0 and 1: the bootstrap
    assert same.interval.to_list() == pytest.approx([0.25, 0.25]) and same.test == "sign-exact"
    assert same.interval.method == "bootstrap"
    with pytest.raises(ValueError):
        paired([1.0], [1.0, 0.0], seed="r")


def test_newcombe_s_interval_of_independent_proportions_matches_the_published_example() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873, example (b): 56/70 − 48/80, method 10: 0.0524 to 0.3339.
    interval = newcombe((56, 70), (48, 80))
    assert interval.low == pytest.approx(0.0524, abs=1e-4) and interval.high == pytest.approx(0.3339, abs=1e-4)


def test_newcombe_s_paired_interval_matches_the_published_figures() -> None:
    # Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables" (2017), ch. 8: Cavo et al. (2012),
    # 59 both, 6 and 16 discordant, 80 neither: −0.0621 (95 % CI −0.1186 to −0.0046), as their R package tests it.
    cavo = newcombe_paired(59, 6, 16, 80)
    assert (cavo.low, cavo.high) == (pytest.approx(-0.1186, abs=5e-5), pytest.approx(-0.0046, abs=5e-5))
    # Every differing pair one way (2 to 0 of 7): the interval still reaches below 0, as p = 0.5 says it should;
    # no pair differs: it is not empty.
    assert newcombe_paired(3, 2, 0, 2).low < 0 < newcombe_paired(3, 2, 0, 2).high
    ties = newcombe_paired(3, 0, 0, 7)
    assert ties.low == pytest.approx(-ties.high) and ties.high > 0.15
    # A right on all 3, B on none: the two Wilson intervals' margins square-added (phi is 0: a margin is empty).
    assert newcombe_paired(0, 3, 0, 0).to_list() == [pytest.approx(1 - math.hypot(1 - wilson(3, 3).low,
                                                                             wilson(0, 3).high)), 1.0]


# --- synthetic records ---------------------------------------------------------------------------------------


def record(method: str, index: int, right: bool | None, *, task: str = "hqa", length: int = 50,
           status: str = "ok", boxed: bool = True, doc_tokens: int = 7000, **extra: Any) -> dict[str, Any]:
    """A stored result as `memread bench` writes it; ``right`` None: an unboxed reply holding the gold."""
    answer = "Paris" if right or right is None else "Rome"
    reply = answer if right is None else f"\\boxed{{{answer}}}"
    return {"key": f"{task}/{length}/{index}/{method}", "task": task, "length": length, "unit": "docs",
            "index": index, "method": method, "metric": "qa", "question": f"question {index}?", "golds": ["Paris"],
            "doc_tokens": doc_tokens, "status": status, "prediction": answer, "reply": reply,
            "boxed": boxed and right is not None, "seconds": 10.0, "prompt_tokens": 7500, "completion_tokens": 50,
            "model": "m", "backend": "fake", "config": "c1", **extra}


OVERWRITE = [True, True, False, False, True, False, False, True, False, False]  # 4 of 10
BM25 = [True, False, False, False, True, True, False, False, False, False]  # 3 of 10
EVIDENCE = [True, True, True, True, True, True, True, True, False, True]  # 9 of 10


def three_methods() -> list[dict[str, Any]]:
    return ([record("overwrite", i, r) for i, r in enumerate(OVERWRITE)]
            + [record("bm25", i, r) for i, r in enumerate(BM25)]
            + [record("evidence", i, r) for i, r in enumerate(EVIDENCE)])


def test_the_headline_cell_shows_accuracy_its_interval_and_the_unboxed_replies_beside_n() -> None:
    records = [record("overwrite", i, r) for i, r in enumerate([True, False, True])]
    records += [record("overwrite", 3, None), record("overwrite", 4, False, status="error")]
    cell = cells(records)[0]
    assert (cell.n, cell.unboxed, cell.errors, cell.accuracy) == (5, 1, 1, 0.4)  # the unboxed right answer: 0
    assert cell.whole_reply == 0.6  # ... which the separate whole-reply column reads
    assert cell.intervals["accuracy"] == pytest.approx(wilson(2, 5).to_list())
    assert headline(cell) == "40.0 [12, 77] (5; 1 failed, 1 unboxed)"
    assert cell.interval_methods == {"accuracy": "wilson", "lenient": "wilson", "strict": "wilson", "f1": "wilson",
                                     "recall": "wilson", "whole_reply": "wilson"}


def test_paired_differences_pair_every_method_on_the_samples_both_finished() -> None:
    records = three_methods()
    records[0] = {**records[0], "status": "n/a"}  # overwrite did not run sample 0: 9 pairs with it, not 10
    found = {(p.a, p.b): p.result for p in pairs(records, order=["overwrite", "bm25", "evidence"])}
    assert list(found) == [("overwrite", "bm25"), ("overwrite", "evidence"), ("bm25", "evidence")]
    versus_bm25 = found[("overwrite", "bm25")]  # samples 1..9: overwrite right on 1 and 7, bm25 on 5
    assert (versus_bm25.n, versus_bm25.a_better, versus_bm25.b_better) == (9, 2, 1)
    assert versus_bm25.p_value == 1.0
    evidence = found[("bm25", "evidence")]  # 10 pairs: evidence alone right on 1,2,3,6,7,9, never the reverse
    assert (evidence.n, evidence.a_better, evidence.b_better) == (10, 0, 6)
    assert evidence.difference == pytest.approx(-0.6) and evidence.p_value == 2 / 64
    assert evidence.interval.high < 0  # the paired interval excludes no difference

    # Against a baseline: each method minus the baseline, and nothing else.
    against = pairs(records, order=["overwrite", "bm25", "evidence"], baseline="bm25")
    assert [(p.a, p.b) for p in against] == [("overwrite", "bm25"), ("evidence", "bm25")]
    with pytest.raises(UsageError, match="--baseline magic: no such method") as caught:
        pairs(records, order=["overwrite"], baseline="magic")
    assert caught.value.hint and "overwrite" in caught.value.hint


def test_the_summary_has_a_paired_table_and_json_with_intervals(tmp_path: Path) -> None:
    records = three_methods()
    text = markdown(records, baseline="bm25")
    assert "Paired differences against BM25-RAG" in text
    assert "| 50 | evidence (verbatim evidence) | BM25-RAG | 10 | 90.0 | 30.0 | +60.0 [" in text and "| 6 | 0 | 0.031 |" in text
    assert "| evidence (verbatim evidence) | 90.0 [60, 98] (10) |" in text  # Wilson 9/10: 59.6 to 98.2
    write_report(tmp_path, records, baseline="bm25")
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    evidence = next(c for c in summary["cells"] if c["method"] == "evidence")
    assert evidence["intervals"]["accuracy"] == pytest.approx(wilson(9, 10).to_list())
    assert summary["paired"]["baseline"] == "bm25"
    pair = next(p for p in summary["paired"]["pairs"] if p["a"] == "evidence")
    assert (pair["b"], pair["n"], pair["a_better"], pair["b_better"]) == ("bm25", 10, 6, 0)
    assert pair["p_value"] == 2 / 64 and pair["test"] == "mcnemar-exact" and pair["interval"][0] > 0

    # Two methods right on the same samples: Newcombe's interval still says how little 10 samples tell (a
    # bootstrap would have nothing to resample and print [+0, +0], as if the difference were known exactly).
    same = records + [record("full", i, r) for i, r in enumerate(BM25)]
    assert "| 50 | full context | BM25-RAG | 10 | 30.0 | 30.0 | +0.0 [−20, +20] | 0 | 0 | 1 |" \
        in markdown(same, baseline="bm25")


def test_each_method_s_whole_read_is_at_its_own_prefill_rate_whatever_else_the_folder_holds() -> None:
    # The loop prefilled 10,000 tokens in 100 s (100 tokens/s): a 7,000-token document takes 70 s to read once.
    # BM25's one short prompt ran at 1,000 tokens/s, evidence's steps at 200: neither moves overwrite's figure,
    # and each is measured against its own calls.
    loop = record("overwrite", 0, True, chunks_read=2, prefill_tokens=10_000, prefill_seconds=100.0, seconds=140.0)
    bm25 = record("bm25", 0, True, prefill_tokens=1_000, prefill_seconds=1.0, seconds=7.0)
    evidence = record("evidence", 0, True, chunks_read=4, prefill_tokens=4_000, prefill_seconds=20.0, seconds=70.0)
    assert prefill_rate([loop, bm25]) == 100.0  # the loop's step calls when there are some
    assert prefill_rate([bm25]) == 1000.0  # else every call
    alone = {c.method: c.whole_read_ratio for c in cells([loop])}
    together = {c.method: c.whole_read_ratio for c in cells([loop, bm25, evidence])}
    assert alone["overwrite"] == together["overwrite"] == pytest.approx(2.0)
    assert together["bm25"] == pytest.approx(1.0) and together["evidence"] == pytest.approx(2.0)
    text = markdown([loop, bm25, evidence])
    assert "× whole read" in text
    assert "| method | prompt tokens/s | measured over |" in text  # one folder, no machine: no such columns
    assert "| overwrite (MemAgent) | 100.0 | reading-loop step calls |" in text
    assert "| BM25-RAG | 1,000.0 | all calls |" in text


def test_samples_run_on_a_slower_machine_are_measured_against_that_machine_s_prefill_rate() -> None:
    # One folder, two machines: evidence and BM25 ran before machines were recorded (100 tokens/s), overwrite's
    # samples later on a CPU slower still (50 tokens/s), and one BM25 sample on a third, fast machine (its own
    # call sets its rate there).
    evidence = record("evidence", 0, True, chunks_read=2, prefill_tokens=2_000, prefill_seconds=20.0, seconds=35.0)
    bm25 = record("bm25", 0, True, prefill_tokens=1_000, prefill_seconds=10.0, seconds=7.0)
    slow = "x86_64 AMD EPYC (family 25), 2 cores, AVX2"
    overwrite = [record("overwrite", i, True, chunks_read=2, prefill_tokens=7_000, prefill_seconds=140.0,
                        seconds=154.0, machine=slow) for i in range(2)]
    fast = record("bm25", 1, True, prefill_tokens=1_000, prefill_seconds=1.0, seconds=1.4, machine="m2")
    records = [evidence, bm25, *overwrite, fast]
    ratio = {c.method: c.whole_read_ratio for c in cells(records)}
    # 7,000 tokens: 70 s at 100 tokens/s, 140 s at 50, 7 s at 1,000
    assert ratio["evidence"] == pytest.approx(0.5) and ratio["overwrite"] == pytest.approx(1.1)
    assert ratio["bm25"] == pytest.approx((7.0 + 1.4) / (70 + 7))
    text = markdown(records)
    assert "| method | machine | prompt tokens/s | measured over |" in text
    assert f"| overwrite (MemAgent) | {slow} | 50.0 | reading-loop step calls |" in text
    assert "| evidence (verbatim evidence) | not recorded | 100.0 | reading-loop step calls |" in text
    assert "| BM25-RAG | m2 | 1,000.0 | all calls |" in text
    rates = summary(build(records))["prefill_rates"]
    assert {(r["method"], r["machine"]): r["prefill_rate"] for r in rates} == {
        ("evidence", None): 100.0, ("overwrite", slow): 50.0, ("bm25", None): 100.0, ("bm25", "m2"): 1000.0}


# --- results folders compared -------------------------------------------------------------------------------


def folder_with(path: Path, records: list[dict[str, Any]]) -> Path:
    results = ResultsFolder(path)
    results.folder.mkdir(parents=True)
    for item in records:
        results.append(item)
    return path


def test_a_report_pairs_methods_across_results_folders_and_names_a_method_both_hold(tmp_path: Path) -> None:
    first = folder_with(tmp_path / "hqa-old", [r for r in three_methods() if r["method"] != "evidence"])
    later = folder_with(tmp_path / "hqa-new", [r for r in three_methods() if r["method"] != "bm25"])
    records = combine(first, [later])
    assert {r["method"] for r in records} == {"overwrite", "bm25", "evidence", "overwrite@hqa-new"}
    report = build(records, baseline="evidence")
    assert [(p.a, p.b) for p in report.pairs] == [("overwrite", "evidence"), ("overwrite@hqa-new", "evidence"),
                                                   ("bm25", "evidence")]
    text = markdown(records, report=report)
    assert "- `hqa-new`: model `m`" in text and "| overwrite (MemAgent) @hqa-new |" in text


def test_folders_holding_different_samples_under_one_key_are_refused(tmp_path: Path) -> None:
    first = folder_with(tmp_path / "qwen", [record("overwrite", 0, True)])
    other = folder_with(tmp_path / "smollm", [record("bm25", 0, True, doc_tokens=7400)])  # another tokenizer
    with pytest.raises(UsageError, match=r"qwen and smollm hold different samples under hqa/50/0 \(doc_tokens") \
            as caught:
        combine(first, [other])
    assert caught.value.hint and "same model" in caught.value.hint
    hashed = folder_with(tmp_path / "hashed", [record("bm25", 0, True, context_sha256="a" * 64)])
    rehashed = folder_with(tmp_path / "rehashed", [record("full", 0, True, context_sha256="b" * 64)])
    with pytest.raises(UsageError, match="context_sha256 differs"):
        combine(hashed, [rehashed])
    assert len(combine(first, [hashed])) == 2  # a record without the hash (older) is checked on the rest
    with pytest.raises(UsageError, match="named twice"):
        combine(first, [tmp_path / "qwen"])
    with pytest.raises(UsageError, match="there are no results"):
        combine(first, [tmp_path / "nowhere"])


# --- a results folder and settings added later ----------------------------------------------------------------


def test_a_setting_added_at_its_default_does_not_orphan_a_results_folder(tmp_path: Path) -> None:
    loop = {k: v for k, v in LoopSettings().to_dict().items() if k != "strategy"}
    old_loop = {k: v for k, v in loop.items() if k != "layout"}  # a folder from before "layout" existed
    folder = ResultsFolder(tmp_path)
    config_id, _ = folder.open({"model": "m", "loop": old_loop})
    folder.append({**record("overwrite", 0, True), "config": config_id})

    again_id, done = ResultsFolder(tmp_path).open({"model": "m", "loop": loop})
    assert again_id == config_id and done == {"hqa/50/0/overwrite"}  # continues: nothing is run again
    stored = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert stored["config"]["loop"] == loop and stored["added_at_default"] == {"loop.layout": loop["layout"]}
    assert ResultsFolder(tmp_path).open({"model": "m", "loop": loop})[0] == config_id

    # The new setting at another value, or a changed one, is another run.
    with pytest.raises(UsageError, match=r"differs in: loop\.layout"):
        ResultsFolder(tmp_path).open({"model": "m", "loop": {**loop, "layout": "chunk-first"}})
    with pytest.raises(UsageError, match=r"differs in: loop\.chunk_tokens"):
        ResultsFolder(tmp_path).open({"model": "m", "loop": {**loop, "chunk_tokens": 2000}})


def test_config_comparison_walks_nested_settings_with_the_caller_s_defaults() -> None:
    stored = {"model": "m", "rag": {"k": 9}}
    changed, added = compare_configs(stored, {"model": "m", "rag": {"k": 9, "passages": 512}, "new": {"x": 1}},
                                     {"rag": {"passages": 512}, "new": {"x": 1}})
    assert changed == [] and added == {"rag.passages": 512, "new": {"x": 1}}
    changed, _ = compare_configs(stored, {"model": "m"}, {"rag": {"k": 9}})  # a setting removed is a change
    assert changed == ["rag"]
    changed, _ = compare_configs(stored, {"model": "m", "rag": {"k": 9}, "extra": 2}, {})  # no known default
    assert changed == ["extra"]


# --- the command --------------------------------------------------------------------------------------------


def test_bench_report_compares_folders_against_a_baseline_from_the_command_line(tmp_path: Path) -> None:
    first = folder_with(tmp_path / "old", [r for r in three_methods() if r["method"] != "evidence"])
    later = folder_with(tmp_path / "new", [r for r in three_methods() if r["method"] == "evidence"])
    status, out, err = run_memread("bench", "--report", "--out", str(first), "--compare", str(later),
                                   "--baseline", "bm25")
    assert status == 0, err
    assert "Paired differences against BM25-RAG" in out and "| 50 | evidence (verbatim evidence) | BM25-RAG | 10 |" in out
    assert (first / "summary.md").read_text(encoding="utf-8").strip() == out.strip()
    status, out, err = run_memread("bench", "--report", "--out", str(first), "--compare", str(later), "--json")
    assert status == 0, err
    assert len(json.loads(out)["paired"]["pairs"]) == 3

    other = folder_with(tmp_path / "other", [record("full", 0, True, doc_tokens=1)])
    status, _out, err = run_memread("bench", "--report", "--out", str(first), "--compare", str(other))
    assert status == 2 and "hold different samples" in err and "hint: " in err
    status, _out, err = run_memread("bench", "--report", "--out", str(first), "--baseline", "magic")
    assert status == 2 and "--baseline magic: no such method" in err
