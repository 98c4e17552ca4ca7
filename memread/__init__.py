"""memread: answer questions about documents far larger than a model's context window.

The library's face, as ``llm`` has ``llm.get_model()``::

    import memread

    backend = memread.create_backend(model="qwen2.5-coder-1.5b-q4_0")    # or backend="openai", base_url=...
    document = memread.open_source("book.pdf")                      # a path, a directory, or "-" with stdin=
    settings = memread.Settings(strategy="overwrite", chunk_tokens=5000)
    for result in memread.read(document, ["Who repaired the lamp?"], backend=backend, settings=settings):
        print(result.answer)

A resumable read with a trace, as ``memread ask`` does it: :class:`memread.Run` with a
:class:`memread.ReadRequest` (and :func:`memread.request_from_trace` to continue one after a crash).

The core library (everything outside ``memread.cli``) imports without Typer, Rich, llama_cpp or vLLM, and
``import memread`` imports none of the names below until they are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memread.version import __version__

__all__ = ["ReadRequest", "Run", "Settings", "__version__", "create_backend", "open_source", "read",
           "request_from_trace"]

_LAZY = {
    "read": "memread.ask",
    "open_source": "memread.ask",
    "create_backend": "memread.backends",
    "Settings": "memread.settings",
    "ReadRequest": "memread.run",
    "Run": "memread.run",
    "request_from_trace": "memread.run",
}

if TYPE_CHECKING:
    from memread.ask import open_source, read
    from memread.backends import create_backend
    from memread.run import ReadRequest, Run, request_from_trace
    from memread.settings import Settings


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memread' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
