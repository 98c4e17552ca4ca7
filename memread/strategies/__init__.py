"""Memory strategies, looked up by name: overwrite (MemAgent), gated (GRU-Mem), callback (ReMemR1).

A strategy is one module holding a :class:`~memread.strategies.base.Strategy` subclass, which says everything
the rest of memread asks of it (label, options, templates, how a step is described). A built-in is one line
in :data:`_STRATEGIES`; a plugin is an entry point in the ``memread.strategies.v1`` group
(``name = "module:Class"``), registered the first time the strategies are asked for and imported when chosen.
Either way it is constructed as ``cls(settings, tokenizer, engine_names_stops=...)``.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from memread.errors import UsageError
from memread.registry import Registry
from memread.settings import Settings
from memread.strategies.base import BudgetItem, ReadChoice, State, StepPlan, StepResult, Strategy
from memread.tokens import Tokenizer

__all__ = [
    "BudgetItem",
    "ReadChoice",
    "State",
    "StepPlan",
    "StepResult",
    "Strategy",
    "check_settings",
    "create_strategy",
    "register_strategy",
    "strategy_class",
    "strategy_origin",
    "strategy_names",
]

_STRATEGIES: Registry[type[Strategy]] = Registry("strategy", {
    "overwrite": "memread.strategies.overwrite:OverwriteStrategy",
    "gated": "memread.strategies.gated:GatedStrategy",
    "callback": "memread.strategies.callback:CallbackStrategy",
    "evidence": "memread.strategies.evidence:EvidenceStrategy",
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

    plugins.load("strategies", _register_plugin)
    return _STRATEGIES.names()


def strategy_origin(name: str) -> str | None:
    """The plugin distribution that registered ``name``; None for a built-in."""
    return _STRATEGIES.origin(name)


def strategy_class(name: str, *, flag: str = "--strategy") -> type[Strategy]:
    """The class registered as ``name``; UsageError (naming ``flag``) for an unknown name or a plugin that
    cannot load."""
    names = strategy_names()
    if name not in _STRATEGIES:
        raise UsageError(f"{flag}: unknown strategy {name!r}", hint=f"choose one of: {', '.join(names)}")
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


def check_settings(settings: Settings) -> Settings:
    """``settings`` with the strategy's options checked and completed with their defaults, and its chunk size
    when none was given (what a trace records); UsageError for an unknown strategy, option or value."""
    cls = strategy_class(settings.strategy)
    options = cls.parse_options(settings.options)
    return replace(settings, options=asdict(options), chunk_tokens=settings.chunk_tokens or cls.default_chunk_tokens)


def create_strategy(settings: Settings, tokenizer: Tokenizer | None = None, *,
                    engine_names_stops: bool = False) -> Strategy:
    """The strategy named by ``settings.strategy``; UsageError for an unknown name or option."""
    return strategy_class(settings.strategy)(settings, tokenizer, engine_names_stops=engine_names_stops)


def __getattr__(name: str) -> Any:
    """The built-in strategy classes, for plugins that build on one (``from memread.strategies import
    OverwriteStrategy``), imported when asked for."""
    for key in ("overwrite", "gated", "callback", "evidence"):
        target = _STRATEGIES.target(key)
        if isinstance(target, str) and target.endswith(":" + name):
            return _STRATEGIES.resolve(key)
    raise AttributeError(f"module 'memread.strategies' has no attribute {name!r}")


def validate_plugin(plugin: Any, obj: Any) -> str | None:
    """Why the object a ``memread.strategies.v1`` entry point names is not a strategy (None: it is one)."""
    if not (isinstance(obj, type) and issubclass(obj, Strategy)):
        return f"{plugin.value} is not a memread.strategies.Strategy subclass"
    return None


def _register_plugin(plugin: Any) -> str:
    from memread import plugins

    register_strategy(plugin.name, plugin.target, origin=plugin.distribution)
    return plugins.REGISTERED
