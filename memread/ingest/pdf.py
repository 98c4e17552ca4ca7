"""PDF documents (pypdf): one segment per page, provenance = physical page number and printed page label.

pypdf is given an open file object, never a path (a path is read whole into memory), and parses pages lazily.
Its own log messages about damaged files are collected into one document warning instead of reaching stderr.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from memread.document import Document, Provenance, Segment
from memread.errors import InputError
from memread.ingest.source import Source, display, printable

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")  # \r is unified before this runs
# Characters no reader can use: private-use code points (what fonts without a real Unicode map extract as),
# the replacement character, and control characters.
_UNREADABLE = re.compile("[\ue000-\uf8ff\U000f0000-\U0010ffff\ufffd\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U0010ffff]")
GARBLED_SHARE = 0.3  # a page whose visible characters are this much unreadable is skipped, not fed to a model
_SPACES = re.compile("[ \t\u00a0]+")
_BLANK_LINES = re.compile("\n{3,}")
_LISTED_PAGES = 20  # how many page numbers a warning spells out

CORRUPT_HINT = (
    "the file may be truncated (an interrupted download?); re-download it, or repair it with `qpdf`"
)


def normalise_page(text: str) -> str:
    """Whitespace as a reader expects it: runs of spaces collapsed, lines trimmed, at most one blank line."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _SPACES.sub(" ", _CONTROL.sub("", _PRIVATE_USE.sub("", text)))
    text = "\n".join(line.strip(" ") for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip("\n")


def garbled(text: str) -> bool:
    """Is a page's extracted text mostly unreadable (a font without a Unicode map: private-use code points,
    control characters)? Such a page is skipped with a warning: it would cost tokens and tell the model nothing.

    Text layers that map to the *wrong* letters (a shifted alphabet) read as words and are not detected.
    """
    visible = len(text) - sum(text.count(c) for c in " \t\r\n")
    return visible > 0 and len(_UNREADABLE.findall(text)) > GARBLED_SHARE * visible


def open_pdf(source: Source, document: Document) -> Iterator[Segment]:
    """Open the PDF now (raising InputError if corrupt or locked) and return its pages as a lazy iterator."""
    from pypdf import PdfReader

    problems: list[str] = []
    stream = source.open_seekable()
    try:
        with _pypdf_messages(problems):
            reader = PdfReader(stream, strict=False)
            _unlock(reader, source)
            count = len(reader.pages)
            labels = _page_labels(reader, count)
    except InputError:
        stream.close()
        raise
    except Exception as error:  # pypdf raises many types (PdfReadError, ValueError, KeyError...) on damage
        stream.close()
        raise InputError(
            f"{display(source.label)}: not a readable PDF, truncated or corrupt ({printable(_short(error))})",
            hint=CORRUPT_HINT,
        ) from error
    if count == 0:
        stream.close()
        raise InputError(f"{display(source.label)}: the PDF has no pages", hint=CORRUPT_HINT)
    document.stats.pages += count
    return _pages(reader, stream, labels, source, document, problems)


def _pages(
    reader: Any,
    stream: IO[bytes],
    labels: list[str] | None,
    source: Source,
    document: Document,
    problems: list[str],
) -> Iterator[Segment]:
    empty: list[int] = []
    failed: list[int] = []
    unreadable: list[int] = []
    emitted = False
    try:
        for index in range(len(labels) if labels is not None else len(reader.pages)):
            number = index + 1
            known_problems = len(problems)
            try:
                with _pypdf_messages(problems):
                    raw = reader.pages[index].extract_text()
            except Exception:  # one damaged page must not cost the user the others
                failed.append(number)
                continue
            if garbled(raw):
                unreadable.append(number)
                continue
            text = normalise_page(raw)
            if not text and len(problems) > known_problems:  # damaged content, not a scan
                failed.append(number)
                continue
            if not text:
                empty.append(number)
                document.stats.empty_pages.append(number)
                continue
            label = labels[index] if labels is not None else None
            yield Segment(
                ("\n\n" if emitted else "") + text, Provenance(source.label, page=number, page_label=label)
            )
            emitted = True
    finally:
        stream.close()
    if empty:
        document.warn(
            f"{display(source.label)}: {_count(empty)} {'has' if len(empty) == 1 else 'have'} no text layer (scanned?): {_list(empty)} — OCR is not supported"
        )
    if failed:
        document.warn(
            f"{display(source.label)}: {_count(failed)} could not be read and {'was' if len(failed) == 1 else 'were'} skipped: {_list(failed)}"
        )
    if unreadable:
        document.warn(
            f"{display(source.label)}: {_count(unreadable)} {'has' if len(unreadable) == 1 else 'have'} an unreadable text layer (fonts without a Unicode map?) and {'was' if len(unreadable) == 1 else 'were'} skipped: {_list(unreadable)}"
        )
    if problems:
        document.warn(
            f"{display(source.label)}: the PDF is damaged; pypdf recovered what it could ({printable(problems[0][:160])})"
        )
    if not emitted and unreadable:
        raise InputError(
            f"{display(source.label)}: no page has readable text (its fonts have no Unicode map)",
            hint="OCR it to get a real text layer, e.g. `ocrmypdf --force-ocr in.pdf out.pdf`",
        )
    if not emitted:
        raise InputError(
            f"{display(source.label)}: no page has extractable text (a scanned PDF?)",
            hint="memread does not do OCR; run e.g. `ocrmypdf in.pdf out.pdf` first",
        )


def _unlock(reader: Any, source: Source) -> None:
    """Decrypt with the user's password; an empty user password was already tried by pypdf."""
    from pypdf import PasswordType

    if not reader.is_encrypted:
        return
    encryption = getattr(reader, "_encryption", None)
    if encryption is not None and encryption.is_decrypted():
        return  # opened with the empty user password: "owner-only" protection
    if source.password is None:
        raise InputError(
            f"{display(source.label)} is encrypted",
            hint="pass --password PASSWORD (the PDF's user or owner password)",
        )
    if reader.decrypt(source.password) == PasswordType.NOT_DECRYPTED:
        raise InputError(
            f"{display(source.label)}: wrong password", hint="check the password given with --password"
        )


def _page_labels(reader: Any, count: int) -> list[str] | None:
    """Printed page labels ("iv", "A-3") when the PDF defines them; pypdf invents "1".."n" otherwise."""
    try:
        if "/PageLabels" not in reader.trailer["/Root"]:
            return None
        labels = list(reader.page_labels)
    except Exception:  # labels are a nicety: a broken /PageLabels tree must not stop reading
        return None
    return labels if len(labels) == count else None


@contextmanager
def _pypdf_messages(into: list[str]) -> Iterator[None]:
    """Collect pypdf's log warnings (damaged xref, wrong offsets...) instead of letting them reach stderr."""
    logger = logging.getLogger("pypdf")

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            into.append(record.getMessage().strip())

    handler, propagate = Collect(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _count(pages: list[int]) -> str:
    return "1 page" if len(pages) == 1 else f"{len(pages)} pages"


def _list(pages: list[int]) -> str:
    shown = ", ".join(map(str, pages[:_LISTED_PAGES]))
    return shown + (f", … ({len(pages) - _LISTED_PAGES} more)" if len(pages) > _LISTED_PAGES else "")


def _short(error: BaseException) -> str:
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return message[:160]
