"""Methods compared on the same samples: records from several results folders, and paired differences.

Sweeps of different methods can live in different ``--out`` folders (a new strategy run later, with newer
code). :func:`combine` reads them into one list of records, each marked with the folder it came from; a method
that an earlier folder already has is renamed ``method@folder`` so that both stay in the tables. Records are
paired by sample (``task/length/index``) only when they answered the same sample: the same question, golds and
document (its token count, and its sha256 where both records hold it); otherwise :func:`check_same_samples`
refuses, since a difference between methods would then be a difference between samples.

:func:`pairs` gives, for each pair of methods (or each method against a baseline) at each task and length,
the paired difference of their primary scores over the samples both finished (failed runs count 0 as they do
in the accuracy table; N/A samples are left out): :mod:`memread.bench.stats`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from memread.bench.results import ResultsFolder, rescore
from memread.bench.stats import PairedDifference, paired
from memread.errors import UsageError

SAMPLE_FIELDS = ("question", "golds", "doc_tokens", "context_sha256", "sample_sha256")


def combine(folder: Path, others: Sequence[Path] = ()) -> list[dict[str, Any]]:
    """The records of ``folder`` followed by those of ``others``, each with ``source`` (its folder); methods
    already seen in an earlier folder are renamed ``method@folder-name``. UsageError when a folder holds no
    results or two folders hold different samples under the same key."""
    records: list[dict[str, Any]] = []
    seen_methods: set[str] = set()
    labels: set[str] = set()
    resolved: set[Path] = set()
    for path in (folder, *others):
        if path.resolve() in resolved:
            raise UsageError(f"{path} is named twice", hint="give each results folder once (--out, --compare)")
        resolved.add(path.resolve())
        found = ResultsFolder(path).records()
        if not found:
            raise UsageError(f"there are no results in {path}", hint="run a sweep first, or pass its --out folder")
        label = path.resolve().name if path.resolve().name not in labels else str(path)
        labels.add(label)
        methods = {r["method"] for r in found}
        renamed = {m: f"{m}@{label}" for m in methods if m in seen_methods}
        seen_methods |= {renamed.get(m, m) for m in methods}
        for record in found:
            method = renamed.get(record["method"], record["method"])
            records.append({**record, "method": method, "source": label})
    check_same_samples(records)
    return records


def sample_key(record: dict[str, Any]) -> tuple[str, int, int]:
    return str(record["task"]), int(record["length"]), int(record["index"])


def check_same_samples(records: Iterable[dict[str, Any]]) -> None:
    """UsageError unless every record of a sample key describes the same sample: document tokens, and each of
    question, golds, the document's sha256 and the sample's digest that both records have."""
    first: dict[tuple[str, int, int], dict[str, Any]] = {}
    for record in records:
        key = sample_key(record)
        other = first.setdefault(key, record)
        if other is record:
            continue
        for name in SAMPLE_FIELDS:
            mine, theirs = record.get(name), other.get(name)
            if name != "doc_tokens" and (mine is None or theirs is None):
                continue  # a field one record lacks (scores.jsonl holds no text; older records no hashes)
            if mine != theirs:
                where = " and ".join(sorted({str(other.get("source", "this folder")),
                                             str(record.get("source", "this folder"))}))
                raise UsageError(
                    f"{where} hold different samples under {key[0]}/{key[1]}/{key[2]} ({name} differs: "
                    f"{_short(theirs)} vs {_short(mine)}), so their methods cannot be compared sample by sample",
                    hint="compare folders made with the same model (tokenizer), data and --data-seed")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class Pair:
    """Method ``a`` minus method ``b`` at one task and length."""

    task: str
    length: int
    unit: str
    metric: str
    a: str
    b: str
    result: PairedDifference

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {"task": self.task, "length": self.length, "unit": self.unit, "metric": self.metric,
                "a": self.a, "b": self.b, "n": r.n, "a_mean": r.mean_a, "b_mean": r.mean_b,
                "difference": r.difference, "interval": r.interval.to_list(), "interval_method": "newcombe" if r.interval.method == "newcombe" else "paired-bootstrap",
                "a_better": r.a_better, "b_better": r.b_better, "p_value": r.p_value, "test": r.test}


def pairs(records: Sequence[dict[str, Any]], *, order: Sequence[str], baseline: str | None = None) -> list[Pair]:
    """Paired differences of the primary score (scored again with today's rules, :func:`rescore`).

    ``order`` lists the methods in table order; every pair (a, b) has a before b. With ``baseline``, each
    other method is paired with it only (a = the method, b = the baseline). UsageError when the baseline is
    not among the records' methods."""
    check_same_samples(records)
    records = [rescore(r) for r in records]
    methods = {r["method"] for r in records}
    if baseline is not None and baseline not in methods:
        raise UsageError(f"--baseline {baseline}: no such method in these results",
                         hint=f"choose one of: {', '.join(m for m in order if m in methods)}")
    scores: dict[tuple[str, int], dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    info: dict[tuple[str, int], tuple[str, str]] = {}
    for record in records:
        if record.get("status") == "n/a" or record.get("score") is None:
            continue
        cell = (str(record["task"]), int(record["length"]))
        scores[cell][record["method"]][int(record["index"])] = float(record["score"])
        info.setdefault(cell, (str(record.get("unit", "")), str(record.get("metric", "qa"))))
    rank = {m: i for i, m in enumerate(order)}
    out = []
    for cell in sorted(scores):
        present = sorted(scores[cell], key=lambda m: (rank.get(m, len(rank)), m))
        if baseline is None:
            candidates = list(combinations(present, 2))
        else:
            candidates = [(m, baseline) for m in present if m != baseline and baseline in present]
        for a, b in candidates:
            common = sorted(set(scores[cell][a]) & set(scores[cell][b]))
            if not common:
                continue
            result = paired([scores[cell][a][i] for i in common], [scores[cell][b][i] for i in common],
                            seed=f"pair|{cell[0]}|{cell[1]}|{a}|{b}")
            out.append(Pair(task=cell[0], length=cell[1], unit=info[cell][0], metric=info[cell][1], a=a, b=b,
                            result=result))
    return out
