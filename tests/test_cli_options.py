"""The options `ask` and `bench` share mean the same thing: one definition, the same help, the same limits."""

from __future__ import annotations

import pytest
import typer.main

from memread.cli import options
from memread.cli.app import app


def _commands() -> dict[str, object]:
    group = typer.main.get_command(app)
    return {name: group.commands[name] for name in ("ask", "bench")}  # type: ignore[attr-defined]


def _params(command: object) -> dict[str, object]:
    return {param.name: param for param in command.params}  # type: ignore[attr-defined]


def test_every_option_both_commands_take_is_the_same_option() -> None:
    ask, bench = (_params(command) for command in _commands().values())
    shared = set(ask) & set(bench)
    # The backend and reading knobs a user moves from `ask` to `bench` (and back) must all be there.
    assert {"model", "backend", "base_url", "context_length", "threads", "chunk_tokens", "memory_tokens",
            "temperature", "seed", "exit_gate", "layout", "recall_from", "json_output", "quiet"} <= shared
    for name in sorted(shared):
        a, b = ask[name], bench[name]
        if not set(a.opts) & set(b.opts):  # type: ignore[attr-defined]
            continue  # one parameter name, two flags (ask's --question, bench's docqa --questions): two options
        assert a.opts == b.opts, name  # type: ignore[attr-defined]
        assert a.secondary_opts == b.secondary_opts, name  # type: ignore[attr-defined]
        assert a.help == b.help, name  # type: ignore[attr-defined]
        assert a.default == b.default, name  # type: ignore[attr-defined]
        for limit in ("min", "max", "envvar", "rich_help_panel"):
            assert getattr(a, limit, None) == getattr(b, limit, None), (name, limit)


def test_the_shared_options_are_declared_once_and_listed_in_one_block_in_both_commands() -> None:
    import dataclasses

    declared = [field.name for field in dataclasses.fields(options.SharedOptions)]
    for command in _commands().values():
        names = list(_params(command))
        start = names.index(declared[0])
        assert names[start:start + len(declared)] == declared


def test_parsed_options_become_the_library_arguments() -> None:
    params = {"threads": 3, "base_url": "http://127.0.0.1:9/v1", "chunk_tokens": 700, "layout": "chunk-first",
              "exit_gate": False, "model": "ignored-here"}
    backend = options.backend_options(params)
    assert backend["n_threads"] == 3 and backend["base_url"] == "http://127.0.0.1:9/v1"
    assert backend["api_key"] is None and "model" not in backend
    assert options.loop_settings(params) == {"chunk_tokens": 700, "layout": "chunk-first",
                                             "options": {"exit_gate": False}}
    shared = options.SharedOptions(threads=3, chunk_tokens=700, exit_gate=False, option=["patience=2"])
    assert shared.backend_options()["n_threads"] == 3
    assert shared.loop_settings()["chunk_tokens"] == 700
    assert shared.loop_settings()["options"] == {"exit_gate": False, "patience": "2"}


@pytest.mark.parametrize(("flags", "said"), [
    (("--top-p", "0"), "top-p must be above 0 and at most 1, not 0.0"),
    (("--temperature", "2.5"), "temperature must be from 0 to 2, not 2.5"),
    (("--strategy", "overwrite", "--no-exit-gate"), "the overwrite strategy has no option 'exit-gate'"),
    (("--strategy", "callback", "-o", "memory=whole"), "the callback option memory must be one of reply, update"),
    (("-o", "oops"), "--option takes NAME=VALUE, not 'oops'"),
])
def test_settings_no_engine_would_take_are_refused_before_anything_loads(flags: tuple[str, ...], said: str) -> None:
    from cli_runner import run_memread

    status, out, err = run_memread("ask", "-", "Who?", "--model", "/nonexistent/model.gguf", *flags,
                                   stdin=b"Some text.\n")
    assert status == 2 and out == "" and said in err and "hint:" in err
    assert "nonexistent" not in err  # refused before the model was looked for
