"""memread-docx reads a Word report the way its author structured it: headings become the chapter path, every
body paragraph and table row is one line (so line N is paragraph N), tables are read, damage is one clear error.

These tests register the plugin's loader directly; tests/test_plugins_firstparty.py installs the package with
pip and goes through its entry point and the ``memread`` command.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import docx
import pytest

from memread.chunk import Chunker
from memread.errors import InputError
from memread.ingest import open_document, registry
from memread.tokens import CharTokenizer


def load_from_source(package: str) -> ModuleType:
    """The plugin package from this folder (not an installed copy), without putting its folder on sys.path,
    where a build's leftover ``*.egg-info`` would make every test session see it as an installed plugin."""
    init = Path(__file__).resolve().parents[1] / package / "__init__.py"
    spec = importlib.util.spec_from_file_location(f"{package}_under_test", init)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


memread_docx = load_from_source("memread_docx")


@pytest.fixture(autouse=True)
def docx_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin's loader, in a copy of the registry."""
    monkeypatch.setenv("MEMREAD_PLUGINS", "")
    registry.loaders()  # the built-ins, in the real registry
    monkeypatch.setattr(registry, "_loaders", dict(registry._loaders))
    registry.register_loader(memread_docx.LOADER, replace=True)  # this folder's, not an installed copy


def build_report(path: Path) -> Path:
    """Title, two heading levels, body text, a soft line break, an empty paragraph and a table with a merged
    header cell: paragraphs 1-14 of the body, in this order."""
    word = docx.Document()
    word.add_paragraph("Harbour Authority Annual Report", style="Title")  # 1
    word.add_paragraph("Prepared for the board.")  # 2
    word.add_heading("Results", level=1)  # 3
    word.add_paragraph("The year closed with a surplus.")  # 4
    word.add_heading("Revenue", level=2)  # 5
    body = word.add_paragraph("Mooring fees rose by 12 percent,")  # 6
    body.add_run().add_break()
    body.add_run("mostly from the new pontoons.")
    word.add_paragraph("")  # 7
    word.add_paragraph("Fuel sales were flat.")  # 8
    word.add_heading("Costs", level=2)  # 9
    table = word.add_table(rows=3, cols=2)  # rows are lines 10-12
    header = table.cell(0, 0).merge(table.cell(0, 1))
    header.text = "Cost lines"
    table.cell(1, 0).text, table.cell(1, 1).text = "Dredging", "410,000"
    table.cell(2, 0).text, table.cell(2, 1).text = "Staff", "1,200,000"
    word.add_heading("Outlook", level=1)  # 13
    word.add_paragraph("The Widow's Pier reopens in May.")  # 14
    word.save(str(path))
    return path


def test_a_word_report_is_read_paragraph_by_paragraph_with_its_heading_path(tmp_path: Path) -> None:
    document = open_document(str(build_report(tmp_path / "report.docx")))
    segments = list(document.segments())
    text = "".join(segment.text for segment in segments)

    assert document.format == "docx"
    assert text.endswith("\n") and text[:-1].split("\n") == [
        "Harbour Authority Annual Report",
        "Prepared for the board.",
        "Results",
        "The year closed with a surplus.",
        "Revenue",
        "Mooring fees rose by 12 percent, mostly from the new pontoons.",
        "",
        "Fuel sales were flat.",
        "Costs",
        "Cost lines",
        "Dredging | 410,000",
        "Staff | 1,200,000",
        "Outlook",
        "The Widow's Pier reopens in May.",
    ]
    sections = [(s.provenance.chapter, s.provenance.line_start, s.provenance.line_end) for s in segments]
    assert sections == [
        ("Harbour Authority Annual Report", 1, 2),
        ("Results", 3, 4),
        ("Results > Revenue", 5, 8),
        ("Results > Costs", 9, 12),
        ("Outlook", 13, 14),
    ]
    assert document.stats.lines == 14 and document.stats.chapters == 5


def test_chunks_say_which_sections_and_paragraphs_they_come_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    document = open_document(str(build_report(Path("report.docx"))))
    chunks = Chunker(CharTokenizer(), 120).chunks(document.segments())
    assert [chunk.describe() for chunk in chunks] == [
        "report.docx § Harbour Authority Annual Report / Results lines 1-4",
        "report.docx § Results > Revenue lines 5-8",
        "report.docx § Results > Costs / Outlook lines 9-14",
    ]


def test_a_damaged_word_file_is_one_error_with_a_hint(tmp_path: Path) -> None:
    good = build_report(tmp_path / "good.docx").read_bytes()
    damaged = tmp_path / "damaged.docx"
    damaged.write_bytes(good[: len(good) // 2])
    with pytest.raises(InputError) as caught:
        open_document(str(damaged))
    assert caught.value.message == f"{damaged}: not a readable Word document (File is not a zip file)"
    assert ".docx" in (caught.value.hint or "")


def test_a_word_file_with_no_text_is_empty_input(tmp_path: Path) -> None:
    blank = tmp_path / "blank.docx"
    docx.Document().save(str(blank))
    with pytest.raises(InputError, match="is empty"):
        open_document(str(blank))


def test_a_word_file_without_its_extension_is_recognised_by_its_content(tmp_path: Path) -> None:
    report = build_report(tmp_path / "report.docx")
    renamed = report.rename(tmp_path / "download")
    assert open_document(str(renamed)).format == "docx"
