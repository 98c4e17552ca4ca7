"""Shell completion runs ``memread`` on every TAB, and ``memread --help`` should answer at once: neither may
load a model runtime, a PDF library or a tokenizer. The core library imports without the CLI stack at all.

Each check runs a fresh interpreter with ``-X importtime`` and reads which modules it imported.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HEAVY = ("llama_cpp", "vllm", "torch", "numpy", "pypdf", "ebooklib", "tiktoken", "httpx",
         "verl", "transformers", "ray", "pyarrow")  # the last four: the train extra
CLI_STACK = ("typer", "click", "rich", "shellingham")


def imported(code: str, **env: str) -> dict[str, int]:
    """Top-level packages imported by ``python -c code``, with their cumulative import time in µs."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules: dict[str, int] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (part.strip() for part in line.split("|"))
        if cumulative.isdigit():
            modules[name] = int(cumulative)
    return modules


def top_level(modules: dict[str, int]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def run_main(*args: str) -> str:
    return f"from memread.cli.app import main\ntry:\n    main({list(args)!r})\nexcept SystemExit:\n    pass\n"


def test_the_core_library_imports_without_the_cli_stack_or_a_model_runtime() -> None:
    modules = top_level(imported("import memread, memread.document, memread.events, memread.errors"))
    assert not modules & {*CLI_STACK, *HEAVY}


def test_importing_the_cli_loads_no_heavy_module_and_no_rich(capsys: pytest.CaptureFixture[str]) -> None:
    modules = imported("import memread.cli.app")
    assert not top_level(modules) & {*HEAVY, "rich"}
    with capsys.disabled():  # the figure the report quotes; speed is a benchmark, not a test
        print(f"\n  import memread.cli.app: {modules['memread.cli.app'] / 1000:.0f} ms cumulative")


def test_tab_completion_in_bash_loads_no_heavy_module_and_no_rich() -> None:
    modules = imported(
        run_main(), _MEMREAD_COMPLETE="complete_bash", COMP_WORDS="memread ins", COMP_CWORD="1"
    )
    assert not top_level(modules) & {*HEAVY, "rich"}


@pytest.mark.parametrize("args", [("--help",), ("inspect", "--help"), ("completions", "--help"), ("train", "--help"),
                                  ("train", "check", "--help")])
def test_help_loads_no_heavy_module(args: tuple[str, ...]) -> None:
    # Typer draws help with Rich when it is installed (and zsh/fish completion strips Rich markup from help
    # texts), so Rich is allowed here; everything that reads documents or runs models is not.
    assert not top_level(imported(run_main(*args))) & set(HEAVY)


def test_importing_memread_does_not_import_inference_engines() -> None:
    script = ("import sys, memread.backends, memread.models, memread.cli.cmd_models\n"
              "print(sorted(m for m in ('llama_cpp', 'vllm', 'httpx') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
