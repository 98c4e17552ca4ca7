"""Default settings, in one dependency-free place so the CLI can show them in --help without importing the
loop. The reading loop's ``LoopSettings`` takes its defaults from here too."""

from __future__ import annotations

STRATEGY = "overwrite"
STRATEGIES = ("overwrite", "gated", "callback")
CHUNK_TOKENS = 5000  # the papers' chunk size
MEMORY_TOKENS = 1024  # the papers' memory cap (generation limit of a memory update)
FINAL_TOKENS = 1024  # generation limit of the final answer
TEMPERATURE = 0.0
TOP_P = 1.0
SEED = 1
FINAL_PROMPT = "boxed"
FINAL_PROMPTS = ("boxed", "therefore")
RECALL_FROM = "memories"
RECALL_TOKENS = 512
LAYOUT = "question-first"
LAYOUTS = ("question-first", "chunk-first")
