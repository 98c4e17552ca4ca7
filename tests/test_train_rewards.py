"""The papers' rewards, each against its paper's definition (MemAgent §3.3, ReMemR1 §2.3, GRU-Mem §3.2.1)."""

from __future__ import annotations

from typing import Any

import pytest

from memread.errors import UsageError
from memread.prompts import NO_MEMORY
from memread.train.episode import Episode, Turn
from memread.train.rewards import (
    grumem_exit,
    grumem_format_ok,
    grumem_update,
    outcome,
    rememr1_format,
    rememr1_state,
    score,
    word_recall,
)

GOOD = "<think>the lamp</think><check>yes</check><update>Ada Quist repaired it</update><next>end</next>"


def turn(text: str = "", *, kind: str = "memory", step: int = 0, before: str = NO_MEMORY, after: str = "",
         chunk: str = "", **decisions: Any) -> Turn:
    return Turn(kind=kind, step=step, prompt_ids=[1], response_ids=[2], logprobs=None, text=text,
                finish_reason="stop", memory_before=before, memory_after=after, chunk=chunk, decisions=decisions)


def episode(turns: list[Turn], exited_at: int | None = None) -> Episode:
    return Episode(question="q", strategy="gated", turns=turns, answer="", boxed=True,
                   chunks=sum(t.kind == "memory" for t in turns), exited_at=exited_at)


# --- outcome (MemAgent eq. 6 and 7) -------------------------------------------------------------------------


def test_the_strict_outcome_is_the_training_verifier_max_over_golds() -> None:
    assert outcome("So \\boxed{Ada Quist}.", ["Grace", "ada quist"]) == 1.0
    assert outcome("Ada Quist", ["Ada Quist"]) == 0.0  # no box, no reward
    assert outcome("\\boxed{Ada Quist}" + " padding" * 60, ["Ada Quist"]) == 0.0  # outside the last 300 characters
    assert outcome("\\boxed{1/2}", ["\\frac{1}{2}"]) == 1.0  # is_equiv's normalisation


def test_the_recall_outcome_is_the_share_of_golds_in_the_boxed_answer() -> None:
    golds = ["1234567", "7654321"]
    assert outcome("\\boxed{1234567 and 9999999}", golds, "recall") == 0.5
    assert outcome("\\boxed{7654321, 1234567}", golds, "recall") == 1.0
    assert outcome("1234567 7654321", golds, "recall") == 0.0


def test_f1_and_lenient_outcomes_and_an_unknown_name() -> None:
    assert outcome("\\boxed{Ada Quist the keeper}", ["Ada Quist"], "f1") == pytest.approx(0.8)
    assert outcome("It was Ada Quist.", ["Ada Quist"], "lenient") == 1.0
    with pytest.raises(UsageError, match="unknown outcome reward"):
        outcome("x", ["x"], "bleu")


# --- ReMemR1 (eq. 5–7) --------------------------------------------------------------------------------------


def test_word_recall_counts_a_golds_words_and_takes_the_best_gold() -> None:
    assert word_recall("Ada repaired the lamp", ["Ada Quist"]) == 0.5
    assert word_recall("Ada repaired the lamp", ["Ada Quist", "lamp"]) == 1.0
    assert word_recall("lamplighter", ["lamp"]) == 0.0  # words, not substrings


def test_the_memory_reward_is_the_change_in_recall_over_one_update() -> None:
    gained = turn("<update>Ada Quist repaired the lamp</update>", after="Ada Quist repaired the lamp")
    assert rememr1_state(gained, ["Ada Quist"])["memory"] == 1.0
    lost = turn("<update>a storm</update>", before="Ada Quist repaired the lamp", after="a storm")
    assert rememr1_state(lost, ["Ada Quist"])["memory"] == -1.0


def test_the_callback_bonus_is_what_the_recalled_memory_adds_beyond_memory_and_chunk() -> None:
    golds = ["Ada Quist"]
    helped = turn("<update>lamp</update><recall>who</recall>", after="the lamp", chunk="the keeper",
                  recalled="Ada Quist fixed it")
    assert rememr1_state(helped, golds)["callback"] == 1.0
    redundant = turn("<update>x</update><recall>who</recall>", after="Ada Quist", recalled="Ada Quist")
    assert rememr1_state(redundant, golds)["callback"] == 0.0
    assert rememr1_state(turn("<update>x</update>", after="x"), golds)["callback"] == 0.0


def test_the_rememr1_format_reads_multi_line_updates_and_counts_tags() -> None:
    assert rememr1_format(turn("<thinking>t</thinking><update>line one\nline two</update>")) == 1.0
    assert rememr1_format(turn("<update>a</update><update>b</update>")) == 0.0
    assert rememr1_format(turn("<update>  </update>")) == 0.0
    assert rememr1_format(turn("<update>a</update><recall>x</recall><recall>y</recall>")) == 0.0
    assert rememr1_format(turn("\\boxed{Ada}", kind="final")) == 1.0
    assert rememr1_format(turn("\\boxed{Ada} or \\boxed{Bo}", kind="final")) == 0.0
    assert rememr1_format(turn("\\boxed{}", kind="final")) == 0.0


def test_the_state_reward_is_the_sum_of_its_parts_and_the_final_turn_has_format_only() -> None:
    state = rememr1_state(turn("<update>Ada Quist</update>", after="<update>Ada Quist</update>"), ["Ada Quist"])
    assert state == {"memory": 1.0, "callback": 0.0, "format": 1.0, "total": 2.0}
    assert rememr1_state(turn("\\boxed{Ada Quist}", kind="final"), ["Ada Quist"])["total"] == 1.0


# --- GRU-Mem (eq. 8–11) --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("step", "updated", "reward"), [(1, True, 1.0), (1, False, -1.0), (0, False, 1.0),
                                                         (0, True, -1.0)])
def test_the_update_reward_is_plus_one_when_the_gate_matches_the_evidence(step: int, updated: bool,
                                                                          reward: float) -> None:
    assert grumem_update(turn(step=step, update=updated), {1, 3}) == reward


@pytest.mark.parametrize(("exited_at", "reward"), [(2, -0.75), (3, 0.0), (4, -0.5), (None, -0.5)])
def test_the_exit_reward_punishes_early_more_than_late(exited_at: int | None, reward: float) -> None:
    read = 5 if exited_at is None else exited_at + 1
    turns = [turn(step=i) for i in range(read)] + [turn("\\boxed{x}", kind="final", step=read)]
    assert grumem_exit(episode(turns, exited_at), {1, 3}) == reward


def test_reading_to_the_end_without_saying_end_is_late_even_when_the_last_chunk_holds_the_evidence() -> None:
    turns = [turn(step=i) for i in range(4)] + [turn(kind="final", step=4)]
    assert grumem_exit(episode(turns, None), {3}) == -0.5
    assert grumem_exit(episode(turns, 3), {3}) == 0.0


def test_the_gru_mem_format_is_strict() -> None:
    assert grumem_format_ok(GOOD)
    assert grumem_format_ok(GOOD.replace("><", ">\n<"))
    assert not grumem_format_ok(GOOD.replace("yes", "Yes"))
    assert not grumem_format_ok(GOOD.replace("<next>end</next>", ""))
    assert not grumem_format_ok(GOOD.replace("<check>yes</check>", "") + "<check>yes</check>")  # order
    assert not grumem_format_ok("Sure! " + GOOD)
    assert not grumem_format_ok(GOOD.replace("</update>", "</update><update>again</update>"))


def test_a_gru_mem_trajectory_reward_is_outcome_plus_exit_plus_format_and_turns_get_update_rewards() -> None:
    memory = [turn(GOOD.replace("yes", "no").replace("end", "continue"), step=0, update=False),
              turn(GOOD, step=1, update=True, next="end")]
    final = turn("\\boxed{Ada Quist}", kind="final", step=2)
    scores = score(episode([*memory, final], exited_at=1), ["Ada Quist"], recipe="grumem", evidence=[1])
    assert scores.trajectory == 1.0 + 0.0 + 1.0
    assert scores.turns == [1.0, 1.0, None]
    sloppy = score(episode([turn("no tags", step=0, update=True), final], exited_at=None), ["Ada Quist"],
                   recipe="grumem", evidence=[0])
    assert sloppy.trajectory == 1.0 - 0.5 + 0.0
    unknown = score(episode([*memory, final], exited_at=1), ["Ada Quist"], recipe="grumem", evidence=None)
    assert unknown.turns == [None, None, None] and unknown.parts["exit"] == 0.0


def test_memagent_scores_the_outcome_alone_and_rememr1_adds_a_state_reward_per_turn() -> None:
    turns = [turn("<update>Ada Quist</update>", after="<update>Ada Quist</update>"),
             turn("\\boxed{Ada Quist}", kind="final", step=1)]
    assert score(episode(turns), ["Ada Quist"]).turns == [None, None]
    rememr1 = score(episode(turns), ["Ada Quist"], recipe="rememr1")
    assert rememr1.trajectory == 1.0 and rememr1.turns == [2.0, 1.0]
    with pytest.raises(UsageError, match="unknown reward recipe"):
        score(episode(turns), ["x"], recipe="ppo")
