"""Plugins: other packages extend memread through entry points, one versioned group per kind (httpie's style).

========================  =====================================================  ==============================
group                     the entry point names                                  registered with
========================  =====================================================  ==============================
``memread.loaders.v1``    a :class:`memread.ingest.Loader`                        :func:`~memread.ingest.register_loader`
``memread.backends.v1``   a factory ``factory(model=..., **options) -> Backend``  :func:`~memread.backends.register_backend`
``memread.strategies.v1`` a :class:`~memread.strategies.Strategy` subclass        :func:`~memread.strategies.register_strategy`
``memread.commands.v1``   a ``typer.Typer`` app, added as ``memread NAME``        the CLI (:mod:`memread.cli.app`)
========================  =====================================================  ==============================

The built-in loaders, backends and strategies go through the same ``register_*`` functions and lookups, so a
plugin is a peer of them: a plugin loader registered later is asked first and can claim an extension.

Plugins are loaded lazily, one kind at a time, the first time that kind is needed: opening a document loads
loader plugins (not backend plugins); backends and strategies are registered by their ``module:attribute``
and imported only when chosen, so a broken backend plugin only fails the run that asks for it. Listing plugin
commands reads entry-point metadata only; a command plugin's module is imported when that command runs.

``MEMREAD_PLUGINS`` is an allow-list: comma-separated distribution names (``memread-docx``) or entry-point
names (``docx``); unset means every installed plugin, an empty string means none (what the test suite uses).
A plugin that fails to load is reported once, as one warning line (see :func:`set_warning_handler`), and
skipped; it never stops a command that does not need it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

ENVIRONMENT_VARIABLE = "MEMREAD_PLUGINS"

#: extension kind -> entry-point group. A breaking change to a kind's API gets a new group (``.v2``).
GROUPS: dict[str, str] = {
    "loaders": "memread.loaders.v1",
    "backends": "memread.backends.v1",
    "strategies": "memread.strategies.v1",
    "commands": "memread.commands.v1",
}

LOADED = "loaded"
REGISTERED = "registered"  # backends and strategies: known by name, imported when chosen
FAILED = "failed"
DISABLED = "disabled"
NOT_LOADED = "not loaded"


class Plugin:
    """One entry point: what an installed distribution adds to memread.

    (A plain class rather than a dataclass: this module is imported by every ``memread`` run, TAB completions
    included, and building dataclasses costs more than the rest of the module.)
    """

    __slots__ = ("distribution", "kind", "name", "value", "version")

    def __init__(self, kind: str, name: str, value: str, distribution: str, version: str) -> None:
        self.kind = kind  # "loaders" | "backends" | "strategies" | "commands"
        self.name = name  # the entry point's name: the loader, backend, strategy or command name
        self.value = value  # "module:attribute"
        self.distribution = distribution  # the installed distribution's name, e.g. "memread-docx"
        self.version = version

    @property
    def target(self) -> str:
        """``module:attribute`` without an ``[extra]``: what the registries import when the plugin is chosen."""
        module_name, _, attribute = self.value.partition(":")
        return f"{module_name.strip()}:{attribute.split('[')[0].strip()}"

    def __repr__(self) -> str:
        return f"Plugin({self.kind!r}, {self.name!r}, {self.value!r}, {self.distribution!r}, {self.version!r})"


class _State:
    __slots__ = ("error", "status")

    def __init__(self, status: str = "not loaded", error: str | None = None) -> None:
        self.status = status
        self.error = error


_entry_points: list[Plugin] | None = None
_states: dict[tuple[str, str, str], _State] = {}
_loaded_kinds: set[str] = set()


def _default_warning(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


_warn: Callable[[str], None] = _default_warning


def set_warning_handler(handler: Callable[[str], None] | None) -> Callable[[str], None]:
    """Where "a plugin failed" warnings go (one line each, without the ``warning:`` prefix; None: stderr).
    Returns the previous handler."""
    global _warn
    previous, _warn = _warn, handler or _default_warning
    return previous


# -- discovery -----------------------------------------------------------------------------------------------


def installed(kind: str | None = None) -> list[Plugin]:
    """Every memread entry point of the installed distributions (of one ``kind``), allowed or not.

    Reads metadata only (entry_points.txt), never imports a plugin. Cached for the process.
    """
    global _entry_points
    if _entry_points is None:
        _entry_points = list(_discover())
    return [plugin for plugin in _entry_points if kind is None or plugin.kind == kind]


def _discover() -> Iterator[Plugin]:
    """The memread entry points of the distributions on ``sys.path``, as importlib.metadata would find them.

    Read by hand rather than with importlib.metadata, whose import (email, zipfile, csv: ~20 ms) ``memread
    --help`` and every TAB completion would pay to list plugin commands. The layout is the standard one pip,
    uv and editable installs write: ``*.dist-info`` (or ``*.egg-info``) folders holding ``entry_points.txt``.
    As with importlib.metadata, the first distribution of a name on ``sys.path`` wins.
    """
    seen: set[str] = set()
    kinds = {group: kind for kind, group in GROUPS.items()}
    for entry in sys.path:
        folder = entry or os.getcwd()
        try:
            names = sorted(os.listdir(folder))
        except OSError:  # a zip file or a missing folder: no plugin there
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            key = _normalise(name.rpartition(".")[0].split("-")[0])
            if key in seen:
                continue
            seen.add(key)
            info = os.path.join(folder, name)
            text = _read(os.path.join(info, "entry_points.txt"))
            if text is None or "memread." not in text:
                continue
            distribution, version = _name_and_version(info, name)
            for group, entry_name, value in _entry_lines(text):
                if group in kinds:
                    yield Plugin(kinds[group], entry_name, value, distribution, version)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError):
        return None


def _entry_lines(text: str) -> Iterator[tuple[str, str, str]]:
    """(group, name, value) of each entry in an ``entry_points.txt`` (INI-style: ``[group]``, ``name = value``)."""
    group = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            continue
        name, separator, value = line.partition("=")
        if separator and group:
            yield group, name.strip(), value.strip()


def _name_and_version(info: str, folder_name: str) -> tuple[str, str]:
    """``Name`` and ``Version`` from the headers of METADATA (PKG-INFO in an egg-info); else the folder name."""
    fallback = folder_name.rpartition(".")[0].split("-")
    name, version = fallback[0], fallback[1] if len(fallback) > 1 else ""
    text = _read(os.path.join(info, "METADATA")) or _read(os.path.join(info, "PKG-INFO")) or ""
    for line in text.splitlines():
        if not line.strip():
            break  # the end of the headers
        header, _, value = line.partition(":")
        if header == "Name":
            name = value.strip()
        elif header == "Version":
            version = value.strip()
    return name, version


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower().strip()


def allowed(plugin: Plugin, environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Whether ``MEMREAD_PLUGINS`` lets ``plugin`` load (unset: every plugin; empty: none)."""
    value = (os.environ if environ is None else environ).get(ENVIRONMENT_VARIABLE)
    if value is None:
        return True
    names = {_normalise(part) for part in value.split(",") if part.strip()}
    return _normalise(plugin.distribution) in names or _normalise(plugin.name) in names


# -- loading -------------------------------------------------------------------------------------------------


def load(kind: str, register: Callable[[Plugin], str]) -> None:
    """Register the allowed plugins of ``kind`` (once per process) through ``register``, which the registry of
    that kind passes (it returns the plugin's status: LOADED or REGISTERED). Failures are warned about and
    skipped. The registries call this; this module imports none of them."""
    if kind not in GROUPS:
        raise ValueError(f"unknown plugin kind {kind!r}; one of {', '.join(GROUPS)}")
    if kind in _loaded_kinds:
        return
    _loaded_kinds.add(kind)  # first, so a plugin that asks for loaders while loading does not recurse
    for plugin in installed(kind):
        if not allowed(plugin):
            _states[_key(plugin)] = _State(DISABLED)
            continue
        state = _states.setdefault(_key(plugin), _State())
        try:
            state.status = register(plugin)
        except Exception as error:  # a plugin can fail in any way; report it, never crash on it
            failed(plugin, error)


def import_object(plugin: Plugin) -> Any:
    """Import the object an entry point names (``module:attribute``, attribute path allowed)."""
    from memread.registry import import_target

    return import_target(plugin.value)


def check(plugin: Plugin, validate: Callable[[Plugin, Any], str | None]) -> str | None:
    """Import ``plugin`` and check what it provides with its kind's ``validate``, without registering it:
    None if fine, else the error. Used by ``memread plugins`` to report on backends and strategies, which
    normal runs import only when chosen."""
    try:
        obj = import_object(plugin)
    except Exception as error:  # a plugin can fail in any way; report it, never crash on it
        return describe(error)
    return validate(plugin, obj)


def describe(error: BaseException) -> str:
    """An exception as one short line: ``RuntimeError: boom``."""
    text = " ".join(str(error).split())
    if len(text) > 200:
        text = text[:199] + "…"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def failed(plugin: Plugin, error: BaseException | str, *, warn: bool = True) -> None:
    """Record that ``plugin`` failed and (unless ``warn=False``) warn once: one line naming it and the error."""
    state = _states.setdefault(_key(plugin), _State())
    message = error if isinstance(error, str) else describe(error)
    first = state.status != FAILED
    state.status, state.error = FAILED, message
    if first and warn:
        version = f" {plugin.version}" if plugin.version else ""
        _warn(
            f"plugin {plugin.distribution}{version} ({plugin.kind.rstrip('s')} {plugin.name!r}) failed to load "
            f"and is skipped: {message} (uninstall it, or list the plugins to load in {ENVIRONMENT_VARIABLE})"
        )


def mark_loaded(plugin: Plugin) -> None:
    _states.setdefault(_key(plugin), _State()).status = LOADED


def status(plugin: Plugin) -> tuple[str, str | None]:
    """(status, error) of ``plugin`` in this process: loaded, registered, failed, disabled or not loaded."""
    if not allowed(plugin):
        return DISABLED, None
    state = _states.get(_key(plugin))
    return (state.status, state.error) if state else (NOT_LOADED, None)


def _key(plugin: Plugin) -> tuple[str, str, str]:
    return (plugin.kind, plugin.name, plugin.distribution)


def _snapshot() -> tuple[list[Plugin] | None, dict[tuple[str, str, str], _State], set[str]]:
    return _entry_points, dict(_states), set(_loaded_kinds)


def _restore(saved: tuple[list[Plugin] | None, dict[tuple[str, str, str], _State], set[str]]) -> None:
    global _entry_points
    _entry_points = saved[0]
    _states.clear()
    _states.update(saved[1])
    _loaded_kinds.clear()
    _loaded_kinds.update(saved[2])


def _reset() -> None:
    """Forget discovered entry points and statuses (tests; registries are restored by the caller)."""
    global _entry_points
    _entry_points = None
    _states.clear()
    _loaded_kinds.clear()
