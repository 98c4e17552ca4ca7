"""kill -9 a real run at random points, resume it, and check it ends where an uninterrupted run ends.

One uninterrupted ``memread ask`` (SmolLM2, greedy, fixed seed, one thread) gives the reference final memory
and answer, its number of steps S and its mean step time. Each trial starts the same command again and sends
SIGKILL at a random point of the run: a step k drawn from 0..S (S = the final answer) and a random fraction
of a step's time after the trace records step k-1 (k = 0: after the trace appears), so kills land while the
model loads, inside a step, right after a record is written, during the answer — wherever the machine's load
puts the timing. ``memread resume TRACE --json`` must then reach the same final memory and answer. Every third
trial also kills the first resume at a random point and resumes again. A kill that comes after the run
already ended is not counted as tried. ``--uniform-time`` draws moments uniformly over the reference run's
wall time instead.

    python -m benchmarks.robustness.bench_kill_resume                 # 24 kill points, seed 7
    python -m benchmarks.robustness.bench_kill_resume --points 40 --seed 1 --chunk-tokens 80
    python -m benchmarks.robustness.bench_kill_resume --questions 3 --layout chunk-first   # lanes sharing each chunk

Prints ``survived N / tried M`` and writes benchmarks/results/kill-resume.json and kill-resume.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._helpers import RESULTS, ROOT

SAMPLE = ROOT / "docs" / "sample" / "harbour-report.md"
QUESTIONS = ("How many days was the Widow's Pier closed after the February storm?",
             "How deep was the approach channel dredged?", "How many times was the lifeboat called out?")


def memread(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "memread", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)


def finished_steps(trace: Path) -> int:
    try:
        return trace.read_bytes().count(b'"type":"step_finished"')
    except OSError:
        return 0


def final(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(lane["memory"], lane["answer"]) for lane in result["lanes"]]


def kill_when(process: subprocess.Popen[str], trace: Path, *, after_steps: int | None, delay: float) -> bool:
    """SIGKILL ``process`` ``delay`` seconds after ``trace`` holds ``after_steps`` more finished steps than
    when this was called (None: ``delay`` seconds after the trace exists). False when it had already exited."""
    baseline = finished_steps(trace)
    while process.poll() is None:
        if after_steps is None and trace.exists():
            break
        if after_steps is not None and finished_steps(trace) >= baseline + after_steps:
            break
        time.sleep(0.002)
    until = time.monotonic() + delay
    while process.poll() is None and time.monotonic() < until:
        time.sleep(0.002)
    return _kill(process)


def kill_at(process: subprocess.Popen[str], at: float) -> bool:
    """SIGKILL ``process`` ``at`` seconds after now (--uniform-time); False when it had already exited."""
    started = time.monotonic()
    while time.monotonic() - started < at and process.poll() is None:
        time.sleep(0.002)
    return _kill(process)


def _kill(process: subprocess.Popen[str]) -> bool:
    """SIGKILL ``process`` now; False when it had already exited."""
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
    elif kinds and kinds[-1] in ("header", "resumed"):
        label += ", before the next step started"
    elif kinds and kinds[-1] == "step_finished":
        label += ", between steps"
    return label + (", torn last line" if torn else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=24, help="kills to try (default 24)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the random kill points")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--chunk-tokens", default="120")
    parser.add_argument("--strategy", default="overwrite")
    parser.add_argument("--questions", type=int, default=1, choices=range(1, len(QUESTIONS) + 1),
                        help="questions read in one run (lanes); every lane must end identical")
    parser.add_argument("--layout", default="question-first", help="question-first | chunk-first")
    parser.add_argument("--uniform-time", action="store_true", help="kill at moments uniform in wall time")
    parser.add_argument("--out", type=Path, default=RESULTS / "kill-resume.json")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (traces of every trial)")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="memread-kill-"))
    from memread import paths

    # A fresh home for traces, the usual model cache (so the model is not pulled again into the work folder).
    env = {**os.environ, "MEMREAD_HOME": str(work / "home"), "MEMREAD_MODELS_DIR": str(paths.models_dir()),
           "MEMREAD_NO_PROGRESS": "1", "MEMREAD_THREADS": os.environ.get("MEMREAD_THREADS", "1")}
    questions = [flag for question in QUESTIONS[: args.questions] for flag in ("-q", question)]
    ask = ["ask", str(SAMPLE), *questions, "--layout", args.layout, "--model", args.model,
           "--strategy", args.strategy, "--json", "--chunk-tokens", args.chunk_tokens, "--memory-tokens", "48", "--final-tokens", "32",
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
    step_seconds = (ended - (appeared or 0.0)) / (steps + 1)
    print(f"reference: {steps} steps in {ended:.1f} s ({step_seconds:.2f} s per step); answers "
          f"{[answer for _, answer in expected]!r}")

    def kill_somewhere(process: subprocess.Popen[str], trace: Path, remaining: int) -> tuple[bool, str]:
        if args.uniform_time:
            moment = rng.uniform(appeared or 0.0, ended)
            return kill_at(process, moment), f"{moment:.2f} s"
        k = rng.randint(0, remaining)
        fraction = rng.random()
        point = f"step {k} + {fraction:.2f}" if k else f"trace + {fraction:.2f}"
        return kill_when(process, trace, after_steps=k or None, delay=fraction * step_seconds), point

    trials: list[dict[str, Any]] = []
    tried = survived = late = 0
    while tried < args.points and late < 3 * args.points:
        trace = work / f"trial-{tried + late:03d}.jsonl"
        killed, point = kill_somewhere(memread(*ask, "--trace", str(trace), env=env), trace, steps)
        if not killed or (trace.exists() and b'"type":"run_finished"' in trace.read_bytes()):
            late += 1  # the run ended first (or wrote its last record and was exiting): not a kill
            continue
        tried += 1
        trial: dict[str, Any] = {"kill_point": point, "landed": where(trace), "kills": 1}
        if not trace.exists():
            # Killed before the trace existed: nothing was saved, so the user runs the command again.
            rerun = memread(*ask, "--trace", str(trace), env=env)
            out, err = rerun.communicate()
            trial["recovery"] = "ran again (no trace yet)"
        else:
            if tried % 3 == 0:  # kill the resume too, somewhere in what is left
                left = max(0, steps - finished_steps(trace))
                killed_again, point_2 = kill_somewhere(memread("resume", str(trace), "--json", env=env), trace, left)
                if killed_again:
                    trial.update(kills=2, kill_point_2=point_2, landed_2=where(trace))
            resume = memread("resume", str(trace), "--json", env=env)
            out, err = resume.communicate()
            trial["recovery"] = "resume"
            if resume.returncode != 0 and "already finished" in err:  # the second kill came too late
                out = json.dumps({"lanes": _answers_from_trace(trace)})
                resume.returncode = 0
            trial["exit"] = resume.returncode
        try:
            got = final(json.loads(out))
        except (ValueError, KeyError, IndexError):
            got = []
            trial["error"] = err.strip().splitlines()[-1:] if err else []
        trial["identical"] = got == expected
        survived += got == expected
        trials.append(trial)
        print(f"kill {tried:2d} at {point} ({trial['landed']}"
              f"{'; resume killed too, ' + trial['landed_2'] if trial['kills'] == 2 else ''})"
              f": {'identical' if got == expected else 'DIFFERENT'}", flush=True)

    command = ("python -m benchmarks.robustness.bench_kill_resume " + " ".join(sys.argv[1:])).strip()
    print(f"survived {survived} / tried {tried}")
    summary = {"command": command, "model": args.model, "strategy": args.strategy, "questions": args.questions,
               "layout": args.layout,
               "chunk_tokens": int(args.chunk_tokens), "seed": args.seed, "reference_steps": steps,
               "reference_seconds": round(ended, 1), "survived": survived, "tried": tried,
               "ended_before_kill": late, "trials": trials}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    rows = "\n".join(
        f"| {i + 1} | {t['kill_point']} | {t['landed']}"
        f"{' — resume killed at ' + t['kill_point_2'] + ': ' + t['landed_2'] if t.get('landed_2') else ''}"
        f" | {t['recovery']} | {'yes' if t['identical'] else '**no**'} |" for i, t in enumerate(trials))
    how = ("moments uniform over the reference run's wall time" if args.uniform_time else
           "a random step k of 0..S and a random fraction of a step's time after the trace records step k "
           "(step 0: after the trace appears)")
    args.out.with_suffix(".md").write_text(
        f"# kill -9 and resume\n\n`{command}` — {args.model}, {args.strategy}, {args.questions} question(s), "
        f"{args.layout}, S = {steps} finished steps (one per question and chunk of "
        f"{args.chunk_tokens} tokens), greedy, seed 11, one thread; the uninterrupted run took {ended:.1f} s. "
        f"Kill points: {how}.\n\n"
        f"**survived {survived} / tried {tried}** (same final memory and answer for every question as the "
        f"uninterrupted run; "
        f"{late} draw(s) fell after the run had ended and are not counted).\n\n"
        f"| # | kill point | landed | recovery | identical |\n|---|---|---|---|---|\n{rows}\n")
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    if args.keep:
        print(f"traces kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


def _answers_from_trace(trace: Path) -> list[dict[str, Any]]:
    """The final memory and answer of every lane a finished trace holds (when a kill came after the run ended)."""
    records = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    memories = {r["lane"]: r["memory"] for r in records if r.get("type") == "step_finished"}
    answers = {r["lane"]: r["answer"] for r in records if r.get("type") == "answered"}
    return [{"memory": memories[lane], "answer": answers[lane]} for lane in sorted(answers)]


if __name__ == "__main__":
    main()
