"""Questions about the whole document: "how many …", "list every …", "which is the first/last …".

Such a question is not answered by the passage that matches it best: every matching unit of the document
counts, and a small model cannot count. So code reads the whole document (the index finds every chunk holding
the question's words) and collects, verbatim and with its place, every unit that holds them, grouped by how the
units begin (the 50 lines beginning ``XPASS:``, the 64 entry headers holding ``urgency=high``); a question about
the document's parts (chapters, sections, or the parts of a section it names) collects its headings instead,
grouped by their numbering (``12`` chapters, ``12.3`` sections, ``A`` appendices). The model is shown the groups,
counted, and says which of them the question is about, unless one group holds more of the question's words than
every other (then code takes it); code counts those, and the answer cites them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memread.recall import query_terms
from memread.strategies.evidence import keeping
from memread.strategies.evidence.groups import MAX_GROUPS
from memread.strategies.evidence.groups import Group as Group
from memread.strategies.evidence.groups import chosen_groups as chosen_groups  # the step's, re-exported
from memread.strategies.evidence.groups import step_prompt as step_prompt
from memread.strategies.evidence.groups import summary as summary
from memread.strategies.evidence.keeping import stems
from memread.strategies.evidence.parts import group_headings, group_outline, part_group, section_number
from memread.strategies.evidence.questions import (
    anchors,
    counted,
    distinct_identifier,
    identifiers,
    mentioned,
    parts_asked,
    place_kind,
    quoted,
    written,
)
from memread.strategies.evidence.units import HEADING, LINE, Unit, is_banner

_SHAPE_WORD = re.compile(r"\S+")


def shape_of(text: str, asked: Sequence[str] = ()) -> str:
    """How a unit begins, numbers blanked: ``XPASS:``, ``binutils (#.#-#)``, ``--``; after a mark ("--", "#",
    "*") its next word too when the question asks it (``-- Galen`` for Galen Hazelwood's uploads; every
    maintainer's sign-off is a ``--`` line for the uploads of 2005)."""
    words = _SHAPE_WORD.findall(text)[:3]
    key = words[0] if words else ""
    if len(words) > 1 and len(words[0]) <= 2 and stems([words[1]]) & stems(asked):
        key = " ".join(words[:2])
    return re.sub(r"\d+", "#", key)


# DejaGnu's, Automake's test harness's and pytest's result codes, and the words a question asks them by
RESULT_CODES = {"xpass": ("unexpected", "pass"), "xfail": ("expected", "fail"), "kpass": ("known", "pass"),
                "kfail": ("known", "fail")}


def holds(text: str, anchor: str, as_written: str | None = None, codes: Iterable[str] = ()) -> bool:
    """Whether ``text`` holds ``anchor``: a phrase of several words in a row, or a word (plurals alike, a past
    form as its stem: "failed" is held by "FAIL: …", an adverb as its adjective); a test result's code among
    ``codes`` holds the words it stands for ("XPASS: …" a test that passed unexpectedly); with ``as_written``,
    only that string, standing apart ("g++", not the "-g" a phrase "g" would match)."""
    if as_written is not None:
        return re.search(rf"(?<!\w){re.escape(as_written)}(?!\w)", text.lower()) is not None
    words = re.findall(r"\w+", text.lower())
    wanted = anchor.split()
    if len(wanted) > 1:
        return f" {anchor} " in f" {' '.join(words)} "
    forms = stems(wanted) | ({anchor[:-2]} if len(anchor) > 5 and anchor.endswith(("ed", "ly")) else set())
    meant = {word for code in set(codes) & set(words) for word in RESULT_CODES[code]}
    return bool(forms & (stems(words) | meant))


def codes_asked(wanted: Sequence[str]) -> set[str]:
    """The result codes whose every word the question asks ("passed unexpectedly": XPASS; "How many tests passed"
    asks no XPASS line)."""
    return {code for code, meant in RESULT_CODES.items() if all(any(holds(m, a) for a in wanted) for m in meant)}


def held_text(item: Mapping[str, Any], unit: Unit) -> str:
    """The text a unit holds the question's words in: a log line with the banner of the section it is under
    ("FAIL: objc/execute/…" under "=== objc tests ===" is an objc test's line)."""
    head = str(item.get("head") or "")
    return f"{head} {unit.text}" if unit.kind == LINE and not unit.heading and is_banner(head) else unit.text


def group_units(found: Iterable[tuple[dict[str, Any], Unit]], wanted: Sequence[str],
                required: Sequence[str] = (), *, by_anchors: bool = True,
                as_written: Mapping[str, str] | None = None) -> list[Group]:
    """Units that hold the anchors, grouped by shape and by which anchors they hold; with ``required`` (the
    question's identifiers), only the groups holding all of them (else any of them): "urgency=high" is what the
    question counts, "marked" is not. ``by_anchors`` off: the larger groups first, however many anchors they
    hold (the anchors only name what is counted). ``as_written``: anchors a unit holds only as written ("g++")."""
    groups: dict[str, tuple[Group, set[str]]] = {}
    written_as, codes = as_written or {}, codes_asked(wanted)
    for item, unit in found:
        text = held_text(item, unit)
        held = [anchor for anchor in wanted if holds(text, anchor, written_as.get(anchor), codes)]
        if not held:
            continue
        shape = shape_of(unit.text, wanted)
        key = f"{shape} · holding {', '.join(held)}"
        group = Group(key, held=len(held) if by_anchors else 0, shape=shape, words=tuple(held))
        groups.setdefault(key, (group, set(held)))[0].add(item)
    chosen = list(groups.values())
    if required:
        every = [pair for pair in chosen if set(required) <= pair[1]]
        some = [pair for pair in chosen if set(required) & pair[1]]
        chosen = every or some or chosen
    # Those holding more of the anchors first (counted from the anchors: a shape may hold a comma, "* Snapshot,"),
    # then the larger.
    return [g for g, _ in sorted(chosen, key=lambda pair: (-len(pair[1]) if by_anchors else 0, -pair[0].count))
            ][:MAX_GROUPS]


def decided(question: str, by_words: bool, groups: Sequence[Group]) -> tuple[int | None, str]:
    """The group code chooses whatever the model said, and why: the one the question's part word names (the model
    read "numbered like #.#" as chapters, own-aggregate-10); ``by_words`` (a list or a count), the one holding
    most of its words (what is counted holds none: a count's "# of …" summary lines are no better match)."""
    by_part = part_group(question, groups)
    if by_part is not None:
        return by_part, "the question counts its parts: by their numbering"
    return (most_held(groups) if by_words else None), "the lines asked about are those holding most of its words"


def picked_groups(question: str, groups: Sequence[Group], chosen: Sequence[int]) -> list[Group]:
    """The groups a whole-document question answers from: those chosen, or, for how many times a word occurs or
    how many different identifiers, every group (their lines are all cited)."""
    if mentioned(question) or distinct_identifier(question):
        return list(groups)
    return [groups[n - 1] for n in chosen]


def _occurrence(term: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(term)}(?!\w)", re.IGNORECASE)


def counts_of(question: str, picked: Sequence[Group], groups: Sequence[Group]) -> tuple[list[int], str]:
    """What a count counts, and the counts as the model is shown them: the chosen groups' lines, or how many
    different identifiers, or how many times a word occurs, it asks for (then said above the groups' lines)."""
    lines = "\n".join(f"{g.count} lines ({g.key})" for g in picked)
    found = _tokens(question, groups)
    if found is None:
        return [g.count for g in picked], lines
    term = mentioned(question)
    said = f"{found} times {term!r}" if term else f"{found} different {distinct_identifier(question)}…"
    return [found], f"{said} in all\n{lines}"


def _tokens(question: str, groups: Sequence[Group]) -> int | None:
    """For how many different identifiers: the different tokens beginning with it as written ("CVE-2018-12699",
    case aside), in every group holding it (a line may name several); for how many times a word occurs, its
    occurrences standing apart, case aside, in every group (of the items kept: 2,000 a group, 12 groups). None
    when neither is asked (or no identifier is found)."""
    items = [str(item["text"]) for g in groups for item in g.items]
    if term := mentioned(question):
        occurrence = _occurrence(term)
        return sum(len(occurrence.findall(text)) for text in items)
    prefix = distinct_identifier(question)
    if prefix is None:
        return None
    token = re.compile(rf"(?<![\w-]){re.escape(prefix)}(?:[-_./:]|(?=\d))[\w.-]*\w", re.IGNORECASE)
    return len({match.upper() for text in items for match in token.findall(text)}) or None


def most_held(groups: Sequence[Group]) -> int | None:
    """The group (numbered from 1) whose units hold more of the question's words than every other group's, if one
    does: what a list question names ("Which tests failed in the objc testsuite?": the FAIL line under "=== objc
    tests ===", not the suite's "# of expected passes" lines, own-list-01); of several holding as many, the one
    whose lines begin with one of its words, if only one does (a log line's result code: "FAIL:" for "failed",
    not the UNRESOLVED lines saying "compilation failed")."""
    best = max((g.held for g in groups), default=0)
    tied = [n for n, g in enumerate(groups, 1) if g.held == best]
    if best == 0:
        return None
    if len(tied) > 1:
        tied = [n for n in tied if any(holds(groups[n - 1].shape, word, codes=codes_asked(groups[n - 1].words))
                                       for word in groups[n - 1].words)]
    return tied[0] if len(tied) == 1 else None


# --- over the document's passages ----------------------------------------------------------------------------


def collected(passages: Any, question: str) -> list[Group]:
    """The groups of the whole document's units a question is about: the outline's headings (or the headings
    the text marks) for a question about the document's parts, else the units holding its anchors."""
    if parts_asked(question) and passages.outline:
        groups = group_outline(passages.outline, quoted(question), question)
        if groups:
            return groups
    if parts_asked(question):
        headings = list(_units_of(passages, range(len(passages)), headings_only=True))
        scope = None
        for title in quoted(question):
            scope = section_number(title, (unit.text for _, unit in headings))
            if scope:
                break
        groups = group_headings(headings, scope)
        if groups:
            return groups
    if term := mentioned(question):  # its occurrences, wherever they are: the rest names the document
        wanted, pattern = anchors(term), _occurrence(term)
        units = _units_of(passages, passages.holding(wanted))
        found = ((item, unit) for item, unit in units if pattern.search(unit.text))  # its own text, no banner's
        return group_units(found, wanted, wanted, by_anchors=False, as_written=written(term))
    wanted = anchors(question)
    # The chunks to collect from: those holding every identifier of the question ("urgency=high", "XPASS"), else
    # those of the condition whose units hold most of the question's words together, the larger such group
    # first ("gcc", not "testsuite", which a log says on its first line), the rarest of those ("experimental");
    # else any of the words naming what is counted. The document may call its units otherwise ("uploads" are a
    # changelog's entries): those words neither narrow the chunks nor rank the groups.
    chunks = _holding_identifiers(passages, question)
    named = set(counted(question)) | set(place_kind(question))
    if not chunks:
        conditions = [anchor for anchor in wanted if anchor not in named]
        held = [(len(found), found) for anchor in conditions if (found := passages.holding([anchor]))]
        if held:
            together = [_together(passages, found, conditions, question) for _, found in held]
            chunks = min(pair for pair, best in zip(held, together, strict=True) if best == max(together))[1]
            wanted = conditions
        else:  # nothing but what is counted: it ranks the groups no more than it narrows the chunks
            chunks = sorted({chunk for anchor in wanted for chunk in passages.holding([anchor])})
            return group_units(_units_of(passages, chunks), wanted, by_anchors=False, as_written=written(question))
    # What is counted ranks no group here either ("# of unexpected failures" lines are no more the libstdc++
    # suite's failures than its FAIL lines are), unless it is an identifier ("How many XPASS results …")
    named -= set(identifiers(question))
    return group_units(_units_of(passages, chunks), [a for a in wanted if a not in named], identifiers(question),
                       as_written=written(question))


def _together(passages: Any, chunks: Sequence[int], words: Sequence[str], question: str) -> tuple[int, int]:
    """How many of the question's words the best group collected from ``chunks`` holds, and its size."""
    groups = group_units(_units_of(passages, chunks), words, as_written=written(question))
    return (groups[0].held, groups[0].count) if groups else (0, 0)


def _holding_identifiers(passages: Any, question: str) -> list[int]:
    """The chunks holding every identifier of the question; one the index holds no word of ("g++": one-letter
    words are not indexed) is looked for in the chunks' text as written, and in the banner a chunk is under, as
    a log line holds its banner's words (the g++ suite's chunks of "FAIL: c-c++-common/…" lines)."""
    found, as_written = identifiers(question), written(question)
    unindexed = [phrase for phrase in found if phrase in as_written and not query_terms(phrase)]
    if not unindexed:
        return list(passages.holding(found))
    indexed = [phrase for phrase in found if phrase not in unindexed]
    chunks = passages.holding(indexed) if indexed else range(len(passages))
    return [index for index in chunks
            if all(holds(f"{_banner(passages.contexts[index])}\n{passages.get(index).text}", phrase, as_written[phrase])
                   for phrase in unindexed)]


def _banner(context: str) -> str:
    return context if is_banner(context) else ""


def _units_of(passages: Any, chunks: Iterable[int], *,
              headings_only: bool = False) -> Iterable[tuple[dict[str, Any], Unit]]:
    previous: tuple[int, list[Unit]] = (-1, [])  # the chunk just scanned: usually the one before the next

    @functools.cache
    def opening(index: int) -> str:  # the chunk before's last record line, when a unit of ``index`` needs it
        before = previous[1] if previous[0] == index - 1 else passages.units(index - 1, keep=False) if index else ()
        return _last_record(before)

    for index in chunks:
        chunk = passages.get(index)
        every = list(passages.units(index, keep=False))
        for position, unit in enumerate(every):
            if not unit.readable or (headings_only and unit.kind != HEADING):
                continue
            item = keeping.entry(chunk, every, position, passages.contexts[index], step=1, how="collected",
                                 record=passages.records[index])
            record = record_line(every, position, lambda index=index: opening(index))
            if record:
                item["record"] = record  # what a list cites it under: a changelog sign-off's entry header
            yield item, unit
        previous = (index, every)


def record_line(found: Sequence[Unit], position: int, before: Any = lambda: "") -> str:
    """The first line of the record an indented unit is in: the nearest unit above it that is not indented,
    whatever its kind (a changelog header ending "urgency=low (HIGH for m68k)" is numbered as a sentence), or,
    above the chunk's first such unit, ``before()`` (the chunk before's last one). "" for a unit not indented."""
    unit = found[position]
    if unit.indent == 0 or unit.heading:
        return ""
    for other in reversed(found[:position]):
        if other.readable and other.heading:
            return ""
        if other.readable and other.indent == 0:
            return other.text
    return str(before())


def _last_record(found: Iterable[Unit]) -> str:
    """The last of a chunk's units that is not indented (a record's first line), if any."""
    records = [u for u in found if u.readable and u.indent == 0 and not u.heading]
    return records[-1].text if records else ""
