"""Inference backends, looked up by name through a registry that plugins can extend.

A registry entry maps a name to ``"module:function"``; the module is imported only when that backend is
created, so importing memread never imports llama_cpp, vLLM or httpx. The factory is called as
``factory(model=..., **options)`` and returns a :class:`Backend`.

Adding a backend is one line in :data:`_BACKENDS`, or an entry point in the ``memread.backends.v1`` group
(``name = "module:factory"``), which :mod:`memread.plugins` hands to :func:`register_backend` the first time
the backends are asked for; the plugin's module, too, is imported only when its backend is created.
Options a backend does not use must be None (or absent); a backend rejects any other option with a
UsageError naming it, so ``--base-url`` with the llama.cpp backend is an error, not silently ignored.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from memread.backends.base import Backend, Capabilities, ChatRequest, Completion, Message, capabilities
from memread.errors import UsageError
from memread.registry import Registry

__all__ = [
    "DEFAULT_BACKEND",
    "Backend",
    "Capabilities",
    "ChatRequest",
    "Completion",
    "Message",
    "backend_capabilities",
    "backend_names",
    "capabilities",
    "create_backend",
    "default_backend",
    "register_backend",
]

DEFAULT_BACKEND = "llamacpp"

BackendFactory = Callable[..., Backend]

_BACKENDS: Registry[BackendFactory] = Registry("backend", {
    "llamacpp": "memread.backends.llamacpp:create",
    "openai": "memread.backends.openai_http:create",
    "vllm": "memread.backends.vllm:create",
})


def register_backend(
    name: str, factory: str | BackendFactory, *, replace: bool = False, origin: str | None = None
) -> None:
    """Make ``name`` available to :func:`create_backend`: ``factory`` is ``"module:function"`` (imported
    lazily) or a callable ``factory(model=..., **options) -> Backend``. ``origin`` names the plugin
    distribution, for error messages. ValueError if the name is taken, unless ``replace``."""
    _BACKENDS.register(name, factory, replace=replace, origin=origin)


def backend_names() -> list[str]:
    """The registered backend names, the default first, plugins' last."""
    _load_plugins()
    return _BACKENDS.names()


def _load_plugins() -> None:
    from memread import plugins

    plugins.load("backends", _register_plugin)


def _register_plugin(plugin: Any) -> str:
    from memread import plugins

    register_backend(plugin.name, plugin.target, origin=plugin.distribution)
    return plugins.REGISTERED


def validate_plugin(plugin: Any, obj: Any) -> str | None:
    """Why the object a ``memread.backends.v1`` entry point names is not a backend factory (None: it is one)."""
    return None if callable(obj) else f"{plugin.value} is not callable (a backend factory)"


def default_backend() -> str:
    """``MEMREAD_BACKEND``, else :data:`DEFAULT_BACKEND`."""
    return os.environ.get("MEMREAD_BACKEND") or DEFAULT_BACKEND


def create_backend(name: str | None = None, *, model: str | None = None, **options: Any) -> Backend:
    """Create backend ``name`` (None: :func:`default_backend`) for ``model`` (a registry name, a GGUF path,
    or a server's model id; None: the backend's default).

    Options understood by the llama.cpp backend: ``n_ctx`` (alias ``context_length``), ``n_threads``,
    ``seed``, ``chat_format``, ``n_batch``, ``flash_attn``, ``pull``, ``progress`` (see
    :func:`memread.backends.llamacpp.create`). Raises UsageError for an unknown name or option and
    BackendError when the backend cannot start.
    """
    name = name or default_backend()
    _load_plugins()
    if name not in _BACKENDS:
        raise UsageError(f"unknown backend {name!r}", hint=f"choose one of: {', '.join(_BACKENDS.names())}")
    return _load(name)(model=model, **options)


def backend_capabilities(name: str | None = None) -> Capabilities:
    """What backend ``name`` (None: the default) can do, as its factory declares (``factory.capabilities``),
    before it is created. Imports the backend's module."""
    name = name or default_backend()
    _load_plugins()
    if name not in _BACKENDS:
        raise UsageError(f"unknown backend {name!r}", hint=f"choose one of: {', '.join(_BACKENDS.names())}")
    declared = getattr(_load(name), "capabilities", None)
    return declared if isinstance(declared, Capabilities) else Capabilities()


def _load(name: str) -> BackendFactory:
    from memread.errors import BackendError

    origin = _BACKENDS.origin(name)
    try:
        factory: BackendFactory = _BACKENDS.resolve(name)
    except ImportError as error:
        raise BackendError(
            f"the {name} backend cannot be loaded: {error}",
            hint=f"install the Python package it needs (missing module: {error.name or 'unknown'})",
        ) from None
    except Exception as error:  # a plugin's module can fail in any way
        if origin is None:
            raise
        from memread.plugins import describe

        raise BackendError(
            f"the {name} backend (plugin {origin}) cannot be loaded: {describe(error)}",
            hint=f"reinstall or update {origin}; `memread plugins` shows what is installed",
        ) from None
    return factory
