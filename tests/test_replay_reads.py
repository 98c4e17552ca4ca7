"""benchmarks/studies/replay_reads.py: a recorded `evidence` read fed its own replies again (no model here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.studies import replay_reads
from memread.backends.fake import FakeBackend
from memread.chunk import Chunker
from memread.document import Chunk, Provenance, Segment
from memread.events import StepFinished
from memread.loop import Loop
from memread.settings import Settings
from memread.tokens import CharTokenizer

PAGES = ["The history file keeps entries: the default value of history_size is 1000.",
         *(f"Filler page {n} about matrices and vectors." for n in range(2, 9))]
QUESTION = "What is the default value of history_size?"


class Document:  # what the replay asks of a document: its outline
    outline: list[object] = []


def chunks() -> list[Chunk]:
    segments = [Segment(text + "\n\n", Provenance("manual.pdf", page=n)) for n, text in enumerate(PAGES, 1)]
    return list(Chunker(CharTokenizer(), 120).chunks(segments))


def recorded_read() -> dict[str, Any]:
    """A read as `memread bench docqa` records it, by a scripted model."""
    events: list[object] = []
    backend = FakeBackend(lambda request: "1000}", continues_replies=True)
    result = Loop(backend, [QUESTION], Settings(strategy="evidence"), sinks=[events.append]).run(chunks())[0]
    steps = [e for e in events if isinstance(e, StepFinished)]
    return {"question": QUESTION, "prediction": result.answer, "reply": "\\boxed{1000}",
            "steps": [{"chunk": e.chunk.index, "reply": "\\boxed{1000}"} for e in steps]}


def test_a_read_fed_its_own_replies_reads_the_same_passages_and_answers_the_same() -> None:
    result = recorded_read()
    now = replay_reads.replay(result, Document(), chunks(), CharTokenizer())
    assert now["read"] == [step["chunk"] for step in result["steps"]]
    assert now["answer"] == result["prediction"] == "1000"
    assert len(now["prompts"]) == len(result["steps"]) + 1
    # each call's prompt, with the reply recorded for it, whole
    assert [reply for _, reply in now["calls"]] == [s["reply"] for s in result["steps"]] + [result["reply"]]
    assert all(prompt for prompt, _ in now["calls"]) and len(now["calls"]) == len(now["prompts"])


def test_a_replay_counts_its_prompts_tokens() -> None:
    result = recorded_read()
    tokens = replay_reads.replay(result, Document(), chunks(), CharTokenizer())["tokens"]
    assert tokens > 0
    assert replay_reads.replay(result, Document(), chunks(), CharTokenizer())["tokens"] == tokens
    model = FakeBackend(lambda request: "999}", continues_replies=True)
    other = replay_reads.replay(result, Document(), chunks(), CharTokenizer(), expected=["another"], model=model)
    assert other["model_calls"] >= 1 and other["tokens"] > 0  # the model's prompts are counted alike


def test_the_read_on_table_gives_steps_and_tokens_then_and_now() -> None:
    found = [{"id": "hqa/50/0", "score": 1.0, "right_now": True, "steps": 9, "steps_now": 5, "tokens": 4000,
              "tokens_now": 2000, "model_calls": 1, "answer": "five", "now": "five"}]
    text = replay_reads.read_on_table(found)
    assert "| hqa/50/0 | yes | yes | 9 | 5 | 4000 | 2000 | 1 | five | five |" in text
    assert "Steps read: 9 then, 5 now (0.56×); prompt tokens 4,000 then, 2,000 now (0.50×" in text


def test_a_read_that_needs_more_replies_than_recorded_is_another_read() -> None:
    result = {**recorded_read(), "steps": [], "reply": "\\boxed{1000}"}  # the replies of a read that stopped at once
    now = replay_reads.replay(result, Document(), chunks(), CharTokenizer())
    assert now["answer"] is None


def test_read_on_the_model_answers_from_the_first_prompt_that_differs() -> None:
    result = recorded_read()
    expected = replay_reads.replay(result, Document(), chunks(), CharTokenizer())["prompts"]
    model = FakeBackend(lambda request: "999}", continues_replies=True)
    same = replay_reads.replay(result, Document(), chunks(), CharTokenizer(), expected=expected, model=model)
    assert (same["answer"], same["model_calls"], model.calls) == ("1000", 0, [])  # the same prompts: the replies
    changed = [*expected[:1], "another", *expected[2:]]  # the second prompt is not the recorded read's
    now = replay_reads.replay(result, Document(), chunks(), CharTokenizer(), expected=changed, model=model)
    assert now["model_calls"] == len(model.requests) == len(now["prompts"]) - 1 >= 1  # from the second call on
    assert now["answer"] != "1000"  # the model's "999" is in no line: no answer


def test_only_design_questions_are_replayed(tmp_path: Path) -> None:
    rows = [("octave-pdf-02", "design"), ("octave-pdf-01", "acceptance"), ("octave-pdf-04", "design")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps({"n": n}) + "\n" for n in range(3)))
    (tmp_path / "scores.jsonl").write_text("".join(
        json.dumps({"method": "evidence", "docqa": {"id": q, "split": split}}) + "\n" for q, split in rows))
    assert [result["n"] for result, _ in replay_reads.recorded(tmp_path)] == [0, 2]


def test_hotpotqa_reads_are_replayed_on_the_design_seed_only(tmp_path: Path) -> None:
    rows = [(11, "evidence"), (1127, "evidence"), (11, "overwrite"), (11, "evidence")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps({"n": n}) + "\n" for n in range(4)))
    (tmp_path / "scores.jsonl").write_text("".join(
        json.dumps({"method": method, "task": "hqa", "data_seed": seed, "key": f"hqa/50/{n}/{method}"}) + "\n"
        for n, (seed, method) in enumerate(rows)))
    assert [result["n"] for result, _ in replay_reads.recorded(tmp_path)] == [0, 3]
    assert [result["n"] for result, _ in replay_reads.recorded(tmp_path, ["hqa/50/3"])] == [3]


def test_a_replayed_answer_is_scored_as_its_task_scores_it() -> None:
    hqa = {"task": "hqa", "metric": "qa", "key": "hqa/50/0/evidence"}
    assert replay_reads.right("Five", ["five"], hqa) and not replay_reads.right("six", ["five"], hqa)
    assert not replay_reads.right(None, ["five"], hqa)
    docqa = {"metric": "docqa", "docqa": {"id": "octave-pdf-02", "split": "design"}}
    assert replay_reads.right("1000", ["1000"], docqa) and not replay_reads.right("100", ["1000"], docqa)


def test_the_table_says_which_reads_stand_and_which_must_be_read_again() -> None:
    found = [{"id": "a-02", "score": 1.0, "steps": 9, "diverges": None, "answer": "1000", "now": "1000",
              "prompts": ["x"]},
             {"id": "a-04", "score": 0.0, "steps": 9, "diverges": 0, "answer": "5", "now": None, "prompts": ["y"]},
             {"id": "a-06", "score": 1.0, "steps": 9, "diverges": None, "answer": "7", "now": "7", "prompts": ["z"]}]
    text = replay_reads.table(found, {"a-02": ["x"], "a-04": ["y"], "a-06": ["w"]})
    assert "| a-04 | no | 9 | diverges at step 1 | same | 5 | — |" in text
    assert "| a-06 | yes | 9 | same passages | changed | 7 | 7 |" in text
    assert "Same passages, prompts and answer: 1 of 3" in text
    assert "Prompts not compared" in replay_reads.table(found)


def test_a_folder_without_a_run_and_prompts_from_this_same_code_are_refused(tmp_path: Path, capsys: Any) -> None:
    import pytest

    import memread

    with pytest.raises(SystemExit) as refused:
        replay_reads.main([str(tmp_path / "nowhere")])
    assert refused.value.code == 2 and "holds no results.jsonl" in capsys.readouterr().err
    own = tmp_path / "own.json"  # written by this code: comparing with it would say every prompt is the same
    own.write_text(json.dumps({"memread": str(Path(memread.__file__).resolve().parent), "prompts": {}}))
    with pytest.raises(SystemExit) as refused:
        replay_reads.main([str(tmp_path), "--against", str(own)])
    assert refused.value.code == 2 and "written by this same code" in capsys.readouterr().err
