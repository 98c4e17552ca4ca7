"""Shared prefills on llama.cpp: several questions over one document, and one question's consecutive steps, with
the KV cache reused block by block (memread's default) and with every prompt evaluated from an empty cache
(``prefix_cache=False``: what every request cost before), measured in one run.

    python -m benchmarks.speed.bench_lanes --model qwen2.5-coder-1.5b --threads 1 \\
        --lanes-tokens 7000 --lanes 1,2,4 --floor-tokens 7000,14000 --json benchmarks/results/lanes-qwen.json
    python -m benchmarks.speed.bench_lanes --lanes 1,4,1 --modes shared --floor-tokens ''   # 4 bracketed by 1
    python -m benchmarks.speed.bench_lanes --model smollm2-135m --lanes-tokens 3000 --floor-tokens 3000 \\
        --chunk-tokens 1000 --memory-tokens 256          # a quick look

Two parts, each running both modes back to back so that a busy machine slows both alike:

* **lanes**: ``--layout chunk-first`` (the chunk opens the prompt, so the questions share it), overwrite,
  N questions in one run over a needle haystack, for each N of ``--lanes`` in that order (repeats allowed:
  ``1,4,1`` brackets four questions by one). Reported: wall time as a ratio to the one-question runs of the
  same mode next to it in the sequence (target: four questions <= 1.5x one), prompt tokens evaluated, and the
  seconds spent generating, which sharing cannot remove.
* **floor**: the default layout (question-first), overwrite, one question, at each ``--floor-tokens``
  length: wall time over the prefill floor (every document token evaluated once, in 512-token batches with a
  fresh KV per chunk, as benchmarks/speed/bench_loop.py measures it; target <= 1.1x), split into prompt evaluation
  beyond the floor, generation of the memories, and the final answer. The floor is also measured in the blocks
  memread evaluates prompts in (paragraph-sized), which shows what the fixed blocks cost by themselves. As the
  machine's load drifts between the floor and the runs, the ratio is also given *in run*: the document's
  tokens at the prompt speed the run itself measured, against the run's wall time.

Both modes must produce the same replies, step by step and lane by lane ("identical" column): sharing that
changed a reply would make a resumed run (empty cache) differ from an uninterrupted one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._helpers import RUNS
from benchmarks._helpers.haystack import needle_document
from benchmarks._helpers.reading import prefill_floor, text_document
from memread.ask import read
from memread.backends.base import ChatRequest, Completion
from memread.backends.llamacpp import LlamaCppBackend, _load_llama
from memread.backends.prefill import SharedPrefill
from memread.events import Answered, Event, RunFinished, StepFinished
from memread.loop import LoopSettings

OTHER_QUESTIONS = (
    "What does the author say about how startups should raise money?",
    "Which programming languages does the author mention, and what does he think of them?",
    "What advice does the author give about writing essays?",
)


class Recorder:
    """Wraps one backend's ``complete`` to keep every completion (cached prompt tokens, seconds)."""

    def __init__(self, backend: LlamaCppBackend) -> None:
        self.completions: list[Completion] = []
        inner = backend.complete

        def complete(requests: list[ChatRequest]) -> list[Completion]:
            done = inner(requests)
            self.completions.extend(done)
            return done

        backend.complete = complete  # type: ignore[method-assign]

    def take(self) -> list[Completion]:
        done, self.completions = self.completions, []
        return done


def run(backend: LlamaCppBackend, recorder: Recorder, text: str, questions: list[str], settings: LoopSettings,
        name: str) -> dict[str, Any]:
    events: list[Event] = []
    started = time.perf_counter()
    read(text_document(name, text), questions, backend=backend, settings=settings, sinks=[events.append])
    wall = time.perf_counter() - started
    completions = recorder.take()
    steps = [e for e in events if isinstance(e, StepFinished)]
    answers = [e for e in events if isinstance(e, Answered)]
    finished = next(e for e in events if isinstance(e, RunFinished))
    step_completions, final_completions = completions[: len(steps)], completions[len(steps):]
    return {
        "wall_s": round(wall, 2),
        "model_s": round(finished.model_seconds, 2),
        "prompt_tokens": sum(c.prompt_tokens for c in completions),
        "evaluated_tokens": sum(c.prompt_tokens - (c.cached_prompt_tokens or 0) for c in completions),
        "completion_tokens": sum(c.completion_tokens for c in completions),
        "prompt_s": round(sum(c.prompt_seconds or 0 for c in completions), 2),
        "generate_s": round(sum(c.seconds - (c.prompt_seconds or 0) for c in completions), 2),
        "step_prompt_s": round(sum(c.prompt_seconds or 0 for c in step_completions), 2),
        "step_generate_s": round(sum(c.seconds - (c.prompt_seconds or 0) for c in step_completions), 2),
        "final_s": round(sum(c.seconds for c in final_completions), 2),
        "final_generate_s": round(sum(c.seconds - (c.prompt_seconds or 0) for c in final_completions), 2),
        "steps": len(steps),
        "replies": [[e.lane, e.step, e.reply] for e in steps] + [[e.lane, "answer", e.reply] for e in answers],
        "answers": [e.answer for e in answers],
    }


def block_floor(model_path: Path, text: str, chunk_tokens: int, n_ctx: int, threads: int) -> float:
    """The floor evaluated in memread's blocks instead of 512-token batches."""
    llm = _load_llama(model_path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads)
    prefill = SharedPrefill(llm)
    ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
    started = time.perf_counter()
    for i in range(0, len(ids), chunk_tokens):
        prefill.evaluate(ids[i:i + chunk_tokens], reuse=False)
    seconds = time.perf_counter() - started
    del llm
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--chunk-tokens", type=int, default=5000)
    parser.add_argument("--memory-tokens", type=int, default=1024)
    parser.add_argument("--lanes-tokens", type=int, default=7000, help="document length for the lanes part (0: skip)")
    parser.add_argument("--lanes", default="1,2,4", help="questions per run, in this order (repeats allowed)")
    parser.add_argument("--modes", default="shared,cold", help="shared (the KV cache reused) and/or cold")
    parser.add_argument("--floor-tokens", default="7000,14000", help="document lengths for the floor part ('': skip)")
    parser.add_argument("--json", type=Path, help="write the results here (and a .md beside it)")
    args = parser.parse_args()

    from memread import models
    from memread.backends.llamacpp import LlamaTokenizer
    from memread.loop import context_needed

    model_path = models.resolve(args.model)
    vocab = LlamaTokenizer(model_path)
    chunk_first = LoopSettings(chunk_tokens=args.chunk_tokens, memory_tokens=args.memory_tokens, layout="chunk-first")
    question_first = LoopSettings(chunk_tokens=args.chunk_tokens, memory_tokens=args.memory_tokens)
    n_ctx = context_needed(chunk_first, ["What is the special magic number for amber-quiet?", *OTHER_QUESTIONS],
                           vocab)
    modes = [mode for mode in ("shared", "cold") if mode in args.modes.split(",")]
    backends = {mode: LlamaCppBackend(model_path, model_name=args.model, n_ctx=n_ctx, n_threads=args.threads,
                                      prefix_cache=mode == "shared") for mode in modes}
    recorders = {mode: Recorder(backend) for mode, backend in backends.items()}
    load = os.getloadavg()[0]
    results: dict[str, Any] = {"command": "python -m benchmarks.speed.bench_lanes " + " ".join(sys.argv[1:]),
                               "model": args.model, "threads": args.threads, "chunk_tokens": args.chunk_tokens,
                               "memory_tokens": args.memory_tokens, "n_ctx": n_ctx, "load_at_start": round(load, 1),
                               "lanes": [], "floor": {}}
    RUNS.mkdir(parents=True, exist_ok=True)

    if args.lanes_tokens:
        text, question, gold = needle_document(args.lanes_tokens, vocab.count, depth=0.5)
        questions = [question, *OTHER_QUESTIONS]
        results["lanes_doc_tokens"] = vocab.count(text)
        for k, lanes in enumerate(int(n) for n in args.lanes.split(",")):
            order = modes if k % 2 == 0 else modes[::-1]  # alternate who goes first
            entry: dict[str, Any] = {"lanes": lanes}
            for mode in order:
                entry[mode] = run(backends[mode], recorders[mode], text, questions[:lanes], chunk_first, "haystack")
                print(f"lanes {lanes} {mode}: {entry[mode]['wall_s']} s, {entry[mode]['evaluated_tokens']} tokens "
                      f"evaluated, answers {[answer[:80] for answer in entry[mode]['answers']]}", flush=True)
            entry["identical"] = entry["shared"]["replies"] == entry["cold"]["replies"] if len(modes) == 2 else None
            entry["found"] = gold in (entry[modes[0]]["answers"][0] or "")
            results["lanes"].append(entry)
            print(f"lanes {lanes}: identical replies {entry['identical']}", flush=True)

    for tokens in [int(t) for t in args.floor_tokens.split(",") if t]:
        text, question, gold = needle_document(tokens, vocab.count, depth=0.5)
        row = {"doc_tokens": vocab.count(text)}
        floor, _ = prefill_floor(model_path, text, args.chunk_tokens, n_ctx, args.threads)
        row["floor_s"] = round(floor, 2)
        print(f"floor {tokens}: {floor:.1f} s", flush=True)
        for mode in modes:
            row[mode] = run(backends[mode], recorders[mode], text, [question], question_first, "haystack")
            row[mode]["ratio_to_floor"] = round(row[mode]["wall_s"] / floor, 3)
            speed = row[mode]["evaluated_tokens"] / row[mode]["prompt_s"]  # this run's own prompt speed
            row[mode]["ratio_to_floor_in_run"] = round(row[mode]["wall_s"] / (row["doc_tokens"] / speed), 3)
            print(f"floor {tokens} {mode}: {row[mode]['wall_s']} s = {row[mode]['ratio_to_floor']}x", flush=True)
        row["block_floor_s"] = round(block_floor(model_path, text, args.chunk_tokens, n_ctx, args.threads), 2)
        row["identical"] = row["shared"]["replies"] == row["cold"]["replies"] if len(modes) == 2 else None
        row["found"] = gold in (row[modes[0]]["answers"][0] or "")
        results["floor"][str(tokens)] = row
        print(f"floor {tokens}: blocks {row['block_floor_s']} s; identical replies {row['identical']}", flush=True)

    for backend in backends.values():
        backend.close()
    results["load_at_end"] = round(os.getloadavg()[0], 1)
    report = markdown(results)
    print(report)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        args.json.with_suffix(".md").write_text(report)


def one_question_reference(entries: list[dict[str, Any]], index: int, mode: str) -> float | None:
    """Mean wall time of the one-question runs nearest to ``entries[index]`` (before and after it)."""
    before = [e[mode]["wall_s"] for e in entries[:index + 1] if e["lanes"] == 1 and mode in e][-1:]
    after = [e[mode]["wall_s"] for e in entries[index:] if e["lanes"] == 1 and mode in e][:1]
    walls = before + after if entries[index]["lanes"] != 1 else [entries[index][mode]["wall_s"]]
    return sum(walls) / len(walls) if walls else None


def _same(flag: bool | None) -> str:
    return "—" if flag is None else ("yes" if flag else "**no**")


def markdown(results: dict[str, Any]) -> str:
    label = {"shared": "shared (now)", "cold": "every prompt cold (before)"}
    lines = [f"`{results['command']}`", "",
             f"{results['model']}, {results['threads']} thread(s), {results['chunk_tokens']}-token chunks, "
             f"{results['memory_tokens']}-token memory cap, greedy; load average {results['load_at_start']} at the "
             f"start, {results['load_at_end']} at the end.", ""]
    entries = results["lanes"]
    if entries:
        lines += [f"## Questions over one document ({results.get('lanes_doc_tokens')} tokens, --layout chunk-first)",
                  "", "Runs in the order they ran; each ratio is against the one-question run(s) of the same mode "
                  "next to it.", "",
                  "| questions | mode | wall s | x one question | prompt tokens | evaluated | prompt tok/s | "
                  "generated tokens | generating s | identical replies |", "|---|---|---|---|---|---|---|---|---|---|"]
        for index, entry in enumerate(entries):
            for mode in ("shared", "cold"):
                if mode not in entry:
                    continue
                r = entry[mode]
                reference = one_question_reference(entries, index, mode)
                ratio = f"{r['wall_s'] / reference:.2f}x" if reference else "—"
                lines.append(f"| {entry['lanes']} | {label[mode]} | {r['wall_s']} | {ratio} | {r['prompt_tokens']} | "
                             f"{r['evaluated_tokens']} | {r['evaluated_tokens'] / r['prompt_s']:.1f} | "
                             f"{r['completion_tokens']} | {r['generate_s']:.1f} | {_same(entry['identical'])} |")
        lines.append("")
    if results["floor"]:
        lines += ["## overwrite against the prefill floor (one question, question-first)", "",
                  "| document | floor s (512-token batches) | floor s (memread's blocks) | mode | wall s | x floor | "
                  "x floor in run | evaluated tokens | step prompts s | generating memories s | final answer s | "
                  "identical replies |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for row in results["floor"].values():
            for mode in ("shared", "cold"):
                if mode not in row:
                    continue
                r = row[mode]
                lines.append(f"| {row['doc_tokens']} tokens | {row['floor_s']} | {row['block_floor_s']} | "
                             f"{label[mode]} | {r['wall_s']} | {r['ratio_to_floor']}x | {r['ratio_to_floor_in_run']}x | "
                             f"{r['evaluated_tokens']} | {r['step_prompt_s']} | {r['step_generate_s']} | "
                             f"{r['final_s']} | {_same(row['identical'])} |")
        lines.append("")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
