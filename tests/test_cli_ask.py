"""`memread ask` and `memread resume` end to end, on the real SmolLM2 model through llama.cpp.

Settings are small (the first half of the sample report in two chunks, short memories, greedy decoding, one
thread) so each read takes seconds.
SmolLM2 answers badly; these tests check what memread promises whatever the model says: an answer on
stdout, progress on stderr, a trace, the --json shape, exit codes, and that an interrupted run says how to
resume (kill -9 then resume: tests/test_faults_kill.py).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_runner import run_memread

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "docs" / "sample" / "harbour-report.md"
QUESTION = "How many days was the Widow's Pier closed after the February storm?"
SMALL = ["--chunk-tokens", "300", "--memory-tokens", "48", "--final-tokens", "32", "--temperature", "0",
         "--threads", "1"]

# In-process runs share one loaded SmolLM2 (the interruption tests below run real processes).
pytestmark = [pytest.mark.model, pytest.mark.usefixtures("reuse_loaded_models")]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first half of the sample report (up to the Widow's Pier closure, 476 tokens): two chunks of 300."""
    path = tmp_path_factory.mktemp("sample") / "harbour-report.md"
    text = SAMPLE.read_text()
    path.write_text(text[: text.index("\n\n", 1800)])
    return path


def run_cli(args: list[str], *, stdin: bytes = b"") -> tuple[int, str, str]:
    return run_memread(*args, stdin=stdin)


@pytest.mark.parametrize("strategy", ["overwrite", "gated", "callback"])
def test_each_strategy_answers_with_a_trace_and_the_documented_json(strategy: str, smollm2_path: Path,
                                                                    sample: Path) -> None:
    import jsonschema

    from memread.report import RESULT_SCHEMA

    # callback's replies are bounded by --reply-tokens (ReMemR1's 2,048 by default), not by --memory-tokens
    bounded = ["--reply-tokens", "48"] if strategy == "callback" else []
    code, out, err = run_cli(["ask", str(sample), QUESTION, "--model", str(smollm2_path), "--strategy", strategy,
                              "--json", *SMALL, *bounded])
    assert code == 0, err
    result = json.loads(out)
    jsonschema.validate(result, RESULT_SCHEMA)
    assert result["status"] == "ok"
    assert result["strategy"] == strategy
    assert isinstance(result["answer"], str)
    assert result["stats"]["chunks_read"] >= 1
    assert result["stats"]["model_seconds"] <= result["stats"]["wall_seconds"]
    trace = Path(result["trace"])
    assert trace.is_file()
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600
    types = [json.loads(line)["type"] for line in trace.read_text().splitlines()]
    assert types[0] == "header" and types[-1] == "run_finished"
    assert "answered" in types and "step_finished" in types


def test_the_answer_alone_goes_to_stdout_and_progress_to_stderr(smollm2_path: Path, sample: Path) -> None:
    code, out, err = run_cli(["ask", str(sample), QUESTION, "--model", str(smollm2_path), *SMALL])
    assert code == 0, err
    assert out.strip() and out.endswith("\n")
    assert "reading" not in out and "chunks" not in out  # nothing but the answer on stdout
    assert "chunks" in err  # the closing stats line
    assert "\x1b[" not in err  # no terminal control codes off a terminal


def test_several_questions_are_answered_in_one_pass(smollm2_path: Path, sample: Path) -> None:
    code, out, err = run_cli(["ask", str(sample), "-q", QUESTION, "-q", "Who is the harbour master?",
                              "--model", str(smollm2_path), "--json", *SMALL])
    assert code == 0, err
    result = json.loads(out)
    assert [lane["question"] for lane in result["lanes"]] == [QUESTION, "Who is the harbour master?"]
    assert result["lanes"][0]["chunks_read"] == result["lanes"][1]["chunks_read"] == result["stats"]["chunks_read"]


def test_a_log_piped_through_stdin_is_read(smollm2_path: Path) -> None:
    # 16 lines of 23 tokens and the error line: two chunks of 300
    log = "".join(f"2026-11-0{1 + i % 9} 10:{i % 60:02d} disk usage {50 + i % 40}%\n" for i in range(16))
    log += "2026-11-09 11:00 ERROR disk full on /var\n"
    code, out, err = run_cli(["ask", "-", "When did the disk fill up?", "--model", str(smollm2_path), "--json",
                              *SMALL], stdin=log.encode())
    assert code == 0, err
    result = json.loads(out)
    assert result["document"] == "-"
    assert result["stats"]["chunks_read"] >= 2


def test_bad_input_gets_one_line_a_hint_and_its_exit_status(smollm2_path: Path, tmp_path: Path) -> None:
    code, _, err = run_cli(["ask", str(tmp_path / "missing.pdf"), QUESTION, "--model", str(smollm2_path)])
    assert code == 3 and err.startswith("error: ") and "\nhint: " in err and "Traceback" not in err

    code, _, err = run_cli(["ask", str(SAMPLE), "--model", str(smollm2_path)])
    assert code == 2 and "no question" in err

    code, _, err = run_cli(["ask", str(SAMPLE), QUESTION, "--strategy", "psychic", "--model", str(smollm2_path)])
    assert code == 2 and "--strategy" in err

    code, _, err = run_cli(["ask", str(SAMPLE), QUESTION, "--model", str(smollm2_path), "--n-ctx", "512",
                            "--chunk-tokens", "2000"])
    assert code == 5 and "context" in err and "hint: " in err

    code, _, err = run_cli(["ask", str(SAMPLE), QUESTION, "--model", "no-such-model"])
    assert code in (2, 4) and "hint: " in err


# --- interruption and resume (real processes) ---------------------------------------------------------------


def _cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    # A job started in the background inherits SIGINT ignored, and Python then never raises
    # KeyboardInterrupt: give the child the default disposition, as an interactive shell would.
    return subprocess.Popen([sys.executable, "-m", "memread", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _steps_in(trace: Path) -> int:
    if not trace.exists():
        return 0
    return sum(1 for line in trace.read_text(errors="replace").splitlines() if '"type":"step_finished"' in line)


@pytest.fixture
def child_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["MEMREAD_HOME"] = str(tmp_path / "home")
    env["MEMREAD_NO_PROGRESS"] = "1"
    return env


# kill -9 mid-run, then `memread resume` to the uninterrupted result: tests/test_faults_kill.py (after step 2,
# then at two seeded random moments, all against one uninterrupted run of the same document).


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "kill"])
def test_ctrl_c_or_kill_exits_130_and_says_how_to_resume(
    stop: signal.Signals, smollm2_path: Path, sample: Path, tmp_path: Path, child_env: dict[str, str]
) -> None:
    trace = tmp_path / "interrupted.jsonl"
    run = _cli("ask", str(sample), QUESTION, "--model", str(smollm2_path), *SMALL, "--chunk-tokens", "200",
               "--trace", str(trace), env=child_env)
    deadline = time.time() + 600
    while _steps_in(trace) < 1 and run.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    run.send_signal(stop)  # kill PID: SIGTERM, the only polite stop for a background job (SIGINT ignored)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    assert "memread resume" in err and "Traceback" not in err
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert lines[-1]["type"] == "run_finished" and lines[-1]["status"] == "interrupted"
