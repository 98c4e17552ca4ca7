"""Traces: every run written as JSONL while it happens, read back, resumed and found again (docs/trace-format.md).

One concept a module: :mod:`~memread.traces.records` (an event as a JSON line and back), :mod:`~.writer` (the sink
that appends them), :mod:`~.locks` (is a trace still being written), :mod:`~.reader` (a trace read back, and where
its run can restart), :mod:`~.resume` (may this session continue it) and :mod:`~.index` (saved runs: named,
placed, listed). The names below are the public face; ``memread.trace`` still hands them on for older code.
"""

from memread.traces.index import RunSummary, default_trace_path, list_runs, new_run_id, resolve_run
from memread.traces.reader import ResumePoint, Trace, parse_lines, read_trace
from memread.traces.records import FORMAT_VERSION, chunk_record, event_to_record, record_to_event, text_hash
from memread.traces.resume import check_resume, verify_chunks
from memread.traces.writer import TraceWriter, check_writable

__all__ = [
    "FORMAT_VERSION", "ResumePoint", "RunSummary", "Trace", "TraceWriter", "check_resume", "check_writable",
    "chunk_record", "default_trace_path", "event_to_record", "list_runs", "new_run_id", "parse_lines",
    "read_trace", "record_to_event", "resolve_run", "text_hash", "verify_chunks",
]
