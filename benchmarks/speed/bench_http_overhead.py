"""Cost of the HTTP path: the same reading steps through llama.cpp in-process and through the openai backend
against a local ``python -m llama_cpp.server`` running the same GGUF with the same thread count.

    python -m benchmarks.speed.bench_http_overhead                          # SmolLM2, 2 threads, 5 steps x 2 lanes
    python -m benchmarks.speed.bench_http_overhead --model qwen2.5-coder-1.5b --threads 2 --steps 4
    python -m benchmarks.speed.bench_http_overhead --json
    python -m benchmarks.speed.bench_http_overhead --in-thread --out benchmarks/results/http-overhead   # .md + .json

Each step sends one request per lane (question) with the lane's memory and the step's chunk, and the reply
becomes the lane's next memory, as in the overwrite strategy. Both backends run the same steps, interleaved
step by step so that a busy machine slows both alike. Two figures:

* ``step_overhead``: (HTTP step time - in-process step time) / in-process step time, over the steps where
  both engines generated the same number of tokens (greedy decoding may diverge slightly between them: the
  server always reuses the previous prompt's KV prefix, so the in-process backend runs with
  prefix_cache=True and the HTTP lanes go one at a time in the same order, and then replies match);
* ``round_trip``: the median wall time of a one-token request with a one-word prompt through each path; the
  difference is the fixed cost of HTTP + JSON + the server's framework per request, shown as a share of
  the median step time.

Target: HTTP overhead <= 5 % of step time.

On a loaded machine (load 3-6 on 2 cores) llama.cpp called from Python's *main* thread ran 5-40x slower
than the same call from a worker thread (which is where llama_cpp.server runs it): OpenMP's active
spin-waiting; with ``OMP_WAIT_POLICY=PASSIVE`` in the environment both ran alike. The plain comparison then
favours HTTP by a wide margin. ``--in-thread`` calls the in-process backend from a worker thread too, which
isolates the cost of the HTTP transport itself.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from benchmarks._helpers import result_files
from memread import models
from memread.backends import Backend, ChatRequest, Message, create_backend
from memread.chunk import Chunker
from memread.document import Provenance, Segment

QUESTIONS = ("Which city did the expedition leave from?", "What was the name of the ship's cook?")
FACTS = ("The expedition left from the port city of Valparaiso at dawn.", "The ship's cook was called Aurelio Mendes.")
STEP_PROMPT = (  # a stand-in with the shape of MemAgent's step prompt (the strategies own the real one)
    "You are presented with a problem, a section of an article that may contain the answer to the problem, "
    "and a previous memory. Please read the provided section carefully and update the memory with the new "
    "information that helps to answer the problem. Be sure to retain all relevant details from the "
    "previous memory while adding any new, useful information.\n\n<problem>\n{question}\n</problem>\n\n"
    "<memory>\n{memory}\n</memory>\n\n<section>\n{chunk}\n</section>\n\nUpdated memory:\n"
)
WORDS = (  # noqa: SIM905 (a sentence reads better than a list)
    "the crew sailed north along the coast and the wind was cold while the captain wrote in his log about "
    "stores of water rope sails charts islands birds fish storms calm days nights stars and the long voyage"
).split()


def document(tokens: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    sentences = [" ".join(rng.choices(WORDS, k=rng.randint(8, 20))).capitalize() + "." for _ in range(tokens // 12)]
    for i, fact in enumerate(FACTS):
        sentences.insert((i + 1) * len(sentences) // (len(FACTS) + 1), fact)
    return "\n".join(" ".join(sentences[i:i + 5]) for i in range(0, len(sentences), 5)) + "\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(gguf: Path, threads: int, n_ctx: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--n_ctx", str(n_ctx),
               "--n_threads", str(threads), "--n_threads_batch", str(threads), "--n_batch", "512",
               "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited; see {log}")
        try:
            if httpx.get(url + "/models", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit("llama_cpp.server did not start")


def timed(backend: Backend, requests: list[ChatRequest], *, in_thread: bool = False) -> tuple[float, list[Any]]:
    started = time.perf_counter()
    if in_thread:
        with ThreadPoolExecutor(max_workers=1) as worker:
            done = worker.submit(backend.complete, requests).result()
    else:
        done = backend.complete(requests)
    return time.perf_counter() - started, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m", help="registry name or GGUF path")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--chunk-tokens", type=int, default=800)
    parser.add_argument("--memory-tokens", type=int, default=96)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--round-trips", type=int, default=15)
    parser.add_argument("--in-thread", action="store_true",
                        help="call the in-process backend from a worker thread (as the server does) instead of "
                        "the main thread")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", help="also write OUT.md and OUT.json (figures, command, machine load)")
    args = parser.parse_args()

    gguf = models.resolve(args.model)
    local = create_backend("llamacpp", model=str(gguf), n_ctx=args.n_ctx, n_threads=args.threads,
                           prefix_cache=True)
    log = Path(tempfile.mkdtemp(prefix="memread-bench-")) / "server.log"
    process, url = start_server(gguf, args.threads, args.n_ctx, log)
    load_before = os.getloadavg()
    try:
        # concurrency=1: llama_cpp.server runs one request at a time anyway, and sending the lanes in order
        # keeps the server's KV-prefix reuse identical to the in-process backend's (see the docstring).
        remote = create_backend("openai", model=None, base_url=url, context_length=args.n_ctx, concurrency=1)
        chunker = Chunker(local.tokenizer, args.chunk_tokens)
        text = document(args.chunk_tokens * args.steps)
        chunks = [c.text for c in chunker.chunks([Segment(text, Provenance("bench.txt"))])][: args.steps]

        # Fixed cost per request: a one-word prompt, one token out (after one warm-up each).
        tiny = [ChatRequest((Message("user", "Hi"),), max_tokens=1)]
        trips: dict[str, list[float]] = {"llamacpp": [], "openai": []}
        for _ in range(args.round_trips + 1):
            for name, backend in (("llamacpp", local), ("openai", remote)):
                trips[name].append(timed(backend, tiny, in_thread=args.in_thread and name == "llamacpp")[0])
        trip = {name: statistics.median(times[1:]) for name, times in trips.items()}

        memories = {"llamacpp": ["No previous memory"] * len(QUESTIONS),
                    "openai": ["No previous memory"] * len(QUESTIONS)}
        steps: list[dict[str, Any]] = []
        for index, chunk in enumerate(chunks):
            row: dict[str, Any] = {"step": index}
            for name, backend in (("llamacpp", local), ("openai", remote)):
                requests = [
                    ChatRequest((Message("user", STEP_PROMPT.format(question=q, memory=m, chunk=chunk)),),
                                max_tokens=args.memory_tokens, seed=1)
                    for q, m in zip(QUESTIONS, memories[name], strict=True)
                ]
                seconds, done = timed(backend, requests, in_thread=args.in_thread and name == "llamacpp")
                memories[name] = [c.text.strip() or "No previous memory" for c in done]
                row[name] = {"seconds": round(seconds, 3),
                             "prompt_tokens": [c.prompt_tokens for c in done],
                             "completion_tokens": [c.completion_tokens for c in done]}
            steps.append(row)
        remote.close()
    finally:
        local.close()
        process.kill()
        process.wait()

    same = [s for s in steps if s["llamacpp"]["completion_tokens"] == s["openai"]["completion_tokens"]]
    local_time = sum(s["llamacpp"]["seconds"] for s in same)
    http_time = sum(s["openai"]["seconds"] for s in same)
    median_step = statistics.median(s["llamacpp"]["seconds"] for s in steps)
    result = {
        "model": args.model, "threads": args.threads, "in_thread": args.in_thread, "lanes": len(QUESTIONS), "steps": len(steps),
        "round_trips": args.round_trips,
        "chunk_tokens": args.chunk_tokens, "memory_tokens": args.memory_tokens,
        "comparable_steps": len(same),
        "step_seconds_llamacpp": round(local_time, 3), "step_seconds_http": round(http_time, 3),
        "step_overhead": round((http_time - local_time) / local_time, 4) if same else None,
        "round_trip_ms_llamacpp": round(trip["llamacpp"] * 1000, 1),
        "round_trip_ms_http": round(trip["openai"] * 1000, 1),
        "round_trip_share_of_step": round((trip["openai"] - trip["llamacpp"]) * len(QUESTIONS) / median_step, 4),
        "median_step_seconds": round(median_step, 3),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "steps_detail": steps,
    }
    if args.out:
        write_result(args.out, result, same, local_time, http_time, load_before)
    if args.json:
        print(json.dumps(result))
        return
    print(f"model {args.model}, {args.threads} threads{' (in-process from a worker thread)' if args.in_thread else ''}, "
          f"{len(QUESTIONS)} lanes x {len(steps)} steps, "
          f"chunks of {args.chunk_tokens} tokens, memory <= {args.memory_tokens} tokens")
    print(f"{'step':>4}  {'in-process s':>12}  {'HTTP s':>8}  completion tokens (in-process / HTTP)")
    for s in steps:
        print(f"{s['step']:>4}  {s['llamacpp']['seconds']:>12.3f}  {s['openai']['seconds']:>8.3f}  "
              f"{s['llamacpp']['completion_tokens']} / {s['openai']['completion_tokens']}")
    if same:
        print(f"step overhead of HTTP over {len(same)} comparable steps: {result['step_overhead']:+.1%} "
              f"({http_time:.2f} s vs {local_time:.2f} s)")
    print(f"one-token round trip: in-process {result['round_trip_ms_llamacpp']} ms, HTTP "
          f"{result['round_trip_ms_http']} ms -> fixed HTTP cost per step (all lanes) = "
          f"{result['round_trip_share_of_step']:.1%} of the median step ({median_step:.2f} s)")
    print(f"load average before {result['loadavg_before']}, after {result['loadavg_after']} (2 cores)")


def write_result(out: str, result: dict[str, Any], same: list[dict[str, Any]], local_time: float,
                 http_time: float, load_before: tuple[float, ...]) -> None:
    rows = [[s["step"], f"{s['llamacpp']['seconds']:.2f}", f"{s['openai']['seconds']:.2f}",
             f"{s['openai']['seconds'] / s['llamacpp']['seconds'] - 1:+.1%}",
             f"{s['llamacpp']['completion_tokens']} / {s['openai']['completion_tokens']}",
             "yes" if s in same else "no (replies differ)"] for s in result["steps_detail"]]
    ratios = sorted(s["openai"]["seconds"] / s["llamacpp"]["seconds"] - 1 for s in same)
    where = "from a worker thread, as the server runs it" if result["in_thread"] else "from the main thread"
    overhead = (
        f"**Whole steps: HTTP {result['step_overhead']:+.1%}** over the {len(same)} steps where both engines "
        f"generated the same tokens ({http_time:.2f} s through HTTP vs {local_time:.2f} s in-process); single "
        f"steps ranged from {ratios[0]:+.0%} to {ratios[-1]:+.0%} (median {statistics.median(ratios):+.0%}). The "
        "one-token round trips say what the transport itself costs; a whole step also depends on how each "
        "process's llama.cpp threads are scheduled, which a loaded machine varies by more than the transport's "
        "cost (see the load average above)."
        if same else "No step generated the same tokens on both paths: no overhead figure."
    )
    body = f"""
The same reading steps through memread's llama.cpp backend in-process ({where}) and through the openai backend against `python -m llama_cpp.server` on loopback: the same GGUF (`{result['model']}`), {result['threads']} threads each, {result['lanes']} lanes (questions) per step, chunks of {result['chunk_tokens']} tokens, memories of at most {result['memory_tokens']} tokens. The two paths alternate step by step, so load on the machine slows both alike, on average.

**Fixed cost of a request** (median of {result.get('round_trips', '')} one-token requests with a one-word prompt, after a warm-up): in-process {result['round_trip_ms_llamacpp']} ms, HTTP {result['round_trip_ms_http']} ms. The difference, times the step's {result['lanes']} requests, is {result['round_trip_share_of_step']:+.2%} of the median step ({result['median_step_seconds']:.2f} s).

{overhead}

{result_files.table(["step", "in-process s", "HTTP s", "HTTP vs in-process", "completion tokens (in-process / HTTP)", "compared"], rows)}
"""
    data = {k: v for k, v in result.items() if not k.startswith("loadavg")}
    result_files.write(out, title="HTTP backend vs llama.cpp in-process", body=body, data=data,
                       load_before=load_before, load_after=os.getloadavg())


if __name__ == "__main__":
    main()
