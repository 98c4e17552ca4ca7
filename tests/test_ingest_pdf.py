"""PDFs: a segment per page with page numbers and printed labels; scanned pages, encryption, damage."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from memread.errors import InputError
from memread.ingest import open_document
from memread.testing.documents import (
    SCANNED,
    build_pdf,
    debian_file,
    encrypt_pdf,
    read_all,
    scanned_with_ocr_pdf,
    truncated_copy,
)
from memread.testing.hostile import letterspaced_pdf, raw_pdf, spaceless_cff_pdf, typeset_pdf

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


def test_a_blank_page_is_counted_without_text_but_not_taken_for_a_scan(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for text in ("Chapter 1 ends here.", None, "Chapter 2 starts on the right-hand page."):
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    pdf.output(str(tmp_path / "book.pdf"))

    document = open_document(str(tmp_path / "book.pdf"))
    text, segments = read_all(document)
    assert [s.provenance.page for s in segments] == [1, 3]
    assert document.stats.empty_pages == [2] and document.warnings == []


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


# --- the text itself: words as the author set them ---------------------------------------------------------------

TEX_LINES = [
    "Parsers may accept lines consisting solely of spaces and tabs as stanza",
    "separators, but control files should use empty lines. Some control files",
    "allow only one stanza; others allow several. A package unsuitable for dis-",
    "tribution is not accepted.",
]
SPACELESS = "Parsersmayacceptlinesconsistingsolelyofspacesandtabsasstanzaseparators"


def test_words_set_by_position_like_tex_keep_their_spaces_and_split_words_are_rejoined(tmp_path: Path) -> None:
    pdf = typeset_pdf(tmp_path / "manual.pdf", [TEX_LINES])
    text, _ = read_all(open_document(str(pdf)))
    assert text == (
        "Parsers may accept lines consisting solely of spaces and tabs as stanza\n"
        "separators, but control files should use empty lines. Some control files\n"
        "allow only one stanza; others allow several. A package unsuitable for distribution is not accepted."
    )


def test_words_spaced_by_letter_spacing_like_groff_get_their_spaces(tmp_path: Path) -> None:
    """PDFium alone reads "Ashell function is called lik easimple"; the gaps between letters give the spaces back."""
    text, _ = read_all(open_document(str(letterspaced_pdf(tmp_path / "bash.1.pdf"))))
    assert text == "A shell function is called like a simple command."


def test_a_text_layer_without_spaces_is_read_and_warned_about_naming_its_pages(tmp_path: Path) -> None:
    pdf = typeset_pdf(tmp_path / "spaceless.pdf", [TEX_LINES, TEX_LINES], word_gap=0)
    document = open_document(str(pdf))
    text, segments = read_all(document)

    assert [s.provenance.page for s in segments] == [1, 2] and "Parsersmayacceptlines" in text
    assert document.warnings == [
        f"{pdf}: 2 pages have words run together (e.g. \u201cParsersmayacceptlinesconsistingsolelyofs…\u201d): "
        "1, 2 — the PDF's text layer lacks spaces there"
    ]


def test_the_glue_check_flags_glued_extracted_text_and_passes_spaced_text(tmp_path: Path) -> None:
    """On text two libraries really extracted: glued from a spaceless layer, spaced from a TeX-like one."""
    from pypdf import PdfReader

    from memread.ingest.wordshape import looks_glued, word_shape

    spaceless = typeset_pdf(tmp_path / "spaceless.pdf", [TEX_LINES * 2], word_gap=0)
    spaced = typeset_pdf(tmp_path / "spaced.pdf", [TEX_LINES * 2])
    for pdf, glued in ((spaceless, True), (spaced, False)):
        by_pypdf = PdfReader(str(pdf)).pages[0].extract_text()
        by_memread, _ = read_all(open_document(str(pdf)))
        assert looks_glued(by_pypdf) is glued and looks_glued(by_memread) is glued, pdf
    shape = word_shape("The words of a sentence, and one identifier: DEB_BUILD_MAINT_OPTIONS_HARDENING.")
    assert shape.long_runs == () and not shape.glued


def test_a_scanned_page_with_an_invisible_ocr_layer_is_read_not_called_scanned(tmp_path: Path) -> None:
    pdf = scanned_with_ocr_pdf(tmp_path / "ocr.pdf", "Scanned page: the harbour master counted 312 boats.")
    document = open_document(str(pdf))
    text, _ = read_all(document)
    assert text == "Scanned page: the harbour master counted 312 boats." and document.warnings == []


def test_ligature_characters_are_spelled_out() -> None:
    from memread.ingest.pdf_text import normalise_page

    assert normalise_page("e\ufb03cient \ufb01les, \ufb02at") == "efficient files, flat"


def test_printed_page_labels_are_the_ones_pypdf_reads(tmp_path: Path) -> None:
    from pypdf import PdfReader

    pdf = build_pdf(tmp_path / "labels.pdf", [f"page {n}" for n in range(1, 9)],
                    labels=[(0, "r", 1), (2, "D", 1), (5, "A", 1), (7, "a", 3)])
    _, segments = read_all(open_document(str(pdf)))
    assert [s.provenance.page_label for s in segments] == list(PdfReader(str(pdf)).page_labels)
    assert [s.provenance.page_label for s in segments] == ["i", "ii", "1", "2", "3", "A", "B", "c"]


# --- decompression bombs: measured before PDFium inflates anything ------------------------------------------------


def test_the_content_stream_bomb_limit_is_memread_max_expansion(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pdf = raw_pdf(tmp_path / "inflating.pdf", [("The first page", "plain"), ("Hidden by bulk", "inflating")])
    document = open_document(str(pdf))
    text, _ = read_all(document)
    assert text == "The first page" and "decompression-bomb limit" in document.warnings[0]

    monkeypatch.setenv("MEMREAD_MAX_EXPANSION", "0")  # off: the 80 MiB page is read
    text, _ = read_all(open_document(str(pdf)))
    assert text == "The first page\n\nHidden by bulk"


def test_a_bomb_in_an_encrypted_pdf_is_found_through_the_decrypted_streams(tmp_path: Path) -> None:
    """The file scan sees ciphertext; pypdf decrypts and measures each page's streams before PDFium reads it."""
    pdf = raw_pdf(tmp_path / "inflating.pdf", [("The first page", "plain"), ("Hidden by bulk", "inflating")])
    locked = encrypt_pdf(pdf, tmp_path / "locked.pdf", user_password="s3cret")
    document = open_document(str(locked), password="s3cret")
    text, _ = read_all(document)
    assert text == "The first page"
    assert document.warnings == [f"{locked}: 1 page was skipped: 2 — content that expands past the "
                                 "decompression-bomb limit (raise MEMREAD_MAX_EXPANSION to read it)"]


def test_the_file_scan_finds_the_bomb_stream_and_nothing_in_a_normal_pdf(tmp_path: Path, book: Path) -> None:
    from memread.ingest.pdf_guard import Scan, scan_file

    pdf = raw_pdf(tmp_path / "inflating.pdf", [("The first page", "plain"), ("Hidden by bulk", "inflating")])
    with open(pdf, "rb") as bomb, open(book, "rb") as normal:
        assert len(scan_file(bomb).bombs) == 1 and scan_file(normal) == Scan()


# --- a library that is not installed is named, not taken for damage -----------------------------------------------

BLOCKED_IMPORTS = """
import sys
for name in sys.argv[2:]:
    sys.modules[name] = None  # import fails as if the library were not installed
from memread.ingest import open_document
document = open_document(sys.argv[1])
print("".join(segment.text for segment in document.segments()))
print("\\n".join(document.warnings))
"""


def _read_without(pdf: Path, *modules: str) -> list[str]:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", BLOCKED_IMPORTS, str(pdf), *modules], capture_output=True,
                          text=True, timeout=120, cwd=Path(__file__).parent.parent)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_without_fonttools_a_page_pypdf_reads_warns_to_install_it_not_that_the_pdf_is_damaged(
    tmp_path: Path,
) -> None:
    """A spaceless page sends memread to pypdf for a second reading; pypdf needs fontTools for its CFF font."""
    pdf = spaceless_cff_pdf(tmp_path / "cff.pdf", SPACELESS)
    text, *warnings = _read_without(pdf, "fontTools")
    assert text.startswith(SPACELESS)
    assert f"{pdf}: fontTools is not installed, which pypdf uses to read the encoding of some embedded fonts; " \
           "memread read on without it (pip install fonttools)" in warnings
    assert not any("damaged" in warning for warning in warnings), warnings


def test_without_cryptography_an_aes_pdf_is_read_and_the_missing_library_named(book: Path, tmp_path: Path) -> None:
    locked = encrypt_pdf(book, tmp_path / "owner-only.pdf", user_password="")
    text, *warnings = _read_without(locked, "cryptography", "Crypto")
    assert text == "Preface: why this book exists."  # the first line of the text: PDFium decrypts on its own
    assert any("cryptography is not installed" in w and "(pip install cryptography)" in w for w in warnings)
    assert not any("damaged" in warning for warning in warnings), warnings


# --- real PDFs from Debian ----------------------------------------------------------------------------------------


@pytest.mark.network
def test_debians_policy_manual_reads_with_its_spaces_page_numbers_and_labels(tmp_path: Path) -> None:
    """The issue's example: pypdf glued most pages of this TeX manual; memread reads the words as typeset."""
    import gzip

    from conftest import PERSISTENT_MODELS_DIR
    from pypdf import PdfReader

    from memread.ingest.wordshape import looks_glued

    packed = debian_file("debian-policy", "policy.pdf.gz", PERSISTENT_MODELS_DIR.parent / "test-documents" / "debian")
    if packed is None:
        pytest.skip("Debian's debian-policy package cannot be fetched with apt-get here")
    document = open_document(str(packed))
    text, segments = read_all(document)

    assert document.stats.pages == 193 and document.stats.empty_pages == [2]  # a blank page: counted, no warning
    assert document.warnings == []
    assert "Parsers may accept lines consisting solely of spaces and tabs as stanza separators" in " ".join(
        text.split())
    assert [(s.provenance.page, s.provenance.page_label) for s in segments[:3]] == [(1, "1"), (3, "i"), (4, "ii")]
    page = next(s for s in segments if "stanza separators" in s.text)
    assert not looks_glued(page.text)
    plain = tmp_path / "policy.pdf"
    plain.write_bytes(gzip.decompress(packed.read_bytes()))
    assert looks_glued(PdfReader(str(plain)).pages[page.provenance.page - 1].extract_text())  # pypdf's: glued
