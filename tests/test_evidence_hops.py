"""Two hops in `evidence`: a question that names a thing and then asks about "that thing" is read as two lookups,
the first's answer (the bridge, chosen in code) put into the second."""

from __future__ import annotations

import pytest

from memread.backends.base import ChatRequest
from memread.backends.fake import FakeBackend
from memread.chunk import Chunker
from memread.document import Chunk, Provenance, Segment
from memread.events import Event, StepFinished
from memread.loop import LaneResult, Loop
from memread.settings import Settings
from memread.strategies.evidence import hops
from memread.tokens import CharTokenizer

QUESTION = "The 2.4-2 upload reverts a change made in an earlier upload. On what date was that earlier upload made?"


@pytest.mark.parametrize(("question", "first", "second"), [
    (QUESTION, "The 2.4-2 upload reverts a change made in an earlier upload. Which earlier upload?",
     "On what date was the earlier upload 2.4-1 made?"),
    ("The example integrates equations with a built-in solver. According to that solver's documentation, what "
     "is the step limit?", "The example integrates equations with a built-in solver. Which solver?",
     "According to the solver 2.4-1's documentation, what is the step limit?"),
    ("The section on X names a file and refers to another section. What command does that other section give?",
     "The section on X names a file and refers to another section. Which other section?",
     "What command does the other section 2.4-1 give?"),
])
def test_a_question_pointing_back_with_that_is_split_in_two_hops(question: str, first: str, second: str) -> None:
    split = hops.split(question)
    assert split is not None
    assert (split.first, split.second("2.4-1")) == (first, second)


@pytest.mark.parametrize("question", [
    "What does the tool take?",  # one sentence
    "The manual has a chapter on plots. Which function says that the figure is closed?",  # a conjunction
    "The log lists tests. Which file holds that configuration?",  # the noun is never named before
    "The file that holds the keyboard layout is named. Which command resets it?",  # "that" in the earlier one
])
def test_other_questions_are_asked_as_they_are(question: str) -> None:
    assert hops.split(question) is None
    assert hops.asking(question, {}) == question


CHANGELOG = [
    "tool (2.4-3) unstable; urgency=low\n\n  * Upload to unstable.\n  * Update the docs for the new options.\n\n"
    " -- Ann Maintainer <ann@example.org>  Mon, 09 Jan 2012 10:00:00 +0100",
    "tool (2.4-2) unstable; urgency=low\n\n  * Don't bump the soversion (revert the change in 2.4-1).\n\n"
    " -- Ann Maintainer <ann@example.org>  Sat, 07 Jan 2012 09:07:25 +0100",
    "tool (2.4-1) unstable; urgency=low\n\n  * Upload to unstable.\n  * Bump the soversion.\n\n"
    " -- Ann Maintainer <ann@example.org>  Tue, 03 Jan 2012 06:06:20 +0100",
    *(f"tool (1.{n}-1) unstable; urgency=low\n\n  * Rebuild with gcc {n}.\n\n"
      f" -- Bob Builder <bob@example.org>  Sun, 0{n % 9 + 1} Oct 2011 12:00:00 +0100" for n in range(8)),
]


def changelog_chunks() -> list[Chunk]:
    segments = [Segment(text + "\n\n", Provenance("changelog", page=n)) for n, text in enumerate(CHANGELOG, 1)]
    return list(Chunker(CharTokenizer(), 200).chunks(segments))


def model(request: ChatRequest) -> str:
    """Answers "Which earlier upload?" with the upload the line it is shown reverts, a date question with the
    date of the upload it names when shown that upload's sign-off, and otherwise the upload the passage heads."""
    prompt = request.messages[-1].content
    shown, question = prompt.split("Question:")[0], prompt.split("Question:")[-1]
    if "Which earlier upload?" in question:
        return ("2.4-1}" if "revert the change in 2.4-1" in shown else
                next((v for v in ("2.4-3", "1.3-1") if v in shown), "not in the document") + "}")
    if "2.4-1" in question:
        return "Tue, 03 Jan 2012 06:06:20 +0100}" if "03 Jan 2012" in shown else "not in the document}"
    return "Sat, 07 Jan 2012 09:07:25 +0100}" if "07 Jan 2012" in shown else "not in the document}"


def read(question: str) -> tuple[LaneResult, list[StepFinished]]:
    events: list[Event] = []
    loop = Loop(FakeBackend(model, continues_replies=True), [question], Settings(strategy="evidence"),
                sinks=[events.append])
    result = loop.run(changelog_chunks())[0]
    return result, [e for e in events if isinstance(e, StepFinished)]


def test_the_bridge_is_the_first_hops_answer_on_the_line_most_about_it_and_the_second_hop_answers() -> None:
    result, steps = read(QUESTION)
    assert result.answer == "Tue, 03 Jan 2012 06:06:20 +0100"  # the earlier upload's date, not 2.4-2's own
    crossed = next(i for i, s in enumerate(steps) if s.summary.startswith("first hop: '2.4-1'"))
    assert steps[crossed].summary.endswith("now: On what date was the earlier upload 2.4-1 made?")  # shown live
    assert all("confirmed" not in s.decisions for s in steps[:crossed + 1])  # no select step in the first hop
    assert steps[-1].decisions["confirmed"].startswith("Tue, 03 Jan 2012")
    assert "first hop" not in steps[-1].summary


def test_a_first_hop_that_finds_nothing_reads_the_question_as_asked() -> None:
    question = ("The 9.9-9 upload reverts a change made in an earlier upload. On what date was that earlier "
                "upload made?")
    result, steps = read(question.replace("9.9-9", "tool"))  # no identifier: nothing rules the read out
    assert hops.split(question) is not None
    state = {"candidates": []}
    assert hops.bridge(state) is None
    second = hops.next_hop(question, state, {"evidence": []})
    assert second["asking"] == question and second["bridge"] is None
    assert result.answer  # read to an answer either way


def test_the_second_hop_reads_the_passages_holding_its_bridge_first() -> None:
    assert hops.bridged([(4, 9.0), (2, 3.0), (7, 1.0)], [7, 2], read={2}) == 7  # the best unread holding it
    assert hops.bridged([(4, 9.0)], [7, 2], read=set()) == 2  # unranked: the earliest
    assert hops.bridged([(4, 9.0)], [2], read={2}) is None  # all read: the ranking decides again
    _, steps = read(QUESTION)
    crossed = next(i for i, s in enumerate(steps) if "first hop" in s.summary)
    assert "2.4-1" in steps[crossed + 1].chunk.text


def test_a_bridge_on_a_records_header_is_as_much_about_the_question_as_the_records_best_line() -> None:
    from memread.strategies.evidence import reading
    from memread.strategies.evidence.units import units

    text = ("tool (2.4-1) unstable; urgency=low\n\n  * Update the docs.\n  * Fix build failure with make 3.82.\n\n"
            " -- Ann Maintainer <ann@example.org>  Tue, 03 Jan 2012 06:06:20 +0100\n")
    shown = reading.Shown(0, "changelog", tuple(units(text)))
    question = "One upload fixed a build failure with make 3.82. Which upload?"
    assert reading.support(question, shown, 0) < 2  # the header alone shares nothing but its neighbours
    assert reading.record_support(question, shown, 0) >= 3  # its item "Fix build failure with make 3.82"
    assert hops.bridge({"candidates": [
        {"answer": "tool (2.4-1", "step": 1, "support": 0, "record_support": 4},
        {"answer": "tool (2.9-1", "step": 2, "support": 2, "record_support": 2}]}) == "tool (2.4-1)"  # closed


def test_the_second_hops_round_ends_at_its_first_answer_where_its_bridge_is() -> None:
    result, steps = read(QUESTION)
    crossed = next(i for i, s in enumerate(steps) if "first hop" in s.summary)
    # (the passage naming 2.4-1 as it reverts it may come first: these records' headers are not in the index)
    answered = next(i for i in range(crossed + 1, len(steps)) if (steps[i].decisions.get("found") or {}).get("answer"))
    assert "2.4-1" in steps[answered].chunk.text and answered <= crossed + 2
    assert "confirmed" in steps[answered + 1].decisions  # the select step at once: no passage read after it
    assert steps[answered + 1] is steps[-1] and result.answer.startswith("Tue, 03 Jan 2012")


def test_the_first_hops_round_is_read_whole_though_its_first_passage_answers() -> None:
    _, steps = read(QUESTION)
    crossed = next(i for i, s in enumerate(steps) if "first hop" in s.summary)
    assert steps[0].decisions["found"]["answer"] == "2.4-1" and crossed >= 2  # answered at once, and read on
