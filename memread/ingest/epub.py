"""EPUB books (ebooklib): chapters in spine (reading) order, provenance = chapter title.

The book's outline is the ``<h1>``-``<h6>`` of its chapters (``<h1>`` at level 0), their text as it is read;
a chapter without any takes its entries in the book's table of contents (nav document, or NCX when ebooklib
refuses the book), at their depth there.

ebooklib refuses some real books (Debian's live-manual: ``KeyError: There is no item named …``), so when it
raises, the book is read straight from the zip: ``META-INF/container.xml`` → the OPF's ``<manifest>`` and
``<spine>``; items the manifest lists but the zip lacks are skipped with a warning.
"""

from __future__ import annotations

import posixpath
import warnings
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import IO, Any
from urllib.parse import unquote

from memread.document import Document, Heading, Provenance, Segment
from memread.errors import InputError
from memread.ingest.expansion import bomb_error, is_bomb
from memread.ingest.source import Source, display, printable
from memread.ingest.xhtml import xhtml_to_text

CORRUPT_HINT = (
    "the file may be truncated (an interrupted download?); re-download it or check it with `unzip -t`"
)
_EPUB_TYPE = "{http://www.idpf.org/2007/ops}type"
_DOCUMENT_TYPES = ("application/xhtml+xml", "text/html", "application/xml", "text/xml")


@dataclass(frozen=True)
class Chapter:
    """One spine item before it is read: its path in the zip, its entries in the table of contents (depth, 0 =
    top, and label), and how to get its bytes."""

    name: str
    toc: tuple[tuple[int, str], ...]
    read: Callable[[], bytes]

    @property
    def toc_label(self) -> str | None:
        return self.toc[0][1] if self.toc else None


def open_epub(source: Source, document: Document) -> Iterator[Segment]:
    """Open the book now (raising InputError if it is not a readable zip) and return its chapters lazily."""
    stream = source.open_seekable()
    try:
        archive = zipfile.ZipFile(stream)
    except Exception as error:  # BadZipFile, EOFError, NotImplementedError (a zip version from the future),
        # UnicodeDecodeError (a member name flagged UTF-8 that is not)...
        stream.close()
        raise InputError(
            f"{display(source.label)}: not a readable EPUB ({printable(str(error))})", hint=CORRUPT_HINT
        ) from error
    try:
        _refuse_bombs(archive, source)
    except InputError:
        archive.close()
        stream.close()
        raise
    try:
        chapters = _ebooklib_chapters(stream)
    except Exception as error:  # ebooklib raises KeyError, EpubException, lxml errors... on malformed books
        document.warn(
            f"{display(source.label)}: malformed EPUB ({printable(_short(error))}); read its spine directly"
        )
        try:
            chapters = _zip_chapters(archive, source, document)
        except InputError:
            archive.close()
            stream.close()
            raise
        except Exception as error:  # damaged members: CRC or deflate errors, unsupported methods, encryption
            archive.close()
            stream.close()
            raise InputError(
                f"{display(source.label)}: not a readable EPUB ({printable(_short(error))})", hint=CORRUPT_HINT
            ) from error
    return _segments(chapters, archive, stream, source, document)


def _refuse_bombs(archive: zipfile.ZipFile, source: Source) -> None:
    """Refuse a zip whose declared sizes make it a decompression bomb, before ebooklib reads every member into
    memory. (zipfile never returns more than a member's declared size, so the declaration can be trusted.)"""
    members = archive.infolist()
    for info in members:
        if is_bomb(info.file_size, info.compress_size):
            raise bomb_error(source.label, info.file_size, info.compress_size, f"member {info.filename}")
    expanded, packed = sum(i.file_size for i in members), sum(i.compress_size for i in members)
    if is_bomb(expanded, packed):
        raise bomb_error(source.label, expanded, packed, "zip archive")


def _segments(
    chapters: list[Chapter], archive: zipfile.ZipFile, stream: IO[bytes], source: Source, document: Document
) -> Iterator[Segment]:
    emitted = False
    seen: set[str] = set()
    damaged: list[str] = []
    try:
        for chapter in chapters:
            if chapter.name in seen:
                continue  # spines may list fragments of one file ("a.xhtml#o8"): read each file once
            seen.add(chapter.name)
            try:
                content = chapter.read()
            except KeyError:
                document.warn(
                    f"{display(source.label)}: the book lists {printable(chapter.name)} but does not contain it; skipped"
                )
                continue
            except Exception as error:  # CRC/deflate errors, unsupported methods, encrypted members
                damaged.append(f"{printable(chapter.name)} ({printable(_short(error))})")
                continue  # one damaged chapter must not cost the user the others
            page = xhtml_to_text(content)
            if not page.text:
                continue  # cover images, blank separators
            title = page.heading or page.title or chapter.toc_label or posixpath.basename(chapter.name)
            document.stats.chapters += 1
            outline = [(level - 1, text) for level, text in page.headings] or chapter.toc
            document.outline.extend(Heading(level, text, source.label, chapter=title) for level, text in outline)
            yield Segment(("\n\n" if emitted else "") + page.text, Provenance(source.label, chapter=title))
            emitted = True
    finally:
        archive.close()
        stream.close()
    if damaged and emitted:
        document.warn(
            f"{display(source.label)}: {len(damaged)} damaged chapter file(s) skipped: {', '.join(damaged[:3])}"
        )
    elif damaged:
        raise InputError(
            f"{display(source.label)}: its chapters are damaged: {', '.join(damaged[:3])}", hint=CORRUPT_HINT
        )
    if not emitted:
        raise InputError(
            f"{display(source.label)}: the book contains no text",
            hint="is it a picture book or DRM-protected?",
        )


def _ebooklib_chapters(stream: IO[bytes]) -> list[Chapter]:
    import ebooklib
    from ebooklib import epub

    stream.seek(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # older ebooklib warns about ignore_ncx on every read
        book = epub.read_epub(stream, options={"ignore_ncx": True})
    contents = _toc_entries(book.toc)
    linear: list[Chapter] = []
    auxiliary: list[Chapter] = []
    for entry in book.spine:
        idref, is_linear = (entry, "yes") if isinstance(entry, str) else (entry[0], entry[1])
        item = book.get_item_with_id(idref)
        if item is None or isinstance(item, epub.EpubNav) or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        chapter = Chapter(item.file_name, contents.get(item.file_name, ()), _constant(item.get_content()))
        # Non-linear items (footnotes, answers) are read after the main text, as a reader would meet them.
        (auxiliary if str(is_linear).lower() == "no" else linear).append(chapter)
    return linear + auxiliary


def _toc_entries(toc: Any) -> dict[str, tuple[tuple[int, str], ...]]:
    """ebooklib's table of contents as (depth, label) entries by chapter path, in the order it lists them."""
    entries: dict[str, list[tuple[int, str]]] = {}

    def visit(items: Any, depth: int) -> None:
        for item in items:
            if isinstance(item, (tuple, list)):  # (Section, [children])
                visit([item[0]], depth)
                visit(item[1], depth + 1)
                continue
            href, title = getattr(item, "href", None), getattr(item, "title", None)
            if href and title:
                _add_entry(entries, unquote(href.split("#", 1)[0]), depth, " ".join(str(title).split()))

    visit(toc, 0)
    return {path: tuple(listed) for path, listed in entries.items()}


def _add_entry(entries: dict[str, list[tuple[int, str]]], path: str, depth: int, title: str) -> None:
    listed = entries.setdefault(path, [])
    if title and not (listed and listed[-1][1] == title):  # NCXs repeat a chapter as its own first child
        listed.append((depth, title))


def _constant(content: bytes) -> Callable[[], bytes]:
    return lambda: content


def _zip_chapters(archive: zipfile.ZipFile, source: Source, document: Document) -> list[Chapter]:
    """The spine read straight from the OPF, for books ebooklib refuses."""
    from lxml import etree

    parser = etree.XMLParser(recover=True, resolve_entities=False, no_network=True)
    try:
        container = etree.fromstring(archive.read("META-INF/container.xml"), parser=parser)
        rootfile = next(el for el in container.iter() if _local(el) == "rootfile" and el.get("full-path"))
        opf_path = rootfile.get("full-path")
        opf = etree.fromstring(archive.read(opf_path), parser=parser)
    except (KeyError, StopIteration, etree.XMLSyntaxError, ValueError) as error:
        raise InputError(
            f"{display(source.label)}: not a readable EPUB (no package document: {printable(_short(error))})",
            hint=CORRUPT_HINT,
        ) from error
    base = posixpath.dirname(opf_path)
    manifest: dict[str, tuple[str, str, str]] = {}  # id -> (zip path, media type, properties)
    for item in opf.iter():
        if _local(item) == "item" and item.get("id") and item.get("href"):
            path = posixpath.normpath(posixpath.join(base, unquote(item.get("href").split("#", 1)[0])))
            manifest[item.get("id")] = (path, item.get("media-type", ""), item.get("properties", ""))
    names = set(archive.namelist())
    spine = next((el for el in opf.iter() if _local(el) == "spine"), None)
    contents = _nav_entries(archive, manifest, spine, names)
    linear: list[Chapter] = []
    auxiliary: list[Chapter] = []
    missing: list[str] = []
    for itemref in spine.iter() if spine is not None else ():
        if _local(itemref) != "itemref" or itemref.get("idref") not in manifest:
            continue
        path, media_type, properties = manifest[itemref.get("idref")]
        if "nav" in properties.split() or (media_type and media_type not in _DOCUMENT_TYPES):
            continue
        if path not in names:
            missing.append(path)
            continue
        chapter = Chapter(path, contents.get(path, ()), partial(archive.read, path))
        (auxiliary if itemref.get("linear", "yes").lower() == "no" else linear).append(chapter)
    if missing:
        document.warn(
            f"{display(source.label)}: {len(missing)} chapter file(s) listed but missing, skipped: {printable(', '.join(missing[:5]))}"
        )
    return linear + auxiliary


def _nav_entries(
    archive: zipfile.ZipFile, manifest: dict[str, tuple[str, str, str]], spine: Any, names: set[str]
) -> dict[str, tuple[tuple[int, str], ...]]:
    """The table of contents as (depth, label) entries by chapter path, from the EPUB 3 nav document or else the
    EPUB 2 NCX."""
    from lxml import etree

    parser = etree.XMLParser(recover=True, resolve_entities=False, no_network=True)
    ncx_id = spine.get("toc") if spine is not None else None
    candidates = sorted(manifest.items(), key=lambda item: "nav" not in item[1][2].split())  # the nav first
    for item_id, (path, media_type, properties) in candidates:
        is_nav = "nav" in properties.split()
        is_ncx = item_id == ncx_id or media_type == "application/x-dtbncx+xml"
        if not (is_nav or is_ncx) or path not in names:
            continue
        try:
            root = etree.fromstring(archive.read(path), parser=parser)
        except Exception:  # a damaged table of contents only costs the chapter titles
            continue
        if root is None:
            continue
        entries: dict[str, list[tuple[int, str]]] = {}
        base = posixpath.dirname(path)
        for element in root.iter():
            if is_nav and _local(element) == "a" and element.get("href") and not _aside_nav(element):
                href, text = element.get("href"), " ".join("".join(element.itertext()).split())
                depth = sum(1 for parent in element.iterancestors() if _local(parent) == "ol") - 1
            elif is_ncx and _local(element) == "navPoint":
                content = next((el for el in element.iter() if _local(el) == "content"), None)
                label = next((el for el in element.iter() if _local(el) == "text"), None)
                if content is None or label is None or not content.get("src"):
                    continue
                href, text = content.get("src"), " ".join("".join(label.itertext()).split())
                depth = sum(1 for parent in element.iterancestors() if _local(parent) == "navPoint")
            else:
                continue
            target = posixpath.normpath(posixpath.join(base, unquote(href.split("#", 1)[0])))
            _add_entry(entries, target, max(depth, 0), text)
        if entries:
            return {target: tuple(listed) for target, listed in entries.items()}
    return {}


def _aside_nav(element: Any) -> bool:
    """Is this link in the nav document's landmarks or page list rather than its table of contents?"""
    nav = next((parent for parent in element.iterancestors() if _local(parent) == "nav"), None)
    return nav is not None and nav.get(_EPUB_TYPE, "") in ("landmarks", "page-list")


def _local(element: Any) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _short(error: BaseException) -> str:
    text = str(error).strip().strip("'\"")
    return (text.splitlines()[0] if text else type(error).__name__)[:160]
