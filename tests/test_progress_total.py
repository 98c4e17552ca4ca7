"""The progress line's total ("[3/12]") costs no second pass over a document whose strategy indexes it first:
`evidence` reports how many chunks it stored (its ``Indexed`` event), so ``memread ask`` does not chunk and
tokenise the document once more beforehand, as it does for strategies that read in document order."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import memread.ask
from memread.backends.base import ChatRequest
from tests.cli_runner import run_memread

REPORT = "".join(f"Day {day}: the harbour office logged {day * 3} boats and the tide at {day % 5} metres.\n"
                 for day in range(1, 120))


def reply(request: ChatRequest) -> str:
    return "\\boxed{none}"


@pytest.fixture()
def fake_backend() -> Iterator[None]:
    from memread.backends import register_backend
    from memread.backends.fake import FakeBackend
    from memread.testing import isolated_registries

    with isolated_registries():
        register_backend("fake", lambda model=None, **options: FakeBackend(reply, model="scripted-model"))
        yield


@pytest.mark.parametrize("strategy, counted", [("evidence", False), ("overwrite", True)])
def test_the_total_comes_from_the_strategys_index_or_from_one_counting_pass(
        strategy: str, counted: bool, fake_backend: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    document = tmp_path / "harbour.log"
    document.write_text(REPORT, encoding="utf-8")
    passes: list[str] = []
    count_chunks = memread.ask.count_chunks

    def counting(source: str, *args: object, **kwargs: object) -> int | None:
        passes.append(source)
        return count_chunks(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(memread.ask, "count_chunks", counting)
    code, _out, err = run_memread("ask", str(document), "How many boats were logged on day 7?", "--backend", "fake",
                                  "--strategy", strategy, "--chunk-tokens", "200", "--progress", "plain",
                                  "--no-trace")
    assert code == 0, err
    assert passes == ([str(document)] if counted else [])
    totals = {int(total) for total in re.findall(r"^\[\d+/(\d+)\]", err, re.MULTILINE)}
    assert len(totals) == 1 and totals.pop() >= 5, err  # every line knows the total, the same one
