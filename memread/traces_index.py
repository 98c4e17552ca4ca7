"""Old import path, kept for plugins and older code: the code lives in :mod:`memread.traces.index`."""

from memread.traces.index import (
    RunSummary,
    list_runs,
    older_than,
    parse_age,
    remove,
    resolve_run,
    summarize,
    trace_paths,
    traces_dir,
)

__all__ = ["RunSummary", "list_runs", "older_than", "parse_age", "remove", "resolve_run", "summarize",
           "trace_paths", "traces_dir"]
