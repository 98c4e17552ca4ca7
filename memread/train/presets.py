"""The papers' training recipes as verl overrides: ``memagent``, ``rememr1``, ``grumem``.

A :class:`Recipe` says which strategy is trained, with which rewards and advantage mix, and the hyper-parameters its
paper (or released script) used. :func:`overrides` turns it into the Hydra overrides of verl's ``ppo_trainer``
config, plus memread's own section (``+memread.*``, read by the agent loop and the trainer hook); :func:`script`
prints them as a runnable shell script. Values not stated by a paper are marked in the recipe's ``notes``.

Sources: MemAgent §4.2 and ``run_memory_7B.sh`` (seeds-code §1.3): GRPO, no std division, n 16, batch 128, lr 1e-6,
KL loss 0.001 ``low_var_kl``, no entropy loss, clip 0.2/0.2 as released (eq. 5 has ε_high: ``clip_high=0.28`` gives
it), token-mean loss, sampling temperature 1 / top-p 1, validation top-p 0.7 with 4 samples, ``balance_batch`` off.
ReMemR1 (``1_run_train_ReMemR1_7B.sh``, the same fork): α 0.8, replies up to 2,048 tokens, top-p 0.999.
GRU-Mem appendix B: α 0.9, clip 0.2, lr 1e-6, batch 128, n 16, PPO mini-batch 128, 20 warm-up steps, response
2,048, temperature 1 / top-p 1, validation top-p 0.7.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memread.errors import UsageError
from memread.settings import Settings

QUESTION_TOKENS = 1024  # MemAgent's budget for the question ("1024 tokens for the query")
TEMPLATE_TOKENS = 512  # the instruction, the chat template and the tags, with room (memread's prompts: ~300)


@dataclass(frozen=True)
class Recipe:
    name: str
    paper: str
    summary: str
    strategy: str
    rewards: str  # memread.train.rewards.score(recipe=...)
    alpha: float  # 1: Multi-Conv (verl's own advantage); < 1: multi-level (memread's trainer hook)
    settings: Mapping[str, Any]  # memread Settings fields for the episodes
    options: Mapping[str, Any]  # the strategy's own options
    max_chunks: int  # chunks read at most per document (the middle dropped), as MemAgent's max_chunks
    verl: Mapping[str, Any]
    notes: tuple[str, ...] = field(default=())

    @property
    def reply_tokens(self) -> int:
        return int(self.settings.get("reply_tokens") or self.settings["memory_tokens"])

    @property
    def prompt_tokens(self) -> int:
        """The longest prompt an episode can send: question, chunk, memory (and a recalled memory), template."""
        recalled = self.reply_tokens if self.strategy == "callback" else 0
        return QUESTION_TOKENS + int(self.settings["chunk_tokens"]) + self.reply_tokens + recalled + TEMPLATE_TOKENS

    @property
    def response_tokens(self) -> int:
        return max(self.reply_tokens, int(self.settings["final_tokens"]))


_COMMON: dict[str, Any] = {
    "algorithm.adv_estimator": "grpo",
    "algorithm.norm_adv_by_std_in_grpo": False,
    "algorithm.use_kl_in_reward": False,
    "data.train_batch_size": 128,
    "actor_rollout_ref.actor.optim.lr": 1e-6,
    "actor_rollout_ref.actor.use_kl_loss": True,
    "actor_rollout_ref.actor.kl_loss_coef": 0.001,
    "actor_rollout_ref.actor.kl_loss_type": "low_var_kl",
    "actor_rollout_ref.actor.entropy_coeff": 0,
    "actor_rollout_ref.actor.clip_ratio_low": 0.2,
    "actor_rollout_ref.actor.clip_ratio_high": 0.2,
    "actor_rollout_ref.actor.loss_agg_mode": "token-mean",
    "actor_rollout_ref.rollout.n": 16,
    "actor_rollout_ref.rollout.temperature": 1.0,
    "actor_rollout_ref.rollout.top_p": 1.0,
    "actor_rollout_ref.rollout.val_kwargs.temperature": 1.0,
    "actor_rollout_ref.rollout.val_kwargs.top_p": 0.7,
    "actor_rollout_ref.rollout.val_kwargs.n": 4,
    "actor_rollout_ref.rollout.val_kwargs.do_sample": True,
    "trainer.balance_batch": False,
}

# The papers' reading settings; answer_start "" lets the model begin its answer, as they trained.
_READ = {"chunk_tokens": 5000, "memory_tokens": 1024, "final_tokens": 1024, "final_prompt": "boxed",
         "answer_start": ""}

RECIPES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in (
        Recipe(
            name="memagent", paper="MemAgent (arXiv 2507.02259), as released",
            summary="overwrite, Multi-Conv DAPO: the answer's reward and advantage shared by every conversation",
            strategy="overwrite", rewards="memagent", alpha=1.0, settings=_READ, options={}, max_chunks=8,
            verl={**_COMMON, "actor_rollout_ref.actor.ppo_mini_batch_size": 8},
            notes=("ppo_mini_batch_size 8: the paper's 'ratio of the sample batch size to the backpropagation "
                   "batch size is 16', read as 128/16 prompts per update",
                   "clip 0.2/0.2 as the released scripts; eq. 5's clip-higher: --clip-high 0.28")),
        Recipe(
            name="rememr1", paper="ReMemR1 (RLMLR), as released",
            summary="callback, outcome reward + per-step state rewards, A = 0.8 A_traj + 0.2 A_step",
            strategy="callback", rewards="rememr1", alpha=0.8, settings={**_READ, "reply_tokens": 2048},
            options={"memory": "reply", "recall_from": "memories"}, max_chunks=8,
            verl={**_COMMON, "actor_rollout_ref.actor.ppo_mini_batch_size": 8,
                  "actor_rollout_ref.rollout.top_p": 0.999},
            notes=("KL, clip, lr and batch sizes as MemAgent (ReMemR1's code is MemAgent's fork)",)),
        Recipe(
            name="grumem", paper="GRU-Mem (arXiv 2602.10560), appendix B",
            summary="gated, outcome + exit + format per trajectory, update per turn, A = 0.9 A_traj + 0.1 A_turn",
            strategy="gated", rewards="grumem", alpha=0.9, settings={**_READ, "reply_tokens": 2048},
            options={"exit_gate": True, "stop_on_check_no": False}, max_chunks=8,
            verl={**_COMMON, "actor_rollout_ref.actor.ppo_mini_batch_size": 128,
                  "actor_rollout_ref.actor.optim.lr_warmup_steps": 20},
            notes=("KL loss 0.001 low_var_kl: not stated by the paper, MemAgent's",
                   "stop_on_check_no off: replies are generated whole, as trained",
                   "prompt length from memread's budget (question + chunk + a 2,048-token memory), above the "
                   "paper's 8,192")),
    )
}


def get_recipe(name: str) -> Recipe:
    try:
        return RECIPES[name]
    except KeyError:
        raise UsageError(f"unknown training preset {name!r}", hint=f"choose one of: {', '.join(RECIPES)}") from None


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "''" if value == "" else value
    return str(value)


def memread_section(recipe: Recipe, *, alpha: float | None = None) -> dict[str, Any]:
    """memread's own part of the config (``memread.*``), flat."""
    section: dict[str, Any] = {"recipe": recipe.name, "strategy": recipe.strategy, "rewards": recipe.rewards,
                               "alpha": recipe.alpha if alpha is None else alpha, "max_chunks": recipe.max_chunks,
                               "question_tokens": QUESTION_TOKENS}
    section.update({f"settings.{key}": value for key, value in recipe.settings.items()})
    section.update({f"options.{key}": value for key, value in recipe.options.items()})
    return section


def overrides(recipe: Recipe, *, model: str, train_files: str, val_files: str | None = None, gpus: int = 8,
              nodes: int = 1, rollout: str = "vllm", tensor_parallel: int = 1, clip_high: float | None = None,
              alpha: float | None = None, project: str = "memread", experiment: str | None = None,
              extra: Sequence[str] = ()) -> list[str]:
    """The Hydra overrides that run ``recipe`` on verl (``key=value``, memread's own keys added with ``+``)."""
    values: dict[str, Any] = dict(recipe.verl)
    if clip_high is not None:
        values["actor_rollout_ref.actor.clip_ratio_high"] = clip_high
    values.update({
        "data.train_files": train_files,
        "data.val_files": val_files or train_files,
        "data.max_prompt_length": recipe.prompt_tokens,
        "data.max_response_length": recipe.response_tokens,
        "data.truncation": "error",
        "actor_rollout_ref.model.path": model,
        "actor_rollout_ref.rollout.name": rollout,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": tensor_parallel,
        "actor_rollout_ref.rollout.max_model_len": recipe.prompt_tokens + recipe.response_tokens,
        "actor_rollout_ref.rollout.agent.default_agent_loop": "memread",
        "trainer.n_gpus_per_node": gpus,
        "trainer.nnodes": nodes,
        "trainer.project_name": project,
        "trainer.experiment_name": experiment or recipe.name,
    })
    lines = [f"{key}={_value(value)}" for key, value in values.items()]
    lines += [f"+memread.{key}={_value(value)}" for key, value in memread_section(recipe, alpha=alpha).items()]
    return lines + list(extra)


def script(recipe: Recipe, lines: Sequence[str]) -> str:
    """A shell script that runs ``recipe`` with these overrides (more can be passed to the script)."""
    head = [
        "#!/usr/bin/env bash",
        f"# memread train: the {recipe.name} preset — {recipe.paper}",
        f"# {recipe.summary}",
        *(f"# note: {note}" for note in recipe.notes),
        "# Needs GPUs and `pip install 'memread[train]'` with verl's rollout engine (e.g. verl[vllm]); see",
        "# docs/training.md. Any verl override can be added after the script's name.",
        "set -euo pipefail",
        "python -m memread.train.run \\",
    ]
    body = [f"  {shlex.quote(line)} \\" for line in lines]
    return "\n".join([*head, *body, '  "$@"', ""])


@dataclass(frozen=True)
class TrainConfig:
    """memread's section of a training config (``memread.*``), checked: what the agent loop and the trainer hook
    read on every node."""

    recipe: str
    rewards: str
    alpha: float
    max_chunks: int | None
    question_tokens: int
    settings: Settings

    @classmethod
    def from_mapping(cls, section: Mapping[str, Any] | None) -> TrainConfig:
        """Read ``memread.*`` (nested, as Hydra gives it); UsageError naming what is wrong."""
        from memread.strategies import check_settings
        from memread.train.rewards import RECIPES as REWARDS

        if not section:
            raise UsageError("the training config has no memread section",
                             hint="start from a preset: memread train run --preset memagent --print")
        data = dict(section)
        rewards = str(data.get("rewards") or data.get("recipe") or "")
        if rewards not in REWARDS:
            raise UsageError(f"memread.rewards must be one of {', '.join(REWARDS)}, not {rewards!r}",
                             hint="+memread.rewards=memagent (or rememr1, grumem)")
        try:
            alpha = float(data.get("alpha", 1.0))
        except (TypeError, ValueError):
            alpha = -1.0
        if not 0.0 <= alpha <= 1.0:
            raise UsageError(f"memread.alpha must be from 0 to 1, not {data.get('alpha')!r}",
                             hint="1 is Multi-Conv (MemAgent); ReMemR1 used 0.8, GRU-Mem 0.9")
        fields = dict(data.get("settings") or {})
        unknown = sorted(set(fields) - {f for f in Settings.__dataclass_fields__ if f != "options"})
        if unknown:
            raise UsageError(f"memread.settings has no {', '.join(unknown)}",
                             hint="the settings are memread's: chunk_tokens, memory_tokens, reply_tokens, final_tokens, "
                                  "final_prompt, answer_start, layout, system")
        if fields.get("answer_start") is None and "answer_start" in fields:
            fields["answer_start"] = ""
        settings = Settings(strategy=str(data.get("strategy") or "overwrite"), options=dict(data.get("options") or {}),
                            seed=None, **fields)
        max_chunks = data.get("max_chunks")
        return cls(recipe=str(data.get("recipe") or rewards), rewards=rewards, alpha=alpha,
                   max_chunks=int(max_chunks) if max_chunks else None,
                   question_tokens=int(data.get("question_tokens") or QUESTION_TOKENS),
                   settings=check_settings(settings))
