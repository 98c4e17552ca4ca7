"""Where each entry of a memory comes from, as the view shows it: ``- [p. 12] head: text``.

A strategy that keeps its memory as entries with their provenance says so in its state (``sources``: one
``{"where", "spans", "excerpt", "chunk"}`` a line, in the memory's order; the evidence strategy). The model never
sees these places: only the view puts them in front of the lines, and only when every source lines up with its
line (else it shows the memory as it is).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memread.cli.trim import cut, cut_left
from memread.document import Span

MAX_PLACE = 40  # characters of one entry's place at most: the entry itself is what the pane is for
MAX_NAME = 24  # of a file name inside a directory run (its end: the file's own name says the most)
MAX_CHAPTER = 24  # of each chapter title
_PROBE = 40  # characters of a source's excerpt that must start its line's text


def place(source: Mapping[str, Any], document: str) -> str:
    """Where one entry comes from, short: ``p. 12``, ``lines 40-52``, ``notes/a.txt line 3``.

    The file is named only when it is not the run's ``document`` itself (a directory run reads many files; a
    single document is named in the header already). Falls back on the entry's ``where`` text when it has no
    structured spans; the whole is cut at :data:`MAX_PLACE` characters."""
    spans = source.get("spans")
    if isinstance(spans, list) and spans and all(isinstance(span, Mapping) for span in spans):
        text = "; ".join(filter(None, (_span_place(span, document) for span in spans)))
    else:
        where = str(source.get("where", ""))
        text = where.removeprefix(f"{document} ") if document else where
    return cut(text, MAX_PLACE)


def with_places(memory: str, sources: Any, document: str) -> str:
    """``memory`` with each entry line (``- …``) led by its place in brackets, when ``sources`` (a strategy
    state's ``sources``) lines up with the memory's last lines one for one, each line starting with its source's
    excerpt; otherwise ``memory`` unchanged. At most one line before the entries is kept as it is (a line that
    says what the entries are)."""
    if not isinstance(sources, list) or not sources:
        return memory
    lines = memory.split("\n")  # not splitlines(): an entry's text may hold other line separators
    if len(lines) < len(sources):
        return memory
    preface, entries = lines[:-len(sources)], lines[-len(sources):]
    if len(preface) > 1 or any(line.startswith("- ") for line in preface):
        return memory
    shown = []
    for line, source in zip(entries, sources, strict=True):
        if not isinstance(source, Mapping) or not _lines_up(line, source.get("excerpt")):
            return memory
        where = place(source, document)
        shown.append(f"- [{where}] {line[2:]}" if where else line)
    return "\n".join([*preface, *shown])


def _lines_up(line: str, excerpt: Any) -> bool:
    """Whether ``line`` is the entry ``excerpt`` starts: ``- text…`` or ``- head: text…``."""
    if not isinstance(excerpt, str) or not line.startswith("- "):
        return False
    probe = excerpt[:_PROBE]
    return line[2:].startswith(probe) or f": {probe}" in line


def _span_place(span: Mapping[str, Any], document: str) -> str:
    name = str(span.get("source", ""))
    chapters = span.get("chapters")
    titles = tuple(cut(str(title), MAX_CHAPTER) for title in chapters) if isinstance(chapters, list) else ()
    located = Span("", page_first=span.get("page_first"), page_last=span.get("page_last"),
                   label_first=span.get("label_first"), label_last=span.get("label_last"), chapters=titles,
                   line_first=span.get("line_first"), line_last=span.get("line_last")).describe().strip()
    named = "" if name == document else cut_left(name, MAX_NAME)
    return " ".join(filter(None, (named, located)))
