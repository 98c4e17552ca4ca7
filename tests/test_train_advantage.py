"""Multi-Conv and multi-level advantages: the papers' worked cases and properties over random batches.

The cross-check against verl's own function is in tests/test_train_verl.py (it needs the extra).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from pytest import approx

from memread.train.advantage import Row, multi_conv, multi_level, trajectory_advantages, turn_advantages


def test_multi_conv_gives_every_conversation_its_trajectorys_centred_reward() -> None:
    # One prompt, two rollouts: 3 conversations rewarded 1, 2 conversations rewarded 0 (MemAgent eq. 4, no std).
    rows = [Row("p", 0, s, 1.0) for s in (0, 1, "final")] + [Row("p", 1, s, 0.0) for s in (0, "final")]
    assert multi_conv(rows) == [0.5, 0.5, 0.5, -0.5, -0.5]


def test_gru_mem_turn_groups_shrink_when_a_trajectory_exited_early() -> None:
    # Trajectory 0 exits after step 0; steps 1 and 2 are compared between the two that read on (G_t = 2).
    rows = [Row("p", 0, 0, 1.0, 1.0), Row("p", 0, "final", 1.0),
            Row("p", 1, 0, 0.0, -1.0), Row("p", 1, 1, 0.0, 1.0), Row("p", 1, "final", 0.0),
            Row("p", 2, 0, 0.0, 1.0), Row("p", 2, 1, 0.0, -1.0), Row("p", 2, "final", 0.0)]
    turn = turn_advantages(rows)
    assert turn == approx([2 / 3, 0, -4 / 3, 1, 0, 2 / 3, -1, 0])
    total = multi_level(rows, 0.9)
    assert total[0] == approx(0.9 * (1 - 1 / 3) + 0.1 * (2 / 3))
    assert total[1] == approx(0.9 * (2 / 3))  # the answer turn has no update reward


def test_a_lone_row_at_its_step_has_no_turn_advantage() -> None:
    assert turn_advantages([Row("p", 0, 5, 0.0, 1.0), Row("p", 1, 4, 0.0, -1.0)]) == [0.0, 0.0]


def test_rows_of_one_trajectory_must_agree_on_its_reward() -> None:
    import pytest

    with pytest.raises(ValueError, match="different trajectory rewards"):
        multi_conv([Row("p", 0, 0, 1.0), Row("p", 0, "final", 0.0)])
    with pytest.raises(ValueError, match="alpha"):
        multi_level([Row("p", 0, 0, 1.0)], 1.5)


# --- properties ----------------------------------------------------------------------------------------------

rewards = st.sampled_from([0.0, 0.25, 0.5, 1.0, -0.5, -0.75, 2.0])


@st.composite
def batches(draw: st.DrawFn) -> list[Row]:
    rows: list[Row] = []
    for uid in range(draw(st.integers(1, 3))):
        for session in range(draw(st.integers(1, 4))):
            reward = draw(rewards)
            steps = draw(st.integers(0, 4))
            for step in [*range(steps), "final"]:
                turn = draw(st.one_of(st.none(), rewards))
                rows.append(Row(uid, session, step, reward, turn))
    return draw(st.permutations(rows))


@given(batches())
@settings(max_examples=200, deadline=None)
def test_every_conversation_of_a_trajectory_shares_one_trajectory_advantage(rows: list[Row]) -> None:
    by_trajectory: dict[object, set[float]] = {}
    for row, value in zip(rows, multi_conv(rows), strict=True):
        by_trajectory.setdefault((row.uid, row.session), set()).add(value)
    assert all(len(values) == 1 for values in by_trajectory.values())


@given(batches(), st.sampled_from([False, True]))
@settings(max_examples=200, deadline=None)
def test_each_level_is_centred_in_its_own_groups(rows: list[Row], std: bool) -> None:
    trajectory = {(r.uid, r.session): a for r, a in zip(rows, trajectory_advantages(rows, std=std), strict=True)}
    for uid in {r.uid for r in rows}:
        assert sum(a for (u, _s), a in trajectory.items() if u == uid) == approx(0, abs=1e-6)
    groups: dict[object, float] = {}
    for row, value in zip(rows, turn_advantages(rows, std=std), strict=True):
        if row.turn_reward is None:
            assert value == 0.0
        else:
            groups[(row.uid, row.step)] = groups.get((row.uid, row.step), 0.0) + value
    assert all(total == approx(0, abs=1e-6) for total in groups.values())


@given(batches(), st.floats(-3, 3), st.floats(0.25, 4))
@settings(max_examples=200, deadline=None)
def test_shifting_rewards_changes_nothing_and_scaling_them_only_matters_without_std(
        rows: list[Row], shift: float, scale: float) -> None:
    shifted = [Row(r.uid, r.session, r.step, r.trajectory_reward + shift,
                   None if r.turn_reward is None else r.turn_reward + shift) for r in rows]
    assert multi_level(shifted, 0.8) == approx(multi_level(rows, 0.8), abs=1e-9)
    scaled = [Row(r.uid, r.session, r.step, r.trajectory_reward * scale,
                  None if r.turn_reward is None else r.turn_reward * scale) for r in rows]
    assert multi_level(scaled, 0.8) == approx([scale * a for a in multi_level(rows, 0.8)], abs=1e-9)
    plain = multi_level(rows, 0.8, std=True)
    assert multi_level(scaled, 0.8, std=True) == approx(plain, abs=1e-4)


@given(batches(), st.floats(0, 1))
@settings(max_examples=200, deadline=None)
def test_multi_level_mixes_the_two_levels_linearly_and_alpha_one_is_multi_conv(rows: list[Row], alpha: float) -> None:
    assert multi_level(rows, 1.0) == multi_conv(rows)
    expected = [alpha * a + (1 - alpha) * b
                for a, b in zip(multi_conv(rows), multi_level(rows, 0.0), strict=True)]
    assert multi_level(rows, alpha) == approx(expected, abs=1e-9)
