"""Builders of real fixture documents (PDFs, EPUBs, compressed logs, folder trees) for tests of memread and of
its plugins, generated on the fly with fpdf2, pypdf, ebooklib and the standard library, so that no third-party
document is committed (those come from Debian's packages at run time: :func:`debian_file`). They need the
``test`` extra (``pip install 'memread[test]'``); each imports what it needs when called. Hostile documents
(bombs, broken fonts, damaged archives) are in :mod:`memread.testing.hostile`."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memread.document import Chunk, Document, Segment

SCANNED = None  # a page given as SCANNED in build_pdf holds only an image (no text layer)


def build_pdf(
    path: Path,
    pages: Sequence[str | None],
    *,
    labels: Iterable[tuple[int, str, int]] = (),
    bookmarks: Iterable[tuple[int, int, str]] = (),
) -> Path:
    """A PDF with one page per entry of ``pages`` (text, or :data:`SCANNED` for an image-only page).

    ``labels`` are ``(first_page_index, style, start)`` runs, style as fpdf2 takes it: ``"r"`` (i, ii),
    ``"R"``, ``"D"`` (1, 2), ``"a"``, ``"A"``; e.g. ``[(0, "r", 1), (2, "D", 1)]`` labels a two-page preface
    "i", "ii" and then "1", "2", ….

    ``bookmarks`` are the outline, ``(page_index, level, title)`` in page order, level 0 outermost (fpdf2 lets a
    level go at most one deeper than the one before).
    """
    from fpdf import FPDF

    starts = {index: (style, start) for index, style, start in labels}
    sections: dict[int, list[tuple[int, str]]] = {}
    for index, level, title in bookmarks:
        sections.setdefault(index, []).append((level, title))
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for index, text in enumerate(pages):
        if index in starts:
            style, start = starts[index]
            pdf.add_page(label_style=style, label_start=start)
        else:
            pdf.add_page()
        for level, title in sections.get(index, ()):
            pdf.start_section(title, level=level)
        if text is SCANNED:
            pdf.image(_picture(), x=20, y=20, w=120)
        else:
            pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


def scanned_with_ocr_pdf(path: Path, text: str) -> Path:
    """One scanned page (an image) with ``text`` laid over it invisibly (render mode 3), as OCR software does."""
    from fpdf import FPDF
    from fpdf.enums import TextMode

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.image(_picture(), x=20, y=20, w=120)
    pdf.text_mode = TextMode.INVISIBLE
    pdf.set_xy(20, 30)
    pdf.multi_cell(120, 6, text)
    pdf.output(str(path))
    return path


def _picture() -> io.BytesIO:
    """A small PNG (what a scanner would produce, minus the words)."""
    from PIL import Image

    image = Image.new("RGB", (120, 80), (200, 200, 200))
    for x in range(10, 110):
        image.putpixel((x, 40), (0, 0, 0))
    data = io.BytesIO()
    image.save(data, format="PNG")
    data.seek(0)
    return data


def encrypt_pdf(source: Path, target: Path, *, user_password: str, owner_password: str = "owner") -> Path:
    """A copy of ``source`` encrypted with AES-256; an empty ``user_password`` means "opens without asking"."""
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=str(source))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="AES-256")
    writer.write(str(target))
    return target


def truncated_copy(source: Path, target: Path, fraction: float) -> Path:
    """The first ``fraction`` of ``source``'s bytes, like an interrupted download."""
    data = source.read_bytes()
    target.write_bytes(data[: int(len(data) * fraction)])
    return target


@dataclass(frozen=True)
class Chapter:
    title: str  # also the EPUB's TOC label and <title>
    body: str  # XHTML body content
    file_name: str = ""  # defaults to chN.xhtml


def build_epub(path: Path, chapters: Sequence[Chapter], *, spine: Sequence[int] | None = None) -> Path:
    """An EPUB 3 built with ebooklib; ``spine`` gives the reading order as indexes into ``chapters``."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("memread-test-book")
    book.set_title("A test book")
    book.set_language("en")
    items = []
    for index, chapter in enumerate(chapters):
        item = epub.EpubHtml(
            title=chapter.title, file_name=chapter.file_name or f"ch{index}.xhtml", lang="en"
        )
        item.content = chapter.body
        book.add_item(item)
        items.append(item)
    book.toc = [
        epub.Link(item.file_name, chapter.title, f"c{i}")
        for i, (item, chapter) in enumerate(zip(items, chapters, strict=True))
    ]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    order = spine if spine is not None else range(len(items))
    book.spine = ["nav", *(items[i] for i in order)]
    epub.write_epub(str(path), book)
    return path


def without_member(source: Path, target: Path, member_suffix: str) -> Path:
    """A copy of the zip ``source`` lacking the member ending in ``member_suffix`` (a manifest item goes missing)."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            if not info.filename.endswith(member_suffix):
                # A fresh ZipInfo: writestr() would rewrite the offsets of the old archive's entries.
                copy = zipfile.ZipInfo(info.filename, info.date_time)
                copy.compress_type = info.compress_type
                new.writestr(copy, old.read(info.filename))
    return target


def compress(path: Path, codec: str) -> Path:
    """``path`` compressed next to itself as ``.gz``, ``.bz2`` or ``.xz`` (codec is that suffix, no dot)."""
    openers: dict[str, Callable[..., Any]] = {"gz": gzip.open, "bz2": bz2.open, "xz": lzma.open}
    opener = openers[codec]
    target = path.with_name(path.name + "." + codec)
    with open(path, "rb") as plain, opener(target, "wb") as packed:
        while block := plain.read(1 << 20):
            packed.write(block)
    return target


def build_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Files under ``root`` from ``{"relative/path": text or bytes}``."""
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def log_lines(count: int, *, start: int = 1) -> Iterable[str]:
    """Realistic-looking log lines numbered from ``start`` (each ends with a newline)."""
    for number in range(start, start + count):
        level = "ERROR" if number % 97 == 0 else "INFO"
        yield f"2026-11-22T07:{number // 60 % 60:02d}:{number % 60:02d}Z {level} worker-{number % 7} request {number} done in {number % 300} ms\n"


def read_all(document: Document) -> tuple[str, list[Segment]]:
    """Iterate a document's segments once; return the concatenated text and the segments."""
    segments = list(document.segments())
    return "".join(segment.text for segment in segments), segments


def debian_file(package: str, member: str, cache: Path) -> Path | None:
    """``member`` (a file name, e.g. ``live-manual.en.epub``) from Debian's ``package``, fetched once with
    ``apt-get download`` and kept as ``cache/package/member``; None when apt-get or Debian's mirrors are
    unavailable. Only that file is kept (not the package), and only once it is complete."""
    import shutil
    import subprocess
    import tempfile

    kept = cache / package / member
    if kept.is_file():
        return kept
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        return None
    kept.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=kept.parent) as tmp:
        try:
            subprocess.run(["apt-get", "download", package], cwd=tmp, check=True, capture_output=True, timeout=180)
            deb = next(Path(tmp).glob(f"{package}_*.deb"))
            subprocess.run(["dpkg-deb", "-x", str(deb), f"{tmp}/root"], check=True, capture_output=True,
                           timeout=120)
            found = next(Path(tmp, "root").rglob(member))
        except (subprocess.SubprocessError, OSError, StopIteration):
            return None
        shutil.copyfile(found, f"{kept}.partial")
        Path(f"{kept}.partial").rename(kept)  # complete or absent
    return kept


# --- ranking (tests/test_chunkstore.py, tests/test_strategy_evidence.py) ------------------------------------------

COMMON_WORDS_QUESTION = "Which package field?"


def common_words_chunks() -> list[Chunk]:
    """Six chunks, as in a manual: every one says "package", half say "field" (both words FTS5's BM25 weighs at
    1e-6), and the first says "package" three times and "field" never; the three with "field" are long."""
    filler = " Gulls circled the pier while the ferry waited for the tide to turn again." * 2
    texts = ["A package, a package, a package.", "The field of a package." + filler,
             "A package field may be long." + filler, "A field of the package is fixed." + filler,
             "A package is built.", "A package is signed."]
    return [Chunk(i, text, len(text), (), ()) for i, text in enumerate(texts)]
