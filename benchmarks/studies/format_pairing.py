"""Two model formats on the same benchmark samples: does the faster one lose accuracy?

Reads two `memread bench` results folders made with the same methods, tasks and samples but different
`--model` (e.g. Qwen2.5-Coder-1.5B as published, Q4_K_M, and its Q4_0 conversion), pairs their records by
sample and method, and writes a markdown table: for the primary score (lenient, on the boxed answer), the
whole-reply score (lenient on the raw reply, blind to a dropped ``\\boxed{}``) and F1, each format's mean, the
paired difference B − A with its 95 % interval (Newcombe's for 0/1 scores, a paired bootstrap for F1: the intervals
of every bench report, :func:`memread.bench.stats.paired`) and the exact McNemar/sign test; then how often the two
formats gave the same boxed answer (or both none) and the same reply word for word, the unboxed counts, and seconds
per sample.

    python -m benchmarks.studies.format_pairing benchmarks/results/bench/hqa50-qwen2.5-coder-1.5b \\
        benchmarks/results/bench/hqa50-qwen2.5-coder-1.5b-q4_0 --out benchmarks/results/format-pairing.md

Each folder needs its per-sample records: results.jsonl (never committed: third-party text; the commands in
benchmarks/results/bench/README.md rebuild it with the same samples) or scores.jsonl (committed, no text: then the
same-answer and same-reply columns say "—").
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from memread.bench.compare import check_same_samples
from memread.bench.report import _p, _pct, _signed
from memread.bench.results import ResultsFolder, rescore
from memread.bench.stats import paired
from memread.errors import MemreadError, UsageError

SCORES = (("lenient", "lenient (boxed answer)"), ("whole_reply", "lenient of the whole reply"), ("f1", "F1"))


def load(folder: Path) -> tuple[str, dict[tuple[str, int, str], dict[int, dict[str, Any]]]]:
    records = [rescore(r) for r in ResultsFolder(folder).records()]
    if not records:
        raise UsageError(f"there are no results in {folder}",
                         hint="run the sweep first (the commands are in benchmarks/results/bench/README.md)")
    cells: dict[tuple[str, int, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    for record in records:
        cells[(record["task"], int(record["length"]), record["method"])][int(record["index"])] = record
    return str(records[0]["model"]), cells


def _answer(record: dict[str, Any]) -> str | None:
    """The answer as scored: the boxed one (case and spaces aside), None for a reply without ``\\boxed{}``."""
    return " ".join(str(record.get("prediction") or "").lower().split()) if record.get("boxed") else None


def report(a_folder: Path, b_folder: Path) -> str:
    a_model, a_cells = load(a_folder)
    b_model, b_cells = load(b_folder)
    lines = [f"# {b_model} against {a_model}, paired on the same samples", "",
             f"A = `{a_folder}` ({a_model}), B = `{b_folder}` ({b_model}). Differences are B − A in points, with "
             "their 95 % paired interval (Newcombe's for 0/1 scores, a paired bootstrap for F1); p is the exact McNemar test (sign test for F1).", "",
             "| task | length | method | n | score | A % | B % | B − A [95 %] | B better | A better | p |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    agreement = ["", "| task | length | method | n | same answer | same reply | unboxed A | unboxed B | s/sample A | "
                 "s/sample B |", "|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(set(a_cells) & set(b_cells)):
        task, length, method = key
        common = sorted(set(a_cells[key]) & set(b_cells[key]))
        if not common:
            continue
        a = [a_cells[key][i] for i in common]
        b = [b_cells[key][i] for i in common]
        check_same_samples([*a, *b])
        for name, label in SCORES:
            # paired(first, second) is first − second: B first
            b_minus_a = paired([float(r["scores"][name] or 0.0) for r in b], [float(r["scores"][name] or 0.0) for r in a],
                               seed=f"{task}/{length}/{method}/{name}")
            a_mean, b_mean = b_minus_a.mean_b, b_minus_a.mean_a
            low, high = b_minus_a.interval.low, b_minus_a.interval.high
            lines.append(f"| {task} | {length} | {method} | {b_minus_a.n} | {label} | {_pct(a_mean)} | {_pct(b_mean)} | "
                         f"{_signed(b_minus_a.difference)} [{_signed(low)}, {_signed(high)}] | "
                         f"{b_minus_a.a_better} | {b_minus_a.b_better} | {_p(b_minus_a.p_value)} |")
        with_text = all("reply" in r for r in (*a, *b))  # scores.jsonl holds no text to compare
        same_answer = sum(_answer(x) == _answer(y) for x, y in zip(a, b, strict=True)) if with_text else "—"
        same_reply = sum(x.get("reply") == y.get("reply") for x, y in zip(a, b, strict=True)) if with_text else "—"
        seconds = [sum(float(r.get("seconds") or 0.0) for r in side) / len(common) for side in (a, b)]
        agreement.append(f"| {task} | {length} | {method} | {len(common)} | {same_answer} | {same_reply} | "
                         f"{sum(not r.get('boxed') for r in a)} | {sum(not r.get('boxed') for r in b)} | "
                         f"{seconds[0]:.1f} | {seconds[1]:.1f} |")
    return "\n".join([*lines, *agreement, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="results folder of the reference format")
    parser.add_argument("b", type=Path, help="results folder of the format under test")
    parser.add_argument("--out", type=Path, help="write the markdown here (default: print it)")
    args = parser.parse_args()
    try:
        text = report(args.a, args.b)
    except MemreadError as error:  # no results, or folders of different samples: one line and a hint
        print(f"error: {error.message}" + (f"\n\nhint: {error.hint}" if error.hint else ""), file=sys.stderr)
        sys.exit(int(error.exit_status))
    if args.out:
        from benchmarks._helpers.result_files import command_line

        text += f"\nMade by `{command_line()}` on {datetime.date.today().isoformat()}.\n"
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
