"""Resuming from a trace: whether a new session may continue it. The trace says where its run stopped
(:meth:`Trace.resume_point <memread.traces.reader.Trace.resume_point>`); these check that what the session brings
is what the trace was written from: the same questions, strategy, model and settings (:func:`check_resume`), and
the same document, chunk by chunk (:func:`verify_chunks`). Each refusal names what changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from memread.document import Chunk
from memread.errors import TraceError
from memread.traces.reader import Trace
from memread.traces.records import jsonable, text_hash


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
