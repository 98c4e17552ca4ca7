"""kill -9 a real run at random moments, resume it, and check it ends where an uninterrupted run ends.

One uninterrupted ``memread ask`` (SmolLM2, greedy, fixed seed, one thread) gives the reference final memory
and answer, and its timeline: when the trace file appeared and when the process ended. Then, for each trial,
the same command is started again and sent SIGKILL at a moment drawn uniformly from that window (while the
model loads, mid-step, mid-write, during the final answer …); ``memread resume TRACE --json`` must then reach
the same final memory and answer, with status ok. Every third trial also kills the first resume at a random
moment and resumes again. A kill that comes after the run already ended is not counted as tried.

    python benchmarks/bench_kill_resume.py                 # 24 kill points, seed 7
    python benchmarks/bench_kill_resume.py --points 40 --seed 1 --chunk-tokens 80

Prints ``survived N / tried M`` and writes benchmarks/results/kill-resume.json and kill-resume.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "docs" / "sample" / "harbour-report.md"
QUESTION = "How many days was the Widow's Pier closed after the February storm?"
RESULTS = ROOT / "benchmarks" / "results"


def memread(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "memread", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)


def finished_steps(trace: Path) -> int:
    try:
        return trace.read_bytes().count(b'"type":"step_finished"')
    except OSError:
        return 0


def final(result: dict[str, Any]) -> tuple[str, str]:
    lane = result["lanes"][0]
    return lane["memory"], lane["answer"]


def kill_at(process: subprocess.Popen[str], at: float, started: float) -> bool:
    """SIGKILL ``process`` ``at`` seconds after ``started``; False when it had already exited."""
    while time.monotonic() - started < at:
        if process.poll() is not None:
            break
        time.sleep(0.005)
    if process.poll() is not None:
        process.communicate()
        return False
    process.send_signal(signal.SIGKILL)
    process.communicate()
    return True


def where(trace: Path) -> str:
    """Where the kill landed, from the trace: steps done, mid-step or not, answer written, torn last line."""
    if not trace.exists():
        return "before the trace was created"
    data = trace.read_bytes()
    torn = bool(data) and not data.endswith(b"\n")
    kinds = []
    for line in data.split(b"\n"):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            kinds.append(json.loads(line)["type"])
    label = f"after {kinds.count('step_finished')} step(s)"
    if "answered" in kinds:
        label = "after the answer, before the run ended"
    elif kinds and kinds[-1] == "step_started":
        label += ", mid-step"
    return label + (", torn last line" if torn else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=24, help="kills to try (default 24)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the random kill moments")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--chunk-tokens", default="120")
    parser.add_argument("--strategy", default="overwrite")
    parser.add_argument("--out", type=Path, default=RESULTS / "kill-resume.json")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="memread-kill-"))
    env = {**os.environ, "MEMREAD_HOME": str(work / "home"), "MEMREAD_NO_PROGRESS": "1",
           "MEMREAD_THREADS": os.environ.get("MEMREAD_THREADS", "1")}
    ask = ["ask", str(SAMPLE), QUESTION, "--model", args.model, "--strategy", args.strategy, "--json",
           "--chunk-tokens", args.chunk_tokens, "--memory-tokens", "48", "--final-tokens", "32",
           "--temperature", "0", "--seed", "11", "--threads", env["MEMREAD_THREADS"]]

    reference = work / "reference.jsonl"
    started = time.monotonic()
    whole = memread(*ask, "--trace", str(reference), env=env)
    appeared = None
    while whole.poll() is None:
        if appeared is None and reference.exists():
            appeared = time.monotonic() - started
        time.sleep(0.01)
    out, err = whole.communicate()
    ended = time.monotonic() - started
    if whole.returncode != 0:
        raise SystemExit(f"the uninterrupted run failed ({whole.returncode}):\n{err}")
    expected = final(json.loads(out))
    steps = finished_steps(reference)
    window = (appeared or 0.0, ended)
    print(f"reference: {steps} steps in {ended:.1f} s (trace from {window[0]:.1f} s); answer {expected[1]!r}")

    trials: list[dict[str, Any]] = []
    tried = survived = late = 0
    while tried < args.points and late < 3 * args.points:
        trace = work / f"trial-{tried + late:03d}.jsonl"
        moment = rng.uniform(*window)
        started = time.monotonic()
        if not kill_at(memread(*ask, "--trace", str(trace), env=env), moment, started):
            late += 1  # the run ended first: not a kill
            continue
        tried += 1
        trial: dict[str, Any] = {"kill_at_s": round(moment, 2), "landed": where(trace), "kills": 1}
        if not trace.exists():
            # Killed before the trace existed: nothing was saved, so the user runs the command again.
            rerun = memread(*ask, "--trace", str(trace), env=env)
            out, err = rerun.communicate()
            trial["recovery"] = "ran again (no trace yet)"
        else:
            if tried % 3 == 0:  # kill the resume too, somewhere in what is left
                resumed_at = time.monotonic()
                if kill_at(memread("resume", str(trace), "--json", env=env),
                           rng.uniform(0.0, max(0.5, ended - moment + 1.5)), resumed_at):
                    trial["kills"] = 2
                    trial["landed_2"] = where(trace)
            resume = memread("resume", str(trace), "--json", env=env)
            out, err = resume.communicate()
            trial["recovery"] = "resume"
            if resume.returncode != 0 and "already finished" in err:  # the second kill came too late
                out = json.dumps({"lanes": [_answer_from_trace(trace)]})
                resume.returncode = 0
            trial["exit"] = resume.returncode
        try:
            got = final(json.loads(out))
        except (ValueError, KeyError, IndexError):
            got = ("", "")
            trial["error"] = err.strip().splitlines()[-1:] if err else []
        trial["identical"] = got == expected
        survived += got == expected
        trials.append(trial)
        print(f"kill {tried:2d} at {moment:5.1f} s ({trial['landed']}{'; resume killed too' if trial['kills'] == 2 else ''})"
              f": {'identical' if got == expected else 'DIFFERENT'}", flush=True)

    command = "python benchmarks/bench_kill_resume.py " + " ".join(sys.argv[1:])
    print(f"survived {survived} / tried {tried}")
    summary = {"command": command.strip(), "model": args.model, "strategy": args.strategy,
               "chunk_tokens": int(args.chunk_tokens), "seed": args.seed, "reference_steps": steps,
               "reference_seconds": round(ended, 1), "survived": survived, "tried": tried,
               "ended_before_kill": late, "trials": trials}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    rows = "\n".join(f"| {i + 1} | {t['kill_at_s']} | {t['landed']}{' + resume killed: ' + t['landed_2'] if t.get('landed_2') else ''}"
                     f" | {t['recovery']} | {'yes' if t['identical'] else '**no**'} |" for i, t in enumerate(trials))
    args.out.with_suffix(".md").write_text(
        f"# kill -9 and resume\n\n`{summary['command']}` — {args.model}, {args.strategy}, {steps} steps of "
        f"{args.chunk_tokens} tokens, greedy, seed 11, one thread; the uninterrupted run took {ended:.1f} s.\n\n"
        f"**survived {survived} / tried {tried}** (same final memory and answer as the uninterrupted run; "
        f"{late} draw(s) fell after the run had ended and are not counted).\n\n"
        f"| # | kill at (s) | landed | recovery | identical |\n|---|---|---|---|---|\n{rows}\n")
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")


def _answer_from_trace(trace: Path) -> dict[str, Any]:
    """The final memory and answer a finished trace holds (when a kill came after the run ended)."""
    records = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    memory = [r for r in records if r.get("type") == "step_finished"][-1]["memory"]
    answer = [r for r in records if r.get("type") == "answered"][-1]["answer"]
    return {"memory": memory, "answer": answer}


if __name__ == "__main__":
    main()
