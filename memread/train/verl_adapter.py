"""memread plugged into verl (≥ 0.9, < 0.10): the only module that imports verl (``pip install 'memread[train]'``).

* :class:`MemreadAgentLoop` — verl's agent loop for a training row: it reads the row's document with memread's
  strategy (:func:`memread.train.episode.run_episode`, every reply from verl's rollout server, token ids in and out),
  scores the episode with the recipe's rewards and returns **one output per conversation, the answer last**. verl's
  V1 trainer then stores each as a row, gives the answer's reward to all of them and broadcasts the GRPO advantage of
  the answer to every row of the trajectory: MemAgent's Multi-Conv, with no engine change. Each output's
  ``extra_fields["memread"]`` holds its step, kind, turn reward and the strategy's decisions.
* :class:`MultiLevelAdvantage` — the one engine hook, for ``memread.alpha < 1`` (ReMemR1, GRU-Mem): after verl's own
  advantage, the rows' advantages are replaced by ``α·A_traj + (1 − α)·A_turn``
  (:func:`memread.train.advantage.multi_level`). verl gives trainer plug-ins no per-row data in its advantage
  estimators, so the hook wraps the trainer class the run's ``trainer.v1.trainer_mode`` names (sync, async, …) in the
  task-runner process: the mode keeps its meaning.
* :func:`run` — ``python -m memread.train.run``: verl's ``main_ppo`` with the agent loop registered (a YAML shipped in
  this package: ``verl_agent_loop.yaml``) and memread's task runner.
* :func:`compose` — verl's own configuration composed with overrides, without starting anything: a misspelled key
  fails here (``memread train run --dry-run``, ``memread train check``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

import numpy as np
import ray
import torch
from omegaconf import DictConfig, OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput

from memread.train.advantage import Row, multi_level
from memread.train.chat import HFChatTokenizer
from memread.train.episode import (
    Episode,
    Generated,
    SamplingRequest,
    chunk_text,
    evidence_chunks,
    run_episode,
)
from memread.train.presets import TrainConfig
from memread.train.rewards import Scores, score

AGENT_LOOP_YAML = Path(__file__).with_name("verl_agent_loop.yaml")
VERL_CONFIG_DIR = "pkg://verl.trainer.config"
FINAL_STEP = "final"


# --- the agent loop -----------------------------------------------------------------------------------------


class MemreadAgentLoop(AgentLoopBase):  # type: ignore[misc, unused-ignore]
    """One training row read by memread's strategy; one :class:`AgentLoopOutput` per conversation, the answer last."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.train = TrainConfig.from_mapping(_container(self.config.get("memread")))
        self.chat = HFChatTokenizer(self.tokenizer)
        self.response_length = int(self.rollout_config.response_length)
        self.prompt_length = int(self.rollout_config.prompt_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[AgentLoopOutput]:  # type: ignore[override, unused-ignore]
        question = str(list(kwargs["raw_prompt"])[-1]["content"])
        golds = [str(g) for g in _plain(kwargs["reward_model"])["ground_truth"]]
        extra = _plain(kwargs.get("extra_info") or {})
        settings = self.train.settings
        chunks = await asyncio.get_running_loop().run_in_executor(
            None, lambda: chunk_text(str(kwargs["context"]), self.chat.tokenizer, settings.chunk_tokens or 5000,
                                     max_chunks=self.train.max_chunks))
        texts = [str(e) for e in extra.get("evidence") or []]
        evidence = evidence_chunks(chunks, texts) if texts else None
        timing = {"generate": 0.0}

        async def generate(prompt_ids: list[int], request: SamplingRequest) -> Generated:
            params = dict(sampling_params)
            params["max_tokens"] = min(request.max_tokens, self.response_length)
            if request.stop:
                params["stop"] = list(request.stop)
            started = time.perf_counter()
            output = await self.server_manager.generate(request_id=uuid4().hex, prompt_ids=prompt_ids,
                                                        sampling_params=params)
            timing["generate"] += time.perf_counter() - started
            logprobs = list(output.log_probs) if output.log_probs else None
            return Generated(list(output.token_ids), logprobs)

        episode = await run_episode(question, chunks, settings=settings, chat=self.chat, generate=generate,
                                    prompt_limit=self.prompt_length)
        scores = score(episode, golds, recipe=self.train.rewards, metric=str(extra.get("metric") or "strict"),
                       evidence=evidence)
        return episode_outputs(episode, scores, response_length=self.response_length,
                               metrics=AgentLoopMetrics(generate_sequences=timing["generate"]))


def episode_outputs(episode: Episode, scores: Scores, *, response_length: int,
                    metrics: AgentLoopMetrics | None = None) -> list[AgentLoopOutput]:
    """verl's outputs for an episode: one per turn, the answer last with the trajectory's reward (verl copies it to
    the others), memread's turn data in ``extra_fields["memread"]``. Every output sets the same fields (verl stacks
    them into one table)."""
    with_logprobs = all(turn.logprobs is not None for turn in episode.turns)
    outputs: list[AgentLoopOutput] = []
    for turn, turn_reward in zip(episode.turns, scores.turns, strict=True):
        response = list(turn.response_ids)[:response_length]
        logprobs = list(turn.logprobs or [])[:response_length] if with_logprobs else None
        memread = {"kind": turn.kind, "step": FINAL_STEP if turn.kind == "final" else int(turn.step),
                   "turn_reward": turn_reward, "truncated": turn.truncated, "exit": turn.exit,
                   "decisions": {k: v for k, v in turn.decisions.items() if isinstance(v, str | int | float | bool)}}
        outputs.append(AgentLoopOutput(
            prompt_ids=list(turn.prompt_ids), response_ids=response, response_mask=[1] * len(response),
            response_logprobs=logprobs, num_turns=2, metrics=metrics or AgentLoopMetrics(),
            extra_fields={"memread": memread, "turn_scores": [], "tool_rewards": []}))
    final = outputs[-1]
    final.reward_score = float(scores.trajectory)
    final.extra_fields["reward_extra_info"] = {key: float(value) for key, value in scores.parts.items()}
    return outputs


def _plain(value: Any) -> Any:
    """A row field as plain Python (verl hands numpy arrays and 0-d objects)."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value.item() if hasattr(value, "item") and not isinstance(value, str | bytes) else value


def _container(section: Any) -> dict[str, Any] | None:
    if section is None:
        return None
    if isinstance(section, DictConfig):
        resolved = OmegaConf.to_container(section, resolve=True)
        return resolved if isinstance(resolved, dict) else None  # type: ignore[return-value, unused-ignore]
    return dict(section)


# --- the multi-level advantage hook ---------------------------------------------------------------------------


def rows_of(keys: Sequence[str], rewards: Sequence[float], extra_fields: Sequence[dict[str, Any]]) -> list[Row]:
    """memread's rows from verl's row keys (``{uid}_{session}_{index}``), trajectory rewards and extra fields."""
    rows = []
    for key, reward, extra in zip(keys, rewards, extra_fields, strict=True):
        uid, session, _index = key.rsplit("_", 2)
        info = (extra or {}).get("memread") or {}
        turn = info.get("turn_reward")
        rows.append(Row(uid, session, info.get("step", FINAL_STEP), float(reward),
                        None if turn is None else float(turn)))
    return rows


def multi_level_advantages(keys: Sequence[str], token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                           extra_fields: Sequence[dict[str, Any]], alpha: float, *, std: bool = False) -> torch.Tensor:
    """Per-token advantages (rows × response tokens): each row's multi-level advantage on its response tokens."""
    rewards = token_level_rewards.sum(dim=-1).tolist()
    values = multi_level(rows_of(keys, rewards, extra_fields), alpha, std=std)
    return torch.tensor(values, dtype=torch.float32).unsqueeze(-1) * response_mask


class MultiLevelAdvantage:
    """Mixed into the run's trainer class when ``memread.alpha < 1``: verl's advantage step runs first (KL in the
    reward and rollout correction as configured), then the advantages are replaced by memread's multi-level ones."""

    config: Any

    def _compute_advantage(self, batch: Any, metrics: dict[str, Any]) -> Any:
        import transfer_queue as tq
        from tensordict import TensorDict
        from verl.workers.utils.padding import response_to_nested

        batch = super()._compute_advantage(batch, metrics)  # type: ignore[misc]
        train = TrainConfig.from_mapping(_container(self.config.get("memread")))
        # As verl's own _compute_advantage reads these fields (and _compute_metrics the extra fields).
        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                               select_fields=["response_mask", "rm_scores", "extra_fields"])
        nested_mask = data["response_mask"]
        extra = list(data.pop("extra_fields").tolist())
        padded = data.to_padded_tensor()
        advantages = multi_level_advantages(
            batch.keys, padded["rm_scores"], padded["response_mask"], extra, train.alpha,
            std=bool(self.config.algorithm.get("norm_adv_by_std_in_grpo", True)))
        output = TensorDict({name: response_to_nested(advantages, nested_mask) for name in ("advantages", "returns")},
                            batch_size=len(batch))
        metrics["memread/advantage_alpha"] = train.alpha
        return tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=output)


def with_multi_level(trainer_cls: type) -> type:
    """``trainer_cls`` with :class:`MultiLevelAdvantage` mixed in."""
    return type(f"MemreadMultiLevel{trainer_cls.__name__}", (MultiLevelAdvantage, trainer_cls), {})


# --- the entry point -----------------------------------------------------------------------------------------


def _task_runner_class() -> Any:
    from verl.trainer.main_ppo import TaskRunnerV1

    base = TaskRunnerV1.__ray_actor_class__  # the class under @ray.remote

    class MemreadTaskRunner(base):  # type: ignore[misc, valid-type]
        """verl's V1 task runner; with ``memread.alpha < 1`` the trainer of the run's mode gets the hook."""

        def run(self, config: DictConfig) -> Any:
            from verl.trainer.ppo.v1 import trainer_base

            train = TrainConfig.from_mapping(_container(config.get("memread")))
            mode = config.trainer.v1.trainer_mode
            registry = trainer_base.TRAINER_REGISTRY
            if train.alpha < 1.0 and not issubclass(registry[mode], MultiLevelAdvantage):
                if config.algorithm.use_kl_in_reward:
                    raise ValueError("memread's multi-level advantage (alpha < 1) does not combine with "
                                     "algorithm.use_kl_in_reward; use the KL loss (actor.use_kl_loss) as the papers")
                registry[mode] = with_multi_level(registry[mode])
            return super().run(config)

    return ray.remote(num_cpus=1)(MemreadTaskRunner)


def memread_defaults(overrides: Sequence[str]) -> list[str]:
    """``overrides`` plus what every memread run needs and the user did not set: memread's agent loop."""
    given = {item.split("=", 1)[0].lstrip("+~") for item in overrides}
    added = []
    if "actor_rollout_ref.rollout.agent.agent_loop_config_path" not in given:
        added.append(f"actor_rollout_ref.rollout.agent.agent_loop_config_path={AGENT_LOOP_YAML}")
    if "actor_rollout_ref.rollout.agent.default_agent_loop" not in given:
        added.append("actor_rollout_ref.rollout.agent.default_agent_loop=memread")
    return [*overrides, *added]


def compose(overrides: Sequence[str]) -> DictConfig:
    """verl's ``ppo_trainer`` config with ``overrides`` (and memread's defaults), as ``python -m memread.train.run``
    would run it, without starting anything; checks memread's section and that the V1 trainer is on."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        config = hydra_compose(config_name="ppo_trainer", overrides=memread_defaults(overrides))
    check(config)
    return config


def check(config: DictConfig) -> TrainConfig:
    """memread's requirements on a composed config; ValueError (a plain message) when one is not met."""
    train = TrainConfig.from_mapping(_container(config.get("memread")))
    if not config.trainer.get("use_v1", True):
        raise ValueError("memread's agent loop returns one output per conversation, which only verl's V1 trainer "
                         "takes: leave trainer.use_v1=true")
    if config.algorithm.adv_estimator != "grpo":
        raise ValueError(f"the papers' recipes use GRPO advantages, not {config.algorithm.adv_estimator}: "
                         "algorithm.adv_estimator=grpo")
    return train


def run(argv: Sequence[str]) -> None:
    """verl's PPO main with memread registered; ``argv`` are Hydra overrides."""
    import sys

    import hydra
    from verl.trainer.main_ppo import run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    compose(argv)  # fail on a typo or a bad memread section before Ray starts
    sys.argv = [sys.argv[0], *memread_defaults(argv)]

    @hydra.main(config_path=VERL_CONFIG_DIR, config_name="ppo_trainer", version_base=None)  # type: ignore[misc, untyped-decorator, unused-ignore]
    def main(config: DictConfig) -> None:
        auto_set_device(config)
        validate_config(config=config, use_reference_policy=need_reference_policy(config),
                        use_critic=need_critic(config))
        run_ppo(config, task_runner_class=_task_runner_class())

    main()
