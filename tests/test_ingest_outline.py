"""Headings come from the document's structure, as each loader reads it: a PDF's bookmarks, an EPUB's and an
HTML page's <h1>-<h6>, a Markdown file's # and underlined lines; never guessed from how short a line is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memread.document import Heading
from memread.ingest import open_document, pdf_pdfium
from memread.ingest.text import SEGMENT_CHARS
from memread.testing.documents import (
    SCANNED,
    Chapter,
    build_epub,
    build_pdf,
    build_tree,
    compress,
    read_all,
    without_member,
)


def sectioned_pdf(path: Path, sections: list[tuple[int, str, str | None]]) -> Path:
    """A PDF with a page per ``(level, bookmark title, page text)``; SCANNED for an image-only page."""
    return build_pdf(path, [text for _, _, text in sections],
                     bookmarks=[(index, level, title) for index, (level, title, _) in enumerate(sections)])


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


def outlined_with_pypdf(path: Path, change: Any) -> Path:
    """A three-page PDF whose pypdf-written outline ``change(writer)`` has shaped (damaged, deepened, grown)."""
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=str(build_pdf(path.with_suffix(".plain.pdf"), ["One.", "Two.", "Three."])))
    change(writer)
    writer.write(str(path))
    return path


def _untitled(writer: Any) -> None:
    from pypdf.generic import NameObject, NumberObject

    first = writer.add_outline_item(title="Untitled", page_number=0)
    writer.get_object(first)[NameObject("/Title")] = NumberObject(42)  # not a string
    writer.add_outline_item(title="Kept", page_number=1)


def _dangling(writer: Any) -> None:
    from pypdf.generic import ArrayObject, IndirectObject, NameObject

    entry = writer.get_object(writer.add_outline_item(title="Nowhere", page_number=0))
    entry.pop("/A", None)
    entry[NameObject("/Dest")] = ArrayObject([IndirectObject(9999, 0, writer), NameObject("/Fit")])
    writer.add_outline_item(title="Kept", page_number=1)


def _first_is_a_number(writer: Any) -> None:
    from pypdf.generic import NameObject, NumberObject

    writer.add_outline_item(title="Lost", page_number=0)
    writer._root_object["/Outlines"].get_object()[NameObject("/First")] = NumberObject(3)


def _outlines_is_an_array(writer: Any) -> None:
    from pypdf.generic import ArrayObject, NameObject, NumberObject

    writer.add_outline_item(title="Lost", page_number=0)
    writer._root_object[NameObject("/Outlines")] = ArrayObject([NumberObject(1)])


@pytest.mark.parametrize(("change", "expected"), [
    (_untitled, [(0, "Kept", None, 2, None)]),  # an entry without a title is no heading
    (_dangling, [(0, "Nowhere", None, None, None), (0, "Kept", None, 2, None)]),  # a heading placed nowhere
    (_first_is_a_number, []),
    (_outlines_is_an_array, []),
], ids=["title not a string", "destination object missing", "/First not a dictionary", "/Outlines an array"])
def test_a_broken_outline_loses_its_broken_entries_and_never_the_text(
    tmp_path: Path, change: Any, expected: list[tuple[int, str, None, int | None, None]],
) -> None:
    book = outlined_with_pypdf(tmp_path / "broken.pdf", change)
    document = open_document(str(book))
    text, _ = read_all(document)
    assert text == "One.\n\nTwo.\n\nThree."
    assert [(h.level, h.title, h.chapter, h.page, h.line) for h in document.outline] == expected


def test_an_outline_past_the_limits_is_cut_with_a_warning_that_does_not_call_the_pdf_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def deep(writer: Any) -> None:
        parent = None
        for level in range(pdf_pdfium.MAX_OUTLINE_DEPTH + 3):
            parent = writer.add_outline_item(title=f"Level {level}", page_number=0, parent=parent)

    document = open_document(str(outlined_with_pypdf(tmp_path / "deep.pdf", deep)))
    read_all(document)
    assert [h.level for h in document.outline] == list(range(pdf_pdfium.MAX_OUTLINE_DEPTH))
    assert document.warnings == [f"{tmp_path / 'deep.pdf'}: its outline nests deeper than "
                                 f"{pdf_pdfium.MAX_OUTLINE_DEPTH} levels; the deeper entries are left out"]

    monkeypatch.setattr(pdf_pdfium, "MAX_BOOKMARKS", 4)
    book = build_pdf(tmp_path / "long.pdf", ["One.", "Two."], bookmarks=[(i // 5, 0, f"Entry {i}") for i in range(9)])
    document = open_document(str(book))
    read_all(document)
    assert [h.title for h in document.outline] == ["Entry 0", "Entry 1", "Entry 2", "Entry 3"]
    assert document.warnings == [f"{book}: its outline has more than 4 entries; the rest are left out"]


# --- EPUB -----------------------------------------------------------------------------------------------------

BOOK = [
    Chapter("Harbour", "<h1>1. The <em>Harbour</em></h1><p>312 boats.</p><h2>1.1. Boats</h2><p>Many.</p>"
                       "<h3>1.1.1. Small   boats</h3><p>Dinghies.</p>"),
    Chapter("Lighthouse", "<h1>2. The Lighthouse</h1><p>Red since 1911.</p>"),
]


def test_an_epubs_outline_is_its_chapters_headings_as_the_text_reads_them(tmp_path: Path) -> None:
    book = build_epub(tmp_path / "book.epub", BOOK)

    document = open_document(str(book))
    text, _ = read_all(document)

    assert [(h.level, h.title, h.chapter) for h in document.outline] == [
        (0, "1. The Harbour", "1. The Harbour"),
        (1, "1.1. Boats", "1. The Harbour"),
        (2, "1.1.1. Small boats", "1. The Harbour"),
        (0, "2. The Lighthouse", "2. The Lighthouse"),
    ]
    assert all(h.source == str(book) and h.page is None and h.line is None for h in document.outline)
    assert all(h.title in text.split("\n") for h in document.outline), "each title is a line of the text"


def test_a_chapter_without_headings_takes_its_entries_in_the_books_table_of_contents(tmp_path: Path) -> None:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("outline-test")
    book.set_title("Styled, not structured")
    book.set_language("en")
    items = []
    for name, body in (("one.xhtml", '<p class="title">Part One</p><p id="a">Alpha.</p><p id="b">Beta.</p>'),
                       ("two.xhtml", "<h1>Part Two</h1><p>Gamma.</p>")):
        item = epub.EpubHtml(title=name, file_name=name, lang="en")
        item.content = f"<html><body>{body}</body></html>"
        book.add_item(item)
        items.append(item)
    book.toc = [
        (epub.Section("Part One", "one.xhtml"), [epub.Link("one.xhtml#a", "Alpha", "a"),
                                                 epub.Link("one.xhtml#b", "Beta", "b")]),
        epub.Link("two.xhtml", "The second part", "two"),
    ]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    epub.write_epub(str(tmp_path / "styled.epub"), book)
    expected = [(0, "Part One", "Part One", None, None), (1, "Alpha", "Part One", None, None),
                (1, "Beta", "Part One", None, None), (0, "Part Two", "Part Two", None, None)]

    assert outline(tmp_path / "styled.epub") == expected, "the second chapter's own <h1>, not its TOC label"
    # A book ebooklib refuses is read from its zip: the same headings, from the same nav document.
    broken = without_member(tmp_path / "styled.epub", tmp_path / "broken.epub", "toc.ncx")
    document = open_document(str(broken))
    _, segments = read_all(document)
    assert any("malformed EPUB" in warning for warning in document.warnings)
    assert [(h.level, h.title) for h in document.outline] == [(level, title) for level, title, *_ in expected]
    chapters = [segment.provenance.chapter for segment in segments]  # named after their <title> this way
    assert [h.chapter for h in document.outline] == [chapters[0]] * 3 + [chapters[1]]


# --- HTML -----------------------------------------------------------------------------------------------------


def test_an_html_pages_outline_is_its_h1_to_h6(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(
        "<!DOCTYPE html><html><head><title>Q3 report</title></head><body>"
        "<h1>Results</h1><p>Revenue grew.</p><h3>By <b>region</b></h3><p>North.</p>"
        "<pre># not a heading</pre><h2>Costs</h2><p>Fell.</p></body></html>"
    )

    assert outline(page) == [(0, "Results", "Q3 report", None, None), (2, "By region", "Q3 report", None, None),
                             (1, "Costs", "Q3 report", None, None)]


# --- Markdown and text ----------------------------------------------------------------------------------------

GUIDE = """\
---
title: front matter is not a heading
---
# Guide #

Intro text
===

```sh
# a shell comment, not a heading
```

    # indented code, not a heading

- a list item
---

## Install `memread`
Configure
---------
> # quoted, not a heading
###### Deep
#hashtag is not a heading
"""


def test_a_markdown_files_outline_is_its_atx_and_setext_headings_with_their_lines(tmp_path: Path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text(GUIDE)

    headings = outline(guide)

    assert headings == [
        (0, "Guide", None, None, 4),
        (0, "Intro text", None, None, 6),
        (1, "Install `memread`", None, None, 18),
        (1, "Configure", None, None, 19),
        (5, "Deep", None, None, 22),
    ]
    lines = GUIDE.split("\n")
    assert all(title in lines[line - 1] for _, title, _, _, line in headings if line), "each line holds its title"


def test_a_markdown_heading_far_into_a_large_compressed_file_has_its_line_number(tmp_path: Path) -> None:
    filler = "Some prose that is not a heading.\n" * (SEGMENT_CHARS // 34 + 100)  # crosses a segment boundary
    count = filler.count("\n")
    notes = tmp_path / "notes.markdown"
    notes.write_text("# Start\n" + filler + "\nLate heading\n---\n")

    assert outline(compress(notes, "gz")) == [(0, "Start", None, None, 1), (1, "Late heading", None, None, count + 3)]


@pytest.mark.parametrize("name", ["notes.txt", "build.log"])
def test_plain_text_and_logs_have_no_outline_even_with_hash_lines(tmp_path: Path, name: str) -> None:
    text = tmp_path / name
    text.write_text("# a comment\nINFO ready\n=====\n")
    assert outline(text) == []


# --- folders --------------------------------------------------------------------------------------------------


def test_a_folders_outline_is_each_files_outline_in_reading_order(tmp_path: Path) -> None:
    root = build_tree(
        tmp_path / "docs",
        {
            "a-intro.md": "# Intro\ntext\n",
            "b-page.html": "<html><body><h2>Page</h2><p>text</p></body></html>",
            "c-notes.txt": "# not markdown\n",
        },
    )
    build_epub(root / "d-book.epub", [Chapter("Only", "<h1>Only chapter</h1><p>Book text.</p>")])
    sectioned_pdf(root / "e-manual.pdf", [(0, "Start", "Start here.")])
    # A PDF with a bookmark but no text is skipped: its bookmark must not be left in the outline.
    sectioned_pdf(root / "f-scan.pdf", [(0, "Scanned", SCANNED)])
    (root / "g-end.md").write_text("End\n===\n")

    document = open_document(str(root))
    read_all(document)

    assert [(h.source, h.level, h.title, h.page, h.line) for h in document.outline] == [
        ("a-intro.md", 0, "Intro", None, 1),
        ("b-page.html", 1, "Page", None, None),
        ("d-book.epub", 0, "Only chapter", None, None),
        ("e-manual.pdf", 0, "Start", 1, None),
        ("g-end.md", 0, "End", None, 1),
    ]
    assert document.stats.skipped.get("empty") == 1 or any("f-scan.pdf" in w for w in document.warnings)
