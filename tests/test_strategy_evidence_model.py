"""The evidence strategy end to end on a real model (SmolLM2 through llama.cpp): a log piped on standard input is
kept aside privately (nothing left in TMPDIR, even after kill -9), read in relevance order, and a run killed
mid-way resumes, with the same input piped again, to the uninterrupted run's evidence and answer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]

QUESTION = "Which worker logged the disk error?"


def log_text() -> bytes:
    lines = [f"2026-03-{1 + i // 40:02d} 10:{i % 60:02d} worker-{i % 7} processed batch {i} in {100 + i} ms"
             for i in range(150)]
    lines[111] = "2026-03-03 10:51 worker-5 ERROR disk error on /dev/sdb: read failed, batch 111 retried"
    return ("\n".join(lines) + "\n").encode()


def memread(*args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "memread", *args], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_stdin_is_read_in_relevance_order_and_a_killed_run_resumes_to_the_same_answer(
        smollm2_path: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "MEMREAD_HOME": str(tmp_path / "home"), "MEMREAD_NO_PROGRESS": "1", "TMPDIR": str(scratch)}
    ask = ["ask", "-", QUESTION, "--strategy", "evidence", "--model", str(smollm2_path), "--json",
           "--chunk-tokens", "300", "--final-tokens", "24", "--threads", "1", "-o", "passages=2", "-o", "rounds=1", "-o", "max_read=0.5"]
    data = log_text()

    reference = tmp_path / "reference.jsonl"
    whole = memread(*ask, "--trace", str(reference), env=env)
    out, err = whole.communicate(data, timeout=900)
    assert whole.returncode == 0, err.decode()
    result = json.loads(out)
    lane = result["lanes"][0]
    steps = [json.loads(line) for line in reference.read_text().splitlines() if '"step_started"' in line]
    chunks = {step["chunk"]["index"] for step in steps}
    first = steps[0]["chunk"]
    assert first["sha256"] and int(first["index"]) > 0  # the best match, not the start of the log
    assert "disk error" in first["text"]
    assert result["stats"]["chunks_read"] <= 8 and len(chunks) <= 8  # at most half of the 16 chunks
    for citation in lane["citations"]:  # the evidence's own lines
        assert citation["where"].startswith("stdin line ")
    assert list(scratch.iterdir()) == []

    trace = tmp_path / "killed.jsonl"
    victim = memread(*ask, "--trace", str(trace), env=env)
    assert victim.stdin is not None
    victim.stdin.write(data)
    victim.stdin.close()
    victim.stdin = None  # written and closed: communicate() has nothing more to send
    while victim.poll() is None and not (trace.exists() and b'"type":"step_finished"' in trace.read_bytes()):
        time.sleep(0.005)
    if victim.poll() is None:
        victim.send_signal(signal.SIGKILL)
    victim.communicate()
    assert list(scratch.iterdir()) == []  # the private spool was unlinked when it was opened
    resumed = memread("resume", str(trace), "--json", env=env)
    out, err = resumed.communicate(data, timeout=900)
    assert resumed.returncode == 0, err.decode()
    again = json.loads(out)["lanes"][0]
    assert (again["memory"], again["answer"]) == (lane["memory"], lane["answer"])
