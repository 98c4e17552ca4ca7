"""A read as a library: what ``memread ask`` and ``memread resume`` do, without the command line.

A :class:`ReadRequest` says what to read and how; :class:`Run` opens it (the document first, so bad input
fails before a model loads; then the backend, through :func:`open_backend`, the one builder ``ask``,
``resume`` and ``bench`` share), writes the trace as it goes and resumes an interrupted one::

    from memread.run import ReadRequest, Run

    request = ReadRequest("book.pdf", ["Who repaired the lamp?"])
    with Run(request) as run:
        answers = run.read()

    # after Ctrl-C, a crash or kill -9: the same read, continued from its last finished step
    with Run(request_from_trace(run_id)) as run:
        answers = run.read()

Nothing here prints; the CLI adds the live view, prints answers and turns errors into exit statuses.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO

from memread.errors import UsageError
from memread.settings import Settings

if TYPE_CHECKING:
    from memread.backends.base import Backend
    from memread.document import Document
    from memread.events import Event, Sink
    from memread.loop import LaneResult
    from memread.traces.reader import Trace
    from memread.traces.writer import TraceWriter

# Backend options never written to a trace (secrets).
SECRET_OPTIONS = ("api_key",)


@dataclass(frozen=True)
class ReadRequest:
    """Everything one read needs: the source, the questions, the settings and the backend to use.

    ``trace``: where to write the trace (None: the data folder); ``write_trace=False`` writes none.
    ``resume``: continue the unfinished run of ``trace`` (or, without one, the latest unfinished run of the
    same source and questions) instead of starting over.
    """

    source: str
    questions: Sequence[str]
    settings: Settings = field(default_factory=Settings)
    model: str | None = None
    backend: str | None = None
    backend_options: dict[str, Any] = field(default_factory=dict)
    password: str | None = None
    trace: Path | None = None
    write_trace: bool = True
    resume: bool = False

    def validated(self) -> ReadRequest:
        """This request with its settings checked and the strategy's options completed (UsageError if not
        valid); raises before anything is opened."""
        from memread.strategies import check_settings

        if not self.questions:
            raise UsageError("no question to ask",
                             hint='memread ask FILE "your question" (or -q "question" -q "another")')
        for question in self.questions:
            if not question.strip():
                raise UsageError("a question is empty", hint="pass the question as text after the document")
        if self.resume and not self.write_trace:
            raise UsageError("--resume needs a trace, and --no-trace writes none", hint="drop one of the two")
        return replace(self, questions=list(self.questions), settings=check_settings(self.settings))


def open_backend(name: str | None = None, *, model: str | None = None, options: dict[str, Any] | None = None,
                 settings: Settings | None = None, questions: Sequence[str] = (),
                 progress: Callable[[Any], None] | None = None) -> Backend:
    """Create backend ``name`` for a read, as its capabilities ask: an engine that allocates its context at
    load is sized for ``settings`` and ``questions``, one that pulls models reports to ``progress``, one that
    takes its seed at load gets ``settings.seed``. Options that are None are left out."""
    from memread.backends import backend_capabilities, create_backend, default_backend

    name = name or default_backend()
    caps = backend_capabilities(name)
    chosen = {key: value for key, value in (options or {}).items() if value is not None}
    if caps.seeded_at_load and settings is not None and settings.seed is not None:
        chosen.setdefault("seed", settings.seed)
    if caps.pulls_models and progress is not None:
        chosen["progress"] = progress
    if caps.sizes_context and settings is not None and questions:
        from memread.loop import context_needed

        chosen["needs"] = functools.partial(context_needed, settings, list(questions))
    return create_backend(name, model=model, **chosen)


def find_resume_trace(request: ReadRequest) -> Path:
    """``request.trace`` if given, else the newest unfinished run of the same source and questions."""
    from memread.traces.index import list_runs, resolve_run

    if request.trace is not None:
        return resolve_run(str(request.trace))
    for run in list_runs():
        if run.status != "ok" and run.document == request.source and list(run.questions) == list(request.questions):
            return run.path
    raise UsageError("there is no unfinished run of these questions on this document to resume",
                     hint="run `memread traces` to list saved runs, then `memread resume RUN`")


def request_from_trace(ref: str, *, password: str | None = None) -> ReadRequest:
    """The request that made the trace ``ref`` (a path, a run id or a unique prefix), set to resume it.
    UsageError when that run is still being written or already finished."""
    from memread.traces.index import resolve_run
    from memread.traces.reader import read_trace

    path = resolve_run(ref)
    trace = read_trace(path)
    if trace.status() == "running":
        raise UsageError(f"run {trace.run_id} is still being written by another memread",
                         hint="wait for it to finish, or stop it (Ctrl-C) and resume then")
    if trace.status() == "ok":
        raise UsageError(f"run {trace.run_id} already finished",
                         hint=f"see its answer: memread traces show {trace.run_id}")
    header = trace.header
    if "bench" in header:
        raise UsageError(f"run {trace.run_id} is a sample of the `memread bench` sweep in {path.parent.parent}",
                         hint="run that memread bench command again: it continues this sample where it stopped")
    info = header.get("document_info") or {}
    source = str(info.get("source") or header.get("document") or "")
    if source != "-" and info.get("path") and not Path(source).exists():
        source = str(info["path"])  # resumed from another working directory
    settings = dict(header.get("settings") or {})
    settings.setdefault("strategy", header.get("strategy"))
    return ReadRequest(source=source, questions=list(trace.questions), settings=Settings.from_dict(settings),
                       model=header.get("requested_model") or header.get("model"), backend=header.get("backend"),
                       backend_options=dict(header.get("backend_options") or {}), password=password, trace=path,
                       resume=True)


def trace_header(request: ReadRequest, document: Document, backend: Backend, strategy_templates: dict[str, str]
                 ) -> dict[str, Any]:
    """What a trace records besides the run's own fields: the document's fingerprint, the prompt templates,
    the backend options (no secrets), the tokenizer and the context window."""
    from memread.ask import document_info

    return {
        "document_info": document_info(request.source, document),
        "templates": strategy_templates,
        "backend_options": {k: v for k, v in request.backend_options.items()
                            if v is not None and k not in SECRET_OPTIONS},
        "requested_model": request.model,
        "tokenizer": getattr(backend.tokenizer, "name", None),
        "context_length": backend.context_length,
    }


class Run:
    """One read of ``request``, with its trace. Opening checks the input and the trace's place before the model
    loads; :meth:`read` runs it (once); :meth:`close` (or the ``with`` block) releases the backend.

    ``stdin``: the bytes of ``-`` (standard input). ``progress``: model-download progress for backends that
    pull models. After opening: ``document``, ``backend``, ``warnings`` (what the backend said at start),
    ``history`` (the events of the run being resumed, for a view to show where it stands) and ``trace_path``.
    """

    def __init__(self, request: ReadRequest, *, stdin: BinaryIO | None = None,
                 progress: Callable[[Any], None] | None = None) -> None:
        from memread.ask import open_source
        from memread.traces.reader import read_trace
        from memread.traces.resume import check_resume
        from memread.traces.writer import check_writable

        self.request = request.validated()
        self.resumed: Trace | None = read_trace(find_resume_trace(self.request)) if self.request.resume else None
        if self.request.write_trace:
            check_writable(self.resumed.path if self.resumed else self.request.trace,
                           run_id=self.resumed.run_id if self.resumed else None)
        self.document: Document = open_source(self.request.source, stdin=stdin, password=self.request.password)
        settings = self.request.settings
        self.backend: Backend = open_backend(self.request.backend, model=self.request.model,
                                             options=self.request.backend_options, settings=settings,
                                             questions=self.request.questions, progress=progress)
        try:
            if self.resumed is not None:
                check_resume(self.resumed, questions=self.request.questions, strategy=settings.strategy,
                             model=self.backend.model, settings=settings.to_dict())
        except BaseException:
            self.backend.close()
            raise
        self.warnings: list[str] = list(getattr(self.backend, "warnings", []))
        self.history: list[tuple[float, Event]] = list(self.resumed.events()) if self.resumed else []
        self.writer: TraceWriter | None = None
        self._read = False

    @property
    def trace_path(self) -> Path | None:
        """Where the trace is (known once the run has started, or from the start when resuming or given)."""
        if self.writer is not None and self.writer.path is not None:
            return self.writer.path
        return self.resumed.path if self.resumed else self.request.trace

    def count_chunks(self) -> int | None:
        """How many chunks the source makes (one extra pass; None for stdin and very large inputs, and for a
        strategy that indexes the whole document before it reads: its ``Indexed`` event says, without the pass)."""
        from memread.ask import count_chunks
        from memread.strategies import strategy_class

        if strategy_class(self.request.settings.strategy).chooses_order:
            return None
        return count_chunks(self.request.source, self.backend, self.request.settings, password=self.request.password)

    def read(self, sinks: Sequence[Sink] = ()) -> list[LaneResult]:
        """Read the document and answer every question; events go to the trace, then to ``sinks``."""
        from memread.ask import read
        from memread.strategies import create_strategy
        from memread.traces.writer import TraceWriter

        if self._read:
            raise UsageError("this run has been read already", hint="open a new Run to read again")
        self._read = True
        if self.request.write_trace:
            templates = create_strategy(self.request.settings).templates()
            self.writer = TraceWriter(self.trace_path,
                                      header=trace_header(self.request, self.document, self.backend, templates),
                                      resume=self.resumed is not None)
        every: list[Sink] = [self.writer] if self.writer is not None else []
        return read(self.document, self.request.questions, backend=self.backend, settings=self.request.settings,
                    sinks=[*every, *sinks], resume=self.resumed)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.backend.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
