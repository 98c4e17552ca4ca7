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
from dataclasses import dataclass, field
from typing import IO, Any

from memread.ingest.pdf_pypdf import library_warnings
from memread.ingest.pdf_text import normalise_page

# PDFium is not thread-safe: every call into it holds this lock (readers in several threads take turns).
LOCK = threading.Lock()

ERROR_PASSWORD = 4  # FPDF_ERR_PASSWORD
ERROR_SECURITY = 5  # FPDF_ERR_SECURITY: a security handler PDFium does not support
NO_PAGES = 0  # FPDF_ERR_SUCCESS with no page: the document opened but is empty

# Spacing words by their gaps costs a few microseconds a character: it is tried on the first pages with text
# and kept for the document only where it added spaces (groff's man pages: 17 a thousand words; TeX manuals: 0).
WORD_GAP = 0.12  # of the line's height: poppler breaks words at 0.1 of the font size; TeX's kerns stay under it
PROBE_PAGES = 3
PROBE_WORDS = 2000
# Outline limits: real manuals nest a few levels and hold hundreds of entries; a hostile file could hold millions
# (memory, and seconds under LOCK). Each level is also a Python generator frame in pypdfium2's get_toc.
MAX_OUTLINE_DEPTH = 32
MAX_BOOKMARKS = 50_000
SPACES_PER_1000_WORDS = 2

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


@dataclass(frozen=True)
class Bookmark:
    """One entry of a PDF's outline: its nesting level (0 = outermost), title, and 0-based target page (None
    when it points nowhere PDFium can resolve)."""

    level: int
    title: str
    page_index: int | None


@dataclass
class PdfiumDocument:
    """An open PDFium document: its page count, printed labels, whether its cross-reference table was sound and
    whether it is encrypted."""

    handle: Any
    pages: int
    labels: list[str] | None
    xref_valid: bool
    encrypted: bool
    spacing: bool | None = None  # words spaced by their gaps (see _spaced); None: still probing
    _probe: list[int] = field(default_factory=lambda: [0, 0, 0])  # pages, words, spaces added while probing

    def text(self, index: int) -> PageText:
        """The text of page ``index`` (0-based), hyphenated line ends rejoined, and how much else is on it."""
        import pypdfium2.raw as raw

        with LOCK:
            page = self.handle[index]
            try:
                textpage = page.get_textpage()
                try:
                    text, added = _page_text(textpage, self.spacing is not False)
                    self._decide(text, added)
                    return PageText(text, raw.FPDFPage_CountObjects(page))
                finally:
                    textpage.close()
            finally:
                page.close()

    def _decide(self, text: str, added: int) -> None:
        """After the first pages with text, keep spacing words by their gaps only if that added spaces."""
        if self.spacing is not None or not text.strip():
            return
        self._probe[0] += 1
        self._probe[1] += len(text.split())
        self._probe[2] += added
        pages, words, spaces = self._probe
        if pages >= PROBE_PAGES or words >= PROBE_WORDS:
            self.spacing = spaces * 1000 >= SPACES_PER_1000_WORDS * max(words, 1)

    def outline(self, problems: list[str], cut: list[str]) -> list[Bookmark]:
        """The document outline (its bookmarks) in order, or [] when it has none; titles on one line, whitespace
        collapsed. What is wrong with a damaged outline (a loop) is appended to ``problems``, what the limits
        left out to ``cut``: an outline is a nicety, and a broken one must not stop the reading."""
        bookmarks: list[Bookmark] = []
        messages: list[str] = []
        with LOCK, library_warnings("pypdfium2", messages):  # a looping outline, say
            try:
                for bookmark in self.handle.get_toc(max_depth=MAX_OUTLINE_DEPTH):
                    if len(bookmarks) == MAX_BOOKMARKS:
                        cut.append(f"its outline has more than {MAX_BOOKMARKS:,} entries; the rest are left out")
                        break
                    try:
                        title = " ".join(normalise_page(bookmark.get_title()).split())
                    except UnicodeDecodeError:  # not valid UTF-16: the entry has no name to give
                        continue
                    dest = bookmark.get_dest()  # a /Dest, or the target of a /GoTo action (PDFium reads both)
                    index = dest.get_index() if dest is not None else None
                    if index is not None and index >= self.pages:
                        index = None
                    if title:
                        bookmarks.append(Bookmark(bookmark.level, title, index))
            except Exception as error:
                problems.append(f"its outline cannot be read: {str(error)[:160] or type(error).__name__}")
        for message in messages:
            # pypdfium2 logs where it stopped descending; a deep outline is not a damaged one.
            if "recursion depth" in message:
                cut.append(f"its outline nests deeper than {MAX_OUTLINE_DEPTH} levels; the deeper entries are "
                           "left out")
            else:
                problems.append(message)
        return bookmarks

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


def _page_text(textpage: Any, spacing: bool) -> tuple[str, int]:
    """A page's text, hyphenated line ends rejoined and (``spacing``) missing spaces put back; and how many."""
    import pypdfium2.raw as raw

    text: str = textpage.get_text_range()
    spaced = spacing and len(text) == raw.FPDFText_CountChars(textpage)  # text and characters line up
    if _MARK not in text and not spaced:
        return text, 0
    parts = list(text)
    for position, character in enumerate(parts):
        if character != _MARK:
            continue
        index = raw.FPDFText_GetCharIndexFromTextIndex(textpage, position)
        if index >= 0 and raw.FPDFText_IsHyphen(textpage, index) == 1:
            parts[position] = _HYPHEN
    added = _spaced(textpage, parts) if spaced else 0
    # Between two lower-case letters it split a word ("dis-tribution"); elsewhere it is a real hyphen ("US-ASCII").
    text = _HYPHEN_IN_WORD.sub(lambda m: "" if _lower_around(m) else "-", "".join(parts))
    return text.replace(_HYPHEN, "-"), added


def _spaced(textpage: Any, parts: list[str]) -> int:
    """Put a space between two letters or digits of a line that stand further apart than :data:`WORD_GAP` of
    their height, where PDFium saw none (groff through Ghostscript sets some word gaps as letter spacing, and
    PDFium reads "like a simple" as "likeasimple"; poppler does not). ``parts`` are the page's characters, one
    per PDFium character; the spaces are added to them. Returns how many."""
    import ctypes

    import pypdfium2.raw as raw

    box = raw.FS_RECTF()
    pointer = ctypes.byref(box)
    loose_box = raw.FPDFText_GetLooseCharBox
    handle = textpage.raw  # the bare pointer: the wrapper object costs five times as much a call
    last_right = last_bottom = last_top = 0.0
    follows_letter = False
    added = 0
    for index, character in enumerate(parts):
        if not character.isalnum():
            follows_letter = False
            continue
        loose_box(handle, index, pointer)
        bottom, top = box.bottom, box.top
        if follows_letter:
            height = min(last_top - last_bottom, top - bottom)
            overlap = min(last_top, top) - max(last_bottom, bottom)
            if height > 0 and overlap > height / 2 and box.left - last_right > WORD_GAP * height:
                parts[index] = " " + character
                added += 1
        last_right, last_bottom, last_top = box.right, bottom, top
        follows_letter = True
    return added


def _lower_around(match: re.Match[str]) -> bool:
    text, start = match.string, match.start()
    return text[start - 1].islower() and text[start + 1].islower()
