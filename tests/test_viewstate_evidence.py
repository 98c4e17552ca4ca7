"""The view of a run that keeps evidence: each entry with where it comes from, chunks read again counted once,
and an ETA that says ≤ whenever the run may read fewer steps than it counts."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console, RenderableType

from memread.cli.places import place, with_places
from memread.cli.progress import PlainProgress
from memread.cli.render import frame, header, lane_pane, memory_text
from memread.cli.viewstate import ViewState
from memread.cli.viewtext import progress_line, stats_line
from memread.document import Chunk, Span
from memread.events import Event, LaneExited, RunFinished, RunStarted, StepFinished, StepStarted
from memread.report import RunReport

BEST_MATCHES = "(no sentence was picked yet; the passages read so far that best match the question:)"
QUESTIONS = ("How long was the pier closed?", "Who repaired the lamp?")


def show(renderable: RenderableType, width: int = 120) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue()


def started(document: str = "report.pdf", questions: tuple[str, ...] = QUESTIONS[:1],
            **options: Any) -> RunStarted:
    return RunStarted(run_id="20261126-100000-abc123", document=document, backend="fake", model="fake-model",
                      strategy="evidence", questions=questions, settings={"options": options})


def chunk(index: int, page: int | None = None) -> Chunk:
    spans = (Span("report.pdf", page_first=page, page_last=page),) if page else (Span("report.pdf"),)
    return Chunk(index=index, text=f"The text of chunk {index}.", tokens=10, spans=spans)


def entry(text: str, span: Span, head: str = "") -> dict[str, Any]:
    return {"head": head, "text": text, "where": span.describe(), "spans": [span.to_dict()], "chunk": 0}


def memory_of(entries: list[dict[str, Any]], preface: str = "") -> str:
    """The memory as the evidence strategy renders it: what the model sees."""
    lines = [f"- {e['head']}: {e['text']}" if e["head"] else f"- {e['text']}" for e in entries]
    return "\n".join(([preface] if preface else []) + lines)


def sources_of(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"where": e["where"], "spans": e["spans"], "excerpt": e["text"][:200], "chunk": e["chunk"]}
            for e in entries]


def finished(lane: int, step: int, read: Chunk, before: str, entries: list[dict[str, Any]], *,
             exit_: bool = False) -> StepFinished:
    memory = memory_of(entries)
    return StepFinished(lane=lane, step=step, chunk=read, memory_before=before, memory=memory,
                        memory_changed=memory != before, exit=exit_, prompt_tokens=100, completion_tokens=5,
                        state={"memory": memory, "evidence": entries, "sources": sources_of(entries)})


PIER = entry("The pier closed for 12 days.", Span("report.pdf", page_first=12, page_last=12), head="Harbour works")
LAMP = entry("The lamp was repaired in October.", Span("report.pdf", page_first=40, page_last=40))


def two_steps() -> ViewState:
    state = ViewState(total=50)
    state.apply(started(), 0.0)
    state.apply(StepStarted(step=0, chunk=chunk(4, 12), lanes=(0,)), 1.0)
    state.apply(finished(0, 0, chunk(4, 12), "No previous memory", [PIER]), 2.0)
    state.apply(StepStarted(step=1, chunk=chunk(9, 40), lanes=(0,)), 3.0)
    state.apply(finished(0, 1, chunk(9, 40), memory_of([PIER]), [PIER, LAMP]), 4.0)
    return state


# --- where each entry comes from ------------------------------------------------------------------------------


def test_the_memory_pane_shows_where_each_entry_comes_from_and_the_model_s_memory_is_unchanged() -> None:
    state = two_steps()
    view = state.lanes[0]
    shown = show(lane_pane(state, view, lines=4, width=120))
    assert "- [p. 12] Harbour works: The pier closed for 12 days." in shown
    assert "- [p. 40] The lamp was repaired in October." in shown
    assert view.memory == memory_of([PIER, LAMP]) and "[p." not in view.memory  # what the model sees
    assert state.memory_tokens(0) == state.count_tokens(memory_of([PIER, LAMP]))


def test_the_words_new_since_the_last_step_are_the_new_entry_with_its_place() -> None:
    state = two_steps()
    previous, memory = state.shown_memory(state.lanes[0])
    assert previous == "- [p. 12] Harbour works: The pier closed for 12 days."
    text = memory_text(previous, memory)
    changed = " ".join(" ".join(text.plain[span.start:span.end].split()) for span in text.spans)
    assert changed == "- [p. 40] The lamp was repaired in October."


def test_a_directory_run_names_each_file_and_long_places_are_cut() -> None:
    inside = Span("harbour/2024/the-report-of-the-harbour-master.txt", line_first=40, line_last=52)
    chapter = Span("harbour/book.epub", chapters=("The Long Winter of the Great Storm and After",))
    assert place(sources_of([entry("x", inside)])[0], "harbour") == "…-the-harbour-master.txt lines 40-52"
    assert place(sources_of([entry("x", chapter)])[0], "harbour") == "harbour/book.epub § The Long Winter of…"
    # A single document is named in the header already: its entries say only where in it.
    single = Span("notes.txt", line_first=7, line_last=7)
    assert place(sources_of([entry("x", single)])[0], "notes.txt") == "line 7"
    # Nothing to say where in a single document without pages, chapters or lines: no brackets.
    whole = entry("The lamp was repaired.", Span("page.html"))
    assert with_places(memory_of([whole]), sources_of([whole]), "page.html") == "- The lamp was repaired."


def test_the_passages_shown_before_any_pick_keep_their_first_line() -> None:
    memory = memory_of([PIER, LAMP], preface=BEST_MATCHES)
    shown = with_places(memory, sources_of([PIER, LAMP]), "report.pdf").split("\n")
    assert shown == [BEST_MATCHES, "- [p. 12] Harbour works: The pier closed for 12 days.",
                     "- [p. 40] The lamp was repaired in October."]


def test_sources_that_do_not_line_up_with_the_memory_leave_it_as_it_is() -> None:
    memory = memory_of([PIER, LAMP])
    assert with_places(memory, sources_of([LAMP]), "report.pdf") == memory  # one source short
    assert with_places(memory, sources_of([LAMP, PIER]), "report.pdf") == memory  # another order
    assert with_places(memory, sources_of([PIER, LAMP, PIER]), "report.pdf") == memory  # one too many
    assert with_places("Rewritten notes: the pier closed.", None, "report.pdf") == "Rewritten notes: the pier closed."
    assert with_places(memory, [{"where": "p. 1"}, "x"], "report.pdf") == memory  # not sources at all


def test_a_strategy_without_sources_shows_its_memory_unchanged() -> None:
    state = ViewState(total=5)
    state.apply(started(), 0.0)
    state.apply(StepStarted(step=0, chunk=chunk(0, 1), lanes=(0,)), 1.0)
    state.apply(StepFinished(lane=0, step=0, chunk=chunk(0, 1), memory_before="No previous memory",
                             memory="- the pier closed for 12 days", state={"memory": "x"}), 2.0)
    assert state.shown_memory(state.lanes[0]) == ("No previous memory", "- the pier closed for 12 days")


def test_a_replayed_evidence_run_shows_the_places_too(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from memread.cli.player import Player
    from memread.traces import TraceWriter, read_trace

    writer = TraceWriter(tmp_path / "run.jsonl")
    events: list[Event] = [started(), StepStarted(step=0, chunk=chunk(4, 12), lanes=(0,)),
                           finished(0, 0, chunk(4, 12), "No previous memory", [PIER]),
                           StepStarted(step=1, chunk=chunk(9, 40), lanes=(0,)),
                           finished(0, 1, chunk(9, 40), memory_of([PIER]), [PIER, LAMP])]
    for event in events:
        writer(event)
    writer.close()
    shown = show(Player(read_trace(tmp_path / "run.jsonl")).frame(width=120))
    assert "- [p. 12] Harbour works: The pier closed" in shown and "- [p. 40] The lamp was repaired" in shown


def test_a_real_evidence_read_lines_its_sources_up_with_its_memory() -> None:
    # The evidence strategy itself, with a scripted model: the view's places must keep matching what it renders.
    from memread.backends.base import ChatRequest
    from memread.backends.fake import FakeBackend
    from memread.chunk import Chunker
    from memread.document import Provenance, Segment
    from memread.loop import Loop
    from memread.settings import Settings
    from memread.tokens import CharTokenizer

    def picks_the_lamp(request: ChatRequest) -> str:
        # A step shows one passage (its reply is begun with \\boxed{); the select step shows the lines found.
        prompt = request.messages[-1].content
        return "Ada Quist}" if "Ada Quist" in prompt else "none}"

    lines = [f"Notes {i}\nThe ferry timetable changed in spring. Gulls nested on the pier.\n\n" for i in range(6)]
    lines[3] = "Lighthouse\nThe lamp was repaired by Ada Quist in October. She is the harbour engineer.\n\n"
    text = "".join(lines).splitlines(keepends=True)
    segments = [Segment(line, Provenance("notes.txt", line_start=n, line_end=n)) for n, line in enumerate(text, 1)]
    chunks = list(Chunker(CharTokenizer(), 120).chunks(segments))
    events: list[Event] = []
    settings = Settings(strategy="evidence", chunk_tokens=120, memory_tokens=400, final_tokens=40)
    Loop(FakeBackend(picks_the_lamp, tokenizer=CharTokenizer()), ["Who repaired the lamp?"], settings,
         [events.append], document="notes.txt").run(chunks)
    state = ViewState(total=len(chunks))
    for event in events:
        state.apply(event, 0.0)
    view = state.lanes[0]
    # The kept entry carries its place already: the view shows it once, not twice.
    assert view.memory == "- [line 11] The lamp was repaired by Ada Quist in October. She is the harbour engineer."
    assert state.shown_memory(view)[1] == view.memory
    assert view.sources and view.sources[0]["where"] == "notes.txt line 11"


# --- chunks read again count once ----------------------------------------------------------------------------


def rereading_run(total: int, order: list[int], *, exit_after: int | None = None) -> list[Event]:
    """One question reading the chunks ``order`` (a chunk may come again), stopping after ``exit_after`` steps."""
    events: list[Event] = [started()]
    memory = "No previous memory"
    for step, index in enumerate(order):
        read = chunk(index, index + 1)
        again = index in order[:step]
        events.append(StepStarted(step=step, chunk=read, lanes=(0,),
                                  reason="read again: the evidence now names what it holds" if again else "best match"))
        stop = exit_after == step + 1
        events.append(finished(0, step, read, memory, [PIER], exit_=stop))
        memory = memory_of([PIER])
        if stop:
            events.append(LaneExited(lane=0, step=step, reason="evidence found; 2 new chunk(s) in a row added none"))
            break
    return events


def test_the_header_counts_each_chunk_once_and_says_how_many_were_read_again() -> None:
    state = ViewState(total=10)
    for at, event in enumerate(rereading_run(10, [3, 3, 7])):
        state.apply(event, float(at))
    top = show(header(state))
    assert "chunk 2/10 · 1 read again" in top and "20%" in top
    assert (state.steps_done, state.chunks_done) == (3, 2)


def test_reading_more_steps_than_chunks_never_counts_past_the_total() -> None:
    state = ViewState(total=2)
    for at, event in enumerate(rereading_run(2, [0, 1, 0])):
        state.apply(event, float(at))
    top = show(header(state))
    assert "chunk 2/2 · 1 read again" in top and "100%" in top and "150%" not in top and "chunk 3/2" not in top
    assert progress_line(state).startswith("[2/2] report.pdf p. 1 (read again) · ")


def test_plain_lines_and_the_summary_count_chunks_not_steps() -> None:
    from memread.cli.environment import Environment

    err = io.StringIO()
    env = Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=err, stdin_isatty=False,
                      stdout_isatty=False, stderr_isatty=False, environ={}, columns=100)
    sink = PlainProgress(env, total=10, interval=0.0)
    for event in rereading_run(10, [3, 3, 7, 8], exit_after=4):
        sink(event)
    sink(RunFinished(status="ok", chunks_read=4, prompt_tokens=400, completion_tokens=20, wall_seconds=8.0,
                     model_seconds=7.0))
    lines = err.getvalue().splitlines()
    assert "lane 1 stopped reading after 3 of 10 chunk(s) (evidence found; 2 new chunk(s) in a row added none); " \
           "--all answers from the whole document" in lines
    assert [line.split(" ", 1)[0] for line in lines if line.startswith("[")] == ["[1/10]", "[1/10]", "[2/10]",
                                                                               "[3/10]"]
    assert lines[-1].startswith("3 chunks (1 read again) · 400 prompt + 20 generated tokens")


def test_a_plain_line_says_what_the_step_did_for_each_question_that_took_part() -> None:
    from dataclasses import replace

    state = ViewState(total=10)
    state.apply(started(), 0.0)
    state.apply(StepStarted(step=0, chunk=chunk(4, 12), lanes=(0,)), 1.0)
    said = "answer '12 days' on a line sharing 3 of the question's words"
    state.apply(replace(finished(0, 0, chunk(4, 12), "No previous memory", [PIER]), summary=said), 2.0)
    assert progress_line(state).startswith(f"[1/10] report.pdf p. 12 · {said} · memory ")
    two = ViewState(total=10)
    two.apply(started(questions=QUESTIONS), 0.0)
    two.apply(StepStarted(step=0, chunk=chunk(4, 12), lanes=(0, 1)), 1.0)
    two.apply(replace(finished(0, 0, chunk(4, 12), "", [PIER]), summary=said), 2.0)
    two.apply(replace(finished(1, 0, chunk(4, 12), "", []), summary="no answer in this passage " * 5), 2.0)
    line = progress_line(two)
    assert f" · 1: {said}; 2: no answer in this passage no answer" in line and "… · memory " in line
    two.apply(StepStarted(step=1, chunk=chunk(5, 13), lanes=(1,)), 3.0)  # only lane 2 reads the next step
    two.apply(replace(finished(1, 1, chunk(5, 13), "", []), summary="rewritten"), 4.0)
    assert progress_line(two).startswith("[2/10] report.pdf p. 13 · 2: rewritten · memory ")


def test_a_question_that_stopped_says_how_many_chunks_it_read_not_at_which_step() -> None:
    # Two questions taking turns: the second stops at step 5 (the run's sixth) after reading 2 chunks of its own.
    state = ViewState(total=10)
    state.apply(started(questions=QUESTIONS), 0.0)
    turns = [(0, 1), (1, 2), (0, 3), (1, 2), (0, 4), (1, 5)]  # (lane, chunk): lane 2 reads chunk 2 again
    for step, (lane, index) in enumerate(turns):
        read = chunk(index, index + 1)
        state.apply(StepStarted(step=step, chunk=read, lanes=(lane,)), float(step))
        state.apply(finished(lane, step, read, "No previous memory", [PIER], exit_=step == 5), float(step))
    state.apply(LaneExited(lane=1, step=5, reason="evidence found"), 6.0)
    assert state.lanes[1].chunks_read == 2
    shown = show(frame(state, width=140))
    assert "stopped after 2 chunks" in shown and "stopped after 6 chunks" not in shown
    assert "chunk 5/10 · 1 read again" in shown


def test_a_resumed_run_redoes_the_step_a_crash_cut_short_without_counting_it_as_read_again() -> None:
    state = ViewState(total=10)
    events = rereading_run(10, [3, 5])
    for at, event in enumerate(events[:4]):  # steps 0 and 1 started, step 1 never finished
        state.apply(event, float(at))
    state.apply(StepStarted(step=1, chunk=chunk(5, 6), lanes=(0,)), 4.0)  # the crash cut it short
    state.apply(RunStarted(**{**started().__dict__, "resumed_from_step": 1}), 5.0)
    for event in events[3:]:
        state.apply(event, 6.0)
    assert (state.chunks_done, state.reads_again()) == (2, 0)


def test_the_json_result_counts_each_chunk_once() -> None:
    result = RunReport.from_events(rereading_run(10, [3, 3, 7], exit_after=3)).result()
    assert result["lanes"][0]["chunks_read"] == 2 and result["stats"]["chunks_read"] == 2
    assert result["lanes"][0]["exited_at"] == 2  # the step, as the trace records it


# --- the ETA -------------------------------------------------------------------------------------------------


def eta_after(options: dict[str, Any], steps: list[tuple[int, ...]], *, questions: int = 1,
              exited: tuple[int, ...] = (), total: int = 10) -> str | None:
    """The ETA after ``steps`` (the lanes each read) of 30 s each, ``exited`` lanes stopped."""
    state = ViewState(total=total)
    state.apply(started(questions=QUESTIONS[:questions], **options), 0.0)
    now = 0.0
    for step, lanes in enumerate(steps):
        state.apply(StepStarted(step=step, chunk=chunk(step, step + 1), lanes=lanes), now)
        now += 30.0
        for lane in lanes:
            state.apply(finished(lane, step, chunk(step, step + 1), "No previous memory", [PIER]), now)
    for lane in exited:
        state.apply(LaneExited(lane=lane, step=len(steps) - 1, reason="evidence found"), now)
    return state.eta_text()


def test_one_question_without_the_exit_gate_reads_exactly_its_budget() -> None:
    # --no-exit-gate --max-read 0.3: 3 steps of 10 chunks, one done, so exactly 2 more.
    assert eta_after({"exit_gate": False, "max_read": 0.3}, [(0,)]) == "ETA 1m00s"
    assert eta_after({"exit_gate": False, "max_read": 1.0}, [(0,)]) == "ETA 4m30s"


def test_several_questions_each_with_a_budget_give_a_bound_over_all_of_them() -> None:
    # Two questions of 3 steps each that read step 1 together: the run may still read 2 steps for each (4), or
    # fewer if they keep picking the same chunks, so the ETA is a bound.
    assert eta_after({"exit_gate": False, "max_read": 0.3}, [(0, 1)], questions=2) == "ETA ≤ 2m00s"
    assert eta_after({"exit_gate": True, "max_read": 0.3}, [(0, 1)], questions=2) == "ETA ≤ 2m00s"
    # Once one has stopped, the other reads exactly what is left of its budget.
    assert eta_after({"exit_gate": False, "max_read": 0.3}, [(0, 1)], questions=2, exited=(1,)) == "ETA 1m00s"
    # A question whose budget is spent reads no more.
    assert eta_after({"exit_gate": False, "max_read": 0.3}, [(0, 1), (0,), (0,)], questions=2) == "ETA 1m00s"


def test_with_the_exit_gate_one_question_s_eta_is_a_bound() -> None:
    assert eta_after({"exit_gate": True, "max_read": 0.3}, [(0,)]) == "ETA ≤ 1m00s"


def test_strategies_reading_in_document_order_keep_their_eta() -> None:
    assert eta_after({}, [(0, 1)], questions=2) == "ETA 4m30s"  # every chunk, both questions in each step
    assert eta_after({"exit_gate": True}, [(0, 1)], questions=2) == "ETA ≤ 4m30s"


def test_a_run_that_reads_chunks_again_without_a_known_budget_shows_no_eta() -> None:
    state = ViewState(total=10)
    for at, event in enumerate(rereading_run(10, [3, 3])):
        state.apply(event, 30.0 * at)
    state.settings = {"options": {}}  # a strategy of its own: no max_read the view knows
    assert state.eta() is None and "ETA" not in progress_line(state)
    assert stats_line(state).startswith("1 chunk (1 read again)")


def test_a_stream_being_indexed_says_how_far_it_is_and_its_length_once_in() -> None:
    # The evidence strategy takes in the whole input before it reads: a 1 GB log takes minutes, which the view
    # showed as "waiting for the first chunk" with no number.
    from memread.cli.environment import Environment
    from memread.cli.render import chunk_pane
    from memread.events import Indexed

    state = ViewState()
    state.apply(started(document="-"), 0.0)
    state.apply(Indexed(chunks=1204, tokens=1_806_000, seconds=42.0), 42.0)
    assert "indexing: 1,204 chunks, 1,806,000 tokens so far (42s)" in show(chunk_pane(state))
    assert state.total is None
    state.apply(Indexed(chunks=2000, tokens=3_000_000, seconds=70.0, done=True), 70.0)
    assert state.total == 2000 and "indexed 2,000 chunks, 3,000,000 tokens in 1m10s" in show(chunk_pane(state))
    assert "standard input" in show(header(state))

    err = io.StringIO()
    env = Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=err, stdin_isatty=False,
                      stdout_isatty=False, stderr_isatty=False, environ={}, columns=100)
    clock = iter([0.0, 0.5, 1.0, 3.0, 3.5, 3.6])
    sink = PlainProgress(env, interval=2.0, clock=lambda: next(clock))
    sink(started(document="-"))
    for n, at in ((100, 0.5), (200, 1.0), (600, 3.0), (700, 3.5)):
        sink(Indexed(chunks=n, tokens=n * 1500, seconds=at))
    sink(Indexed(chunks=720, tokens=1_080_000, seconds=3.6, done=True))
    lines = err.getvalue().splitlines()
    assert lines.pop(0).startswith("reading standard input with fake-model")
    assert [line.split(",")[0] for line in lines] == ["indexing: 100 chunks", "indexing: 600 chunks",
                                                      "indexed 720 chunks"]


def test_a_step_redone_after_a_resume_warns_once_in_the_view_and_the_report() -> None:
    # Killed after step 2's warning and before its record: the resumed run redoes step 2 and its warning.
    from dataclasses import replace

    from memread.events import Warned

    cut = Warned(message="question 1: the reply at chunk 3 hit the 24-token limit", lane=0, step=2)
    events: list[Event] = [started(), Warned(message="not valid UTF-8"), cut,
                           replace(started(), resumed_from_step=2), cut]
    state = ViewState(total=4)
    report = RunReport()
    for event in events:
        state.apply(event, 0.0)
        report(event)
    assert state.warnings == ["not valid UTF-8", cut.message]
    assert [w.message for w in report.warnings] == ["not valid UTF-8", cut.message]


def test_a_lane_that_counted_the_whole_document_gets_no_hint_to_read_it_all() -> None:
    from memread.cli.environment import Environment
    from memread.events import WHOLE_DOCUMENT

    err = io.StringIO()
    env = Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=err, stdin_isatty=False,
                      stdout_isatty=False, stderr_isatty=False, environ={}, columns=100)
    sink = PlainProgress(env, total=247, interval=0.0)
    state = ViewState(total=247)
    events = rereading_run(247, [5], exit_after=None)
    events.append(LaneExited(lane=0, step=0, reason=f"{WHOLE_DOCUMENT}: 1 line in 1 group(s)"))
    for at, event in enumerate(events):
        sink(event)
        state.apply(event, float(at))
    lines = err.getvalue().splitlines()
    assert "lane 1 counted the whole document: 1 line in 1 group(s), all 247 chunks searched" in lines
    assert not any("--all" in line for line in lines)
    assert state.lanes[0].whole and "reading stopped early" not in show(frame(state))
