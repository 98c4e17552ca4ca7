"""Reading a trace back: its header, its records in order, and what they say (the events, each lane's steps, the
answers, whether the run finished, and where it can restart).

A trace is one file, one JSON object per line:

* the first line is a ``header`` (format version, run id, document, model, settings, questions, templates);
* then one record per event (``step_started``, ``step_finished``, ``lane_exited``, ``answered``, ``warned``,
  ``run_finished``), field names as in :mod:`memread.events`;
* a resumed run appends a ``resumed`` record and carries on in the same file.

The reader reads a trace still being written, or cut short by a crash: it skips a torn line (a crash in the
middle of a write), and a record that lacks a field its event needs. The trace is also the checkpoint:
:meth:`Trace.resume_point` says where a run can restart and with which strategy states.
The format is documented in docs/trace-format.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memread.document import Chunk
from memread.errors import TraceError
from memread.events import Answered, Event, RunStarted, StepFinished
from memread.traces.locks import held_by_writer, writer_alive
from memread.traces.records import FORMAT_VERSION, NEEDED, chunk_from_record, is_whole, record_to_event


@dataclass(frozen=True)
class ResumePoint:
    """Where a run restarts: ``Loop.run(chunks, start_step=..., states=..., exited=...)``."""

    start_step: int  # next chunk index to read (every active lane finished all chunks before it)
    states: dict[int, dict[str, Any]]  # lane -> strategy state after its last completed step
    memories: dict[int, str]  # lane -> memory after its last completed step
    exited: tuple[int, ...]  # lanes that stopped reading (exit gate) before start_step
    answered: tuple[int, ...]  # lanes whose final answer is already in the trace


@dataclass
class Trace:
    """A trace read back: header, records in order, and how many torn lines were skipped."""

    path: Path
    header: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    torn_lines: int = 0

    @property
    def run_id(self) -> str:
        return str(self.header.get("run_id", self.path.stem))

    @property
    def questions(self) -> tuple[str, ...]:
        return tuple(self.header.get("questions", ()))

    def effective_records(self) -> list[dict[str, Any]]:
        """The records of the run as it counts: when a session resumed at step s, what an earlier session
        recorded for steps >= s (a step cut short by the crash) is dropped."""
        kept: list[dict[str, Any]] = []
        for record in self.records:
            if record.get("type") == "resumed" and record.get("resumed_from_step") is not None:
                start = int(record["resumed_from_step"])
                kept = [r for r in kept if not (isinstance(r.get("step"), int) and r["step"] >= start)]
            kept.append(record)
        return kept

    def chunks(self) -> dict[int, Chunk]:
        """Chunk index -> chunk (with text) as seen at each step start."""
        return {int(r["chunk"]["index"]): chunk_from_record(r["chunk"])
                for r in self.records if r.get("type") == "step_started"}

    def events(self) -> Iterator[tuple[float, Event]]:
        """(wall time, event) for every record, starting with the RunStarted rebuilt from the header; each later
        session starts with its own (``resumed_from_step`` set), so a reader sees where sessions begin."""
        yield float(self.header.get("t", 0.0)), self.run_started()
        chunks = self.chunks()
        for record in self.effective_records():
            if record.get("type") == "resumed":
                record = {**self.header, **record, "type": "run_started"}
            event = record_to_event(record, chunks)
            if event is not None:
                yield float(record.get("t", 0.0)), event

    def run_started(self) -> RunStarted:
        event = record_to_event({**self.header, "type": "run_started"})
        assert isinstance(event, RunStarted)
        return event

    def steps(self, lane: int | None = None) -> list[StepFinished]:
        """Completed steps in order (of one lane, or all)."""
        chunks = self.chunks()
        return [e for r in self.effective_records() if r.get("type") == "step_finished"
                and (lane is None or r.get("lane") == lane)
                for e in [record_to_event(r, chunks)] if isinstance(e, StepFinished)]

    def answers(self) -> dict[int, Answered]:
        found: dict[int, Answered] = {}
        for record in self.records:
            if record.get("type") == "answered":
                event = record_to_event(record)
                assert isinstance(event, Answered)
                found[event.lane] = event
        return found

    def status(self) -> str:
        """``ok`` | ``failed`` | ``interrupted`` (ended by Ctrl-C, a crash or kill -9) | ``running``."""
        session = self.header
        last_finish: dict[str, Any] | None = None
        for record in self.records:
            if record.get("type") == "resumed":
                session, last_finish = record, None
            elif record.get("type") == "run_finished":
                last_finish = record
        if last_finish is not None:
            return str(last_finish.get("status", "ok"))
        held = held_by_writer(self.path)
        if held is None:  # no file locks here: fall back on whether the writing process is alive
            held = writer_alive(session)
        return "running" if held else "interrupted"

    def resume_point(self) -> ResumePoint:
        """The first step not completed by every lane that was reading it, and each lane's state before it."""
        started: dict[int, set[int]] = {}
        finished: dict[int, set[int]] = {}
        records = self.effective_records()
        for record in records:
            if record.get("type") == "step_started":
                started[int(record["step"])] = set(record.get("lanes", []))
            elif record.get("type") == "step_finished":
                finished.setdefault(int(record["step"]), set()).add(int(record["lane"]))
        start = 0
        while start in started and started[start] <= finished.get(start, set()):
            start += 1
        states: dict[int, dict[str, Any]] = {}
        memories: dict[int, str] = {}
        exited: set[int] = set()
        answered: set[int] = set()
        for record in records:
            # Only these kinds always carry a step and a lane: a ``warned`` record's are null when the warning is
            # the document's or the run's (invalid UTF-8, a scanned page, a skipped file), not a step's.
            kind = record.get("type")
            if kind == "step_finished" and int(record["step"]) < start:
                states[int(record["lane"])] = dict(record.get("state") or {})
                memories[int(record["lane"])] = str(record.get("memory", ""))
                if record.get("exit"):
                    exited.add(int(record["lane"]))
            elif kind == "lane_exited" and int(record["step"]) < start:
                exited.add(int(record["lane"]))
            elif kind == "answered":
                answered.add(int(record["lane"]))
        return ResumePoint(start, states, memories, tuple(sorted(exited)), tuple(sorted(answered)))


def parse_lines(lines: Iterable[bytes], path: Path) -> Trace:
    """Build a Trace from raw lines; torn or garbled lines, and records that lack a field their event needs,
    are counted and skipped."""
    header: dict[str, Any] | None = None
    records: list[dict[str, Any]] = []
    torn = 0
    for raw in lines:
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            torn += 1
            continue
        if not isinstance(record, dict):
            torn += 1
        elif header is None:
            if record.get("type") != "header":
                break
            header = record
        elif not is_whole(record):  # not written by memread (by hand, another program): unreadable too
            torn += 1
        else:
            records.append(record)
    if header is None:
        raise TraceError(f"{path} is not a memread trace (no header line)",
                         hint="pass a .jsonl file written by `memread ask`; `memread traces` lists them")
    if int(header.get("format", 0)) > FORMAT_VERSION:
        raise TraceError(f"{path} uses trace format {header.get('format')}, newer than this memread reads",
                         hint="upgrade memread to read this trace")
    missing = NEEDED["run_started"] - header.keys()  # the header is the run's RunStarted
    if missing:
        raise TraceError(f"{path} is not a memread trace (its header has no {', '.join(sorted(missing))})",
                         hint="pass a .jsonl file written by `memread ask`; `memread traces` lists them")
    return Trace(path=path, header=header, records=records, torn_lines=torn)


def read_trace(path: Path | str) -> Trace:
    """Read a trace (also one still being written, or cut short by a crash)."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            return parse_lines(handle, path)
    except FileNotFoundError as error:
        raise TraceError(f"no trace at {path}", hint="run `memread traces` to list saved runs") from error
    except OSError as error:
        raise TraceError(f"cannot read the trace {path}: {error.strerror or error}") from error
