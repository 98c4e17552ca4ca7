"""Traces: written as the run goes, private, readable after a crash, and the checkpoint for resuming."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import synthetic_run

from memread.errors import TraceError
from memread.events import RunFinished, RunStarted, StepFinished
from memread.traces import (
    TraceWriter,
    check_resume,
    default_trace_path,
    read_trace,
    verify_chunks,
)


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMREAD_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def write(events, path=None, **kwargs):
    writer = TraceWriter(path, **kwargs)
    for event in events:
        writer(event)
    writer.close()
    return writer.path


def test_a_run_is_written_to_a_private_trace_under_the_data_dir(home):
    path = write(synthetic_run.events(), header={"document_info": {"format": "pdf", "size_bytes": 1234},
                                                 "templates": {"step": "<problem> {prompt}..."}})
    assert path == default_trace_path("20261122-080000-abc123")
    assert path.is_relative_to(home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    trace = read_trace(path)
    assert trace.header["format"] == 1
    assert trace.header["document"] == "report.pdf"
    assert trace.header["document_info"] == {"format": "pdf", "size_bytes": 1234}
    assert trace.header["templates"] == {"step": "<problem> {prompt}..."}
    assert trace.header["questions"] == list(synthetic_run.QUESTIONS)
    assert trace.status() == "ok"
    assert trace.torn_lines == 0


def test_events_read_back_equal_the_events_written(tmp_path):
    original = synthetic_run.events()
    trace = read_trace(write(original, tmp_path / "run.jsonl"))
    replayed = [event for _, event in trace.events()]
    assert replayed == original
    assert trace.steps(lane=1)[-1].memory == synthetic_run.MEMORIES[1][3]
    assert trace.answers()[1].answer == "Ada Quist"


def test_every_completed_step_is_on_disk_before_the_next_begins(tmp_path):
    """The writer never buffers: a reader in the middle of a run sees each finished step."""
    path = tmp_path / "live.jsonl"
    writer = TraceWriter(path)
    for event in synthetic_run.events():
        writer(event)
        if isinstance(event, StepFinished):
            steps = read_trace(path).steps()
            assert (steps[-1].lane, steps[-1].step) == (event.lane, event.step)
    writer.close()


def test_a_torn_last_line_is_ignored_and_the_run_reads_as_interrupted(tmp_path):
    path = write(synthetic_run.events(finish=False), tmp_path / "crash.jsonl")
    with open(path, "ab") as handle:
        handle.write(b'{"type":"step_finished","lane":0,"step":5,"memo')  # kill -9 mid-write
    trace = read_trace(path)
    assert trace.torn_lines == 1
    assert len(trace.steps()) == 9
    assert trace.status() == "interrupted"


def test_resume_point_is_the_first_step_some_lane_did_not_finish(tmp_path):
    events = synthetic_run.events(stop_after_step=1)  # step 2 started, no lane finished it
    trace = read_trace(write(events, tmp_path / "cut.jsonl"))
    point = trace.resume_point()
    assert point.start_step == 2
    assert point.states == {0: {"memory": synthetic_run.MEMORIES[0][1], "steps": 2},
                            1: {"memory": synthetic_run.MEMORIES[1][1], "steps": 2}}
    assert point.exited == () and point.answered == ()

    # A crash between the two lanes' StepFinished of one step: the step is redone for both.
    full = synthetic_run.events(finish=False)
    half = full[: next(i for i, e in enumerate(full) if isinstance(e, StepFinished) and e.step == 2) + 1]
    assert read_trace(write(half, tmp_path / "half.jsonl")).resume_point().start_step == 2


def test_resume_point_after_an_exit_keeps_the_exited_lane_out(tmp_path):
    trace = read_trace(write(synthetic_run.events(finish=False), tmp_path / "noanswer.jsonl"))
    point = trace.resume_point()
    assert point.start_step == 5
    assert point.exited == (1,)
    assert point.memories[1] == synthetic_run.MEMORIES[1][3]


def test_resuming_appends_to_the_same_trace_after_a_torn_line(tmp_path):
    path = write(synthetic_run.events(stop_after_step=1), tmp_path / "resume.jsonl")
    with open(path, "ab") as handle:
        handle.write(b'{"type":"step_fin')
    rest = [e for e in synthetic_run.events() if getattr(e, "step", 99) >= 2 or isinstance(e, RunFinished)]
    resumed_start = synthetic_run.events()[0]
    write([resumed_start, *[e for e in rest if type(e).__name__ != "RunStarted"]], path, resume=True)
    trace = read_trace(path)
    assert trace.torn_lines == 1
    assert [r["type"] for r in trace.records].count("resumed") == 1
    assert trace.status() == "ok"
    assert [s.memory for s in trace.steps(lane=0)] == synthetic_run.MEMORIES[0]


def test_a_run_still_being_written_reads_as_running_and_cannot_be_resumed_twice(tmp_path):
    path = tmp_path / "busy.jsonl"
    writer = TraceWriter(path)
    for event in synthetic_run.events(stop_after_step=1):
        writer(event)
    assert read_trace(path).status() == "running"
    with pytest.raises(TraceError, match="still being written"):
        TraceWriter(path, resume=True)(synthetic_run.events()[0])
    writer.close()  # as when the process ends, kill -9 included: the lock goes with it
    assert read_trace(path).status() == "interrupted"
    second = TraceWriter(path, resume=True)
    second(synthetic_run.events()[0])
    second.close()


def test_a_new_run_never_overwrites_an_existing_trace(tmp_path):
    path = write(synthetic_run.events(), tmp_path / "once.jsonl")
    with pytest.raises(TraceError, match="already exists"):
        write(synthetic_run.events(), path)


def test_an_unwritable_trace_stops_the_run_with_a_hint(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):
        pytest.skip("running as a user that ignores directory permissions")
    with pytest.raises(TraceError) as caught:
        write(synthetic_run.events(), locked / "run.jsonl")
    assert "cannot write the trace" in caught.value.message and "--no-trace" in caught.value.hint


def test_a_full_disk_is_a_trace_error_not_a_traceback(tmp_path, monkeypatch):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    # A lock on /dev/full is one for every process on the machine: a test run beside this one may hold it.
    monkeypatch.setattr("memread.traces.writer.lock", lambda fd, *, exclusive: True)
    writer = TraceWriter("/dev/full", resume=True)  # opens an existing file; every write fails with ENOSPC
    with pytest.raises(TraceError, match="cannot write the trace /dev/full"):
        writer(synthetic_run.events()[0])


def test_resume_refuses_changed_settings_and_names_them(tmp_path):
    trace = read_trace(write(synthetic_run.events(), tmp_path / "fp.jsonl"))
    same = dict(questions=synthetic_run.QUESTIONS, strategy="gated", model="fake-model",
                settings={"chunk_tokens": 40, "memory_tokens": 64, "temperature": 0.0, "seed": 7})
    check_resume(trace, **same)
    with pytest.raises(TraceError) as caught:
        check_resume(trace, **{**same, "strategy": "overwrite",
                               "settings": {**same["settings"], "chunk_tokens": 80}})
    assert "strategy (trace: gated, now: overwrite)" in caught.value.message
    assert "chunk_tokens (trace: 40, now: 80)" in caught.value.message
    with pytest.raises(TraceError, match="questions"):
        check_resume(trace, **{**same, "questions": ("another question",)})


def test_a_changed_document_is_refused_at_the_chunk_that_differs(tmp_path):
    trace = read_trace(write(synthetic_run.events(stop_after_step=2), tmp_path / "doc.jsonl"))
    chunks = synthetic_run.chunks()
    assert list(verify_chunks(trace, iter(chunks))) == chunks
    edited = list(chunks)
    edited[1] = type(chunks[1])(index=1, text="Something else entirely.", tokens=3, spans=chunks[1].spans)
    with pytest.raises(TraceError, match=r"changed at chunk 2 \(report.pdf p. 2"):
        list(verify_chunks(trace, iter(edited)))
    with pytest.raises(TraceError, match="only 2 chunks"):
        list(verify_chunks(trace, iter(chunks[:2])))


def test_a_file_that_is_not_a_trace_is_refused(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(TraceError, match="not a memread trace"):
        read_trace(path)


def test_a_step_cut_short_by_a_crash_is_replaced_by_its_redo_after_resume(tmp_path):
    full = synthetic_run.events()
    first_lane_done = next(i for i, e in enumerate(full) if isinstance(e, StepFinished) and e.step == 2)
    path = write(full[: first_lane_done + 1], tmp_path / "redo.jsonl")  # lane 0 finished step 2, lane 1 not
    assert read_trace(path).resume_point().start_step == 2
    redo = [e for e in full[1:] if getattr(e, "step", None) is None or e.step >= 2]
    write([full[0], *redo], path, resume=True)
    trace = read_trace(path)
    assert [s.step for s in trace.steps(lane=0)] == [0, 1, 2, 3, 4]
    assert trace.records[[r["type"] for r in trace.records].index("resumed")]["resumed_from_step"] == 2
    events = [e for _, e in trace.events()]
    resumed = [i for i, e in enumerate(events) if isinstance(e, RunStarted) and e.resumed_from_step == 2]
    assert resumed == [7] and events[7] == replace(full[0], resumed_from_step=2)  # where the session began
    assert events[:7] + events[8:] == full  # the step cut short gives way to its redo


# --- with the real loop (scripted fake backend) -----------------------------------------------------------

LOG = "".join(
    f"2026-03-{day:02d} harbour log: {'the Widow pier closed for 12 days after the storm' if day == 4 else 'calm'}"
    f" on day {day}, {'nothing of note' if day != 7 else 'Ada Quist repaired the lamp'}.\n\n"
    for day in range(1, 11))


def gated_reply(request):
    """A well-behaved gated model: updates when the section holds a fact it has not noted yet."""
    prompt = request.messages[-1].content
    if "<section>" not in prompt:  # the final prompt
        return "The pier was closed for \\boxed{12} days."
    section = prompt.split("<section>")[-1]
    memory = prompt.split("<memory>")[-1].split("</memory>")[0].strip()
    for fact in ("the Widow pier closed for 12 days after the storm", "Ada Quist repaired the lamp"):
        if fact in section and fact not in memory:
            kept = "" if memory.startswith("No previous memory") else memory + "\n"
            return f"<think>new</think><check>yes</check><update>{kept}{fact}.</update><next>continue</next>"
    return "<think>nothing</think><check>no</check><next>continue</next>"


class Interrupting:
    """Wraps a backend and raises KeyboardInterrupt on the n-th call (Ctrl-C in the middle of a step)."""

    def __init__(self, backend, at_call):
        self.backend, self.at_call, self.calls = backend, at_call, 0

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def complete(self, requests):
        self.calls += 1
        if self.calls == self.at_call:
            raise KeyboardInterrupt
        return self.backend.complete(requests)


def loop_run(tmp_path, backend, *, trace_path, resume_from=None, sinks=()):
    from memread.chunk import Chunker
    from memread.ingest import open_document
    from memread.loop import Loop, LoopSettings

    source = tmp_path / "harbour.log"
    if not source.exists():
        source.write_text(LOG)
    settings = LoopSettings(strategy="gated", chunk_tokens=120, memory_tokens=200, temperature=0.0, seed=1)
    document = open_document(str(source))
    chunks = Chunker(backend.tokenizer, settings.chunk_tokens).chunks(document.segments())
    if resume_from is None:
        writer = TraceWriter(trace_path)
        loop = Loop(backend, ["How many days was the pier closed?"], settings, [writer, *sinks], document="harbour.log")
        try:
            return loop.run(chunks)
        finally:
            writer.close()
    trace = read_trace(resume_from)
    check_resume(trace, questions=["How many days was the pier closed?"], strategy="gated", model=backend.model,
                 settings=settings.to_dict())
    point = trace.resume_point()
    writer = TraceWriter(resume_from, resume=True)
    loop = Loop(backend, list(trace.questions), settings, [writer, *sinks], document="harbour.log",
                run_id=trace.run_id)
    try:
        return loop.run(verify_chunks(trace, chunks), start_step=point.start_step, states=point.states,
                        exited=point.exited)
    finally:
        writer.close()


def test_a_real_loop_run_is_recorded_step_by_step(tmp_path):
    from memread.backends.fake import FakeBackend
    from memread.report import RESULT_SCHEMA, RunReport

    report = RunReport()
    results = loop_run(tmp_path, FakeBackend(gated_reply), trace_path=tmp_path / "run.jsonl", sinks=[report])
    trace = read_trace(tmp_path / "run.jsonl")
    assert trace.status() == "ok" and results[0].answer == "12"
    steps = trace.steps(lane=0)
    assert len(steps) == len(trace.chunks()) >= 5
    assert steps[-1].memory == results[0].memory
    assert [s.update for s in steps].count(True) == 2
    assert RunReport.from_trace(trace).result() == report.result()
    result = report.result(trace_path=str(trace.path))
    import jsonschema

    jsonschema.validate(result, RESULT_SCHEMA)
    cited = {c["excerpt"]: c for c in result["citations"]}
    assert set(cited) == {"the Widow pier closed for 12 days after the storm.", "Ada Quist repaired the lamp."}
    pier = cited["the Widow pier closed for 12 days after the storm."]
    assert pier["spans"][0]["line_first"] <= 7 <= pier["spans"][0]["line_last"]  # day 4 is line 7 of the log


def test_ctrl_c_then_resume_reaches_the_uninterrupted_result(tmp_path):
    from memread.backends.fake import FakeBackend

    straight = loop_run(tmp_path, FakeBackend(gated_reply), trace_path=tmp_path / "straight.jsonl")
    for at_call in (1, 3, 5):
        path = tmp_path / f"cut{at_call}.jsonl"
        with pytest.raises(KeyboardInterrupt):
            loop_run(tmp_path, Interrupting(FakeBackend(gated_reply), at_call), trace_path=path)
        cut = read_trace(path)
        assert cut.status() == "interrupted" and cut.resume_point().start_step == at_call - 1
        resumed = loop_run(tmp_path, FakeBackend(gated_reply), trace_path=None, resume_from=path)
        assert resumed == straight
        trace = read_trace(path)
        assert trace.status() == "ok"
        assert [s.memory for s in trace.steps(0)] == [s.memory for s in read_trace(tmp_path / "straight.jsonl").steps(0)]


def test_resuming_with_another_document_is_refused_before_any_model_call(tmp_path):
    from memread.backends.fake import FakeBackend

    path = tmp_path / "cut.jsonl"
    with pytest.raises(KeyboardInterrupt):
        loop_run(tmp_path, Interrupting(FakeBackend(gated_reply), 4), trace_path=path)
    (tmp_path / "harbour.log").write_text(LOG.replace("calm on day 2", "stormy on day 2"))
    backend = FakeBackend(gated_reply)
    with pytest.raises(TraceError, match="the document changed at chunk"):
        loop_run(tmp_path, backend, trace_path=None, resume_from=path)
    assert backend.calls == []


# --- kill -9 in the middle of a real run ------------------------------------------------------------------

KILLED_RUN = r'''
import sys
from memread.backends.llamacpp import LlamaCppBackend
from memread.chunk import Chunker
from memread.document import Provenance, Segment
from memread.loop import Loop, LoopSettings
from memread.traces import TraceWriter

model, trace_path, text = sys.argv[1], sys.argv[2], sys.argv[3]
backend = LlamaCppBackend(model, model_name="smollm2-135m", n_ctx=4096, n_threads=1)
settings = LoopSettings(strategy="overwrite", chunk_tokens=40, memory_tokens=24, final_tokens=16,
                        temperature=0.0, seed=5)
chunks = Chunker(backend.tokenizer, 40).chunks([Segment(text, Provenance("notes.txt", line_start=1))])
Loop(backend, ["Who repaired the lamp?"], settings, [TraceWriter(trace_path)], document="notes.txt").run(chunks)
'''
NOTES = "".join(f"Day {d}: {'Ada Quist repaired the lighthouse lamp' if d == 5 else 'the harbour was calm'}.\n\n"
                for d in range(1, 17))  # 6 chunks of 40 tokens


@pytest.mark.model
@pytest.mark.slow
def test_kill_9_mid_run_then_resume_matches_the_uninterrupted_run(smollm2_backend, smollm2_path, tmp_path):
    from memread.chunk import Chunker
    from memread.document import Provenance, Segment
    from memread.loop import Loop, LoopSettings

    settings = LoopSettings(strategy="overwrite", chunk_tokens=40, memory_tokens=24, final_tokens=16,
                            temperature=0.0, seed=5)

    def chunks():
        return Chunker(smollm2_backend.tokenizer, 40).chunks([Segment(NOTES, Provenance("notes.txt", line_start=1))])

    straight_path = tmp_path / "straight.jsonl"
    writer = TraceWriter(straight_path)
    straight = Loop(smollm2_backend, ["Who repaired the lamp?"], settings, [writer], document="notes.txt").run(chunks())
    writer.close()
    assert len(read_trace(straight_path).steps()) >= 4

    path = tmp_path / "killed.jsonl"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    child = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(smollm2_path), str(path), NOTES], env=env)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # kill it once two steps are on disk
            if path.exists() and path.read_bytes().count(b'"type":"step_finished"') >= 2:
                break
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    cut = read_trace(path)
    assert cut.status() == "interrupted"
    point = cut.resume_point()
    assert 2 <= point.start_step < len(read_trace(straight_path).steps())

    check_resume(cut, questions=["Who repaired the lamp?"], strategy="overwrite", model=smollm2_backend.model,
                 settings=settings.to_dict())
    writer = TraceWriter(path, resume=True)
    resumed = Loop(smollm2_backend, list(cut.questions), settings, [writer], document="notes.txt",
                   run_id=cut.run_id).run(verify_chunks(cut, chunks()), start_step=point.start_step,
                                          states=point.states, exited=point.exited)
    writer.close()
    assert resumed == straight
    assert [s.memory for s in read_trace(path).steps(0)] == [s.memory for s in read_trace(straight_path).steps(0)]
    assert read_trace(path).status() == "ok"


def test_code_written_against_the_old_module_paths_still_imports_the_same_objects():
    import importlib

    from memread.traces import index, reader, records, resume, writer

    package = {name: value for module in (index, reader, records, resume, writer) for name, value in vars(module).items()}
    for old in ("memread.trace", "memread.trace_records", "memread.traces_index"):
        module = importlib.import_module(old)
        for name in module.__all__:
            assert getattr(module, name) is package[name], f"{old}.{name}"
    # memread.trace's own list before it became the package memread.traces
    assert {"FORMAT_VERSION", "ResumePoint", "Trace", "TraceWriter", "check_resume", "check_writable",
            "chunk_record", "default_trace_path", "event_to_record", "new_run_id", "parse_lines", "read_trace",
            "record_to_event", "text_hash", "verify_chunks"} <= set(importlib.import_module("memread.trace").__all__)
