"""A speed report anyone can run: how fast memread reads on this machine, and how close that is to what the CPU
can do.

In one run, on one machine, interleaved so that the ratios share the same background load:

1. **Model formats**: prefill tok/s of a fresh 2K and 6K prompt and decode tok/s (one token per step after the
   2K prompt), for each model given (by default Qwen2.5-Coder-1.5B as published, Q4_K_M, and its Q4_0
   conversion), repeated and alternated; each format's speed as a ratio to the first.
2. **The arithmetic bound**: FLOPs per prompt token (2 × the block weights + the attention term) against this
   CPU's peak (vector width × issue rate × cores × clock, and a measured VNNI/FMA kernel), so the share of
   the bound the prefill reaches.
3. **Strategies against the floor**: ``overwrite``, ``gated`` and ``callback`` read a needle document through
   ``memread.ask.read``; each wall time is divided by the *floor* (every document token prefilled once in
   chunk-sized pieces, fresh KV, same model and threads), measured before, between and after.
4. **Lanes**: 1, 2 and 4 questions in one pass (``-q`` repeated) in both layouts, as a ratio to one question.

    python -m benchmarks.speed.bench_speed                         # the full report: about an hour on 2 idle cores
    python -m benchmarks.speed.bench_speed --quick                 # SmolLM2 and its Q4_0, small sizes: minutes
    python -m benchmarks.speed.bench_speed --sections formats,bound --repeats 3

Results go to benchmarks/results/speed[-TAG].json and .md, with the command, the machine and how busy it was
(other processes' cores during each measurement, load averages). Absolute tok/s on a shared machine are lower
bounds; the ratios within the run are the figures to compare.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import statistics
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks._helpers import RESULTS
from benchmarks._helpers.haystack import essays
from benchmarks._helpers.machine_bound import LoadMeter, measured_kernel_peak, model_facts, peak
from memread import models
from memread.cpu import this_cpu

SECTIONS = ("formats", "bound", "strategies", "lanes")


# --- measuring prefill and decode -------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """llama.cpp logs to fd 2 while loading; keep the report readable."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "wb") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def load(path: Path, n_ctx: int, threads: int) -> Any:
    import llama_cpp

    with _quiet_stderr():
        return llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_batch=512, n_threads=threads,
                               n_threads_batch=threads, verbose=False)


def prefill(llm: Any, ids: list[int]) -> dict[str, Any]:
    """Evaluate ``ids`` as a fresh prompt (empty KV cache), llama.cpp's default 512-token batches."""
    llm.reset()
    with LoadMeter() as meter:
        llm.eval(ids)
    return _rates(len(ids), meter.result)


def _rates(tokens: int, measured: dict[str, Any]) -> dict[str, Any]:
    cpu = measured["cpu_s"]
    return {"tokens": tokens, "tok_s": tokens / measured["wall_s"], "tok_per_cpu_s": tokens / cpu if cpu else None,
            **measured}


def decode(llm: Any, ids: list[int], steps: int) -> dict[str, Any]:
    """One token per llama.cpp call after the prompt ``ids`` already in the cache: the model's cost of a
    decoded token (the tokens are the text's own, so no sampling time is included)."""
    with LoadMeter() as meter:
        for token in ids[:steps]:
            llm.eval([token])
    return _rates(steps, meter.result)


def measure_formats(names: list[str], prompts: list[int], decode_steps: int, repeats: int,
                    threads: int) -> dict[str, Any]:
    """Every format loaded once; then, ``repeats`` times, each format in turn (the order rotated each round)
    prefills every prompt length and decodes."""
    text = essays()
    longest = max(prompts)
    loaded: dict[str, Any] = {}
    ids: list[int] = []
    for name in names:
        llm = load(models.resolve(name), n_ctx=longest + decode_steps + 64, threads=threads)
        these = llm.tokenize(text[: longest * 8].encode(), add_bos=False)[: longest + decode_steps]
        if ids and these != ids:
            raise SystemExit(f"{name} tokenizes differently from {names[0]}: compare formats of one model")
        ids = these
        llm.eval(ids[:64])  # page the weights in (mmap) before anything is timed
        loaded[name] = llm
    rounds: list[dict[str, Any]] = []
    for round_index in range(repeats):
        order = names[round_index % len(names):] + names[: round_index % len(names)]
        row: dict[str, Any] = {}
        for name in order:
            llm = loaded[name]
            cell: dict[str, Any] = {}
            for length in sorted(prompts):
                cell[f"prefill_{length}"] = prefill(llm, ids[:length])
                print(f"  round {round_index + 1} {name} prefill {length}: {cell[f'prefill_{length}']['tok_s']:.1f} "
                      f"tok/s (others busy: {cell[f'prefill_{length}']['others_cores']} cores)", flush=True)
            short = min(prompts)
            prefill(llm, ids[:short])
            cell["decode"] = decode(llm, ids[short:], decode_steps)
            print(f"  round {round_index + 1} {name} decode: {cell['decode']['tok_s']:.1f} tok/s", flush=True)
            row[name] = cell
        rounds.append(row)
    for llm in loaded.values():
        llm.close()
    return {"prompts": sorted(prompts), "decode_steps": decode_steps, "repeats": repeats, "rounds": rounds,
            "summary": summarise_formats(names, sorted(prompts), rounds)}


def summarise_formats(names: list[str], prompts: list[int], rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Median tok/s (wall, and per CPU-second of this process) per format and measurement, and the medians of
    the per-round ratios to the first format (paired within a round, so a load change between rounds cancels)."""
    keys = [f"prefill_{length}" for length in prompts] + ["decode"]
    summary: dict[str, Any] = {}
    for name in names:
        entry: dict[str, Any] = {}
        for key in keys:
            cell: dict[str, Any] = {"others_cores": [row[name][key]["others_cores"] for row in rounds]}
            for rate, label in (("tok_s", ""), ("tok_per_cpu_s", "_cpu")):
                values = [row[name][key][rate] for row in rounds]
                if None in values:
                    continue
                ratios = [row[name][key][rate] / row[names[0]][key][rate] for row in rounds]
                cell[rate] = round(statistics.median(values), 1)
                cell[f"ratio{label}"] = round(statistics.median(ratios), 3)
                cell[f"ratios{label}"] = [round(r, 3) for r in ratios]
            entry[key] = cell
        summary[name] = entry
    return summary


# --- the arithmetic bound -----------------------------------------------------------------------------------


def bound(names: list[str], formats: dict[str, Any] | None, threads: int) -> dict[str, Any]:
    cpu = this_cpu()
    estimate = peak(cpu)
    kernel = measured_kernel_peak()
    used_cores = min(threads, cpu.cores)
    best = {"int8": estimate.int8_macs_per_s / cpu.cores * used_cores,
            "f32": estimate.f32_flops_per_s / cpu.cores * used_cores}
    source = "estimate"
    if kernel and kernel.get("int8_per_cpu_s", 0) * used_cores > best["int8"]:
        best = {"int8": kernel["int8_per_cpu_s"] * used_cores, "f32": kernel["f32_per_cpu_s"] * used_cores}
        source = "measured kernel"
    out: dict[str, Any] = {"cpu": cpu.describe(), "cores_used": used_cores, "estimate": estimate.to_dict(),
                           "kernel": kernel, "bound_from": source, "peak_used": best, "models": {}}
    for name in names:
        facts = model_facts(models.resolve(name, pull=False))
        rows: dict[str, Any] = {}
        for length in (formats or {}).get("prompts", [2000, 6000]):
            matrix, attention = facts.prefill_flops_per_token(length)
            seconds = matrix / 2 / best["int8"] + attention / best["f32"]
            row = {"matrix_gflop": round(matrix / 1e9, 3), "attention_gflop": round(attention / 1e9, 3),
                   "bound_tok_s": round(1 / seconds, 1)}
            measured = (formats or {}).get("summary", {}).get(name, {}).get(f"prefill_{length}")
            if measured:  # one thread: per CPU-second, the speed the core gave when it ran us
                rate = measured.get("tok_per_cpu_s") if used_cores == 1 else None
                row["measured_tok_s"] = rate or measured["tok_s"]
                row["measured_as"] = "per CPU-second" if rate else "wall clock"
                row["share"] = round(row["measured_tok_s"] * seconds, 3)
            rows[str(length)] = row
        decoded = (formats or {}).get("summary", {}).get(name, {}).get("decode")
        weights = facts.block_bytes + facts.head_bytes
        decode_rate = decoded and ((decoded.get("tok_per_cpu_s") if used_cores == 1 else None) or decoded["tok_s"])
        out["models"][name] = {
            "facts": {**facts.__dict__}, "prefill": rows, "decode_weight_bytes": weights,
            "decode_weight_gb_s": round(decode_rate * weights / 1e9, 1) if decode_rate else None,
        }
    return out


# --- reading: strategies against the floor, and lanes ------------------------------------------------------


def needles_document(tokens: int, count: Any, lanes: int) -> tuple[str, list[str], list[str]]:
    """About ``tokens`` tokens (by ``count``) of essay text, whole lines, with ``lanes`` needles: the first at
    half depth (as in bench_loop.py), the others spread evenly. Returns (text, questions, answers)."""
    lines: list[str] = []
    used = 0
    for line in essays().splitlines(keepends=True):
        if used >= tokens:
            break
        lines.append(line)
        used += count(line)
    depths = [0.5] + [(2 * lane - 1) / (2 * lanes) for lane in range(1, lanes)]  # 4 lanes: .5 .125 .375 .625
    keys = ["amber-quiet", "copper-north", "velvet-salt", "winter-lantern", "quiet-copper", "north-amber"]
    questions, answers = [], []
    for lane, depth in sorted(enumerate(depths), key=lambda item: -item[1]):  # deepest first: indices stay valid
        key, value = keys[lane % len(keys)] + (f"-{lane}" if lane >= len(keys) else ""), str(7_624_039 + 104_729 * lane)
        lines.insert(max(1, int(len(lines) * depth)), f"\nThe special magic number for {key} is: {value}.\n")
        questions.append((lane, f"What is the special magic number for {key} mentioned in the provided text?"))
        answers.append((lane, value))
    return "".join(lines), [q for _, q in sorted(questions)], [a for _, a in sorted(answers)]


def floor(llm: Any, ids: list[int], chunk_tokens: int) -> dict[str, Any]:
    """Every document token prefilled once, chunk by chunk, fresh KV each time: no reader is faster."""
    with LoadMeter() as meter:
        for start in range(0, len(ids), chunk_tokens):
            llm.reset()
            llm.eval(ids[start:start + chunk_tokens])
    return {"tokens": len(ids), **meter.result}


def one_read(backend: Any, text: str, questions: list[str], answers: list[str], **settings: Any) -> dict[str, Any]:
    from memread.ask import read
    from memread.document import Document, Provenance, Segment
    from memread.events import Event, RunFinished
    from memread.loop import LoopSettings

    finished: list[RunFinished] = []

    def sink(event: Event) -> None:
        if isinstance(event, RunFinished):
            finished.append(event)

    document = Document("needles.txt", "text", lambda _doc: iter([Segment(text, Provenance("needles.txt", line_start=1))]))
    with LoadMeter() as meter:
        lanes = read(document, questions, backend=backend, settings=LoopSettings(**settings), sinks=[sink])
    done = finished[-1] if finished else None
    return {**meter.result, "prompt_tokens": done.prompt_tokens if done else None,
            "completion_tokens": done.completion_tokens if done else None,
            "found": [answer in (lane.answer or "") for lane, answer in zip(lanes, answers, strict=True)]}


def measure_reads(name: str, tokens: int, chunk_tokens: int, strategies: list[str], lanes: list[int],
                  layouts: list[str], threads: int, sections: set[str]) -> dict[str, Any]:
    from memread.backends import create_backend
    from memread.backends.llamacpp import LlamaTokenizer
    from memread.loop import LoopSettings, context_needed

    path = models.resolve(name)
    vocab = LlamaTokenizer(path)
    text, questions, answers = needles_document(tokens, vocab.count, max(lanes))
    n_ctx = max(context_needed(LoopSettings(strategy=s, chunk_tokens=chunk_tokens, layout=layout),
                               questions, vocab) for s in strategies for layout in layouts)
    backend = create_backend("llamacpp", model=name, n_ctx=n_ctx, n_threads=threads)
    floor_llm = load(path, n_ctx=chunk_tokens + 64, threads=threads)
    ids = floor_llm.tokenize(text.encode(), add_bos=False)
    print(f"reads: {name}, {len(ids):,}-token document, {chunk_tokens:,}-token chunks, {threads} threads", flush=True)
    floors: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []

    def measure_floor() -> None:
        floors.append(floor(floor_llm, ids, chunk_tokens))
        print(f"  floor: {floors[-1]['wall_s']:.1f} s (others busy: {floors[-1]['others_cores']} cores)", flush=True)

    def run(kind: str, **settings: Any) -> None:
        count = settings.pop("lanes", 1)
        row = one_read(backend, text, questions[:count], answers[:count], chunk_tokens=chunk_tokens, **settings)
        row.update(kind=kind, lanes=count, floor_index=len(floors) - 1, **settings)
        runs.append(row)
        print(f"  {kind} {settings} lanes={count}: {row['wall_s']:.1f} s, found {row['found']}", flush=True)

    measure_floor()
    if "strategies" in sections:
        for strategy in strategies:
            run("strategy", strategy=strategy)
            measure_floor()
    if "lanes" in sections:
        for layout in layouts:
            for count in lanes:
                if count == 1 and layout == "question-first" and any(
                        r["kind"] == "strategy" and r["strategy"] == "overwrite" for r in runs):
                    continue  # the overwrite strategy run above is this one
                run("lanes", strategy="overwrite", layout=layout, lanes=count)
            measure_floor()
    backend.close()
    floor_llm.close()
    for row in runs:  # against the mean of the floors measured just before and just after it
        around = floors[row["floor_index"]:row["floor_index"] + 2]
        for what in ("wall_s", "cpu_s"):
            row[f"floor_{what}"] = round(statistics.mean(f[what] for f in around), 2)
        row["ratio_to_floor"] = round(row["wall_s"] / row["floor_wall_s"], 3)
        row["ratio_to_floor_cpu"] = round(row["cpu_s"] / row["floor_cpu_s"], 3)
    for row in (r for r in runs if r.get("strategy") == "overwrite"):
        layout = row.get("layout", "question-first")
        single = next((r for r in runs if r["lanes"] == 1 and r.get("layout", "question-first") == layout
                       and r.get("strategy") == "overwrite"), None)
        if single:
            row["ratio_to_one_lane"] = round(row["wall_s"] / single["wall_s"], 3)
            row["ratio_to_one_lane_cpu"] = round(row["cpu_s"] / single["cpu_s"], 3)
    return {"model": name, "document_tokens": len(ids), "chunk_tokens": chunk_tokens, "floors": floors,
            "runs": runs}


# --- the report ----------------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = this_cpu()
    import llama_cpp

    uptime = ""
    with contextlib.suppress(OSError):
        import subprocess

        uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    return {"cpu": cpu.describe(), "arch": cpu.arch, "cores": cpu.cores, "mhz": cpu.mhz,
            "logical_cpus": os.cpu_count(), "python": platform.python_version(),
            "llama_cpp_python": llama_cpp.__version__, "uptime_at_start": uptime,
            "load_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# Speed report ({report['started'][:10]})", "", "```bash", report["command"], "```", ""]
    m = report["machine"]
    lines += [f"Machine: {m['cpu']} ({m['logical_cpus']} logical CPUs), llama-cpp-python {m['llama_cpp_python']}, "
              f"{report['threads']} llama.cpp threads. At the start: `{m['uptime_at_start']}`; at the end: "
              f"`{report.get('uptime_at_end', '')}`. \"Others\" is the average number of cores other processes "
              "kept busy during a measurement: absolute tok/s are lower bounds on a shared machine; the ratios "
              "within a round are paired.", ""]
    formats = report.get("formats")
    if formats:
        names = list(formats["summary"])
        lines += ["## Model formats", "",
                  f"Median of {formats['repeats']} alternated rounds; in brackets, this format's speed over "
                  f"{names[0]}'s in the same round (median of the rounds' ratios).", ""]
        rates = [("tok_s", "", "wall clock")]
        if report["threads"] == 1:
            rates.append(("tok_per_cpu_s", "_cpu", "per CPU-second of the one llama.cpp thread: the work itself, "
                          "whatever else the machine ran"))
        keys = [f"prefill_{p}" for p in formats["prompts"]] + ["decode"]
        for rate, label, what in rates:
            header = ["model", *[f"prefill {p:,} tok/s" for p in formats["prompts"]], "decode tok/s", "others (cores)"]
            lines += [f"Tokens per second, {what}:", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            for name, entry in formats["summary"].items():
                cells = [f"`{name}` ({models.MODELS[name].format if name in models.MODELS else '?'})"]
                cells += [f"{entry[key][rate]} ({entry[key][f'ratio{label}']:.2f}×)" for key in keys]
                busy = [c for key in keys for c in entry[key]["others_cores"] if c is not None]
                cells.append(f"{min(busy):.1f}–{max(busy):.1f}" if busy else "?")
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
    bound_ = report.get("bound")
    if bound_:
        est, kernel = bound_["estimate"], bound_["kernel"]
        lines += ["## Share of the arithmetic bound", "",
                  f"- Estimate from the CPU: {est['basis']}; × {est['cores']} cores × {est['ghz']:.2f} GHz "
                  f"(/proc/cpuinfo) = {est['int8_macs_per_s'] / 1e9:,.0f} G int8 MACs/s and "
                  f"{est['f32_flops_per_s'] / 1e9:,.0f} G f32 FLOPs/s."]
        if kernel:
            clock = kernel["int8_per_cpu_s"] / est["int8_macs_per_cycle"] / 1e9
            lines.append(f"- Measured with a VNNI/FMA kernel (16 independent chains, thread CPU time): "
                         f"{kernel['int8_per_cpu_s'] / 1e9:,.0f} G int8 MACs/s and "
                         f"{kernel['f32_per_cpu_s'] / 1e9:,.0f} G f32 FLOPs/s per core, i.e. the assumed "
                         f"{est['int8_macs_per_cycle']} MACs/cycle at {clock:.2f} GHz (the nominal clock "
                         "understates the boost).")
        peak_used = bound_["peak_used"]
        lines.append(f"- Bound used ({bound_['bound_from']}, {bound_['cores_used']} cores): "
                     f"{peak_used['int8'] / 1e9:,.0f} G MACs/s for the weight matrices (int8 dot products: llama.cpp "
                     f"quantizes activations to 8 bits for Q4/Q8 weights), {peak_used['f32'] / 1e9:,.0f} G FLOPs/s "
                     "for attention (f32 FMA on the F16 KV cache).")
        lines.append("- Per prompt token: 2 FLOPs per weight of the block matrices (the output head runs once per "
                     "prompt), plus attention 2 × 2 × layers × heads × head_dim × (prompt + 1)/2.")
        lines += ["", "| model | prompt | matrix GFLOP/token | attention GFLOP/token | bound tok/s | measured tok/s "
                  "| share |", "|---|---|---|---|---|---|---|"]
        for name, entry in bound_["models"].items():
            for length, row in entry["prefill"].items():
                share = f"{row['share']:.0%}" if "share" in row else "—"
                measured = f"{row['measured_tok_s']} ({row['measured_as']})" if "measured_tok_s" in row else "—"
                lines.append(f"| `{name}` | {int(length):,} | {row['matrix_gflop']} | {row['attention_gflop']} | "
                             f"{row['bound_tok_s']} | {measured} | {share} |")
        decoded = [f"`{n}` {e['decode_weight_gb_s']} GB/s" for n, e in bound_["models"].items()
                   if e["decode_weight_gb_s"]]
        if decoded:
            lines += ["", "Decode is bound by memory, not arithmetic: weight bytes read per decoded token × decode "
                      "tok/s = " + ", ".join(decoded) + "."]
        lines.append("")
    reads = report.get("reads")
    if reads:
        floors = ", ".join(f"{f['wall_s']:.1f}" for f in reads["floors"])
        lines += ["## Reading against the prefill floor", "",
                  f"`{reads['model']}`, a {reads['document_tokens']:,}-token needle document, "
                  f"{reads['chunk_tokens']:,}-token chunks. Floors measured before, between and after (s): "
                  f"{floors}; each run is divided by the mean of the floors either side of it.", "",
                  "| run | layout | lanes | wall s | ratio to floor (wall / CPU) | ratio to one lane (wall / CPU) "
                  "| prompt tokens | completion tokens | found | others (cores) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for row in reads["runs"]:
            one_lane = (f"{row['ratio_to_one_lane']:.2f}× / {row['ratio_to_one_lane_cpu']:.2f}×"
                        if "ratio_to_one_lane" in row else "—")
            lines.append(f"| {row.get('strategy')} | {row.get('layout', 'question-first')} | {row['lanes']} | "
                         f"{row['wall_s']:.1f} | {row['ratio_to_floor']:.2f}× / {row['ratio_to_floor_cpu']:.2f}× | "
                         f"{one_lane} | {row['prompt_tokens']:,} | {row['completion_tokens']:,} | "
                         f"{sum(row['found'])}/{len(row['found'])} | {row['others_cores']} |")
        lines += ["", "CPU ratios count this process's CPU seconds: with one llama.cpp thread they do not move with "
                  "the machine's load; with more threads they include threads spinning at barriers.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="qwen2.5-coder-1.5b,qwen2.5-coder-1.5b-q4_0",
                        help="registry names or GGUF paths of the formats to compare (one model's formats)")
    parser.add_argument("--prompts", default="2000,6000", help="prefill prompt lengths in tokens")
    parser.add_argument("--decode", type=int, default=64, help="decoded tokens per measurement")
    parser.add_argument("--repeats", type=int, default=2, help="alternated rounds of the format measurements")
    parser.add_argument("--read-model", default=None, help="model for the reads (default: the default model)")
    parser.add_argument("--read-tokens", type=int, default=7000, help="needle document length in tokens")
    parser.add_argument("--chunk-tokens", type=int, default=5000)
    parser.add_argument("--strategies", default="overwrite,gated,callback")
    parser.add_argument("--lanes", default="1,2,4")
    parser.add_argument("--layouts", default="question-first,chunk-first")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: physical cores)")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"any of {','.join(SECTIONS)}")
    parser.add_argument("--quick", action="store_true",
                        help="SmolLM2 and its Q4_0, 1K/2K prompts, a 3K-token document in 1K chunks, lanes 1,2")
    parser.add_argument("--tag", default="", help="results file suffix: speed-TAG.json/.md")
    if parser.parse_args(argv).quick:  # smaller defaults; options given on the command line still win
        parser.set_defaults(models="smollm2-135m,smollm2-135m-q4_0", prompts="1000,2000", decode=32,
                            read_model="smollm2-135m", read_tokens=3000, chunk_tokens=1000, lanes="1,2", tag="quick")
    args = parser.parse_args(argv)
    sections = set(args.sections.split(","))
    unknown = sections - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    from memread.backends.threads import physical_cores

    threads = args.threads or physical_cores()
    names = args.models.split(",")
    for name in names:
        models.resolve(name)  # pull or convert first, so no measurement includes it
    report: dict[str, Any] = {
        "command": "python -m benchmarks.speed.bench_speed " + shlex.join(argv if argv is not None else sys.argv[1:]),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "threads": threads,
        "machine": machine(),
    }
    print(f"{report['machine']['cpu']}; {report['machine']['uptime_at_start']}", flush=True)
    if "formats" in sections:
        report["formats"] = measure_formats(names, [int(p) for p in args.prompts.split(",")], args.decode,
                                            args.repeats, threads)
    if "bound" in sections:
        report["bound"] = bound(names, report.get("formats"), threads)
    if sections & {"strategies", "lanes"}:
        report["reads"] = measure_reads(args.read_model or models.default_model(), args.read_tokens,
                                        args.chunk_tokens, args.strategies.split(","),
                                        [int(n) for n in args.lanes.split(",")], args.layouts.split(","),
                                        threads, sections)
    report["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    report["load_at_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    with contextlib.suppress(OSError):
        import subprocess

        report["uptime_at_end"] = subprocess.run(["uptime"], capture_output=True, text=True,
                                                 check=False).stdout.strip()
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = RESULTS / (f"speed-{args.tag}" if args.tag else "speed")
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    stem.with_suffix(".md").write_text(markdown(report) + "\n")
    print(markdown(report))
    print(f"written: {stem.with_suffix('.json')} and {stem.with_suffix('.md')}")


if __name__ == "__main__":
    main()
