"""Final answers and the verifiers the benchmarks score with, including the seed code's known traps."""

from __future__ import annotations

import pytest

from memread.answer import (
    extract_boxed,
    extract_therefore,
    f1_score,
    final_answer,
    lenient_match,
    multi_value_recall,
    normalize_answer,
    strict_match,
    strip_string,
)


@pytest.mark.parametrize(("reply", "expected"), [
    ("The answer is \\boxed{Ada Quist}.", "Ada Quist"),
    ("first \\boxed{1} then \\boxed{2}", "2"),  # the last box counts
    ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),  # nested braces
    ("so \\boxed 5$ done", "5"),  # the "\boxed x" form
    ("\\fbox{Paris}", "Paris"),
    ("\\boxed{unbalanced", None),
    ("no box here", None),
    ("\\boxed{ 276,170 }", "276,170"),
])
def test_extract_boxed(reply: str, expected: str | None) -> None:
    assert extract_boxed(reply) == expected


def test_a_boxed_answer_loses_latex_text_commands_but_keeps_other_latex() -> None:
    # Seen from Qwen2.5-Coder-1.5B on RULER-HotpotQA: \\boxed{\\text{Discovery Zone}}.
    assert final_answer("\\boxed{\\text{Discovery Zone}}") == ("Discovery Zone", True)
    assert final_answer("\\boxed{\\text{ silk, incense, }\\textbf{perfume}}") == ("silk, incense, perfume", True)
    assert final_answer("\\boxed{\\textbf{\\text{No}}}") == ("No", True)
    assert final_answer("\\boxed{\\frac{1}{2}}") == ("\\frac{1}{2}", True)
    assert final_answer("The answer is \\text{x}.") == ("The answer is \\text{x}.", False)  # unboxed: as written


def test_final_answer_falls_back_to_the_whole_reply() -> None:
    assert final_answer("<think>maybe \\boxed{x}</think> It is \\boxed{Oslo}.") == ("Oslo", True)
    assert final_answer("<think>\\boxed{wrong}</think> It is Oslo.") == ("It is Oslo.", False)
    assert final_answer("  Oslo  ") == ("Oslo", False)


def test_therefore_style_reads_after_the_last_the_answer_is() -> None:
    assert extract_therefore("Therefore, the answer is **Ada Quist**.") == "Ada Quist"
    assert extract_therefore("The answer is 12 days. Therefore, the answer is 12.") == "12"
    assert extract_therefore("I do not know") is None
    assert final_answer("Therefore, the answer is Oslo.", style="therefore") == ("Oslo", True)
    assert final_answer("Therefore, the answer is \\boxed{Oslo}.", style="therefore") == ("Oslo", True)
    assert final_answer("Oslo, I think.", style="therefore") == ("Oslo, I think.", False)


def test_normalisation_is_squad() -> None:
    assert normalize_answer("The  Widow's Pier!") == "widows pier"


def test_lenient_is_sub_exact_match_but_an_empty_prediction_matches_nothing() -> None:
    assert lenient_match("12 days", ["12"])
    assert lenient_match("Quist", ["Ada Quist"])  # either way round
    assert lenient_match("276,170 inhabitants", ["276170"])  # the comma is punctuation, dropped
    assert not lenient_match("12", ["21 days"])
    # MemAgent's trap: "the" normalises to "" and "" is a substring of everything.
    assert lenient_match("The", ["Ada Quist"]) is False
    assert lenient_match("", ["Ada Quist"]) is False
    assert lenient_match(None, ["Ada Quist"]) is False
    # Max over golds, not only the first.
    assert lenient_match("Strasbourg", ["Paris", "Strasbourg"])


def test_strict_is_the_training_verifier() -> None:
    assert strict_match("so \\boxed{Ada Quist}", ["ada quist"])
    assert strict_match("so \\boxed{ada  quist}", ["Ada Quist"])  # spaces removed, lower-cased
    assert not strict_match("so \\boxed{The Ada Quist}", ["Ada Quist"])  # articles are not removed
    assert not strict_match("Ada Quist", ["Ada Quist"])  # no box, no score
    assert strict_match("\\boxed{0.5}", ["\\frac{1}{2}"])
    # Only the last 300 characters count: a box early in a long reply is not seen.
    assert not strict_match("\\boxed{Oslo}" + " filler" * 60, ["Oslo"])
    assert strict_match("x", ["y", "x"]) is False
    assert strict_match("\\boxed{Y}", ["x", "y"])  # max over golds


def test_strip_string_matches_hendrycks() -> None:
    assert strip_string("\\dfrac{1}{2}") == "\\frac{1}{2}"
    assert strip_string("x = 5") == "5"
    assert strip_string("90^{\\circ}") == "90"
    assert strip_string("1/2") == "\\frac{1}{2}"


def test_f1_and_multi_value_recall() -> None:
    assert f1_score("Ada Quist", ["Quist"]) == pytest.approx(2 / 3)
    assert f1_score("yes", ["no"]) == 0.0
    assert f1_score("The", ["the"]) == 0.0
    assert multi_value_recall("1234567 and 7654321", ["1234567", "7654321", "1111111", "2222222"]) == 0.5
    assert multi_value_recall("ABC", ["abc"]) == 1.0
    assert multi_value_recall(None, ["abc"]) == 0.0
