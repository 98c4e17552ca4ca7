"""Memory strategies, looked up by name: overwrite (MemAgent), gated (GRU-Mem), callback (ReMemR1).

Adding a strategy is one line in :data:`_STRATEGIES`, or an entry point in the ``memread.strategies.v1`` group
(``name = "module:Class"``), which :mod:`memread.plugins` hands to :func:`register_strategy` the first time the
strategies are asked for (the module is imported when the strategy is chosen). Either way it is a
:class:`~memread.strategies.base.Strategy` subclass, constructed as ``cls(settings, tokenizer,
engine_names_stops=...)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memread.errors import UsageError
from memread.registry import Registry
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

_STRATEGIES: Registry[type[Strategy]] = Registry("strategy", {
    "overwrite": OverwriteStrategy,
    "gated": GatedStrategy,
    "callback": CallbackStrategy,
})


def register_strategy(
    name: str, cls: str | type[Strategy], *, replace: bool = False, origin: str | None = None
) -> None:
    """Make ``name`` available to :func:`create_strategy`: a Strategy subclass or ``"module:Class"`` (imported
    when chosen). ``origin`` names the plugin distribution. ValueError if the name is taken, unless ``replace``."""
    _STRATEGIES.register(name, cls, replace=replace, origin=origin)


def strategy_names() -> list[str]:
    """The registered strategy names: the built-ins, then plugins'."""
    from memread import plugins

    plugins.load("strategies")
    return _STRATEGIES.names()


def create_strategy(settings: LoopSettings, tokenizer: Tokenizer | None = None, *,
                    engine_names_stops: bool = False) -> Strategy:
    """The strategy named by ``settings.strategy``; UsageError for an unknown name."""
    names = strategy_names()
    if settings.strategy not in _STRATEGIES:
        raise UsageError(f"unknown strategy {settings.strategy!r}", hint=f"choose one of: {', '.join(names)}")
    cls = _load(settings.strategy)
    return cls(settings, tokenizer, engine_names_stops=engine_names_stops)


def _load(name: str) -> type[Strategy]:
    origin = _STRATEGIES.origin(name) or "a plugin"
    try:
        cls: object = _STRATEGIES.resolve(name)
    except Exception as error:  # a plugin's module can fail in any way
        from memread.plugins import describe

        raise UsageError(
            f"the {name} strategy ({origin}) cannot be loaded: {describe(error)}",
            hint=f"reinstall or update {origin}, or choose another --strategy; `memread plugins` lists them",
        ) from None
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        raise UsageError(
            f"the {name} strategy ({origin}) is not a memread Strategy subclass ({_STRATEGIES.target(name)})",
            hint=f"report it to the authors of {origin}; choose another --strategy meanwhile",
        )
    return cls
