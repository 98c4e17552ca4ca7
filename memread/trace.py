"""Old import path, kept for plugins and older code: the code lives in the package :mod:`memread.traces`."""

from memread.traces.index import INDEX_NAME, default_trace_path, new_run_id, note_trace
from memread.traces.reader import ResumePoint, Trace, parse_lines, read_trace
from memread.traces.records import (
    DURABLE,
    FORMAT_VERSION,
    chunk_from_record,
    chunk_record,
    event_to_record,
    jsonable,
    record_to_event,
    text_hash,
)
from memread.traces.resume import check_resume, verify_chunks
from memread.traces.writer import TraceWriter, check_writable

__all__ = [
    "DURABLE", "FORMAT_VERSION", "INDEX_NAME", "ResumePoint", "Trace", "TraceWriter", "check_resume", "check_writable",
    "chunk_from_record", "chunk_record", "default_trace_path", "event_to_record", "jsonable", "new_run_id",
    "note_trace", "parse_lines", "read_trace", "record_to_event", "text_hash", "verify_chunks",
]
