"""``memread inspect``: a user checks what memread will read before spending model time on it."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_runner import run_memread

from memread.testing.documents import SCANNED, build_pdf, build_tree, encrypt_pdf, log_lines
from memread.tokens import TiktokenTokenizer


@dataclass
class Result:
    status: int
    out: str
    err: str


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Iterator[object]:
    """Run ``memread ARGS`` in this process with fake terminals; returns status, stdout and stderr."""

    def invoke(*args: str, stdin: bytes = b"", stderr_isatty: bool = False) -> Result:
        env = dict(os.environ, TERM="xterm")
        env.pop("MEMREAD_NO_PROGRESS", None)
        status, out, err = run_memread(*args, stdin=stdin, stderr_isatty=stderr_isatty, environ=env)
        captured = capsys.readouterr()  # Typer's own usage errors go straight to sys.stderr
        return Result(status, out + captured.out, err + captured.err)

    yield invoke


def table(output: str) -> dict[str, str]:
    rows = (line.split(None, 1) for line in output.splitlines() if line.strip() and "\t" not in line)
    return {name: value for name, value in rows}


def test_a_log_file_shows_lines_characters_tokens_and_chunks(run, tmp_path: Path) -> None:
    text = "".join(log_lines(5000))
    log = tmp_path / "app.log"
    log.write_text(text)

    result = run("inspect", str(log), "--chunk-tokens", "2000")

    assert result.status == 0, result.err
    rows = table(result.out)
    assert rows["format"] == "text"
    assert rows["lines"] == "5,000"
    assert rows["characters"] == f"{len(text):,}"
    tokens = TiktokenTokenizer().count(text)
    counted = int(rows["tokens"].split()[0].replace(",", ""))
    assert abs(counted - tokens) <= tokens // 100  # sum over chunks: BPE joins differ by a hair
    assert "tiktoken" in rows["tokens"]
    chunks = int(rows["chunks"].split()[0])
    assert tokens // 2000 < chunks <= tokens // 2000 + 2
    assert result.err == ""


def test_a_pdf_lists_its_chunks_by_page_label_and_warns_about_a_scanned_page(run, tmp_path: Path) -> None:
    words = " ".join(["reading"] * 300)
    pdf = build_pdf(
        tmp_path / "book.pdf",
        ["Preface. " + words, SCANNED, "Chapter one. " + words, "Chapter two. " + words],
        labels=[(0, "r", 1), (2, "D", 1)],
    )

    result = run("inspect", str(pdf), "--chunks", "--chunk-tokens", "400")

    assert result.status == 0, result.err
    assert table(result.out)["pages"] == "4 (1 without text: 2)"
    chunk_lines = [line.split("\t") for line in result.out.splitlines() if "\t" in line]
    assert [int(index) for index, _, _ in chunk_lines] == list(range(len(chunk_lines)))
    assert all(int(tokens) <= 400 for _, tokens, _ in chunk_lines)
    assert chunk_lines[0][2] == f"{pdf} p. i"
    assert chunk_lines[-1][2].endswith("p. 2")
    assert "warning:" in result.err and "2" in result.err


def test_a_directory_counts_its_files_and_what_it_skipped(run, tmp_path: Path) -> None:
    root = build_tree(
        tmp_path / "reports",
        {
            "q1.md": "# Q1\n\nRevenue grew.\n",
            "notes/q2.txt": "Revenue fell.\n",
            ".hidden.txt": "secret\n",
            "logo.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
        },
    )

    result = run("inspect", str(root), "--json", "--chunks")

    assert result.status == 0, result.err
    report = json.loads(result.out)
    assert report["format"] == "directory"
    assert report["files"] == 2
    assert sum(report["skipped"].values()) == 2
    sources = [span["source"] for chunk in report["chunk_list"] for span in chunk["spans"]]
    assert sources == ["notes/q2.txt", "q1.md"] or sources == ["q1.md", "notes/q2.txt"]


def test_a_terminal_sees_progress_on_stderr_and_a_pipe_does_not(run, tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("".join(log_lines(3000)))

    watched = run("inspect", str(log), "--chunk-tokens", "1000", stderr_isatty=True)
    piped = run("inspect", str(log), "--chunk-tokens", "1000")

    assert watched.status == piped.status == 0
    assert "\rread " in watched.err and "chunks" in watched.err
    assert watched.err.endswith("\r\x1b[K")  # the line is wiped before the table is read
    assert piped.err == ""
    assert watched.out == piped.out


def test_json_output_has_the_documented_fields(run, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("The key is under the mat.\n" * 2000)

    result = run("inspect", str(notes), "--json", "--chunks", "--chunk-tokens", "1000")

    assert result.status == 0, result.err
    report = json.loads(result.out)  # stdout is exactly one JSON object
    documented = {
        "source", "format", "size_bytes", "files", "formats", "skipped", "pages", "empty_pages", "chapters",
        "lines", "characters", "tokens", "tokenizer", "chunk_tokens", "chunks", "largest_chunk", "warnings",
        "chunk_list",
    }  # fmt: skip
    assert set(report) == documented
    assert report["chunks"] == len(report["chunk_list"])
    assert report["tokens"] == sum(chunk["tokens"] for chunk in report["chunk_list"])
    assert report["largest_chunk"] <= 1000
    assert sum(chunk["characters"] for chunk in report["chunk_list"]) == report["characters"] == 26 * 2000
    assert (
        report["chunk_list"][1]["spans"][0]["line_first"]
        == report["chunk_list"][0]["spans"][0]["line_last"] + 1
    )


def test_stdin_is_read_from_a_pipe(run) -> None:
    result = run("inspect", "-", "--json", stdin="".join(log_lines(300)).encode())
    assert result.status == 0, result.err
    report = json.loads(result.out)
    assert (report["source"], report["lines"], report["size_bytes"]) == ("-", 300, None)


def test_stdin_chunks_appear_before_the_writer_is_done(tmp_path: Path) -> None:
    """`tail -f app.log | memread inspect - --chunks`: chunks are listed while the pipe is still open."""
    process = subprocess.Popen(
        [sys.executable, "-m", "memread", "inspect", "-", "--chunks", "--chunk-tokens", "200"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        for line in log_lines(400):
            process.stdin.write(line.encode())
        process.stdin.flush()
        deadline = time.monotonic() + 30
        ready: list[object] = []
        while not ready and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stdout], [], [], 0.5)
        assert ready, "no chunk was listed while stdin was still open"
        first = process.stdout.readline().decode()
        assert first.startswith("0\t") and "stdin lines 1-" in first
        assert process.poll() is None  # still reading: the pipe is open
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    assert process.returncode == 0


def test_counting_with_the_models_own_tokenizer(run, tmp_path: Path, smollm2_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("".join(log_lines(2000)))

    default = json.loads(run("inspect", str(notes), "--json").out)
    result = run("inspect", str(notes), "--json", "--model", str(smollm2_path), "--chunk-tokens", "3000")

    assert result.status == 0, result.err
    report = json.loads(result.out)
    assert report["tokenizer"].startswith("gguf:")
    assert report["tokens"] != default["tokens"]  # SmolLM2's vocabulary is not cl100k
    assert report["largest_chunk"] <= 3000


# -- bad input ---------------------------------------------------------------------------------------------------


def test_a_missing_file_is_an_input_error_with_a_hint(run, tmp_path: Path) -> None:
    result = run("inspect", str(tmp_path / "nope.pdf"))
    assert result.status == 3
    assert result.err.startswith("error: ") and "\n\nhint: " in result.err
    assert result.out == ""


def test_an_encrypted_pdf_needs_its_password(run, tmp_path: Path) -> None:
    plain = build_pdf(tmp_path / "plain.pdf", ["Quarterly figures. " * 40])
    locked = encrypt_pdf(plain, tmp_path / "locked.pdf", user_password="s3cret")

    refused = run("inspect", str(locked))
    opened = run("inspect", str(locked), "--password", "s3cret", "--json")

    assert refused.status == 3 and "--password" in refused.err
    assert opened.status == 0, opened.err
    assert json.loads(opened.out)["pages"] == 1


def test_a_tiny_chunk_budget_is_a_usage_error(run, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    assert run("inspect", str(notes), "--chunk-tokens", "5").status == 2


def test_a_model_that_is_not_downloaded_is_not_fetched(run, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMREAD_MODELS_DIR", str(tmp_path / "empty-cache"))
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")

    result = run("inspect", str(notes), "--model", "smollm2-135m")

    assert result.status == 4
    assert "hint: " in result.err and "pull" in result.err
    assert not (tmp_path / "empty-cache").exists() or not any((tmp_path / "empty-cache").iterdir())
