"""Regions of docqa's documents for writing design questions, kept away from the held-out questions' answers.

A helper writing questions of our own must not see where docqa's held-out questions are answered: this tool shows
a document's text (as memread reads it) only outside 3,000 characters either side of every occurrence of a
held-out question's gold, and says nothing of what or where those are. Two ways in: a random region (``--seed``),
or the region around the Nth occurrence of a string (``--at``), for the place a first region points to.

    python -m benchmarks.studies.regions DOC --seed 7100 [--chars 4000]
    python -m benchmarks.studies.regions DOC --at "waterfall" [--nth 2] [--chars 4000]
    python -m benchmarks.studies.regions DOC --count "waterfall"      # occurrences that may be shown

DOC is a docqa document key (octave-pdf, devref-epub, gcc-testlog, handbook-html, binutils-changelog), fetched as
the bench does (``MEMREAD_DOCQA_DIR`` for a cache of them). A refused region exits 3 with one line saying so.
"""

from __future__ import annotations

import argparse
import random
import re
from collections.abc import Sequence

MARGIN = 3000  # characters kept hidden either side of a held-out gold
REFUSED = 3


def hidden(doc: str, text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` within :data:`MARGIN` of an occurrence of any held-out question's gold (about
    ``doc``), merged, in order."""
    from memread.bench import docqa

    spans = []
    for question in docqa.questions():
        if question["doc"] != doc or docqa.split_of(question) == "design":
            continue
        for gold in question.get("golds", []):
            for match in re.finditer(re.escape(str(gold)), text, re.IGNORECASE):
                spans.append((max(0, match.start() - MARGIN), match.end() + MARGIN))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def allowed(start: int, end: int, spans: Sequence[tuple[int, int]]) -> bool:
    return all(end <= s or start >= e for s, e in spans)


def random_region(text: str, spans: Sequence[tuple[int, int]], seed: int, chars: int) -> tuple[int, int] | None:
    """A region of ``chars`` characters at a random offset (``seed``) that touches no hidden span (None after
    200 tries)."""
    rng = random.Random(seed)
    for _ in range(200):
        start = rng.randrange(0, max(1, len(text) - chars))
        if allowed(start, start + chars, spans):
            return start, start + chars
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("doc")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--at", help="the region around an occurrence of this string (case-insensitive)")
    parser.add_argument("--nth", type=int, default=1, help="which occurrence of --at, counted among those allowed")
    parser.add_argument("--count", help="how many occurrences of this string may be shown")
    parser.add_argument("--chars", type=int, default=4000)
    args = parser.parse_args(argv)
    from benchmarks.studies.own_questions import document_text

    text = document_text(args.doc)
    spans = hidden(args.doc, text)
    half = args.chars // 2
    if args.count is not None:
        found = [m.start() for m in re.finditer(re.escape(args.count), text, re.IGNORECASE)]
        shown = [at for at in found if allowed(max(0, at - half), at + half, spans)]
        print(f"{len(shown)} occurrence(s) of {args.count!r} may be shown ({len(text):,} characters in all)")
        return 0
    if args.at is not None:
        found = [m.start() for m in re.finditer(re.escape(args.at), text, re.IGNORECASE)]
        shown = [at for at in found if allowed(max(0, at - half), at + half, spans)]
        if len(shown) < args.nth:
            print(f"refused: {len(shown)} occurrence(s) of {args.at!r} may be shown; ask for another")
            return REFUSED
        start = max(0, shown[args.nth - 1] - half)
        region: tuple[int, int] | None = (start, start + args.chars)
    else:
        region = random_region(text, spans, args.seed if args.seed is not None else 0, args.chars)
    if region is None:
        print("refused: no region of that size may be shown here; try another seed or fewer --chars")
        return REFUSED
    start, end = region
    print(f"--- {args.doc}, characters {start:,} to {min(end, len(text)):,} of {len(text):,} ---")
    print(text[start:end])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
