"""A question about the document's parts: its headings (the outline's, or those the text marks) grouped by
numbering (``12`` chapters, ``12.3`` sections, ``A`` appendices), the part a question names by title or number,
and the headings under it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from memread.document import Span
from memread.recall import query_terms
from memread.strategies.evidence.groups import MAX_GROUPS, Group
from memread.strategies.evidence.keeping import stems
from memread.strategies.evidence.questions import PARTS, part_numbers
from memread.strategies.evidence.units import HEADING, Unit

_NUMBERED = re.compile(r"\s*(?:(?:Chapter|Appendix|Part|Section)\s+)?((?:\d+|[A-Z])(?:\.\d+)*)\.?\s")


def numbering(text: str) -> str | None:
    """A heading's numbering pattern: ``12`` for "12 Packages", ``12.3`` for "12.3. RAID", ``A`` for "A Grammar",
    ``A.2`` for "A.2. Ubuntu"; None when it has none."""
    match = _NUMBERED.match(text)
    if not match:
        return None
    return re.sub(r"^[A-Z]", "A", re.sub(r"\d+", "#", match.group(1)))  # appendices A, B, C… alike


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
