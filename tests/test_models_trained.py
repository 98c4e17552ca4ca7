"""The strategy a trained model reads with by default: from ``memread train export``'s record, or a released
checkpoint's name; untrained models get None (memread's own default then applies)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memread.models.trained import TRAIN_RECORD, trained_strategy

pytestmark = pytest.mark.fast


def test_an_exported_folder_names_the_strategy_it_was_trained_for(tmp_path: Path) -> None:
    (tmp_path / TRAIN_RECORD).write_text(json.dumps({"preset": "grumem", "strategy": "gated"}), encoding="utf-8")
    strategy, why = trained_strategy(str(tmp_path)) or ("", "")
    assert strategy == "gated" and TRAIN_RECORD in why


@pytest.mark.parametrize(("model", "strategy"), [
    ("BytedTsinghua-SIA/RL-MemoryAgent-14B", "overwrite"),
    ("/models/rl_memoryagent-7b-q4_k_m.gguf", "overwrite"),
    ("someone/ReMemR1-7B", "callback"),
    ("lab/GRU-Mem-7B", "gated"),
])
def test_the_papers_checkpoints_are_known_by_name(model: str, strategy: str) -> None:
    assert trained_strategy(model) == (strategy, "the model's name is a checkpoint trained for it")


@pytest.mark.parametrize("model", [None, "", "qwen2.5-coder-1.5b-q4_0", "Qwen/Qwen2.5-7B-Instruct", "memory.gguf"])
def test_untrained_models_have_no_strategy_of_their_own(model: str | None) -> None:
    assert trained_strategy(model) is None


def test_a_record_that_is_not_json_or_names_no_strategy_is_ignored(tmp_path: Path) -> None:
    (tmp_path / TRAIN_RECORD).write_text("{not json", encoding="utf-8")
    assert trained_strategy(str(tmp_path)) is None
    (tmp_path / TRAIN_RECORD).write_text(json.dumps({"preset": "x"}), encoding="utf-8")
    assert trained_strategy(str(tmp_path)) is None
