"""The old import path of :mod:`memread.traces.index`, kept so plugins and programs written against it still
work. New code imports from ``memread.traces.index``."""

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
