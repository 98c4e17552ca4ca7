"""Keeping and bounding: evidence entries copied word for word from the document, and the memory they make.

An entry is a unit the answer was found in (or code collected), with the units that complete it: the sentence
before it in its paragraph when it opens with a word that points back ("It", "This"; in a lookup, "But", "For
example" too) or mid-sentence, and the
next two of its paragraph; with its place (pages, lines) and its context (the heading or the
parent line above it: a changelog item under its entry's header, a log line under its section banner). In a
lookup, a label ("[ Sedat Dilek ]", "[Service]") comes with the lines it labels, and a line under one shows it. The
memory is the entries in document order; when it outgrows its budget, the entries sharing the fewest words
with the question (and with the other entries) are dropped first, the latest among equals.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from memread import prompts
from memread.document import Chunk
from memread.recall import query_terms
from memread.strategies.evidence.units import HEADING, LINE, Unit, one_line

Entry = dict[str, Any]
AFTER = 2  # sentences of its paragraph kept after a kept sentence
# A line that is only a label for the lines after it: a changelog's contributor ("[ Sedat Dilek ]"), a configuration
# section ("[Service]"); not a footnote mark ("[1]"), an elision ("[...]"), a list ("[A, B]") or code ("[ a 'foo' ]").
_LABEL = re.compile(r"\[\s*[A-Za-z][\w .@+-]*?\s*\]")
_BLANK_LINE = re.compile(r"\n[ \t]*\r?\n")  # a label's lines end at one
_POINTS_BACK = re.compile(r"(?:It|Its|This|These|That|Those|They|Their|He|She|His|Her|Such|The latter|"
                          r"The former|Here|There)\b")
# A sentence opening with a connective leans on the one before as much ("But, the anonymous function is 60% slower
# than the first method.": shown alone, the select step said it does not answer; own-lookup-23).
_CONNECTIVE = re.compile(r"(?:But|However|And|So|Thus|Therefore|Hence|Also|Otherwise|Instead|Yet|Still|Then|"
                         r"Moreover|Furthermore|Likewise|Similarly|Conversely|Nevertheless|Nonetheless|"
                         r"Consequently|Accordingly|Besides|Meanwhile|In this case|In that case|In addition|"
                         r"As a result|On the other hand|In contrast|In particular|For example|For instance)\b")


def entry(chunk: Chunk, found: Sequence[Unit], position: int, context: str, *, step: int, how: str,
          record: str = "", lookup: bool = False) -> Entry:
    """The entry for unit ``position`` of ``found`` (the chunk's units): the unit, with what completes it.
    ``record``: the first line of the record the chunk begins inside of, the head of the units before the
    chunk's first line that is not indented. ``lookup``: a lookup's entry (the collect path's are not changed): a
    label comes with the lines it labels, a line under a label shows it in its context, and a sentence opening
    with a connective comes with the one before it."""
    unit = found[position]
    first = last = position
    same = [i for i, other in enumerate(found) if other.block == unit.block and other.readable]
    if unit.kind != LINE and not unit.heading:
        # A fragment ("displaying line numbers, use …") or a sentence pointing back ("It …") needs the one before;
        # the next sentences of its paragraph often say the rest ("The dput package … as dupload." then "It can
        # run dinstall in dry-run mode after the upload."), up to AFTER of them.
        if (points_back(unit.text, connectives=lookup) or unit.text[:1].islower()) and position - 1 in same:
            first = position - 1
        while last + 1 in same and last - position < AFTER:
            last += 1
    # An indented line is part of the record it is indented under: the record's first line comes with it
    # ("gcc-verbose-lto-link:" above "  Prefix LLINKER with /usr/bin/time -v"), if it is near. Not a heading: a
    # log centres its banners with tabs ("\t\t=== libstdc++ Summary ===" is under no "FAIL: …" line above it).
    if unit.indent > 0 and not unit.heading:
        for above in range(position - 1, max(-1, position - 4), -1):  # the record's header further up is its head
            other = found[above]
            if other.readable and other.indent < unit.indent:
                if other.kind == LINE and not other.heading:
                    first = min(first, above)
                break
    # A line's children complete it: the lines below it indented more ("gcc-verbose-lto-link:" then "  Prefix
    # LLINKER with /usr/bin/time -v"; a changelog header's items).
    while (last + 1 < len(found) and found[last + 1].readable and found[last + 1].indent > unit.indent
           and last - position < AFTER + 1 and not found[last + 1].heading):
        last += 1
    if lookup and is_label(unit):
        # "[ Sedat Dilek ]" labels the items after it at its own indent ("* 160_pr12327.patch: Fix PR ld/12327."),
        # which the indent rule above does not reach: kept alone, the label answered nothing (own-lookup-13).
        while (last + 1 < len(found) and last - position < AFTER + 1 and _labelled(found[last + 1], unit)
               and not _BLANK_LINE.search(chunk.text, found[last].end, found[last + 1].start)):
            last += 1
    start, end = found[first].start, found[last].end
    spans = chunk.locate(start, end)
    head = _head(found, first) or (record if _opening(found, first) else "") or context
    label = _label_above(found, first) if lookup else ""
    if label:
        head = f"{head} {label}" if head else label
    return {"chunk": chunk.index, "start": start, "end": end, "text": one_line(chunk.text[start:end]),
            "head": head, "where": "; ".join(span.describe() for span in spans),
            "spans": [span.to_dict() for span in spans], "step": step, "how": how}


def points_back(text: str, *, connectives: bool = False) -> bool:
    """Whether a sentence needs the one before it: it opens with a pronoun ("It", "This") or, with
    ``connectives`` (a lookup's entries), a connective ("But", "However", "For example")."""
    return bool(_POINTS_BACK.match(text) or (connectives and _CONNECTIVE.match(text)))


def _head(found: Sequence[Unit], position: int) -> str:
    """What a unit is under within its chunk: the nearest heading above it, or, for an indented unit, the nearest
    line above it that is indented less (a changelog entry's header above its items)."""
    unit = found[position]
    for other in reversed(found[:position]):
        if not other.readable:
            continue
        if other.heading:
            return other.text
        if unit.indent > 0 and other.indent < unit.indent and other.kind == LINE:
            return other.text
    return ""


def is_label(unit: Unit) -> bool:
    return unit.kind == LINE and _LABEL.fullmatch(unit.text) is not None


def _labelled(other: Unit, label: Unit) -> bool:
    """Whether ``other``, a unit after ``label``, is one of the lines it labels."""
    return other.readable and other.kind == LINE and other.indent >= label.indent and not is_label(other)


def _label_above(found: Sequence[Unit], position: int) -> str:
    """The label the unit at ``position`` is under: above it at its indent, with only lines it labels between."""
    unit = found[position]
    if unit.kind != LINE or is_label(unit):
        return ""
    for other in reversed(found[:position]):
        if not other.readable:
            continue
        if is_label(other) and other.indent <= unit.indent:
            # a label indented less is the unit's parent line: its head already (``_head``)
            return other.text if other.indent == unit.indent else ""
        if not _labelled(other, unit):
            return ""
    return ""


def _opening(found: Sequence[Unit], position: int) -> bool:
    """Whether unit ``position`` comes before the chunk's first readable unit that is not indented."""
    return all(unit.indent > 0 or not unit.readable for unit in found[:position + 1])


def covered(entries: Iterable[Mapping[str, Any]], chunk: int, unit: Unit) -> bool:
    return any(e["chunk"] == chunk and e["start"] <= unit.start < e["end"] for e in entries)


def render(entries: Sequence[Mapping[str, Any]]) -> str:
    """The memory: one line per entry, in document order, each with its place and context."""
    if not entries:
        return prompts.NO_MEMORY
    return "\n".join(line(e) for e in sorted(entries, key=document_order))


def for_model(entries: Sequence[Mapping[str, Any]]) -> str:
    """The lines as the model is shown them: text under its context, no places (shown places, the default model
    answered "[lines 379-384]")."""
    shown = []
    for e in sorted(entries, key=document_order):
        head = str(e.get("head") or "")
        shown.append(f"- {head}: {e['text']}" if head and head != e["text"] else f"- {e['text']}")
    return "\n".join(shown) if shown else prompts.NO_MEMORY


def searchable(entries: Iterable[Mapping[str, Any]]) -> str:
    """The kept lines as one text an answer is looked for in (the select step's and the final answer's): each
    under its context, in the order kept."""
    return "\n".join(f"{e.get('head', '')} {e['text']}" for e in entries)


def line(entry: Mapping[str, Any]) -> str:
    where = short_place(str(entry["where"]))
    head = f" · {entry['head']}" if entry.get("head") and entry["head"] != entry["text"] else ""
    cut = " …" if entry.get("cut") else ""
    return f"- [{where}{head}] {entry['text']}{cut}"


def short_place(where: str) -> str:
    """``/path/book.pdf p. 12`` as ``p. 12``: the view names the document already."""
    first, _, rest = where.partition(" ")
    return rest if rest and ("/" in first or "." in first) and not first.endswith(".html") else where


def document_order(entry: Mapping[str, Any]) -> tuple[int, int]:
    return int(entry["chunk"]), int(entry["start"])


def bounded(entries: list[Entry], question: str, room: int, count: Callable[[str], int]) -> tuple[list[Entry], int]:
    """Drop the weakest entries until the rendered memory fits ``room`` tokens; returns them and how many went.
    An entry that alone outgrows it (a long log line) is cut at a word and marked."""
    asked = stems(query_terms(question))
    dropped = 0
    entries = list(entries)
    while len(entries) > 1 and count(render(entries)) > room:
        words = [stems(query_terms(f"{e['head']} {e['text']}")) for e in entries]
        weakest = min(range(len(entries)), key=lambda i: _strength(i, entries, words, asked))
        entries.pop(weakest)
        dropped += 1
    if len(entries) == 1 and count(render(entries)) > room:
        text = entries[0]["text"]
        while len(text) > 20 and count(render([{**entries[0], "text": text, "cut": True}])) > room:
            text = text[:int(len(text) * 0.8)].rsplit(" ", 1)[0]
        entries[0] = {**entries[0], "text": text, "cut": True}
    return entries, dropped


def _strength(i: int, entries: Sequence[Mapping[str, Any]], words: Sequence[set[str]],
              asked: set[str]) -> tuple[int, int]:
    others = set().union(*(w for j, w in enumerate(words) if j != i))
    return len(asked & words[i]) + min(2, len((words[i] - asked) & others)), -int(entries[i]["step"])


def stems(words: Iterable[str]) -> set[str]:
    """Words as compared for relatedness: lower case, without a plural or possessive s."""
    out = set()
    for word in words:
        word = word.lower().removesuffix("'s")
        out.add(word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") else word)
    return out


def heading_units(found: Sequence[Unit]) -> list[int]:
    return [i for i, unit in enumerate(found) if unit.kind == HEADING]


def sources(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Kept entries as a step's sources (the live view's and the trace's), in document order."""
    return [{"where": e["where"], "spans": e["spans"], "excerpt": e["text"][:200], "chunk": e["chunk"]}
            for e in sorted(entries, key=document_order)]
