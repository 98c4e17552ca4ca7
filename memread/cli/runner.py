"""The glue behind ``memread ask`` and ``memread resume``: builds the backend and the sinks, runs
:func:`memread.ask.read`, and turns the outcome into stdout (answers or ``--json``), stderr and an exit status.

Imported only when one of those commands runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memread import defaults
from memread.cli.environment import Environment, current
from memread.errors import ExitStatus, MemreadError, TraceError, UsageError

PROGRESS_MODES = ("auto", "live", "plain", "none")
# Backend options never written to a trace (secrets).
_SECRET_OPTIONS = ("api_key",)


@dataclass
class AskRequest:
    """Everything ``memread ask`` was asked to do, as parsed from the command line."""

    source: str
    questions: list[str]
    strategy: str = defaults.STRATEGY
    model: str | None = None
    backend: str | None = None
    backend_options: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    password: str | None = None
    json_output: bool = False
    quiet: bool = False
    progress: str = "auto"
    trace: Path | None = None
    no_trace: bool = False
    resume: bool = False


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise UsageError(f"{name} must be one of {', '.join(choices)}, not {value!r}",
                         hint=f"see `memread ask --help` for {name}")


def _validate(request: AskRequest) -> None:
    if not request.questions:
        raise UsageError("no question to ask",
                         hint='memread ask FILE "your question" (or -q "question" -q "another")')
    for question in request.questions:
        if not question.strip():
            raise UsageError("a question is empty", hint="pass the question as text after the document")
    settings = request.settings
    _check_choice("--strategy", settings.get("strategy", request.strategy), defaults.STRATEGIES)
    _check_choice("--final-prompt", settings.get("final_prompt", defaults.FINAL_PROMPT), defaults.FINAL_PROMPTS)
    _check_choice("--recall-from", settings.get("recall_from", defaults.RECALL_FROM), ("memories", "chunks"))
    _check_choice("--layout", settings.get("layout", defaults.LAYOUT), defaults.LAYOUTS)
    _check_choice("--progress", request.progress, PROGRESS_MODES)
    if request.no_trace and request.resume:
        raise UsageError("--resume needs a trace, and --no-trace writes none", hint="drop one of the two")


def _find_resume_trace(request: AskRequest) -> Path:
    """--trace PATH if given, else the newest unfinished run of the same document and questions."""
    from memread.traces_index import list_runs, resolve_run

    if request.trace is not None:
        return resolve_run(str(request.trace))
    for run in list_runs():
        if run.status != "ok" and run.document == request.source and list(run.questions) == request.questions:
            return run.path
    raise UsageError("there is no unfinished run of these questions on this document to resume",
                     hint="run `memread traces` to list saved runs, then `memread resume RUN`")


def _pull_progress(env: Environment) -> Any:
    from memread.cli.cmd_models import pull_progress

    return pull_progress(env)


def _create_backend(request: AskRequest, env: Environment) -> Any:
    from memread.backends import create_backend, default_backend

    name = request.backend or default_backend()
    options = {key: value for key, value in request.backend_options.items() if value is not None}
    if request.settings.get("seed") is not None and name == "llamacpp":
        options.setdefault("seed", request.settings["seed"])
    if name == "llamacpp":
        with _pull_progress(env) as progress:
            if options.get("context_length") is None:
                options["context_length"] = _llamacpp_context(request, progress)
            return create_backend(name, model=request.model, progress=progress, **options)
    return create_backend(name, model=request.model, **options)


def _llamacpp_context(request: AskRequest, progress: Any) -> int:
    """Size llama.cpp's context from what the run needs (measured with the model's own tokenizer, a
    vocab-only load): at least the default window, more when the settings need it (callback's recalled
    memory), never past the model's training context (the loop's budget check then explains)."""
    from memread import models
    from memread.backends.llamacpp import DEFAULT_CONTEXT, LlamaTokenizer, _training_context
    from memread.loop import LoopSettings, context_needed

    path = models.resolve(request.model or models.default_model(), progress=progress)
    needed = context_needed(LoopSettings(**request.settings), request.questions, LlamaTokenizer(path))
    size = max(DEFAULT_CONTEXT, needed)
    training = _training_context(path)
    return min(size, training) if training else size


def _trace_header(request: AskRequest, document: Any, backend: Any) -> dict[str, Any]:
    from memread.ask import document_info
    from memread.prompts import templates

    settings = request.settings
    return {
        "document_info": document_info(request.source, document),
        "templates": templates(settings.get("strategy", request.strategy),
                               final_style=settings.get("final_prompt", defaults.FINAL_PROMPT),
                               layout=settings.get("layout", defaults.LAYOUT)),
        "backend_options": {k: v for k, v in request.backend_options.items()
                            if v is not None and k not in _SECRET_OPTIONS},
        "requested_model": request.model,
        "tokenizer": getattr(backend.tokenizer, "name", None),
        "context_length": backend.context_length,
    }


def _print_answers(env: Environment, results: list[Any]) -> None:
    for result in results:
        answer = result.answer if result.answer is not None else ""
        env.out(" ".join(answer.split()) if len(results) > 1 else answer.strip())


def run_ask(request: AskRequest, env: Environment | None = None) -> None:
    """Run ``memread ask``. Raises MemreadError (printed by the app) or typer.Exit for Ctrl-C (130)."""
    import typer

    from memread.ask import count_chunks, open_source, read
    from memread.cli.progress import progress_sink
    from memread.loop import LoopSettings
    from memread.report import RunReport
    from memread.trace import TraceWriter, check_resume, check_writable, read_trace

    env = env or current()
    _validate(request)
    trace_obj = read_trace(_find_resume_trace(request)) if request.resume else None

    # The document is opened (and its first bytes checked) and the trace's place checked before the model
    # loads: bad input or a read-only trace folder fails fast.
    if not request.no_trace:
        check_writable(trace_obj.path if trace_obj else request.trace,
                       run_id=trace_obj.run_id if trace_obj else None)
    stdin = env.stdin_binary() if request.source == "-" else None
    document = open_source(request.source, stdin=stdin, password=request.password)
    settings = LoopSettings(**request.settings)
    backend = _create_backend(request, env)
    writer = view = None
    report: Any = None
    trace_path: Path | None = None
    try:
        for warning in getattr(backend, "warnings", []):
            env.err(f"warning: {warning}")
        history: list[Any] = []
        if trace_obj is not None:
            check_resume(trace_obj, questions=request.questions, strategy=settings.strategy, model=backend.model,
                         settings=settings.to_dict())
            history = list(trace_obj.events())
            trace_path = trace_obj.path
        report = RunReport(history=history)
        if not request.no_trace:
            writer = TraceWriter(trace_path or request.trace, header=_trace_header(request, document, backend),
                                 resume=trace_obj is not None)
        total = None
        if request.progress != "none" and not request.quiet:
            total = count_chunks(request.source, backend, settings, password=request.password)
        view = progress_sink(env, mode=request.progress, quiet=request.quiet, total=total, tokenizer=backend.tokenizer,
                             history=history)
        sinks = [s for s in (writer, report, view) if s is not None]
        try:
            results = read(document, request.questions, backend=backend, settings=settings, sinks=sinks,
                           resume=trace_obj)
        except KeyboardInterrupt:
            _close(view)
            view = None
            where = writer.path if writer is not None else None
            if where is not None:
                env.err(f"interrupted: the run is saved in {where}")
                env.err("")
                env.err(f"hint: resume with `memread resume {report.started.run_id if report.started else where}`")
            else:
                env.err("interrupted (no trace was written: --no-trace)")
            if request.json_output:
                env.out(json.dumps(report.result(trace_path=str(where) if where else None), ensure_ascii=False))
            raise typer.Exit(int(ExitStatus.INTERRUPTED)) from None
        except MemreadError as error:
            if isinstance(error, TraceError):
                raise  # its hint already says whether and how the run can be resumed
            if writer is not None and writer.path is not None and report is not None and report.started is not None:
                resume_hint = f"the run is saved: `memread resume {report.started.run_id}` continues it"
                error.hint = f"{error.hint}; {resume_hint}" if error.hint else resume_hint
            raise
        _close(view)
        view = None
        if request.json_output:
            saved = str(writer.path) if writer is not None and writer.path is not None else None
            env.out(json.dumps(report.result(trace_path=saved), ensure_ascii=False, indent=2))
        else:
            _print_answers(env, results)
    finally:
        _close(view)
        if writer is not None:
            writer.close()
        backend.close()


def _close(sink: Any) -> None:
    if sink is not None:
        sink.close()


def resume_run(run: str, *, json_output: bool, quiet: bool, progress: str, password: str | None,
               env: Environment | None = None) -> None:
    """Run ``memread resume RUN``: the same read again, from the trace's header, continuing where it stopped."""
    from memread.trace import read_trace
    from memread.traces_index import resolve_run

    path = resolve_run(run)
    trace = read_trace(path)
    header = trace.header
    if trace.status() == "running":
        raise UsageError(f"run {trace.run_id} is still being written by another memread",
                         hint="wait for it to finish, or stop it (Ctrl-C) and resume then")
    if trace.status() == "ok":
        raise UsageError(f"run {trace.run_id} already finished", hint=f"see its answer: memread traces show {trace.run_id}")
    info = header.get("document_info") or {}
    source = str(info.get("source") or header.get("document") or "")
    if source != "-" and info.get("path") and not Path(source).exists():
        source = str(info["path"])  # resumed from another working directory
    settings = dict(header.get("settings") or {})
    request = AskRequest(
        source=source,
        questions=list(trace.questions),
        strategy=str(header.get("strategy") or settings.get("strategy") or defaults.STRATEGY),
        model=header.get("requested_model") or header.get("model"),
        backend=header.get("backend"),
        backend_options=dict(header.get("backend_options") or {}),
        settings=settings,
        password=password,
        json_output=json_output,
        quiet=quiet,
        progress=progress,
        trace=path,
        resume=True,
    )
    run_ask(request, env)
