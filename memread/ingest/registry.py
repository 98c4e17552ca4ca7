"""Which loader reads which input: a plain registry that plugins extend (entry-point group ``memread.loaders.v1``).

A :class:`Loader` is found for an input by, in order:

1. magic bytes — each loader's ``sniff(head)`` (``%PDF-``, an EPUB's ``mimetype`` entry, a text BOM);
2. the file extension (``.pdf``, ``.md``, …), longest match first;
3. "sniffs as text" — the loaders with ``reads_any_text=True`` take anything that looks like text.

Loaders registered later are asked first, so a plugin can claim an extension from a built-in loader. The
built-ins are registered first, through the same path as :func:`register_loader`; the plugins of the entry-point
group are loaded (see :mod:`memread.plugins`) the first time the loaders are asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from memread.ingest.sniff import bom_encoding, is_epub, is_pdf, looks_like_text

if TYPE_CHECKING:
    from memread.document import Document, Segment
    from memread.ingest.source import Source

#: Reads a source into segments. Called when the document is opened: it should check the input eagerly (raise
#: InputError for a corrupt or encrypted file) and return a lazy iterator that does the reading.
OpenFunction = Callable[["Source", "Document"], Iterator["Segment"]]


@dataclass(frozen=True)
class Loader:
    name: str  # registry key, e.g. "pdf"
    format: str  # Document.format it produces
    extensions: tuple[str, ...]  # lower-case, with the dot: (".pdf",)
    sniff: Callable[[bytes], bool]  # True when the first bytes prove the format (magic numbers)
    open: OpenFunction
    reads_any_text: bool = False  # fallback for inputs that sniff as text whatever their name


_loaders: dict[str, Loader] = {}
_builtins_registered = False


def register_loader(loader: Loader, *, replace: bool = False) -> None:
    """Add ``loader`` to the registry (``replace=True`` to swap out one of the same name)."""
    _ensure_builtins()
    _add(loader, replace=replace)


def _add(loader: Loader, *, replace: bool) -> None:
    if loader.name in _loaders and not replace:
        raise ValueError(f"a loader named {loader.name!r} is already registered")
    _loaders.pop(loader.name, None)
    _loaders[loader.name] = loader


def loaders() -> list[Loader]:
    """Registered loaders, in registration order (built-ins first, then plugins)."""
    _ensure_builtins()
    from memread import plugins

    plugins.load("loaders", _register_plugin)
    return list(_loaders.values())


def validate_plugin(plugin: Any, obj: Any) -> str | None:
    """Why the object a ``memread.loaders.v1`` entry point names is not a loader (None: it is one)."""
    if not isinstance(obj, Loader):
        return f"{plugin.value} is a {type(obj).__name__}, not a memread.ingest.Loader"
    return None


def _register_plugin(plugin: Any) -> str:
    from memread import plugins

    loader = plugins.import_object(plugin)
    problem = validate_plugin(plugin, loader)
    if problem:
        raise TypeError(problem)
    register_loader(loader)
    return plugins.LOADED


def find_loader(path: str | PurePath, head_bytes: bytes) -> Loader | None:
    """The loader for a file called ``path`` whose (decompressed) content starts with ``head_bytes``, or None."""
    candidates = list(reversed(loaders()))
    for loader in candidates:
        if loader.sniff(head_bytes):
            return loader
    name = PurePath(path).name.lower()
    by_extension = [
        (len(ext), loader) for loader in candidates for ext in loader.extensions if name.endswith(ext)
    ]
    if by_extension:
        return max(by_extension, key=lambda pair: pair[0])[1]
    if looks_like_text(head_bytes):
        for loader in candidates:
            if loader.reads_any_text:
                return loader
    return None


#: Formats memread reads only with a first-party plugin (plugins/), by extension: what to suggest installing.
FIRST_PARTY_PLUGINS = {".docx": "memread-docx", ".docm": "memread-docx"}


def plugin_suggestion(path: str | PurePath) -> str | None:
    """The first-party plugin that would read ``path`` when no registered loader does (e.g. "memread-docx")."""
    name = PurePath(path).name.lower()
    return next((plugin for ext, plugin in FIRST_PARTY_PLUGINS.items() if name.endswith(ext)), None)


# Built-ins import their heavy libraries (pypdf, ebooklib, lxml) only when a document of theirs is opened.
def _open_pdf(source: Source, document: Document) -> Iterator[Segment]:
    from memread.ingest.pdf import open_pdf

    return open_pdf(source, document)


def _open_epub(source: Source, document: Document) -> Iterator[Segment]:
    from memread.ingest.epub import open_epub

    return open_epub(source, document)


def _open_html(source: Source, document: Document) -> Iterator[Segment]:
    from memread.ingest.html import open_html

    return open_html(source, document)


def _open_text(source: Source, document: Document) -> Iterator[Segment]:
    from memread.ingest.text import open_text

    return open_text(source, document)


_TEXT_EXTENSION_NAMES = (
    "txt text md markdown rst adoc asciidoc org tex bib log out err csv tsv json jsonl ndjson xml yaml yml "
    "toml ini cfg conf properties env css svg srt vtt diff patch sql sh bash zsh fish ps1 bat "
    "py pyi c h cc cpp hpp cxx hxx cs java kt kts scala go rs rb php pl pm lua r jl swift m mm js mjs cjs "
    "ts tsx jsx vue dart ex exs erl hs ml clj lisp el vim nix tf gradle cmake mk dockerfile gitignore "
    "sum eml mbox ics"
)
TEXT_EXTENSIONS = tuple("." + ext for ext in _TEXT_EXTENSION_NAMES.split())


def _ensure_builtins() -> None:
    global _builtins_registered
    if _builtins_registered:
        return
    _builtins_registered = True
    for loader in (
        Loader(
            "text", "text", TEXT_EXTENSIONS, lambda head: bom_encoding(head) is not None, _open_text, True
        ),
        Loader("pdf", "pdf", (".pdf",), is_pdf, _open_pdf),
        Loader("epub", "epub", (".epub",), is_epub, _open_epub),
        Loader("html", "html", (".html", ".htm", ".xhtml"), lambda head: False, _open_html),
    ):
        _add(loader, replace=False)
