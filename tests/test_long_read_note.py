"""`memread ask` with the default strategy on a long document says, before the first step, that it will put every
chunk through the model and names the strategy that reads only the matching passages; not when the user chose the
strategy, the document is short or the strategy picks its own passages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memread.backends.base import ChatRequest
from memread.cli.runner import LONG_READ_TOKENS, long_read_note
from memread.run import ReadRequest
from memread.settings import STRATEGY, Settings
from tests.cli_runner import run_memread

LINE = "Day {n}: the harbour office logged {b} boats and the tide stood at {t} metres.\n"


def log(lines: int) -> str:
    return "".join(LINE.format(n=n, b=n * 3, t=n % 5) for n in range(lines))


@pytest.fixture()
def fake_backend() -> Iterator[None]:
    from memread.backends import register_backend
    from memread.backends.fake import FakeBackend
    from memread.testing import isolated_registries

    def reply(request: ChatRequest) -> str:
        return "\\boxed{21}"

    with isolated_registries():
        register_backend("fake", lambda model=None, **options: FakeBackend(reply, model="scripted-model"))
        yield


def ask(path: Path, *extra: str) -> tuple[int, str]:
    code, _out, err = run_memread("ask", str(path), "How many boats on day 7?", "--backend", "fake",
                                  "--progress", "plain", "--no-trace", *extra)
    assert code == 0, err
    return code, err


def test_the_default_strategy_on_a_long_document_gets_the_note(fake_backend: None, tmp_path: Path) -> None:
    document = tmp_path / "harbour.log"
    document.write_text(log(1600), encoding="utf-8")  # ~125,000 characters: the fake backend counts characters
    _, err = ask(document, "--chunk-tokens", "5000")
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1, err
    assert notes[0].startswith(f"note: {STRATEGY}, the default strategy, puts all 26 chunks of this document "
                               "(up to 130,000 tokens) through the model; `--strategy evidence` reads only")
    assert err.index(notes[0]) < err.index("[1/26]")  # before the reading starts


@pytest.mark.parametrize("extra", [("--strategy", STRATEGY), ("--strategy", "evidence"), ("--quiet",)])
def test_no_note_when_the_user_chose_or_asked_for_quiet(fake_backend: None, tmp_path: Path,
                                                        extra: tuple[str, ...]) -> None:
    document = tmp_path / "harbour.log"
    document.write_text(log(1600), encoding="utf-8")
    _, err = ask(document, "--chunk-tokens", "5000", *extra)
    assert "note:" not in err


def test_no_note_for_a_model_trained_for_the_default_strategy(fake_backend: None, tmp_path: Path) -> None:
    from memread.models.trained import TRAIN_RECORD

    document = tmp_path / "harbour.log"
    document.write_text(log(1600), encoding="utf-8")
    model = tmp_path / "memagent-export"
    model.mkdir()
    (model / TRAIN_RECORD).write_text(f'{{"strategy": "{STRATEGY}"}}', encoding="utf-8")
    _, err = ask(document, "--chunk-tokens", "5000", "--model", str(model))
    assert "note:" not in err and "[1/26]" in err


def test_no_note_on_a_short_document(fake_backend: None, tmp_path: Path) -> None:
    document = tmp_path / "harbour.log"
    document.write_text(log(100), encoding="utf-8")
    _, err = ask(document, "--chunk-tokens", "500")
    assert "note:" not in err and "[1/" in err


def test_the_threshold_counts_tokens_not_chunks() -> None:
    def request(chunk_tokens: int | None, strategy: str = "overwrite") -> ReadRequest:
        return ReadRequest(source="x", questions=["q"], settings=Settings(strategy=strategy, chunk_tokens=chunk_tokens))

    assert long_read_note(request(100), LONG_READ_TOKENS // 100 - 1) is None
    assert long_read_note(request(100), LONG_READ_TOKENS // 100) is not None
    assert long_read_note(request(None), 20) is not None  # overwrite's 5,000-token chunks
    assert long_read_note(request(None), None) is None  # not counted (stdin, --quiet)
    assert long_read_note(request(None, "evidence"), 10_000) is None
