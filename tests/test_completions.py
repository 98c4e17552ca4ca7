"""Shell completion: the committed scripts are current, and pressing TAB after ``memread ins`` gives
``inspect`` — through the program itself and through a real bash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memread.cli.completion_scripts import FILENAMES, SHELLS, default_directory, script, stale, write


@pytest.fixture(scope="module")
def memread_on_path(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose PATH starts with a ``memread`` that runs this checkout's code, as a shell
    would find the installed console script."""
    bin_dir = tmp_path_factory.mktemp("bin")
    launcher = bin_dir / "memread"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memread "$@"\n')
    launcher.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_the_committed_scripts_are_what_the_app_generates_now() -> None:
    outdated = stale()
    assert not outdated, f"regenerate with `python -m memread.cli.completion_scripts`: {outdated}"


@pytest.mark.parametrize("shell", SHELLS)
def test_a_script_is_the_apps_own_completion_source_plus_a_header(
    shell: str, memread_on_path: dict[str, str]
) -> None:
    env = {**memread_on_path, "_MEMREAD_COMPLETE": f"source_{shell}"}
    source = subprocess.run(["memread"], env=env, capture_output=True, text=True, check=True).stdout
    generated = script(shell)
    body = [line for line in generated.splitlines() if not line.startswith("# ")]
    assert [line for line in body if line] == [line for line in source.splitlines() if line]


@pytest.mark.parametrize("shell", SHELLS)
def test_memread_completions_prints_the_committed_script(shell: str, memread_on_path: dict[str, str]) -> None:
    printed = subprocess.run(
        ["memread", "completions", shell], env=memread_on_path, capture_output=True, text=True, check=True
    ).stdout
    assert printed == (default_directory() / FILENAMES[shell]).read_text(encoding="utf-8")


def test_an_unknown_shell_is_a_usage_error(memread_on_path: dict[str, str]) -> None:
    done = subprocess.run(
        ["memread", "completions", "tcsh"], env=memread_on_path, capture_output=True, text=True
    )
    assert done.returncode == 2


def complete(memread_on_path: dict[str, str], **variables: str) -> str:
    env = {**memread_on_path, **variables}
    return subprocess.run(["memread"], env=env, capture_output=True, text=True, check=True).stdout


def test_the_program_completes_a_command_name_for_each_shell(memread_on_path: dict[str, str]) -> None:
    bash = complete(
        memread_on_path, _MEMREAD_COMPLETE="complete_bash", COMP_WORDS="memread ins", COMP_CWORD="1"
    )
    assert bash.split() == ["inspect"]
    zsh = complete(memread_on_path, _MEMREAD_COMPLETE="complete_zsh", _TYPER_COMPLETE_ARGS="memread ins")
    assert "inspect" in zsh
    fish = complete(
        memread_on_path,
        _MEMREAD_COMPLETE="complete_fish",
        _TYPER_COMPLETE_FISH_ACTION="get-args",
        _TYPER_COMPLETE_ARGS="memread ins",
    )
    assert fish.split()[0] == "inspect"


def test_the_program_completes_options_of_a_command(memread_on_path: dict[str, str]) -> None:
    words = complete(
        memread_on_path,
        _MEMREAD_COMPLETE="complete_bash",
        COMP_WORDS="memread inspect --chunk",
        COMP_CWORD="2",
    )
    assert set(words.split()) == {"--chunk-tokens", "--chunks"}


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_tab_in_a_real_bash_with_the_committed_script(memread_on_path: dict[str, str]) -> None:
    script_path = default_directory() / FILENAMES["bash"]
    # What bash does on TAB after "memread ins": set COMP_WORDS/COMP_CWORD and call the completion function.
    program = f"""
source '{script_path}'
complete -p memread >/dev/null || exit 9
COMP_WORDS=(memread ins); COMP_CWORD=1
_memread_completion memread
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program], env=memread_on_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["inspect"]


def test_the_generator_writes_every_script_and_notices_an_edited_one(tmp_path: Path) -> None:
    write(tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(FILENAMES.values())
    assert not stale(tmp_path)
    edited = tmp_path / FILENAMES["fish"]
    edited.write_text(edited.read_text() + "# my tweak\n")
    assert stale(tmp_path) == [edited]
