"""Runs survive what the machine does to them: a full disk, a read-only folder, an engine or server that dies
mid-run. Each stops with one line, a hint and its documented exit status, keeps the trace readable up to the
last step, and ``memread resume`` finishes the run once the cause is gone. Real SmolLM2 runs throughout.

What is simulated, honestly:

* disk full: a real tmpfs of a few pages, mounted for the test (needs root: skipped otherwise), plus a unit
  test where the trace's file descriptor is swapped for /dev/full after the header (a real ENOSPC from the
  kernel, on any machine);
* read-only: the same tmpfs remounted read-only (a real EROFS; as root, chmod would not stop a write);
* a server that dies: a real ``python -m llama_cpp.server`` killed with SIGKILL after the first step, and
  started again on the same port;
* a llama.cpp failure: llama-cpp-python's ``Llama.generate`` made to raise mid-run (llama.cpp does not fail
  on demand).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_memread
from fakes import http_servers
from fakes.http_servers import LlamaServer

from memread.backends.fake import FakeBackend
from memread.document import Chunk, Span
from memread.errors import BackendError, TraceError
from memread.events import Event, RunFinished, StepFinished
from memread.loop import Loop, LoopSettings
from memread.traces import TraceWriter, read_trace

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "docs" / "sample" / "harbour-report.md"
QUESTION = "How many days was the Widow's Pier closed after the February storm?"
SMALL = ["--strategy", "overwrite", "--chunk-tokens", "200", "--memory-tokens", "32", "--final-tokens", "24",
         "--temperature", "0", "--threads", "1"]


@pytest.fixture()
def short_report(tmp_path: Path) -> Path:
    """The first half of the sample report: four chunks of 160 tokens, a few seconds of SmolLM2."""
    text = SAMPLE.read_text()
    path = tmp_path / "report.md"
    path.write_text(text[: text.index("\n\n", 1800)])
    return path


SHORT = ["--strategy", "overwrite", "--chunk-tokens", "160", "--memory-tokens", "24", "--final-tokens", "16",
         "--temperature", "0", "--threads", "1"]


def one_error(err: str) -> str:
    """The error line, after checking the shape every error has: one line, a blank line, a hint."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    assert "\nhint: " in err, err
    return lines[0]


def records(trace: Path) -> list[dict[str, Any]]:
    return list(read_trace(trace).records)


def chunks_in(trace: Path) -> int:
    return len({r["step"] for r in read_trace(trace).effective_records() if r["type"] == "step_finished"})


# --- disk full and read-only, on a real file system ------------------------------------------------------------


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real tmpfs of 64 KiB at tmp_path/disk, unmounted afterwards (skipped without mount rights)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.model
@pytest.mark.usefixtures("reuse_loaded_models")
def test_a_full_disk_then_a_read_only_one_stop_the_run_cleanly_and_resume_finishes_it(
        small_disk: Path, smollm2_path: Path) -> None:
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * 44 * 1024)  # leaves ~20 KiB: the header and a few steps, not the whole run
    trace = small_disk / "run.jsonl"
    ask = ["ask", str(SAMPLE), QUESTION, "--model", str(smollm2_path), *SMALL]

    code, out, err = run_memread(*ask, "--trace", str(trace))
    assert code == 1, err
    line = one_error(err)
    assert "cannot write the trace" in line and "No space left on device" in line
    run_id = json.loads(trace.read_bytes().split(b"\n", 1)[0])["run_id"]
    assert f"memread resume {run_id}" in err and "free some disk space" in err
    assert out == ""
    written = chunks_in(trace)
    assert written >= 1  # the steps before the disk filled are kept…
    code, shown, err = run_memread("traces", "show", str(trace), "--json")
    assert code == 0, err  # …and readable (a line cut by the full disk is skipped)
    assert json.loads(shown)["status"] != "ok"

    # The space comes back, but the file system is now read-only (as after an error remount).
    filler.unlink()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    before = trace.read_bytes()
    code, _, err = run_memread("resume", str(trace))
    assert code == 1, err
    assert "Read-only file system" in one_error(err) and "not writable" in err
    assert trace.read_bytes() == before  # nothing lost, nothing half-written
    code, _, err = run_memread(*ask, "--trace", str(small_disk / "new.jsonl"))
    assert code == 1 and "Read-only file system" in one_error(err) and "run the command again" in err

    subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    code, out, err = run_memread("resume", str(trace), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "ok" and result["run_id"] == run_id
    assert chunks_in(trace) == result["stats"]["chunks_read"] > written


def _pages(n: int) -> list[Chunk]:
    return [Chunk(i, f"Page {i}: the tide was {i} metres.", 30, (Span("tides.txt", page_first=i + 1),))
            for i in range(n)]


def test_enospc_from_the_kernel_mid_run_keeps_every_completed_step(tmp_path: Path) -> None:
    # Portable stand-in for a full disk: after two steps the trace's file descriptor is pointed at /dev/full,
    # whose every write fails with ENOSPC (the file on disk keeps what was written before).
    trace = tmp_path / "run.jsonl"
    writer = TraceWriter(trace)
    events: list[Event] = []

    def fill_the_disk(event: Event) -> None:
        events.append(event)
        if isinstance(event, StepFinished) and event.step == 1 and writer._fd is not None:
            full = os.open("/dev/full", os.O_WRONLY)
            os.dup2(full, writer._fd)
            os.close(full)

    backend = FakeBackend(lambda request: "the tide rose" if "<section>" in request.messages[-1].content
                          else "\\boxed{4}")
    loop = Loop(backend, ["How high was the tide?"], LoopSettings(strategy="overwrite", chunk_tokens=100, memory_tokens=20),
                sinks=[writer, fill_the_disk])
    with pytest.raises(TraceError) as raised:
        loop.run(_pages(5))
    writer.close()
    assert "No space left on device" in raised.value.message and "memread resume" in (raised.value.hint or "")
    assert isinstance(events[-1], RunFinished) and events[-1].status == "failed"
    kept = read_trace(trace)
    assert [s.step for s in kept.steps()] == [0, 1]  # step 1 was written before the disk "filled"
    assert kept.resume_point().start_step == 2


# --- the engine fails mid-run ---------------------------------------------------------------------------------


@pytest.mark.model  # its own backend: the one that fails mid-reply is not handed to another test
def test_a_llama_cpp_failure_mid_run_exits_4_and_the_run_resumes(
        smollm2_path: Path, tmp_path: Path, short_report: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_cpp

    real_generate = llama_cpp.Llama.generate
    calls = {"n": 0}

    def failing_generate(self: Any, *args: Any, **kwargs: Any) -> Iterator[int]:
        calls["n"] += 1
        if calls["n"] == 3:  # like llama-cpp-python on a failed decode: the generator raises when iterated
            raise RuntimeError("llama_decode returned -3")
        yield from real_generate(self, *args, **kwargs)

    trace = tmp_path / "run.jsonl"
    monkeypatch.setattr(llama_cpp.Llama, "generate", failing_generate)
    code, out, err = run_memread("ask", str(short_report), QUESTION, "--model", str(smollm2_path), *SHORT,
                                 "--trace", str(trace))
    monkeypatch.setattr(llama_cpp.Llama, "generate", real_generate)
    assert code == 4, err
    assert "llama.cpp failed while generating" in one_error(err) and "memread resume" in err and out == ""
    assert chunks_in(trace) == 2 and read_trace(trace).status() == "failed"

    code, out, err = run_memread("resume", str(trace), "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "ok" and chunks_in(trace) == json.loads(out)["stats"]["chunks_read"]


def test_any_exception_from_an_engine_becomes_a_backend_error_with_the_run_kept() -> None:
    def broken(request: Any) -> str:
        if "Page 2" in request.messages[-1].content:
            raise ZeroDivisionError("division by zero in a plugin")
        return "memory"

    events: list[Event] = []
    loop = Loop(FakeBackend(broken), ["How high?"], LoopSettings(strategy="overwrite", chunk_tokens=100), sinks=[events.append])
    with pytest.raises(BackendError) as raised:
        loop.run(_pages(4))
    assert raised.value.exit_status == 4
    assert raised.value.message == "the fake backend failed: ZeroDivisionError: division by zero in a plugin"
    assert [e.step for e in events if isinstance(e, StepFinished)] == [0, 1]
    assert isinstance(events[-1], RunFinished) and events[-1].status == "failed"


@pytest.mark.model
def test_a_server_killed_mid_run_exits_4_and_the_run_resumes_when_it_is_back(
        smollm2_path: Path, tmp_path: Path, short_report: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = http_servers.free_port()
    monkeypatch.setattr(http_servers, "free_port", lambda: port)  # the restarted server takes the same port
    server = LlamaServer(smollm2_path, tmp_path / "server-1.log")
    trace = tmp_path / "run.jsonl"
    env, log = no_network_env(tmp_path)  # the chosen endpoint is on loopback: nothing else may be contacted
    run = subprocess.Popen([sys.executable, "-m", "memread", "ask", str(short_report), QUESTION, "--backend",
                            "openai", "--base-url", server.url, "-s", "overwrite", "--chunk-tokens", "160", "--memory-tokens", "24",
                            "--final-tokens", "16", "--temperature", "0", "--trace", str(trace)],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while b'"type":"step_finished"' not in (trace.read_bytes() if trace.exists() else b""):
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.02)
        server.process.send_signal(signal.SIGKILL)  # the server dies after step 1
        _, err = run.communicate(timeout=120)
    finally:
        server.stop()
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 4, err
    line = one_error(err)
    assert "the server at" in line and ("lost the connection" in line or "cannot connect" in line)
    assert "memread resume" in err
    done_before = chunks_in(trace)
    assert done_before >= 1 and read_trace(trace).status() == "failed"
    assert not log.exists(), log.read_text()

    server = LlamaServer(smollm2_path, tmp_path / "server-2.log")
    try:
        code, out, err = run_memread("resume", str(trace), "--json")
    finally:
        server.stop()
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "ok" and result["backend"] == "openai"
    assert chunks_in(trace) == result["stats"]["chunks_read"] > done_before


# --- privacy: file modes and no network ------------------------------------------------------------------------

_NO_NETWORK = '''
import ipaddress, os, socket, sys

LOG = os.environ["MEMREAD_TEST_NET_LOG"]

def _local(host):
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False

def _hook(event, args):
    if event == "socket.connect":
        address = args[1]
        if isinstance(address, tuple) and not _local(address[0]):
            with open(LOG, "a") as log:
                log.write(f"connect {address!r}\\n")
            raise PermissionError(f"network use blocked by the test: connect to {address!r}")
    elif event == "socket.getaddrinfo" and not _local(args[0]):
        with open(LOG, "a") as log:
            log.write(f"getaddrinfo {args[0]!r}\\n")
        raise PermissionError(f"network use blocked by the test: name lookup of {args[0]!r}")

sys.addaudithook(_hook)
'''


def no_network_env(tmp_path: Path, **extra: str) -> tuple[dict[str, str], Path]:
    """An environment whose Python processes refuse (and log) every connection or name lookup that is not
    loopback, through an audit hook installed by a sitecustomize module."""
    hooks = tmp_path / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(_NO_NETWORK)
    log = tmp_path / "network.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", "")]),
           "MEMREAD_TEST_NET_LOG": str(log), "MEMREAD_NO_PROGRESS": "1", **extra}
    return env, log


@pytest.mark.model
def test_a_real_run_uses_no_network_and_writes_private_files(smollm2_path: Path, tmp_path: Path,
                                                             short_report: Path) -> None:
    home = tmp_path / "home"
    env, log = no_network_env(tmp_path, MEMREAD_HOME=str(home))

    # The guard works: a connection to a public address is refused and logged.
    probe = subprocess.run([sys.executable, "-c", "import socket; socket.create_connection(('192.0.2.1', 80), 1)"],
                           env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "network use blocked by the test" in probe.stderr
    assert "192.0.2.1" in log.read_text()
    log.unlink()

    # memread ask with the registry model (already in the cache), then its replay export.
    run = subprocess.run([sys.executable, "-m", "memread", "ask", str(short_report), QUESTION, "--model",
                          "smollm2-135m", *SHORT, "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert not log.exists(), log.read_text()  # not one connection or name lookup off this machine
    result = json.loads(run.stdout)
    trace = Path(result["trace"])
    export = tmp_path / "run.html"
    replay = subprocess.run([sys.executable, "-m", "memread", "replay", result["run_id"], "--export-html", str(export)],
                            env=env, capture_output=True, text=True, timeout=120)
    assert replay.returncode == 0, replay.stderr
    assert not log.exists()

    mode = lambda path: stat.S_IMODE(path.stat().st_mode)  # noqa: E731
    assert mode(trace) == 0o600 and mode(trace.parent) == 0o700
    assert mode(trace.parent / "index.jsonl") == 0o600
    assert mode(export) == 0o600  # an export holds the document's text too
    # Every file memread wrote under its home holds document text or run data: none is readable by others.
    for path in home.rglob("*"):
        if path.is_file():
            assert mode(path) & 0o077 == 0, f"{path} is {oct(mode(path))}"
