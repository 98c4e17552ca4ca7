"""Memory strategies, looked up by name: overwrite (MemAgent), gated (GRU-Mem), callback (ReMemR1).

Adding a strategy is one line in :data:`_STRATEGIES` (or :func:`register_strategy` from a plugin): a
:class:`~memread.strategies.base.Strategy` subclass, constructed as ``cls(settings, tokenizer,
engine_names_stops=...)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memread.errors import UsageError
from memread.strategies.base import BudgetItem, State, StepPlan, StepResult, Strategy
from memread.strategies.callback import CallbackStrategy
from memread.strategies.gated import GatedStrategy
from memread.strategies.overwrite import OverwriteStrategy
from memread.tokens import Tokenizer

if TYPE_CHECKING:
    from memread.loop import LoopSettings

__all__ = [
    "BudgetItem",
    "CallbackStrategy",
    "GatedStrategy",
    "OverwriteStrategy",
    "State",
    "StepPlan",
    "StepResult",
    "Strategy",
    "create_strategy",
    "register_strategy",
    "strategy_names",
]

_STRATEGIES: dict[str, type[Strategy]] = {
    "overwrite": OverwriteStrategy,
    "gated": GatedStrategy,
    "callback": CallbackStrategy,
}


def register_strategy(name: str, cls: type[Strategy]) -> None:
    """Make ``name`` available to :func:`create_strategy`."""
    _STRATEGIES[name] = cls


def strategy_names() -> list[str]:
    return list(_STRATEGIES)


def create_strategy(settings: LoopSettings, tokenizer: Tokenizer | None = None, *,
                    engine_names_stops: bool = False) -> Strategy:
    """The strategy named by ``settings.strategy``; UsageError for an unknown name."""
    cls = _STRATEGIES.get(settings.strategy)
    if cls is None:
        raise UsageError(f"unknown strategy {settings.strategy!r}",
                         hint=f"choose one of: {', '.join(_STRATEGIES)}")
    return cls(settings, tokenizer, engine_names_stops=engine_names_stops)
