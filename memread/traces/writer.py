"""Writing a trace: a sink that appends every event as it happens, so a crash never loses more than the step in
flight.

The writer only ever appends, flushes and fsyncs (each record that would cost work to lose), and holds the
trace's lock for the whole run (:mod:`memread.traces.locks`). A resumed run appends a ``resumed`` record and
carries on in the same file. A trace that cannot be written stops the run with a :class:`TraceError` whose hint
says how to go on.
"""

from __future__ import annotations

import errno
import json
import os
import socket
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memread.errors import TraceError
from memread.events import Event, Indexed, RunStarted
from memread.traces.index import default_trace_path, note_trace
from memread.traces.locks import lock
from memread.traces.reader import read_trace
from memread.traces.records import DURABLE, FORMAT_VERSION, event_to_record
from memread.version import __version__


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
        if not lock(self._fd, exclusive=True):
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
