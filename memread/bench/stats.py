"""95 % intervals and paired tests for the benchmark tables, in the standard library only.

* :func:`wilson` — the Wilson score interval of a proportion (binary scores: sub-EM lenient and strict, and
  any score whose every value is 0 or 1). Unlike the normal ("Wald") interval it stays inside [0, 1] and is
  not empty at 0 or n successes, which matters at the small n a CPU can afford.
* :func:`bootstrap_mean` — a percentile bootstrap interval of a mean (F1, recall of several values), with a
  seeded generator so the same records give the same interval on every run and machine.
* :func:`newcombe` / :func:`newcombe_paired` — the interval of a difference of two proportions, independent
  or on the same samples (Newcombe's square-and-add of the two Wilson intervals).
* :func:`paired` — the difference between two methods on the same samples: its mean, a 95 % interval
  (:func:`newcombe_paired` for 0/1 scores, else a paired bootstrap: pairs resampled together), and an exact
  two-sided sign test on the pairs that differ. For 0/1 scores that test is McNemar's exact test (b = A right
  and B wrong, c = the reverse; under "no difference" each discordant pair is a fair coin flip).

Seeds are strings (``random.Random`` hashes them with SHA-512), so an interval depends on the data and the
name of what it belongs to, not on the order in which a report computes its cells.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the 97.5 % quantile of the standard normal
RESAMPLES = 10_000


@dataclass(frozen=True)
class Interval:
    """A 95 % interval and how it was computed ("wilson" or "bootstrap")."""

    low: float
    high: float
    method: str

    def to_list(self) -> list[float]:
        return [self.low, self.high]


def is_binary(values: Sequence[float]) -> bool:
    return all(v in (0.0, 1.0) for v in values)


def wilson(successes: int, n: int, z: float = Z95) -> Interval:
    """Wilson score interval for ``successes`` out of ``n`` (n ≥ 1)."""
    if n < 1:
        raise ValueError("a proportion needs at least one trial")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # At 0 or n successes one end is exactly 0 or 1; floating point must not make it 1e-17.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(low, high, "wilson")


def _percentiles(estimates: list[float]) -> tuple[float, float]:
    estimates.sort()
    last = len(estimates) - 1
    return estimates[round(0.025 * last)], estimates[round(0.975 * last)]


def bootstrap_mean(values: Sequence[float], *, seed: str, resamples: int = RESAMPLES) -> Interval:
    """Percentile bootstrap interval of the mean of ``values`` (at least one value)."""
    if not values:
        raise ValueError("a mean needs at least one value")
    data = list(values)
    n = len(data)
    rng = random.Random(seed)
    low, high = _percentiles([sum(rng.choices(data, k=n)) / n for _ in range(resamples)])
    return Interval(low, high, "bootstrap")


def mean_interval(values: Sequence[float], *, seed: str) -> Interval | None:
    """Wilson when every value is 0 or 1, else the bootstrap; None without values."""
    if not values:
        return None
    if is_binary(values):
        return wilson(int(sum(values)), len(values))
    return bootstrap_mean(values, seed=seed)


def newcombe(a: tuple[int, int], b: tuple[int, int]) -> Interval:
    """Newcombe's hybrid score interval of p_a − p_b for two independent proportions, each (successes, n)."""
    (right_a, n_a), (right_b, n_b) = a, b
    return _square_and_add(right_a / n_a, wilson(right_a, n_a), right_b / n_b, wilson(right_b, n_b), 0.0)


def newcombe_paired(both: int, a_only: int, b_only: int, neither: int) -> Interval:
    """Newcombe's square-and-add interval for p_a − p_b of two 0/1 scores on the same samples (method 10 of
    Newcombe, Stat. Med. 17:2635, 1998): each proportion's Wilson interval, combined with the correlation of
    the pairs (phi, shrunk towards 0 by N/2 when positive, as the method has it). Unlike a bootstrap it is not
    empty when no pair differs, nor pinned at 0 when every differing pair goes one way: at the n this CPU can
    afford both would read as certainty."""
    n = both + a_only + b_only + neither
    if n < 1:
        raise ValueError("a paired difference needs at least one pair")
    right_a, right_b = both + a_only, both + b_only
    margins = right_a * (n - right_a) * right_b * (n - right_b)
    cross = both * neither - a_only * b_only
    if margins == 0 or 0 <= cross <= n / 2:
        phi = 0.0
    else:
        phi = (cross - n / 2 if cross > n / 2 else cross) / math.sqrt(margins)
    return _square_and_add(right_a / n, wilson(right_a, n), right_b / n, wilson(right_b, n), phi)


def _square_and_add(p_a: float, a: Interval, p_b: float, b: Interval, phi: float) -> Interval:
    """p_a − p_b with each side's distance to its interval's ends added in squares, less their correlation."""
    below = math.sqrt(max(0.0, (p_a - a.low) ** 2 + (b.high - p_b) ** 2 - 2 * phi * (p_a - a.low) * (b.high - p_b)))
    above = math.sqrt(max(0.0, (a.high - p_a) ** 2 + (p_b - b.low) ** 2 - 2 * phi * (a.high - p_a) * (p_b - b.low)))
    return Interval(max(-1.0, p_a - p_b - below), min(1.0, p_a - p_b + above), "newcombe")


def sign_test(better: int, worse: int) -> float:
    """Exact two-sided sign test: the probability, with a fair coin per differing pair, of a split at least as
    uneven as ``better`` : ``worse``. With 0/1 scores this is McNemar's exact test. 1.0 when no pair differs."""
    n = better + worse
    if n == 0:
        return 1.0
    k = min(better, worse)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / (1 << n)
    return min(1.0, 2 * tail)


@dataclass(frozen=True)
class PairedDifference:
    """Method A minus method B over the samples both finished."""

    n: int
    mean_a: float
    mean_b: float
    difference: float  # mean of A − B, in score units (0..1)
    interval: Interval  # Newcombe's for 0/1 scores, else a paired bootstrap
    a_better: int  # samples where A scored higher (0/1 scores: A right, B wrong)
    b_better: int
    p_value: float  # exact sign test on a_better vs b_better (McNemar's exact test for 0/1 scores)
    test: str  # "mcnemar-exact" | "sign-exact"


def paired(a: Sequence[float], b: Sequence[float], *, seed: str, resamples: int = RESAMPLES) -> PairedDifference:
    """The paired difference of two methods' scores on the same samples (``a[i]`` and ``b[i]`` are sample i)."""
    if len(a) != len(b) or not a:
        raise ValueError("paired scores need the same, non-zero number of samples")
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    a_better = sum(1 for d in diffs if d > 0)
    b_better = sum(1 for d in diffs if d < 0)
    if is_binary(a) and is_binary(b):
        both = sum(1 for x, y in zip(a, b, strict=True) if x and y)
        interval = newcombe_paired(both, a_better, b_better, n - both - a_better - b_better)
    else:
        rng = random.Random(seed)
        interval = Interval(*_percentiles([sum(rng.choices(diffs, k=n)) / n for _ in range(resamples)]), "bootstrap")
    return PairedDifference(
        n=n, mean_a=sum(a) / n, mean_b=sum(b) / n, difference=sum(diffs) / n,
        interval=interval, a_better=a_better, b_better=b_better,
        p_value=sign_test(a_better, b_better),
        test="mcnemar-exact" if is_binary(a) and is_binary(b) else "sign-exact")
