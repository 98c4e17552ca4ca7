"""Answering one benchmark sample with one method, through the same library as ``memread ask``.

Methods:

* any strategy (``overwrite`` / ``gated`` / ``callback`` / a plugin's) — the reading loop
  (:func:`memread.ask.read`) with that strategy;
* ``full`` — the whole document in one prompt, when prompt + answer fit the backend's context window;
  otherwise the sample is *not applicable* ("N/A", as in the papers' tables), never truncated;
* ``bm25`` — retrieval-augmented generation: the document cut into passages by memread's chunker, the
  ``k`` passages that best match the question by BM25 (SQLite FTS5, the index of :mod:`memread.recall`)
  put in one prompt in document order. By default ``k`` passages fill one chunk budget, so the prompt is
  the size of one memory step;
* ``closed-book`` — the question alone, through memread's final-answer prompt with the empty memory ("No
  previous memory"): what the model answers from what it already knows. It is the floor every other method
  should clear, and it shows how many questions need no reading at all (MemAgent removed the questions a 7B
  model answered without the text; memread keeps them and reports this instead). It is also what a strategy
  answers when its memory never takes anything from the document.

The one-prompt baselines use MemAgent's final-answer instruction with the text in place of the memory, so
the answer is extracted and scored exactly like the loop's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memread.backends.base import Backend, ChatRequest, Completion, Message
from memread.bench.tasks import Sample
from memread.document import Document, Provenance, Segment
from memread.errors import BackendError, UsageError
from memread.events import Answered, Event, RunFinished, RunStarted, StepFinished
from memread.recall import Hit, TextIndex
from memread.report import kept_steps_seconds
from memread.settings import CHUNK_TOKENS
from memread.settings import Settings as LoopSettings
from memread.strategies import strategy_class, strategy_names

if TYPE_CHECKING:
    from memread.traces import Trace

BASELINES = ("full", "bm25", "closed-book")
NO_PASSAGES = "(no passage matched the question)"  # BM25-RAG's text when no passage shares a word with the question
BASELINE_LABELS = {"full": "full context", "bm25": "BM25-RAG", "closed-book": "closed book (no document)"}


def method_names() -> list[str]:
    """Every method: the registered strategies (built-ins, then plugins'), then the baselines."""
    return [*strategy_names(), *BASELINES]


def is_strategy(method: str) -> bool:
    """Whether ``method`` is a strategy (the reading loop) rather than a baseline."""
    return method not in BASELINES


def method_label(method: str) -> str:
    """How tables name a method: a strategy's title ("overwrite (MemAgent)"), a baseline's label."""
    if method in BASELINE_LABELS:
        return BASELINE_LABELS[method]
    try:
        return strategy_class(method).title()
    except UsageError:  # results of a strategy that is not installed here
        return method


_INSTRUCTIONS = {
    "boxed": "Please answer the problem based on the {what} and put the answer in \\boxed{{}}.",
    "therefore": 'Please answer the problem based on the {what} and format your response as follows '
                 '"Therefore, the answer is (insert answer here)".',
}


def one_prompt(question: str, text: str, *, retrieved: bool, style: str) -> str:
    """The prompt of the one-prompt baselines: MemAgent's final-answer instruction with the text in place of
    the memory. The text comes first and the problem and the instruction are repeated after it, as RULER's
    QA template does: with the instruction only before a 7K-token article the default model forgot to box
    its answer, and a baseline should not lose on format."""
    what = "passages retrieved from an article" if retrieved else "article"
    instruction = _INSTRUCTIONS[style].format(what=what)
    return (f"You are presented with {'some ' if retrieved else 'an '}{what} and a problem. {instruction}\n\n"
            f"<article>\n{text}\n</article>\n\n<problem> \n{question}\n</problem>\n\n{instruction}\n\n"
            "Your answer:\n")


@dataclass
class Outcome:
    """What one method produced for one sample (the measured part of a result record)."""

    status: str  # "ok" | "error" | "n/a"
    prediction: str | None = None
    reply: str = ""
    boxed: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    prefill_tokens: int = 0  # prompt tokens of the calls whose prefill time the engine reported
    prefill_seconds: float = 0.0
    model_seconds: float = 0.0
    seconds: float = 0.0  # wall time of the whole method on this sample (chunking included)
    chunks_read: int | None = None
    exited_at: int | None = None
    error: str | None = None
    note: str | None = None
    # The text the final answer was given from when it is not the whole document: the final memory (loop) or
    # the retrieved passages (BM25-RAG). Whether the gold is still in it tells reading failures from answering.
    kept: str | None = None
    # The reading loop's steps, for looking at why a sample went as it did (results.jsonl only: the replies
    # quote the benchmark): each chunk read, the model's reply, what the strategy made of it, why it stopped.
    steps: list[dict[str, Any]] | None = None
    # The steps at which an interrupted reading of this sample was continued (:class:`Partial`): the counts and
    # seconds above then add up every session's completed steps (a step cut short is done again, and its time
    # is not counted).
    resumed_at: list[int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class MethodSettings:
    loop: LoopSettings
    rag_passage_tokens: int = 512
    rag_k: int | None = None  # None: as many passages as fill one chunk budget

    @property
    def k(self) -> int:
        return self.rag_k or max(1, (self.loop.chunk_tokens or CHUNK_TOKENS) // self.rag_passage_tokens)


def text_document(sample: Sample) -> Document:
    """The sample's document: its real file through memread's loaders (docqa), else its context as one segment."""
    if sample.source is not None:
        from memread.ingest import open_document

        return open_document(sample.source)
    return Document(sample.key, "text", lambda _doc: iter([Segment(sample.context, Provenance(sample.key))]),
                    size_bytes=len(sample.context.encode("utf-8")))


def document_text(sample: Sample) -> str:
    """The sample's whole text, as memread's loaders give it (the context itself for a built sample)."""
    if sample.source is None:
        return sample.context
    return "".join(segment.text for segment in text_document(sample).segments())


@dataclass(frozen=True)
class Partial:
    """Where the reading of one sample keeps its trace while it runs, so that a sweep stopped mid-sample (Ctrl-C,
    kill -9, the end of a session) continues at the step it reached instead of reading the sample again.
    ``tag`` is what must be the same to continue (the sweep's config, the sample, the machine, whose speed the
    seconds measure); a trace with another tag, or unreadable, is read again from the start."""

    path: Path
    tag: Mapping[str, Any] = field(default_factory=dict)


def run_method(method: str, sample: Sample, backend: Backend, settings: MethodSettings, *,
               partial: Partial | None = None, on_event: Callable[[Event], None] | None = None) -> Outcome:
    """Answer ``sample`` with ``method``. A backend failure is an ``error`` outcome (scored 0); a prompt that
    cannot fit is ``n/a`` for ``full``. Budget errors of the loop (settings that never fit) and Ctrl-C
    propagate. A strategy with ``partial`` writes its trace there as it reads, and continues the one it finds
    (the caller removes it once the sample's record is written); the one-call baselines have nothing to
    continue. ``on_event`` sees a strategy's reading-loop events as they come (progress)."""
    started = time.perf_counter()
    earlier = 0.0
    try:
        if is_strategy(method):
            outcome, earlier = _run_loop(method, sample, backend, settings.loop, partial, on_event)
        elif method == "full":
            outcome = _run_full(sample, backend, settings.loop)
        elif method == "bm25":
            outcome = _run_bm25(sample, backend, settings)
        elif method == "closed-book":
            outcome = _run_closed_book(sample, backend, settings.loop)
        else:
            raise ValueError(f"unknown method {method!r}")
    except BackendError as error:
        outcome = Outcome(status="error", error=error.message)
    outcome.seconds = earlier + time.perf_counter() - started
    return outcome


class _Collector:
    def __init__(self) -> None:
        self.steps: list[StepFinished] = []
        self.answered: Answered | None = None
        self.finished: RunFinished | None = None

    def __call__(self, event: Event) -> None:
        if isinstance(event, StepFinished):
            self.steps.append(event)
        elif isinstance(event, Answered):
            self.answered = event
        elif isinstance(event, RunFinished):
            self.finished = event


def settings_for(strategy: str, settings: LoopSettings) -> LoopSettings:
    """``settings`` for one strategy of a sweep: the options it takes (a sweep's options may be meant for
    another of its strategies, such as --no-exit-gate for gated beside overwrite)."""
    takes = {f.name for f in strategy_class(strategy).option_fields()}
    return replace(settings, strategy=strategy,
                   options={name: value for name, value in settings.options.items() if name in takes})


def _run_loop(strategy: str, sample: Sample, backend: Backend, settings: LoopSettings,
              partial: Partial | None = None, on_event: Callable[[Event], None] | None = None
              ) -> tuple[Outcome, float]:
    """The reading loop on ``sample``, and the wall seconds of the earlier sessions it continued (0.0 when none)."""
    from memread.ask import read
    from memread.traces import TraceWriter

    collector = _Collector()
    sinks: list[Any] = [collector, *([on_event] if on_event else [])]
    earlier: list[StepFinished] = []
    resume = _continuable(partial, sample, backend) if partial else None
    writer = None
    start = 0
    if partial:
        writer = TraceWriter(partial.path, header={"bench": dict(partial.tag)}, resume=resume is not None)
        sinks.append(writer)
        if resume is not None:
            start = resume.resume_point().start_step
            earlier = [s for s in resume.steps() if s.step < start]
    try:
        results = read(text_document(sample), [sample.question], backend=backend,
                       settings=settings_for(strategy, settings), sinks=sinks, resume=resume)
    finally:
        if writer:
            writer.close()
    result = results[0]
    steps = earlier + collector.steps
    timed = [s for s in steps if s.prompt_seconds is not None]
    finished = collector.finished
    outcome = Outcome(
        status="ok", prediction=result.answer, reply=result.reply, boxed=result.boxed,
        prompt_tokens=sum(s.prompt_tokens for s in earlier) + (finished.prompt_tokens if finished else 0),
        completion_tokens=sum(s.completion_tokens for s in earlier) + (finished.completion_tokens if finished else 0),
        calls=len(steps) + 1,
        prefill_tokens=sum(s.prompt_tokens for s in timed),
        prefill_seconds=sum(s.prompt_seconds or 0.0 for s in timed),
        model_seconds=sum(s.seconds for s in earlier) + (finished.model_seconds if finished else 0.0),
        chunks_read=(len(earlier) + finished.chunks_read) if finished else None, exited_at=result.exited_at,
        kept=result.memory,
        steps=[{"chunk": s.chunk.index, "reply": s.reply, "summary": s.summary, "exit_reason": s.exit_reason}
               for s in steps],
        resumed_at=_resumed_at(resume, start) if resume else None)
    return outcome, _earlier_seconds(resume, start) if resume else 0.0


def _continuable(partial: Partial, sample: Sample, backend: Backend) -> Trace | None:
    """The trace at ``partial.path`` of an earlier, interrupted reading of this very sample, here; None (and the
    file removed) when there is none to continue."""
    from memread.errors import TraceError
    from memread.traces import read_trace

    if not partial.path.exists():
        return None
    try:
        trace = read_trace(partial.path)
    except TraceError:
        trace = None
    if trace is None or trace.header.get("bench") != dict(partial.tag) or trace.questions != (sample.question,) \
            or trace.header.get("model") != backend.model or not trace.steps():
        partial.path.unlink(missing_ok=True)  # another sample, settings or machine, or nothing read yet
        return None
    return trace


def _resumed_at(trace: Trace, start: int) -> list[int]:
    """The step each later session of ``trace`` started from, and ``start``, this one's."""
    sessions = [int(r["resumed_from_step"]) for r in trace.records
                if r.get("type") == "resumed" and r.get("resumed_from_step") is not None]
    return [*sessions, start]


def _earlier_seconds(trace: Trace, start: int) -> float:
    """Wall seconds the trace's sessions spent on the steps before ``start`` (from each session's start to its
    last step kept): what an uninterrupted reading would have taken for them, less the lost step cut short."""
    session, begun, kept = -1, 0.0, []
    for at, event in trace.events():
        if isinstance(event, RunStarted):
            session, begun = session + 1, at
        elif isinstance(event, StepFinished) and event.step < start:
            kept.append((session, event.step, event.seconds, at - begun))
    return kept_steps_seconds(kept)[0]


def _one_call(prompt: str, backend: Backend, settings: LoopSettings) -> tuple[Outcome, Completion | None]:
    messages: tuple[Message, ...] = (Message("user", prompt),)
    if settings.system is not None:
        messages = (Message("system", settings.system), *messages)
    tokens = backend.count_prompt(messages)
    if tokens + settings.final_tokens > backend.context_length:
        return Outcome(status="n/a", prompt_tokens=tokens,
                       note=f"{tokens} prompt + {settings.final_tokens} answer tokens exceed the "
                            f"{backend.context_length}-token context"), None
    from memread.loop import answer_start

    request = ChatRequest(messages=messages, max_tokens=settings.final_tokens, temperature=settings.temperature,
                          top_p=settings.top_p, seed=settings.seed, tag="bench",
                          reply_start=answer_start(backend, settings))  # as the strategies' final answers
    begun = time.perf_counter()
    completion = backend.complete([request])[0]
    elapsed = time.perf_counter() - begun
    from memread.answer import final_answer

    answer, boxed = final_answer(completion.text, style=settings.final_prompt)
    timed = completion.prompt_seconds is not None
    return Outcome(status="ok", prediction=answer, reply=completion.text, boxed=boxed,
                   prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens, calls=1,
                   prefill_tokens=completion.prompt_tokens if timed else 0,
                   prefill_seconds=completion.prompt_seconds or 0.0, model_seconds=elapsed), completion


def _run_full(sample: Sample, backend: Backend, settings: LoopSettings) -> Outcome:
    prompt = one_prompt(sample.question, document_text(sample), retrieved=False, style=settings.final_prompt)
    return _one_call(prompt, backend, settings)[0]


def retrieve(sample: Sample, backend: Backend, settings: MethodSettings) -> list[Hit]:
    """The top-k passages for the sample's question, in document order."""
    from memread.chunk import Chunker

    index = TextIndex()
    try:
        chunker = Chunker(backend.tokenizer, settings.rag_passage_tokens)
        for chunk in chunker.chunks(text_document(sample).segments()):
            index.add(chunk.index, chunk.text)
        hits = index.top(sample.question, settings.k)
    finally:
        index.close()
    return sorted(hits, key=lambda hit: hit.key)


def _run_bm25(sample: Sample, backend: Backend, settings: MethodSettings) -> Outcome:
    hits = retrieve(sample, backend, settings)
    text = "\n\n[…]\n\n".join(hit.text.strip() for hit in hits) or NO_PASSAGES
    prompt = one_prompt(sample.question, text, retrieved=True, style=settings.loop.final_prompt)
    outcome = _one_call(prompt, backend, settings.loop)[0]
    outcome.note = f"passages {[hit.key for hit in hits]} of {settings.rag_passage_tokens} tokens"
    outcome.kept = text if hits else ""
    return outcome


def _run_closed_book(sample: Sample, backend: Backend, settings: LoopSettings) -> Outcome:
    from memread.prompts import NO_MEMORY, final_prompt

    return _one_call(final_prompt(sample.question, NO_MEMORY, style=settings.final_prompt), backend, settings)[0]
