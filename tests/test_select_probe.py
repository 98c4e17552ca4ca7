"""benchmarks/studies/select_probe.py: the select steps it rebuilds from a trace, the prompts of its variants, and
the answer each reply settles to (no model or document here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.studies import select_probe
from memread.bench.docqa import ABSENT_GOLD

QUESTION = "Which dpkg-buildpackage switch can change which bugs get closed?"


def entry(step: int, text: str, how: str = "answer", start: int = 0) -> dict[str, object]:
    return {"chunk": step, "start": start, "end": start + len(text), "text": text, "head": "5. Managing Packages",
            "step": step, "how": how}


STATE = {
    "evidence": [entry(1, "Unless specified differently by the -v switch to dpkg-buildpackage, only the bugs closed "
                          "in the most recent changelog entry are closed."),
                 entry(2, "The way to invoke dpkg-buildpackage is as dpkg-buildpackage -B -m porter-email."),
                 entry(3, "Responding to bugs is described below.", how="near")],
    "candidates": [{"answer": "-v", "step": 1, "support": 6}, {"answer": "-B", "step": 2, "support": 2},
                   {"answer": None, "step": 3, "support": 3}],
    "read": [1, 2, 3], "in_round": 3,
}


def trace(tmp_path: Path) -> Path:
    """A read with two select steps: each after the read step whose state it starts from."""
    def select(step: int, question: str) -> dict[str, object]:
        return {"type": "step_finished", "step": step, "state": {}, "decisions": {"check": "x", "confirmed": None},
                "prompt": f"Lines.\n\nQuestion: {question}\n\nAnswer with the exact words of the lines, in \\boxed{{}}."}
    records = [{"type": "header", "questions": [QUESTION]},
               {"type": "step_finished", "step": 0, "state": {**STATE, "evidence": STATE["evidence"][:1]},
                "decisions": {"answer": "-v"}},
               select(1, "first round's question"),
               {"type": "step_finished", "step": 2, "state": STATE, "decisions": {"answer": "-B"}},
               select(3, QUESTION)]
    path = tmp_path / "own-lookup-29.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_each_select_step_is_rebuilt_from_the_state_before_it(tmp_path: Path) -> None:
    path = trace(tmp_path)
    every = select_probe.select_states(path, every=True)
    assert [(question, step) for question, _, step in every] == [("first round's question", 1), (QUESTION, 3)]
    assert len(every[0][1]["evidence"]) == 1 and every[1][1] is not None and len(every[1][1]["evidence"]) == 3
    assert [step for _, _, step in select_probe.select_states(path)] == [3]  # the last, by default


def test_the_variants_lay_out_or_ask_for_the_same_lines_otherwise() -> None:
    from memread.strategies.evidence import answer, keeping

    made = select_probe.prompt("as-made", QUESTION, STATE)
    assert made == answer.final_prompt(QUESTION, keeping.for_model(STATE["evidence"]))  # the strategy's own
    assert made.count("\n- ") == 3 and "not in the document" in made
    assert select_probe.prompt("answer-lines", QUESTION, STATE).count("\n- ") == 2  # no line without an answer
    by_support = select_probe.prompt("by-support", QUESTION, STATE)
    assert by_support.index("-v switch") < by_support.index("Responding") < by_support.index("porter-email")
    numbered = select_probe.prompt("line-number", QUESTION, STATE)
    assert "\n1. 5. Managing Packages: Unless" in numbered and "\n3. " in numbered and "\\boxed{0}" in numbered
    assert "First copy the one line" in select_probe.prompt("quote-first", QUESTION, STATE)


def test_a_reply_settles_as_the_strategy_settles_it() -> None:
    settled = select_probe.settled
    # the words snapped to the line ("v": the final answer gives back the dash the text attaches, whole_name)
    assert settled("as-made", QUESTION, STATE, "\\boxed{-v}") == "v"
    assert settled("as-made", QUESTION, STATE, "\\boxed{not in the document}") is None
    # only the question's words: the round's answer on the line most about the question
    assert settled("as-made", QUESTION, STATE, "\\boxed{dpkg-buildpackage}") == "-v"  # as the read step found it
    # a line named by its number: the answer a read step found on it, none on a line without one or out of range
    assert settled("line-number", QUESTION, STATE, "\\boxed{2}") == "-B"
    assert settled("line-number", QUESTION, STATE, "\\boxed{3}") is None
    assert settled("line-number", QUESTION, STATE, "\\boxed{0}") is None
    assert settled("line-number", QUESTION, STATE, "\\boxed{9}") is None
    assert settled("quote-first", QUESTION, STATE, "Unless specified … closed.\n\\boxed{-v}") == "v"


def test_right_is_the_bench_rule_and_an_absent_question_is_right_when_nothing_is_confirmed() -> None:
    assert select_probe.is_right("-v", ["-v"], None)
    assert not select_probe.is_right("-B", ["-v"], None)
    assert select_probe.is_right(None, [ABSENT_GOLD], None)
    assert not select_probe.is_right("12", [ABSENT_GOLD], None)


def test_the_table_pairs_each_variant_with_as_made() -> None:
    rows = [{"variant": "as-made", "id": "a@1", "right": True}, {"variant": "as-made", "id": "b@1", "right": False},
            {"variant": "line-number", "id": "a@1", "right": False}, {"variant": "line-number", "id": "b@1", "right": True}]
    table = select_probe.summary(rows, ["line-number"])
    assert "| line-number | 2 | 1 | 1 | b@1 | a@1 |" in table


@pytest.mark.parametrize("argv, says", [
    (["missing-trace.jsonl"], "TRACE.jsonl=GOLD"),
    (["--variants", "as-made,bogus", "x.jsonl=g"], "unknown variant 'bogus'"),
    ([], "give traces, --replay FOLDER, or both"),
])
def test_bad_arguments_are_a_one_line_usage_error(argv: list[str], says: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        select_probe.main(argv)
    assert stopped.value.code == 2 and says in capsys.readouterr().err


class _Passage:
    def __init__(self, text: str) -> None:
        self.text = text


def test_unit_before_shows_each_line_after_the_unit_it_follows_in_its_passage() -> None:
    passage = ("h = meshz (. . .)\nPlot a 3-D wireframe mesh with a surrounding curtain.\n"
               "The wireframe mesh is plotted using rectangles.")
    kept = "Plot a 3-D wireframe mesh with a surrounding curtain."
    start = passage.index(kept)
    state = {"evidence": [{**entry(0, kept, start=start), "chunk": 0},
                          {**entry(0, "Plot nothing.", start=0), "chunk": 0}],  # not where it says: no context
             "candidates": [{"answer": "a surrounding curtain", "step": 0, "support": 3}], "read": [0], "in_round": 1}
    state = select_probe.with_before(state, [_Passage(passage)])
    assert [e["before"] for e in state["evidence"]] == ["h = meshz (. . .)", ""]
    made = select_probe.prompt("unit-before", "What does meshz draw around its mesh?", state)
    assert f"h = meshz (. . .) {kept}" in made
    # the answer is settled against the lines as shown, the context with them
    assert select_probe.settled("unit-before", "What does meshz return?", state, "\\boxed{h}") == "h"
    assert select_probe.settled("as-made", "What does meshz return?", state, "\\boxed{h}") is None


def test_a_vote_takes_the_answer_most_replies_confirm_a_tie_going_to_the_greedy_one() -> None:
    assert select_probe.voted(["-v", "-B", "-v", None, "-B"], "-B") == "-B"
    assert select_probe.voted(["-v", "-v", "-B", None, None], "-B") == "-v"
    assert select_probe.voted([None, None, None, "-v", "-B"], "-v") is None
    assert select_probe.voted(["-v", "-B", None, "x", "y"], "z") == "-v"  # no greedy among them: the first


def test_verify_asks_of_each_round_answer_on_the_lines_its_read_step_found_it_on() -> None:
    from benchmarks.studies import verify_probe

    # -m was read before the round began; the question's own words answer nothing
    state = {**STATE, "candidates": [{"answer": "-m", "step": 0, "support": 9}, *STATE["candidates"],
                                     {"answer": "dpkg-buildpackage", "step": 3, "support": 9}]}
    found = verify_probe.round_answers(QUESTION, state)
    assert [(a["answer"], [e["step"] for e in a["lines"]]) for a in found] == [("-v", [1]), ("-B", [2])]
    asked = verify_probe.asked(QUESTION, "-v", found[0]["lines"][0])
    assert asked.startswith('Here is a line from a document, under the heading "5. Managing Packages":\n"Unless')
    assert "Question: " + QUESTION + "\nProposed answer: -v\n" in asked and asked.endswith("Reply Yes or No.")


@pytest.mark.parametrize("variant, scores, made, confirmed", [
    ("verify", {"-v": 2.0, "-B": 3.0}, "-v", "-B"),
    ("verify", {"-v": -1.0, "-B": -0.5}, "-v", None),  # no answer the model says yes to: nothing
    ("verify", {"-v": 1.0, "-B": 1.0}, None, "-v"),  # a tie goes to more support
    ("verify", {}, "-v", None),
    ("verify-check", {"-v": -1.0, "-B": 0.5}, "-V ", "-B"),  # as made is said no to: the best said yes to
    ("verify-check", {"-v": 0.2, "-B": 3.0}, "-v", "-v"),  # as made is said yes to: kept
    ("verify-check", {"-v": -1.0, "-B": -0.5}, "-v", "-v"),  # nothing better: kept
    ("verify-check", {"-v": 2.0}, None, None),  # confirmed nothing: left so
    ("verify-check", {"-v": 2.0}, "porter", "porter"),  # an answer no read step gave: left so
])
def test_the_scores_choose_as_each_variant_says(variant: str, scores: dict[str, float], made: str | None,
                                                 confirmed: str | None) -> None:
    from benchmarks.studies import verify_probe

    assert verify_probe.chosen(variant, scores, {"-v": 6, "-B": 2}, made) == confirmed


def test_verify_probe_needs_the_as_made_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.studies import verify_probe

    for argv, says in [([str(trace(tmp_path)), "--made", str(tmp_path / "none.jsonl")], "no such file"),
                       (["--made", "x.jsonl"], "give traces, --replay FOLDER, or both")]:
        with pytest.raises(SystemExit) as stopped:
            verify_probe.main(argv)
        assert stopped.value.code == 2 and says in capsys.readouterr().err
