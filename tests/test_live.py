"""What a user sees while memread reads: the live view on a terminal, plain lines in a pipe."""

from __future__ import annotations

import io
import re

import pytest
import synthetic_run

from memread.cli.environment import Environment
from memread.cli.live import LiveView
from memread.cli.progress import PlainProgress, progress_sink
from memread.cli.render import frame, memory_text
from memread.cli.viewstate import ViewState
from memread.events import StepFinished, StepStarted

CONTROL = re.compile(r"\x1b")
COLOUR = re.compile(r"\x1b\[[0-9;]*(3[0-9]|9[0-7]|38;)[0-9;]*m")


def terminal(*, tty=True, no_color=False, columns=110, lines=40):
    environ = {"TERM": "xterm-256color", "LINES": str(lines), "COLUMNS": str(columns)}
    if no_color:
        environ["NO_COLOR"] = "1"
    return Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=io.StringIO(), stdin_isatty=False,
                       stdout_isatty=False, stderr_isatty=tty, environ=environ, columns=columns)


def ticking(step=0.7):
    now = [1_000.0]

    def clock():
        now[0] += step
        return now[0]

    return clock


def run(sink, events=None):
    for event in events or synthetic_run.events():
        sink(event)
    sink.close()


def test_the_live_view_shows_every_pane_then_the_answers_and_leaves_stdout_alone():
    env = terminal()
    run(LiveView(env, total=5, clock=ticking()))
    shown = env.stderr.getvalue()
    for pane in ("memread", "report.pdf", "chunk 5/5", "100%", "chunk 5 · report.pdf p. 5",
                 "lane 1 ·", "lane 2 ·", "check yes · next continue", "stopped after 4 chunks",
                 "answer 1: How many days was the pier closed?", "Ada Quist",
                 "sources: report.pdf pp. 2, 5", "5 chunks · 1,076 prompt + 200 generated tokens",
                 "reading stopped early (4 of 5 chunks); --all answers from the whole document"):
        assert pane in shown, pane
    assert CONTROL.search(shown), "a terminal gets a repainted frame"
    assert env.stdout.getvalue() == ""


def test_the_live_view_marks_what_changed_in_the_memory():
    text = memory_text("The pier was closed.", "The pier was closed for 12 days.")
    changed = [text.plain[span.start:span.end] for span in text.spans]
    assert "".join(changed).split() == ["closed", "for", "12", "days."]
    assert memory_text("same words", "same words").spans == []


def test_no_color_keeps_the_view_but_drops_colours():
    env = terminal(no_color=True)
    run(LiveView(env, total=5, clock=ticking()))
    shown = env.stderr.getvalue()
    assert "Ada Quist" in shown and not COLOUR.search(shown)


def test_a_long_memory_is_shown_around_its_change():
    before = " ".join(f"fact{i}." for i in range(400))
    text = memory_text(before, before + " The needle is 4711.", window=200)
    assert text.plain.startswith("… ") and "4711" in text.plain and len(text.plain) < 260


def test_many_questions_get_a_table_and_the_pane_of_the_lane_that_changed():
    state = ViewState(total=5)
    for event in synthetic_run.events():
        state.apply(event, 0.0)
    state.lanes.extend(type(state.lanes[0])(lane=i, question=f"question {i}") for i in range(2, 5))
    out = io.StringIO()
    from rich.console import Console

    Console(file=out, width=100, color_system=None).print(frame(state, height=40, width=100))
    shown = out.getvalue()
    assert "question 4" in shown and "▶" in shown and shown.count("╭─ lane") == 1


def test_off_a_terminal_progress_is_plain_throttled_lines():
    env = terminal(tty=False)
    sink = progress_sink(env, total=5)
    assert isinstance(sink, PlainProgress)
    sink.interval = 0.0
    sink._clock = ticking()
    run(sink)
    lines = env.stderr.getvalue().splitlines()
    assert not CONTROL.search(env.stderr.getvalue())
    assert lines[0] == "reading report.pdf with fake-model (fake, gated, 2 questions)"
    assert lines[1].startswith("[1/5] report.pdf p. 1 · 1: check yes · next continue; 2: check yes · next continue"
                               " · memory ~7, ~7 tok · ")
    assert "warning: lane 0: reply had no <think>" in lines
    # Said once, with what reads everything: a "list all" question needs every chunk.
    assert "lane 2 stopped reading after 4 of 5 chunk(s) (exit-gate); --all answers from the whole document" \
        in lines
    assert "sources 1: report.pdf pp. 2, 5" in lines
    assert lines[-1].startswith("5 chunks · ")
    assert "ETA" in lines[2]


def test_the_eta_counts_the_chunks_a_run_reads_at_most_and_says_when_it_may_stop_sooner():
    from memread.events import RunStarted

    def eta(options):
        state = ViewState(total=10)
        state.apply(RunStarted(run_id="r", document="d", backend="fake", model="m", strategy="s", questions=("q",),
                               settings={"options": options}), 0.0)
        state.step_walls, state.steps_done = [30.0], 1
        return state.eta_text()

    assert eta({}) == "ETA 4m30s"  # overwrite, callback: every chunk
    assert eta({"exit_gate": False}) == "ETA 4m30s"  # --no-exit-gate reads everything
    assert eta({"exit_gate": True}) == "ETA ≤ 4m30s"  # gated, evidence: may stop sooner
    assert eta({"exit_gate": True, "max_read": 0.3}) == "ETA ≤ 1m00s"  # --max-read 0.3: 3 chunks of 10


def test_plain_progress_prints_at_most_one_line_per_interval():
    env = terminal(tty=False)
    events = synthetic_run.events()
    sink = PlainProgress(env, total=5, interval=60.0, clock=ticking(1.0))  # the whole run takes ~40 s
    run(sink, events)
    steps = [line for line in env.stderr.getvalue().splitlines() if line.startswith("[")]
    assert [line.split()[0] for line in steps] == ["[1/5]", "[5/5]"]  # the first, then the last


def test_quiet_keeps_only_warnings_and_none_prints_nothing():
    env = terminal(tty=False)
    run(progress_sink(env, quiet=True))
    assert env.stderr.getvalue().splitlines() == ["warning: lane 0: reply had no <think>"]
    env = terminal()
    run(progress_sink(env, mode="none"))
    assert env.stderr.getvalue() == ""


def test_a_dumb_terminal_gets_plain_lines():
    env = terminal()
    env.environ["TERM"] = "dumb"
    assert isinstance(progress_sink(env), PlainProgress)
    assert isinstance(progress_sink(terminal()), LiveView)


def test_a_resumed_run_starts_the_view_with_the_memory_already_read():
    events = synthetic_run.events()
    cut = next(i for i, e in enumerate(events) if isinstance(e, StepStarted) and e.step == 2)
    env = terminal(tty=False)
    sink = PlainProgress(env, total=5, history=[(0.0, e) for e in events[:cut]], clock=ticking())
    assert sink.state.lanes[0].memory == synthetic_run.MEMORIES[0][1]
    run(sink, [events[0], *events[cut:]])
    assert "sources 1: report.pdf pp. 2, 5" in env.stderr.getvalue()  # p. 2 was read before


def test_the_header_splits_prefill_and_decode_rates_when_the_backend_times_prefill():
    from dataclasses import replace

    from rich.console import Console

    state = ViewState(total=5)
    for event in synthetic_run.events():
        if isinstance(event, StepFinished):
            event = replace(event, seconds=0.5, prompt_seconds=0.4)  # 20 tokens decoded in 0.1 s
        state.apply(event, 0.0)
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(frame(state, width=120))
    assert "decode 200.0 tok/s" in out.getvalue() and "prefill 25" in out.getvalue()


@pytest.mark.model
def test_a_real_smollm2_run_shows_live_and_replays_from_its_trace(smollm2_backend, tmp_path):
    """SmolLM2 reads a three-chunk report on a fake terminal; the trace replays the same memories."""
    from memread.chunk import Chunker
    from memread.cli.player import Player
    from memread.document import Provenance, Segment
    from memread.loop import Loop, LoopSettings
    from memread.traces import TraceWriter, read_trace

    paragraphs = [
        "The harbour had a quiet winter. Fishing boats stayed in port through January.",
        "In February a storm closed the Widow's Pier for twelve days while divers checked the piles.",
        "In October the harbour engineer, Ada Quist, repaired the lighthouse lamp.",
    ]
    segments = [Segment(text + "\n\n", Provenance("report.txt", page=i + 1)) for i, text in enumerate(paragraphs)]
    settings = LoopSettings(strategy="overwrite", chunk_tokens=40, memory_tokens=48, final_tokens=32,
                            temperature=0.0, seed=3)
    chunks = list(Chunker(smollm2_backend.tokenizer, settings.chunk_tokens).chunks(segments))
    env = terminal()
    live = LiveView(env, total=len(chunks), tokenizer=smollm2_backend.tokenizer)
    writer = TraceWriter(tmp_path / "smol.jsonl")
    loop = Loop(smollm2_backend, ["How many days was the Widow's Pier closed?"], settings, [writer, live],
                document="report.txt")
    try:
        results = loop.run(chunks)
    finally:
        live.close()
        writer.close()
    shown = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", env.stderr.getvalue())
    assert f"chunk {len(chunks)}/{len(chunks)}" in shown and "100%" in shown
    assert "prefill" in shown and "decode" in shown  # llama.cpp times prefill
    assert "╔═ answer" in shown and f"{len(chunks)} chunks · " in shown and "sources: report.txt" in shown
    assert env.stdout.getvalue() == ""

    trace = read_trace(tmp_path / "smol.jsonl")
    player = Player(trace)
    recorded = [step.memory for step in trace.steps(0)]
    assert [player.state(p).lanes[0].memory for p in range(len(player))] == recorded
    assert recorded[-1] == results[0].memory and trace.answers()[0].answer == results[0].answer


def test_the_memory_pane_says_what_the_model_decided():
    from dataclasses import replace

    from rich.console import Console

    from memread.cli.render import lane_pane

    events = synthetic_run.events()
    state = ViewState(total=5)
    for event in events[:3]:  # RunStarted, StepStarted(0), lane 0's StepFinished(0)
        state.apply(event, 0.0)
    step = events[2]
    callback = replace(step, update=None, recall_query="when was the storm", recalled="February, day 9",
                       truncated=True, parse_issues=("no <update> tag",))
    state.strategy = "callback"
    state.apply(callback, 1.0)
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(lane_pane(state, state.lanes[0], lines=3, width=100))
    shown = out.getvalue()
    assert "recall 'when was the storm' → February, day 9" in shown
    assert "cut at the limit" in shown and "1 format issue" in shown
