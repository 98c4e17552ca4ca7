"""Inference backends, looked up by name through a registry that plugins can extend.

A registry entry maps a name to ``"module:function"``; the module is imported only when that backend is
created, so importing memread never imports llama_cpp, vLLM or httpx. The factory is called as
``factory(model=..., **options)`` and returns a :class:`Backend`.

Adding a backend is one line in :data:`_FACTORIES` (or :func:`register_backend` from a plugin).
Options a backend does not use must be None (or absent); a backend rejects any other option with a
UsageError naming it, so ``--base-url`` with the llama.cpp backend is an error, not silently ignored.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from memread.backends.base import Backend, ChatRequest, Completion, Message
from memread.errors import UsageError

__all__ = [
    "DEFAULT_BACKEND",
    "Backend",
    "ChatRequest",
    "Completion",
    "Message",
    "backend_names",
    "create_backend",
    "default_backend",
    "register_backend",
]

DEFAULT_BACKEND = "llamacpp"

BackendFactory = Callable[..., Backend]

_FACTORIES: dict[str, str | BackendFactory] = {
    "llamacpp": "memread.backends.llamacpp:create",
    "openai": "memread.backends.openai_http:create",
    "vllm": "memread.backends.vllm:create",
}


def register_backend(name: str, factory: str | BackendFactory) -> None:
    """Make ``name`` available to :func:`create_backend`: ``factory`` is ``"module:function"`` (imported
    lazily) or a callable ``factory(model=..., **options) -> Backend``."""
    _FACTORIES[name] = factory


def backend_names() -> list[str]:
    """The registered backend names, the default first."""
    return list(_FACTORIES)


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
    target = _FACTORIES.get(name)
    if target is None:
        raise UsageError(f"unknown backend {name!r}", hint=f"choose one of: {', '.join(_FACTORIES)}")
    factory = _load(name, target) if isinstance(target, str) else target
    return factory(model=model, **options)


def _load(name: str, target: str) -> BackendFactory:
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        from memread.errors import BackendError

        raise BackendError(
            f"the {name} backend cannot be loaded: {error}",
            hint=f"install the Python package it needs (missing module: {error.name or 'unknown'})",
        ) from None
    factory: BackendFactory = getattr(module, attribute)
    return factory
