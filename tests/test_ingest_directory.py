"""Folders: recursive, sorted, mixed formats, with hidden, .gitignored and binary files skipped and counted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memread.errors import InputError
from memread.ingest import open_document
from memread.testing.documents import Chapter, build_epub, build_pdf, build_tree, compress, read_all


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    root = build_tree(
        tmp_path / "reports",
        {
            "summary.md": "# Summary\nRevenue grew 12%.\n",
            "notes/b-second.txt": "second note\n",
            "notes/a-first.txt": "first note\nline two\n",
            ".gitignore": "*.tmp\nbuild/\n",
            "scratch.tmp": "ignored by git\n",
            "build/out.txt": "generated\n",
            ".secrets": "hidden file\n",
            ".cache/x.txt": "hidden folder\n",
            "logo.bin": b"\x89PNG\r\n\x1a\n" + bytes(100),
            "data.dat": b"abc\x00def" * 10,
            "empty.txt": "",
        },
    )
    build_pdf(root / "notes" / "q3.pdf", ["Q3 page one.", "Q3 page two."], labels=[(0, "D", 7)])
    build_epub(root / "book.epub", [Chapter("Only chapter", "<h1>Only chapter</h1><p>Book text.</p>")])
    (root / "server.log").write_text("boot\nready\n")
    compress(root / "server.log", "gz")
    (root / "server.log").unlink()
    return root


def test_a_folder_reads_every_readable_file_in_sorted_order_with_headers(reports: Path) -> None:
    document = open_document(str(reports))
    text, segments = read_all(document)

    assert text == (
        "=== book.epub ===\nOnly chapter\n\nBook text.\n\n"
        "=== server.log.gz ===\nboot\nready\n\n"
        "=== summary.md ===\n# Summary\nRevenue grew 12%.\n\n"
        "=== notes/a-first.txt ===\nfirst note\nline two\n\n"
        "=== notes/b-second.txt ===\nsecond note\n\n"
        "=== notes/q3.pdf ===\nQ3 page one.\n\nQ3 page two."
    )
    by_source = [(s.provenance.source, s.provenance.page_label, s.provenance.line_start) for s in segments]
    assert ("notes/q3.pdf", "8", None) in by_source
    assert ("notes/a-first.txt", None, 1) in by_source
    chapters = [s.provenance.chapter for s in segments if s.provenance.source == "book.epub"]
    assert "Only chapter" in chapters
    assert document.format == "directory"
    assert document.stats.files == 6
    assert document.stats.formats == {"epub": 1, "text": 4, "pdf": 1}


def test_skipped_paths_are_counted_by_reason_and_summarised(reports: Path) -> None:
    document = open_document(str(reports))
    read_all(document)

    assert document.stats.skipped == {"hidden": 3, "gitignored": 2, "binary": 2, "empty": 1}
    assert document.warnings[0] == f"{reports}: skipped 8 paths (2 binary, 1 empty, 2 gitignored, 3 hidden)"


def test_symlinked_folders_are_not_followed(reports: Path) -> None:
    os.symlink(reports, reports / "notes" / "loop")
    document = open_document(str(reports))
    text, _ = read_all(document)
    assert text.count("=== summary.md ===") == 1
    assert document.stats.skipped["symlinked folders"] == 1


def test_a_damaged_file_inside_a_folder_is_skipped_with_a_warning(reports: Path) -> None:
    (reports / "broken.pdf").write_bytes(b"%PDF-1.4\ngarbage\n")
    document = open_document(str(reports))
    text, _ = read_all(document)
    assert "broken.pdf" not in text
    assert any(w.startswith("skipped broken.pdf: ") for w in document.warnings)


def test_a_folder_with_nothing_readable_is_an_input_error(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "junk", {".hidden": "x", "a.bin": b"\x00\x01\x02"})
    with pytest.raises(InputError) as caught:
        open_document(str(root))
    assert caught.value.message == f"{root}: no readable files (skipped: 1 binary, 1 hidden)"
    assert caught.value.hint


def test_an_empty_folder_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "void").mkdir()
    with pytest.raises(InputError, match="no readable files"):
        open_document(str(tmp_path / "void"))
