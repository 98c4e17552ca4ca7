"""One read, wired end to end: source -> document -> chunks (counted by the backend's tokenizer) -> Loop -> sinks.

This is the library behind ``memread ask`` and ``memread resume``: the CLI only parses options, builds the
backend and the sinks, and renders. Nothing here prints.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from memread.backends.base import Backend
from memread.document import Chunk, Document
from memread.events import Sink, Warned
from memread.loop import LaneResult, Loop, LoopSettings

if TYPE_CHECKING:
    from memread.traces.reader import Trace

# Counting the chunks up front costs one extra pass of extraction and tokenization with the model's own
# tokenizer (0.1-0.3M tokens/s for llama.cpp's); above this size the progress display goes without a total
# rather than delay the start by more than a few seconds.
COUNT_LIMIT_BYTES = 8 * 1024 * 1024


def open_source(source: str, *, stdin: BinaryIO | None = None, password: str | None = None) -> Document:
    """Open ``source`` (a path, a directory or ``-``) as a lazy :class:`Document`; raises InputError."""
    from memread.ingest import open_document

    return open_document(source, stdin=stdin, password=password)


def count_chunks(source: str, backend: Backend, settings: LoopSettings, *, password: str | None = None) -> int | None:
    """How many chunks ``source`` makes, by one pass over it; None for stdin, pipes and very large inputs."""
    if source == "-":
        return None
    path = Path(source)
    try:
        if path.is_file():
            size = path.stat().st_size
        elif path.is_dir():
            size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
        else:
            return None  # a named pipe or something stranger: reading it twice would consume it
    except OSError:
        return None
    if size > COUNT_LIMIT_BYTES:
        return None
    from memread.backends.text_guard import guard
    from memread.chunk import Chunker
    from memread.strategies import check_settings

    document = open_source(source, password=password)
    tokenizer = guard(backend).tokenizer  # as the loop will chunk
    chunk_tokens = settings.chunk_tokens or check_settings(settings).chunk_tokens or 1
    return sum(1 for _ in Chunker(tokenizer, chunk_tokens).chunks(document.segments()))


def _chunks_with_warnings(document: Document, chunks: Iterable[Chunk], sinks: Sequence[Sink],
                          said: Iterable[str] = ()) -> Iterator[Chunk]:
    """Pass chunks through, turning the document's warnings (scanned pages, bad bytes, skipped files) into
    Warned events as soon as they appear, so the trace and the view show them. ``said``: warnings the trace of
    a resumed run holds already (its earlier session read the same document and met them there)."""
    shown = 0
    already = set(said)

    def flush() -> None:
        nonlocal shown
        while shown < len(document.warnings):
            event = Warned(message=document.warnings[shown])
            shown += 1
            if event.message in already:
                continue
            for sink in sinks:
                sink(event)

    for chunk in chunks:
        flush()
        yield chunk
    flush()


def read(
    document: Document,
    questions: Sequence[str],
    *,
    backend: Backend,
    settings: LoopSettings,
    sinks: Sequence[Sink] = (),
    resume: Trace | None = None,
    run_id: str | None = None,
) -> list[LaneResult]:
    """Read ``document`` once for every question and answer each one.

    Refuses (BudgetError) before the first model call when a step could not fit the backend's context.
    With ``resume`` (a trace read back), the run keeps the trace's run id, the chunks already read are
    re-chunked, checked against the text hashes the trace recorded, and skipped, and the lanes restart from
    their recorded strategy state.
    """
    from memread.chunk import Chunker

    all_sinks: list[Sink] = list(sinks)
    loop = Loop(
        backend,
        list(questions),
        settings,
        sinks=all_sinks,
        document=document.name,
        run_id=resume.run_id if resume else run_id,
    )
    loop.check_budget()
    loop.strategy.observe_document(document)
    # The loop's backend: guarded when it cannot keep document text plain, and then it measures the text as sent.
    chunks: Iterable[Chunk] = Chunker(loop.backend.tokenizer, loop.strategy.chunk_tokens).chunks(document.segments())
    if resume is None:
        return loop.run(_chunks_with_warnings(document, chunks, all_sinks))
    said = [str(r.get("message")) for r in resume.effective_records() if r.get("type") == "warned"]
    chunks = _chunks_with_warnings(document, chunks, all_sinks, said)
    from memread.traces.resume import verify_chunks

    point = resume.resume_point()
    chunks = verify_chunks(resume, chunks, upto=point.start_step, every_recorded=loop.strategy.chooses_order)
    return loop.run(chunks, start_step=point.start_step, states=point.states, exited=point.exited)


def document_info(source: str, document: Document) -> dict[str, Any]:
    """What the trace header records about the document, to recognise it again on resume."""
    info: dict[str, Any] = {"source": source, "format": document.format, "size_bytes": document.size_bytes}
    if source != "-":
        try:
            stat = os.stat(source)
            info["mtime"] = stat.st_mtime
            info["path"] = str(Path(source).resolve())
        except OSError:
            pass
    return info

