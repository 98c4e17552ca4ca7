"""Saved runs: how a run is named, where its trace goes, and finding it again (what ``memread traces`` lists,
shows and removes).

There is no database to corrupt. Runs are found by scanning the traces directory, plus an append-only
``index.jsonl`` there that remembers traces written elsewhere (``--trace PATH``): the writer notes each new trace
in it (:func:`note_trace`). A summary reads a trace's first line and its tail, so listing stays fast when traces
are large; a missing or garbled index only hides traces written outside the directory.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memread.errors import TraceError, UsageError
from memread.traces.reader import Trace, parse_lines

# The append-only list of traces written outside the traces folder (--trace PATH).
INDEX_NAME = "index.jsonl"
_TAIL_BYTES = 1 << 20


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus random hex, e.g. ``20261122-074535-3fa2c1``."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def traces_dir() -> Path:
    from memread import paths

    return paths.traces_dir()


def default_trace_path(run_id: str) -> Path:
    """Where a run's trace goes unless ``--trace PATH`` says otherwise."""
    return traces_dir() / f"{run_id}.jsonl"


def note_trace(path: Path, run_id: str) -> None:
    """Remember a trace in the index (best effort: a trace is never lost because the index is)."""
    from memread import paths

    try:
        directory = paths.ensure_private_dir(traces_dir())
        fd = os.open(directory / INDEX_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            line = json.dumps({"run_id": run_id, "path": str(Path(path).resolve()), "t": time.time()})
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


@dataclass(frozen=True)
class RunSummary:
    """One line of ``memread traces``."""

    run_id: str
    path: Path
    created: str
    document: str
    questions: tuple[str, ...]
    strategy: str
    model: str
    backend: str
    status: str
    steps: int  # chunks read (by the furthest lane)
    answers: tuple[str | None, ...]  # per lane, None when not answered (yet)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "path": str(self.path), "created": self.created,
                "document": self.document, "questions": list(self.questions), "strategy": self.strategy,
                "model": self.model, "backend": self.backend, "status": self.status, "steps": self.steps,
                "answers": list(self.answers)}


def _head_and_tail(path: Path) -> Trace:
    """A Trace of the header plus the records in the last MiB (enough for the end-of-run records)."""
    with open(path, "rb") as handle:
        first = handle.readline()
        size = os.fstat(handle.fileno()).st_size
        start = max(handle.tell(), size - _TAIL_BYTES)
        handle.seek(start)
        tail = handle.read().split(b"\n")
        if start > len(first):
            tail = tail[1:]  # the first piece is (probably) the end of a line cut by the seek
    return parse_lines([first, *tail], path)


def summarize(path: Path) -> RunSummary:
    """Summarize one trace file (raises TraceError when it is not a trace)."""
    trace = _head_and_tail(path)
    header = trace.header
    steps = max((int(r["step"]) + 1 for r in trace.records if r.get("type") == "step_finished"), default=0)
    finish = [r for r in trace.records if r.get("type") == "run_finished"]
    if finish:
        steps = max(steps, int(finish[-1].get("chunks_read", 0)))
    answers = trace.answers()
    questions = trace.questions
    return RunSummary(
        run_id=trace.run_id, path=path, created=str(header.get("created", "")),
        document=str(header.get("document", "")),
        questions=questions, strategy=str(header.get("strategy", "")), model=str(header.get("model", "")),
        backend=str(header.get("backend", "")), status=trace.status(), steps=steps,
        answers=tuple(answers[i].answer if i in answers else None for i in range(len(questions))))


def _indexed_paths() -> list[Path]:
    try:
        lines = (traces_dir() / INDEX_NAME).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            found.append(Path(json.loads(line)["path"]))
        except (ValueError, KeyError, TypeError):
            continue
    return found


def trace_paths() -> list[Path]:
    """Every known trace file that still exists (directory scan + index), without duplicates."""
    directory = traces_dir()
    candidates = sorted(directory.glob("*.jsonl")) if directory.is_dir() else []
    candidates = [p for p in candidates if p.name != INDEX_NAME] + _indexed_paths()
    seen: set[Path] = set()
    unique = []
    for path in candidates:
        resolved = path.resolve()
        if resolved not in seen and path.is_file():
            seen.add(resolved)
            unique.append(path)
    return unique


def list_runs() -> list[RunSummary]:
    """Summaries of every readable trace, newest first; unreadable files are skipped."""
    runs = []
    for path in trace_paths():
        try:
            runs.append(summarize(path))
        except (TraceError, OSError):
            continue
    return sorted(runs, key=lambda run: (run.created, run.run_id), reverse=True)


def resolve_run(ref: str) -> Path:
    """A trace path from a run id, a unique prefix of one, or a path."""
    as_path = Path(ref).expanduser()
    if as_path.is_file():
        return as_path
    runs = {path.stem: path for path in trace_paths()}
    for path in list(runs.values()):
        try:
            with open(path, "rb") as handle:
                run_id = json.loads(handle.readline()).get("run_id")
            if run_id:
                runs.setdefault(str(run_id), path)
        except (OSError, ValueError, AttributeError):
            continue
    if ref in runs:
        return runs[ref]
    matches = sorted({p for run_id, p in runs.items() if run_id.startswith(ref)})
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UsageError(f"no saved run matches {ref!r}", hint="run `memread traces` to list saved runs")
    raise UsageError(f"{ref!r} matches {len(matches)} runs", hint="give more characters of the run id")


def parse_age(text: str) -> float:
    """``30m``, ``12h``, ``7d``, ``2w`` -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    text = text.strip().lower()
    try:
        seconds = float(text[:-1]) * units[text[-1]]
        if not 0 <= seconds < math.inf:  # "-1d" would remove every run, "nand" none
            raise ValueError(text)
        return seconds
    except (KeyError, ValueError, IndexError):
        raise UsageError(f"cannot read the age {text!r}", hint="use a number and a unit: 30m, 12h, 7d, 2w") from None


def older_than(seconds: float, *, now: float | None = None) -> list[Path]:
    """Traces last written more than ``seconds`` ago."""
    now = time.time() if now is None else now
    return [path for path in trace_paths() if now - path.stat().st_mtime > seconds]


def remove(paths: Iterable[Path]) -> list[Path]:
    """Delete trace files; refuse files that are not traces. Returns what was removed."""
    removed = []
    for path in paths:
        with open(path, "rb") as handle:
            parse_lines([handle.readline()], path)  # raises TraceError when it is not a trace
        path.unlink()
        removed.append(path)
    return removed
