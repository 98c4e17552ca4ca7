"""Issue 35's acceptance, checked from the committed results folders: which cells are measured, whether the
new default candidate (``evidence``) met the issue's goal on real documents, and the default-strategy rule.

The goal, as the issue states it, for ``evidence`` on docqa's 45 questions: ≥ 70 % overall and on the 25
held-out questions; every kind ≥ 50 %; absent questions answered as absent ≥ 80 %; the test log ≥ 70 %; ahead
of BM25-RAG by a margin the paired test calls real (a positive paired difference, exact McNemar p < 0.05); a
single-fact question about the 1,158-page manual in ≤ 3 minutes (the committed ``memread ask`` measurement,
not a sweep); the median question ≤ 0.2× a whole read of its document, aggregate questions excepted.
Percentages are point estimates. A criterion read from cells with fewer samples than the issue asks for is
*provisional*; one with no samples, *not measured*.

The default strategy is chosen by :func:`default_rule`, written down (the README and the commit of this file)
while the docqa ``overwrite`` cell had none of its 27 questions and HotpotQA seed 1127's ``overwrite`` 2 of 48.

    python -m benchmarks.accuracy.goal35 [--bench benchmarks/results/bench] [--model qwen2.5-coder-1.5b-q4_0]
                                         [--ask benchmarks/results/ask-manual-batched.json] [--out FILE.md]

No model is run: it reads ``docqa-MODEL``, ``hqa50-seed1127-MODEL`` and ``hqa400-seed1127-MODEL``
(scores.jsonl or results.jsonl). Docqa scores are the sweep's own (as in summary.md); HotpotQA's are scored
again with today's rules (as in the paired tables).
"""

from __future__ import annotations

import argparse
import copy
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import emit
from benchmarks.accuracy.goal import Verdict
from memread.bench import whole_read
from memread.bench.compare import pairs
from memread.bench.docqa import KINDS
from memread.bench.docqa_report import figures, paired_on_questions, whole_reads
from memread.bench.methods import method_label
from memread.bench.results import ResultsFolder
from memread.bench.stats import PairedDifference

NEW = "evidence"
REAL = 0.05  # McNemar p below which a paired difference counts as real
FLOOR = -0.10  # the default rule: the lower end of the paired 95 % interval must be above this
MAX_TIME = 0.5  # ... and the candidate take at most half of overwrite's time
ASK_LIMIT = 180.0  # seconds for a single-fact question about the manual
# docqa's documents under 80K tokens (as the issue counted them), the ones overwrite reads
OVERWRITE_DOCS = ("devref-epub", "gcc-testlog", "binutils-changelog")
LOG_DOC = "gcc-testlog"

DOCQA, HQA50, HQA400 = "docqa", "hqa50-seed1127", "hqa400-seed1127"
# (folder prefix, task, length, methods, samples the issue asks for)
REQUIRED: tuple[tuple[str, str, int, tuple[str, ...], int], ...] = (
    (DOCQA, "docqa", 1, (NEW, "bm25", "closed-book"), 45),
    (DOCQA, "docqa", 1, ("overwrite",), 27),
    (HQA50, "hqa", 50, (NEW, "overwrite", "bm25"), 48),
    (HQA400, "hqa", 400, (NEW, "bm25"), 32),
)


HQA50_OVERWRITE = 48  # overwrite's samples at 50 documents, all read again before they stand for the first ones


class Results:
    """The acceptance's records, by folder prefix. ``candidate``: the name of a later frozen version of
    ``evidence`` (``v8``) whose records live in folders of their own (``docqa-v8-MODEL``, ...): its ``evidence``
    records, and only those, stand for the candidate's, beside the same baselines (or a baseline's records of
    the same samples in the candidate's folder, read again on the text the candidate reads)."""

    def __init__(self, bench: Path, model: str, ask: Path | None = None, candidate: str | None = None) -> None:
        def read(name: str) -> list[dict[str, Any]]:
            folder = bench / f"{name}-{model}"
            return ResultsFolder(folder).records() if folder.is_dir() else []

        self.candidate = candidate
        self.records: dict[str, list[dict[str, Any]]] = {}
        self.sources: dict[str, str] = {}  # where the candidate's records of each prefix come from
        for prefix in (DOCQA, HQA50, HQA400):
            found = read(prefix)
            if candidate:  # only the candidate's own records stand for it: no earlier version's fills a gap
                theirs = read(f"{prefix}-{candidate}")
                later = [r for r in theirs if r["method"] == NEW]
                # A baseline read again on the text the candidate reads (a loader it changed gives every method
                # other passages) replaces the base folder's record of the same sample.
                again = [r for r in theirs if r["method"] != NEW]
                keys = {r["key"] for r in again}
                found = [r for r in found if r["method"] != NEW and r["key"] not in keys] + again + later
                self.sources[prefix] = f"{prefix}-{candidate}-{model}" + ("" if later else " (none yet)")
            else:
                self.sources[prefix] = f"{prefix}-{model}"
            self.records[prefix] = found
        # overwrite's 48 at 50 documents read again on the machine that read the candidate's (goal-35.md, "read
        # again on one CPU"): once all are in they stand for overwrite in that cell, the first ones shown beside
        again = [r for r in read(f"{HQA50}-overwrite") if r["method"] == "overwrite"]
        self.first_overwrite: list[dict[str, Any]] = []
        if len({r["key"] for r in again}) >= HQA50_OVERWRITE:
            self.first_overwrite = [r for r in self.records[HQA50] if r["method"] == "overwrite"]
            self.records[HQA50] = [r for r in self.records[HQA50] if r["method"] != "overwrite"] + again
            self.sources["overwrite"] = f"{HQA50}-overwrite-{model}"
        self.ask: dict[str, Any] | None = None
        if ask is not None and ask.is_file():
            self.ask = json.loads(ask.read_text(encoding="utf-8"))
        self.ask_path = ask

    def of(self, prefix: str, method: str, docs: Sequence[str] | None = None) -> list[dict[str, Any]]:
        return [r for r in self.records[prefix] if r["method"] == method
                and (docs is None or r.get("docqa", {}).get("doc") in docs)]

    def n(self, prefix: str, method: str) -> int:
        return len({r["key"] for r in self.of(prefix, method)})


def _samples(n: int) -> str:
    return f"{n} sample{'' if n == 1 else 's'}"


def _pts(value: float) -> str:
    return f"{value * 100:+.1f}"


def _docqa_figures(results: Results, method: str) -> dict[str, Any] | None:
    own = results.of(DOCQA, method)
    if not own:
        return None
    found: dict[str, Any] = next(iter(figures(own)["methods"].values()))
    return found


def _share(entry: dict[str, Any]) -> str:
    return f"{entry['accuracy'] * 100:.0f} % ({entry['right']}/{entry['n']})"


def _at_least(results: Results, criterion: str, pick: Callable[[dict[str, Any]], list[dict[str, Any]]],
              floor: float) -> Verdict:
    found = _docqa_figures(results, NEW)
    entries = [e for e in pick(found) if e["n"]] if found else []
    if not entries:
        return Verdict(criterion, "not measured", True, f"no `{NEW}` records on docqa")
    ok = all(e["accuracy"] >= floor - 1e-9 for e in entries)
    figures_ = "; ".join(f"{e['name']} {_share(e)}" if "name" in e else _share(e) for e in entries)
    return Verdict(criterion, "met" if ok else "not met", results.n(DOCQA, NEW) < 45, figures_)


def accuracy_criteria(results: Results) -> list[Verdict]:
    def named(entries: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**entry, "name": name} for name, entry in entries.items()]

    return [
        _at_least(results, "docqa, all 45 questions, ≥ 70 %", lambda f: [f["all"]], 0.70),
        _at_least(results, "docqa, the 25 held-out questions, ≥ 70 %", lambda f: [f["held-out"]], 0.70),
        _at_least(results, "every kind ≥ 50 %", lambda f: named({k: f["kind"][k] for k in KINDS}), 0.50),
        _at_least(results, "absent questions answered as absent ≥ 80 %", lambda f: [f["kind"]["absent"]], 0.80),
        _at_least(results, "the test log ≥ 70 %", lambda f: [f["doc"][LOG_DOC]], 0.70),
    ]


def _docqa_pair(results: Results, a: str, b: str, docs: Sequence[str] | None = None) -> PairedDifference | None:
    return paired_on_questions(results.of(DOCQA, a, docs), results.of(DOCQA, b, docs))


def _hqa_pair(results: Results, prefix: str, length: int, a: str, b: str) -> PairedDifference | None:
    found = [r for r in results.records[prefix] if r["task"] == "hqa" and int(r["length"]) == length
             and r["method"] in (a, b)]
    return next((p.result for p in pairs(found, order=(a, b)) if (p.a, p.b) == (a, b)), None) if found else None


def _figures(r: PairedDifference) -> str:
    split = f"{_samples(r.a_better)} to {r.b_better}" if r.a_better or r.b_better else "no pair differs"
    return (f"{_pts(r.difference)} points [{_pts(r.interval.low)}, {_pts(r.interval.high)}] on {_samples(r.n)}; "
            f"{split}, McNemar p = {r.p_value:.2g}")


def ahead_of_bm25(results: Results) -> Verdict:
    criterion = f"ahead of BM25-RAG on docqa (paired, p < {REAL})"
    r = _docqa_pair(results, NEW, "bm25")
    if r is None:
        return Verdict(criterion, "not measured", True, "no question answered by both")
    ok = r.difference > 0 and r.p_value < REAL
    return Verdict(criterion, "met" if ok else "not met", r.n < 45, _figures(r))


def manual_question(results: Results) -> Verdict:
    criterion = f"a single-fact question about the 1,158-page manual in ≤ {ASK_LIMIT / 60:.0f} minutes"
    if not results.ask or not results.ask.get("asks"):
        return Verdict(criterion, "not measured", True, f"no measurement at {results.ask_path}")
    walls = [float(a["wall_s"]) for a in results.ask["asks"]]
    name = results.ask_path.name if results.ask_path else "the measurement"
    figures_ = f"{', '.join(f'{w:.1f} s' for w in walls)} ({name}, `memread ask`, {results.ask.get('measured', '')})"
    return Verdict(criterion, "met" if max(walls) <= ASK_LIMIT else "not met", False, figures_)


def median_cost(results: Results) -> Verdict:
    criterion = "median question ≤ 0.2× a whole read of its document (aggregates excepted)"
    found = _docqa_figures(results, NEW)
    median = found["seconds"]["whole_reads_median_no_aggregates"] if found else None
    if found is None or median is None:
        return Verdict(criterion, "not measured", True, "no timed `evidence` records on docqa")
    return Verdict(criterion, "met" if median <= 0.2 else "not met", results.n(DOCQA, NEW) < 45,
                   f"{median:.2f}× (median {found['seconds']['median']:.0f} s a question)")


def verdicts(results: Results) -> list[Verdict]:
    return [*accuracy_criteria(results), ahead_of_bm25(results), manual_question(results), median_cost(results)]


def _not_far_behind(results: Results, where: str) -> Verdict:
    criterion = f"`{NEW}` − overwrite, lower 95 % bound > {FLOOR * 100:.0f} points, {where}"
    if where.startswith("docqa"):
        r, need = _docqa_pair(results, NEW, "overwrite", OVERWRITE_DOCS), 27
    else:
        r, need = _hqa_pair(results, HQA50, 50, NEW, "overwrite"), 48
    if r is None:
        return Verdict(criterion, "not measured", True, "no sample answered by both")
    return Verdict(criterion, "met" if r.interval.low > FLOOR else "not met", r.n < need, _figures(r))


def _time_ratio(records: list[dict[str, Any]], criterion: str, need: int) -> Verdict:
    """``evidence``'s time against overwrite's on the samples both finished: seconds when one machine ran both,
    else each record's seconds as × a whole read on its own machine (seconds of different CPUs do not compare)."""
    by_method: dict[str, dict[str, dict[str, Any]]] = {NEW: {}, "overwrite": {}}
    for record in records:
        if record["method"] in by_method and record.get("status") == "ok":
            by_method[record["method"]][record["key"].rsplit("/", 1)[0]] = record
    common = sorted(by_method[NEW].keys() & by_method["overwrite"].keys())
    if not common:
        return Verdict(criterion, "not measured", True, "overwrite has no finished samples")
    chosen = [by_method[m][k] for m in by_method for k in common]

    def seconds_of(keys: list[str]) -> list[float]:  # each method's seconds over the samples ``keys``
        return [sum(float(by_method[m][k]["seconds"]) for k in keys) for m in (NEW, "overwrite")]

    seconds = seconds_of(common)
    tokens = [sum(int(by_method[m][k].get("prompt_tokens") or 0) + int(by_method[m][k].get("completion_tokens") or 0)
                  for k in common) for m in (NEW, "overwrite")]
    per = f"{seconds[0] / len(common):.0f} s against {seconds[1] / len(common):.0f} s a sample"
    if len({r.get("machine") for r in chosen}) > 1:
        rates = whole_read.rates(chosen)
        reads = [[whole_reads(by_method[m][k], rates) for k in common] for m in (NEW, "overwrite")]
        if any(x is None for side in reads for x in side):
            return Verdict(criterion, "not measured", True, f"different machines and no prefill rate ({per})")
        ratio = sum(reads[0]) / sum(reads[1])  # type: ignore[arg-type]
        figures_ = f"{ratio:.2f}× as × whole read on each run's own machine (seconds from different CPUs: {per})"
        # Each method's whole read is its own prefill rate's, so on one CPU this is not the ratio of seconds (the
        # HotpotQA cell's 40 samples both read on one CPU: 0.58× so, 0.30× in seconds): shown beside it, not
        # instead, because it was found after the verdict it would change (goal-35.md)
        one = [k for k in common if by_method[NEW][k].get("machine") == by_method["overwrite"][k].get("machine")]
        if one:
            both = seconds_of(one)
            figures_ += f"; {both[0] / both[1]:.2f}× in seconds on the {_samples(len(one))} both read on one CPU"
    else:
        ratio = seconds[0] / seconds[1]
        figures_ = f"{ratio:.2f}× in seconds ({per})"
    figures_ += f", {tokens[0] / max(1, tokens[1]):.2f}× in tokens processed, on {_samples(len(common))}"
    return Verdict(criterion, "met" if ratio <= MAX_TIME else "not met", len(common) < need, figures_)


def default_rule(results: Results) -> tuple[str, list[Verdict]]:
    """The rule the default strategy for untrained models is chosen by, written down before its cells were
    measured: `evidence` replaces `overwrite` as the default when, paired with overwrite on the same samples,
    the lower end of the 95 % interval of its difference is above −10 points both on docqa's three documents
    under 80K tokens (27 questions) and on RULER-HotpotQA at 50 documents, data seed 1127 (48 samples), and it
    takes at most 0.5× overwrite's time on each of the two. Any condition failing on all the samples asked for
    keeps `overwrite`; until every one holds on them, the choice is open and `overwrite` stays."""
    behind, time = _hqa50_conditions(results)
    found = [
        _not_far_behind(results, "docqa (three documents)"),
        behind,
        _time_ratio(results.of(DOCQA, NEW, OVERWRITE_DOCS) + results.of(DOCQA, "overwrite", OVERWRITE_DOCS),
                    f"`{NEW}` takes ≤ {MAX_TIME}× overwrite's time, docqa (three documents)", 27),
        time,
    ]
    if any(v.status == "not met" and not v.provisional for v in found):
        return "overwrite stays", found
    if all(v.status == "met" and not v.provisional for v in found):
        return NEW, found
    return "not decided yet", found


def _hqa50_conditions(results: Results) -> tuple[Verdict, Verdict]:
    """The rule's two conditions at 50 HotpotQA documents: the paired difference, and the time."""
    return (_not_far_behind(results, "HotpotQA 50 documents, seed 1127"),
            _time_ratio([r for r in results.records[HQA50] if r["task"] == "hqa" and int(r["length"]) == 50],
                        f"`{NEW}` takes ≤ {MAX_TIME}× overwrite's time, HotpotQA 50 documents", HQA50_OVERWRITE))


def _first_overwrite(results: Results) -> list[str]:
    """With overwrite's 50-document samples read again on one CPU, the cell's conditions on the first records."""
    if not results.first_overwrite:
        return []
    first = copy.copy(results)
    first.records = {**results.records, HQA50: [r for r in results.records[HQA50] if r["method"] != "overwrite"]
                     + results.first_overwrite}
    return [f"At 50 documents overwrite's records are `{results.sources['overwrite']}`, its 48 samples read again "
            "by the same code on the machine that read the candidate's (goal-35.md). With its first records "
            "instead, shown and not read by the rule:", "", "| condition | status | figures |", "|---|---|---|",
            *(v.row() for v in _hqa50_conditions(first)), ""]


def _progress(results: Results) -> list[str]:
    lines = ["| folder | method | samples | the issue asks | |", "|---|---|---|---|---|"]
    for prefix, _, _, methods, need in REQUIRED:
        for method in methods:
            have = results.n(prefix, method)
            state = "done" if have >= need else ("not run" if have == 0 else f"{need - have} to go")
            lines.append(f"| {prefix} | {method_label(method)} | {have} | ≥ {need} | {state} |")
    return lines


def _hqa_table(results: Results) -> list[str]:
    lines = ["| documents | A − B | n | difference (points) [95 %] | A : B | McNemar p |", "|---|---|---|---|---|---|"]
    for prefix, length in ((HQA50, 50), (HQA400, 400)):
        for other in ("overwrite", "bm25", "closed-book"):
            r = _hqa_pair(results, prefix, length, NEW, other)
            if r is not None:
                lines.append(f"| {length} | `{NEW}` − {method_label(other)} | {r.n} | {_pts(r.difference)} "
                             f"[{_pts(r.interval.low)}, {_pts(r.interval.high)}] | {r.a_better} : {r.b_better} | "
                             f"{r.p_value:.2g} |")
    return lines


def _first_paragraph(doc: str | None) -> str:
    return " ".join((doc or "").split())


def report(results: Results, model: str) -> str:
    found = verdicts(results)
    choice, conditions = default_rule(results)
    if any(v.status == "not measured" or v.provisional for v in found):
        overall = "not fully measured yet"
    else:
        overall = "met" if all(v.status == "met" for v in found) else "not met"
    needed = [(prefix, method, need) for prefix, _, _, methods, need in REQUIRED for method in methods]
    done = sum(1 for prefix, method, need in needed if results.n(prefix, method) >= need)
    lines = [f"# Issue 35's goal, {model}: {overall}", "",
             "`python -m benchmarks.accuracy.goal35 " + (f"--candidate {results.candidate} " if results.candidate else "")
             + "--out benchmarks/results/goal-35-check.md`, from the committed "
             "scores (no model run); the cells, their commands and what was looked at while designing: "
             f"[goal-35.md](goal-35.md). {done} of the {len(needed)} cells the issue asks for have all their "
             "samples. `evidence`'s records come from " + ", ".join(
                 f"`{v}`" for k, v in results.sources.items() if k != "overwrite") + ".", "",
             "| criterion | status | figures |", "|---|---|---|", *(v.row() for v in found), "",
             "## Cells the issue asks for", "", *_progress(results), "",
             f"## The default strategy: {choice}", "", _first_paragraph(default_rule.__doc__), "",
             "| condition | status | figures |", "|---|---|---|", *(v.row() for v in conditions), "",
             *_first_overwrite(results),
             "## RULER-HotpotQA, seed 1127, paired", "", *_hqa_table(results), ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, default=Path("benchmarks/results/bench"))
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--ask", type=Path, default=Path("benchmarks/results/ask-manual-batched.json"))
    parser.add_argument("--candidate", help="a later frozen evidence whose folders are PREFIX-CANDIDATE-MODEL (v9)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    return emit(report(Results(args.bench, args.model, args.ask, args.candidate), args.model), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
