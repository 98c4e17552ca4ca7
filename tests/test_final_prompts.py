"""benchmarks/studies/final_prompts.py: the evidence strategy's final call asked again from the evidence a record kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.studies import final_prompts
from memread.backends.base import ChatRequest
from memread.backends.fake import FakeBackend
from memread.settings import ANSWER_START
from memread.strategies.evidence import EvidenceStrategy

QUESTION = "What is the highest peak in the mountain range in which Elk Valley, Tennessee is located?"
KEPT = ("- Rila: Rila is a mountain range in Bulgaria, with its highest peak being Musala.\n"
        "- Alexandra Park: Alexandra Park is a park in the Whalley Range district of Manchester.\n"
        "- Cumberland Mountains: Their highest peak is High Knob, which is located near Norton, Virginia.\n"
        "- Elk Valley, Tennessee: Elk Valley is in the Cumberland Mountains.")


def record(**fields: Any) -> dict[str, Any]:
    return {"key": "hqa/400/0/evidence", "method": "evidence", "status": "ok", "length": 400, "metric": "qa",
            "question": QUESTION, "golds": ["High Knob"], "kept": KEPT, "reply": "\\boxed{Musala}",
            "scores": {"lenient": 0.0, "kept": 1.0}, "index": 0, **fields}


def test_each_variant_asks_the_final_call_again_and_is_scored_by_the_bench_s_rules() -> None:
    def answer(request: ChatRequest) -> str:
        prompt = request.messages[-1].content
        if request.reply_start:  # begun: the model adds the rest of the box
            return "Musala}" if "Musala" in prompt else "High Knob}"
        return "The Cumberland Mountains hold Elk Valley; their highest peak is High Knob."  # forgot the box

    backend = FakeBackend(answer, continues_replies=True)
    row = final_prompts.ask_again(backend, record())
    sent = backend.requests
    # "as is" is the strategy's own final prompt on the kept evidence, begun as the sweep began it.
    assert sent[0].messages[-1].content == EvidenceStrategy.final_prompt(None, QUESTION, KEPT)  # type: ignore[arg-type]
    assert sent[0].reply_start == ANSWER_START and row["variants"]["as is"]["reply"] == "\\boxed{Musala}"
    # "two stems" leaves out the entries sharing fewer than two stems with the question (the park: "range").
    two = sent[1].messages[-1].content
    assert "Alexandra Park" not in two and "High Knob" in two and "Elk Valley is in" in two
    assert row["variants"]["as is"]["entries"] == 4 and row["variants"]["two stems"]["entries"] == 3
    # "reason first" is not begun, and an unboxed answer scores 0 as in the bench.
    assert sent[2].reply_start == "" and "reason briefly" in sent[2].messages[-1].content
    assert [row["variants"][n]["score"] for n in ("as is", "two stems", "reason first")] == [0.0, 0.0, 0.0]


def test_a_right_box_scores_and_the_table_pairs_the_variants() -> None:
    backend = FakeBackend(lambda request: "High Knob}" if request.reply_start else "so \\boxed{High Knob}",
                          continues_replies=True)
    rows = [final_prompts.ask_again(backend, record()), final_prompts.ask_again(backend, record(key="hqa/400/1/x"))]
    assert all(v["score"] == 1.0 for row in rows for v in row["variants"].values())
    table = final_prompts.report(rows)
    assert "n = 2 samples (2 whose final evidence holds a gold answer)" in table and "in 0 of 2" in table
    assert "| two stems | 2 of 2" in table


def test_records_are_the_evidence_reads_that_kept_something_and_a_line_being_written_is_skipped(
        tmp_path: Path) -> None:
    lines = [json.dumps(record()), json.dumps(record(method="bm25")), json.dumps(record(kept=None)),
             json.dumps(record(status="error")), '{"key": "hqa/400/5/ev']
    (tmp_path / "results.jsonl").write_text("\n".join(lines), encoding="utf-8")
    assert [r["key"] for r in final_prompts.records_of(tmp_path)] == ["hqa/400/0/evidence"]
