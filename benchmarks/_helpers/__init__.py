"""What the benchmark scripts share (private to benchmarks/): where things are, the haystack, result files and
the machine's arithmetic bound."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results"  # committed results
RUNS = BENCHMARKS / "runs"  # a run's working files (git-ignored)
CACHE = BENCHMARKS / "cache"  # downloads and generated inputs (git-ignored)
