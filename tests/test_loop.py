"""The reading loop over a scripted backend: lock-step lanes, the exit gate, the budget, resume, events."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from memread.backends.base import ChatRequest, Completion
from memread.backends.fake import FakeBackend
from memread.document import Chunk, Span
from memread.errors import BackendError, BudgetError
from memread.events import (
    Answered,
    Event,
    LaneExited,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    Warned,
)
from memread.loop import Loop, LoopSettings
from memread.traces import TraceWriter, read_trace

PAGES = [
    "The harbour report opens with the weather.",
    "A storm closed the pier for 12 days. NEEDLE-pier",
    "The ferry added a second crossing.",
    "Ada Quist repaired the lighthouse lamp. NEEDLE-lamp",
    "The year closed with a surplus.",
    "A new crane is on order.",
]
QUESTIONS = ("How long was the pier closed?", "Who repaired the lamp?", "What is on order?")


def chunks(pages: list[str] = PAGES) -> list[Chunk]:
    return [Chunk(i, text, len(text), (Span("report.txt", page_first=i + 1, page_last=i + 1),))
            for i, text in enumerate(pages)]


def section(prompt: str) -> str:
    # MemAgent's block layout, or GRU-Mem's one-line layout (figure 10a)
    return re.search(r"<section>(?:\n| )(.*)(?:\n| )</section>", prompt, re.DOTALL).group(1)  # type: ignore[union-attr]


def memory_of(prompt: str) -> str:
    return re.search(r"<memory>(?:\n| )(.*?)(?:\n| )</memory>", prompt, re.DOTALL).group(1)  # type: ignore[union-attr]


def question_of(prompt: str) -> str:
    return re.search(r"<problem> \n?(.*?)(?:\n| )</problem>", prompt, re.DOTALL).group(1)  # type: ignore[union-attr]


def model(request: ChatRequest) -> str:
    """A deterministic stand-in for a model that follows the gated/callback/overwrite formats."""
    prompt = request.messages[-1].content
    if prompt.rstrip().endswith("Your answer:"):
        return f"Based on memory: \\boxed{{{memory_of(prompt)}}}"
    text, memory, question = section(prompt), memory_of(prompt), question_of(prompt)
    needle = "pier" if "pier" in question else "lamp" if "lamp" in question else "crane"
    relevant = needle in text
    new = text if memory == "No previous memory" else f"{memory} | {text}"
    if "<check>" in prompt:
        done = relevant and needle != "crane"
        return (f"<think>seed {request.seed}</think><check>{'yes' if relevant else 'no'}</check>"
                f"<update>{new if relevant else memory}</update><next>{'end' if done else 'continue'}</next>")
    if "<recall>" in prompt:
        return f"<thinking>t</thinking><update>{new}</update><recall>{needle}</recall>"
    return new


def run(settings: LoopSettings, pages: list[str] = PAGES, **kwargs: object) -> tuple[list[Event], object, FakeBackend]:
    backend = FakeBackend(model)
    events: list[Event] = []
    results = Loop(backend, QUESTIONS, settings, [events.append], document="report.txt").run(chunks(pages), **kwargs)
    return events, results, backend


def test_lanes_read_in_lock_step_with_one_backend_call_per_step() -> None:
    events, results, backend = run(LoopSettings(strategy="overwrite", chunk_tokens=100, memory_tokens=400, seed=7))
    assert len(backend.calls) == len(PAGES) + 1  # one batch per chunk, plus one for the answers
    assert all(len(batch) == 3 for batch in backend.calls)
    assert [batch[0].seed for batch in backend.calls] == [7, 8, 9, 10, 11, 12, 13]
    assert all(r.messages[0].role == "user" and len(r.messages) == 1 for r in backend.requests)
    assert [r.answer.split(" | ")[-1] for r in results] == [PAGES[-1]] * 3  # type: ignore[attr-defined]
    assert [r.steps for r in results] == [6, 6, 6]  # type: ignore[attr-defined]


def test_the_exit_gate_drops_a_lane_and_an_empty_loop_stops_reading() -> None:
    pulled: list[int] = []

    def lazily() -> Iterator[Chunk]:
        for chunk in chunks():
            pulled.append(chunk.index)
            yield chunk

    backend = FakeBackend(model)
    events: list[Event] = []
    loop = Loop(backend, QUESTIONS[:2], LoopSettings(strategy="gated", chunk_tokens=100, memory_tokens=200),
                [events.append])
    results = loop.run(lazily())
    assert [len(batch) for batch in backend.calls] == [2, 2, 1, 1, 2]  # lane 0 exits at step 1, lane 1 at 3
    exits = [(e.lane, e.step) for e in events if isinstance(e, LaneExited)]
    assert exits == [(0, 1), (1, 3)]
    assert [r.exited_at for r in results] == [1, 3]
    assert results[0].answer == PAGES[1] and results[1].answer == PAGES[3]
    assert pulled == [0, 1, 2, 3]  # no lane left after chunk 3: the rest of the document is never read
    finished = [e for e in events if isinstance(e, RunFinished)][0]
    assert finished.status == "ok" and finished.chunks_read == 4


def test_without_the_exit_gate_every_chunk_is_read() -> None:
    events, results, backend = run(LoopSettings(strategy="gated", chunk_tokens=100, memory_tokens=200,
                                                options={"exit_gate": False}))
    assert [len(batch) for batch in backend.calls] == [3] * 7
    assert not [e for e in events if isinstance(e, LaneExited)]


def test_check_no_replies_are_cut_early_and_keep_the_memory() -> None:
    events, _, backend = run(LoopSettings(strategy="gated", chunk_tokens=100, memory_tokens=200, options={"exit_gate": False}))
    steps = [e for e in events if isinstance(e, StepFinished)]
    early = [s for s in steps if s.stopped_early]
    assert early and all(not s.memory_changed and s.update is False for s in early)
    assert all("<update>" not in s.reply for s in early)


def test_a_prompt_that_cannot_fit_is_refused_before_any_model_call() -> None:
    backend = FakeBackend(model, context_length=2000)
    events: list[Event] = []
    settings = LoopSettings(strategy="overwrite", chunk_tokens=1000, memory_tokens=1024)
    loop = Loop(backend, QUESTIONS, settings, [events.append])
    with pytest.raises(BudgetError) as error:
        loop.run(chunks())
    assert "--chunk-tokens" in (error.value.hint or "") and "--memory-tokens" in (error.value.hint or "")
    assert backend.calls == [] and events == []
    # The budget counts the template and the question with the backend's own counting.
    fits = Loop(FakeBackend(model, context_length=4000), QUESTIONS, settings)
    lines = fits.check_budget()
    step = [line for line in lines if line.what == "step"][0]
    assert step.variable_tokens == 1000 + 1024 and step.max_tokens == 1024 and step.template_tokens > 300


def test_a_chunk_over_the_budget_is_refused() -> None:
    loop = Loop(FakeBackend(model), QUESTIONS, LoopSettings(strategy="overwrite", chunk_tokens=20))
    with pytest.raises(BudgetError):
        loop.run(chunks())


@pytest.mark.parametrize("strategy", ["overwrite", "gated", "callback"])
def test_events_are_well_formed_and_ordered(strategy: str) -> None:
    events, results, _ = run(LoopSettings(strategy=strategy, chunk_tokens=100, memory_tokens=300))
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert events[0].strategy == strategy and events[0].settings["chunk_tokens"] == 100
    assert events[0].resumed_from_step is None
    current: StepStarted | None = None
    finished_lanes: set[int] = set()
    for event in events[1:-1]:
        if isinstance(event, StepStarted):
            assert current is None or finished_lanes == set(current.lanes)
            current, finished_lanes = event, set()
        elif isinstance(event, StepFinished):
            assert current is not None and event.step == current.step and event.lane in current.lanes
            assert event.chunk is current.chunk and event.state["memory"] == event.memory
            finished_lanes.add(event.lane)
    answered = [e for e in events if isinstance(e, Answered)]
    assert [a.lane for a in answered] == [0, 1, 2] and all(a.boxed for a in answered)
    assert events.index(answered[0]) > max(i for i, e in enumerate(events) if isinstance(e, StepFinished))
    done = events[-1]
    assert done.status == "ok" and done.prompt_tokens > 0 and done.wall_seconds >= done.model_seconds


def test_a_missing_box_is_answered_with_the_whole_reply_and_a_warning() -> None:
    backend = FakeBackend(lambda r: "It was Ada." if r.messages[-1].content.endswith("Your answer:\n") else "m")
    events: list[Event] = []
    [result] = Loop(backend, ["Who?"], LoopSettings(strategy="overwrite", chunk_tokens=100), [events.append]).run(chunks()[:1])
    assert result.answer == "It was Ada." and not result.boxed
    answered = [e for e in events if isinstance(e, Answered)][0]
    assert answered.warnings and "\\boxed{}" in answered.warnings[0]


def test_the_final_reply_is_begun_with_a_box_on_a_backend_that_continues_replies() -> None:
    # The model answers bare ("Ada") when left to begin: begun as \\boxed{, its answer is boxed.
    def bare(request: ChatRequest) -> str:
        return ("Ada}" if request.reply_start else "Ada") if "Your answer" in request.messages[-1].content else "m"

    backend = FakeBackend(bare, continues_replies=True)
    events: list[Event] = []
    [result] = Loop(backend, ["Who?"], LoopSettings(strategy="overwrite", chunk_tokens=100), [events.append]).run(chunks()[:2])
    assert [r.reply_start for r in backend.requests] == ["", "", "\\boxed{"]  # the answer only, not the memory
    assert result.answer == "Ada" and result.boxed and result.reply == "\\boxed{Ada}"
    assert [e for e in events if isinstance(e, Answered)][0].reply == "\\boxed{Ada}"  # traces show the whole reply

    # --answer-start '' lets the model begin; a backend that cannot continue a reply is asked as before.
    for settings, continues in ((LoopSettings(strategy="overwrite", chunk_tokens=100, answer_start=""), True),
                                (LoopSettings(strategy="overwrite", chunk_tokens=100), False)):
        backend = FakeBackend(bare, continues_replies=continues)
        [result] = Loop(backend, ["Who?"], settings).run(chunks()[:2])
        assert backend.requests[-1].reply_start == "" and result.answer == "Ada" and not result.boxed
    # The "therefore" prompt asks for words, not a box: nothing is begun for it.
    assert LoopSettings(final_prompt="therefore").answer_start == ""
    assert LoopSettings().answer_start == "\\boxed{"
    # Switching the final prompt of existing settings re-derives what is begun; a chosen begun text stays.
    assert LoopSettings().replace(final_prompt="therefore").answer_start == ""
    assert LoopSettings(final_prompt="therefore").replace(final_prompt="boxed").answer_start == "\\boxed{"
    assert LoopSettings(answer_start="Answer: ").replace(final_prompt="therefore").answer_start == "Answer: "
    assert LoopSettings().replace(final_prompt="therefore", answer_start="x").answer_start == "x"
    # A trace written before the setting existed resumes under today's defaults (its answer is still to come).
    from memread.traces.resume import _normalised

    old = {k: v for k, v in LoopSettings().to_dict().items() if k != "answer_start"}
    assert _normalised(old, "overwrite") == _normalised(LoopSettings().to_dict(), "overwrite")


def test_a_memory_that_kept_nothing_from_the_document_is_said_before_the_answer() -> None:
    # An untrained model behind the gated strategy says "no" to every chunk: the answer is its own knowledge.
    def reply(request: ChatRequest) -> str:
        if request.messages[-1].content.rstrip().endswith("Your answer:"):
            return "\\boxed{Ada}"
        return "<think>Nothing here.</think>\n<check>no</check>\n<update>No previous memory</update><next>continue</next>"

    events: list[Event] = []
    [result] = Loop(FakeBackend(reply), ["Who?"], LoopSettings(strategy="gated", chunk_tokens=100),
                    [events.append]).run(chunks()[:3])
    assert result.answer == "Ada"
    warned = [i for i, e in enumerate(events) if isinstance(e, Warned) and "nothing from the document" in e.message]
    assert len(warned) == 1 and "3 chunk(s)" in events[warned[0]].message and events[warned[0]].lane == 0
    assert warned[0] < next(i for i, e in enumerate(events) if isinstance(e, Answered))

    # A memory that took something from the text: no such warning.
    events.clear()
    Loop(FakeBackend(lambda r: "\\boxed{Ada}" if "Your answer" in r.messages[-1].content else "Ada built it."),
         ["Who?"], LoopSettings(strategy="overwrite", chunk_tokens=100), [events.append]).run(chunks()[:3])
    assert not [e for e in events if isinstance(e, Warned)]


def test_system_message_and_therefore_prompt_are_passed_through() -> None:
    backend = FakeBackend(lambda r: "Therefore, the answer is Ada." if "Your answer" in r.messages[-1].content else "m")
    [result] = Loop(backend, ["Who?"], LoopSettings(strategy="overwrite", chunk_tokens=100, final_prompt="therefore",
                                                    system="You are terse.")).run(chunks()[:2])
    assert all(r.messages[0].role == "system" and r.messages[0].content == "You are terse." for r in backend.requests)
    assert "Therefore, the answer is (insert answer here)" in backend.requests[-1].messages[-1].content
    assert result.answer == "Ada" and result.boxed


def test_a_backend_failure_finishes_the_run_as_failed_and_is_raised() -> None:
    def failing(request: ChatRequest) -> str:
        if request.seed == 2:
            raise BackendError("the server went away", hint="restart it")
        return "memory"

    events: list[Event] = []
    with pytest.raises(BackendError):
        Loop(FakeBackend(failing), ["Q?"], LoopSettings(strategy="overwrite", chunk_tokens=100, seed=0), [events.append]).run(chunks())
    assert isinstance(events[-1], RunFinished) and events[-1].status == "failed"
    assert events[-1].error == "the server went away" and events[-1].chunks_read == 2


def test_ctrl_c_finishes_the_run_as_interrupted() -> None:
    def sink(event: Event) -> None:
        events.append(event)
        if isinstance(event, StepFinished) and event.step == 1:
            raise KeyboardInterrupt

    events: list[Event] = []
    with pytest.raises(KeyboardInterrupt):
        Loop(FakeBackend(model), ["Q?"], LoopSettings(strategy="overwrite", chunk_tokens=100), [sink]).run(chunks())
    assert isinstance(events[-1], RunFinished) and events[-1].status == "interrupted"


@pytest.mark.parametrize("strategy", ["overwrite", "gated", "callback"])
def test_resuming_from_the_trace_gives_the_same_run(strategy: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = LoopSettings(strategy=strategy, chunk_tokens=100, memory_tokens=300, seed=3,
                            options={"recall_from": "chunks"} if strategy == "callback" else {})
    _, whole, whole_backend = run(settings)

    # The same run, killed after the second lane finished step 2 (the third lane never got its reply).
    path = tmp_path / "run.jsonl"
    writer = TraceWriter(path)

    def crashing(event: Event) -> None:
        writer(event)
        if isinstance(event, StepFinished) and event.step == 2 and event.lane == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Loop(FakeBackend(model), QUESTIONS, settings, [crashing], run_id="r1").run(chunks())
    writer.close()

    point = read_trace(path).resume_point()
    assert point.start_step == 2
    writer = TraceWriter(path, resume=True)
    backend = FakeBackend(model)
    events: list[Event] = []
    resumed = Loop(backend, QUESTIONS, settings, [writer, events.append], run_id="r1").run(
        chunks(), start_step=point.start_step, states=point.states, exited=point.exited)
    writer.close()
    assert resumed == whole
    assert isinstance(events[0], RunStarted) and events[0].resumed_from_step == 2
    # Exactly the requests the uninterrupted run sent from step 2 on.
    sent = [(r.messages, r.seed, r.stop) for r in backend.requests]
    expected = [(r.messages, r.seed, r.stop) for batch in whole_backend.calls[2:] for r in batch]
    assert sent == expected
    trace = read_trace(path)
    assert trace.status() == "ok"


def test_completion_objects_from_the_script_are_used_as_is() -> None:
    canned = Completion("memory text", "length", prompt_tokens=5, completion_tokens=64)
    backend = FakeBackend([canned, "\\boxed{x}"])
    events: list[Event] = []
    Loop(backend, ["Q?"], LoopSettings(strategy="overwrite", chunk_tokens=100), [events.append]).run(chunks()[:1])
    step = [e for e in events if isinstance(e, StepFinished)][0]
    assert step.truncated and step.completion_tokens == 64


def test_context_needed_sizes_a_backend_before_it_exists() -> None:
    from memread.loop import context_needed
    from memread.tokens import CharTokenizer

    for strategy in ("overwrite", "gated", "callback"):
        settings = LoopSettings(strategy=strategy, chunk_tokens=500, memory_tokens=200, system="Be brief.")
        needed = context_needed(settings, QUESTIONS, CharTokenizer(), template_tokens=8)
        loop = Loop(FakeBackend(model, context_length=needed), QUESTIONS, settings)
        assert needed == max(line.total for line in loop.check_budget())
        with pytest.raises(BudgetError):
            Loop(FakeBackend(model, context_length=needed - 1), QUESTIONS, settings).check_budget()


@pytest.mark.model
@pytest.mark.parametrize("strategy", ["overwrite", "gated", "callback"])
def test_smollm2_reads_a_small_report_end_to_end(strategy: str, smollm2_backend) -> None:  # type: ignore[no-untyped-def]
    """The real loop on the real llama.cpp backend: replies are whatever a 135M model writes, so the test
    checks the run's shape (lock-step, every lane answered, events in order), not the answers."""
    from memread.chunk import Chunker
    from memread.document import Provenance, Segment

    text = "\n\n".join(PAGES * 3)
    lanes = 2 if strategy == "gated" else 1  # lock-step lanes once is enough on a slow shared CPU
    settings = LoopSettings(strategy=strategy, chunk_tokens=120, memory_tokens=40, reply_tokens=40, final_tokens=24,
                            temperature=0.7, seed=1, options={"recall_from": "chunks"} if strategy == "callback" else {})
    pieces = list(Chunker(smollm2_backend.tokenizer, 120).chunks([Segment(text, Provenance("report.txt"))]))
    assert len(pieces) >= 2
    events: list[Event] = []
    results = Loop(smollm2_backend, QUESTIONS[:lanes], settings, [events.append]).run(pieces)
    assert [r.lane for r in results] == list(range(lanes)) and all(r.answer for r in results)
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert events[-1].status == "ok" and events[-1].completion_tokens > 0
    assert 0 < events[-1].model_seconds <= events[-1].wall_seconds
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert len(steps) == lanes * len(pieces) or any(s.exit for s in steps)
    assert all(0 < s.completion_tokens <= 40 and s.prompt_tokens > 0 for s in steps)
    assert all(s.truncated == (s.finish_reason == "length") for s in steps)
    answered = [e for e in events if isinstance(e, Answered)]
    assert [a.lane for a in answered] == list(range(lanes))
    assert all(a.boxed or a.warnings for a in answered)


def test_an_empty_box_is_answered_with_a_warning() -> None:
    backend = FakeBackend(lambda r: "\\boxed{}" if r.messages[-1].content.endswith("Your answer:\n") else "m")
    events: list[Event] = []
    [result] = Loop(backend, ["Who?"], LoopSettings(strategy="overwrite", chunk_tokens=100), [events.append]).run(chunks()[:1])
    assert result.answer == "" and result.boxed
    assert [e for e in events if isinstance(e, Answered)][0].warnings == ("the final \\boxed{} is empty",)
