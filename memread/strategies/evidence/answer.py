"""Answering: the final prompt from the evidence, and the answer settled against the document's own words.

The final reply must copy: an answer is taken as the evidence writes it (:func:`memread.strategies.evidence.
reading.snap`: "OCTAVE-JAVA-DIR" becomes the evidence's "OCTAVE_JAVA_DIR"). When the evidence does not hold the
answer's words, or the model says the evidence does not answer, or nothing was kept at all, memread says that
the document does not say, instead of passing on what the model knows or guesses. A count is the one code
made (:mod:`.collect`), not the model's, and a list is the items code collected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memread.strategies.evidence.dates import asks_date
from memread.strategies.evidence.reading import NONE_ANSWERS, copied, echoes, repeats_question, snap, yes_no

DOES_NOT_SAY = "The document does not say."
LISTED = 30  # items a list answer writes out; the rest are counted (all are cited in the sources)
FINAL_INSTRUCTION = (
    "You are given lines quoted word for word from a document, each with where it is, and a question. Answer "
    "the question with the exact words of the lines, in \\boxed{}. If the lines do not answer the question, "
    "write \\boxed{not in the document}."
)
COLLECT_INSTRUCTION = (
    "You are given what memread counted in a whole document: groups of lines, each with how many there are, "
    "and a question. Answer the question from these counts and lines, in \\boxed{}."
)
# Question words a line must share for the number on it to answer a how-many question instead of code's count: "The
# pier was closed for 12 days after the storm" does; "# of unexpected successes 4" (design question gcc-testlog-06,
# whose count is the 50 XPASS lines) and a heading's "2.4.1" (octave-pdf-08) do not.
STATED_SUPPORT = 3
_ABSENT = re.compile(r"\b(?:not (?:in|found|mentioned|stated|given|provided|specified)|no (?:answer|information)|"
                     r"does not|doesn't|cannot|unknown|none)\b", re.IGNORECASE)


def says_absent(text: str) -> bool:
    """Whether an answer says the text does not answer ("not in the document", "none", "unknown")."""
    return not text.strip() or text.strip().strip(".").lower() in NONE_ANSWERS or bool(_ABSENT.search(text))


def final_prompt(question: str, evidence: str) -> str:
    return (f"{FINAL_INSTRUCTION}\n\n<lines>\n{evidence}\n</lines>\n\nQuestion: {question}\n\n"
            "Answer with the exact words of the lines, in \\boxed{}.")


def collect_prompt(question: str, counted: str, lines: str = "") -> str:
    quoted = f"\n\nLines of the passages that best match the question:\n<lines>\n{lines}\n</lines>" if lines else ""
    return (f"{COLLECT_INSTRUCTION}\n\n<counted>\n{counted}\n</counted>{quoted}\n\nQuestion: {question}\n\n"
            "Answer in \\boxed{}.")


_ATTACHED = "-./~$@%+#"  # what a name's own first characters may be: "--force-confask", ".dpkg-dist", "/org/…"
_OPENS = "([{\"'\u201c\u2018`<"


def whole_name(found: str, text: str) -> str:
    """``found`` (as :func:`snap` finds it, from its first word) with what ``text`` attaches to it there: the
    leading dashes, dot or slash of an option, a suffix or a path (``--force-confask``, ``.dpkg-dist``,
    ``/org/qa.debian.org/mia``), and the brackets it opens closed (``binutils (2.17-1)``)."""
    match = re.search(rf"(?<!\w){re.escape(found)}(?!\w)", text)
    if match is None:
        return found
    start, end = match.span()
    while start > 0 and text[start - 1] in _ATTACHED:
        start -= 1
    if start > 0 and not (text[start - 1].isspace() or text[start - 1] in _OPENS):
        start = match.start()  # glued to a word before it ("well-known"): the words found are the name
    for opening, closing in ("()", "[]"):
        while (end < len(text) and text[end] == closing
               and text[start:end].count(opening) > text[start:end].count(closing)):
            end += 1
    return text[start:end]


def settle_lookup(answer: str, evidence_text: str, found: str | None, *, dates: bool = False,
                  question: str = "") -> str:
    """The answer as the evidence writes it (or the line it copies with a slip); :data:`DOES_NOT_SAY` when there
    is no evidence, the model says it does not answer or only repeats the ``question``, or its answer is not in
    the evidence (then a step's checked answer ``found``, if any)."""
    if not evidence_text.strip():
        return DOES_NOT_SAY
    cleaned = answer.strip().strip(".")
    if (not cleaned or cleaned.lower() in NONE_ANSWERS or _ABSENT.search(cleaned)
            or (question and repeats_question(cleaned, question))):
        return whole_name(found, evidence_text) if found else DOES_NOT_SAY
    if cleaned.lower() in ("yes", "no") and found in ("yes", "no"):
        return cleaned.lower()  # a yes/no question, checked on the lines about it
    snapped = snap(cleaned, evidence_text, dates=dates) or copied(cleaned, evidence_text)
    if snapped is not None:
        return whole_name(snapped, evidence_text)
    if found is not None:
        return whole_name(found, evidence_text)
    # Some words of the answer are the evidence's: keep the answer (a sum, a yes/no, a date reworded).
    words = re.findall(r"\w+", cleaned.lower())
    present = sum(1 for word in words if word in evidence_text.lower())
    return answer.strip() if words and present >= len(words) / 2 else DOES_NOT_SAY


def best_found(question: str, candidates: Iterable[Mapping[str, Any]], after: int) -> str | None:
    """The answer a read step found after step ``after`` on the line most about the question (the earliest among
    equals) that is more than the question's own words; None if there is none. The select step falls back on it
    when its own answer only repeats the question (`qa.debian.org` for "… where on qa.debian.org is the MIA
    database available?", own-lookup-04, which a read step had answered `/org/qa.debian.org/mia`)."""
    found = [c for c in candidates if c.get("answer") and int(c["step"]) > after
             and not repeats_question(str(c["answer"]), question)]
    best = max(found, key=lambda c: (int(c.get("support", 0)), -int(c["step"])), default=None)
    return str(best["answer"]) if best is not None else None


def checked(question: str, said: str | None, lines: str, candidates: Iterable[Mapping[str, Any]],
            after: int) -> str | None:
    """What a select step's answer ``said`` confirms from the kept ``lines`` (None: they do not answer): an answer
    made only of the question's words is none, and the round's best read answer after step ``after`` stands
    (:func:`best_found`); a yes or no is itself; else the answer as the lines write it, or the line it copies with
    a slip."""
    if said and repeats_question(said, question):
        return best_found(question, candidates, after)
    if not said or says_absent(said):
        return None
    if yes_no(question, said):
        return said.lower()
    return snap(said, lines, dates=asks_date(question)) or copied(said, lines)


def never_mentioned(names: Iterable[str]) -> str:
    """The answer to a question about names the document does not hold anywhere."""
    return f"{DOES_NOT_SAY[:-1]}: it never mentions {', '.join(names)}."


def settle_item(answer: str, found: Mapping[str, Any], question: str, *, whole: bool = False) -> str:
    """A first/last question's answer, from the one item code found for it: the model's answer as the item (or
    the line it is under: a changelog entry's version) writes it when it says more than the question does; else
    the item itself, verbatim (code found it, and an answer that only repeats the question's words names
    nothing). An answer from inside a record comes under the record's first line, as a listed item does (a
    sign-off under its entry's version). ``whole``: the item is one of the document's headings, answered whole,
    its number and title ("6.1" alone names no section)."""
    item, head, record = (" ".join(str(found.get(key) or "").split()) for key in ("text", "head", "record"))
    if whole:
        return item
    cleaned = answer.strip().strip(".")
    snapped = snap(cleaned, f"{head}\n{item}") if cleaned and not says_absent(cleaned) else None
    chosen = snapped if snapped is not None and not echoes(snapped, question) else item
    return f"{record}: {chosen}" if record and chosen in item and not item.startswith(record) else chosen


def list_answer(items: Sequence[Mapping[str, Any]], lines: int) -> str:
    """A list question's answer, written by code: how many lines were collected, then the items, each once, in
    document order, verbatim (under the first line of the record it is in, if any: a changelog sign-off with its
    entry's header), at most :data:`LISTED` of them and the rest counted."""
    texts = list(dict.fromkeys(f"{e['record']}: {e['text']}" if e.get("record") and not str(e["text"]).startswith(
        str(e["record"])) else str(e["text"]) for e in items))  # (an item that came with its record line has it)
    if not texts or not lines:
        return DOES_NOT_SAY
    different = f", {len(texts)} different" if len(items) == lines and len(texts) < lines else ""
    # Only the first items are kept with the answer: past them, how many more is not known here (the count is).
    more = "; … and more" if len(items) < lines else f"; … and {len(texts) - LISTED} more" if len(texts) > LISTED else ""
    return f"{lines} line{'s' if lines != 1 else ''}{different}: {'; '.join(texts[:LISTED])}{more}"


def stated_numbers(candidates: Iterable[Mapping[str, Any]]) -> list[str]:
    """The answers the passages read gave on lines about the question, which a how-many answer may be instead of
    code's count ("closed for 12 days")."""
    return [str(c["answer"]) for c in candidates if c.get("answer") and int(c.get("own_support", 0)) >= STATED_SUPPORT]


def count_choices(counts: list[int], stated: Iterable[str] = ()) -> set[str]:
    """The numbers a how-many answer may be: a count code made, their sum, or a number a passage stated."""
    valid = {str(c) for c in counts} | ({str(sum(counts))} if counts else set())
    return valid | {s.strip().replace(",", "") for s in stated if re.fullmatch(r"\d[\d,]*", s.strip())}


def settle_count(answer: str, counts: list[int], stated: Iterable[str] = ()) -> str:
    """A how-many question's answer: the model's number when it is one of the counts code made (or their sum), or
    a number a passage read states as its whole answer (``stated``: "closed for 12 days" gave "12"); else the
    count code made for the groups chosen (a section number, "1.2", is no count)."""
    number = re.search(r"\d[\d,]*", answer)
    valid = count_choices(counts, stated)
    if number and number.group().replace(",", "") in valid:
        return number.group().replace(",", "")
    return str(sum(counts)) if counts else DOES_NOT_SAY
