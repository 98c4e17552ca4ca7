"""stdin ("-"): streamed as it arrives, decompressed when compressed, refused when empty."""

from __future__ import annotations

import gzip
import io
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memread.document import Segment
from memread.errors import InputError
from memread.ingest import open_document
from memread.testing.documents import log_lines, read_all


def _next_within(segments: Iterator[Segment], seconds: float) -> Segment:
    """The next segment, or fail if it does not arrive in time (rather than hang the suite)."""
    box: list[Segment] = []
    reader = threading.Thread(target=lambda: box.append(next(segments)), daemon=True)
    reader.start()
    reader.join(seconds)
    assert box, f"no segment within {seconds}s while the writer keeps the pipe open"
    return box[0]


def test_lines_are_handed_over_before_the_writer_closes_the_pipe() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as stdin:
        writer = os.fdopen(write_end, "wb")
        writer.write(b"first event\nsecond event\n")
        writer.flush()
        document = open_document("-", stdin=stdin)
        segments = document.segments()

        first = _next_within(segments, 10)
        assert first.text == "first event\nsecond event\n"
        assert (first.provenance.source, first.provenance.line_start, first.provenance.line_end) == (
            "-",
            1,
            2,
        )

        writer.write(b"third event\n")
        writer.flush()
        second = _next_within(segments, 10)
        assert (second.text, second.provenance.line_start) == ("third event\n", 3)
        writer.write(b"unterminated tail")
        writer.close()
        rest = list(segments)
    assert [s.text for s in rest] == ["unterminated tail"]
    assert document.format == "stdin" and document.stats.lines == 4


def test_a_short_first_line_is_not_held_back_for_sniffing() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as stdin, os.fdopen(write_end, "wb") as writer:
        writer.write(b"ok\n")
        writer.flush()
        box: list[Segment] = []
        opener = threading.Thread(target=lambda: box.append(next(open_document("-", stdin=stdin).segments())))
        opener.daemon = True
        opener.start()
        opener.join(10)
        assert box and box[0].text == "ok\n"


def test_gzip_on_stdin_streams_too() -> None:
    read_end, write_end = os.pipe()
    pipe = os.fdopen(write_end, "wb")
    packer = gzip.GzipFile(fileobj=pipe, mode="wb")
    with os.fdopen(read_end, "rb") as stdin:
        packer.write(b"".join(line.encode() for line in log_lines(50)))
        packer.flush()  # a sync flush: the bytes so far can be decompressed
        document = open_document("-", stdin=stdin)
        segments = document.segments()
        first = _next_within(segments, 10)
        assert first.provenance.line_start == 1 and first.text.startswith("2026-11-22T07:00:01Z INFO")
        packer.write(b"the end\n")
        packer.close()
        pipe.close()
        text = first.text + "".join(s.text for s in segments)
    assert text == "".join(log_lines(50)) + "the end\n"


def test_a_large_stream_arrives_in_bounded_segments_with_contiguous_lines() -> None:
    lines = "".join(log_lines(60_000))
    document = open_document("-", stdin=io.BytesIO(lines.encode()))
    text, segments = read_all(document)
    assert text == lines
    assert max(len(s.text) for s in segments) <= 256 * 1024
    for before, after in zip(segments, segments[1:], strict=False):
        assert after.provenance.line_start == before.provenance.line_end + 1


@pytest.mark.parametrize("content", [b"", b"\n  \n"])
def test_empty_stdin_is_an_input_error(content: bytes) -> None:
    with pytest.raises(InputError) as caught:
        read_all(open_document("-", stdin=io.BytesIO(content)))
    assert caught.value.message == "standard input is empty (no text to read)"
    assert caught.value.hint


def test_binary_stdin_is_refused() -> None:
    with pytest.raises(InputError, match="standard input looks like a binary file"):
        open_document("-", stdin=io.BytesIO(b"\x00\x01\x02\x03" * 100))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_path_streams_like_stdin(tmp_path: Path) -> None:
    """`memread ask <(zcat app.log.gz) …` hands memread a path to a pipe, whose size is 0."""
    fifo = tmp_path / "fd63"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as writer:
            writer.write(b"".join(line.encode() for line in log_lines(1000)))

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    document = open_document(str(fifo))
    text, segments = read_all(document)
    writer.join(10)
    assert text == "".join(log_lines(1000))
    assert segments[0].provenance.source == str(fifo) and segments[-1].provenance.line_end == 1000
