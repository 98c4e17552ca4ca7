"""What beginning the final reply with ``\\boxed{`` (``--answer-start``) is worth, paired, in minutes.

For finished samples of a ``memread bench`` folder (its results.jsonl, which holds the text), this asks only the
final call again, on what the method kept (the evidence, BM25's passages, or nothing for closed book), once as
the model begins it and once begun with ``\\boxed{``. The reading is not repeated: those methods' final prompts
depend only on the question and what they kept. "Reproduced" counts the replies of the first way that equal the
sweep's own, which says the re-asked call is the sweep's (same model, build, prompt).

    python -m benchmarks.studies.answer_start FOLDER [--methods evidence,bm25,closed-book] [--threads 2] [--out FILE.md]

Rows are written to FOLDER/answer-start.jsonl as they finish (the file holds replies: keep it out of git);
a second run skips the rows it holds. The table goes to stdout (and --out).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from memread.answer import final_answer
from memread.backends import create_backend
from memread.backends.base import ChatRequest, Message
from memread.bench.methods import NO_PASSAGES, one_prompt
from memread.bench.results import score_values
from memread.bench.stats import paired, wilson
from memread.loop import LoopSettings
from memread.prompts import NO_MEMORY, final_prompt
from memread.settings import ANSWER_START
from memread.strategies import create_strategy

WAYS = ("model begins", "begun \\boxed{")


def prompt_of(record: dict[str, Any]) -> str | None:
    """The final prompt the method sent for this record, rebuilt from what it kept (None: not a method whose
    final call depends only on that)."""
    method, question, kept = record["method"], record["question"], record.get("kept")
    if method == "evidence":  # the strategy's own final plan, from the memory it kept
        strategy = create_strategy(LoopSettings(strategy="evidence"))
        return strategy.plan_final(0, question, {"memory": kept or NO_MEMORY}).prompt
    if method == "bm25":
        return one_prompt(question, kept or NO_PASSAGES, retrieved=True, style="boxed")
    if method == "closed-book":
        return final_prompt(question, NO_MEMORY, style="boxed")
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--methods", default="evidence,bm25,closed-book")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    methods = args.methods.split(",")
    records = [json.loads(line) for line in (args.folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    records = [r for r in records if r["method"] in methods and r["status"] == "ok" and "question" in r]
    rows_path = args.folder / "answer-start.jsonl"
    rows = {}
    if rows_path.exists():
        rows = {(row["key"], row["way"]): row for row in map(json.loads, rows_path.read_text().splitlines())}
    backend = create_backend("llamacpp", model=args.model, n_threads=args.threads)
    try:
        for record in records:
            prompt = prompt_of(record)
            if prompt is None:
                continue
            for way, start in zip(WAYS, ("", ANSWER_START), strict=True):
                if (record["key"], way) in rows:
                    continue
                request = ChatRequest(messages=(Message("user", prompt),), max_tokens=1024, temperature=0.0,
                                      top_p=1.0, seed=1, reply_start=start)
                reply = backend.complete([request])[0].text
                answer, boxed = final_answer(reply, style="boxed")
                scores = score_values("qa", record["golds"], status="ok", prediction=answer, reply=reply, boxed=boxed)
                row = {"key": record["key"], "method": record["method"], "index": record["index"], "way": way,
                       "boxed": boxed, "lenient": scores["lenient"], "whole_reply": scores["whole_reply"],
                       "reproduced": reply == record["reply"], "reply": reply}
                rows[(record["key"], way)] = row
                with rows_path.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                print(f"{record['key']} {way}: {answer!r} boxed={boxed} lenient={scores['lenient']}",
                      file=sys.stderr, flush=True)
    finally:
        backend.close()
    table = report(rows, methods, args.folder)
    print(table)
    if args.out:
        args.out.write_text(table, encoding="utf-8")
    return 0


def report(rows: dict[tuple[str, str], dict[str, Any]], methods: list[str], folder: Path) -> str:
    lines = [f"Final call re-asked on the kept text of `{folder.name}` (lenient accuracy, %, 95 % Wilson interval; "
             "paired: begun − model begins, 95 % Newcombe paired interval, exact McNemar p).", "",
             "| method | n | model begins: boxed | accuracy | whole reply | reproduced | begun `\\boxed{`: accuracy "
             "| paired difference |", "|---|---|---|---|---|---|---|---|"]
    for method in methods:
        keys = sorted({key for key, way in rows if rows[(key, way)]["method"] == method and
                       (key, WAYS[0]) in rows and (key, WAYS[1]) in rows}, key=lambda k: rows[(k, WAYS[0])]["index"])
        if not keys:
            continue
        plain = [rows[(k, WAYS[0])] for k in keys]
        begun = [rows[(k, WAYS[1])] for k in keys]
        n = len(keys)

        diff = paired([r["lenient"] for r in begun], [r["lenient"] for r in plain], seed=f"answer-start-{method}")
        lines.append(
            f"| {method} | {n} | {sum(r['boxed'] for r in plain)} of {n} | {pct([r['lenient'] for r in plain])} "
            f"| {pct([r['whole_reply'] for r in plain])} | {sum(r['reproduced'] for r in plain)} of {n} "
            f"| {pct([r['lenient'] for r in begun])} | {100 * diff.difference:+.1f} [{100 * diff.interval.low:+.0f}, "
            f"{100 * diff.interval.high:+.0f}] ({diff.a_better} to {diff.b_better}, p = {diff.p_value:.2f}) |")
    return "\n".join(lines) + "\n"


def pct(values: list[float]) -> str:
    """Right answers in %, with the 95 % Wilson interval."""
    right, n = int(sum(values)), len(values)
    interval = wilson(right, n)
    return f"{100 * right / n:.1f} [{100 * interval.low:.0f}, {100 * interval.high:.0f}]"


if __name__ == "__main__":
    sys.exit(main())
