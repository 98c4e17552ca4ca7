"""Helpers for tests of memread and of its plugins: registries and plugin state that a test may change and that
are put back afterwards (here: the one place outside the registries that knows how they keep their entries),
fixture documents (:mod:`memread.testing.documents`, :mod:`memread.testing.hostile`) and what fuzzing draws and
checks (:mod:`memread.testing.fuzz`, shared with ``benchmarks/robustness/bench_fuzz.py``). The submodules need the
``test`` extra and are imported only by those who use them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def isolated_registries(*, forget_plugins: bool = True) -> Iterator[None]:
    """Run a block with the loader, backend and strategy registries as they are now, and put them (and the
    plugin machinery's state) back afterwards. ``forget_plugins``: start the block as if no plugin had been
    discovered yet, so entry points put on ``sys.path`` by the test are found."""
    from memread import backends, plugins, strategies
    from memread.ingest import registry as loaders

    loaders.loaders()  # the built-ins, registered before the snapshot
    saved = (backends._BACKENDS.snapshot(), strategies._STRATEGIES.snapshot(), dict(loaders._loaders),
             plugins._snapshot())
    if forget_plugins:
        plugins._reset()
    try:
        yield
    finally:
        backends._BACKENDS.restore(saved[0])
        strategies._STRATEGIES.restore(saved[1])
        loaders._loaders.clear()
        loaders._loaders.update(saved[2])
        plugins._restore(saved[3])
