"""Does a page's text read as words? A check on word lengths that catches a text layer whose spaces were lost.

Typesetters such as TeX position words instead of writing spaces, and an extractor that misjudges the gaps glues
them: "linesconsistingsolelyofspacesandtabs". Whichever library produced the text, such a page has many letter
runs no language writes: :func:`looks_glued` flags it. Measured on Debian's manuals (benchmarks/robustness/bench_pdf.py):
pages whose spaces were kept have at most 11 % of their letters in runs of 20 or more (identifiers, URLs), glued
pages 20-90 %.

Scripts written without spaces between words (Chinese, Japanese, Thai, …) are left out of the count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LONG_RUN = 20  # letters in a row that no running text has, except the rare compound or identifier
GLUED_SHARE = 0.2  # a page is glued when this much of its letters are in long runs …
MIN_LONG_RUNS = 3  # … in at least this many of them …
MIN_LETTERS = 200  # … and it has enough text to judge

# Scripts that do not separate words with spaces: Thai, Lao, Tibetan, Myanmar, Khmer, kana, CJK ideographs.
_UNSPACED = "\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_LETTERS = re.compile(rf"[^\W\d_{_UNSPACED}]+")


@dataclass(frozen=True)
class WordShape:
    """How a text's letters fall into runs (maximal sequences of letters between spaces, digits, punctuation)."""

    letters: int
    runs: int
    long_runs: tuple[str, ...]  # runs of LONG_RUN letters or more, in order

    @property
    def long_share(self) -> float:
        """The share of letters that are in long runs."""
        return sum(map(len, self.long_runs)) / self.letters if self.letters else 0.0

    @property
    def glued(self) -> bool:
        """Do the words look run together (see the module docstring)?"""
        return (
            self.letters >= MIN_LETTERS
            and len(self.long_runs) >= MIN_LONG_RUNS
            and self.long_share >= GLUED_SHARE
        )


def word_shape(text: str) -> WordShape:
    runs = _LETTERS.findall(text)
    return WordShape(sum(map(len, runs)), len(runs), tuple(run for run in runs if len(run) >= LONG_RUN))


def looks_glued(text: str) -> bool:
    """Does ``text`` (a page) look like words run together without spaces?"""
    return word_shape(text).glued
