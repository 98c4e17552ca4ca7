"""Cutting a document into chunks that fit a token budget, at the most natural boundary available.

A chunk ends, by preference, at a paragraph break (a blank line), then a line break, then the end of a
sentence, then whitespace, and only as a last resort inside a word (minified JSON, base64). Nothing is dropped
or repeated: joining the chunk texts gives back the joined segment texts exactly.

How it stays fast and exact:

* Text is split into *units* that each fit the budget on their own. Small neighbouring pieces are grouped (up to
  about 1/16 of a chunk) so the tokenizer is called a few hundred tokens at a time, not once per word or line;
  a unit whose text is far too long to fit is split before anyone counts it.
* Units are packed greedily by their own counts; when the next unit does not fit, a group is split again at the
  same boundary level to fill the room that is left.
* BPE counts are not additive, so each assembled chunk is counted once more, and trailing units move to the next
  chunk if it is over. Each character is therefore tokenised about twice.
* A tokenizer that can count several texts in one call (``count_many``: llama.cpp's, where each call has a fixed
  cost of about half a millisecond) is given the pieces of a split a window at a time, before they are counted
  one by one (it keeps those counts for its ``count``: :class:`memread.tokens.CountMemo`); one that can count a text from its parts' counts (``count_joined``) recounts assembled chunks
  itself. The counts are the same, so are the chunks: only the number of calls changes.

Memory holds the current segment and one chunk's worth of units: segments are pulled lazily.
"""

from __future__ import annotations

import contextlib
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

from memread.document import Chunk, Mark, Provenance, Segment, Span
from memread.errors import BudgetError, UsageError
from memread.tokens import Tokenizer

MIN_BUDGET = 16

# Boundary levels, coarse to fine. LAST[level] matches a window up to the end of its last boundary; NEXT[level]
# finds the first boundary. A cut goes right after the boundary, so separators stay with the text before them.
_BOUNDARIES = (
    r"\n(?:[^\S\n]*\n)+",  # paragraph: a blank line (or several)
    r"\n",  # line
    r"[.!?\u2026][\"'\u201d\u2019)\]]*\s+|[\u3002\uff01\uff1f]",  # sentence end (also CJK full stops)
    r"\s+",  # whitespace
)
_LAST = tuple(re.compile(r"(?s:.*)(?:" + b + ")") for b in _BOUNDARIES)
_NEXT = tuple(re.compile(b) for b in _BOUNDARIES)
_CHARS = len(_BOUNDARIES)  # the last resort: a cut between two characters

# A word cut in two by a segment boundary is carried whole into the next segment, if it is no longer than this.
_STITCH_CHARS = 4096
# Pieces counted ahead in one ``count_many`` call, in characters.
_AHEAD_CHARS = 32 * 1024


@dataclass
class _Unit:
    """A piece of one segment that fits the budget on its own."""

    text: str
    tokens: int
    level: int  # the boundary level it was cut at; it may be split again at that level
    provenance: Provenance
    line: int | None  # line number of its first character, when the source has lines

    @property
    def line_last(self) -> int | None:
        if self.line is None:
            return None
        return self.line + self.text.count("\n", 0, max(0, len(self.text) - 1))


class Chunker:
    """Packs segments into chunks of at most ``budget`` tokens, as counted by ``tokenizer``.

    >>> from memread.tokens import CharTokenizer
    >>> chunker = Chunker(CharTokenizer(), budget=20)
    >>> [c.text for c in chunker.chunks([Segment("One.\\n\\nTwo and three.\\n", Provenance("a.txt"))])]
    ['One.\\n\\n', 'Two and three.\\n']
    """

    def __init__(self, tokenizer: Tokenizer, budget: int) -> None:
        if budget < MIN_BUDGET:
            raise UsageError(
                f"a chunk budget of {budget} tokens is too small",
                hint=f"use --chunk-tokens {MIN_BUDGET} or more (the papers use 5000)",
            )
        self.tokenizer = tokenizer
        self.budget = budget
        # Packing aims a little under the budget so the recount of the assembled chunk rarely finds it over.
        self._pack_limit = budget - max(1, budget // 100)
        self._chars_per_token = 4.0  # learnt as we count; only steers how much text is counted at once
        self._count_many: Callable[[list[str]], list[int]] | None = getattr(tokenizer, "count_many", None)
        self._count_joined: Callable[[list[str], list[int]], int] | None = getattr(tokenizer, "count_joined", None)

    # -- public ------------------------------------------------------------------------------------------

    def chunks(self, segments: Iterable[Segment]) -> Iterator[Chunk]:
        """Chunks in document order, produced as the segments are read."""
        units: list[_Unit] = []
        total = 0
        index = 0
        pending: deque[_Unit] = deque()  # units handed back: split groups, or the tail of an over-full chunk
        source = self._units(segments)
        while True:
            unit = pending.popleft() if pending else next(source, None)
            if unit is None:
                break
            if not units or total + unit.tokens <= self._pack_limit:
                units.append(unit)
                total += unit.tokens
                continue
            room = self._pack_limit - total
            if room >= self.budget // 32 and (parts := self._resplit(unit)):
                pending.extendleft(reversed(parts))
                continue
            chunk, carried = self._assemble(index, units)
            yield chunk
            index += 1
            pending.extendleft(reversed([*carried, unit]))
            units, total = [], 0
        while units:  # the end of the document, possibly over-full: assemble until nothing is carried
            chunk, units = self._assemble(index, units)
            yield chunk
            index += 1

    # -- units ----------------------------------------------------------------------------------------------

    def _units(self, segments: Iterable[Segment]) -> Iterator[_Unit]:
        for text, provenance in _stitched(segments):
            line = provenance.line_start
            for piece, tokens, level in self._fit(text, 0, split_level=0):
                yield _Unit(piece, tokens, level, provenance, line)
                if line is not None:
                    line += piece.count("\n")

    def _fit(self, text: str, level: int, *, split_level: int) -> Iterator[tuple[str, int, int]]:
        """``text`` as one unit if it fits, else split at ``split_level`` or finer."""
        if len(text) <= self._count_cap():
            tokens = self._count(text)
            if tokens <= self.budget:
                yield text, tokens, level
                return
        yield from self._split(text, split_level, self._group_chars())

    def _split(self, text: str, level: int, group: int) -> Iterator[tuple[str, int, int]]:
        """Split ``text`` (too big for one unit) at ``level`` boundaries into groups of at most ``group`` chars."""
        if level >= _CHARS:
            yield from self._cut_inside_words(text)
            return
        pieces = _pieces(text, level, group)
        first = next(pieces)
        if len(first) == len(text):  # no boundary of this kind: look for a finer one
            yield from self._split(text, level + 1, group)
            return
        parts = [first, *pieces]
        ahead = 0  # parts[:ahead] were offered to _count_ahead
        for number, piece in enumerate(parts):
            if number == ahead:
                ahead = self._count_ahead(parts, number)
            # A short piece may hold several parts (split it again at this level); a long one is a single part.
            if len(piece) <= group:
                yield from self._fit_group(piece, level, group)
            else:
                yield from self._fit(piece, level, split_level=level + 1)

    def _fit_group(self, piece: str, level: int, group: int) -> Iterator[tuple[str, int, int]]:
        tokens = self._count(piece)
        if tokens <= self.budget:
            yield piece, tokens, level
        else:
            yield from self._split(piece, level, max(1, group // 8))

    def _resplit(self, unit: _Unit) -> list[_Unit]:
        """``unit`` cut again at its own boundary level into smaller units, or [] when it has no such boundary."""
        if unit.level >= _CHARS or len(unit.text) < 2:
            return []
        group = max(1, len(unit.text) // 8)
        pieces = list(_pieces(unit.text, unit.level, group))
        if len(pieces) < 2:
            return []
        parts: list[_Unit] = []
        line = unit.line
        self._count_ahead(pieces, 0)
        for piece in pieces:
            for text, tokens, level in self._fit_group(piece, unit.level, group):
                parts.append(_Unit(text, tokens, level, unit.provenance, line))
                if line is not None:
                    line += text.count("\n")
        return parts

    def _cut_inside_words(self, text: str) -> Iterator[tuple[str, int, int]]:
        """The last resort for text with no whitespace at all: the longest prefixes that fit."""
        start = 0
        size = max(64, int(self.budget * self._chars_per_token * 1.25))
        while start < len(text):
            window = text[start : start + size]
            ids = self.tokenizer.encode(window)
            if len(ids) <= self.budget:
                if start + len(window) < len(text):
                    size *= 2  # the text is denser than guessed: look further before cutting
                    continue
                yield window, self._count(window), _CHARS
                return
            piece = self._longest_fitting_prefix(window, ids)
            yield piece, self._count(piece), _CHARS
            start += len(piece)
            size = max(64, int(len(piece) * 1.25))  # the next stretch is probably as dense as this one

    def _longest_fitting_prefix(self, text: str, ids: list[int]) -> str:
        # Ask the tokenizer where its first `budget` tokens end; fall back to a binary search on characters
        # when decoding does not give back a prefix of the text (a token cut through a multi-byte character).
        for keep in range(self.budget, max(0, self.budget - 4), -1):
            prefix = self.tokenizer.decode(ids[:keep])
            if prefix and text.startswith(prefix) and self.tokenizer.count(prefix) <= self.budget:
                return prefix
        low, high = 0, len(text)  # count(text[:low]) fits, count(text[:high + 1]) does not
        while low < high:
            middle = (low + high + 1) // 2
            if self.tokenizer.count(text[:middle]) <= self.budget:
                low = middle
            else:
                high = middle - 1
        if low == 0:
            raise BudgetError(
                f"a single character needs more than {self.budget} tokens",
                hint="raise --chunk-tokens",
            )
        return text[:low]

    # -- assembling ------------------------------------------------------------------------------------------

    def _assemble(self, index: int, units: list[_Unit]) -> tuple[Chunk, list[_Unit]]:
        """The chunk made of ``units``, verified on its joined text; returns the units that had to move on."""
        carried: list[_Unit] = []
        text = "".join(unit.text for unit in units)
        # One unit was counted on exactly this text; several are recounted because BPE merges across joins.
        tokens = units[0].tokens if len(units) == 1 else self._count_units(text, units)
        while tokens > self.budget:
            excess = tokens - self.budget
            while len(units) > 1 and excess > 0:
                unit = units.pop()
                carried.insert(0, unit)
                excess -= unit.tokens
            text = "".join(unit.text for unit in units)
            tokens = units[0].tokens if len(units) == 1 else self._count_units(text, units)
        return Chunk(index, text, tokens, _spans(units), _marks(units)), carried

    # -- counting --------------------------------------------------------------------------------------------

    def _count(self, text: str) -> int:
        tokens = self.tokenizer.count(text)
        self._learn(len(text), tokens)
        return tokens

    def _count_units(self, text: str, units: list[_Unit]) -> int:
        """The tokens of ``text``, the units' texts joined."""
        if self._count_joined is None:
            return self._count(text)
        tokens = self._count_joined([unit.text for unit in units], [unit.tokens for unit in units])
        self._learn(len(text), tokens)
        return tokens

    def _learn(self, chars: int, tokens: int) -> None:
        if tokens >= 64:  # learn the text's density from samples big enough to mean something
            self._chars_per_token = 0.8 * self._chars_per_token + 0.2 * (chars / tokens)

    def _count_ahead(self, pieces: list[str], start: int) -> int:
        """Count in one ``count_many`` call the pieces from ``start`` on (up to :data:`_AHEAD_CHARS` of them) that
        are about to be counted one by one; returns where the next window starts. Only the cost changes."""
        end, size, cap = start, 0, self._count_cap()
        while end < len(pieces) and (end == start or size + len(pieces[end]) <= _AHEAD_CHARS):
            size += len(pieces[end])
            end += 1
        if self._count_many is None:
            return end
        wanted = [piece for piece in dict.fromkeys(pieces[start:end]) if len(piece) <= cap]
        if len(wanted) < 2:
            return end
        # The tokenizer keeps the counts for the one-by-one counts that follow; should counting ahead fail, they
        # are counted one by one instead, where the error (if it is one) surfaces as it always did.
        with contextlib.suppress(Exception):
            self._count_many(wanted)
        return end

    def _count_cap(self) -> int:
        """Texts longer than this would almost surely exceed the budget: they are split before being counted."""
        return int(2 * self.budget * max(self._chars_per_token, 1.0))

    def _group_chars(self) -> int:
        """How many characters of small pieces to count at once: about 1/16 of a chunk."""
        return max(16, int(self.budget * self._chars_per_token / 16))


def _pieces(text: str, level: int, group: int) -> Iterator[str]:
    """Consecutive pieces of ``text`` ending at ``level`` boundaries, each either at most ``group`` characters
    (possibly several parts) or one part with no boundary inside."""
    last, following = _LAST[level], _NEXT[level]
    start, end = 0, len(text)
    while start < end:
        if end - start <= group:
            yield text[start:]
            return
        match = last.match(text, start, start + group)
        if match is None or match.end() == start:
            match = following.search(text, start)
        cut = match.end() if match is not None and match.end() > start else end
        yield text[start:cut]
        start = cut


def _stitched(segments: Iterable[Segment]) -> Iterator[tuple[str, Provenance]]:
    """Segment texts, where a word cut by a segment boundary (a text loader cutting a very long line) is moved
    whole into the next segment of the same source, so chunk boundaries never fall inside it for that reason."""
    carry = ""
    carry_provenance: Provenance | None = None
    for segment in segments:
        text, provenance = segment.text, segment.provenance
        if carry and carry_provenance is not None:
            if provenance.source == carry_provenance.source and provenance.line_start is not None:
                text = carry + text
            else:
                yield carry, carry_provenance
            carry, carry_provenance = "", None
        if not text:
            continue
        if provenance.line_start is not None and not text[-1].isspace():
            tail = len(text) - _last_space(text)
            if 0 < tail <= _STITCH_CHARS and tail < len(text):
                # The carried word sits on the segment's last line, which is where the next segment starts
                # (and the line it is reported on when it ends the source).
                text, carry = text[:-tail], text[-tail:]
                carry_provenance = replace(provenance, line_start=provenance.line_start + text.count("\n"))
        yield text, provenance
    if carry and carry_provenance is not None:
        yield carry, carry_provenance


def _last_space(text: str) -> int:
    """Index just after the last whitespace character in ``text`` (0 when there is none)."""
    match = _LAST[3].match(text, max(0, len(text) - _STITCH_CHARS - 1))
    return match.end() if match is not None else 0


def _marks(units: list[_Unit]) -> tuple[Mark, ...]:
    """A mark where each new source, page or chapter starts inside the chunk (lines are counted from it)."""
    marks: list[Mark] = []
    offset = 0
    for unit in units:
        where = unit.provenance
        last = marks[-1].provenance if marks else None
        if last is None or (where.source, where.page, where.chapter) != (last.source, last.page, last.chapter):
            marks.append(Mark(offset, where, unit.line))
        offset += len(unit.text)
    return tuple(marks)


def _spans(units: list[_Unit]) -> tuple[Span, ...]:
    """One span per run of units from the same source. Whitespace-only units (separators between pages or
    files) do not make a chunk claim the next page, unless the chunk is nothing but whitespace."""
    meaningful = [unit for unit in units if not unit.text.isspace()] or units
    runs: list[list[_Unit]] = []
    for unit in meaningful:
        if runs and runs[-1][0].provenance.source == unit.provenance.source:
            runs[-1].append(unit)
        else:
            runs.append([unit])
    return tuple(_span(run) for run in runs)


def _span(run: list[_Unit]) -> Span:
    paged = [unit.provenance for unit in run if unit.provenance.page is not None]
    lined = [unit for unit in run if unit.line is not None]
    chapters: list[str] = []
    for unit in run:
        chapter = unit.provenance.chapter
        if chapter and (not chapters or chapters[-1] != chapter) and chapter not in chapters:
            chapters.append(chapter)
    return Span(
        source=run[0].provenance.source,
        page_first=paged[0].page if paged else None,
        page_last=paged[-1].page if paged else None,
        label_first=paged[0].page_label if paged else None,
        label_last=paged[-1].page_label if paged else None,
        chapters=tuple(chapters),
        line_first=lined[0].line if lined else None,
        line_last=lined[-1].line_last if lined else None,
    )
