"""Page text from PDFium (pypdfium2), the engine of Chrome's PDF viewer.

PDFium decides where words end from the glyphs' positions, so it keeps the spaces that TeX and other
typesetters never write (pypdf glued them: "linesconsistingsolelyofspaces"), and it is about ten times faster
than pypdf (benchmarks/results/pdf.md). It reads from the open file object, a page at a time.

Its text marks a hyphen that ends a line (and so was joined to the next) with U+FFFE, the character it also gives
a glyph without a Unicode value: :func:`page_text` tells them apart and rejoins hyphenated words.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import IO, Any

# PDFium is not thread-safe: every call into it holds this lock (readers in several threads take turns).
LOCK = threading.Lock()

ERROR_PASSWORD = 4  # FPDF_ERR_PASSWORD
ERROR_SECURITY = 5  # FPDF_ERR_SECURITY: a security handler PDFium does not support
NO_PAGES = 0  # FPDF_ERR_SUCCESS with no page: the document opened but is empty

_MARK = "\ufffe"  # what PDFium puts for a line-end hyphen, and for a glyph without a Unicode value
_HYPHEN = "\uffff"  # a line-end hyphen, until it is decided what it was
_HYPHEN_IN_WORD = re.compile(f"(?<=[^\\W\\d_]){_HYPHEN}(?=[^\\W\\d_])")


class PdfiumRefused(Exception):
    """PDFium could not open the document; ``code`` is its FPDF_ERR_* number."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class PageText:
    text: str  # lines end in "\r\n"
    objects: int  # text, paths and images on the page: none at all is a blank page, or content PDFium could not parse


@dataclass
class PdfiumDocument:
    """An open PDFium document: its page count, printed labels, whether its cross-reference table was sound and
    whether it is encrypted."""

    handle: Any
    pages: int
    labels: list[str] | None
    xref_valid: bool
    encrypted: bool

    def text(self, index: int) -> PageText:
        """The text of page ``index`` (0-based), hyphenated line ends rejoined, and how much else is on it."""
        import pypdfium2.raw as raw

        with LOCK:
            page = self.handle[index]
            try:
                textpage = page.get_textpage()
                try:
                    return PageText(_rejoined(textpage), raw.FPDFPage_CountObjects(page))
                finally:
                    textpage.close()
            finally:
                page.close()

    def close(self) -> None:
        with LOCK:
            self.handle.close()


def open_document(stream: IO[bytes], password: str | None) -> PdfiumDocument:
    """Open ``stream`` (seekable; it must stay open until :meth:`PdfiumDocument.close`).

    Raises :class:`PdfiumRefused` when PDFium cannot open it (damage, a password, no pages)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    if not hasattr(stream, "readinto"):  # Python 3.10's SpooledTemporaryFile: its buffer or file has it
        stream = getattr(stream, "_file", stream)
    with LOCK:
        try:
            handle = pdfium.PdfDocument(stream, password=password)
        except pdfium.PdfiumError as error:
            raise PdfiumRefused(getattr(error, "err_code", None) or NO_PAGES, str(error)) from error
        try:
            count = len(handle)
            labels = [handle.get_page_label(index) for index in range(count)]
            check = getattr(raw, "FPDF_DocumentHasValidCrossReferenceTable", None)
            xref_valid = bool(check(handle)) if check is not None else True
            encrypted = raw.FPDF_GetSecurityHandlerRevision(handle) != -1
        except BaseException:
            handle.close()
            raise
    return PdfiumDocument(handle, count, labels if any(labels) else None, xref_valid, encrypted)


def _rejoined(textpage: Any) -> str:
    import pypdfium2.raw as raw

    text: str = textpage.get_text_range()
    if _MARK not in text:
        return text
    parts = list(text)
    for position, character in enumerate(parts):
        if character != _MARK:
            continue
        index = raw.FPDFText_GetCharIndexFromTextIndex(textpage, position)
        if index >= 0 and raw.FPDFText_IsHyphen(textpage, index) == 1:
            parts[position] = _HYPHEN
    # Between two lower-case letters it split a word ("dis-tribution"); elsewhere it is a real hyphen ("US-ASCII").
    text = _HYPHEN_IN_WORD.sub(lambda m: "" if _lower_around(m) else "-", "".join(parts))
    return text.replace(_HYPHEN, "-")


def _lower_around(match: re.Match[str]) -> bool:
    text, start = match.string, match.start()
    return text[start - 1].islower() and text[start + 1].islower()
