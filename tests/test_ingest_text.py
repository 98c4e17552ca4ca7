"""Text files and logs: line-range provenance, compression, encodings, huge lines, and bad input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memread.errors import ExitStatus, InputError
from memread.ingest import open_document
from memread.ingest.text import SEGMENT_CHARS
from memread.testing.documents import compress, log_lines, read_all


def test_a_log_reads_back_exactly_with_line_ranges_that_tile_the_file(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    lines = list(log_lines(40_000))
    log.write_text("".join(lines), encoding="utf-8")

    document = open_document(str(log))
    text, segments = read_all(document)

    assert text == "".join(lines)
    assert document.format == "text" and document.size_bytes == log.stat().st_size
    assert len(segments) > 1, "a 3 MB log should stream in several segments"
    assert all(len(segment.text) <= SEGMENT_CHARS for segment in segments)
    expected_start = 1
    for segment in segments:
        assert segment.provenance.source == str(log)
        assert segment.provenance.line_start == expected_start
        assert segment.text.endswith("\n"), "segments end at line breaks when lines are short"
        assert segment.provenance.line_end == expected_start + segment.text.count("\n") - 1
        expected_start = segment.provenance.line_end + 1
    assert segments[-1].provenance.line_end == 40_000 == document.stats.lines
    # A line's provenance points at that line: the 12,345th line is inside the segment that claims it.
    holder = next(s for s in segments if s.provenance.line_start <= 12_345 <= s.provenance.line_end)
    offset = 12_345 - holder.provenance.line_start
    assert holder.text.split("\n")[offset] == lines[12_344].rstrip("\n")


@pytest.mark.parametrize("codec", ["gz", "bz2", "xz"])
def test_compressed_logs_are_read_transparently(tmp_path: Path, codec: str) -> None:
    log = tmp_path / "server.log"
    lines = list(log_lines(5_000))
    log.write_text("".join(lines), encoding="utf-8")
    packed = compress(log, codec)

    document = open_document(str(packed))
    text, segments = read_all(document)

    assert text == "".join(lines)
    assert segments[0].provenance.source == str(packed)
    assert segments[-1].provenance.line_end == 5_000
    assert document.size_bytes == packed.stat().st_size


def test_a_truncated_gzip_log_is_an_input_error_not_a_traceback(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(log_lines(50_000)), encoding="utf-8")
    packed = compress(log, "gz")
    packed.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])

    with pytest.raises(InputError) as caught:
        read_all(open_document(str(packed)))
    assert "truncated or corrupt" in caught.value.message and caught.value.hint


def test_invalid_utf8_is_replaced_and_warned_about_once(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"caf\xe9 ok\n" * 3 + b"fine \xc3\xa9t\xc3\xa9\n" + b"bad \xff\xfe end\n")

    document = open_document(str(notes))
    text, _ = read_all(document)

    assert text == "caf\ufffd ok\n" * 3 + "fine été\n" + "bad \ufffd\ufffd end\n"
    assert len(document.warnings) == 1 and "not valid UTF-8" in document.warnings[0]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-8-sig"])
def test_a_byte_order_mark_picks_the_encoding(tmp_path: Path, encoding: str) -> None:
    notes = tmp_path / "windows.txt"
    notes.write_bytes("Grüße aus Köln\r\nzweite Zeile\r\n".encode(encoding))

    document = open_document(str(notes))
    text, segments = read_all(document)

    assert text == "Grüße aus Köln\nzweite Zeile\n", "BOM stripped, CRLF unified"
    assert segments[-1].provenance.line_end == 2
    assert document.warnings == []


def test_control_characters_and_terminal_colours_are_dropped(tmp_path: Path) -> None:
    log = tmp_path / "ci.log"
    log.write_bytes(b"\x1b[31mFAILED\x1b[0m test_x\x00\r\nold mac line\rnext\n\ttabbed\n")

    text, segments = read_all(open_document(str(log)))

    assert text == "FAILED test_x\nold mac line\nnext\n\ttabbed\n"
    assert segments[-1].provenance.line_end == 4


def test_a_ten_megabyte_line_streams_in_pieces_that_share_its_line_number(tmp_path: Path) -> None:
    dump = tmp_path / "one-line.json"
    line = ('{"k": "' + "x" * (10 * 1024 * 1024) + '"}').encode()
    dump.write_bytes(b"first\n" + line + b"\nlast\n")

    text, segments = read_all(open_document(str(dump)))

    assert text.encode() == b"first\n" + line + b"\nlast\n"
    assert all(len(segment.text) <= SEGMENT_CHARS for segment in segments)
    middle = [s for s in segments if s.provenance.line_start == 2 and s.provenance.line_end == 2]
    assert len(middle) >= 10 * 1024 * 1024 // SEGMENT_CHARS - 1
    assert segments[-1].provenance.line_end == 3


def test_a_file_without_a_known_extension_is_read_when_it_sniffs_as_text(tmp_path: Path) -> None:
    readme = tmp_path / "README"
    readme.write_text("plain words\n", encoding="utf-8")
    document = open_document(str(readme))
    assert read_all(document)[0] == "plain words\n" and document.format == "text"


@pytest.mark.parametrize("content", [b"", b"   \n\n\t  \n"])
def test_empty_input_is_an_input_error(tmp_path: Path, content: bytes) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(content)
    with pytest.raises(InputError) as caught:
        open_document(str(empty))
    assert "is empty" in caught.value.message and caught.value.hint
    assert caught.value.exit_status == ExitStatus.INPUT


def test_a_missing_path_says_so_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        open_document(str(tmp_path / "nope.pdf"))
    assert "no such file or directory" in caught.value.message
    assert "-" in (caught.value.hint or "")


def test_a_binary_file_passed_directly_is_refused(tmp_path: Path) -> None:
    blob = tmp_path / "data.bin"
    blob.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(InputError) as caught:
        open_document(str(blob))
    assert "binary" in caught.value.message and "PDF, EPUB" in (caught.value.hint or "")


def test_an_unknown_format_is_named(tmp_path: Path) -> None:
    picture = tmp_path / "photo.jpg"
    picture.write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(200))
    with pytest.raises(InputError) as caught:
        open_document(str(picture))
    assert caught.value.message == f"{picture} is a JPEG image, which memread cannot read"


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads files regardless of mode"
)
def test_an_unreadable_file_is_an_input_error(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hidden\n")
    secret.chmod(0)
    with pytest.raises(InputError) as caught:
        open_document(str(secret))
    assert "permission denied" in caught.value.message


def test_characters_split_across_read_blocks_survive(tmp_path: Path) -> None:
    from memread.ingest.text import READ_BYTES

    notes = tmp_path / "accents.txt"
    # "é" (2 bytes) straddles the first block boundary, "\r\n" the second; an invalid byte comes later.
    first = b"a" * (READ_BYTES - 1) + "é".encode() + b"\n"
    second = b"b" * (READ_BYTES * 2 - len(first) - 1) + b"\r\n" + b"tail \xff\n"
    notes.write_bytes(first + second)

    document = open_document(str(notes))
    text, segments = read_all(document)

    assert (
        text == "a" * (READ_BYTES - 1) + "é\n" + "b" * (READ_BYTES * 2 - len(first) - 1) + "\ntail \ufffd\n"
    )
    assert segments[-1].provenance.line_end == 3
    assert len(document.warnings) == 1
