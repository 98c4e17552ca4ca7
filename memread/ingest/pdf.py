"""PDF documents: one segment per page, provenance = physical page number and printed page label.

Two libraries, each for what it does best (measured by ``benchmarks/robustness/bench_pdf.py``, results in
``benchmarks/results/pdf.md``):

* **PDFium** (:mod:`~memread.ingest.pdf_pdfium`) opens and decrypts the file and gives each page's text, the
  printed page labels and whether the cross-reference table was sound. Its words agree with poppler's
  ``pdftotext`` where pypdf glued TeX's words together, and it reads about ten times as many pages a second.
* **pypdf** (:mod:`~memread.ingest.pdf_pypdf`) is opened only when needed: for a file PDFium refuses (damaged:
  pypdf reads it all, as memread always did), for a second reading of a page PDFium returns glued, or empty in a
  file with broken streams (the better text is kept), and for its page tree where the bomb guard must look
  inside each page.

Before PDFium inflates anything, :mod:`~memread.ingest.pdf_guard` scans the file for decompression bombs.
Pages are read one at a time as the document is iterated. Whichever library read a page, its text is checked:
unreadable characters (a font without a Unicode map) skip it; glued words (:mod:`~memread.ingest.wordshape`) and
no text at all (a scan) are warned about; each warning names the pages.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from memread.document import Document, Heading, Provenance, Segment
from memread.errors import InputError
from memread.ingest import pdf_pypdf
from memread.ingest.pdf_guard import Bomb, StreamGuard, scan_file
from memread.ingest.pdf_pdfium import (
    ERROR_PASSWORD,
    Bookmark,
    PageText,
    PdfiumDocument,
    PdfiumRefused,
    open_document,
)
from memread.ingest.pdf_text import UNREADABLE, garbled, normalise_page
from memread.ingest.source import Source, display, printable
from memread.ingest.wordshape import word_shape

_LISTED_PAGES = 20  # how many page numbers a warning spells out
_EXAMPLE = 40  # characters of a glued word quoted in the warning
_PURPOSES = {"fonttools": "to read the encoding of some embedded fonts",
             "cryptography": "to decrypt AES-encrypted PDFs (to check them for decompression bombs)"}

CORRUPT_HINT = (
    "the file may be truncated (an interrupted download?); re-download it, or repair it with `qpdf`"
)


def open_pdf(source: Source, document: Document) -> Iterator[Segment]:
    """Open the PDF now (raising InputError if corrupt or locked) and return its pages as a lazy iterator."""
    stream = source.open_seekable()
    try:
        pages = _open(source, stream)
    except BaseException:
        stream.close()
        raise
    document.stats.pages += pages.count
    # Bookmarks are known up front. Their titles are their own: one may leave out the section number its page
    # prints. A PDF without bookmarks has no headings (they are not guessed from fonts).
    document.outline.extend(
        Heading(bookmark.level, bookmark.title, source.label,
                page=bookmark.page_index + 1 if bookmark.page_index is not None else None)
        for bookmark in pages.bookmarks
    )
    return _read(pages, source, document)


@dataclass
class _Pages:
    """An opened PDF: who reads its text, its page count and labels, and what went wrong on the way.

    pypdf is opened only when it is needed (:meth:`pypdf`): PDFium refused the file, a page needs a second
    opinion, or the bomb guard must look inside pages."""

    source: Source
    stream: IO[bytes]
    pdfium: PdfiumDocument | None  # None: pypdf reads every page
    count: int = 0
    labels: list[str | None] | None = None
    guarded: bool = False  # each page's streams are measured with pypdf before PDFium reads it
    damaged: bool = True  # signs of damage (a broken stream or xref): an empty page may be unreadable content
    problems: list[str] = field(default_factory=list)  # pypdf's messages and other signs of damage
    missing: dict[str, str] = field(default_factory=dict)  # library → pip name, when pypdf lacked one
    bookmarks: list[Bookmark] = field(default_factory=list)  # the outline (PDFium's only)
    outline_cut: list[str] = field(default_factory=list)  # what the outline limits left out
    reader: Any = None
    nodes: list[pdf_pypdf.PageNode] | None = None  # pypdf's pages, aligned with PDFium's
    _pypdf_tried: bool = False
    _pypdf_aligned: bool = False

    def pypdf(self) -> bool:
        """Open pypdf alongside PDFium (once): True when its page tree declares as many pages as PDFium sees."""
        if not self._pypdf_tried:
            self._pypdf_tried = True
            self.reader = _open_reader(self)
            if self.reader is not None:
                try:
                    with pdf_pypdf.pypdf_messages(self.problems):
                        declared = pdf_pypdf.page_count(self.reader)
                except Exception:
                    declared = -1
                self._pypdf_aligned = declared == self.count
                if not self._pypdf_aligned:
                    self.problems.append(f"PDFium and pypdf count different pages ({self.count} and {declared})")
        return self._pypdf_aligned

    def node(self, index: int) -> pdf_pypdf.PageNode:
        """pypdf's view of page ``index`` (after :meth:`pypdf` said yes); raises on a damaged page tree."""
        if self.nodes is not None:
            return self.nodes[index]
        with pdf_pypdf.pypdf_messages(self.problems):
            return pdf_pypdf.page_at(self.reader, index)

    def close(self) -> None:
        if self.pdfium is not None:
            self.pdfium.close()
        self.stream.close()


def _open(source: Source, stream: IO[bytes]) -> _Pages:
    try:
        pdfium: PdfiumDocument | None = open_document(stream, source.password)
    except PdfiumRefused as refused:
        if refused.code == ERROR_PASSWORD:
            locked = pdf_pypdf.encrypted(source) if source.password is None else pdf_pypdf.wrong_password(source)
            raise locked from None
        pdfium = None  # damaged, empty, or a security handler PDFium lacks: pypdf's turn
    pages = _Pages(source, stream, pdfium)
    try:
        if pdfium is not None:
            _with_pdfium(pages, pdfium)
        else:
            _with_pypdf(pages)
    except BaseException:
        if pages.pdfium is not None:
            pages.pdfium.close()
        raise
    if pages.count == 0:
        raise InputError(f"{display(source.label)}: the PDF has no pages", hint=CORRUPT_HINT)
    return pages


def _with_pdfium(pages: _Pages, pdfium: PdfiumDocument) -> None:
    """PDFium reads; the file is scanned for decompression bombs first, and where the scan cannot see (an
    encrypted file) or saw one, pypdf's view of each page lets the guard measure it before PDFium reads it."""
    pages.count = pdfium.pages
    pages.labels = [label or None for label in pdfium.labels] if pdfium.labels else None
    if not pdfium.xref_valid:
        pages.problems.append("its cross-reference table is broken")
    scan = None if pdfium.encrypted else scan_file(pages.stream)
    bombs = scan.bombs if scan is not None else []
    pages.guarded = pdfium.encrypted or bool(bombs)
    pages.damaged = scan is None or bool(scan.damaged) or not pdfium.xref_valid
    if not bombs:  # where one is, the outline's objects may be in it: no outline rather than PDFium inflating it
        pages.bookmarks = pdfium.outline(pages.problems, pages.outline_cut)
    if pages.guarded and pages.pypdf():
        pages.nodes = _page_nodes(pages.reader, pages.problems)
        if pages.nodes is None or len(pages.nodes) != pages.count:
            pages.nodes = None
    if pages.guarded and pages.nodes is None:
        if bombs:  # the pages that use it cannot be told: refuse the file, as a compressed input would be
            raise InputError(
                f"{display(pages.source.label)}: refused: a stream in it (object {bombs[0]}) expands past the "
                "decompression-bomb limit, and its pages cannot be told apart to skip just those",
                hint="if the file is genuine, raise the limit: MEMREAD_MAX_EXPANSION=5000 (0: no limit)",
            )
        pages.guarded = False  # encrypted, and pypdf cannot follow: PDFium reads alone, unmeasured


def _with_pypdf(pages: _Pages) -> None:
    """PDFium refused the file: pypdf reads every page, as memread always did (pypdf caps what it inflates)."""
    pages._pypdf_tried = pages._pypdf_aligned = True
    pages.reader = _open_reader(pages)
    pages.nodes = _page_nodes(pages.reader, pages.problems) or _flattened(pages.reader, pages.problems)
    pages.count = len(pages.nodes)
    with pdf_pypdf.pypdf_messages(pages.problems):
        labels = pdf_pypdf.page_labels(pages.reader, pages.count)
    pages.labels = list(labels) if labels is not None else None


def _open_reader(pages: _Pages) -> Any:
    """pypdf's reader on the same stream. When PDFium has the file, a pypdf failure is noted, not raised: PDFium
    then reads alone (None)."""
    source = pages.source
    try:
        return pdf_pypdf.open_reader(pages.stream, source, pages.problems)
    except InputError:
        if pages.pdfium is None:
            raise
        return None  # PDFium accepted the password pypdf refuses: trust the library that will read it
    except Exception as error:  # pypdf raises many types (PdfReadError, ValueError, KeyError...) on damage
        dependency = pdf_pypdf.missing_dependency(str(error), raised=type(error).__name__ == "DependencyError")
        if pages.pdfium is not None:
            if dependency is not None:
                pages.missing[dependency[0]] = dependency[1]
            else:
                pages.problems.append(f"pypdf cannot parse it: {_short(error)}")
            return None
        if dependency is not None:
            raise InputError(
                f"{display(source.label)}: reading this PDF needs {dependency[0]}, which is not installed",
                hint=f"pip install {dependency[1]}",
            ) from error
        raise InputError(
            f"{display(source.label)}: not a readable PDF, truncated or corrupt ({printable(_short(error))})",
            hint=CORRUPT_HINT,
        ) from error


def _page_nodes(reader: Any, problems: list[str]) -> list[pdf_pypdf.PageNode] | None:
    try:
        with pdf_pypdf.pypdf_messages(problems):
            return pdf_pypdf.page_tree(reader)
    except Exception:
        return None


def _flattened(reader: Any, problems: list[str]) -> list[pdf_pypdf.PageNode]:
    """pypdf's own view of the pages, for a page tree too damaged to walk (pypdf repairs what it can)."""
    try:
        with pdf_pypdf.pypdf_messages(problems):
            return [pdf_pypdf.PageNode(page.indirect_reference, page) for page in reader.pages]
    except Exception:
        return []


def _read(pages: _Pages, source: Source, document: Document) -> Iterator[Segment]:
    found = _Findings()
    guard = StreamGuard()
    emitted = False
    try:
        for index in range(pages.count):
            number = index + 1
            text = _page_text(pages, index, guard, found, number)
            if text is None:
                continue
            label = pages.labels[index] if pages.labels is not None else None
            yield Segment(("\n\n" if emitted else "") + text, Provenance(source.label, page=number, page_label=label))
            emitted = True
    finally:
        pages.close()
    found.report(source, document, pages)
    if not emitted and found.unreadable:
        raise InputError(
            f"{display(source.label)}: no page has readable text (its fonts have no Unicode map)",
            hint="OCR it to get a real text layer, e.g. `ocrmypdf --force-ocr in.pdf out.pdf`",
        )
    if not emitted:
        raise InputError(
            f"{display(source.label)}: no page has extractable text (a scanned PDF?)",
            hint="memread does not do OCR; run e.g. `ocrmypdf in.pdf out.pdf` first",
        )


@dataclass
class _Findings:
    """Pages set aside or worth a warning, by kind, while a PDF is read."""

    empty: list[int] = field(default_factory=list)
    blank: list[int] = field(default_factory=list)  # nothing drawn at all: counted among the pages without text
    failed: list[int] = field(default_factory=list)
    unreadable: list[int] = field(default_factory=list)
    bombs: list[int] = field(default_factory=list)
    glued: list[int] = field(default_factory=list)
    glued_example: str = ""

    def report(self, source: Source, document: Document, pages: _Pages) -> None:
        name = display(source.label)
        document.stats.empty_pages.extend(sorted(self.empty + self.blank))
        if self.empty:
            document.warn(f"{name}: {_count(self.empty)} {_have(self.empty)} no text layer (scanned?): "
                          f"{_list(self.empty)} — OCR is not supported")
        if self.failed:
            document.warn(f"{name}: {_count(self.failed)} could not be read and {_were(self.failed)} skipped: "
                          f"{_list(self.failed)}")
        if self.unreadable:
            document.warn(f"{name}: {_count(self.unreadable)} {_have(self.unreadable)} an unreadable text layer "
                          f"(fonts without a Unicode map?) and {_were(self.unreadable)} skipped: "
                          f"{_list(self.unreadable)}")
        if self.bombs:
            document.warn(f"{name}: {_count(self.bombs)} {_were(self.bombs)} skipped: {_list(self.bombs)} — "
                          "content that expands past the decompression-bomb limit (raise MEMREAD_MAX_EXPANSION "
                          "to read it)")
        if self.glued:
            document.warn(f"{name}: {_count(self.glued)} {_have(self.glued)} words run together (e.g. "
                          f"\u201c{printable(self.glued_example)}\u201d): {_list(self.glued)} — the PDF's text "
                          "layer lacks spaces there")
        missing = dict(pages.missing)
        damage = []
        for problem in pages.problems:
            dependency = pdf_pypdf.missing_dependency(problem)
            if dependency is not None:
                missing[dependency[0]] = dependency[1]
            else:
                damage.append(problem)
        for library, pip_name in missing.items():
            purpose = _PURPOSES.get(library.lower(), "for part of this PDF")
            document.warn(f"{name}: {library} is not installed, which pypdf uses {purpose}; memread read on "
                          f"without it (pip install {pip_name})")
        if damage:
            document.warn(f"{name}: the PDF is damaged; memread recovered what it could "
                          f"({printable(damage[0][:160])})")
        for note in pages.outline_cut:
            document.warn(f"{name}: {note}")

    def glue(self, number: int, example: str) -> None:
        self.glued.append(number)
        self.glued_example = self.glued_example or example[:_EXAMPLE] + ("…" if len(example) > _EXAMPLE else "")


def _page_text(pages: _Pages, index: int, guard: StreamGuard, found: _Findings, number: int) -> str | None:
    """The normalised text of one page, or None when it is set aside (the reason is recorded in ``found``)."""
    text: str | None = None
    if pages.pdfium is not None:
        verdict = _guard(pages, index, guard)
        if verdict == "bomb":
            found.bombs.append(number)
            return None
        if verdict == "read":
            page = _pdfium_text(pages.pdfium, index)
            text = page.text if page is not None else None
            if page is not None:
                chosen = "" if garbled(page.text) else normalise_page(page.text)
                if chosen and not word_shape(chosen).glued:
                    return chosen
                if not chosen and not UNREADABLE.search(page.text) and (page.objects or not pages.damaged):
                    # Images or drawings but no text (a scan?), or nothing at all in a sound file (a blank page,
                    # counted but not warned about): pypdf would agree.
                    (found.empty if page.objects else found.blank).append(number)
                    return None
    # PDFium gave nothing, unreadable text or glued words (or pypdf reads this file): pypdf has a go, and the
    # better text is kept.
    known = len(pages.problems)
    other = _pypdf_text(pages, index)
    candidates = [candidate for candidate in (text, other) if candidate is not None]
    if not candidates:
        found.failed.append(number)
        return None
    if all(garbled(candidate) for candidate in candidates):
        found.unreadable.append(number)
        return None
    readable = [normalise_page(candidate) for candidate in candidates if not garbled(candidate)]
    best = next((t for t in readable if t and not word_shape(t).glued), "") or next((t for t in readable if t), "")
    if not best:
        if len(pages.problems) > known:  # damaged content, not a scan
            found.failed.append(number)
        else:
            found.empty.append(number)
        return None
    shape = word_shape(best)
    if shape.glued:
        found.glue(number, shape.long_runs[0])
    return best


def _guard(pages: _Pages, index: int, guard: StreamGuard) -> str:
    """May PDFium read page ``index``? "read", "bomb" (skip it), or "pypdf" (its streams cannot be measured:
    pypdf reads it, within its own limits)."""
    if not pages.guarded or pages.nodes is None:
        return "read"
    node = pages.node(index)
    try:
        with pdf_pypdf.pypdf_messages(pages.problems):
            guard.check(node)
    except Bomb:
        return "bomb"
    except Exception:
        return "pypdf"
    finally:
        _forget_contents(pages, node)
    return "read"


def _pdfium_text(pdfium: PdfiumDocument, index: int) -> PageText | None:
    try:
        return pdfium.text(index)
    except Exception:  # one damaged page must not cost the user the others
        return None


def _forget_contents(pages: _Pages, node: pdf_pypdf.PageNode) -> None:
    """Drop a read page's content streams from pypdf's cache: memory stays flat however long the PDF."""
    try:
        with pdf_pypdf.pypdf_messages(pages.problems):
            contents = node.page.get("/Contents")
            resolved = contents.get_object() if contents is not None else []
            for reference in (resolved if isinstance(resolved, list) else [contents]):
                pdf_pypdf.forget(pages.reader, reference)
    except Exception:  # a damaged reference: nothing was cached for it
        pass


def _pypdf_text(pages: _Pages, index: int) -> str | None:
    """pypdf's text of a page, or None when pypdf cannot give it."""
    if not pages.pypdf():
        return None
    try:
        node = pages.node(index)
    except Exception:
        return None
    try:
        return pdf_pypdf.extract_text(pdf_pypdf.page_object(pages.reader, node), pages.problems)
    except Exception:  # one damaged page must not cost the user the others
        return None
    finally:
        _forget_contents(pages, node)


def _count(pages: list[int]) -> str:
    return "1 page" if len(pages) == 1 else f"{len(pages)} pages"


def _have(pages: list[int]) -> str:
    return "has" if len(pages) == 1 else "have"


def _were(pages: list[int]) -> str:
    return "was" if len(pages) == 1 else "were"


def _list(pages: list[int]) -> str:
    shown = ", ".join(map(str, pages[:_LISTED_PAGES]))
    return shown + (f", … ({len(pages) - _LISTED_PAGES} more)" if len(pages) > _LISTED_PAGES else "")


def _short(error: BaseException) -> str:
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return message[:160]
