"""The docqa tables: accuracy per method overall, on the design and held-out questions, per kind and per
document, with 95 % intervals; seconds per question as × a whole read; paired differences between methods.

Written into a results folder's summary.md (a section of its own) and summary.json (``"docqa"``) by
:func:`memread.bench.report.write_report`, from the records alone (scores.jsonl is enough: each docqa record
carries its question id, document, kind and split).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from memread.bench import whole_read
from memread.bench.docqa import DOCS, KINDS
from memread.bench.stats import PairedDifference, paired, wilson

SPLITS = ("design", "held-out")


def is_docqa(record: dict[str, Any]) -> bool:
    return record.get("task") == "docqa" and isinstance(record.get("docqa"), dict)


def _method(record: dict[str, Any]) -> str:
    from memread.bench.methods import method_label

    method, at, folder = str(record["method"]).partition("@")  # "evidence@other-folder" when --compare renamed it
    return method_label(method) + at + folder


def whole_reads(record: dict[str, Any], rates: dict[whole_read.RateKey, whole_read.Rate]) -> float | None:
    """The record's seconds as a multiple of prefilling its whole document once, at the prefill rate its method
    measured on its own calls in its folder and on its machine (:mod:`memread.bench.whole_read`)."""
    rate = rates.get(whole_read.rate_key(record), (None, ""))[0]
    if not rate or not record.get("doc_tokens"):
        return None
    return float(record["seconds"]) / (float(record["doc_tokens"]) / rate)


def _accuracy(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in records if r.get("status") != "n/a"]
    n = len(scored)
    right = sum(1 for r in scored if (r.get("score") or 0.0) >= 1.0)
    if not n:
        return {"n": 0, "right": 0, "accuracy": None, "interval": None}
    interval = wilson(right, n)
    return {"n": n, "right": right, "accuracy": right / n, "interval": [interval.low, interval.high]}


def _cell(figures: dict[str, Any]) -> str:
    if not figures["n"]:
        return "—"
    low, high = figures["interval"]
    return f"{100 * figures['accuracy']:.0f} [{100 * low:.0f}, {100 * high:.0f}] ({figures['right']}/{figures['n']})"


def figures(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Every docqa figure by method (summary.json's ``docqa``)."""
    records = [r for r in records if is_docqa(r)]
    rates = whole_read.rates(records)
    by_method: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_method[_method(record)].append(record)
    out: dict[str, Any] = {"methods": {}, "pairs": []}
    for method, own in sorted(by_method.items()):
        groups: dict[str, Callable[[dict[str, Any]], bool]] = {
            "all": lambda r: True,
            **{split: (lambda r, s=split: r["docqa"]["split"] == s) for split in SPLITS},  # type: ignore[misc]
        }
        entry: dict[str, Any] = {name: _accuracy([r for r in own if keep(r)]) for name, keep in groups.items()}
        entry["kind"] = {kind: _accuracy([r for r in own if r["docqa"]["kind"] == kind]) for kind in KINDS}
        entry["doc"] = {doc: _accuracy([r for r in own if r["docqa"]["doc"] == doc]) for doc in DOCS}
        times = [r for r in own if r.get("status") == "ok"]
        ratios = [x for r in times if r["docqa"]["kind"] != "aggregate" and (x := whole_reads(r, rates)) is not None]
        every_ratio = [x for r in times if (x := whole_reads(r, rates)) is not None]
        entry["seconds"] = {
            "median": statistics.median([float(r["seconds"]) for r in times]) if times else None,
            "mean": statistics.fmean([float(r["seconds"]) for r in times]) if times else None,
            "whole_reads_median": statistics.median(every_ratio) if every_ratio else None,
            "whole_reads_median_no_aggregates": statistics.median(ratios) if ratios else None,
            "prompt_tokens_mean": statistics.fmean([int(r.get("prompt_tokens") or 0) for r in times]) if times else None,
        }
        entry["failed"] = sum(1 for r in own if r.get("status") == "error")
        entry["unboxed"] = sum(1 for r in own if r.get("status") == "ok" and not r.get("boxed"))
        out["methods"][method] = entry
    names = sorted(by_method)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for split in ("all", "held-out"):
                pair = _pair(by_method[a], by_method[b], split)
                if pair is not None:
                    out["pairs"].append({"a": a, "b": b, "questions": split, **pair})
    out["prefill_rates"] = [{"source": key[0], "method": key[1], "machine": key[2], "prefill_rate": rate}
                            for key, (rate, _) in sorted(rates.items(), key=str)]
    return out


def paired_on_questions(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]],
                        split: str = "all") -> PairedDifference | None:
    """Method ``a``'s docqa records minus ``b``'s, on the questions (of ``split``, or all) both answered."""
    score_a = {r["docqa"]["id"]: float(r.get("score") or 0.0) for r in a if r.get("status") != "n/a"}
    score_b = {r["docqa"]["id"]: float(r.get("score") or 0.0) for r in b if r.get("status") != "n/a"}
    split_of = {r["docqa"]["id"]: r["docqa"]["split"] for r in [*a, *b]}
    shared = sorted(q for q in score_a.keys() & score_b.keys() if split == "all" or split_of[q] == split)
    if not shared:
        return None
    return paired([score_a[q] for q in shared], [score_b[q] for q in shared], seed=f"docqa|{split}")


def _pair(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], split: str) -> dict[str, Any] | None:
    result = paired_on_questions(a, b, split)
    if result is None:
        return None
    return {"n": result.n, "accuracy_a": result.mean_a, "accuracy_b": result.mean_b, "difference": result.difference,
            "interval": result.interval.to_list(), "a_better": result.a_better, "b_better": result.b_better,
            "p": result.p_value}


def section(records: Iterable[dict[str, Any]], *, baseline: str | None = None) -> list[str]:
    """The docqa section of summary.md (no lines when there are no docqa records)."""
    data = figures(records)
    methods = data["methods"]
    if not methods:
        return []
    lines = ["## docqa: real documents", "",
             "Accuracy, % [95 % Wilson interval] (right/n): an answer is right when the tokens of a gold answer "
             "occur in a row in its extracted answer, after SQuAD normalisation; an *absent* question's answer "
             "is right when it says the document does not say. **Design**: the even-numbered questions, the only "
             "ones looked at while designing; **held-out**: the odd-numbered ones.", "",
             "| method | all | design | held-out | " + " | ".join(KINDS) + " |",
             "|---|" + "---|" * (3 + len(KINDS))]
    for method, entry in methods.items():
        cells = [_cell(entry["all"]), *(_cell(entry[s]) for s in SPLITS), *(_cell(entry["kind"][k]) for k in KINDS)]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines += ["", "By document:", "", "| method | " + " | ".join(DOCS) + " |", "|---|" + "---|" * len(DOCS)]
    for method, entry in methods.items():
        lines.append(f"| {method} | " + " | ".join(_cell(entry["doc"][d]) for d in DOCS) + " |")
    lines += ["", "Time per question (wall seconds, ingest and indexing included) and its multiple of a whole read "
              "(the document's tokens ÷ the prefill rate its method measured on its own calls, on its machine):", "",
              "| method | failed | unboxed | median s | mean s | median × whole read | same, aggregates excepted | "
              "prompt tokens (mean) |", "|---|---|---|---|---|---|---|---|"]
    for method, entry in methods.items():
        s = entry["seconds"]
        lines.append(f"| {method} | {entry['failed']} | {entry['unboxed']} | {_num(s['median'], 1)} | "
                     f"{_num(s['mean'], 1)} | {_num(s['whole_reads_median'], 2)} | "
                     f"{_num(s['whole_reads_median_no_aggregates'], 2)} | {_num(s['prompt_tokens_mean'], 0)} |")
    pairs = [p for p in data["pairs"] if baseline is None or baseline in (p["a"], p["b"])]
    if pairs:
        lines += ["", "Paired differences (A − B in points on the questions both answered, 95 % interval: "
                  "Newcombe's for paired 0/1 scores; A > B and B > A: questions one got right and the other "
                  "wrong; p: exact McNemar):", "",
                  "| questions | A | B | n | A % | B % | A − B [95 %] | A > B | B > A | p |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for p in pairs:
            low, high = p["interval"]
            lines.append(f"| {p['questions']} | {p['a']} | {p['b']} | {p['n']} | {100 * p['accuracy_a']:.1f} | "
                         f"{100 * p['accuracy_b']:.1f} | {100 * p['difference']:+.1f} [{100 * low:+.0f}, {100 * high:+.0f}] | "
                         f"{p['a_better']} | {p['b_better']} | {p['p']:.2g} |")
    rates = "; ".join(f"{_method({'method': r['method']})} {r['prefill_rate']:.1f} tok/s"
                      for r in data["prefill_rates"] if r["prefill_rate"])
    lines += ["", f"Prefill rates (each method's own calls): {rates or 'not measured'}."]
    return lines


def _num(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"
