"""round_reach: which questions a round ending at a line holding the question can reach, counted without a model."""

from __future__ import annotations

from benchmarks.studies import round_reach
from memread.chunk import Chunker
from memread.document import Provenance, Segment
from memread.tokens import CharTokenizer


def _words(texts: list[str]) -> list[frozenset[str]]:
    segments = [Segment(text + "\n\n", Provenance("manual.pdf", page=n)) for n, text in enumerate(texts, 1)]
    return round_reach.unit_words(Chunker(CharTokenizer(), 120).chunks(segments))


def test_a_question_is_reachable_only_where_a_line_holds_nearly_all_its_words() -> None:
    words = _words(["Unless overridden, the history size has a default value of 1000.",
                    *(f"Filler page {n} about matrices and vectors." for n in range(5))])
    assert round_reach.reach("What is the default value of the history size unless overridden?", words) == (6, 6, True)
    top, count, can = round_reach.reach("Which manual gives the default history size in its chapter on shells?", words)
    assert (top, can) == (3, False) and count > top
    # a question asked in two hops is counted reachable: its second question is made from what the read finds
    two_hops = ("The 2.22-4 upload reverts a change made in an earlier upload. On what date was that earlier "
                "upload made?")
    assert round_reach.reach(two_hops, words)[2] is True


def test_without_a_task_it_prints_its_usage_and_exits_2(capsys) -> None:  # type: ignore[no-untyped-def]
    assert round_reach.main([]) == 2 and "round_reach docqa" in capsys.readouterr().err
    assert round_reach.main(["hqa", "50"]) == 2
