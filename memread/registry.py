"""Parts looked up by name and imported only when chosen: the one registry behind backends and strategies,
and the one ``"module:attribute"`` resolver that they and the plugins use."""

from __future__ import annotations

import importlib
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def import_target(spec: str) -> Any:
    """Import what ``"module:attribute"`` names: a dotted attribute path is allowed, and a trailing
    ``[extra]`` (entry-point syntax) is pip's business and ignored. Import errors propagate."""
    module_name, _, attribute = spec.partition(":")
    obj: Any = importlib.import_module(module_name.strip())
    for part in filter(None, attribute.split("[")[0].strip().split(".")):
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Names mapped to an object, or to ``"module:attribute"`` imported on first use; each name remembers
    the plugin distribution that registered it (``origin``), for error messages."""

    def __init__(self, kind: str, entries: dict[str, str | T]) -> None:
        self.kind = kind
        self._entries: dict[str, str | T] = dict(entries)
        self._origins: dict[str, str] = {}

    def register(self, name: str, target: str | T, *, replace: bool = False, origin: str | None = None) -> None:
        """ValueError if ``name`` is taken, unless ``replace``."""
        if name in self._entries and not replace:
            raise ValueError(f"a {self.kind} named {name!r} is already registered")
        self._entries[name] = target
        if origin:
            self._origins[name] = origin
        else:
            self._origins.pop(name, None)

    def names(self) -> list[str]:
        """In registration order: the built-ins first."""
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def origin(self, name: str) -> str | None:
        """The plugin distribution that registered ``name``; None for a built-in."""
        return self._origins.get(name)

    def target(self, name: str) -> str | T:
        """What ``name`` maps to, unimported (KeyError if unknown)."""
        return self._entries[name]

    def resolve(self, name: str) -> Any:
        """The object ``name`` maps to, importing it if it is a ``"module:attribute"`` string (KeyError if
        unknown; whatever the import raises propagates, for the caller to explain)."""
        target = self._entries[name]
        return import_target(target) if isinstance(target, str) else target

    def snapshot(self) -> tuple[dict[str, str | T], dict[str, str]]:
        """The entries as they are now, for :meth:`restore` (tests: memread.testing)."""
        return dict(self._entries), dict(self._origins)

    def restore(self, snapshot: tuple[dict[str, str | T], dict[str, str]]) -> None:
        entries, origins = snapshot
        self._entries, self._origins = dict(entries), dict(origins)
