"""Trace records: how events become JSON lines and back (the trace format, docs/trace-format.md).

Field names are those of :mod:`memread.events`; unknown fields are ignored on reading and missing ones
take their defaults, so traces from older and newer versions of the same format both read.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import MISSING, fields
from typing import Any

from memread.document import Chunk, Span
from memread.events import (
    Answered,
    Event,
    Indexed,
    LaneExited,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    Warned,
)

FORMAT_VERSION = 1

KINDS: dict[type, str] = {
    RunStarted: "run_started",
    Indexed: "indexed",
    StepStarted: "step_started",
    StepFinished: "step_finished",
    LaneExited: "lane_exited",
    Answered: "answered",
    Warned: "warned",
    RunFinished: "run_finished",
}
CLASSES = {kind: cls for cls, kind in KINDS.items()}
# The fields each event cannot do without (those with no default): a record that lacks one cannot be rebuilt.
NEEDED = {kind: frozenset(f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING)
          for kind, cls in CLASSES.items()}
# Records worth an fsync: losing them would lose work. A StepStarted alone can be re-done.
DURABLE = {"header", "resumed", "step_finished", "lane_exited", "answered", "run_finished"}


def text_hash(text: str) -> str:
    """The fingerprint of a chunk's text (sha256, hex)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def is_whole(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` holds every field its event needs (a record of no event type always does)."""
    return NEEDED.get(str(record.get("type")), frozenset()) <= record.keys()


# --- events <-> records ---------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """Tuples, spans and nested containers as plain JSON values."""
    if isinstance(value, Span):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def chunk_record(chunk: Chunk, *, with_text: bool) -> dict[str, Any]:
    """A chunk as stored: provenance, token count and text hash (and the text itself once, at step start)."""
    record: dict[str, Any] = {
        "index": chunk.index,
        "tokens": chunk.tokens,
        "chars": len(chunk.text),
        "sha256": text_hash(chunk.text),
        "where": chunk.describe(),
        "spans": [span.to_dict() for span in chunk.spans],
    }
    if with_text:
        record["text"] = chunk.text
    return record


def event_to_record(event: Event, *, at: float | None = None) -> dict[str, Any]:
    """One event as a JSON-able trace record (``type`` + the event's fields + ``t``, the wall time)."""
    kind = KINDS[type(event)]
    record: dict[str, Any] = {"type": kind, "t": round(time.time() if at is None else at, 4)}
    for f in fields(event):
        value = getattr(event, f.name)
        if isinstance(value, Chunk):
            record[f.name] = chunk_record(value, with_text=kind == "step_started")
        else:
            record[f.name] = jsonable(value)
    return record


def chunk_from_record(data: Mapping[str, Any], text: str = "") -> Chunk:
    spans = [Span.from_dict(dict(span)) for span in data.get("spans", [])]
    return Chunk(index=int(data["index"]), text=data.get("text", text), tokens=int(data.get("tokens", 0)),
                 spans=tuple(spans))


def record_to_event(record: Mapping[str, Any], chunks: Mapping[int, Chunk] | None = None) -> Event | None:
    """Rebuild an event from a record; None for records that are not events (header, resumed).

    Fields unknown to this version are ignored and missing ones take their defaults, so old and new
    traces both read. ``chunks`` maps chunk index to the chunk seen at step start (StepFinished records
    store only the chunk's hash, not its text).
    """
    cls = CLASSES.get(str(record.get("type")))
    if cls is None:
        return None
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in record:
            continue
        value = record[f.name]
        if f.name == "chunk":
            known = (chunks or {}).get(int(value["index"]))
            value = known if known is not None else chunk_from_record(value)
        elif isinstance(value, list) and "tuple" in str(f.type):
            value = tuple(value)
        kwargs[f.name] = value
    return cls(**kwargs)  # type: ignore[no-any-return]
