"""A read for the speed scripts: a text as a document, the events of a run collected, and the prefill floor
(every token of a text prefilled once, chunk by chunk, with a fresh KV cache: what no memory reader can beat)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from memread.document import Document, Provenance, Segment
from memread.events import Event, RunFinished, StepFinished


@dataclass
class Collector:
    steps: list[StepFinished] = field(default_factory=list)
    finished: RunFinished | None = None

    def __call__(self, event: Event) -> None:
        if isinstance(event, StepFinished):
            self.steps.append(event)
        elif isinstance(event, RunFinished):
            self.finished = event


def text_document(name: str, text: str) -> Document:
    return Document(name, "text", lambda _doc: iter([Segment(text, Provenance(name, line_start=1))]))


def prefill_floor(model_path: Path, text: str, chunk_tokens: int, n_ctx: int, threads: int) -> tuple[float, int]:
    """Seconds to prefill every token of ``text`` once, chunk by chunk, fresh KV each time."""
    from memread.backends.llamacpp import _load_llama

    llm = _load_llama(model_path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads)
    ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
    started = time.perf_counter()
    for i in range(0, len(ids), chunk_tokens):
        llm.reset()
        llm.eval(ids[i:i + chunk_tokens])
    seconds = time.perf_counter() - started
    del llm
    return seconds, len(ids)
