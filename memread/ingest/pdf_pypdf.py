"""What memread asks of pypdf: opening and unlocking a PDF, its page tree, its damage reports, and page text when
PDFium cannot give it (a damaged file PDFium refuses, a page PDFium reads as empty).

pypdf is given an open file object, never a path (a path is read whole into memory). Its log messages are collected
(:func:`pypdf_messages`) instead of reaching stderr; :func:`missing_dependency` tells a library pypdf would have
liked (fontTools, cryptography) from damage in the file.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

from memread.errors import InputError
from memread.ingest.source import Source, display

INHERITED = ("/Resources", "/MediaBox", "/CropBox", "/Rotate")  # page attributes a page tree node passes down
MAX_TREE_DEPTH = 64

# "fontTools is required to …", "cryptography>=3.1 is required for AES algorithm", "The 'fontTools' library is …"
_REQUIRED = re.compile(r"(?:The )?'?([A-Za-z][\w.\-]*?)'?(?: library)?(?:[<>=!~]=?[\d.]+)? is required\b")
_PIP_NAMES = {"fonttools": "fonttools", "pillow": "pillow", "cryptography": "cryptography", "brotli": "brotli"}


def open_reader(stream: IO[bytes], source: Source, problems: list[str]) -> Any:
    """A pypdf reader on ``stream``, unlocked with the user's password (InputError if it is missing or wrong).

    pypdf's warnings while it reads the cross-reference table and trailer are appended to ``problems``.
    Other exceptions (pypdf raises many types on damage) propagate for the caller to classify."""
    from pypdf import PdfReader

    with pypdf_messages(problems):
        reader = PdfReader(stream, strict=False)
        unlock(reader, source)
    return reader


def unlock(reader: Any, source: Source) -> None:
    """Decrypt with the user's password; an empty user password was already tried by pypdf."""
    from pypdf import PasswordType

    if not reader.is_encrypted:
        return
    encryption = getattr(reader, "_encryption", None)
    if encryption is not None and encryption.is_decrypted():
        return  # opened with the empty user password: "owner-only" protection
    if source.password is None:
        raise encrypted(source)
    if reader.decrypt(source.password) == PasswordType.NOT_DECRYPTED:
        raise wrong_password(source)


def encrypted(source: Source) -> InputError:
    return InputError(
        f"{display(source.label)} is encrypted",
        hint="pass --password PASSWORD (the PDF's user or owner password)",
    )


def wrong_password(source: Source) -> InputError:
    return InputError(f"{display(source.label)}: wrong password", hint="check the password given with --password")


def page_labels(reader: Any, count: int) -> list[str] | None:
    """Printed page labels ("iv", "A-3") when the PDF defines them; pypdf invents "1".."n" otherwise."""
    try:
        if "/PageLabels" not in reader.trailer["/Root"]:
            return None
        labels = list(reader.page_labels)
    except Exception:  # labels are a nicety: a broken /PageLabels tree must not stop reading
        return None
    return labels if len(labels) == count else None


@dataclass(frozen=True)
class PageNode:
    """One page of the page tree: its dictionary and the attributes it inherits from its ancestors."""

    reference: Any  # pypdf IndirectObject, or None for a page given inline
    page: Any  # pypdf DictionaryObject
    inherited: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        value = self.page.get(key, self.inherited.get(key))
        return value.get_object() if value is not None else None


def page_tree(reader: Any) -> list[PageNode]:
    """The pages in reading order, found by walking ``/Root /Pages`` (pypdf's own ``reader.pages`` flattens the
    tree eagerly: 7 s on a 2,415-page manual). Raises ValueError on a loop or a tree deeper than any real one."""
    pages: list[PageNode] = []
    seen: set[tuple[int, int]] = set()

    def visit(reference: Any, inherited: dict[str, Any], depth: int) -> None:
        if depth > MAX_TREE_DEPTH:
            raise ValueError("page tree too deep")
        node = reference.get_object()
        key = _key(reference)
        if key is not None:
            if key in seen:
                raise ValueError("page tree has a loop")
            seen.add(key)
        if "/Kids" in node and node.get("/Type") != "/Page":
            passed = {**inherited, **{name: node[name] for name in INHERITED if name in node}}
            for kid in node["/Kids"]:
                visit(kid, passed, depth + 1)
        else:
            pages.append(PageNode(reference if key is not None else None, node, inherited))

    visit(reader.trailer["/Root"].get_object()["/Pages"], {}, 0)
    return pages


def page_count(reader: Any) -> int:
    """The page count the page tree's root declares (its /Count)."""
    return int(reader.trailer["/Root"].get_object()["/Pages"].get_object()["/Count"])


def page_at(reader: Any, index: int) -> PageNode:
    """Page ``index`` (0-based), found by descending the page tree by its nodes' /Count: only the nodes on the
    way are parsed. Raises ValueError (or pypdf's errors) when the counts do not lead to it."""
    reference = reader.trailer["/Root"].get_object()["/Pages"]
    inherited: dict[str, Any] = {}
    remaining = index
    for _ in range(MAX_TREE_DEPTH):
        node = reference.get_object()
        if "/Kids" not in node or node.get("/Type") == "/Page":
            if remaining:
                raise ValueError(f"page {index + 1} is not where the page tree's counts put it")
            return PageNode(reference if _key(reference) is not None else None, node, inherited)
        inherited = {**inherited, **{name: node[name] for name in INHERITED if name in node}}
        for kid in node["/Kids"]:
            child = kid.get_object()
            size = int(child.get("/Count", 1)) if "/Kids" in child and child.get("/Type") != "/Page" else 1
            if remaining < size:
                reference = kid
                break
            remaining -= size
        else:
            raise ValueError(f"page {index + 1} is past the page tree's end")
    raise ValueError("page tree too deep")


def page_object(reader: Any, node: PageNode) -> Any:
    """A pypdf PageObject for ``node`` (with its inherited attributes), to extract its text."""
    from pypdf import PageObject
    from pypdf.generic import NameObject

    page = PageObject(reader, node.reference)
    page.update(node.page)
    for name, value in node.inherited.items():
        if name not in page:
            page[NameObject(name)] = value
    return page


def extract_text(page: Any, problems: list[str]) -> str:
    """pypdf's text of ``page``; its warnings go to ``problems``."""
    with pypdf_messages(problems):
        return str(page.extract_text())


def forget(reader: Any, reference: Any) -> None:
    """Drop a parsed object from pypdf's cache (a page's content stream, once read), so memory stays flat."""
    key = _key(reference)
    if key is not None:
        reader.resolved_objects.pop((key[1], key[0]), None)


def _key(reference: Any) -> tuple[int, int] | None:
    idnum = getattr(reference, "idnum", None)
    return (idnum, reference.generation) if idnum is not None else None


def missing_dependency(message: str, *, raised: bool = False) -> tuple[str, str] | None:
    """The library a pypdf message says is missing, and its pip name: ``("fontTools", "fonttools")``.

    ``raised``: the message is a DependencyError's (it needs no "not installed" to be believed)."""
    found = _REQUIRED.match(message.strip())
    if not found or not (raised or "install" in message.lower()):
        return None
    name = found.group(1)
    return name, _PIP_NAMES.get(name.lower(), name.lower())


def pypdf_messages(into: list[str]) -> AbstractContextManager[None]:
    """Collect pypdf's log warnings (damaged xref, wrong offsets...) instead of letting them reach stderr."""
    return library_warnings("pypdf", into)


@contextmanager
def library_warnings(name: str, into: list[str]) -> Iterator[None]:
    """Collect the warnings a PDF library logs (logger ``name``) into ``into``, kept from stderr meanwhile."""
    logger = logging.getLogger(name)

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
