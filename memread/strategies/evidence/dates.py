"""Dates however they are written: a small model answers `2012-01-03` from a line that says `Tue, 03 Jan 2012`.

Only whole dates (day, month and year) in the forms that name the month or put the year first: `2012-01-03`,
`3 January 2012`, `03 Jan 2012`, `January 3, 2012`, `Jan 3 2012`, with or without a weekday. A number alone
(`20120124`, a snapshot's version) and day and month between slashes (`01/03/2012`: which is the month?) are
not dates here. Only a question asking for a date (:func:`asks_date`) takes one so.
"""

from __future__ import annotations

import re

MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                     "dec"), 1)}  # a month's first three letters, and its number
_MONTH = r"(?P<{name}>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" \
         r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_WEEKDAY = r"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+)?"
_FORMS = (
    re.compile(r"(?<![\w.-])(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?![\w-])"),
    re.compile(rf"(?<![\w.]){_WEEKDAY}(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH.format(name='mon')},?\s+(?P<y>\d{{4}})(?!\w)",
               re.IGNORECASE),
    re.compile(rf"(?<![\w.]){_WEEKDAY}{_MONTH.format(name='mon')}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})(?!\w)",
               re.IGNORECASE),
)


# A question that asks for a date: only its answer is looked for as a day written in another form, so which reads
# the rule changes is known from the questions alone (docqa-design.md, "Toward v30" and its amendment).
_ASKS_DATE = re.compile(r"\bwhen\b|\b(?:what|which)\s+(?:date|day)\b|\bdate\b", re.IGNORECASE)


def asks_date(question: str) -> bool:
    """Whether ``question`` asks when, or for a date ("On what date was …", "When did …")."""
    return _ASKS_DATE.search(question) is not None


def _day(match: re.Match[str]) -> tuple[int, int, int] | None:
    parts = match.groupdict()
    month = int(parts["m"]) if parts.get("m") else MONTHS[parts["mon"].lower()[:3]]
    year, day = int(parts["y"]), int(parts["d"])
    return (year, month, day) if 1 <= month <= 12 and 1 <= day <= 31 else None


def whole_date(text: str) -> tuple[int, int, int] | None:
    """(year, month, day) when ``text`` is a date and nothing else (punctuation around it aside)."""
    text = text.strip().strip(".,;")
    for form in _FORMS:
        match = form.fullmatch(text)
        if match is not None:
            return _day(match)
    return None


def find_date(answer: str, text: str) -> str | None:
    """The date ``answer`` names, as ``text`` first writes it in any of the forms (None: ``answer`` is no whole
    date, or ``text`` does not hold that day)."""
    wanted = whole_date(answer)
    if wanted is None:
        return None
    found = sorted((match.start(), match.group().strip()) for form in _FORMS for match in form.finditer(text)
                   if _day(match) == wanted)
    return found[0][1] if found else None
