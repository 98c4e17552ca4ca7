"""How long an `evidence` read still has: each step says how many more its question reads at most (its rounds of
passages, each ended by a select step), so the live view's ETA counts those steps, not the rest of a 1,944-passage
manual ("ETA ≤ 8h" for a question answered two minutes later)."""

from __future__ import annotations

import pytest

from memread.chunk import Chunker
from memread.cli.viewstate import ViewState
from memread.document import Chunk, Provenance, Segment
from memread.events import Event, LaneExited, RunStarted, StepFinished, StepStarted
from memread.tokens import CharTokenizer
from tests.test_strategy_evidence import run

TOPICS = ["tides", "gulls", "nets", "ropes", "paint", "lamps", "boats", "fish", "ice", "wind"]
# 40 pages; every fourth names a crane: the passages a question about a crane reads, none of them answering it
QUAY = [f"Page {n} tells of the {TOPICS[n % 10]} of the north quay." + (f" The crane {n} lifted grain sacks."
                                                                       if n % 4 == 0 else "") for n in range(40)]

LOOKUP = ("What is the default value of history_size unless overridden?", {"history_size": "1000"})
ABSENT = ("Which crane lifted the steel beams?", {})
STATED_COUNT = ("How many entries does history_size keep unless overridden?", {"history_size": "1000"})


def quay() -> list[Chunk]:
    return list(Chunker(CharTokenizer(), 120).chunks(
        [Segment(text + "\n\n", Provenance("quay.pdf", page=n, page_label=str(n))) for n, text in enumerate(QUAY, 1)]))


def steps_of(question: str, answers: dict[str, str], **options: object) -> list[StepFinished]:
    chunks = quay() if question == ABSENT[0] else None
    events: list[Event] = run([question], answers, chunks=chunks, **options)[1]
    return [e for e in events if isinstance(e, StepFinished)]


@pytest.mark.parametrize(("question", "answers", "options"), [
    (*LOOKUP, {}),
    (*ABSENT, {}),                              # every round read, nothing found
    (*ABSENT, {"passages": 2, "rounds": 3}),
    (*STATED_COUNT, {}),                        # collect, then a round of passages
    (*LOOKUP, {"mode": "all"}),                 # every passage in document order
    (*ABSENT, {"max_read": 0.3}),
], ids=["lookup", "absent", "absent-3-rounds", "count", "all", "max-read"])
def test_each_step_bounds_the_steps_its_question_still_reads(question: str, answers: dict[str, str],
                                                             options: dict[str, object]) -> None:
    steps = steps_of(question, answers, **options)
    assert steps and all(step.steps_left is not None for step in steps)
    for number, step in enumerate(steps):
        assert step.steps_left >= len(steps) - number - 1, (number, step.steps_left, len(steps))  # type: ignore[operator]
    assert steps[-1].steps_left == 0 and steps[-1].exit


def test_a_lookups_first_bound_is_its_rounds_not_the_document() -> None:
    steps = steps_of(*ABSENT, passages=3, rounds=2)
    assert len(quay()) == 30 and len(steps) == 6
    assert steps[0].steps_left == (3 - 1) + 1 + (3 + 1)  # this round's passages and select, one round more


def test_the_eta_counts_the_bounded_steps_at_the_time_a_step_takes() -> None:
    first = steps_of(*ABSENT, passages=3, rounds=2)[0]
    state = ViewState(total=1944)  # a long document: the bound, not the chunks, says what is left
    state.apply(RunStarted(run_id="r", document="manual.pdf", backend="fake", model="m", strategy="evidence",
                           questions=(ABSENT[0],), settings={"options": {"exit_gate": True}}), 0.0)
    state.apply(StepStarted(step=0, chunk=first.chunk, lanes=(0,)), 0.0)
    state.apply(first, 10.0)
    assert state.steps_left() == first.steps_left == 7
    assert state.eta_text() == "ETA ≤ 1m10s"  # 7 steps of 10 s, not 1,943
    state.apply(LaneExited(lane=0, step=0, reason="no answer found in the passages read"), 11.0)
    assert state.steps_left() == 0  # the question stopped: only its answer is left


def test_a_view_of_steps_without_bounds_counts_to_the_end_as_before() -> None:
    first = steps_of(*ABSENT, passages=3, rounds=2)[0]
    unbounded = StepFinished(**{**first.__dict__, "steps_left": None})  # a trace written before steps_left
    state = ViewState(total=20)
    state.apply(RunStarted(run_id="r", document="manual.pdf", backend="fake", model="m", strategy="evidence",
                           questions=(ABSENT[0],), settings={"options": {}}), 0.0)
    state.apply(StepStarted(step=0, chunk=first.chunk, lanes=(0,)), 0.0)
    state.apply(unbounded, 10.0)
    assert state.steps_left() == 19


def test_a_short_documents_rounds_read_a_quarter_of_it_each() -> None:
    # 14 passages, every one about a crane and none answering: rounds of 4 (a quarter, rounded up, at least 4)
    short = list(Chunker(CharTokenizer(), 120).chunks(
        [Segment(f"Page {n}: the crane {n} lifted the {TOPICS[n % 10]} onto the north quay before the tide.\n\n", Provenance("quay.pdf", page=n))
         for n in range(1, 15)]))
    assert len(short) == 14
    events: list[Event] = run([ABSENT[0]], {}, chunks=short)[1]
    reads = [e for e in events if isinstance(e, StepFinished)]
    assert len(reads) == 2 * 4 and reads[-1].exit
    assert reads[0].steps_left == (4 - 1) + 1 + (4 + 1)
    events = run([ABSENT[0]], {}, chunks=short, round_share=1.0)[1]
    assert len([e for e in events if isinstance(e, StepFinished)]) == 14  # rounds of 8: all there are
