"""First and last: the order "first" and "last" mean for the items a whole-document question collected.

Numbered headings go by their numbers (an HTML folder's outline follows its files' names); other items go in
time, which is the document's order, or its reverse where the document runs newest first (a changelog).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from memread.strategies.evidence import keeping
from memread.strategies.evidence.dates import MONTHS
from memread.strategies.evidence.parts import heading_number

_DATE = re.compile(r"\b(\d{1,2})\s+(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?,?\s+(\d{4})\b|"
                   r"\b(\d{4})-(\d{2})-(\d{2})\b")


def date_of(text: str) -> tuple[int, int, int] | None:
    """The first date a line gives (``Sun,  9 Mar 2003 01:02:39`` or ``2003-03-09``), as (year, month, day)."""
    match = _DATE.search(text)
    if match is None:
        return None
    if match.group(1):
        return int(match.group(3)), MONTHS[match.group(2).lower()], int(match.group(1))
    return int(match.group(4)), int(match.group(5)), int(match.group(6))


def newest_first(texts: Iterable[str]) -> bool:
    """Whether the document's dated lines run backwards in time, mostly (a changelog, a news file): its first
    upload in time is the last in the text. Three in four steps between its dated lines must go back (binutils'
    changelog: 629 back, 25 on; a manual's or a web page's dates go both ways)."""
    dates = [date for text in texts if (date := date_of(text)) is not None]
    steps = list(itertools.pairwise(dates))
    back, on = sum(1 for a, b in steps if b < a), sum(1 for a, b in steps if b > a)
    return len(dates) >= 10 and back >= 3 * on


def _number_key(number: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 1000 + ord(part[0]) for part in number.split("."))


def in_order(items: Sequence[dict[str, Any]], backwards: bool = False) -> list[dict[str, Any]]:
    """Collected items in the order a list, "first" and "last" mean: numbered headings by their numbers (an HTML
    folder's outline follows its files' names, "Chapter 12" before "Chapter 6"); else in time, which is the
    document's order, or its reverse when the document runs ``backwards`` (:func:`newest_first`)."""
    ordered = sorted(items, key=keeping.document_order)
    numbers = [heading_number(str(item["text"])) for item in ordered]
    if ordered and all(item.get("how") == "outline" for item in ordered) and None not in numbers:
        return [item for _, item in sorted(zip(numbers, ordered, strict=True), key=lambda pair: _number_key(str(pair[0])))]
    return ordered[::-1] if backwards else ordered
