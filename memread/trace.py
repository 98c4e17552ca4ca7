"""Traces: every run written as JSONL while it happens, so a crash never loses more than the step in flight.

A trace is one file, one JSON object per line:

* the first line is a ``header`` (format version, run id, document, model, settings, questions, templates);
* then one record per event (``step_started``, ``step_finished``, ``lane_exited``, ``answered``, ``warned``,
  ``run_finished``), field names as in :mod:`memread.events`;
* a resumed run appends a ``resumed`` record and carries on in the same file.

The writer only ever appends, flushes and fsyncs, so the file is readable up to the last completed step at
any moment; the reader ignores a torn line (a crash in the middle of a write). The trace is also the
checkpoint: :meth:`Trace.resume_point` says where a run can restart and with which strategy states, and
:func:`verify_chunks` checks that a re-read document is the one the trace was written from.
The format is documented in docs/trace-format.md.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import socket
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memread.document import Chunk
from memread.errors import TraceError
from memread.events import Answered, Event, Indexed, RunStarted, StepFinished
from memread.trace_records import (  # re-exported: memread.trace is the one place to import traces from
    DURABLE,
    FORMAT_VERSION,
    chunk_from_record,
    chunk_record,
    event_to_record,
    is_whole,
    jsonable,
    record_to_event,
    text_hash,
)
from memread.version import __version__

__all__ = [
    "FORMAT_VERSION", "ResumePoint", "Trace", "TraceWriter", "check_resume", "check_writable", "chunk_record",
    "default_trace_path", "event_to_record", "new_run_id", "parse_lines", "read_trace", "record_to_event", "text_hash", "verify_chunks",
]

# The append-only list of traces written outside the traces folder (--trace PATH), read by memread.traces_index.
INDEX_NAME = "index.jsonl"


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus random hex, e.g. ``20261122-074535-3fa2c1``."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def default_trace_path(run_id: str) -> Path:
    """Where a run's trace goes unless ``--trace PATH`` says otherwise."""
    from memread import paths

    return paths.traces_dir() / f"{run_id}.jsonl"


# --- writing --------------------------------------------------------------------------------------------


def _write_error(path: Path | None, error: OSError, *, saved: str | None = None) -> TraceError:
    """A trace that cannot be written stops the run (exit 1); what was written before stays readable.
    ``saved``: the run id when the trace already holds a resumable run, so the hint says how to continue."""
    then = f"then `memread resume {saved}` continues the run" if saved else "then run the command again"
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = f"free some disk space, {then} (or write the trace elsewhere with --trace PATH, or --no-trace)"
    elif error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = (f"the trace's folder is not writable (a read-only file system or its permissions): make it "
                f"writable, {then} (or use --trace PATH elsewhere, or --no-trace)")
    else:
        hint = "pass --trace PATH to a writable place, or run with --no-trace"
    return TraceError(f"cannot write the trace {path}: {error.strerror or error}", hint=hint)


def check_writable(path: Path | None, *, run_id: str | None = None) -> None:
    """Fail fast, before a model is loaded, when the trace could not be written: ``run_id`` given means
    resuming ``path`` (it must open for appending), else a new trace at ``path`` (None: the traces folder).
    Raises the same TraceError the writer would; a folder that does not exist yet is created by the writer."""
    if run_id is not None and path is not None:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        except OSError as error:
            raise _write_error(path, error, saved=run_id) from error
        return
    if path is not None and path.exists():
        raise TraceError(f"the trace {path} already exists",
                         hint="pass --resume to continue it, or another --trace PATH")
    if path is None:
        from memread import paths

        folder = paths.traces_dir()
    else:
        folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if os.access(folder, os.W_OK):
        return
    read_only = hasattr(os, "statvfs") and bool(os.statvfs(folder).f_flag & getattr(os, "ST_RDONLY", 1))
    code = errno.EROFS if read_only else errno.EACCES
    raise _write_error(path or folder, OSError(code, os.strerror(code)))


def note_trace(path: Path, run_id: str) -> None:
    """Remember a trace in the index (best effort: a trace is never lost because the index is)."""
    from memread import paths

    try:
        directory = paths.ensure_private_dir(paths.traces_dir())
        fd = os.open(directory / INDEX_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            line = json.dumps({"run_id": run_id, "path": str(Path(path).resolve()), "t": time.time()})
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


class TraceWriter:
    """A sink that appends every event to a JSONL trace (mode 0600, directory 0700), fsyncing each step.

    ``path`` None means :func:`default_trace_path` of the run id, known at RunStarted. ``header`` adds
    fields to the header record, e.g. ``document_info`` (format, size_bytes, mtime, ...) and ``templates``
    (the prompt templates used); it cannot replace the RunStarted fields.
    ``resume=True`` appends to an existing trace (a ``resumed`` record instead of a header).
    Raises :class:`TraceError` when the trace cannot be written, which stops the run.
    """

    def __init__(self, path: Path | str | None = None, *, header: Mapping[str, Any] | None = None,
                 resume: bool = False) -> None:
        self.path: Path | None = Path(path) if path is not None else None
        self.header_extra = dict(header or {})
        self.resume = resume
        self._fd: int | None = None
        self._saved: str | None = None  # the run id once the file holds a header: a failure can be resumed

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._start(event)
            return
        if self._fd is None or (isinstance(event, Indexed) and not event.done):
            return  # before RunStarted there is nowhere to write (the loop starts with it); indexing progress is
            # not state, but how many chunks the document has is worth keeping (replay's total)
        self._append(event_to_record(event))

    def _start(self, event: RunStarted) -> None:
        from memread import paths

        if self.path is None:
            self.path = default_trace_path(event.run_id)
        if self.resume:
            self._saved = event.run_id
        base = {k: v for k, v in event_to_record(event).items() if k != "type"}
        base.update(created=datetime.now(timezone.utc).isoformat(timespec="seconds"), pid=os.getpid(),
                    host=socket.gethostname(), memread_version=__version__)
        try:
            if self.path.parent == paths.traces_dir() or not self.path.parent.exists():
                paths.ensure_private_dir(self.path.parent)
            flags = os.O_WRONLY | os.O_APPEND | (0 if self.resume else os.O_CREAT | os.O_EXCL)
            self._fd = os.open(self.path, flags, 0o600)
        except FileExistsError as error:
            raise TraceError(f"the trace {self.path} already exists",
                             hint="pass --resume to continue it, or another --trace PATH") from error
        except FileNotFoundError as error:
            raise TraceError(f"there is no trace at {self.path} to resume",
                             hint="run `memread traces` to list saved runs") from error
        except OSError as error:
            raise _write_error(self.path, error, saved=self._saved) from error
        if not _lock(self._fd, exclusive=True):
            os.close(self._fd)
            self._fd = None
            raise TraceError(f"the run in {self.path} is still being written by another memread",
                             hint="wait for it to finish, or stop it first (`memread traces` shows it as running)")
        if self.resume:
            if base.get("resumed_from_step") is None and self.path.is_file():
                base["resumed_from_step"] = read_trace(self.path).resume_point().start_step
            if self.path.is_file() and _ends_without_newline(self.path):
                self._write_line("")  # isolate a torn last line so the next record starts clean
            self._append({"type": "resumed", **base})
        else:
            # The event's own fields win: extras add (document_info, templates, ...), never replace.
            header = {"type": "header", "format": FORMAT_VERSION, **self.header_extra, **base}
            self._append(header)
            self._saved = event.run_id
            note_trace(self.path, event.run_id)

    def _write_line(self, line: str) -> None:
        assert self._fd is not None
        data = (line + "\n").encode("utf-8", "surrogatepass")
        try:
            while data:
                written = os.write(self._fd, data)
                data = data[written:]
        except OSError as error:
            raise _write_error(self.path, error, saved=self._saved) from error

    def _append(self, record: dict[str, Any]) -> None:
        self._write_line(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        if record["type"] in DURABLE:
            try:
                os.fsync(self._fd)  # type: ignore[arg-type]
            except OSError as error:
                raise _write_error(self.path, error, saved=self._saved) from error

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            finally:
                self._fd = None


def _ends_without_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return False
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) != b"\n"


# --- reading --------------------------------------------------------------------------------------------


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
        held = _held_by_writer(self.path)
        if held is None:  # no file locks here: fall back on whether the writing process is alive
            held = _alive(session)
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


def _lock(fd: int, *, exclusive: bool) -> bool:
    """Take an advisory lock on the trace without waiting; False when another writer holds it.

    The writer holds its lock for the whole run and the system drops it when the process ends, even on
    kill -9, so a held lock means exactly "still being written" (no stale lock files, no pid reuse).
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: no locking, the liveness check in Trace.status() stands in
        return True
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return True  # a file system without locks (some network mounts): do not block the run
    return True


def _held_by_writer(path: Path) -> bool | None:
    """Whether a writer holds the trace's lock; None when that cannot be told."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)  # closing releases a lock we took
    return False


def _alive(session: Mapping[str, Any]) -> bool:
    """Is the process that wrote this session still running (same host only)?"""
    pid = session.get("pid")
    if not isinstance(pid, int) or session.get("host") != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


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


# --- resuming -------------------------------------------------------------------------------------------


def check_resume(trace: Trace, *, questions: Iterable[str], strategy: str, model: str,
                 settings: Mapping[str, Any], ignore: Iterable[str] = ()) -> None:
    """Refuse to resume when what shapes the run changed; the error names each difference."""
    header = trace.header
    changes: list[str] = []
    if tuple(questions) != trace.questions:
        changes.append(f"questions (trace: {list(trace.questions)!r})")
    if strategy != header.get("strategy"):
        changes.append(f"strategy (trace: {header.get('strategy')}, now: {strategy})")
    if model != header.get("model"):
        changes.append(f"model (trace: {header.get('model')}, now: {model})")
    # Both sides as a run records them (the strategy's options completed with their defaults), so that a setting
    # left at its default and one given as the default compare equal, and so do traces of older versions.
    old = _normalised(dict(header.get("settings") or {}), str(header.get("strategy")))
    new = _normalised(dict(settings), strategy)
    for key in sorted((set(old) | set(new)) - set(ignore)):
        if old.get(key) != new.get(key):
            changes.append(f"{key} (trace: {old.get(key)!r}, now: {new.get(key)!r})")
    if changes:
        raise TraceError(f"cannot resume {trace.run_id}: changed " + "; ".join(changes),
                         hint="resume with the same document, model, strategy, questions and settings, "
                              "or start a new run without --resume")


def _normalised(settings: dict[str, Any], strategy: str) -> dict[str, Any]:
    from memread.errors import MemreadError
    from memread.settings import Settings
    from memread.strategies import check_settings

    try:
        return dict(jsonable(check_settings(Settings.from_dict({**settings, "strategy": strategy})).to_dict()))
    except (MemreadError, TypeError, ValueError):  # settings this version cannot read: compared as they are
        return dict(jsonable(settings))


def verify_chunks(trace: Trace, chunks: Iterable[Chunk], upto: int | None = None, *,
                  every_recorded: bool = False) -> Iterator[Chunk]:
    """Pass ``chunks`` through, checking that the first ``upto`` (default: the resume point) have the text
    hashes recorded in the trace; with ``every_recorded`` (a strategy that chose its reading order), every
    chunk the trace read, wherever it is. Lazy, so it works for stdin: the loop skips those chunks anyway."""
    recorded = {int(r["chunk"]["index"]): r["chunk"] for r in trace.records if r.get("type") == "step_started"}
    if every_recorded:
        limit = max(recorded, default=-1) + 1
    else:
        limit = trace.resume_point().start_step if upto is None else upto
    seen = 0
    for chunk in chunks:
        if chunk.index < limit:
            expected = recorded.get(chunk.index)
            if expected is not None and expected.get("sha256") != text_hash(chunk.text):
                raise TraceError(
                    f"cannot resume {trace.run_id}: the document changed at chunk {chunk.index + 1} "
                    f"({chunk.describe()}; the trace read {expected.get('where')})",
                    hint="resume with the same document and chunk settings, or start a new run")
            seen += 1
        yield chunk
    if seen < limit:
        raise TraceError(f"cannot resume {trace.run_id}: the document has only {seen} chunks, "
                         f"the trace had read {limit}",
                         hint="resume with the same document, or start a new run")
