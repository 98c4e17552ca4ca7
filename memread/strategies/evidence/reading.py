"""Reading: the step prompt that shows a question's best passages to the model, and what its reply says.

A step shows a few passages together, in document order, each headed by where it is (page, section, lines)
with its boilerplate left out, and asks for the answer in the passages' own words; the reply is begun with
``\\boxed{`` for the model, so it answers first and briefly (on a CPU a generated token costs as much as several
read ones). Code then finds the answer in the passages (:func:`snap`: the document's spelling, not the model's),
the lines that hold it (:func:`holding`), and how well those lines support it: how many of the question's words
they, their neighbours and their heading share (:func:`support`). What is kept is always the document's text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from memread.answer import final_answer
from memread.recall import query_terms
from memread.strategies.evidence import keeping
from memread.strategies.evidence.dates import asks_date, find_date, whole_date
from memread.strategies.evidence.keeping import stems
from memread.strategies.evidence.units import LINE, Unit

if TYPE_CHECKING:
    from memread.strategies.evidence.ranking import Passages

# Offered "\boxed{none}" for passages that do not answer, the default model said "none" to passages holding the
# answer; asked to copy the lines that answer first, it wrote prose about the passages and often no answer at all
# (design questions octave-pdf-02 and -04, whose answers were in the passages shown). So a step asks for the
# answer only, begun for the model, and code checks it against the passages.
STEP_INSTRUCTION = "Answer the question with the exact words of the passages, in \\boxed{}."
REPLY_START = "\\boxed{"
NEAR_SUPPORT = 2  # question words the line most about it must share to be kept when the answer is not there
NONE_ANSWERS = {"none", "n/a", "unknown", "not found", "not mentioned", "not in the document", "no answer", ""}


@dataclass(frozen=True)
class Shown:
    """A passage as a step shows it: the chunk, its heading line, and its units (boilerplate left out)."""

    chunk: int
    label: str
    units: tuple[Unit, ...]
    record: str = ""  # the first line of the record the passage begins inside of, shown above it

    def text(self) -> str:
        return "\n".join(([self.record] if self.record else []) + [unit.text for unit in self.units])


def step_prompt(question: str, passages: Sequence[Shown], evidence: str) -> str:
    """The prompt of one step: passages first (in document order), then what earlier steps found, the question,
    and what to reply."""
    shown = "\n\n".join(f"[Passage {number} — {p.label}]\n{p.text()}" for number, p in enumerate(passages, 1))
    found = f"\n\nFound earlier in the document:\n{evidence}" if evidence else ""
    return f"{shown}{found}\n\nQuestion: {question}\n\n{STEP_INSTRUCTION}"


def step_answer(reply: str) -> str | None:
    """The answer a step's reply gives (its boxed text, else its first line), None when it gives none."""
    extracted, boxed = final_answer(reply, style="boxed")
    answer = extracted if boxed else (reply.strip().splitlines() or [""])[0]
    if not boxed and answer.startswith(REPLY_START):  # cut off inside its box: a long line copied whole
        answer = answer[len(REPLY_START):]
    answer = answer.strip().strip(".").strip()
    return None if answer.lower() in NONE_ANSWERS else answer


def found(question: str, shown: Shown, said: str | None, evidence: list[dict[str, Any]], step: int,
          passages: Passages) -> tuple[dict[str, Any] | None, list[str]]:
    """The answer a step gave, as the passage writes it, with the line it is on kept in ``evidence`` (None, and
    why, when the passage does not hold it)."""
    if said is None:
        return None, ["the reply gives no answer"]
    if yes_no(question, said):  # "yes" is in no passage: keep the lines about the question
        lines = best_lines(question, [shown])
        _keep(passages, shown, [u for _, u in lines], evidence, step)
        return {"answer": said.strip().strip(".").lower(), "step": step,
                "support": max((support(question, shown, u) for _, u in lines), default=0)}, []
    if repeats_question(said, question):  # "sway" for "… the Sway window manager?" (own-absent-04)
        return None, [f"the answer {said[:60]!r} only repeats the question"]
    dated = asks_date(question)
    places = [u for _, u in holding(said, [shown], dates=dated) if not numbering_only(said, shown.units[u])]
    if not places:
        # The model's answer is not the passage's (it mixed two lines: "binutils-multiarch (2.30-3)"): the line
        # most about the question is kept for the select step to read, which decides.
        near = best_lines(question, [shown], count=1)
        if near and support(question, shown, near[0][1], label=False) >= NEAR_SUPPORT:
            _keep(passages, shown, [near[0][1]], evidence, step, how="near")
            return {"answer": None, "step": step, "support": support(question, shown, near[0][1]),
                    "own_support": 0}, [f"the answer {said[:60]!r} is not in the passage; kept the line most "
                                        "about the question"]
        return None, [f"the answer {said[:60]!r} is not in the passage"]
    best = max(places, key=lambda u: (aboutness(question, shown, u), -u))
    _keep(passages, shown, [best], evidence, step)
    return {"answer": snap(said, shown.units[best].text, dates=dated), "step": step, "support": support(question, shown, best),
            "own_support": support(question, shown, best, label=False),
            "record_support": record_support(question, shown, best)}, []


def _keep(passages: Passages, shown: Shown, positions: Iterable[int], evidence: list[dict[str, Any]], step: int,
          how: str = "answer") -> None:
    """Keep the shown units at ``positions`` (the document's text, with their place and context) not kept yet."""
    index = shown.chunk
    every = list(passages.units(index))
    for unit in (shown.units[u] for u in positions if not keeping.covered(evidence, index, shown.units[u])):
        position = next(i for i, other in enumerate(every) if other.start == unit.start)
        evidence.append(keeping.entry(passages.get(index), every, position, passages.contexts[index], step=step,
                                      how=how, record=passages.records[index], lookup=True))


COPIED_WORDS = 8  # an answer this long is a line copied, not a value picked from one


def copied(answer: str, text: str) -> str | None:
    """The stretch of one of ``text``'s lines that ``answer`` copies with a slip or two: a long answer (a whole
    line, as the select step writes one) whose words are, but for one in ten, that line's words in order, with
    words left out allowed ("binutils (2.17-5) experimental; … * Add the arm-linux-gnueabi target …" for the line
    of "binutils (2.21-5) experimental; … * Update gold … * Add the arm-linux-gnueabi target …", own-lookup-12).
    :func:`snap` wants the words in a row and unchanged; None when no line is so copied."""
    words = _words(answer)
    if len(words) < COPIED_WORDS:
        return None
    slips = max(1, len(words) // 10)
    best: tuple[int, str] | None = None
    for line in text.splitlines():
        spans = [(m.group().lower(), m.span()) for m in re.finditer(r"\w+", line)]
        at, missed, first, last = 0, 0, None, None
        for word in words:
            place = next((i for i in range(at, len(spans)) if spans[i][0] == word), None)
            if place is None:
                missed += 1
                if missed > slips:
                    break
                continue
            first = place if first is None else first
            last, at = place, place + 1
        if missed <= slips and first is not None and last is not None and (best is None or missed < best[0]):
            best = (missed, line[spans[first][1][0]:spans[last][1][1]])
    return best[1] if best is not None else None


def holding(answer: str, passages: Sequence[Shown], *, dates: bool = False) -> list[tuple[int, int]]:
    """The (passage, unit) places whose text holds ``answer`` (as :func:`snap` finds it), in passage order."""
    return [(p, u) for p, passage in enumerate(passages) for u, unit in enumerate(passage.units)
            if snap(answer, unit.text, dates=dates) is not None]


# A line sharing this share of the question's words, and at least HOLDS_AT_LEAST of them, answers it alone.
HOLDS, HOLDS_AT_LEAST = 0.8, 5


def holds_question(question: str, found: Mapping[str, Any]) -> bool:
    """Whether an answer was found on a line saying nearly all the question says (its :func:`support`): the round
    can end there. A question whose words spread over two places (one describing a bridge at length, as
    HotpotQA's do) has no such line: four fifths is above the share its first hop's line reaches."""
    support = int(found.get("support", 0))
    return support >= HOLDS_AT_LEAST and support >= HOLDS * len(stems(query_terms(question)))


def support(question: str, passage: Shown, position: int, *, label: bool = True) -> int:
    """How many of the question's words the unit at ``position``, the units next to it and (``label``) the
    passage's heading share: how well that line is about what the question asks."""
    return len(stems(query_terms(question)) & support_words(passage, position, label=label))


def support_words(passage: Shown, position: int, *, label: bool = True) -> set[str]:
    """The words :func:`support` counts for the unit at ``position``: its own, its neighbours' and (``label``)
    the passage's heading's."""
    around = passage.units[max(0, position - 1):position + 2]
    return stems(query_terms(" ".join(unit.text for unit in around) + (" " + passage.label if label else "")))


def record_support(question: str, passage: Shown, position: int) -> int:
    """The :func:`support` of a record's first line is its record's best: a changelog entry's header,
    "binutils (2.22-2) unstable", is as much about "… fixed a build failure with make 3.82" as its item "Fix build
    failure with make 3.82" two lines below (what a first hop's bridge is chosen by, :mod:`.hops`)."""
    units = passage.units
    if units[position].kind != LINE or units[position].indent:
        return support(question, passage, position)
    end = position + 1
    while end < len(units) and units[end].kind == LINE and units[end].indent:
        end += 1
    return max(support(question, passage, u) for u in range(position, end))


def own_support(question: str, passage: Shown, position: int) -> int:
    """How many of the question's words the unit at ``position`` itself shares: the line before
    "binutils-multiarch: Add riscv64 support." shares as many with its neighbours, but none of its own."""
    return len(stems(query_terms(question)) & stems(query_terms(passage.units[position].text)))


def aboutness(question: str, passage: Shown, position: int) -> tuple[int, int]:
    """How a line ranks among lines about the question: :func:`support`, then, of two as much about it with their
    neighbours, the one whose own text shares more (:func:`own_support`)."""
    return support(question, passage, position), own_support(question, passage, position)


_SECTION_NUMBER = re.compile(r"\s*(?:\d+|[A-Z])(?:\.\d+)*\.?\s")


def numbering_only(answer: str, unit: Unit) -> bool:
    """Whether ``answer`` is found in ``unit`` only as the section number of a heading ("3" in "1.2.3. piuparts")."""
    if not unit.heading:
        return False
    prefix = _SECTION_NUMBER.match(unit.text)
    return prefix is not None and snap(answer, unit.text[prefix.end():]) is None


_YES_NO_QUESTION = re.compile(r"^\s*(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|"
                              r"may|might|must)\b", re.IGNORECASE)


def yes_no(question: str, answer: str | None = None) -> bool:
    """Whether ``question`` asks yes or no (and, given ``answer``, whether that is yes or no): such an answer is
    nowhere in the passages, and is judged by the lines about what the question asks instead."""
    if not _YES_NO_QUESTION.match(question):
        return False
    return answer is None or answer.strip().strip(".").lower() in ("yes", "no")


def echoes(answer: str, question: str) -> bool:
    """Whether ``answer`` is made only of the question's own words ("FAIL" for "… reported as FAIL?")."""
    words = set(re.findall(r"\w+", answer.lower()))
    return bool(words) and words <= set(re.findall(r"\w+", question.lower()))


def repeats_question(answer: str, question: str) -> bool:
    """Whether a step's answer only repeats words the question says, as it says them ("sway" for "Which package
    provides the Sway window manager?"): no answer. Keeping the line most about the question instead let the
    select step answer from a neighbour's (the design set's own absent question own-absent-04 was answered
    `xfwm`, from xfwm4's "window manager"). Its words in another order name something new ("Blackpool Football
    Club" for "… what football club … based in Blackpool?", HotpotQA design sample 2); and a question that offers
    its answers ("…, A or B?") is answered by one of its own words."""
    said, asked = re.findall(r"\w+", answer.lower()), re.findall(r"\w+", question.lower())
    if not said or re.search(r"(?<!/)\bor\b", question, re.IGNORECASE):  # "and/or" offers nothing
        return False
    return any(asked[i:i + len(said)] == said for i in range(len(asked) - len(said) + 1))


def best_lines(question: str, passages: Sequence[Shown], count: int = 2) -> list[tuple[int, int]]:
    """The ``count`` places most about the question (:func:`aboutness`), best first, the earliest among equals."""
    places = [(aboutness(question, passage, u), -p, -u) for p, passage in enumerate(passages)
              for u in range(len(passage.units))]
    return [(-p, -u) for (score, _), p, u in sorted(places, reverse=True)[:count] if score > 0]


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


_ITEM_SEPARATOR = re.compile(r"\s*(?:,\s*(?:(?:and|or)\s+)?|;\s*|/|\s(?:and|or)\s+)\s*", re.IGNORECASE)
# Between two items of a list in the text: a comma, "and" or "or" (", and" too).
_TEXT_SEPARATOR = r"(?:\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+)"


def _in_a_row(words: Iterable[str]) -> str:
    """A pattern for ``words`` in a row, anything but letters and digits between them ("octave java dir" matches
    "OCTAVE_JAVA_DIR" with re.IGNORECASE)."""
    return r"[\W_]*".join(re.escape(word) for word in words)


@lru_cache(maxsize=256)  # :func:`holding` snaps one answer against every unit of a passage
def _listed(answer: str) -> re.Pattern[str] | None:
    """The pattern of a list answer's items ("lu, qr") in the same order, joined as a text joins them ("lu and
    qr"): the model joins them its own way (own-lookup-20); None when ``answer`` names fewer than two items."""
    items = [item for item in _ITEM_SEPARATOR.split(answer.strip()) if _words(item)]
    if len(items) < 2:
        return None
    return re.compile(rf"(?<!\w){_TEXT_SEPARATOR.join(_in_a_row(_words(item)) for item in items)}(?!\w)",
                      re.IGNORECASE)


def snap(answer: str, text: str, *, dates: bool = False) -> str | None:
    """``answer`` as ``text`` writes it: the first stretch of ``text`` whose words are the answer's words (case,
    punctuation and spacing as the text has them: "octave-java-dir" → "OCTAVE_JAVA_DIR"), or, when ``dates``,
    the same day in another form (:mod:`.dates`), or a list's items joined as the text joins them ("lu, qr" →
    "lu and qr"); None when the text does not hold the answer's words in a row."""
    words = _words(answer)
    if not words:
        return None
    match = re.search(rf"(?<!\w){_in_a_row(words)}(?!\w)", text, re.IGNORECASE)
    if dates and whole_date(answer) is not None and (match is None or whole_date(match.group()) is None):
        dated = find_date(answer, text)  # a date, before the digits of a version ("20120907" for 2012-09-07)
        if dated is not None:
            return dated
    if match is not None:
        return match.group()
    listed = _listed(answer)
    match = listed.search(text) if listed is not None else None
    if match is not None:
        return match.group()
    glued = "".join(re.sub(r"_", "", word) for word in words)  # "OCTAVE-JAVA-DIR" against "OCTAVE_JAVA_DIR"
    for token in re.finditer(r"[\w.\-/+=:@]+", text):
        if re.sub(r"[\W_]", "", token.group()).lower() == glued:
            return token.group().strip(".:")
    return None
