"""EPUBs: reading order, chapter titles, paragraph structure, malformed and truncated books."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PERSISTENT_MODELS_DIR

from memread.errors import InputError
from memread.ingest import open_document
from memread.testing.documents import (
    Chapter,
    build_epub,
    debian_file,
    read_all,
    truncated_copy,
    without_member,
)

CHAPTERS = [
    Chapter(
        "The Harbour", "<h1>The Harbour</h1><p>The harbour held 312 boats.</p><p>Gulls   everywhere.</p>"
    ),
    Chapter(
        "Lighthouse",
        "<h2>The Lighthouse</h2><p>Painted&nbsp;red in 1911.</p><ul><li>tall</li><li>old</li></ul>",
    ),
    Chapter("Epilogue", "<div>No heading here.<br/>A second line.</div><pre>  kept\n    indented</pre>"),
]


def test_chapters_come_in_spine_order_not_manifest_order(tmp_path: Path) -> None:
    book = build_epub(tmp_path / "book.epub", CHAPTERS, spine=[2, 0, 1])

    document = open_document(str(book))
    text, segments = read_all(document)

    assert [s.provenance.chapter for s in segments] == ["Epilogue", "The Harbour", "The Lighthouse"]
    assert document.format == "epub" and document.stats.chapters == 3
    assert text == (
        "No heading here.\nA second line.\n\n  kept\n    indented"
        "\n\nThe Harbour\n\nThe harbour held 312 boats.\n\nGulls everywhere."
        "\n\nThe Lighthouse\n\nPainted red in 1911.\n\ntall\n\nold"
    ), "paragraphs and headings on their own lines, pre kept, chapters separated by a blank line"
    assert document.warnings == []


def test_a_chapter_without_a_heading_is_named_by_its_title(tmp_path: Path) -> None:
    book = build_epub(tmp_path / "book.epub", [Chapter("Only a title", "<p>words</p>")])
    _, segments = read_all(open_document(str(book)))
    assert segments[0].provenance.chapter == "Only a title"


def test_a_book_whose_manifest_lists_a_missing_file_is_still_read(tmp_path: Path) -> None:
    whole = build_epub(tmp_path / "whole.epub", CHAPTERS)
    broken = without_member(whole, tmp_path / "broken.epub", "ch1.xhtml")

    document = open_document(str(broken))
    text, segments = read_all(document)

    assert [s.provenance.chapter for s in segments] == ["The Harbour", "Epilogue"]
    assert "312 boats" in text and "1911" not in text
    assert any("malformed EPUB" in w for w in document.warnings)
    assert any("missing" in w and "ch1.xhtml" in w for w in document.warnings)


def test_a_truncated_epub_is_an_input_error_with_a_hint(tmp_path: Path) -> None:
    whole = build_epub(tmp_path / "whole.epub", CHAPTERS)
    broken = truncated_copy(whole, tmp_path / "cut.epub", 0.6)
    with pytest.raises(InputError) as caught:
        read_all(open_document(str(broken)))
    assert "not a readable EPUB" in caught.value.message and "unzip -t" in (caught.value.hint or "")


@pytest.mark.network
def test_debians_malformed_live_manual_is_read(tmp_path: Path) -> None:
    """ebooklib raises on this real book (a broken NCX anchor); the zip fallback reads it."""
    book = debian_file("live-manual-epub", "live-manual.en.epub", PERSISTENT_MODELS_DIR.parent / "test-documents" / "debian")
    if book is None:
        pytest.skip("Debian's live-manual-epub cannot be fetched (needs apt-get and Debian's mirrors)")

    document = open_document(str(book))
    text, segments = read_all(document)

    assert 20_000 < len(text.split()) < 40_000, "about 27k words, each file read once"
    assert document.stats.chapters > 5 and all(s.provenance.chapter for s in segments)
    assert "live-build" in text
