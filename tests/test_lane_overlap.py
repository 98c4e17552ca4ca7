"""benchmarks/studies/lane_overlap.py: the passages several questions' first rounds share (no model here)."""

from __future__ import annotations

from benchmarks.studies.lane_overlap import overlap


def test_shared_passages_are_counted_once() -> None:
    assert overlap([{1, 2, 3}, {3, 4}, {5}]) == (6, 5)
    assert overlap([{1, 2}, {1, 2}]) == (4, 2)
    assert overlap([]) == (0, 0)
