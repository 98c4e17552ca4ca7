"""Derived model formats: a user pulls a Q4_0 made locally from a pinned registry file by llama.cpp's own
quantizer, gets the same bytes every time (sha256-pinned), and can ask questions with it by name.

Real conversions of SmolLM2 (Q4_1, 98 MB → Q4_0, 92 MB: about a second each) through llama-cpp-python."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runner import run_memread

from memread import models
from memread.errors import BackendError, ExitStatus

pytestmark = pytest.mark.model

SOURCE, DERIVED = "smollm2-135m", "smollm2-135m-q4_0"


@pytest.fixture
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, smollm2_path: Path) -> Path:
    """An empty model cache holding only a copy of the SmolLM2 source (so nothing is downloaded)."""
    directory = tmp_path / "models"
    (directory / SOURCE).mkdir(parents=True)
    shutil.copyfile(smollm2_path, directory / SOURCE / smollm2_path.name)
    monkeypatch.setenv("MEMREAD_MODELS_DIR", str(directory))
    return directory


def derived_entry(monkeypatch: pytest.MonkeyPatch, name: str, **changes: object) -> str:
    """Register a variant of the SmolLM2 Q4_0 entry (another pin, ftype or pinned build) for this test."""
    import dataclasses

    base = models.MODELS[DERIVED]
    assert base.made_from is not None
    conversion = dataclasses.replace(base.made_from, **{k: v for k, v in changes.items() if k in ("ftype", "pinned_build")})
    spec = dataclasses.replace(base, name=name, made_from=conversion,
                               **{k: v for k, v in changes.items() if k in ("sha256", "size", "filename")})
    monkeypatch.setitem(models.MODELS, name, spec)
    return name


def leftovers(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


@pytest.mark.slow
def test_pull_converts_smollm2_to_q4_0_matching_its_pin_and_the_result_answers(models_dir: Path) -> None:
    status, out, err = run_memread("models", "pull", DERIVED)
    assert status == 0, err
    path = Path(out.strip())
    assert path == models_dir / SOURCE / "SmolLM2-135M-Instruct.Q4_0.gguf"  # next to its source
    assert "convert smollm2-135m-q4_0" in err and "verify smollm2-135m-q4_0" in err and "(100%)" in err
    spec = models.MODELS[DERIVED]
    assert spec.made_from is not None
    recorded = json.loads(path.with_name(path.name + ".verified").read_text())
    assert recorded["made_by"] == models.converter_build()
    if models.converter_build() == spec.made_from.pinned_build:
        assert (models.sha256_of(path), path.stat().st_size) == (spec.sha256, spec.size)
    source = models_dir / SOURCE / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert leftovers(path.parent) == {source.name, source.name + ".verified", path.name, path.name + ".verified",
                                      ".lock"}

    # Deterministic: the quantizer gives the same bytes again, with one thread or two.
    for threads in (1, 2):
        again = models_dir / f"again-{threads}.gguf"
        models.quantize(source, again, "Q4_0", threads=threads)
        assert models.sha256_of(again) == recorded["sha256"]

    # Found by name from then on, by `models path`, `resolve` (the ask path) and the llama.cpp backend.
    assert run_memread("models", "path", DERIVED)[1].strip() == str(path)
    assert models.resolve(DERIVED, pull=False) == path
    from memread.backends.base import ChatRequest, Message
    from memread.backends.llamacpp import LlamaTokenizer, create

    backend = create(DERIVED, n_ctx=512, n_threads=1, pull=False)
    try:
        assert backend.model_path == path and backend.model == DERIVED
        reply = backend.complete([ChatRequest([Message("user", "What is the capital of France?")], max_tokens=16,
                                              temperature=0.0)])[0]
    finally:
        backend.close()
    assert "Paris" in reply.text
    assert LlamaTokenizer(path).count("hello world") == LlamaTokenizer(source).count("hello world")


def test_ask_by_the_derived_name_converts_on_first_use_and_answers(models_dir: Path) -> None:
    sample = Path(__file__).resolve().parents[1] / "docs" / "sample" / "harbour-report.md"
    status, out, err = run_memread("ask", str(sample), "Who is the harbour master?", "--model", DERIVED,
                                   "--chunk-tokens", "300", "--memory-tokens", "32", "--final-tokens", "24",
                                   "--temperature", "0", "--threads", "1", "--json")
    assert status == 0, err
    assert "convert smollm2-135m-q4_0" in err
    result = json.loads(out)
    assert result["model"] == DERIVED and result["answer"].strip()
    assert models.is_present(DERIVED)


def test_a_conversion_llama_cpp_refuses_fails_in_one_line_and_leaves_nothing(
    models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = derived_entry(monkeypatch, "smollm2-135m-q9", ftype="Q9_9", filename="SmolLM2.Q9.gguf")
    status, out, err = run_memread("models", "pull", name)
    assert status == ExitStatus.BACKEND and out == ""
    assert "error: llama.cpp could not convert SmolLM2-135M-Instruct.Q4_1.gguf to Q9_9: " in err
    assert "LLAMA_FTYPE_MOSTLY_Q9_9" in err and "\nhint: " in err and "Traceback" not in err
    assert not any(p.name.startswith((".convert-", "SmolLM2.Q9")) for p in (models_dir / SOURCE).iterdir())


def test_a_result_that_differs_from_the_pin_of_the_same_build_is_refused(
    models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = derived_entry(monkeypatch, "smollm2-135m-q4_0-badpin", sha256="0" * 64,
                         pinned_build=models.converter_build(), filename="SmolLM2.badpin.gguf")
    with pytest.raises(BackendError) as caught:
        models.pull(name)
    assert "does not match its pin" in caught.value.message
    assert "--model smollm2-135m" in (caught.value.hint or "")
    assert not any(p.name.startswith((".convert-", "SmolLM2.badpin")) for p in (models_dir / SOURCE).iterdir())


def test_another_llama_cpp_build_keeps_its_own_result_recorded_and_marked_unpinned(
    models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a user on ARM or a newer llama.cpp meets: the bytes may differ from the x86-64 0.3.16 pin.
    name = derived_entry(monkeypatch, "smollm2-135m-q4_0-elsewhere", sha256="0" * 64,
                         pinned_build="llama-cpp-python 0.0.1 on riscv64", filename="SmolLM2.elsewhere.gguf")
    path = models.pull(name)
    assert models.is_present(name) and models.resolve(name, pull=False) == path
    row = next(row for row in models.describe() if row["name"] == name)
    assert row["made_from"]["made_by"] == models.converter_build() != row["made_from"]["pinned_build"]

    with open(path, "r+b") as handle:  # its recorded sha256 still catches corruption later
        handle.seek(10_000_000)
        byte = handle.read(1)
        handle.seek(10_000_000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(BackendError, match="corrupt") as caught:
        models.resolve(name)
    assert f"memread models pull {name} --force" in (caught.value.hint or "")
    assert models.pull(name, force=True) == path and models.resolve(name) == path
