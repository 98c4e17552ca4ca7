"""Lenient reading of the XML-ish tags small models write: ``<check> Yes </check>``, a missing close tag,
tags inside a markdown code fence or inline code, odd case and spacing inside the angle brackets.

These helpers only find text; what a missing or odd tag *means* is each strategy's policy.
"""

from __future__ import annotations

import re
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
    runs to the first open tag named in ``until`` (or to the end of the text)."""
    results: list[Found] = []
    opener = re.compile(open_tag(name), re.IGNORECASE)
    closer = re.compile(close_tag(name), re.IGNORECASE)
    stoppers = [re.compile(open_tag(n), re.IGNORECASE) for n in (*until, name)]
    pos = 0
    while True:
        start = opener.search(text, pos)
        if start is None:
            break
        end = closer.search(text, start.end())
        nxt = min((m.start() for m in (s.search(text, start.end()) for s in stoppers) if m), default=len(text))
        if end is not None and end.start() <= nxt:
            results.append(Found(text[start.end():end.start()], True, 0))
            pos = end.end()
        else:
            results.append(Found(text[start.end():nxt], False, 0))
            pos = nxt
    return [Found(f.content, f.closed, len(results)) for f in results]


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
    text = re.sub(rf"{open_tag(name)}.*?{close_tag(name)}", "", text, flags=re.IGNORECASE | re.DOTALL)
    return re.sub(rf"{open_tag(name)}.*\Z", "", text, flags=re.IGNORECASE | re.DOTALL)


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
