"""Stopping: when a question's round of passages ends, when its reading ends, and how many steps are left.

A lookup reads its best passages one step each, in rounds of ``passages``. A round ends when it is read, when no
passage is left, or at an answer the round can be sure of (:func:`sure`); then, if the round found answers, a
select step checks them against the lines they came from (:func:`after_read`). A confirmed answer ends the
reading; otherwise the next round is read, ``rounds`` at most (:func:`after_select`). A how-many question reads
one round after collecting; ``mode=all`` reads every chunk. All of it is code: the model never says when to
stop.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memread.events import WHOLE_DOCUMENT
from memread.strategies.evidence import questions, reading
from memread.strategies.evidence.options import EvidenceOptions

READ, SELECT, COLLECT = "read", "select", "collect"  # what a lane's next step does (None: it is done)
ALL = "all"  # the mode that reads every chunk in document order
ROUND_AT_LEAST = 4  # passages a round reads however short the document (unless ``passages`` is fewer)


def round_size(options: EvidenceOptions, passages: int) -> int:
    """The passages a round reads in a document of ``passages``: ``options.passages`` at most, and no more than
    ``round_share`` of the document (rounded up, at least :data:`ROUND_AT_LEAST`). Each passage is a prompt of
    its own, with the question and instruction again, so a round of eight in a document of twenty costs about as
    much as a whole read of half of it (docqa-design.md, "Toward v40")."""
    return min(options.passages, max(ROUND_AT_LEAST, math.ceil(options.round_share * passages)))


def sure(question: str, mode: str, found: Mapping[str, Any] | None, state: Mapping[str, Any], chunk: int, *,
         whole: bool, early: int, holding: Callable[[str], Sequence[int]]) -> bool:
    """Whether a lookup's round ends at this answer (never a ``whole`` round's, a first hop's, whose bridge is
    chosen across it): ``early``, a line holding nearly all the question (:func:`reading.holds_question`), or a
    second hop's answer in a passage ``holding`` its bridge."""
    if whole or not (mode == questions.LOOKUP and found and found.get("answer")):
        return False
    bridge = state.get("bridge")
    return bool(early and int(found.get("support", 0)) >= early) or bool(
        reading.holds_question(question, found)) or bool(bridge and chunk in holding(str(bridge)))


def round_start(state: Mapping[str, Any]) -> int:
    """The step the lane's current round began after (its reads before it)."""
    return len(state.get("read", [])) - int(state.get("in_round", 0))


def after_read(mode: str, state: Mapping[str, Any], new_state: Mapping[str, Any], options: EvidenceOptions, *,
               left: bool, sure: bool) -> tuple[str, dict[str, Any]]:
    """What follows a passage read: the reason the reading ends ("" if it goes on) and what changes in the lane's
    ``new_state``: the select step next, or the next round. ``left``: an unread passage is left to read."""
    if mode == ALL:
        return ("" if left else "read every chunk"), {}
    if not (int(new_state["in_round"]) >= options.passages or not left or sure):
        return "", {}  # the round goes on
    if mode == questions.COUNT:  # it counted through the index: no hint to read the whole document
        return f"{WHOLE_DOCUMENT}, and read the best passages", {}
    if any(c["step"] > round_start(state) for c in new_state.get("candidates", [])):
        return "", {"select": True}  # check the round's answers against the lines they came from
    rounds = int(state.get("rounds", 0)) + 1
    if not left or rounds >= options.rounds:
        return "no answer found in the passages read", {}
    return "", {"rounds": rounds, "in_round": 0}


def after_select(confirmed: str | None, rounds: int, options: EvidenceOptions, left: Callable[[], bool]) -> str:
    """The reason the reading ends after a select step ("" if the next round is read): ``confirmed``, the answer
    it confirmed; ``rounds``, the rounds read; ``left()``, whether an unread passage still matches."""
    if confirmed:
        return f"the lines kept answer the question ({confirmed[:40]})"
    if rounds >= options.rounds:
        return f"read {rounds} round(s) of {options.passages} passages; none answered"
    if not left():
        return "no unread passage matches the question"
    return ""


def steps_left(mode: str, phase: str | None, state: Mapping[str, Any], options: EvidenceOptions, unread: int) -> int:
    """The steps a lane reads at most from ``state`` on (the live view's ETA): what is left of its rounds of
    passages, each ended by a select step, and never more passages than the ``unread`` it may still read."""
    if phase is None:
        return 0
    if mode == ALL:
        return unread
    round_left = options.passages - int(state.get("in_round", 0))
    if mode != questions.LOOKUP:  # collect once, then one round of passages
        return (1 if state.get("counts") is None else 0) + min(round_left, unread)
    rounds_after = max(options.rounds - int(state.get("rounds", 0)) - 1, 0)
    reads = (0 if phase == SELECT else round_left) + rounds_after * options.passages
    return min(reads, unread) + 1 + rounds_after
