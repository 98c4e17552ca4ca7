"""Advantages for rows that are the conversations of memory-agent trajectories.

A :class:`Row` is one conversation (one training row): the prompt it belongs to (``uid``, the GRPO group), the
trajectory it is part of (``session``: one of the ``n`` rollouts of that prompt), its ``step`` (the chunk's
index, or ``"final"`` for the answer), the trajectory's reward and, for the multi-level recipes, its own.

* :func:`multi_conv` — MemAgent's Multi-Conv (§3.2 eq. 4, as released): each trajectory's reward minus the mean over
  the trajectories of its prompt, no division by the standard deviation (Dr. GRPO), given to every conversation of
  the trajectory. verl ≥ 0.9 computes exactly this itself (``compute_advantage_for_multi_trajectories`` with
  ``norm_adv_by_std_in_grpo=False``); tests/test_train_verl.py checks the two agree.
* :func:`multi_level` — ReMemR1's RLMLR (eq. 8–9) and GRU-Mem (eq. 12–13): ``α·A_traj + (1 − α)·A_turn``, where
  ``A_turn`` centres a row's own reward over the rows of the same prompt and the same step (GRU-Mem's ``G_t``: fewer
  trajectories reach a late step when some exited). A row without a turn reward (GRU-Mem's answer turn) has
  ``A_turn = 0`` and does not count in its step's mean. All answer turns of a prompt are one step (``"final"``),
  whatever the chunk count of their trajectory. ``α = 1`` is Multi-Conv.

``std=True`` divides each centred reward by the group's (unbiased) standard deviation plus 1e-6, as GRPO does.
A group of one is centred on itself (advantage 0) as the papers' formulas say; verl instead leaves a lone sample's
score as its advantage, which only matters with one rollout per prompt (not a GRPO setting).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

EPSILON = 1e-6  # as verl's GRPO


@dataclass(frozen=True)
class Row:
    """One conversation of one trajectory (see the module docstring)."""

    uid: Hashable
    session: Hashable
    step: Hashable
    trajectory_reward: float
    turn_reward: float | None = None


def _centred(values: Sequence[float], std: bool) -> list[float]:
    mean = sum(values) / len(values)
    centred = [v - mean for v in values]
    if not std or len(values) < 2:
        return centred
    spread = math.sqrt(sum(c * c for c in centred) / (len(values) - 1))
    return [c / (spread + EPSILON) for c in centred]


def trajectory_advantages(rows: Sequence[Row], *, std: bool = False) -> list[float]:
    """``A_traj`` of every row: its trajectory's reward centred over the trajectories of its prompt.

    Every row of one trajectory must carry the same trajectory reward (ValueError otherwise)."""
    rewards: dict[tuple[Hashable, Hashable], float] = {}
    for row in rows:
        key = (row.uid, row.session)
        if key in rewards and rewards[key] != row.trajectory_reward:
            raise ValueError(f"trajectory {key} has rows with different trajectory rewards")
        rewards[key] = row.trajectory_reward
    groups: dict[Hashable, list[tuple[Hashable, Hashable]]] = defaultdict(list)
    for key in rewards:
        groups[key[0]].append(key)
    advantage: dict[tuple[Hashable, Hashable], float] = {}
    for keys in groups.values():
        for key, value in zip(keys, _centred([rewards[k] for k in keys], std), strict=True):
            advantage[key] = value
    return [advantage[(row.uid, row.session)] for row in rows]


def turn_advantages(rows: Sequence[Row], *, std: bool = False) -> list[float]:
    """``A_turn`` of every row: its own reward centred over the rows of the same prompt and step (0 without one)."""
    groups: dict[tuple[Hashable, Hashable], list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        if row.turn_reward is not None:
            groups[(row.uid, row.step)].append(i)
    advantage = [0.0] * len(rows)
    for members in groups.values():
        values = [float(rows[i].turn_reward) for i in members]  # type: ignore[arg-type]
        for i, value in zip(members, _centred(values, std), strict=True):
            advantage[i] = value
    return advantage


def multi_conv(rows: Sequence[Row], *, std: bool = False) -> list[float]:
    """MemAgent's Multi-Conv advantage of every row (``std=False`` as released)."""
    return trajectory_advantages(rows, std=std)


def multi_level(rows: Sequence[Row], alpha: float, *, std: bool = False) -> list[float]:
    """``α·A_traj + (1 − α)·A_turn`` for every row (ReMemR1 α = 0.8, GRU-Mem α = 0.9)."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be from 0 to 1, not {alpha}")
    trajectory = trajectory_advantages(rows, std=std)
    if alpha == 1.0:
        return trajectory
    turn = turn_advantages(rows, std=std)
    return [alpha * a + (1.0 - alpha) * b for a, b in zip(trajectory, turn, strict=True)]
