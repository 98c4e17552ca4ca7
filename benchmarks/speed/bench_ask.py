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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("document")
    parser.add_argument("-q", "--question", action="append", required=True, dest="questions")
    parser.add_argument("--strategy", default=None, help="default: memread's default strategy")
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=None, help="default: memread's default threads")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", default=None, help="PATH (without suffix) for PATH.json and PATH.md")
    args = parser.parse_args()
    extra = [flag for name, value in (("--strategy", args.strategy), ("--model", args.model),
                                      ("--threads", args.threads)) if value is not None
             for flag in (name, str(value))]
    load_before = os.getloadavg()
    asks = [ask(args.document, question, extra) for _ in range(args.repeats) for question in args.questions]
    load_after = os.getloadavg()
    rows = [[a["question"], a["strategy"], a["wall_s"], a["memread_wall_s"], a["model_s"], a["steps"],
             a["prompt_tokens"], a["completion_tokens"], a["answer"]] for a in asks]
    body = (f"Document `{os.path.basename(args.document.rstrip('/'))}`; `memread ask … --json "
            f"{' '.join(extra)}`.\n\n"
            + result_files.table(["question", "strategy", "wall s (process)", "memread wall s", "model s", "steps",
                                  "prompt tokens", "generated tokens", "answer"], rows)
            + f"\n\nMedian wall time of an ask: {statistics.median(a['wall_s'] for a in asks):.1f} s "
              f"(longest {max(a['wall_s'] for a in asks):.1f} s).\n")
    print(body)
    if args.out:
        result_files.write(args.out, title=f"Asking {os.path.basename(args.document.rstrip('/'))} as a user does",
                           body=body, data={"asks": asks, "options": extra}, load_before=load_before,
                           load_after=load_after, ratios=False)


if __name__ == "__main__":
    main()
