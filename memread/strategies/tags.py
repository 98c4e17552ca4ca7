"""Lenient reading of the XML-ish tags small models write: ``<check> Yes </check>``, a missing close tag,
tags inside a markdown code fence or inline code, odd case and spacing inside the angle brackets.

These helpers only find text; what a missing or odd tag *means* is each strategy's policy.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass

_FENCE = re.compile(r"```[\w+-]*")


def clean(text: str) -> str:
    """Remove markdown code fences and inline-code backticks around tags, which carry no meaning here."""
    text = _FENCE.sub("", text)
    return re.sub(r"`(</?\s*\w+\s*>)`?|(</?\s*\w+\s*>)`", lambda m: m.group(1) or m.group(2), text)


def open_tag(name: str) -> str:
    return rf"<\s*{name}\s*>"


def close_tag(name: str) -> str:
    return rf"<\s*/\s*{name}\s*>"


@dataclass(frozen=True)
class Found:
    """A tag's content and how it was found."""

    content: str
    closed: bool  # False: the close tag was missing and the content runs to the next tag / the end
    count: int  # how many such tags the text holds


def find_all(text: str, name: str, *, until: tuple[str, ...] = ()) -> list[Found]:
    """Every ``<name>…</name>`` in ``text`` (case-insensitive, DOTALL). An open tag without its close tag
    runs to the first open tag named in ``until`` (or to the end of the text).

    Linear in the length of the reply: every tag is found once, then looked up by position (a degenerate
    reply repeating ``<update>`` thousands of times must not cost seconds).
    """
    opens = list(re.finditer(open_tag(name), text, re.IGNORECASE))
    if not opens:
        return []
    close_starts, closes = _starts(re.finditer(close_tag(name), text, re.IGNORECASE))
    stops = sorted(m.start() for n in (*until, name) for m in re.finditer(open_tag(n), text, re.IGNORECASE))
    open_starts = [m.start() for m in opens]
    results: list[Found] = []
    pos = 0
    while (index := bisect_left(open_starts, pos)) < len(opens):
        start = opens[index]
        at = bisect_left(close_starts, start.end())
        end = closes[at] if at < len(closes) else None
        following = bisect_left(stops, start.end())
        nxt = stops[following] if following < len(stops) else len(text)
        if end is not None and end.start() <= nxt:
            results.append(Found(text[start.end():end.start()], True, 0))
            pos = end.end()
        else:
            results.append(Found(text[start.end():nxt], False, 0))
            pos = max(nxt, start.end())
    return [Found(f.content, f.closed, len(results)) for f in results]


def _starts(matches: Iterator[re.Match[str]]) -> tuple[list[int], list[re.Match[str]]]:
    found = list(matches)
    return [m.start() for m in found], found


def first(text: str, name: str, *, until: tuple[str, ...] = ()) -> Found | None:
    found = find_all(text, name, until=until)
    return found[0] if found else None


def last(text: str, name: str, *, until: tuple[str, ...] = ()) -> Found | None:
    found = find_all(text, name, until=until)
    return found[-1] if found else None


def has_tag(text: str, name: str) -> bool:
    """Does ``text`` hold an open or close ``name`` tag (even a bare ``<name`` cut off at the end)?"""
    return re.search(rf"<\s*/?\s*{name}\b", text, re.IGNORECASE) is not None


def remove_blocks(text: str, name: str) -> str:
    """``text`` without any ``<name>…</name>`` block (DOTALL); an unclosed block runs to the end."""
    opens = list(re.finditer(open_tag(name), text, re.IGNORECASE))
    if not opens:
        return text
    close_starts, closes = _starts(re.finditer(close_tag(name), text, re.IGNORECASE))
    open_starts = [m.start() for m in opens]
    kept: list[str] = []
    pos = 0
    while (index := bisect_left(open_starts, pos)) < len(opens):
        start = opens[index]
        kept.append(text[pos:start.start()])
        at = bisect_left(close_starts, start.end())
        if at == len(closes):
            return "".join(kept)  # unclosed: the block runs to the end
        pos = closes[at].end()
    kept.append(text[pos:])
    return "".join(kept)


def word(content: str) -> str:
    """A gate value as a bare lower-case word: ``' **Yes.** '`` → ``'yes'``."""
    return re.sub(r"[^a-z]", "", content.strip().split()[0].lower()) if content.strip() else ""


def split_thinking(text: str, names: tuple[str, ...] = ("think", "thinking")) -> tuple[str | None, str, bool]:
    """(thinking, the rest, thinking was closed). The rest is what follows the last close tag; an unclosed
    thinking block leaves the whole text as the rest (tags after it still count)."""
    for name in names:
        closes = list(re.finditer(close_tag(name), text, re.IGNORECASE))
        if closes:
            end = closes[-1]
            opened = re.search(open_tag(name), text, re.IGNORECASE)
            begin = opened.end() if opened and opened.start() < end.start() else 0
            return text[begin:end.start()].strip(), text[end.end():], True
        opened = re.search(open_tag(name), text, re.IGNORECASE)
        if opened:
            return text[opened.end():].strip(), text, False
    return None, text, True
