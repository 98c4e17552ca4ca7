"""The loader registry: magic bytes beat extensions, text is the fallback, and plugins can add loaders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memread.document import Document, Provenance, Segment
from memread.ingest import Loader, Source, find_loader, loaders, open_document, register_loader
from memread.testing import isolated_registries
from memread.testing.documents import Chapter, build_epub, build_pdf, read_all


def test_builtin_loaders_are_registered_by_name() -> None:
    assert {"pdf", "epub", "text"} <= {loader.name for loader in loaders()}


def test_magic_bytes_win_over_a_misleading_extension(tmp_path: Path) -> None:
    pdf = build_pdf(tmp_path / "report.txt", ["actually a PDF"])
    epub = build_epub(tmp_path / "book.zip", [Chapter("One", "<p>x</p>")])
    assert find_loader(pdf.name, pdf.read_bytes()[:8192]).name == "pdf"  # type: ignore[union-attr]
    assert find_loader(epub.name, epub.read_bytes()[:8192]).name == "epub"  # type: ignore[union-attr]
    text, segments = read_all(open_document(str(pdf)))
    assert text == "actually a PDF" and segments[0].provenance.page == 1


def test_extension_then_text_sniffing_decide_the_rest() -> None:
    assert find_loader("notes.md", b"# title\n").name == "text"  # type: ignore[union-attr]
    assert find_loader("Makefile", b"all:\n\techo hi\n").name == "text"  # type: ignore[union-attr]
    assert find_loader("weird.pdf", b"junk before %PDF-1.4").name == "pdf"  # type: ignore[union-attr]
    assert find_loader("blob", b"\x00\x01\x02binary") is None
    assert find_loader("photo", b"\x89PNG\r\n\x1a\n....") is None


@pytest.fixture
def fresh_registries() -> Iterator[None]:
    with isolated_registries():  # leave the real registry be
        yield


@pytest.mark.usefixtures("fresh_registries")
def test_a_plugin_loader_claims_its_extension(tmp_path: Path) -> None:
    def open_shouting(source: Source, document: Document) -> Iterator[Segment]:
        with source.open() as stream:
            text = stream.read().decode().upper()
        return iter([Segment(text, Provenance(source.label, line_start=1, line_end=1))])

    register_loader(Loader("shout", "shout", (".shout",), lambda head: False, open_shouting))
    with pytest.raises(ValueError, match="already registered"):
        register_loader(Loader("shout", "shout", (".shout",), lambda head: False, open_shouting))

    note = tmp_path / "note.shout"
    note.write_text("quiet words")
    document = open_document(str(note))
    assert document.format == "shout"
    assert read_all(document)[0] == "QUIET WORDS"


def test_an_html_report_is_read_as_its_visible_text(tmp_path: Path) -> None:
    report = tmp_path / "q3.html"
    report.write_text(
        "<!DOCTYPE html><html><head><title>Q3 report</title><style>p {color: red}</style></head>"
        "<body><h1>Results</h1><p>Revenue grew&nbsp;12%.</p><script>track()</script><p>Costs fell.</p></body></html>"
    )
    document = open_document(str(report))
    text, segments = read_all(document)
    assert text == "Results\n\nRevenue grew 12%.\n\nCosts fell."
    assert document.format == "html" and segments[0].provenance.chapter == "Q3 report"


def test_an_html_fragment_is_read_whole_not_only_its_first_element(tmp_path: Path) -> None:
    snippet = tmp_path / "notes.html"
    snippet.write_text("<h1>Welcome</h1><p>Read the guide.</p><ul><li>Step one</li></ul>")
    assert read_all(open_document(str(snippet)))[0] == "Welcome\n\nRead the guide.\n\nStep one"
