"""When an `evidence` question's round ends, when its reading ends, and the steps it has left: code's decisions,
from the lane's state alone (memread/strategies/evidence/stopping.py)."""

from __future__ import annotations

from typing import Any

import pytest

from memread.strategies.evidence import stopping
from memread.strategies.evidence.options import EvidenceOptions

OPTIONS = EvidenceOptions(passages=3, rounds=2)
QUESTION = "Which environment variable sets the directory holding the java.opts file?"
ON_A_LINE_SAYING_IT_ALL = {"answer": "OCTAVE_JAVA_DIR", "support": 7}  # of the question's 8 words


def read(*, read: int, in_round: int, rounds: int = 0, answers_at: tuple[int, ...] = ()) -> tuple[dict, dict]:
    """A lane's state before a passage read and after it (its ``read``-th passage, the ``in_round``-th of the
    round), with answers found at the steps ``answers_at``."""
    before: dict[str, Any] = {"read": list(range(read - 1)), "in_round": in_round - 1, "rounds": rounds}
    after = {**before, "read": list(range(read)), "in_round": in_round,
             "candidates": [{"step": s, "answer": "x"} for s in answers_at]}
    return before, after


def test_a_round_goes_on_until_its_passages_are_read_then_its_answers_are_checked() -> None:
    before, after = read(read=2, in_round=2, answers_at=(1,))
    assert stopping.after_read("lookup", before, after, OPTIONS, left=True, sure=False) == ("", {})
    before, after = read(read=3, in_round=3, answers_at=(1,))
    assert stopping.after_read("lookup", before, after, OPTIONS, left=True, sure=False) == ("", {"select": True})
    before, after = read(read=1, in_round=1, answers_at=(1,))  # an answer it is sure of ends the round at once
    assert stopping.after_read("lookup", before, after, OPTIONS, left=True, sure=True) == ("", {"select": True})


def test_a_round_without_answers_starts_the_next_or_ends_the_reading() -> None:
    before, after = read(read=3, in_round=3)
    assert stopping.after_read("lookup", before, after, OPTIONS, left=True, sure=False) == (
        "", {"rounds": 1, "in_round": 0})
    before, after = read(read=6, in_round=3, rounds=1, answers_at=(2,))  # an answer of the round before: no check
    reason, changes = stopping.after_read("lookup", before, after, OPTIONS, left=True, sure=False)
    assert reason == "no answer found in the passages read" and changes == {}
    before, after = read(read=2, in_round=2)
    assert stopping.after_read("lookup", before, after, OPTIONS, left=False, sure=False)[0] == (
        "no answer found in the passages read")


def test_a_how_many_question_reads_one_round_and_mode_all_reads_every_chunk() -> None:
    before, after = read(read=3, in_round=3, answers_at=(1,))
    reason, changes = stopping.after_read("count", before, after, OPTIONS, left=True, sure=False)
    assert reason.endswith("and read the best passages") and changes == {}
    before, after = read(read=9, in_round=9)
    assert stopping.after_read("all", before, after, OPTIONS, left=True, sure=False) == ("", {})
    assert stopping.after_read("all", before, after, OPTIONS, left=False, sure=False) == ("read every chunk", {})


def test_a_select_step_ends_the_reading_when_it_confirms_or_no_round_is_left() -> None:
    never = pytest.fail  # ``left`` is asked only when the other reasons do not end the reading
    assert stopping.after_select("OCTAVE_JAVA_DIR", 1, OPTIONS, never).startswith("the lines kept answer")
    assert stopping.after_select(None, 2, OPTIONS, never) == "read 2 round(s) of 3 passages; none answered"
    assert stopping.after_select(None, 1, OPTIONS, lambda: True) == ""
    assert stopping.after_select(None, 1, OPTIONS, lambda: False) == "no unread passage matches the question"


def test_a_lookup_is_sure_of_an_answer_on_a_line_saying_nearly_all_the_question_says() -> None:
    def sure(found: dict | None, *, whole: bool = False, state: dict | None = None, chunk: int = 0,
             mode: str = "lookup", early: int = 0) -> bool:
        return stopping.sure(QUESTION, mode, found, state or {}, chunk, whole=whole, early=early,
                             holding=lambda name: [4] if name == "2.22-3" else [])

    assert sure(ON_A_LINE_SAYING_IT_ALL)
    assert not sure(ON_A_LINE_SAYING_IT_ALL, whole=True)  # a first hop's round is read whole
    assert not sure(ON_A_LINE_SAYING_IT_ALL, mode="count")
    assert not sure({"answer": None, "support": 8}) and not sure(None)
    weak = {"answer": "java", "support": 2}
    assert not sure(weak) and sure(weak, early=2)
    assert sure(weak, state={"bridge": "2.22-3"}, chunk=4)  # a second hop's answer where its bridge is
    assert not sure(weak, state={"bridge": "2.22-3"}, chunk=5)


def test_the_steps_left_count_the_rounds_and_their_select_steps_never_past_the_unread() -> None:
    assert stopping.steps_left("lookup", stopping.READ, {}, OPTIONS, unread=100) == 3 + 1 + 3 + 1
    assert stopping.steps_left("lookup", stopping.SELECT, {"in_round": 3}, OPTIONS, unread=100) == 3 + 1 + 1
    assert stopping.steps_left("lookup", stopping.READ, {}, OPTIONS, unread=2) == 2 + 1 + 1
    assert stopping.steps_left("count", stopping.COLLECT, {}, OPTIONS, unread=100) == 1 + 3
    assert stopping.steps_left("all", stopping.READ, {}, OPTIONS, unread=7) == 7
    assert stopping.steps_left("lookup", None, {}, OPTIONS, unread=7) == 0


@pytest.mark.parametrize(("passages", "options", "size"), [
    (21, EvidenceOptions(), 6),                     # a quarter of a short document, rounded up
    (12, EvidenceOptions(), 4),                     # never fewer than four
    (400, EvidenceOptions(), 8),                    # a long document: `passages`
    (21, EvidenceOptions(passages=3), 3),           # never more than `passages`
    (21, EvidenceOptions(round_share=1.0), 8),      # the share off: as before v40
])
def test_a_round_reads_at_most_a_share_of_a_short_document(passages: int, options: EvidenceOptions,
                                                           size: int) -> None:
    assert stopping.round_size(options, passages) == size
