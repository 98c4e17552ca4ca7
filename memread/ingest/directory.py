"""A folder as one document: every readable file, recursively, in a deterministic order.

Skipped (and counted in ``stats.skipped``): hidden files and folders, paths a ``.gitignore`` excludes,
``__pycache__``/``node_modules``, binaries and unknown formats, empty files, files that cannot be read.
Symlinked folders are not followed (no loops); named pipes, devices and sockets are skipped without being
opened (opening a pipe nobody writes to would wait forever), as are dangling or looping symlinks. Each file's text is preceded by a header line
``=== relative/path ===`` and its segments carry that relative path as their provenance source. The outline is
each file's outline, in the same order, its headings' source the relative path.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memread.document import Document, Provenance, Segment
from memread.errors import InputError
from memread.ingest.registry import Loader, find_loader
from memread.ingest.sniff import looks_binary
from memread.ingest.source import EmptyInputError, display, file_source, printable

_NEVER_READ = frozenset(("__pycache__", "node_modules"))  # machine-made trees nobody asks questions about


@dataclass(frozen=True)
class _File:
    relative: str  # posix path relative to the directory: the provenance source
    path: Path
    loader: Loader
    size: int


def open_directory(root: Path, name: str, *, password: str | None = None) -> Document:
    """Walk ``root`` now (to fail early when nothing is readable); read the files lazily."""
    skipped: Counter[str] = Counter()
    files = list(_walk(root, skipped))
    summary = ", ".join(f"{count} {reason}" for reason, count in sorted(skipped.items()))
    if not files:
        raise InputError(
            f"{display(name)}: no readable files"
            + (f" (skipped: {summary})" if summary else " (the directory is empty)"),
            hint="memread reads PDF, EPUB and text files; hidden and .gitignored paths are skipped",
        )

    def segments(document: Document) -> Iterator[Segment]:
        return _segments(files, name, document, password)

    document = Document(name, "directory", segments, size_bytes=sum(file.size for file in files))
    document.stats.skipped.update(skipped)
    if skipped:
        document.warn(f"{display(name)}: skipped {sum(skipped.values())} paths ({summary})")
    return document


def _walk(root: Path, skipped: Counter[str]) -> Iterator[_File]:
    import pathspec

    ignores: dict[
        str, pathspec.GitIgnoreSpec
    ] = {}  # directory (posix, relative; "" = root) -> its .gitignore

    def ignored(relative: str, is_dir: bool) -> bool:
        for base, spec in ignores.items():
            if base and not relative.startswith(base + "/"):
                continue
            inner = relative[len(base) + 1 :] if base else relative
            if spec.match_file(inner + ("/" if is_dir else "")):
                return True
        return False

    def unreadable_dir(_error: OSError) -> None:
        skipped["unreadable"] += 1

    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=unreadable_dir):
        here = Path(dirpath).relative_to(root).as_posix()
        here = "" if here == "." else here
        if ".gitignore" in filenames:
            try:
                lines = (
                    (Path(dirpath) / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
                )
                ignores[here] = pathspec.GitIgnoreSpec.from_lines(lines)
            except OSError:
                pass
        keep = []
        for dirname in sorted(dirnames):
            relative = f"{here}/{dirname}" if here else dirname
            reason = _skip_reason(dirname, relative, True, ignored)
            if reason is None and os.path.islink(os.path.join(dirpath, dirname)):
                reason = "symlinked folders"
            if reason:
                skipped[reason] += 1
            else:
                keep.append(dirname)
        dirnames[:] = keep  # sorted in place: os.walk's order is the filesystem's otherwise
        for filename in sorted(filenames):
            relative = f"{here}/{filename}" if here else filename
            reason = _skip_reason(filename, relative, False, ignored)
            if reason:
                skipped[reason] += 1
                continue
            path = Path(dirpath) / filename
            try:
                mode = path.stat().st_mode  # follows symlinks: a loop or a dangling link raises here
            except OSError:
                skipped["unreadable"] += 1
                continue
            if not stat.S_ISREG(mode):
                skipped["not regular files"] += 1
                continue
            try:
                source = file_source(path, relative)
            except (OSError, InputError):
                skipped["unreadable"] += 1
                continue
            if source.size_bytes == 0:
                skipped["empty"] += 1
                continue
            loader = find_loader(source.name, source.head)
            if loader is None or (loader.name == "text" and looks_binary(source.head)):
                skipped["binary"] += 1
                continue
            yield _File(relative, path, loader, source.size_bytes or 0)


def _skip_reason(name: str, relative: str, is_dir: bool, ignored: Callable[[str, bool], bool]) -> str | None:
    if name.startswith("."):
        return "hidden"
    if is_dir and name in _NEVER_READ:
        return "ignored"
    if ignored(relative, is_dir):
        return "gitignored"
    return None


def _segments(files: list[_File], name: str, document: Document, password: str | None) -> Iterator[Segment]:
    last_text = ""
    for file in files:
        first: Segment | None = None
        reason = "empty"
        headings = len(document.outline)  # a file skipped below takes back the headings its loader gave
        try:
            segments = file.loader.open(file_source(file.path, file.relative, password=password), document)
            first = next(segments, None)  # a file with no text gets no header
        except EmptyInputError:
            pass
        except InputError as error:
            document.warn(f"skipped {display(file.relative)}: {error.message}")
            reason = "unreadable"
        except OSError as error:
            document.warn(f"skipped {display(file.relative)}: {error.strerror or error}")
            reason = "unreadable"
        if first is None:
            document.stats.skipped[reason] = document.stats.skipped.get(reason, 0) + 1
            del document.outline[headings:]
            continue
        separator = "" if not last_text else ("\n" if last_text.endswith("\n") else "\n\n")
        yield Segment(f"{separator}=== {printable(file.relative)} ===\n", Provenance(file.relative))
        document.stats.files += 1
        document.stats.formats[file.loader.format] = document.stats.formats.get(file.loader.format, 0) + 1
        last_text = first.text
        yield first
        try:
            for segment in segments:
                last_text = segment.text
                yield segment
        except InputError as error:  # damage found mid-file: keep what was read, go on with the next file
            document.warn(f"{display(file.relative)}: {error.message}")
    if not document.stats.files:
        raise InputError(f"{display(name)}: none of its files could be read", hint="see the warnings above for why")
