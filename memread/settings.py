"""Every knob that shapes a read, declared and validated once.

:class:`Settings` holds what every strategy understands (chunk and memory sizes, sampling, the final prompt,
the layout); a strategy's own knobs (gated's exit gate, callback's recall source, ...) live in
``Settings.options`` and are declared by the strategy itself (:attr:`memread.strategies.Strategy.Options`),
which checks them when the strategy is created (:func:`memread.strategies.check_settings`).

Dependency-free, so the CLI can show the defaults in ``--help`` without importing the loop.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from memread.errors import UsageError

# The default for a model not trained for a strategy (one trained for one reads with it): chosen by the rule
# written before its cells were measured, paired against overwrite (benchmarks/results/goal-35-check.md)
STRATEGY = "evidence"
CHUNK_TOKENS = 5000  # the papers' chunk size
MEMORY_TOKENS = 1024  # the papers' memory cap (generation limit of a memory update)
FINAL_TOKENS = 1024  # generation limit of the final answer
TEMPERATURE = 0.0
TOP_P = 1.0
SEED = 1
FINAL_PROMPT = "boxed"
FINAL_PROMPTS = ("boxed", "therefore")
# The final reply is begun with this text for the model to continue (on backends that can), so the answer is
# boxed: Qwen2.5-Coder-1.5B answered short questions bare ("Laura Osnes") in a quarter of the samples, whatever
# the prompt said (benchmarks/results/answer-start.md). None in Settings: this for the boxed final prompt,
# nothing for "therefore".
ANSWER_START = "\\boxed{"
LAYOUT = "question-first"
LAYOUTS = ("question-first", "chunk-first")
CHUNK_FIRST = "chunk-first"


def _derived_answer_start(final_prompt: str) -> str:
    """The begun final reply a final prompt gets when none is chosen."""
    return ANSWER_START if final_prompt == "boxed" else ""


def default_layout(questions: int, trained: bool) -> str:
    """The layout ``memread ask`` reads with when none is given: the papers' order for one question (nothing to
    share) and for a model trained for a strategy (the order it was trained on); the chunk first when several
    questions are asked of an untrained model, so they share each chunk's prefill: on RULER-HotpotQA it cost no
    answers against the papers' order, within the margin set before the reads (benchmarks/results/layout-default.md)."""
    return CHUNK_FIRST if questions > 1 and not trained else LAYOUT


def read_limit(max_read: float, chunks: int) -> int:
    """The chunks a run reads at most when it may read the share ``max_read`` of ``chunks`` (at least one): the
    evidence strategy's budget, and what the live view's ETA counts to."""
    return max(1, math.ceil(max_read * chunks))


def check_choice(what: str, value: str, choices: tuple[str, ...]) -> None:
    """UsageError naming the choices when ``value`` is not one of them."""
    if value not in choices:
        raise UsageError(f"unknown {what} {value!r}", hint=f"choose one of: {', '.join(choices)}")


@dataclass(frozen=True)
class Settings:
    """What shapes a run (recorded in the trace header and compared on resume).

    ``options`` are the strategy's own settings by name; the strategy fills in its defaults and refuses
    names it does not know when it is created (:func:`memread.strategies.check_settings`).
    """

    strategy: str = STRATEGY
    # Chunk budget; None: the strategy's own (the papers': 5,000), filled in when the strategy takes the settings.
    chunk_tokens: int | None = None
    memory_tokens: int = MEMORY_TOKENS  # memory cap = generation cap of a memory step (MemAgent: 1,024)
    # Generation cap of a memory step; None: the strategy's own (most: memory_tokens).
    reply_tokens: int | None = None
    temperature: float = TEMPERATURE  # MemAgent sampled at 0.7 / 0.95
    top_p: float = TOP_P
    seed: int | None = SEED
    final_prompt: str = FINAL_PROMPT  # "boxed" | "therefore"
    final_tokens: int = FINAL_TOKENS
    # The final reply begins with this (None: ANSWER_START for the boxed final prompt, "" for "therefore");
    # "" lets the model begin it (a model that thinks first, <think>, needs that).
    answer_start: str | None = None
    layout: str = LAYOUT  # "question-first" (papers) | "chunk-first" (prefix-cache sharing)
    system: str | None = None  # a system message; None sends user messages only, as the papers did
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.strategy, str) or not self.strategy:
            raise UsageError("no strategy named", hint="pass --strategy, e.g. overwrite")
        check_choice("final prompt", self.final_prompt, FINAL_PROMPTS)
        if self.answer_start is None:  # recorded as what it is, so traces and benchmark configs say it
            object.__setattr__(self, "answer_start", _derived_answer_start(self.final_prompt))
        check_choice("layout", self.layout, LAYOUTS)
        for name in ("chunk_tokens", "memory_tokens", "final_tokens"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise UsageError(f"{name.replace('_', '-')} must be at least 1",
                                 hint=f"pass a positive --{name.replace('_', '-')}")
        if self.reply_tokens is not None and self.reply_tokens < 1:
            raise UsageError("reply-tokens must be at least 1", hint="pass a positive --reply-tokens")
        # Every engine memread drives agrees on these ranges; vLLM refuses top_p 0 only after the model has
        # loaded, llama.cpp would sample from an empty nucleus: refused here, before anything starts.
        if not 0 <= self.temperature <= 2:  # vLLM and the OpenAI API take [0, 2]; NaN fails too
            raise UsageError(f"temperature must be from 0 to 2, not {self.temperature}",
                             hint="use --temperature 0 for greedy decoding")
        if not 0 < self.top_p <= 1:
            raise UsageError(f"top-p must be above 0 and at most 1, not {self.top_p}",
                             hint="use --top-p 1 to sample from the whole distribution")
        object.__setattr__(self, "options", dict(self.options))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Settings:
        """Settings as :meth:`to_dict` wrote them. Keys that are not settings are taken as the strategy's
        options (traces written before the options had their own place kept them beside the others)."""
        names = {f.name for f in fields(cls)}
        known = {key: value for key, value in data.items() if key in names}
        extra = {key: value for key, value in data.items() if key not in names}
        if extra:
            known["options"] = {**extra, **dict(known.get("options") or {})}
        return cls(**known)

    def replace(self, **changes: Any) -> Settings:
        """These settings with ``changes``. A new ``final_prompt`` without an ``answer_start`` re-derives the
        begun text when it was the one derived from the old prompt (a begun ``\\boxed{`` does not outlive the
        boxed prompt); one the caller chose is kept."""
        if ("final_prompt" in changes and "answer_start" not in changes
                and self.answer_start == _derived_answer_start(self.final_prompt)):
            changes["answer_start"] = None
        return replace(self, **changes)


def parse_option(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` from ``--option`` (names with ``-`` or ``_``), for a strategy's own settings."""
    name, sep, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or not name:
        raise UsageError(f"--option takes NAME=VALUE, not {text!r}", hint="e.g. --option max_read=0.3")
    return name, value.strip()
