"""Headings come from the document's structure, as each loader reads it: a PDF's bookmarks, an EPUB's and an
HTML page's <h1>-<h6>, a Markdown file's # and underlined lines; never guessed from how short a line is."""

from __future__ import annotations

from pathlib import Path

from docbuilders import (
    SCANNED,
    build_pdf,
    read_all,
)

from memread.document import Heading
from memread.ingest import open_document


def sectioned_pdf(path: Path, sections: list[tuple[int, str, str | None]]) -> Path:
    """A PDF with a page per ``(level, bookmark title, page text)``; SCANNED for a page with a drawing and no text."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for level, title, text in sections:
        pdf.add_page()
        pdf.start_section(title, level=level)
        if text is SCANNED:
            pdf.rect(20, 20, 120, 80, style="F")
        else:
            pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


def outline(document_path: Path) -> list[tuple[int, str, str | None, int | None, int | None]]:
    """Read the document whole, then its outline as (level, title, chapter, page, line)."""
    document = open_document(str(document_path))
    read_all(document)
    return [(h.level, h.title, h.chapter, h.page, h.line) for h in document.outline]


# --- PDF ------------------------------------------------------------------------------------------------------


def test_a_pdfs_bookmarks_are_its_outline_with_their_levels_and_pages(tmp_path: Path) -> None:
    book = sectioned_pdf(
        tmp_path / "manual.pdf",
        [
            (0, "Preface", "Preface\nWhy this manual exists."),
            (0, "1   Getting Started", "1 Getting Started\nInstall it first."),
            (1, "Installing", "1.1 Installing\nRun the installer."),
            (2, "On Linux", "1.1.1 On Linux\nUse the package manager."),
            (0, "Index", "Index\nboats, 3"),
        ],
    )

    document = open_document(str(book))

    expected = [
        Heading(0, "Preface", str(book), page=1),
        Heading(0, "1 Getting Started", str(book), page=2),  # whitespace collapsed
        Heading(1, "Installing", str(book), page=3),  # the bookmark's own title, without the page's "1.1"
        Heading(2, "On Linux", str(book), page=4),
        Heading(0, "Index", str(book), page=5),
    ]
    assert document.outline == expected, "known as soon as the PDF is opened"
    read_all(document)
    assert document.outline == expected, "and unchanged by reading it"


def test_a_pdf_without_bookmarks_has_an_empty_outline_not_guessed_headings(tmp_path: Path) -> None:
    book = build_pdf(tmp_path / "plain.pdf", ["Chapter 1\nThe harbour held 312 boats.", "Chapter 2\nGulls."])
    assert outline(book) == []


def test_a_bookmark_that_goes_to_its_page_by_an_action_is_placed_on_that_page(tmp_path: Path) -> None:
    from pypdf import PdfWriter

    plain = build_pdf(tmp_path / "plain.pdf", ["First page.", "Second page.", "Third page."])
    writer = PdfWriter(clone_from=str(plain))
    part = writer.add_outline_item(title="Part Two", page_number=1)  # pypdf writes a /GoTo action, not a /Dest
    writer.add_outline_item(title="Its end", page_number=2, parent=part)
    writer.write(str(tmp_path / "linked.pdf"))

    assert outline(tmp_path / "linked.pdf") == [(0, "Part Two", None, 2, None), (1, "Its end", None, 3, None)]


def test_a_pdf_whose_outline_loops_is_read_with_the_outline_up_to_the_loop_and_a_damage_warning(
    tmp_path: Path,
) -> None:
    from pypdf import PdfWriter
    from pypdf.generic import NameObject

    plain = build_pdf(tmp_path / "plain.pdf", ["First page.", "Second page."])
    writer = PdfWriter(clone_from=str(plain))
    first = writer.add_outline_item(title="One", page_number=0)
    second = writer.add_outline_item(title="Two", page_number=1)
    writer.get_object(second)[NameObject("/Next")] = first  # Two → One → Two → …
    writer.write(str(tmp_path / "looping.pdf"))

    document = open_document(str(tmp_path / "looping.pdf"))
    text, _ = read_all(document)

    assert [h.title for h in document.outline] == ["One", "Two"]
    assert "Second page." in text
    assert any("damaged" in warning and "circular" in warning for warning in document.warnings), document.warnings
