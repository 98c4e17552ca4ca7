"""benchmarks/studies/regions.py: a document shown for writing design questions, never near a held-out gold (no
document here: the text and the questions are replaced)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.studies import own_questions, regions

QUESTIONS = ({"id": "x-01", "doc": "x", "kind": "single", "golds": ["needle"]},  # odd: held out
             {"id": "x-02", "doc": "x", "kind": "single", "golds": ["design answer"]},
             {"id": "y-01", "doc": "y", "kind": "single", "golds": ["nowhere"]})


@pytest.fixture
def document(monkeypatch: pytest.MonkeyPatch) -> str:
    from memread.bench import docqa

    text = "filler " * 2000 + "the needle is here " + "filler " * 2000 + "the design answer " + "filler " * 100
    monkeypatch.setattr(docqa, "questions", lambda: QUESTIONS)
    monkeypatch.setattr(own_questions, "document_text", lambda doc: text)
    return text


def test_only_held_out_golds_of_the_document_are_hidden(document: str) -> None:
    at = document.index("needle")
    assert regions.hidden("x", document) == [(at - regions.MARGIN, at + len("needle") + regions.MARGIN)]
    assert regions.hidden("y", document) == []  # y's held-out gold is not in this text


def test_no_region_shown_touches_a_hidden_span(document: str, capsys: Any) -> None:
    at = document.index("needle")
    for seed in range(40):
        assert regions.main(["x", "--seed", str(seed), "--chars", "500"]) == 0
        shown = capsys.readouterr().out
        assert "needle" not in shown
        start = int(shown.split("characters ")[1].split(" to")[0].replace(",", ""))
        assert start + 500 <= at - regions.MARGIN or start >= at + regions.MARGIN
    assert regions.main(["x", "--at", "needle"]) == regions.REFUSED
    assert capsys.readouterr().out.startswith("refused")
    assert regions.main(["x", "--at", "design answer", "--chars", "200"]) == 0
    assert "the design answer" in capsys.readouterr().out
    assert regions.main(["x", "--count", "needle"]) == 0
    assert capsys.readouterr().out.startswith("0 occurrence(s)")
