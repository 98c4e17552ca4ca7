"""memread on verl's own code (the train extra; skipped without it): prompt ids from the Hugging Face tokenizer equal
llama.cpp's, advantages equal verl's, the agent loop's outputs stack as verl stacks them, presets compose with verl's
configuration and a misspelled override fails. `memread train check` (run by .ci/run) strings these together on a
real model."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl", reason="needs the train extra: pip install torch==2.13.0 'memread[train]'")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories  # noqa: E402

from memread.train import presets, verl_adapter  # noqa: E402
from memread.train.advantage import Row, multi_conv  # noqa: E402
from memread.train.episode import Episode, Turn  # noqa: E402
from memread.train.rewards import score  # noqa: E402

pytestmark = pytest.mark.train


def verl_batch(groups: list[list[tuple[float, int]]]) -> tuple[list[str], torch.Tensor, torch.Tensor, list[str]]:
    """Rows for ``groups`` (per prompt: (trajectory reward, conversations) per rollout) as verl's trainer has them."""
    keys, lengths, rewards, uids = [], [], [], []
    rng = random.Random(len(groups))
    for g, group in enumerate(groups):
        for session, (reward, conversations) in enumerate(group):
            for index in range(conversations):
                keys.append(f"uid{g}_{session}_{index}")
                lengths.append(rng.randint(1, 6))
                rewards.append(reward)
                uids.append(f"uid{g}")
    width = max(lengths)
    mask = torch.zeros(len(keys), width)
    scores = torch.zeros(len(keys), width)
    for i, (length, reward) in enumerate(zip(lengths, rewards, strict=True)):
        mask[i, :length] = 1
        scores[i, length - 1] = reward
    return keys, scores, mask, uids


def verls(keys: list[str], scores: torch.Tensor, mask: torch.Tensor, uids: list[str], std: bool) -> torch.Tensor:
    data = DataProto.from_dict(tensors={"token_level_rewards": scores.clone(), "response_mask": mask.clone()},
                               non_tensors={"uid": np.array(uids, dtype=object)})
    return compute_advantage_for_multi_trajectories(data, batch_keys=keys,
                                                    adv_estimator=core_algos.AdvantageEstimator.GRPO,
                                                    norm_adv_by_std_in_grpo=std).batch["advantages"]


def test_the_example_from_the_design_notes_gives_memagents_rule() -> None:
    keys, scores, mask, uids = verl_batch([[(1.0, 3), (0.0, 2)]])
    theirs = verls(keys, scores, mask, uids, std=False)
    assert theirs.sum(dim=1).div(mask.sum(dim=1)).tolist() == pytest.approx([0.5, 0.5, 0.5, -0.5, -0.5])


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("std", [False, True])
def test_memreads_multi_conv_equals_verls_multi_trajectory_advantage(seed: int, std: bool) -> None:
    rng = random.Random(seed)
    groups = [[(rng.choice([0.0, 0.25, 1.0, -0.5, 2.0]), rng.randint(1, 5)) for _ in range(rng.randint(2, 5))]
              for _ in range(rng.randint(1, 4))]
    keys, scores, mask, uids = verl_batch(groups)
    rows = [Row(key.rsplit("_", 2)[0], key.rsplit("_", 2)[1], key.rsplit("_", 2)[2], float(scores[i].sum()))
            for i, key in enumerate(keys)]
    ours = torch.tensor(multi_conv(rows, std=std)).unsqueeze(-1) * mask
    assert torch.allclose(verls(keys, scores, mask, uids, std), ours, atol=1e-5)
    # and the trainer hook's own path, with alpha 1, is the same function
    extra: list[dict[str, Any]] = [{"memread": {"step": 0, "turn_reward": 1.0}} for _ in keys]
    hooked = verl_adapter.multi_level_advantages(keys, scores, mask, extra, 1.0, std=std)
    assert torch.allclose(hooked, ours, atol=1e-6)


def test_the_hook_mixes_turn_advantages_by_step() -> None:
    keys = ["u_0_0", "u_0_1", "u_1_0", "u_1_1"]
    scores = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    mask = torch.ones(4, 2)
    extra = [{"memread": {"step": 0, "turn_reward": 1.0}}, {"memread": {"step": "final", "turn_reward": None}},
             {"memread": {"step": 0, "turn_reward": -1.0}}, {"memread": {"step": "final", "turn_reward": None}}]
    got = verl_adapter.multi_level_advantages(keys, scores, mask, extra, 0.5)
    assert got[:, 0].tolist() == pytest.approx([0.5 * 0.5 + 0.5 * 1.0, 0.25, -0.25 - 0.5, -0.25])


def test_the_trainer_hook_wraps_the_runs_trainer_and_keeps_its_mode() -> None:
    from verl.trainer.ppo.v1 import PPOTrainerSync

    wrapped = verl_adapter.with_multi_level(PPOTrainerSync)
    assert issubclass(wrapped, PPOTrainerSync) and wrapped.__mro__[1] is verl_adapter.MultiLevelAdvantage
    runner = verl_adapter._task_runner_class()
    assert hasattr(runner, "remote")


def episode() -> Episode:
    def turn(kind: str, step: int, n: int) -> Turn:
        return Turn(kind=kind, step=step, prompt_ids=list(range(5 + step)), response_ids=list(range(n)),
                    logprobs=[-0.1] * n, text="\\boxed{Ada}" if kind == "final" else "<update>Ada</update>",
                    finish_reason="stop", memory_before="x", memory_after="Ada", decisions={"update": True})
    return Episode(question="q", strategy="callback", turns=[turn("memory", 0, 3), turn("memory", 1, 4),
                                                             turn("final", 2, 2)],
                   answer="Ada", boxed=True, chunks=2, exited_at=None)


def test_the_agent_loops_outputs_stack_into_one_table_as_verl_stores_them() -> None:
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    outputs = verl_adapter.episode_outputs(episode(), score(episode(), ["Ada"], recipe="rememr1"), response_length=8)
    assert [o.extra_fields["memread"]["step"] for o in outputs] == [0, 1, "final"]
    assert outputs[-1].reward_score == 1.0 and outputs[0].reward_score is None
    # verl's V1 post-processing copies the answer's reward to the others, then stacks every output's fields
    for output in outputs[:-1]:
        output.reward_score = outputs[-1].reward_score
        output.extra_fields["reward_extra_info"] = outputs[-1].extra_fields["reward_extra_info"]
    table = list_of_dict_to_tensordict([o.as_dict() for o in outputs])
    assert table.batch_size[0] == 3
    stacked = table["extra_fields"]
    extra = stacked.tolist() if hasattr(stacked, "tolist") else list(stacked)
    assert [e["memread"]["turn_reward"] for e in extra] == [2.0, 2.0, 1.0]


@pytest.mark.parametrize("name", list(presets.RECIPES))
def test_every_preset_composes_with_verls_configuration(name: str) -> None:
    recipe = presets.get_recipe(name)
    config = verl_adapter.compose(presets.overrides(recipe, model="Qwen/Qwen2.5-7B-Instruct", train_files="t.parquet"))
    assert config.actor_rollout_ref.rollout.n == 16
    assert config.actor_rollout_ref.rollout.agent.default_agent_loop == "memread"
    assert Path(config.actor_rollout_ref.rollout.agent.agent_loop_config_path).is_file()
    assert config.memread.alpha == recipe.alpha and config.memread.strategy == recipe.strategy
    assert config.data.max_prompt_length == recipe.prompt_tokens


def test_a_misspelled_override_fails_at_composition() -> None:
    lines = presets.overrides(presets.get_recipe("memagent"), model="m", train_files="t",
                              extra=["actor_rollout_ref.actor.clip_ratio_hihg=0.28"])
    with pytest.raises(Exception, match="clip_ratio_hihg"):
        verl_adapter.compose(lines)


def test_the_legacy_trainer_and_a_bad_memread_section_are_refused() -> None:
    recipe = presets.get_recipe("memagent")
    with pytest.raises(ValueError, match="V1 trainer"):
        verl_adapter.compose(presets.overrides(recipe, model="m", train_files="t", extra=["trainer.use_v1=false"]))
    from memread.errors import UsageError

    with pytest.raises(UsageError, match="memread.alpha"):
        verl_adapter.compose(presets.overrides(recipe, model="m", train_files="t", extra=["memread.alpha=2"]))


@pytest.mark.model
def test_the_hugging_face_tokenizer_builds_the_ids_llama_cpp_builds(smollm2_path: Path) -> None:
    from memread.train import check
    from memread.train.cpu_model import load_smollm2

    path, tokenizer, _model = load_smollm2()
    backend, detail = check.check_prompt_ids(path, tokenizer)
    backend.close()
    assert "identical ids" in detail
