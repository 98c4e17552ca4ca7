"""Resuming a run whose trace holds records with fields left null: the document's own warnings (invalid UTF-8, a
scanned page, a skipped file: no step, no lane), a lane's warning at the answer (no step), a session stopped
before its first step. ``memread resume`` continues each read to the result of the uninterrupted run.

A scripted backend answers from a hash of each prompt, so a resumed lane that restarted from the wrong state, or
a step read twice, shows in the memories and the answer. The model test at the end does the same with SmolLM2
and kill -9."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import synthetic_run
from cli_runner import run_memread

from memread.backends.base import ChatRequest
from memread.events import Warned
from memread.traces import TraceWriter, read_trace

QUESTION = "Who repaired the lamp?"
# A log with one line of Latin-1 in it: reading it warns "not valid UTF-8" (a warning with no step and no lane).
NOTES = b"".join(b"Day %d: %s.\n\n" % (day, b"Ada Quist repaired the lamp" if day == 5 else
                                        b"the caf\xe9 on the quay was shut" if day == 3 else b"the harbour was calm")
                 for day in range(1, 25))


class Script:
    """The scripted model: a step's reply (the new memory) and the final answer are hashes of the prompt; the
    ``stop_at``-th call raises KeyboardInterrupt, as Ctrl-C in the middle of a model call. ``forgetful``: every
    step's reply is empty, so the memory keeps nothing and the loop warns at the answer."""

    def __init__(self) -> None:
        self.calls = 0
        self.stop_at: int | None = None
        self.forgetful = False

    def __call__(self, request: ChatRequest) -> str:
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        prompt = request.messages[-1].content
        digest = hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        if "<section>" in prompt:
            return "" if self.forgetful else f"noted {digest}"
        return f"\\boxed{{{digest}}}"


@pytest.fixture()
def script() -> Iterator[Script]:
    from memread.backends import register_backend
    from memread.backends.fake import FakeBackend
    from memread.testing import isolated_registries

    script = Script()
    with isolated_registries():
        # The trace records the backend's name, and `memread resume` creates it again by that name.
        register_backend("fake", lambda model=None, **options: FakeBackend(script, model="scripted-model"))
        yield script


def ask(document: Path, trace: Path) -> tuple[int, str, str]:
    return run_memread("ask", str(document), QUESTION, "--backend", "fake", "-s", "overwrite", "--chunk-tokens",
                       "240", "--memory-tokens", "40", "--json", "--trace", str(trace))


def memories(trace: Path) -> list[str]:
    return [step.memory for step in read_trace(trace).steps(0)]


def warned(trace: Path) -> list[dict[str, Any]]:
    return [r for r in read_trace(trace).records if r["type"] == "warned"]


def write(events: list[Any], path: Path) -> Path:
    writer = TraceWriter(path)
    for event in events:
        writer(event)
    writer.close()
    return path


@pytest.mark.parametrize("stop", ["at-the-first-step", "mid-read", "at-the-answer"])
def test_a_run_whose_document_warned_resumes_after_ctrl_c_to_the_uninterrupted_result(
        stop: str, script: Script, tmp_path: Path) -> None:
    document = tmp_path / "harbour.log"
    document.write_bytes(NOTES)
    code, out, err = ask(document, tmp_path / "straight.jsonl")
    assert code == 0, err
    straight = json.loads(out)
    steps = len(memories(tmp_path / "straight.jsonl"))
    assert steps >= 4
    assert [w["message"] for w in straight["warnings"]] == [f"{document}: not valid UTF-8; undecodable bytes "
                                                           "were replaced by U+FFFD"]

    script.calls, script.stop_at = 0, {"at-the-first-step": 1, "mid-read": 3, "at-the-answer": steps + 1}[stop]
    trace = tmp_path / "cut.jsonl"
    code, _, err = ask(document, trace)
    assert code == 130 and "memread resume" in err, err
    assert [(w["lane"], w["step"]) for w in warned(trace)] == [(None, None)]  # what the reader choked on

    script.stop_at = None
    code, out, err = run_memread("resume", str(trace), "--json")
    assert code == 0, err
    assert "Traceback" not in err
    resumed = json.loads(out)
    assert resumed["status"] == "ok" and resumed["run_id"] == read_trace(trace).run_id != straight["run_id"]
    assert [(lane["memory"], lane["answer"]) for lane in resumed["lanes"]] == \
        [(lane["memory"], lane["answer"]) for lane in straight["lanes"]]
    assert memories(trace) == memories(tmp_path / "straight.jsonl")
    # The resumed session read the document again and met the same bad bytes: the run warns of them once.
    assert resumed["warnings"] == straight["warnings"]
    assert len(warned(trace)) == 1
    assert read_trace(trace).status() == "ok"


def test_a_lane_that_kept_nothing_warns_at_the_answer_and_resumes_from_there(script: Script, tmp_path: Path) -> None:
    document = tmp_path / "harbour.log"
    document.write_text(NOTES.decode("latin-1").replace("\xe9", "e"))  # valid UTF-8: the loop's warning alone
    script.forgetful = True
    code, out, err = ask(document, tmp_path / "straight.jsonl")
    assert code == 0, err
    straight = json.loads(out)
    steps = len(memories(tmp_path / "straight.jsonl"))

    script.calls, script.stop_at = 0, steps + 1  # Ctrl-C during the final answer, after the warning
    trace = tmp_path / "cut.jsonl"
    assert ask(document, trace)[0] == 130
    assert [(w["lane"], w["step"]) for w in warned(trace)] == [(0, None)]

    script.stop_at = None
    code, out, err = run_memread("resume", str(trace), "--json")
    assert code == 0, err
    resumed = json.loads(out)
    assert resumed["lanes"][0]["answer"] == straight["lanes"][0]["answer"]
    assert read_trace(trace).resume_point().start_step == steps  # nothing was read again


def test_warnings_of_every_shape_leave_the_resume_point_where_it_was(tmp_path: Path) -> None:
    events = synthetic_run.events(stop_after_step=2, finish=False)
    plain = read_trace(write(events, tmp_path / "plain.jsonl")).resume_point()
    shapes = [Warned("report.pdf: page 2 has no text layer (a scanned page?)"),
              Warned("question 1: nothing from the document made it into the memory", lane=0),
              Warned("the text contains chat-template control strings", step=1),
              Warned("question 2: the reply hit the limit", lane=1, step=1)]
    warned_run = [events[0], *shapes[:1], *events[1:4], *shapes[1:], *events[4:]]
    point = read_trace(write(warned_run, tmp_path / "warned.jsonl")).resume_point()
    assert point == plain and point.start_step == 3


def test_a_record_without_a_field_its_event_needs_is_skipped_like_a_torn_line(tmp_path: Path) -> None:
    path = write(synthetic_run.events(stop_after_step=2, finish=False), tmp_path / "cut.jsonl")
    with open(path, "a", encoding="utf-8") as handle:  # as a hand or another program might write them
        handle.write('{"type":"lane_exited","t":1,"lane":1}\n{"type":"run_finished","t":2}\n')
    trace = read_trace(path)
    assert trace.torn_lines == 2
    assert trace.status() == "interrupted" and trace.resume_point().start_step == 3
    code, out, err = run_memread("traces", "show", str(path), "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "interrupted"


def test_a_header_without_a_field_of_the_run_is_refused_in_one_line(tmp_path: Path) -> None:
    path = write(synthetic_run.events(), tmp_path / "run.jsonl")
    header, rest = path.read_text(encoding="utf-8").split("\n", 1)
    path.write_text(json.dumps({k: v for k, v in json.loads(header).items() if k != "strategy"}) + "\n" + rest,
                    encoding="utf-8")
    code, _, err = run_memread("traces", "show", str(path))
    assert code != 0 and "Traceback" not in err
    assert err.startswith(f"error: {path} is not a memread trace (its header has no strategy)"), err


# --- kill -9, with a real model ---------------------------------------------------------------------------


def _memread(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "memread", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _steps_in(trace: Path) -> int:
    return trace.read_bytes().count(b'"type":"step_finished"') if trace.exists() else 0


@pytest.mark.model
@pytest.mark.slow
def test_kill_9_mid_read_of_a_document_that_warned_then_memread_resume_finishes_it(
        smollm2_path: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MEMREAD_HOME": str(tmp_path / "home"), "MEMREAD_NO_PROGRESS": "1",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    document = tmp_path / "harbour.log"
    document.write_bytes(NOTES)
    args = ["ask", str(document), QUESTION, "--model", str(smollm2_path), "--json", "--chunk-tokens", "80",
            "--memory-tokens", "24", "--final-tokens", "16", "--temperature", "0", "--seed", "11", "--threads", "1"]
    whole = _memread(*args, "--trace", str(tmp_path / "whole.jsonl"), env=env)
    out, err = whole.communicate(timeout=600)
    assert whole.returncode == 0, err
    expected = json.loads(out)
    assert expected["stats"]["chunks_read"] >= 4
    assert [w["step"] for w in expected["warnings"] if "not valid UTF-8" in w["message"]] == [None]

    trace = tmp_path / "killed.jsonl"
    victim = _memread(*args, "--trace", str(trace), env=env)
    deadline = time.monotonic() + 600
    while _steps_in(trace) < 2 and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert victim.poll() is None, "the run ended before it could be killed"
    victim.send_signal(signal.SIGKILL)
    victim.communicate()
    assert (None, None) in [(w["lane"], w["step"]) for w in warned(trace)]  # and SmolLM2's cut replies, by step

    resumed = _memread("resume", str(trace), "--json", env=env)
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "ok" and result["warnings"] == expected["warnings"]
    assert [(lane["memory"], lane["answer"]) for lane in result["lanes"]] == \
        [(lane["memory"], lane["answer"]) for lane in expected["lanes"]]
    assert memories(trace) == memories(tmp_path / "whole.jsonl")
