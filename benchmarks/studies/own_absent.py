"""Design questions whose answer is not in the document: does a strategy say so, or guess?

docqa's design set (its even-numbered questions) has no *absent* question, so the evidence design wrote six of its
own against the same documents, each checked absent with a regular expression over the document's text
(``benchmarks/data/docqa-design-absent.jsonl``). This reads each with ``memread``'s own run (as ``memread ask``
does, default model unless ``--model``), and scores it with docqa's rule for absent questions: right when the
answer says the document does not say.

    python -m benchmarks.studies.own_absent [--strategy evidence] [--threads 1] [--model M] [--out FILE.md]

Rows go to ``--cache`` (a JSONL, default ``own-absent.jsonl`` in the current folder) as they finish, and a second
run skips the questions it holds for the same strategy and code version. The documents are docqa's, fetched and
checked by sha256 at first use (``MEMREAD_DOCQA_DIR`` to use a cache of them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import cell, emit
from benchmarks._helpers.result_files import table as result_table

QUESTIONS = Path(__file__).resolve().parents[1] / "data" / "docqa-design-absent.jsonl"


def own_questions(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def check_absent(question: dict[str, Any], text: str) -> bool:
    """Whether the document's text indeed lacks what the question asks (its ``absent_regex`` finds nothing)."""
    return re.search(question["absent_regex"], text) is None


def ask(question: dict[str, Any], *, strategy: str, model: str | None, threads: int) -> dict[str, Any]:
    from memread.bench.docqa import document_path, says_absent
    from memread.run import ReadRequest, Run
    from memread.settings import Settings

    source = str(document_path(question["doc"]))
    request = ReadRequest(source=source, questions=[question["question"]], settings=Settings(strategy=strategy),
                          model=model, backend_options={"n_threads": threads}, write_trace=False)
    started = time.perf_counter()
    run = Run(request.validated())
    try:
        result = run.read()[0]
    finally:
        run.close()
    answer = result.answer or ""
    return {"id": question["id"], "doc": question["doc"], "strategy": strategy, "answer": answer,
            "right": says_absent(answer), "seconds": round(time.perf_counter() - started, 1)}


def table(rows: Sequence[dict[str, Any]]) -> str:
    body = result_table(["question", "document", "strategy", "answer", "says absent", "s"],
                        [[row["id"], row["doc"], row["strategy"], cell(row["answer"], 80),
                          "yes" if row["right"] else "no", f"{row['seconds']:.0f}"] for row in rows])
    right = sum(1 for row in rows if row["right"])
    return f"{body}\n\nSaid absent: {right} of {len(rows)}.\n"


def main(argv: Sequence[str] | None = None) -> int:
    from memread.version import code_id

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strategy", default="evidence")
    parser.add_argument("--model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=Path("own-absent.jsonl"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    code = code_id()
    done: dict[str, dict[str, Any]] = {}
    if args.cache.is_file():
        for line in args.cache.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("strategy") == args.strategy and row.get("code") == code:
                done[row["id"]] = row
    rows = []
    for question in own_questions():
        if question["id"] not in done:
            row = {**ask(question, strategy=args.strategy, model=args.model, threads=args.threads),
                   "code": code}
            with args.cache.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
            done[question["id"]] = row
            print(f"{row['id']}: {row['answer'][:80]!r} ({row['seconds']:.0f} s)", file=sys.stderr)
        rows.append(done[question["id"]])
    return emit(table(rows), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
