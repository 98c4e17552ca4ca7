"""kill -9 mid-run of a real ``memread ask``, then ``memread resume``: each resumed run keeps the killed run's id
and ends with the uninterrupted run's memory and answer (SmolLM2, greedy, fixed seed). The suite kills once after
step 2 and at two seeded random moments; benchmarks/robustness/bench_kill_resume.py tries 24 and more
(benchmarks/results/kill-resume.md)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "docs" / "sample" / "harbour-report.md"
QUESTION = "How many days was the Widow's Pier closed after the February storm?"

pytestmark = [pytest.mark.model, pytest.mark.slow]


def memread(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "memread", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def final(out: str) -> tuple[str, str]:
    lane = json.loads(out)["lanes"][0]
    return lane["memory"], lane["answer"]


def test_kill_9_at_random_moments_then_resume_reaches_the_uninterrupted_result(
        smollm2_path: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MEMREAD_HOME": str(tmp_path / "home"), "MEMREAD_NO_PROGRESS": "1"}
    text = SAMPLE.read_text()
    document = tmp_path / "report.md"
    document.write_text(text[: text.index("\n\n", 1800)])  # the first half: four chunks, a few seconds
    ask = ["ask", str(document), QUESTION, "--model", str(smollm2_path), "--json", "--chunk-tokens", "160",
           "--memory-tokens", "24", "--final-tokens", "16", "--temperature", "0", "--seed", "11", "--threads", "1"]

    reference = tmp_path / "reference.jsonl"
    started = time.monotonic()
    whole = memread(*ask, "--trace", str(reference), env=env)
    appeared: float | None = None
    while whole.poll() is None:
        if appeared is None and reference.exists():
            appeared = time.monotonic() - started
        time.sleep(0.01)
    out, err = whole.communicate()
    ended = time.monotonic() - started
    assert whole.returncode == 0, err
    assert json.loads(out)["stats"]["chunks_read"] >= 4
    expected = final(out)

    steps = reference.read_bytes().count(b'"type":"step_finished"')
    step_seconds = (ended - (appeared or 0.0)) / (steps + 1)

    # Once two steps are on disk (mid-run, the memory not yet final), then two seeded random points: after step
    # k of 0..S (S: during the final answer; 0: once the trace exists) plus a random fraction of a step's time,
    # so the kills land at the same places on a busy machine.
    rng = random.Random(20261123)
    points = [(2, 0.0)] + [(rng.randint(0, steps), rng.random()) for _ in range(6)]
    outcomes: list[dict[str, Any]] = []
    for attempt, (k, fraction) in enumerate(points):
        if len(outcomes) == 3:
            break
        trace = tmp_path / f"killed-{attempt}.jsonl"
        victim = memread(*ask, "--trace", str(trace), env=env)
        while victim.poll() is None and not (trace.exists() and done(trace) >= k):
            time.sleep(0.002)
        time.sleep(fraction * step_seconds)
        if victim.poll() is not None:  # it finished first on this draw: not a kill
            victim.communicate()
            continue
        victim.send_signal(signal.SIGKILL)
        victim.communicate()
        if b'"type":"run_finished"' in trace.read_bytes():  # the kill landed after its last record: not a kill
            continue
        before = done(trace)
        resumed = memread("resume", str(trace), "--json", env=env)
        out, err = resumed.communicate(timeout=600)
        assert resumed.returncode == 0, err
        run_id = json.loads(trace.read_bytes().split(b"\n", 1)[0])["run_id"]
        outcomes.append({"point": (k, round(fraction, 2)), "steps_before": before, "same": final(out) == expected,
                         "same_run": json.loads(out)["run_id"] == run_id})
    assert len(outcomes) == 3 and outcomes[0]["point"] == (2, 0.0) and outcomes[0]["steps_before"] >= 2, outcomes
    assert all(o["same"] and o["same_run"] for o in outcomes), outcomes


def done(trace: Path) -> int:
    return trace.read_bytes().count(b'"type":"step_finished"')
