"""Two hops: a question that names a thing in one sentence and asks about "that thing" in the next.

"The 2.22-4 upload reverts a change made in an earlier upload. On what date was that earlier upload made?" Asked
whole, the default model answers the thing the question describes (2.22-4's own date; the tool, for "what does
that tool support …"). Split, each hop is a plain lookup: the earlier sentences with "Which earlier upload?" read
one round of passages, and the answer on the line sharing most of that question's words is the *bridge* (code
chooses it: a select step over eight answers from a changelog, each naming some upload, took the last one);
then the last sentence, with "that earlier upload" written "the earlier upload 2.22-3", is read as a question of
its own. No answer in the first round: the question is read as asked (docqa-design.md, "Toward v28").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from memread.fulltext import query_terms
from memread.strategies.evidence.keeping import stems

# The words that may stand between "that" and the noun it points back to ("that other section").
_ORDER = "other|earlier|later|same|first|last|previous|next|former|latter|second"
_BACK = re.compile(rf"\bthat\s+((?:(?:{_ORDER})\s+)?)([A-Za-z][\w-]*?)('s)?\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")


@dataclass(frozen=True)
class Hops:
    first: str  # the earlier sentences, and "Which <noun>?"
    last: str  # the last sentence, "that <noun>" replaced by {bridge}
    noun: str  # "earlier upload"
    possessive: bool

    def second(self, bridge: str) -> str:
        """The last sentence asked about the bridge ("On what date was the earlier upload 2.22-3 made?")."""
        named = f"the {self.noun} {bridge}" + ("'s" if self.possessive else "")
        return self.last.replace("{bridge}", named, 1)


@lru_cache(maxsize=256)  # every step of a lane asks again
def split(question: str) -> Hops | None:
    """The two hops of a question whose last sentence points back with "that <noun>" to a noun an earlier
    sentence names (None: a question asked as it is)."""
    sentences = _SENTENCE.split(question.strip())
    if len(sentences) < 2:
        return None
    earlier, last = " ".join(sentences[:-1]), sentences[-1]
    named = stems(query_terms(earlier))
    for match in _BACK.finditer(last):
        order, noun, possessive = match.group(1).strip(), match.group(2), bool(match.group(3))
        if not stems([noun]) & named:
            continue  # "that" as a conjunction or relative ("says that the …"), or a noun never named
        phrase = f"{order} {noun}".strip()
        first = f"{earlier.rstrip()} Which {phrase}?"
        rest = last[:match.start()] + "{bridge}" + last[match.end():]
        return Hops(first, rest, phrase, possessive)
    return None


def asking(question: str, state: dict[str, Any]) -> str:
    """The question a lane reads now: the first hop's, the second's, or the question as asked."""
    if "asking" in state:
        return str(state["asking"])
    hops = split(question)
    return hops.first if hops else question


def first_hop(question: str, state: dict[str, Any]) -> bool:
    """Whether the lane is reading the first hop of a split question (no hop has been chosen for it yet)."""
    return "asking" not in state and split(question) is not None


def bridge(state: dict[str, Any]) -> str | None:
    """The first hop's answer: the one found on the line sharing most of its question's words (a record's first
    line: its record's line sharing most), the earliest read among equals (None when the round found none)."""
    found = [c for c in state.get("candidates", []) if c.get("answer")]
    if not found:
        return None
    best = max(found, key=lambda c: (int(c.get("record_support", c.get("support", 0))), -int(c.get("step", 0))))
    return _closed(str(best["answer"]))


def _closed(name: str) -> str:
    """``name`` with the brackets it opens closed (an answer is found as words: `binutils (2.22-2`)."""
    for opening, closing in ("()", "[]"):
        name += closing * max(name.count(opening) - name.count(closing), 0)
    return name


def bridged(ranked: list[tuple[int, float]], holding: list[int], read: set[int]) -> int | None:
    """The second hop's next passage: of the unread ones holding its bridge, the best ranked (the earliest among
    equals); None when every one is read. "2.22-3" weighs less in the ranking than "date", "upload" and "made",
    which every entry of a changelog may hold (docqa-design.md, "Toward v29")."""
    scores = dict(ranked)
    unread = [chunk for chunk in holding if chunk not in read]
    return min(unread, key=lambda chunk: (-scores.get(chunk, 0.0), chunk)) if unread else None


def next_hop(question: str, state: dict[str, Any], initial: dict[str, Any]) -> dict[str, Any]:
    """The lane's state once the first hop's round is read: the second hop (or, with no bridge, the question as
    asked) from its start, the first hop remembered for the trace."""
    hops = split(question)
    assert hops is not None
    found = bridge(state)
    asked = hops.second(found) if found else question
    return {**initial, "asking": asked, "bridge": found, "first_hop": {
        "question": hops.first, "answer": found, "read": list(state.get("read", [])),
        "evidence": list(state.get("evidence", []))}}
