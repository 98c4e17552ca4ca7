"""What a memory strategy is: it builds the prompt for a step and interprets the model's reply.

A strategy never calls the model, prints or writes files. The :class:`~memread.loop.Loop` asks it for a
:class:`StepPlan` per lane, sends the batch to the backend, and hands each completion back to
:meth:`Strategy.read_reply`, which returns a :class:`StepResult` with the lane's new state.

A lane's state is a JSON-able dict (it is recorded in ``StepFinished.state`` and is what a resumed run
restarts from); every strategy keeps at least ``{"memory": str}``. Resources shared by all lanes and
rebuildable from the text (the callback strategy's index of chunks already read) live on the strategy
object and are fed through :meth:`Strategy.observe_chunk`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from memread import prompts
from memread.backends.base import Completion
from memread.document import Chunk
from memread.tokens import Tokenizer

if TYPE_CHECKING:
    from memread.loop import LoopSettings

State = dict[str, Any]


@dataclass(frozen=True)
class StepPlan:
    """What to send for one lane: the user message, the generation cap and stop strings."""

    prompt: str
    max_tokens: int
    stop: tuple[str, ...] = ()


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
    """How one reply changed one lane."""

    state: State
    memory: str
    memory_changed: bool
    truncated: bool
    update: bool | None = None
    exit: bool = False
    recall_query: str | None = None
    recalled: str | None = None
    parse_issues: tuple[str, ...] = ()
    stopped_early: bool = False


class Strategy(ABC):
    """Base of the overwrite, gated and callback strategies."""

    name: ClassVar[str]

    def __init__(self, settings: LoopSettings, tokenizer: Tokenizer | None = None, *,
                 engine_names_stops: bool = False) -> None:
        self.settings = settings
        self.tokenizer = tokenizer
        # True when the backend always reports which stop string fired (Completion.stop_reason).
        self.engine_names_stops = engine_names_stops

    # --- per lane -------------------------------------------------------------------------------------

    def initial_state(self) -> State:
        """A lane's state before its first chunk."""
        return {"memory": prompts.NO_MEMORY}

    def memory(self, state: State) -> str:
        return str(state.get("memory", prompts.NO_MEMORY))

    def recalled_shown(self, state: State) -> str | None:
        """The ``<recalled_memory>`` this lane's next prompt shows (callback only)."""
        return None

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

    @property
    def reply_tokens(self) -> int:
        """The generation cap of a memory step: ``reply_tokens`` if set, else ``memory_tokens``. The memory
        is the reply or a part of it, so it is never longer; that is what bounds the prompt."""
        return self.settings.reply_tokens or self.settings.memory_tokens

    def memory_prompt(self, question: str, memory: str, chunk: str) -> str:
        """The step prompt of a strategy whose prompt holds only question, memory and chunk (overwrite,
        gated); a strategy with more in its prompt overrides :meth:`budget` instead."""
        raise NotImplementedError(f"{type(self).__name__} builds its step prompt otherwise")

    def budget(self, question: str) -> list[BudgetItem]:
        """The largest prompts this strategy can send for ``question``, for the loop's budget check: the
        prompts with their variable parts empty, and how many tokens those parts can add."""
        s = self.settings
        return [
            BudgetItem("step", self.memory_prompt(question, "", ""), self.reply_tokens + s.chunk_tokens,
                       self.reply_tokens),
            BudgetItem("final", prompts.final_prompt(question, "", style=s.final_prompt),
                       self.reply_tokens, s.final_tokens),
        ]

    # --- shared ---------------------------------------------------------------------------------------

    def observe_chunk(self, chunk: Chunk) -> None:  # noqa: B027 - optional hook
        """Called once per chunk after every lane has read it (and, on resume, for each skipped chunk)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release shared resources (temporary indexes)."""
