"""Memory strategies, looked up by name: overwrite (MemAgent), gated (GRU-Mem), callback (ReMemR1).

Adding a strategy is one line in :data:`_STRATEGIES`, or an entry point in the ``memread.strategies.v1`` group
(``name = "module:Class"``), which :mod:`memread.plugins` hands to :func:`register_strategy` the first time the
strategies are asked for (the module is imported when the strategy is chosen). Either way it is a
:class:`~memread.strategies.base.Strategy` subclass, constructed as ``cls(settings, tokenizer,
engine_names_stops=...)``.
"""

from __future__ import annotations

import importlib
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

_STRATEGIES: dict[str, str | type[Strategy]] = {
    "overwrite": OverwriteStrategy,
    "gated": GatedStrategy,
    "callback": CallbackStrategy,
}
_ORIGINS: dict[str, str] = {}  # strategy name -> the plugin distribution that registered it


def register_strategy(
    name: str, cls: str | type[Strategy], *, replace: bool = False, origin: str | None = None
) -> None:
    """Make ``name`` available to :func:`create_strategy`: a Strategy subclass or ``"module:Class"`` (imported
    when chosen). ``origin`` names the plugin distribution. ValueError if the name is taken, unless ``replace``."""
    if name in _STRATEGIES and not replace:
        raise ValueError(f"a strategy named {name!r} is already registered")
    _STRATEGIES[name] = cls
    if origin:
        _ORIGINS[name] = origin
    else:
        _ORIGINS.pop(name, None)


def strategy_names() -> list[str]:
    """The registered strategy names: the built-ins, then plugins'."""
    from memread import plugins

    plugins.load("strategies")
    return list(_STRATEGIES)


def create_strategy(settings: LoopSettings, tokenizer: Tokenizer | None = None, *,
                    engine_names_stops: bool = False) -> Strategy:
    """The strategy named by ``settings.strategy``; UsageError for an unknown name."""
    names = strategy_names()
    target = _STRATEGIES.get(settings.strategy)
    if target is None:
        raise UsageError(f"unknown strategy {settings.strategy!r}", hint=f"choose one of: {', '.join(names)}")
    cls = _load(settings.strategy, target) if isinstance(target, str) else target
    return cls(settings, tokenizer, engine_names_stops=engine_names_stops)


def _load(name: str, target: str) -> type[Strategy]:
    module_name, _, attribute = target.partition(":")
    origin = _ORIGINS.get(name, "a plugin")
    try:
        cls: object = getattr(importlib.import_module(module_name), attribute)
    except Exception as error:  # a plugin's module can fail in any way
        from memread.plugins import describe

        raise UsageError(
            f"the {name} strategy ({origin}) cannot be loaded: {describe(error)}",
            hint=f"reinstall or update {origin}, or choose another --strategy; `memread plugins` lists them",
        ) from None
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        raise UsageError(
            f"the {name} strategy ({origin}) is not a memread Strategy subclass ({target})",
            hint=f"report it to the authors of {origin}; choose another --strategy meanwhile",
        )
    return cls
