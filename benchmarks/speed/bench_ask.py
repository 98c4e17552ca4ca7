"""A question asked as a user asks it: ``memread ask DOCUMENT QUESTION``, a process of its own, timed from the
command to its answer (Python and memread start, the model loads, the document is opened, chunked and indexed,
then read).

    python -m benchmarks.speed.bench_ask octave.pdf -q "Which environment variable …?" --strategy evidence \\
        --repeats 2 --out benchmarks/results/ask-manual

Each question is asked ``--repeats`` times in turn, each time in a fresh ``MEMREAD_HOME`` (nothing cached from
the run before; the model cache is kept). Reported per ask: wall seconds of the process, memread's own wall and
model seconds, steps, prompt and generated tokens, and the answer. Issue 35 asks a single-fact question about
the 1,158-page manual to be answered in at most 3 minutes on two cores: that is the wall time here, with
memread's default threads.

``--together`` then asks all the questions in one ``memread ask DOCUMENT -q … -q …``, as a user asks several, and
reports its wall time as × the median single ask: issue 35 asks four questions to cost at most 1.5× one with the
default strategy and settings. ``--haystack TOKENS`` reads a needle haystack of that length (RULER's essays,
fetched at run time, never committed) with its needle question and three about the essays:

    python -m benchmarks.speed.bench_ask --haystack 7000 --together --threads 1 --out benchmarks/results/ask-four
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from benchmarks._helpers import result_files
from memread import paths


def ask(document: str, question: str, extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-ask-") as home:
        # a fresh home, but the models where they are: a user asks with the model already pulled
        env = {**os.environ, "MEMREAD_HOME": home, "MEMREAD_MODELS_DIR": str(paths.models_dir())}
        begun = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "memread", "ask", document, question, "--json", *extra],
                              capture_output=True, text=True, env=env)
        wall = time.perf_counter() - begun
    if done.returncode != 0:
        raise SystemExit(f"memread ask exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    result = json.loads(done.stdout)
    stats = result["stats"]
    return {"question": question, "wall_s": round(wall, 1), "memread_wall_s": stats.get("wall_seconds"),
            "model_s": stats.get("model_seconds"), "steps": stats.get("chunks_read"),
            "prompt_tokens": stats.get("prompt_tokens"), "completion_tokens": stats.get("completion_tokens"),
            "strategy": result["strategy"], "answer": result["answer"]}


def together(document: str, questions: list[str], extra: list[str]) -> dict[str, Any]:
    """All ``questions`` in one ask (``-q`` each), timed as :func:`ask` times one."""
    asked = ask(document, questions[0], [flag for q in questions[1:] for flag in ("-q", q)] + extra)
    return {**asked, "question": f"all {len(questions)} in one ask"}


def haystack(tokens: int) -> tuple[str, list[str]]:
    """A needle haystack of about ``tokens`` tokens written to the cache, and the questions about it."""
    from benchmarks._helpers import CACHE
    from benchmarks._helpers.haystack import needle_document
    from benchmarks.speed.bench_lanes import OTHER_QUESTIONS
    from memread.tokens import default_tokenizer

    text, question, _ = needle_document(tokens, default_tokenizer().count)
    path = CACHE / f"haystack-{tokens}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path), [question, *OTHER_QUESTIONS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("document", nargs="?")
    parser.add_argument("-q", "--question", action="append", default=[], dest="questions")
    parser.add_argument("--haystack", type=int, default=0, help="TOKENS: a needle haystack instead of DOCUMENT")
    parser.add_argument("--together", action="store_true", help="then all the questions in one ask")
    parser.add_argument("--strategy", default=None, help="default: memread's default strategy")
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=None, help="default: memread's default threads")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", default=None, help="PATH (without suffix) for PATH.json and PATH.md")
    args = parser.parse_args()
    if args.haystack:
        args.document, asked = haystack(args.haystack)
        args.questions = args.questions or asked
    if not args.document or not args.questions:
        parser.error("give a DOCUMENT and -q QUESTION, or --haystack TOKENS")
    extra = [flag for name, value in (("--strategy", args.strategy), ("--model", args.model),
                                      ("--threads", args.threads)) if value is not None
             for flag in (name, str(value))]
    load_before = os.getloadavg()
    asks = [ask(args.document, question, extra) for _ in range(args.repeats) for question in args.questions]
    single = statistics.median(a["wall_s"] for a in asks)
    if args.together:
        asks.append(together(args.document, args.questions, extra))
    load_after = os.getloadavg()
    rows = [[a["question"], a["strategy"], a["wall_s"], a["memread_wall_s"], a["model_s"], a["steps"],
             a["prompt_tokens"], a["completion_tokens"], a["answer"]] for a in asks]
    body = (f"Document `{os.path.basename(args.document.rstrip('/'))}`; `memread ask … --json "
            f"{' '.join(extra)}`.\n\n"
            + result_files.table(["question", "strategy", "wall s (process)", "memread wall s", "model s", "steps",
                                  "prompt tokens", "generated tokens", "answer"], rows)
            + f"\n\nMedian wall time of an ask of one question: {single:.1f} s "
              f"(longest {max(a['wall_s'] for a in asks[:len(asks) - args.together]):.1f} s).\n")
    if args.together:
        body += (f"\nAll {len(args.questions)} questions in one ask: {asks[-1]['wall_s']:.1f} s, "
                 f"{asks[-1]['wall_s'] / single:.2f}× the median ask of one.\n")
    print(body)
    if args.out:
        result_files.write(args.out, title=f"Asking {os.path.basename(args.document.rstrip('/'))} as a user does",
                           body=body, data={"asks": asks, "options": extra}, load_before=load_before,
                           load_after=load_after, ratios=False)


if __name__ == "__main__":
    main()
