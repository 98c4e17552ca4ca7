"""benchmarks/studies/expansion_probe.py and where_lost.py: where a design lookup's gold is found in a passage, how
far a ranking reaches it, and the stage a traced read loses it at (no model or document here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.studies import expansion_probe, where_lost

LOOKUP = {"id": "own-lookup-01", "kind": "single", "golds": ["wishlist"], "question": "What severity?",
          "check": {"first": r"The severity of the bug report must be set to (\w+)\."}}
DOCQA = {"id": "octave-pdf-02", "kind": "paraphrase", "golds": ["1000", "1,000"], "question": "How many?"}


def test_a_passage_holds_the_gold_where_the_check_finds_it_or_a_gold_stands_in_it() -> None:
    assert expansion_probe.holds(LOOKUP, "Then: The severity of the bug report must be set to wishlist. Go.")
    # the gold's word elsewhere is not the place the check names
    assert not expansion_probe.holds(LOOKUP, "A wishlist bug. The severity of the bug report must be set to normal.")
    assert expansion_probe.holds(DOCQA, "keeps the last\n1,000 lines")  # a docqa question: a gold, spaces aside
    assert not expansion_probe.holds(DOCQA, "keeps the last 100 lines")


class _Passages:
    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def get(self, index: int) -> object:
        return type("Chunk", (), {"text": self.texts[index]})()


def test_the_place_reached_is_the_first_passage_in_the_order_holding_the_gold() -> None:
    passages = _Passages(["nothing", "The severity of the bug report must be set to wishlist.", "nothing"])
    assert expansion_probe.reached(LOOKUP, passages, [(2, 3.0), (1, 2.0), (0, 1.0)]) == 2
    assert expansion_probe.reached(LOOKUP, passages, [(0, 3.0), (2, 1.0)]) is None


def test_the_summary_counts_gains_and_losses_against_the_ranking_now() -> None:
    rows = [{"id": "a", "doc": "d", "kind": "single", "now": 1, "with": None, "guess": "x | y"},
            {"id": "b", "doc": "d", "kind": "single", "now": None, "with": 3, "guess": ""},
            {"id": "c", "doc": "d", "kind": "single", "now": 2, "with": 1, "guess": ""}]
    text = expansion_probe.summary(rows, 8)
    assert "2 of 3 now, 2 with the guess; gained b; lost a." in text and "x / y" in text


def step(chunk: int, reply: str) -> dict[str, object]:
    return {"type": "step_finished", "chunk": {"index": chunk}, "reply": reply, "decisions": {"answer": reply}}


SELECT = {"type": "step_finished", "chunk": {"index": 1}, "reply": "\\boxed{wishlist}", "decisions": {"check": "x"}}


def wishlist(said: str) -> bool:
    return said == "wishlist"


@pytest.mark.parametrize("records, final, stands", [
    ([step(0, "\\boxed{normal}")], "normal", "not read"),
    ([step(1, "\\boxed{normal}")], "normal", "read, not answered"),
    ([step(1, "\\boxed{wishlist}"), step(0, "\\boxed{normal}")], "normal", "answered, not chosen"),
    ([step(1, "\\boxed{wishlist}")], "wishlist", "right"),
    # a select step reads no passage: its chunk and reply are not a read step's
    ([step(0, "\\boxed{none}"), SELECT], "The document does not say.", "not read"),
])
def test_a_traced_read_stands_at_the_first_stage_it_loses_the_gold_at(records: list[dict[str, object]],
                                                                       final: str, stands: str) -> None:
    steps = where_lost.traced_steps(records, lambda chunk: chunk == 1)
    assert where_lost.stage(steps, final, wishlist)[0] == stands


def test_the_read_steps_shown_the_gold_are_counted_with_those_answered_right() -> None:
    steps = [("\\boxed{wishlist}", True), ("\\boxed{normal}", True), ("\\boxed{wishlist}", False)]
    assert where_lost.stage(steps, None, wishlist) == ("answered, not chosen", 1, 2)


PROMPT = ("[Passage 1 — § A.2 dput]\nIt supports to run dinstall in dry-run mode after the upload.\n\n"
          "Question: What does dput support running in dry-run mode after the upload?\n\n"
          "Answer the question with the exact words of the passages, in \\boxed{}.")


def test_a_read_step_repeating_the_question_is_found_and_asked_again_with_the_note() -> None:
    from benchmarks.studies import reask_probe

    pairs = [(PROMPT, "\\boxed{dry-run mode}"), (PROMPT, "\\boxed{dinstall}"),
             ("You are given lines … Question: x", "\\boxed{dry-run mode}")]  # a select step: not a read step
    found = list(reask_probe.echo_steps(iter(pairs)))
    question = "What does dput support running in dry-run mode after the upload?"
    assert found == [(PROMPT, question, "dry-run mode")]
    asked = reask_probe.amended(PROMPT, question, "dry-run mode")
    assert asked.endswith(f"Question: {question}\n(Not \"dry-run mode\": those are the question's own words.)\n\n"
                          "Answer the question with the exact words of the passages, in \\boxed{}.")
    assert reask_probe.passage_text(PROMPT).endswith("after the upload.")


@pytest.mark.parametrize("new, right, settles", [
    ("dinstall", True, "right"),
    ("supports to run", False, "other"),  # the passage holds it, and it is not the question's words in a row
    ("upload", False, "none"),  # one of the question's words
    ("dry-run mode", False, "none"),  # the question's words again
    ("katie", False, "none"),  # not in the passage
    (None, False, "none"),
])
def test_a_new_answer_settles_as_a_read_steps_answer(new: str | None, right: bool, settles: str) -> None:
    from benchmarks.studies import reask_probe

    question = "What does dput support running in dry-run mode after the upload?"
    assert reask_probe.outcome(new, PROMPT, question, right) == settles


def test_a_read_step_asked_with_the_worked_examples_first_and_settled_as_a_read_steps_answer() -> None:
    from benchmarks.studies import read_probe

    assert read_probe.turns("as-made", PROMPT) == [("user", PROMPT)]
    demo = read_probe.turns("demo", PROMPT)
    assert [role for role, _ in demo] == ["user", "assistant", "user", "assistant", "user"] and demo[-1][1] == PROMPT
    assert demo[0][1].startswith("[Passage 1 — § 3. Configuration") and demo[0][1].endswith(
        "Answer the question with the exact words of the passages, in \\boxed{}.")
    assert [text for role, text in demo if role == "assistant"] == ["\\boxed{--log-dir=DIR}", "\\boxed{four weeks}"]
    for _, answer in read_probe.WORKED:  # each worked answer is the example's own words
        assert answer in read_probe.EXAMPLE
    assert read_probe.settled("\\boxed{Dinstall}", PROMPT) == "dinstall"  # the passage's spelling
    assert read_probe.settled("\\boxed{dry-run mode}", PROMPT) is None  # the question's own words
    assert read_probe.settled("\\boxed{katie}", PROMPT) is None  # not in the passage


@pytest.mark.parametrize("study, name, says", [
    ("where_lost", "mine.jsonl", "named by one of our lookups' ids"),
    ("where_lost", "own-lookup-01.jsonl", "not a memread trace"),
    ("reask_probe", "own-lookup-01.jsonl", "not a memread trace"),
    ("select_probe", "own-lookup-29.jsonl", "not a memread trace"),
    ("read_probe", "mine.jsonl", "named by one of our lookups' ids"),
    ("read_probe", "own-lookup-01.jsonl", "not a memread trace"),
])
def test_a_file_that_is_not_a_lookups_trace_is_a_one_line_usage_error(study: str, name: str, says: str,
                                                                     tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import importlib

    path = tmp_path / name
    path.write_text("not JSON\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stopped:
        importlib.import_module(f"benchmarks.studies.{study}").main([str(path)])
    assert stopped.value.code == 2 and says in capsys.readouterr().err
