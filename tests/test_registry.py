"""One registry and one "module:attribute" resolver serve backends, strategies and plugins."""

from __future__ import annotations

import os.path

import pytest

from memread.registry import Registry, import_target


def test_a_target_names_a_module_attribute_path_and_ignores_entry_point_extras() -> None:
    assert import_target("os.path:join") is os.path.join
    assert import_target(" os : path.join [speedups]") is os.path.join
    with pytest.raises(ModuleNotFoundError):
        import_target("memread_no_such_module:thing")


def test_names_are_imported_when_resolved_and_cannot_be_taken_twice() -> None:
    parts: Registry[object] = Registry("part", {"join": "os.path:join", "built": len})
    parts.register("split", "os.path:split", origin="memread-example")
    assert parts.names() == ["join", "built", "split"]
    assert parts.resolve("join") is os.path.join and parts.resolve("built") is len
    assert parts.origin("split") == "memread-example" and parts.origin("join") is None
    with pytest.raises(ValueError, match="a part named 'join' is already registered"):
        parts.register("join", len)
    saved = parts.snapshot()
    parts.register("join", len, replace=True)
    assert parts.resolve("join") is len
    parts.restore(saved)
    assert parts.resolve("join") is os.path.join and parts.origin("split") == "memread-example"
