"""The papers' recipes as verl overrides and as a runnable script (verl's own config composes them in
tests/test_train_verl.py)."""

from __future__ import annotations

import subprocess

import pytest

from memread.errors import UsageError
from memread.settings import Settings
from memread.strategies import check_settings
from memread.train.presets import RECIPES, get_recipe, overrides, script


def as_dict(lines: list[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in lines)


def test_memagent_is_grpo_without_std_kl_loss_and_clip_as_released() -> None:
    values = as_dict(overrides(get_recipe("memagent"), model="Qwen/Qwen2.5-7B-Instruct", train_files="t.parquet"))
    assert values["algorithm.adv_estimator"] == "grpo"
    assert values["algorithm.norm_adv_by_std_in_grpo"] == "false"
    assert values["actor_rollout_ref.actor.use_kl_loss"] == "true"
    assert values["actor_rollout_ref.actor.kl_loss_coef"] == "0.001"
    assert values["actor_rollout_ref.actor.kl_loss_type"] == "low_var_kl"
    assert values["actor_rollout_ref.actor.loss_agg_mode"] == "token-mean"
    assert (values["actor_rollout_ref.actor.clip_ratio_low"], values["actor_rollout_ref.actor.clip_ratio_high"]) == (
        "0.2", "0.2")
    assert (values["actor_rollout_ref.rollout.n"], values["data.train_batch_size"]) == ("16", "128")
    assert values["actor_rollout_ref.actor.optim.lr"] == "1e-06"
    assert values["+memread.alpha"] == "1.0" and values["+memread.strategy"] == "overwrite"
    assert values["+memread.settings.answer_start"] == "''"
    assert values["data.val_files"] == "t.parquet"


def test_the_multi_level_recipes_carry_their_alpha_and_strategy() -> None:
    assert (RECIPES["rememr1"].alpha, RECIPES["rememr1"].strategy) == (0.8, "callback")
    assert (RECIPES["grumem"].alpha, RECIPES["grumem"].strategy) == (0.9, "gated")
    grumem = as_dict(overrides(get_recipe("grumem"), model="m", train_files="t", clip_high=0.28, alpha=0.5))
    assert grumem["+memread.alpha"] == "0.5"
    assert grumem["actor_rollout_ref.actor.clip_ratio_high"] == "0.28"
    assert grumem["+memread.options.stop_on_check_no"] == "false"
    assert grumem["actor_rollout_ref.actor.optim.lr_warmup_steps"] == "20"


@pytest.mark.parametrize("name", list(RECIPES))
def test_every_recipe_is_valid_memread_settings_and_its_prompt_budget_holds_a_whole_step(name: str) -> None:
    recipe = RECIPES[name]
    settings = check_settings(Settings(strategy=recipe.strategy, options=dict(recipe.options), **recipe.settings))
    assert settings.chunk_tokens == 5000
    values = as_dict(overrides(recipe, model="m", train_files="t"))
    assert int(values["data.max_prompt_length"]) >= 1024 + 5000 + recipe.reply_tokens
    assert int(values["actor_rollout_ref.rollout.max_model_len"]) == recipe.prompt_tokens + recipe.response_tokens


def test_an_unknown_preset_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match="unknown training preset 'dpo'") as error:
        get_recipe("dpo")
    assert "memagent" in (error.value.hint or "")


def test_the_script_is_valid_bash_that_passes_every_override_and_the_users() -> None:
    recipe = get_recipe("memagent")
    lines = overrides(recipe, model="/models/Qwen 7B", train_files="train.parquet", extra=["trainer.save_freq=10"])
    text = script(recipe, lines)
    assert text.startswith("#!/usr/bin/env bash\n") and "python -m memread.train.run" in text
    # Replace the trainer by echo and run the script: bash must hand over exactly the overrides, then "$@".
    echoed = subprocess.run(["bash", "-c", text.replace("python -m memread.train.run", "printf '%s\\n'"), "script",
                             "trainer.total_epochs=1"], capture_output=True, text=True, check=True).stdout
    assert echoed.splitlines() == [*lines, "trainer.total_epochs=1"]
    assert "actor_rollout_ref.model.path=/models/Qwen 7B" in echoed.splitlines()
