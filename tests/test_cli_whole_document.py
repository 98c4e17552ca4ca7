"""`memread ask --all` and the default strategy: what reaches the read, checked before any model is opened."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_memread

from memread.models.trained import TRAIN_RECORD

pytestmark = pytest.mark.fast


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The requests `memread ask` hands to the runner (which is not run)."""
    import memread.cli.runner

    requests: list[Any] = []
    monkeypatch.setattr(memread.cli.runner, "run_ask", lambda request, output, **_: requests.append(request))
    monkeypatch.delenv("MEMREAD_STRATEGY", raising=False)
    return requests


def test_all_asks_evidence_to_collect_from_the_whole_document(asked: list[Any], tmp_path: Path) -> None:
    assert run_memread("ask", str(tmp_path), "How many entries?", "-s", "evidence", "--all")[0] == 0
    assert asked[0].settings.strategy == "evidence" and asked[0].settings.options == {"mode": "collect"}


def test_all_turns_gated_exit_gate_off_and_leaves_strategies_that_read_everything_alone(
        asked: list[Any], tmp_path: Path) -> None:
    run_memread("ask", str(tmp_path), "List every test.", "-s", "gated", "--all")
    run_memread("ask", str(tmp_path), "List every test.", "-s", "overwrite", "--all")
    assert asked[0].settings.options == {"exit_gate": False}
    assert asked[1].settings.options == {}


def test_an_option_the_user_gives_wins_over_all(asked: list[Any], tmp_path: Path) -> None:
    run_memread("ask", str(tmp_path), "How many days?", "-s", "evidence", "--all", "-o", "mode=lookup")
    assert asked[0].settings.options == {"mode": "lookup"}


def test_all_with_an_unknown_strategy_is_refused_in_one_line(asked: list[Any], tmp_path: Path) -> None:
    status, _, err = run_memread("ask", str(tmp_path), "q", "-s", "nosuch", "--all")
    assert status == 2 and "unknown strategy 'nosuch'" in err and "Traceback" not in err and not asked


def test_a_model_trained_for_a_strategy_reads_with_it_unless_told_otherwise(
        asked: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "rl-memagent"
    model.mkdir()
    (model / TRAIN_RECORD).write_text(json.dumps({"strategy": "callback"}), encoding="utf-8")
    run_memread("ask", str(tmp_path), "q", "--model", str(model))
    run_memread("ask", str(tmp_path), "q", "--model", str(model), "-s", "overwrite")
    run_memread("ask", str(tmp_path), "q", "--model", "BytedTsinghua-SIA/RL-MemoryAgent-14B", "--backend", "openai")
    run_memread("ask", str(tmp_path), "q")
    assert [r.settings.strategy for r in asked] == ["callback", "overwrite", "overwrite", "evidence"]
    monkeypatch.setenv("MEMREAD_STRATEGY", "gated")
    run_memread("ask", str(tmp_path), "q", "--model", str(model))
    assert asked[-1].settings.strategy == "gated"


def test_several_questions_to_an_untrained_model_share_each_chunk_unless_told_otherwise(
        asked: list[Any], tmp_path: Path) -> None:
    model = tmp_path / "rl-memagent"
    model.mkdir()
    (model / TRAIN_RECORD).write_text(json.dumps({"strategy": "overwrite"}), encoding="utf-8")
    run_memread("ask", str(tmp_path), "q")
    run_memread("ask", str(tmp_path), "q", "-q", "r")
    run_memread("ask", str(tmp_path), "q", "-q", "r", "--layout", "question-first")
    run_memread("ask", str(tmp_path), "q", "-q", "r", "--model", str(model))  # trained question-first
    run_memread("ask", str(tmp_path), "q", "-q", "r", "--model", str(model), "-s", "callback")
    assert [r.settings.layout for r in asked] == ["question-first", "chunk-first", "question-first",
                                                  "question-first", "question-first"]
