"""What a memory strategy is: it builds the prompt for a step and interprets the model's reply.

A strategy never calls the model, prints or writes files. The :class:`~memread.loop.Loop` asks it for a
:class:`StepPlan` per lane, sends the batch to the backend, and hands each completion back to
:meth:`Strategy.read_reply`, which returns a :class:`StepResult` with the lane's new state.

A strategy is one module: besides reading, it says what the rest of memread asks of it —

* ``name``, ``label`` (the paper or idea it implements) and ``summary`` (one line for help texts);
* ``Options``: a frozen dataclass of its own settings (``Settings.options``), with defaults and, in each
  field's metadata, ``help`` and optionally ``choices`` / ``min``; :meth:`parse_options` checks them;
* :meth:`templates`: the prompts it sends, with holes, for the trace header;
* in every :class:`StepResult`: its decisions (``decisions``, JSON-able, recorded in the trace) and one line
  describing the step for the live view and ``memread traces show`` (``summary``).

A lane's state is a JSON-able dict (it is recorded in ``StepFinished.state`` and is what a resumed run
restarts from); every strategy keeps at least ``{"memory": str}``. Resources shared by all lanes and
rebuildable from the text (the callback strategy's index of chunks already read) live on the strategy
object and are fed through :meth:`Strategy.observe_chunk`.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from memread import prompts
from memread.backends.base import Completion
from memread.document import Chunk
from memread.errors import UsageError
from memread.settings import Settings
from memread.tokens import Tokenizer

State = dict[str, Any]


@dataclass(frozen=True)
class StepPlan:
    """What to send for one lane: the user message, the generation cap and stop strings."""

    prompt: str
    max_tokens: int
    stop: tuple[str, ...] = ()
    # The reply begins with this ("\\boxed{"), on a backend that continues replies (the loop drops it elsewhere).
    reply_start: str = ""


@dataclass(frozen=True)
class BudgetItem:
    """One kind of prompt a run sends, for the budget check: the prompt with its variable parts empty,
    the most tokens those parts can add, and the generation cap."""

    what: str  # "step" | "final"
    prompt: str
    variable_tokens: int
    max_tokens: int


@dataclass(frozen=True)
class StepResult:
    """How one reply changed one lane.

    ``exit`` stops the lane's reading (``exit_reason`` says why, e.g. "exit-gate"). ``decisions`` are the
    strategy's own (gated: ``update`` and ``next``; callback: ``recall_query``, ``recalled``), JSON-able;
    ``summary`` describes the step in a few words for people (empty: the loop asks :meth:`Strategy.describe`).
    ``steps_left``: the steps the lane reads at most after this one, when the strategy knows a bound below the
    rest of the document (evidence: its rounds of passages); None: to the end of the document, in order.
    """

    state: State
    memory: str
    memory_changed: bool
    truncated: bool
    exit: bool = False
    exit_reason: str = "exit-gate"
    decisions: Mapping[str, Any] = field(default_factory=dict)
    summary: str = ""
    parse_issues: tuple[str, ...] = ()
    steps_left: int | None = None

    # The decisions the built-in strategies make, by name (None when this strategy makes no such decision).
    @property
    def update(self) -> bool | None:
        value = self.decisions.get("update")
        return None if value is None else bool(value)

    @property
    def recall_query(self) -> str | None:
        return self.decisions.get("recall_query")

    @property
    def recalled(self) -> str | None:
        return self.decisions.get("recalled")

    @property
    def stopped_early(self) -> bool:
        return bool(self.decisions.get("stopped_early", False))


@dataclass(frozen=True)
class ReadChoice:
    """The next step of a strategy that chooses its reading order: ``chunk``, read by ``lanes``, and why."""

    chunk: Chunk
    lanes: tuple[int, ...]
    reason: str = ""


@dataclass(frozen=True)
class NoOptions:
    """A strategy without settings of its own."""


class Strategy(ABC):
    """Base of every strategy. Subclasses set ``name`` (and usually ``label``, ``summary``, ``Options``)."""

    name: ClassVar[str]
    label: ClassVar[str] = ""  # the paper or idea, shown as "name (label)"
    summary: ClassVar[str] = ""  # one line for help texts and `memread plugins`
    Options: ClassVar[type[Any]] = NoOptions
    # False: every lane reads every chunk in document order, as the papers do. True: the loop hands the strategy
    # the whole document first (index) and asks it, step by step, which chunk to read next (next_read).
    chooses_order: ClassVar[bool] = False
    # Tokens of document per step when --chunk-tokens is not given (the papers read 5,000 at a time).
    default_chunk_tokens: ClassVar[int] = 5000
    # The options that make it answer from the whole document ("how many …", "list every …"): what `--all`
    # sets. Empty: it reads every chunk already (overwrite, callback).
    whole_document: ClassVar[dict[str, Any]] = {}

    def __init__(self, settings: Settings, tokenizer: Tokenizer | None = None, *,
                 engine_names_stops: bool = False) -> None:
        self.settings = settings
        self.options = self.parse_options(settings.options)
        self.tokenizer = tokenizer
        # True when the backend always reports which stop string fired (Completion.stop_reason).
        self.engine_names_stops = engine_names_stops

    # --- what the rest of memread asks of a strategy ---------------------------------------------------------

    @classmethod
    def title(cls) -> str:
        """``name (label)``, as tables and the view show the strategy."""
        return f"{cls.name} ({cls.label})" if cls.label else cls.name

    @classmethod
    def option_fields(cls) -> tuple[dataclasses.Field[Any], ...]:
        return dataclasses.fields(cls.Options)

    @classmethod
    def parse_options(cls, raw: Mapping[str, Any]) -> Any:
        """This strategy's :attr:`Options` from ``raw`` (values may be text, as ``--option`` gives them);
        UsageError for a name it does not take or a value out of range."""
        known = {f.name: f for f in cls.option_fields()}
        hints = typing.get_type_hints(cls.Options)
        values: dict[str, Any] = {}
        for name, value in raw.items():
            if name not in known:
                takes = ", ".join(known) if known else "none"
                raise UsageError(f"the {cls.name} strategy has no option {name.replace('_', '-')!r}",
                                 hint=f"its options: {takes}; other strategies may take it (--strategy)")
            values[name] = _coerce(cls.name, known[name], hints[name], value)
        return cls.Options(**values)

    def options_dict(self) -> dict[str, Any]:
        """Every option with its value (defaults included), as recorded in the trace."""
        return dataclasses.asdict(self.options)

    def templates(self) -> dict[str, str]:
        """The prompts this strategy sends, with ``{prompt}``, ``{memory}``, ``{chunk}``... holes, for the trace
        header (so a trace says exactly what was sent)."""
        return {"memory": self.memory_prompt("{prompt}", "{memory}", "{chunk}"),
                "final": prompts.final_prompt("{prompt}", "{memory}", style=self.settings.final_prompt)}

    def describe(self, result: StepResult) -> str:
        """A few words on what one step did, for the live view and ``memread traces show``."""
        parts = ["rewritten" if result.memory_changed else "unchanged"]
        if result.exit:
            parts.append(f"stopped ({result.exit_reason})")
        return " · ".join(parts)

    # --- per lane -------------------------------------------------------------------------------------

    def initial_state(self) -> State:
        """A lane's state before its first chunk."""
        return {"memory": prompts.NO_MEMORY}

    def memory(self, state: State) -> str:
        return str(state.get("memory", prompts.NO_MEMORY))

    @abstractmethod
    def plan_step(self, lane: int, question: str, state: State, chunk: Chunk) -> StepPlan:
        """The request for reading ``chunk``."""

    @abstractmethod
    def read_reply(self, lane: int, question: str, state: State, chunk: Chunk,
                   completion: Completion) -> StepResult:
        """Apply the model's reply to ``state`` (which is not modified; the new state is returned)."""

    def plan_final(self, lane: int, question: str, state: State) -> StepPlan:
        """The request for the final answer from the lane's memory."""
        prompt = prompts.final_prompt(question, self.memory(state), style=self.settings.final_prompt)
        return StepPlan(prompt, self.settings.final_tokens)

    def answered_in_code(self, lane: int, question: str, state: State) -> str | None:
        """The lane's answer when the strategy gives it without a final reply, which it would not read (None:
        the model is asked). The papers' strategies always ask."""
        return None

    def settle(self, lane: int, question: str, state: State, answer: str, boxed: bool) -> tuple[str, bool]:
        """The answer to show for the final reply's extracted ``answer`` (``boxed``: whether one was extracted):
        as it is, unless the strategy checks it against what it read (the papers' strategies do not)."""
        return answer, boxed

    @property
    def chunk_tokens(self) -> int:
        """The chunk budget of this run: ``--chunk-tokens``, else the strategy's default."""
        return self.settings.chunk_tokens or self.default_chunk_tokens

    @property
    def reply_tokens(self) -> int:
        """The generation cap of a memory step: ``reply_tokens`` if set, else ``memory_tokens``. The memory
        is the reply or a part of it, so it is never longer; that is what bounds the prompt."""
        return self.settings.reply_tokens or self.settings.memory_tokens

    def memory_prompt(self, question: str, memory: str, chunk: str) -> str:
        """The step prompt of a strategy whose prompt holds only question, memory and chunk (overwrite,
        gated); a strategy with more in its prompt overrides :meth:`budget` and :meth:`templates` instead."""
        raise NotImplementedError(f"{type(self).__name__} builds its step prompt otherwise")

    def budget(self, question: str) -> list[BudgetItem]:
        """The largest prompts this strategy can send for ``question``, for the loop's budget check: the
        prompts with their variable parts empty, and how many tokens those parts can add."""
        s = self.settings
        return [
            BudgetItem("step", self.memory_prompt(question, "", ""), self.reply_tokens + self.chunk_tokens,
                       self.reply_tokens),
            BudgetItem("final", prompts.final_prompt(question, "", style=s.final_prompt),
                       self.reply_tokens, s.final_tokens),
        ]

    # --- choosing the reading order (chooses_order = True) -----------------------------------------------

    def observe_document(self, document: Any) -> None:  # noqa: B027 - optional hook
        """Called with the :class:`~memread.document.Document` before the run (its outline, the headings its own
        structure declares, is complete once its chunks have been read)."""

    def index(self, chunks: Iterable[Chunk]) -> None:
        """Take in every chunk of the document before the first step (a resumed run calls it again)."""
        raise NotImplementedError(f"{type(self).__name__} reads in document order")

    def next_read(self, states: Mapping[int, State], questions: Sequence[str]) -> ReadChoice | None:
        """The next chunk and the lanes that read it, from the reading lanes' states (``states``, by lane) and
        the questions (by lane) alone, so a resumed run chooses as the uninterrupted one did; None when none of
        them has anything left to read."""
        raise NotImplementedError(f"{type(self).__name__} reads in document order")

    # --- shared ---------------------------------------------------------------------------------------

    def observe_chunk(self, chunk: Chunk) -> None:  # noqa: B027 - optional hook
        """Called once per chunk after every lane has read it (and, on resume, for each skipped chunk)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release shared resources (temporary indexes)."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_KINDS = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}  # as errors name them


def _coerce(strategy: str, spec: dataclasses.Field[Any], kind: Any, value: Any) -> Any:
    """``value`` as the option's type (a float must be finite), checked against its ``choices`` / ``min`` / ``max``
    metadata."""
    name = spec.name.replace("_", "-")
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    base = args[0] if args and typing.get_origin(kind) is not None else kind
    if value is None and type(None) in typing.get_args(kind):
        return None
    given = value
    try:
        if base is bool:
            if isinstance(value, str):
                if value.lower() not in _TRUE | _FALSE:
                    raise ValueError(value)
                value = value.lower() in _TRUE
            value = bool(value)
        elif base is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            value = int(value)
        elif base is float:
            # float() reads "nan" and "inf", which pass every range check (NaN compares false) and then break
            # the arithmetic a strategy does with them (math.ceil(nan)) or silently mean "never".
            value = float(value)
            if not math.isfinite(value):
                raise ValueError(value)
        elif base is str:
            value = str(value)
    except (TypeError, ValueError):
        what = _KINDS.get(base, getattr(base, "__name__", str(base)))
        raise UsageError(f"the {strategy} option {name} takes {what}, not {given!r}",
                         hint=f"e.g. --option {spec.name}={_example(spec)}") from None
    choices = spec.metadata.get("choices")
    if choices and value not in choices:
        raise UsageError(f"the {strategy} option {name} must be one of {', '.join(map(str, choices))}, not {value!r}",
                         hint=f"--option {spec.name}={choices[0]}")
    low = spec.metadata.get("min")
    high = spec.metadata.get("max")
    if (low is not None and value < low) or (high is not None and value > high):
        span = f"from {low}" + (f" to {high}" if high is not None else " up")
        raise UsageError(f"the {strategy} option {name} must be {span}, not {value!r}",
                         hint=f"e.g. --option {spec.name}={_example(spec)}")
    return value


def _example(spec: dataclasses.Field[Any]) -> str:
    default = spec.default
    return str(default).lower() if isinstance(default, bool) else str(default)
