"""PDFs: a segment per page with page numbers and printed labels; scanned pages, encryption, damage."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest
from docbuilders import SCANNED, build_pdf, encrypt_pdf, read_all, truncated_copy

from memread.errors import InputError
from memread.ingest import open_document

PAGES = [
    "Preface: why   this\tbook exists.",
    "Preface, second page.",
    "Chapter 1. The harbour master counted 312 boats.",
    SCANNED,
    "Chapter 2. The lighthouse was painted red in 1911.",
]


@pytest.fixture
def book(tmp_path: Path) -> Path:
    # i, ii for the preface, then 1, 2, 3 for the body: what a printed book does.
    return build_pdf(tmp_path / "book.pdf", PAGES, labels=[(0, "r", 1), (2, "D", 1)])


def test_each_page_is_a_segment_with_its_page_number_and_printed_label(book: Path) -> None:
    document = open_document(str(book))
    text, segments = read_all(document)

    assert document.format == "pdf" and document.size_bytes == book.stat().st_size
    assert [(s.provenance.page, s.provenance.page_label) for s in segments] == [
        (1, "i"),
        (2, "ii"),
        (3, "1"),
        (5, "3"),
    ]
    assert text == (
        "Preface: why this book exists.\n\nPreface, second page.\n\n"
        "Chapter 1. The harbour master counted 312 boats.\n\n"
        "Chapter 2. The lighthouse was painted red in 1911."
    ), "whitespace collapsed, pages separated by a blank line"
    assert all(s.provenance.source == str(book) for s in segments)
    assert document.stats.pages == 5


def test_an_image_only_page_warns_once_and_names_the_page(book: Path) -> None:
    document = open_document(str(book))
    read_all(document)

    assert document.stats.empty_pages == [4]
    assert document.warnings == [f"{book}: 1 page has no text layer (scanned?): 4 — OCR is not supported"]


def test_several_scanned_pages_are_listed_in_one_warning(tmp_path: Path) -> None:
    pdf = build_pdf(tmp_path / "scan.pdf", ["cover text", SCANNED, "middle", SCANNED, SCANNED])
    document = open_document(str(pdf))
    read_all(document)
    assert document.warnings == [
        f"{pdf}: 3 pages have no text layer (scanned?): 2, 4, 5 — OCR is not supported"
    ]


def test_a_pdf_without_any_text_layer_is_an_input_error(tmp_path: Path) -> None:
    pdf = build_pdf(tmp_path / "scan.pdf", [SCANNED, SCANNED])
    with pytest.raises(InputError) as caught:
        read_all(open_document(str(pdf)))
    assert "no page has extractable text" in caught.value.message and "OCR" in (caught.value.hint or "")


def test_pages_without_labels_have_no_label(tmp_path: Path) -> None:
    pdf = build_pdf(tmp_path / "plain.pdf", ["one", "two"])
    _, segments = read_all(open_document(str(pdf)))
    assert [(s.provenance.page, s.provenance.page_label) for s in segments] == [(1, None), (2, None)]


def test_a_gzipped_pdf_and_a_piped_pdf_read_like_the_pdf(book: Path, tmp_path: Path) -> None:
    packed = tmp_path / "book.pdf.gz"
    packed.write_bytes(gzip.compress(book.read_bytes()))
    expected, _ = read_all(open_document(str(book)))

    from_gz = open_document(str(packed))
    assert read_all(from_gz)[0] == expected and from_gz.format == "pdf"
    from_pipe = open_document("-", stdin=io.BytesIO(book.read_bytes()))
    text, segments = read_all(from_pipe)
    assert text == expected and segments[2].provenance == segments[2].provenance.__class__(
        "-", page=3, page_label="1"
    )


def test_an_owner_only_encrypted_pdf_opens_without_a_password(book: Path, tmp_path: Path) -> None:
    locked = encrypt_pdf(book, tmp_path / "owner-only.pdf", user_password="")
    text, _ = read_all(open_document(str(locked)))
    assert "harbour master counted 312 boats" in text


def test_a_password_protected_pdf_asks_for_the_password(book: Path, tmp_path: Path) -> None:
    locked = encrypt_pdf(book, tmp_path / "locked.pdf", user_password="s3cret")

    with pytest.raises(InputError) as caught:
        open_document(str(locked))
    assert caught.value.message == f"{locked} is encrypted"
    assert "--password" in (caught.value.hint or "")

    with pytest.raises(InputError) as caught:
        open_document(str(locked), password="guess")
    assert "wrong password" in caught.value.message

    text, _ = read_all(open_document(str(locked), password="s3cret"))
    assert "lighthouse was painted red in 1911" in text


@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.9])
def test_a_truncated_pdf_is_an_input_error_with_a_hint(book: Path, tmp_path: Path, fraction: float) -> None:
    broken = truncated_copy(book, tmp_path / "broken.pdf", fraction)
    with pytest.raises(InputError) as caught:
        read_all(open_document(str(broken)))
    assert str(broken) in caught.value.message and caught.value.hint


def test_garbage_with_a_pdf_header_is_an_input_error(tmp_path: Path) -> None:
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(b"%PDF-1.7\n" + b"this is not a pdf body\n" * 50)
    with pytest.raises(InputError) as caught:
        read_all(open_document(str(fake)))
    assert caught.value.hint


def test_a_page_with_damaged_content_is_skipped_and_the_others_kept(tmp_path: Path) -> None:
    from pypdf import PdfWriter
    from pypdf.generic import NameObject, StreamObject

    whole = build_pdf(tmp_path / "three.pdf", ["page one words", "page two words", "page three words"])
    writer = PdfWriter(clone_from=str(whole))
    garbage = StreamObject()
    garbage.set_data(b"not zlib at all")  # claims FlateDecode below, so decoding fails
    garbage[NameObject("/Filter")] = NameObject("/FlateDecode")
    writer.pages[1][NameObject("/Contents")] = writer._add_object(garbage)
    writer.write(str(tmp_path / "damaged.pdf"))

    document = open_document(str(tmp_path / "damaged.pdf"))
    text, segments = read_all(document)

    assert text == "page one words\n\npage three words"
    assert [s.provenance.page for s in segments] == [1, 3]
    assert any("1 page could not be read and was skipped: 2" in w for w in document.warnings)
    assert document.stats.empty_pages == []
