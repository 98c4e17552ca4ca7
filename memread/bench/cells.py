"""The cells of a benchmark report: for each (task, length, method), every score's mean with its 95 % interval,
the samples and how many failed, came back unboxed or did not apply, cost per sample and × whole read
(:mod:`memread.bench.whole_read`), and which code made the records.

Every record is scored again with today's rules (:func:`memread.bench.results.rescore`). Intervals
(:mod:`memread.bench.stats`): Wilson score intervals when every score of a cell is 0 or 1 (sub-EM lenient
and strict always are), else a seeded percentile bootstrap of the mean (F1, recall of several values).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memread.bench import whole_read
from memread.bench.methods import method_label as label_of
from memread.bench.methods import method_names
from memread.bench.results import SCORES, rescore
from memread.bench.stats import mean_interval

NOT_RECORDED = "not recorded"  # records made before memread recorded its code


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
    whole_read_ratio: float | None  # Σ seconds / Σ seconds to prefill each document once (whole_read)
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


def length_label(length: int, unit: str) -> str:
    if unit == "tokens" and length >= 1024 and length % 1024 == 0:
        return f"{length // 1024}K"
    return str(length)


def cells(records: Iterable[dict[str, Any]]) -> list[Cell]:
    """One cell per (task, length, method), scored again with today's rules (:func:`rescore`)."""
    return scored_cells([rescore(r) for r in records])


def scored_cells(records: Sequence[dict[str, Any]]) -> list[Cell]:
    """One cell per (task, length, method) of records already scored with today's rules."""
    measured = whole_read.rates(records)
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
            whole_read_ratio=whole_read.ratio(scored, measured),
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
