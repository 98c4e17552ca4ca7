"""The glue behind ``memread ask`` and ``memread resume``: opens a :class:`memread.run.Run` with the live view
as its sink, and turns the outcome into stdout (answers or ``--json``), stderr and an exit status.

The read itself (request, validation, backend, trace header, resume) is the library's (:mod:`memread.run`).
Imported only when one of those commands runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memread.cli.environment import Environment, current
from memread.errors import ExitStatus, MemreadError, TraceError
from memread.run import ReadRequest, Run, request_from_trace
from memread.settings import check_choice

PROGRESS_MODES = ("auto", "live", "plain", "none")


@dataclass(frozen=True)
class Output:
    """How ``ask`` shows a run: ``--json``, ``--quiet``, ``--progress``."""

    json: bool = False
    quiet: bool = False
    progress: str = "auto"

    def __post_init__(self) -> None:
        check_choice("--progress mode", self.progress, PROGRESS_MODES)


def _print_answers(env: Environment, results: list[Any]) -> None:
    for result in results:
        answer = result.answer if result.answer is not None else ""
        env.out(" ".join(answer.split()) if len(results) > 1 else answer.strip())


def run_ask(request: ReadRequest, output: Output | None = None, env: Environment | None = None) -> None:
    """Run ``memread ask``. Raises MemreadError (printed by the app) or typer.Exit for Ctrl-C (130)."""
    import typer

    from memread.cli.cmd_models import pull_progress
    from memread.cli.progress import progress_sink
    from memread.report import RunReport

    env = env or current()
    output = output or Output()
    request = request.validated()  # before anything opens: a bad option fails fast
    stdin = env.stdin_binary() if request.source == "-" else None
    with pull_progress(env) as progress:
        run = Run(request, stdin=stdin, progress=progress)
    view = None
    report = RunReport(history=run.history)
    try:
        for warning in run.warnings:
            env.err(f"warning: {warning}")
        total = run.count_chunks() if output.progress != "none" and not output.quiet else None
        view = progress_sink(env, mode=output.progress, quiet=output.quiet, total=total,
                             tokenizer=run.backend.tokenizer, history=run.history)
        try:
            results = run.read([s for s in (report, view) if s is not None])
        except KeyboardInterrupt:
            _close(view)
            view = None
            where = run.trace_path if request.write_trace else None
            if where is not None:
                env.err(f"interrupted: the run is saved in {where}")
                env.err("")
                env.err(f"hint: resume with `memread resume {report.started.run_id if report.started else where}`")
            else:
                env.err("interrupted (no trace was written: --no-trace)")
            if output.json:
                env.out(json.dumps(report.result(trace_path=str(where) if where else None), ensure_ascii=False))
            raise typer.Exit(int(ExitStatus.INTERRUPTED)) from None
        except MemreadError as error:
            if isinstance(error, TraceError):
                raise  # its hint already says whether and how the run can be resumed
            if run.writer is not None and run.writer.path is not None and report.started is not None:
                resume_hint = f"the run is saved: `memread resume {report.started.run_id}` continues it"
                error.hint = f"{error.hint}; {resume_hint}" if error.hint else resume_hint
            raise
        _close(view)
        view = None
        if output.json:
            saved = str(run.trace_path) if request.write_trace and run.trace_path is not None else None
            env.out(json.dumps(report.result(trace_path=saved), ensure_ascii=False, indent=2))
        else:
            _print_answers(env, results)
    finally:
        _close(view)
        run.close()


def _close(sink: Any) -> None:
    if sink is not None:
        sink.close()


def resume_run(ref: str, *, output: Output, password: str | None, env: Environment | None = None) -> None:
    """Run ``memread resume RUN``: the same read again, from the trace's header, continuing where it stopped."""
    run_ask(request_from_trace(ref, password=password), output, env)
