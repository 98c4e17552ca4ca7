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

from memread.document import Span
from memread.recall import query_terms
from memread.strategies.evidence import keeping
from memread.strategies.evidence.groups import MAX_GROUPS
from memread.strategies.evidence.groups import Group as Group
from memread.strategies.evidence.groups import chosen_groups as chosen_groups  # the step's, re-exported
from memread.strategies.evidence.groups import step_prompt as step_prompt
from memread.strategies.evidence.groups import summary as summary
from memread.strategies.evidence.keeping import stems
from memread.strategies.evidence.questions import (
    PARTS,
    anchors,
    counted,
    distinct_identifier,
    identifiers,
    part_numbers,
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


_NUMBERED = re.compile(r"\s*(?:(?:Chapter|Appendix|Part|Section)\s+)?((?:\d+|[A-Z])(?:\.\d+)*)\.?\s")


def numbering(text: str) -> str | None:
    """A heading's numbering pattern: ``12`` for "12 Packages", ``12.3`` for "12.3. RAID", ``A`` for "A Grammar",
    ``A.2`` for "A.2. Ubuntu"; None when it has none."""
    match = _NUMBERED.match(text)
    if not match:
        return None
    return re.sub(r"^[A-Z]", "A", re.sub(r"\d+", "#", match.group(1)))  # appendices A, B, C… alike


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


def group_headings(found: Iterable[tuple[dict[str, Any], Unit]], scope: str | None) -> list[Group]:
    """Headings grouped by numbering (each distinct heading once); with ``scope`` (a section's numbering, e.g.
    ``1.2``), only the headings numbered under it."""
    groups: dict[str, Group] = {}
    seen: set[str] = set()
    for item, unit in found:
        if unit.kind != HEADING or unit.text in seen:
            continue
        pattern, number = numbering(unit.text), heading_number(unit.text)
        if pattern is None or number is None:
            continue
        if scope is not None and not (number.startswith(scope + ".") and number.count(".") == scope.count(".") + 1):
            continue
        seen.add(unit.text)
        key = f"headings numbered like {pattern}" + (f" under {scope}" if scope else "")
        groups.setdefault(key, Group(key, parts=True, numbering=pattern, scope=scope or "")).add(item)
    # The outermost level first ("chapters" before "sections"), then the larger.
    return sorted(groups.values(), key=lambda g: (g.numbering.count("."), -g.count))[:MAX_GROUPS]


def group_outline(outline: Sequence[Any], titles: Sequence[str], question: str = "") -> list[Group]:
    """The document's outline (its own headings: PDF bookmarks, HTML and EPUB headings) grouped by level and
    numbering; with ``titles`` (sections the question quotes), only the headings directly under the first of
    them the outline has; without, under the section the question names by its title's words, if one has
    headings under it ("the Strings chapter")."""
    entries = list(outline)
    scope = None
    for title in titles:
        wanted = stems(query_terms(title))
        scope = next((i for i, h in enumerate(entries) if wanted and stems(query_terms(_unnumbered(h.title))) == wanted),
                     None)
        if scope is not None:
            break
    if scope is None and titles:
        return []
    if scope is None and question:
        scope = named_section(entries, question)
    if scope is None and question:
        scope = numbered_section(entries, question)
    if scope is not None:
        entries = headings_under(entries, scope)
    groups: dict[str, Group] = {}
    seen: set[tuple[int, str]] = set()
    numbers: dict[str, set[str]] = {}  # the numbers each group holds: a number again starts a second sequence
    for heading in entries:
        if (heading.level, heading.title) in seen:
            continue
        seen.add((heading.level, heading.title))
        pattern = numbering(heading.title + " ")
        key = (f"level {heading.level + 1} headings" + (f" numbered like {pattern}" if pattern else " without a number")
               + (f" under {outline[scope].title}" if scope is not None else ""))
        number = heading_number(heading.title)
        # An EPUB's appendix "1. Overview …" after chapters 1 to 8 (a letter may be the article: "A Sample …")
        again = number is not None and number[0].isdigit() and number in numbers.get(key, set())
        if again:
            key += ", numbered again"
        numbers.setdefault(key, set()).add(number or "")
        place = heading.source.rsplit("/", 1)[-1] + (f" p. {heading.page}" if heading.page else "")
        # Where the heading is, so that the answer cites the parts it counted ("sources: … § 12.2. Virtualization")
        span = Span(heading.source, page_first=heading.page, page_last=heading.page, chapters=(heading.title,),
                    line_first=heading.line, line_last=heading.line)
        group = Group(key, parts=True, numbering=(pattern or "") + (" again" if again else ""), level=heading.level,
                      scope=outline[scope].title if scope is not None else "")
        groups.setdefault(key, group).add({"text": heading.title, "where": place, "chunk": 0, "start": 0, "head": "",
                                           "spans": [span.to_dict()], "step": 1, "how": "outline"})
    return sorted(groups.values(), key=lambda g: (g.level, g.numbering.endswith("again"), g.numbering.count("."),
                                                  -g.count))[:MAX_GROUPS]


# A part the question counts, and the numbering such parts have in books and manuals: chapters 1, 2, 3…,
# appendices A, B, C…, sections 1.1, 1.2…
_PART_NUMBERING = {"chapter": "#", "appendix": "A", "appendice": "A", "section": "#.#"}


def part_group(question: str, groups: Sequence[Group]) -> int | None:
    """The group (1-based) a question about the document's parts counts, chosen by code when it names one kind
    of part and the groups are headings not scoped to a section: its outermost group numbered as that kind is
    ("How many chapters …": the first numbered 1, 2, 3…, not its sections 1.1, 1.2…, nor an appendix numbered
    from 1 again); None to let the model choose."""
    kinds = {_PART_NUMBERING[word] for word in stems(query_terms(question)) if word in _PART_NUMBERING}
    if len(kinds) != 1 or not groups or not all(g.parts and not g.scope for g in groups):
        return None
    wanted = kinds.pop()
    return next((n for n, g in enumerate(groups, 1) if g.numbering == wanted), None)


def decided(question: str, by_words: bool, groups: Sequence[Group]) -> tuple[int | None, str]:
    """The group code chooses whatever the model said, and why: the one the question's part word names (the model
    read "numbered like #.#" as chapters, own-aggregate-10); ``by_words`` (a list or a count), the one holding
    most of its words (what is counted holds none: a count's "# of …" summary lines are no better match)."""
    by_part = part_group(question, groups)
    if by_part is not None:
        return by_part, "the question counts its parts: by their numbering"
    return (most_held(groups) if by_words else None), "the lines asked about are those holding most of its words"


def counts_of(question: str, picked: Sequence[Group], groups: Sequence[Group]) -> list[int]:
    """What a count counts: the chosen groups' lines, or how many different identifiers it asks for."""
    different = _different(question, groups)
    return [g.count for g in picked] if different is None else [different]


def counted_text(question: str, picked: Sequence[Group], groups: Sequence[Group]) -> str:
    """The counts as the model is shown them: each group's lines, and the different identifiers when asked."""
    lines = "\n".join(f"{g.count} lines ({g.key})" for g in picked)
    different = _different(question, groups)
    return lines if different is None else f"{different} different {distinct_identifier(question)}… in all\n{lines}"


def _different(question: str, groups: Sequence[Group]) -> int | None:
    """For how many different identifiers: the different tokens beginning with it as written ("CVE-2018-12699",
    case aside), in every group holding it (a line may name several); None when none is asked or found."""
    prefix = distinct_identifier(question)
    if prefix is None:
        return None
    token = re.compile(rf"(?<![\w-]){re.escape(prefix)}(?:[-_./:]|(?=\d))[\w.-]*\w", re.IGNORECASE)
    found = {match.upper() for g in groups for item in g.items for match in token.findall(str(item["text"]))}
    return len(found) or None


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


def heading_number(title: str) -> str | None:
    """A heading's number as written: ``12.3`` for "12.3. RAID", ``12`` for "Chapter 12. …", ``B`` for "B Test"."""
    match = _NUMBERED.match(title + " ")
    return match.group(1) if match else None


def named_section(entries: Sequence[Any], question: str) -> int | None:
    """The outline heading the question names as a part: its title's words in a row, next to a word for a part
    ("How many sections does the Strings chapter have?" names "5 Strings"; "… the Debian Administrator's Handbook
    have?" names no part), the one of most words, the outermost among equals; None when no heading with headings
    under it is named so."""
    asked = re.findall(r"\w+", question.lower())
    named = []
    for i, heading in enumerate(entries):
        words = re.findall(r"\w+", _unnumbered(heading.title).lower())
        if not words:
            continue
        for at in range(len(asked) - len(words) + 1):
            around = asked[max(0, at - 1):at] + asked[at + len(words):at + len(words) + 1]
            if asked[at:at + len(words)] == words and stems(around) & PARTS:
                named.append((-len(words), heading.level, i))
                break
    return next((i for _, _, i in sorted(named) if headings_under(entries, i)), None)


def numbered_section(entries: Sequence[Any], question: str) -> int | None:
    """The outline heading the question names by its number ("How many sections does chapter 8 have?" names
    "Chapter 8. Basic Configuration …"), one whose title says the part word first, else the outermost; None
    when no heading so numbered has headings under it."""
    named = [(not h.title.lower().startswith(word), h.level, i) for word, number in part_numbers(question)
             for i, h in enumerate(entries) if heading_number(h.title) == number]
    return next((i for *_, i in sorted(named) if headings_under(entries, i)), None)


def headings_under(entries: Sequence[Any], scope: int) -> list[Any]:
    """The headings one level under ``entries[scope]``: by their numbers where the section and they are numbered
    (12.1 to 12.4 under "Chapter 12", wherever the outline has them: an HTML folder's outline follows its files'
    names), else the headings that follow it in the outline, one level deeper, until its level comes again."""
    number = heading_number(entries[scope].title)
    if number is not None:
        numbered = [h for h in entries if (n := heading_number(h.title)) is not None and n.startswith(number + ".")
                    and n.count(".") == number.count(".") + 1]
        if numbered:
            return numbered
    level = entries[scope].level
    under = []
    for heading in entries[scope + 1:]:
        if heading.level <= level:
            break
        if heading.level == level + 1:
            under.append(heading)
    return under


def _unnumbered(title: str) -> str:
    return re.sub(r"^\s*(?:(?:Chapter|Appendix|Part|Section)\s+)?(?:\d+|[A-Z])(?:\.\d+)*\.?\s+", "", title)


def section_number(title: str, headings: Iterable[str]) -> str | None:
    """The numbering of the heading whose words are ``title``'s (a section the question names)."""
    wanted = stems(query_terms(title))
    for heading in headings:
        match = re.match(r"\s*((?:\d+|[A-Z])(?:\.\d+)*)\.?\s+(.*)", heading)
        if match and wanted and stems(query_terms(match.group(2))) == wanted:
            return match.group(1)
    return None


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
    wanted = anchors(question)
    # The chunks to collect from: those holding every identifier of the question ("urgency=high", "XPASS"), else
    # those of the condition whose units hold most of the question's words together, the larger such group
    # first ("gcc", not "testsuite", which a log says on its first line), the rarest of those ("experimental");
    # else any of the words naming what is counted. The document may call its units otherwise ("uploads" are a
    # changelog's entries): those words neither narrow the chunks nor rank the groups.
    chunks = _holding_identifiers(passages, question)
    if not chunks:
        named = set(counted(question)) | set(place_kind(question))
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
    named = (set(counted(question)) | set(place_kind(question))) - set(identifiers(question))
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
