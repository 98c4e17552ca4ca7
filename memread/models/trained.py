"""The strategy a model was trained for, when it says or its name does: the default strategy for that model.

A policy trained with RL reads well only the way it was trained (its prompts, its memory, its gates), so a
user who points ``--model`` at one and gives no ``--strategy`` gets the strategy it was trained for, not the one
chosen for untrained models. Two ways a model says so:

* a folder written by ``memread train export`` holds ``memread-train.json``, whose ``strategy`` names it;
* the papers' released checkpoints are known by name (``BytedTsinghua-SIA/RL-MemoryAgent-14B`` reads with
  ``overwrite``, a ReMemR1 checkpoint with ``callback``, a GRU-Mem one with ``gated``).

Anything else (the built-in GGUF models, a model of the user's own) is untrained for memory: None.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

TRAIN_RECORD = "memread-train.json"  # written by `memread train export` beside the weights

# Released checkpoints of the three papers, by a part of their name (case-insensitive).
_BY_NAME = (
    (re.compile(r"rl[-_]?memory[-_]?agent|memagent", re.IGNORECASE), "overwrite"),
    (re.compile(r"rememr1", re.IGNORECASE), "callback"),
    (re.compile(r"gru[-_]?mem", re.IGNORECASE), "gated"),
)


def trained_strategy(model: str | None) -> tuple[str, str] | None:
    """``(strategy, why)`` for a model trained for a strategy, else None. ``model`` is what ``--model`` was
    given: a registry name, a file, a folder, or a server's model name."""
    if not model:
        return None
    record = _record(model)
    if record is not None:
        strategy = record.get("strategy")
        if isinstance(strategy, str) and strategy:
            return strategy, f"{Path(model) / TRAIN_RECORD} says it was trained for it"
    for pattern, strategy in _BY_NAME:
        if pattern.search(Path(model).name or model):
            return strategy, "the model's name is a checkpoint trained for it"
    return None


def _record(model: str) -> dict[str, object] | None:
    path = Path(model).expanduser() / TRAIN_RECORD
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # not a folder, no record, or not JSON: say nothing rather than fail a read
        return None
    return content if isinstance(content, dict) else None
