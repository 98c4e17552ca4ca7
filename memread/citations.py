"""Citations: which chunks the final memory's content came from.

A step is cited when the memory changed at that step in a way that survives into the final memory: some
word trigrams that were not in the memory before the step, but were after it, are still in the memory at
the end. For the gated strategy only steps whose update was applied (``check yes``) can introduce content.
Only trigrams holding a content word the memory did not have before count, so rewording boilerplate or
re-joining old sentences is not cited.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memread.document import Span
from memread.events import StepFinished

_WORD = re.compile(r"\w+", re.UNICODE)
_COMMON = frozenset(
    """a an the and or but of to in on at by for with from as is are was were be been it its this that these
    those there here no not yet any some information memory relevant previous updated update so far has have
    had which who what when where how than then also into about after before during i we you he she they
    question answer problem section text document chunk provided given none found mentioned""".split()  # noqa: SIM905 (a word list reads best as prose)
)
N = 3


def _ngrams(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    grams = {tuple(words[i:i + N]) for i in range(len(words) - N + 1)}
    return {g for g in grams if not all(w in _COMMON for w in g)}


@dataclass(frozen=True)
class Citation:
    """A chunk whose reading put lasting content into a lane's memory."""

    lane: int
    step: int  # chunk index, 0-based
    spans: tuple[Span, ...]
    weight: int  # how many surviving trigrams the step introduced
    excerpt: str  # the longest surviving line or sentence of the memory that the step introduced

    @property
    def where(self) -> str:
        return "; ".join(span.describe() for span in self.spans)

    def to_dict(self) -> dict[str, Any]:
        return {"lane": self.lane, "step": self.step, "chunk": self.step + 1, "where": self.where,
                "spans": [span.to_dict() for span in self.spans], "weight": self.weight, "excerpt": self.excerpt}


def _pieces(text: str) -> list[str]:
    """Lines, then sentences: the units an excerpt is chosen from."""
    out: list[str] = []
    for line in text.splitlines():
        out.extend(p.strip() for p in re.split(r"(?<=[.!?])\s+", line) if p.strip())
    return out


def cite(steps: Iterable[StepFinished], final_memory: str | None = None, *, min_weight: int = 1) -> list[Citation]:
    """Citations for one lane's steps (in order), strongest evidence first within reading order.

    A strategy that knows where each piece of its memory comes from says so in its state (``sources``: the
    evidence strategy's verbatim sentences with their own pages and lines); those are the citations, in document
    order. Otherwise ``final_memory`` (default: the memory after the last step) is traced back to the steps
    that introduced it.
    """
    steps = list(steps)
    if not steps:
        return []
    known = steps[-1].state.get("sources")
    if isinstance(known, list):
        return [_from_source(steps[-1].lane, source) for source in known]
    final = steps[-1].memory if final_memory is None else final_memory
    final_grams = _ngrams(final)
    final_pieces = _pieces(final)
    citations = []
    for step in steps:
        if not step.memory_changed:
            continue
        # New trigrams that carry a new content word: re-joining old words ("so far: the ship") is not new.
        old_words = {w.lower() for w in _WORD.findall(step.memory_before)}
        introduced = {g for g in _ngrams(step.memory) - _ngrams(step.memory_before)
                      if any(w not in old_words and w not in _COMMON for w in g)}
        surviving = introduced & final_grams
        if len(surviving) < min_weight:
            continue
        excerpt = max(final_pieces, key=lambda piece: len(_ngrams(piece) & surviving), default="")
        citations.append(Citation(lane=step.lane, step=step.step, spans=step.chunk.spans,
                                  weight=len(surviving), excerpt=excerpt[:200]))
    return citations


def _from_source(lane: int, source: dict[str, Any]) -> Citation:
    spans = tuple(Span.from_dict(span) for span in source.get("spans", []))
    return Citation(lane=lane, step=int(source.get("chunk", 0)), spans=spans, weight=1,
                    excerpt=str(source.get("excerpt", "")))


def describe(citations: Sequence[Citation]) -> str:
    """One line for people, each source named once: ``report.pdf pp. 2, 4``, ``app.log lines 12, 340-352``,
    ``book.epub § 2. Setup; § 5. Upgrades``, ``a.html § Intro; b.html line 9``."""
    sources: dict[str, list[Span]] = {}
    for span in dict.fromkeys(span for c in citations for span in c.spans):
        sources.setdefault(span.source, []).append(span)
    return "; ".join(_places(spans) for spans in sources.values())


def _places(spans: Sequence[Span]) -> str:
    """One source and its places, each once: lines alone, or pages alone, are listed after one word."""
    name = Span(spans[0].source).describe()  # "stdin" for "-"
    places = list(dict.fromkeys(p for p in (replace(s, source="").describe().strip() for s in spans) if p))
    if not places:
        return name
    only_lines = all(s.line_first is not None and s.page_first is None and not s.chapters for s in spans)
    only_pages = all(s.page_first is not None and s.line_first is None and not s.chapters for s in spans)
    if only_lines:  # next and overlapping lines as one range: a count's 42 FAIL lines are "15-22, 24, …"
        ranges = _merged(spans)
        word = "line" if len(ranges) == 1 and ranges[0][0] == ranges[0][1] else "lines"
        return f"{name} {word} {', '.join(str(a) if a == b else f'{a}-{b}' for a, b in ranges)}"
    if only_pages:
        numbers = [p.split(" ", 1)[1] for p in places]  # after "p."/"pp."
        word = "p." if len(numbers) == 1 and places[0].startswith("p. ") else "pp."
        return f"{name} {word} {', '.join(numbers)}"
    return f"{name} {'; '.join(places)}"


def _merged(spans: Sequence[Span]) -> list[tuple[int, int]]:
    """The spans' line ranges in order, those that touch or overlap joined."""
    ranges: list[tuple[int, int]] = []
    for first, last in sorted((int(s.line_first or 0), int(s.line_last or s.line_first or 0)) for s in spans):
        if ranges and first <= ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], max(last, ranges[-1][1]))
        else:
            ranges.append((first, last))
    return ranges
