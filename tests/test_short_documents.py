"""benchmarks/studies/short_documents.py: the window of a real document a lookup is asked of holds its answer and
never a held-out one; a bad --option is a usage error."""

from __future__ import annotations

import pytest

from benchmarks.studies.short_documents import parse_option, window

TEXT = "".join(f"line {n}: nothing here\n" for n in range(400)) + "the answer is KEEP_ME\n" + \
    "".join(f"line {n}: more\n" for n in range(400, 800))
QUESTION = {"id": "own-lookup-99", "golds": ["KEEP_ME"], "check": {"first": r"the answer is (\w+)"}}


def test_a_window_holds_the_answer_cut_at_line_ends_away_from_hidden_spans() -> None:
    at = TEXT.index("KEEP_ME")
    hidden = [(at + 2000, at + 2600)]  # a held-out answer's neighbourhood after it
    cut = window(QUESTION, TEXT, hidden, 1500)
    assert cut is not None and "KEEP_ME" in cut and cut.startswith("line ") and not cut.endswith("\n")
    start = TEXT.index(cut)
    assert start + len(cut) <= at + 2000 and start <= at  # touches no hidden span
    assert window(QUESTION, TEXT, [(at - 10, at + 10)], 1500) is None  # the answer itself hidden: no window


def test_an_option_is_name_equals_a_json_value() -> None:
    assert parse_option("round_share=0.25") == ("round_share=0.25", {"round_share": 0.25})
    with pytest.raises(ValueError, match="NAME=VALUE"):
        parse_option("round_share")
