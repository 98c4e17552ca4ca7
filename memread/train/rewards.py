"""The papers' rewards, on an :class:`~memread.train.episode.Episode`.

**Outcome** (every paper; MemAgent §3.3 eq. 6–7, ReMemR1 eq. 4, GRU-Mem eq. 6), on the final reply:

* ``"strict"`` — MemAgent's training verifier, :func:`memread.answer.strict_match`: the last ``\\boxed{}`` in the
  last 300 characters, hendrycks-normalised, equal to a gold; max over golds. No box, no reward.
* ``"recall"`` — eq. 7 for questions with several values ("all the special magic numbers"): the share of golds found
  in the boxed answer. The paper writes ``y ∈ ŷ``; memread reads it as a case-insensitive substring of the boxed
  answer (RULER's ``string_match_all``), and no box scores 0 as for ``strict``.
* ``"f1"`` — token F1 of the boxed answer (ReMemR1's ``reward_metric=f1``); ``"lenient"`` — sub-exact match of the
  extracted answer (MemAgent's *test* metric, not a training reward in any paper).

**ReMemR1** (§2.3.2, eq. 5–7), a state reward for every turn:
``r_memory + r_callback + r_format``. The paper leaves ``recall`` undefined; its code counts the gold's words found
as substrings, case-sensitively, averaged over golds. memread takes the paper's max over golds and counts the gold's
SQuAD-normalised words found among the text's (so "a" never matches inside "lamp"): :func:`word_recall`.
``r_memory = recall(m_t) − recall(m_{t−1})`` over the strategy's memory before and after the turn;
``r_callback = recall(E ∪ m_t ∪ c_t) − recall(m_t ∪ c_t)`` with ``E`` the memory the turn's ``<recall>`` retrieved
(0 without one); ``r_format`` is 1 when a memory turn holds exactly one non-empty ``<update>`` and at most one
``<recall>`` (read across lines: the code's single-line regex missed every multi-line update), and when the final
reply holds exactly one non-empty ``\\boxed{}``. The final turn's state reward is its format reward alone.

**GRU-Mem** (§3.2.1, eq. 8–11):
``r_update = +1`` when the turn's update decision matches whether its chunk holds evidence, else ``−1``, per memory
turn; ``r_exit`` is ``−0.75`` / ``0`` / ``−0.5`` for exiting before / at / after the last evidence chunk, where a
trajectory that never exits counts as exiting after its last chunk (the paper only defines ``t_exit`` for an exit;
"required to generate <next>end</next> when recognizing the last evidence" makes reading on a miss); ``r_format`` is
1 only when *every* memory turn is ``<think>…</think><check>yes|no</check><update>…</update><next>continue|end</next>``
in that order, each once, values in lower case (the answer turn is not the memory agent's and is not checked); the
trajectory reward is ``outcome + exit + format``. Without evidence labels (a custom dataset may have none) ``r_exit``
is 0 and no turn has an update reward.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memread.answer import (
    extract_boxed,
    f1_score,
    final_answer,
    lenient_match,
    multi_value_recall,
    normalize_answer,
    strict_match,
    strip_thinking,
)
from memread.errors import UsageError
from memread.train.episode import Episode, Turn

OUTCOMES = ("strict", "recall", "f1", "lenient")
RECIPES = ("memagent", "rememr1", "grumem")


def outcome(reply: str, golds: Sequence[str], metric: str = "strict") -> float:
    """The outcome reward of a final reply (see the module docstring for each ``metric``)."""
    golds = list(golds)
    if metric == "strict":
        return 1.0 if strict_match(reply, golds) else 0.0
    boxed = extract_boxed(strip_thinking(reply))
    if metric == "recall":
        return multi_value_recall(boxed, golds) if boxed is not None else 0.0
    if metric == "f1":
        return f1_score(boxed, golds) if boxed is not None else 0.0
    if metric == "lenient":
        return 1.0 if lenient_match(final_answer(reply)[0], golds) else 0.0
    raise UsageError(f"unknown outcome reward {metric!r}", hint=f"choose one of: {', '.join(OUTCOMES)}")


# --- ReMemR1 ------------------------------------------------------------------------------------------------


_TAG = re.compile(r"</?\s*[A-Za-z_]\w*\s*>")


def word_recall(text: str, golds: Sequence[str]) -> float:
    """The largest share, over golds, of a gold's normalised words that are among ``text``'s normalised words (tags
    such as ``<update>`` count as spaces, so ``<update>Ada`` holds the word "ada")."""
    words = set(normalize_answer(_TAG.sub(" ", text)).split())
    best = 0.0
    for gold in golds:
        wanted = normalize_answer(gold).split()
        if wanted:
            best = max(best, sum(1 for w in wanted if w in words) / len(wanted))
    return best


_UPDATE = re.compile(r"<update>(.*?)</update>", re.DOTALL)
_RECALL = re.compile(r"<recall>(.*?)</recall>", re.DOTALL)
_BOXED = re.compile(r"\\boxed\{")


def rememr1_format(turn: Turn) -> float:
    """1 for a well-formed ReMemR1 turn (one non-empty ``<update>``, at most one ``<recall>``; one non-empty
    ``\\boxed{}`` in the answer), else 0."""
    if turn.kind == "final":
        text = strip_thinking(turn.text)
        boxed = extract_boxed(text)
        return 1.0 if len(_BOXED.findall(text)) == 1 and boxed else 0.0
    updates = _UPDATE.findall(turn.text)
    ok = len(updates) == 1 and updates[0].strip() and len(_RECALL.findall(turn.text)) <= 1
    return 1.0 if ok else 0.0


def rememr1_state(turn: Turn, golds: Sequence[str]) -> dict[str, float]:
    """ReMemR1's state reward of one turn, by part (``memory``, ``callback``, ``format``) and ``total``."""
    fmt = rememr1_format(turn)
    if turn.kind == "final":
        return {"memory": 0.0, "callback": 0.0, "format": fmt, "total": fmt}
    memory = word_recall(turn.memory_after, golds) - word_recall(turn.memory_before, golds)
    recalled = turn.decisions.get("recalled")
    callback = 0.0
    if recalled:
        seen = turn.memory_after + "\n" + turn.chunk
        callback = word_recall(str(recalled) + "\n" + seen, golds) - word_recall(seen, golds)
    return {"memory": memory, "callback": callback, "format": fmt, "total": memory + callback + fmt}


# --- GRU-Mem ------------------------------------------------------------------------------------------------

_GRUMEM_FORMAT = re.compile(
    r"\s*<think>(?:(?!</?think>).)*</think>\s*<check>\s*(yes|no)\s*</check>\s*"
    r"<update>(?:(?!</?update>).)*</update>\s*<next>\s*(continue|end)\s*</next>\s*", re.DOTALL)
_GRUMEM_TAGS = ("think", "check", "update", "next")


def grumem_format_ok(text: str) -> bool:
    """Is a GRU-Mem reply exactly ``<think>…</think><check>yes|no</check><update>…</update><next>continue|end</next>``
    (whitespace between blocks allowed, nothing else around them)?"""
    if _GRUMEM_FORMAT.fullmatch(text) is None:
        return False
    return all(text.count(f"<{tag}>") == 1 and text.count(f"</{tag}>") == 1 for tag in _GRUMEM_TAGS)


def grumem_update(turn: Turn, evidence: set[int]) -> float:
    """+1 when the turn updated the memory exactly when its chunk holds evidence, else −1."""
    updated = bool(turn.decisions.get("update"))
    return 1.0 if updated == (turn.step in evidence) else -1.0


def grumem_exit(episode: Episode, evidence: set[int]) -> float:
    """−0.75 for an exit before the last evidence chunk, 0 at it, −0.5 after it (never exiting: after)."""
    if not evidence:
        return 0.0
    last = max(evidence)
    memory = episode.memory_turns
    exited = episode.exited_at if episode.exited_at is not None else (memory[-1].step + 1 if memory else 0)
    if exited < last:
        return -0.75
    return 0.0 if exited == last else -0.5


# --- one episode ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scores:
    """An episode's rewards: ``trajectory`` (shared by all its turns), ``turns`` (a turn-level reward per turn, None
    where the recipe has none) and the parts, for logging."""

    trajectory: float
    turns: list[float | None]
    parts: dict[str, float] = field(default_factory=dict)


def score(episode: Episode, golds: Sequence[str], *, recipe: str = "memagent", metric: str = "strict",
          evidence: Sequence[int] | None = None) -> Scores:
    """Score ``episode`` as ``recipe`` says: ``memagent`` (outcome only), ``rememr1`` (outcome; a state reward per
    turn) or ``grumem`` (outcome + exit + format; an update reward per memory turn). ``evidence``: the indices of
    the chunks holding evidence (GRU-Mem), None when unknown."""
    result = outcome(episode.final.text, golds, metric)
    parts = {"outcome": result}
    if recipe == "memagent":
        return Scores(result, [None] * len(episode.turns), parts)
    if recipe == "rememr1":
        states = [rememr1_state(turn, golds) for turn in episode.turns]
        for name in ("memory", "callback", "format"):
            parts[f"state_{name}"] = sum(s[name] for s in states) / len(states)
        return Scores(result, [s["total"] for s in states], parts)
    if recipe == "grumem":
        known = set(evidence) if evidence is not None else None
        exit_ = grumem_exit(episode, known) if known else 0.0
        memory = episode.memory_turns
        fmt = 1.0 if memory and all(grumem_format_ok(t.text) for t in memory) else 0.0
        turns: list[float | None] = [
            grumem_update(t, known) if known is not None and t.kind == "memory" else None for t in episode.turns]
        updates = [r for r in turns if r is not None]
        parts.update({"exit": exit_, "format": fmt,
                      "update": sum(updates) / len(updates) if updates else 0.0})
        return Scores(result + exit_ + fmt, turns, parts)
    raise UsageError(f"unknown reward recipe {recipe!r}", hint=f"choose one of: {', '.join(RECIPES)}")
