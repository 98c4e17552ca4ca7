"""Several questions about one document in one pass, against each asked alone: the default settings' cost.

    python -m benchmarks.speed.bench_questions DOCUMENT -q "…" -q "…" -q "…" -q "…" --threads 2 \\
        --out benchmarks/results/questions-evidence
    python -m benchmarks.speed.bench_questions DOCUMENT -q … --strategy overwrite --layout chunk-first

For the strategy given (default: the default strategy) and memread's default settings, each question is asked
alone (a read of its own: the document opened, chunked and indexed, then read), then all of them in one read,
in that order and then again (questions alone, together), so that a machine whose load drifts slows both alike.
Reported per read: wall seconds (ingest included), prompt and generated tokens, and the answers; and the ratio
of the one-pass read to one question alone (the mean of the questions' own reads), which issue 35 asks to be at
most 1.5 for four questions. The answers of the one-pass read are the same as each question's alone when the
lanes do not affect one another (they share only the steps that read the same passage).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from benchmarks._helpers import result_files
from memread.ask import open_source, read
from memread.events import Event, RunFinished
from memread.run import open_backend
from memread.settings import Settings


def one_read(source: str, questions: list[str], backend: Any, settings: Settings) -> dict[str, Any]:
    finished: list[RunFinished] = []

    def sink(event: Event) -> None:
        if isinstance(event, RunFinished):
            finished.append(event)

    begun = time.perf_counter()
    results = read(open_source(source), questions, backend=backend, settings=settings, sinks=[sink])
    wall = time.perf_counter() - begun
    end = finished[-1]
    return {"questions": len(questions), "wall_s": round(wall, 2), "prompt_tokens": end.prompt_tokens,
            "completion_tokens": end.completion_tokens, "chunks_read": end.chunks_read,
            "answers": [r.answer for r in results]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("document")
    parser.add_argument("-q", "--question", action="append", required=True, dest="questions")
    parser.add_argument("--strategy", default=None, help="default: memread's default strategy")
    parser.add_argument("--layout", default=None)
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=2, help="alone-then-together rounds (default 2)")
    parser.add_argument("--out", default=None, help="PATH (without suffix) for PATH.json and PATH.md")
    args = parser.parse_args()
    fields: dict[str, Any] = {}
    if args.strategy:
        fields["strategy"] = args.strategy
    if args.layout:
        fields["layout"] = args.layout
    settings = Settings(**fields)
    backend = open_backend(model=args.model, options={"n_threads": args.threads}, settings=settings,
                           questions=args.questions)
    load_before = os.getloadavg()
    rounds = []
    try:
        for _ in range(args.repeats):
            alone = [one_read(args.document, [q], backend, settings) for q in args.questions]
            together = one_read(args.document, args.questions, backend, settings)
            mean_alone = statistics.fmean(r["wall_s"] for r in alone)
            rounds.append({"alone": alone, "together": together,
                           "ratio_to_one": round(together["wall_s"] / mean_alone, 2),
                           "ratio_to_all_alone": round(together["wall_s"] / sum(r["wall_s"] for r in alone), 2),
                           "same_answers": together["answers"] == [r["answers"][0] for r in alone]})
    finally:
        backend.close()
    load_after = os.getloadavg()
    rows = []
    for number, r in enumerate(rounds, 1):
        for alone in r["alone"]:
            rows.append([number, "1 alone", alone["wall_s"], alone["prompt_tokens"], alone["completion_tokens"],
                         alone["chunks_read"], "", ""])
        t = r["together"]
        rows.append([number, f"{t['questions']} in one pass", t["wall_s"], t["prompt_tokens"], t["completion_tokens"],
                     t["chunks_read"], f"{r['ratio_to_one']}×", "yes" if r["same_answers"] else "no"])
    body = (f"Strategy `{settings.strategy}`, default settings; document `{os.path.basename(args.document)}`; "
            f"{len(args.questions)} questions.\n\n"
            + result_files.table(["round", "read", "wall s", "prompt tokens", "generated tokens", "steps",
                                  "× one question alone", "same answers"], rows)
            + f"\n\nMedian over rounds: {statistics.median(r['ratio_to_one'] for r in rounds):.2f}× one question "
              f"alone, {statistics.median(r['ratio_to_all_alone'] for r in rounds):.2f}× asking them one by one.\n")
    print(body)
    if args.out:
        result_files.write(args.out, title=f"{len(args.questions)} questions in one pass ({settings.strategy})",
                           body=body, data={"rounds": rounds, "strategy": settings.strategy},
                           load_before=load_before, load_after=load_after)


if __name__ == "__main__":
    main()
