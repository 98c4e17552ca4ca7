"""``memread inspect``: what memread sees in a document, without running a model.

Human output is a short table on stdout; ``--chunks`` adds one line per chunk (index, tokens, where it comes
from) as the chunks are made. Warnings (pages without text, undecodable bytes, skipped files) go to stderr.

``--json`` prints one object with these fields (stable: fields may be added, never renamed or removed):

``source``, ``format``, ``size_bytes`` (null for stdin), ``files``, ``formats`` (format -> files),
``skipped`` (reason -> count), ``pages``, ``empty_pages`` (page numbers without a text layer), ``chapters``,
``lines``, ``characters``, ``tokens`` (sum of the chunks' token counts), ``tokenizer``, ``chunk_tokens`` (the
budget), ``chunks`` (how many), ``largest_chunk`` (tokens), ``warnings`` (list of strings), and with
``--chunks`` also ``chunk_list``: ``[{"index", "tokens", "characters", "where", "spans"}]`` where each span
holds ``source`` and, when known, ``page_first``/``page_last``, ``label_first``/``label_last``,
``chapters``, ``line_first``/``line_last``.
"""

from __future__ import annotations

from typing import Any

import typer


def inspect(
    source: str = typer.Argument(..., help="A file, a directory, or - for standard input."),
    chunk_tokens: int = typer.Option(
        5000, "--chunk-tokens", min=16, help="Token budget of one chunk (the papers use 5000)."
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        "-m",
        help="Count tokens with this GGUF model's own tokenizer (registry name or path; never downloads). "
        "Default: tiktoken cl100k.",
    ),
    password: str | None = typer.Option(None, "--password", help="Password of an encrypted PDF."),
    show_chunks: bool = typer.Option(False, "--chunks", help="Also list every chunk: index, tokens, where."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
) -> None:
    """Show format, pages, chapters or files, characters, tokens, chunks and warnings for a document."""
    import json

    from memread.chunk import Chunker
    from memread.cli.environment import current
    from memread.ingest import open_document

    env = current()
    tokenizer = _tokenizer(model)
    document = open_document(source, stdin=env.stdin_binary() if source == "-" else None, password=password)

    count = tokens = largest = 0
    listed: list[dict[str, Any]] = []
    progress = _Progress(env) if _wants_progress(env, listing=show_chunks and not json_output) else None
    for chunk in Chunker(tokenizer, chunk_tokens).chunks(document.segments()):
        count += 1
        tokens += chunk.tokens
        largest = max(largest, chunk.tokens)
        if progress:
            progress.show(document.stats.characters, count, tokens)
        if show_chunks and json_output:
            listed.append(
                {
                    "index": chunk.index,
                    "tokens": chunk.tokens,
                    "characters": len(chunk.text),
                    "where": chunk.describe(),
                    "spans": [span.to_dict() for span in chunk.spans],
                }
            )
        elif show_chunks:  # printed as made, so a long pipe shows progress
            env.out(f"{chunk.index}\t{chunk.tokens}\t{chunk.describe()}")

    if progress:
        progress.clear()
    stats = document.stats
    report: dict[str, Any] = {
        "source": document.name,
        "format": document.format,
        "size_bytes": document.size_bytes,
        "files": stats.files,
        "formats": dict(stats.formats),
        "skipped": dict(stats.skipped),
        "pages": stats.pages,
        "empty_pages": list(stats.empty_pages),
        "chapters": stats.chapters,
        "lines": stats.lines,
        "characters": stats.characters,
        "tokens": tokens,
        "tokenizer": tokenizer.name,
        "chunk_tokens": chunk_tokens,
        "chunks": count,
        "largest_chunk": largest,
        "warnings": list(document.warnings),
    }
    if show_chunks and json_output:
        report["chunk_list"] = listed
    for warning in document.warnings:
        env.err(f"warning: {warning}")
    if json_output:
        env.out(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        if show_chunks:
            env.out("")
        for name, value in _table(report):
            env.out(f"{name:<11} {value}")


def _wants_progress(env: Any, *, listing: bool) -> bool:
    """A progress line on stderr only when someone watches it (a terminal, not told otherwise), and not over
    chunk lines printed to the same terminal."""
    if not env.stderr_isatty or (listing and env.stdout_isatty):
        return False
    return not env.environ.get("MEMREAD_NO_PROGRESS") and env.environ.get("TERM") != "dumb"


class _Progress:
    """One self-overwriting line on stderr ("read 12.3 M characters, 45 chunks, 220,000 tokens")."""

    def __init__(self, env: Any, interval: float = 0.25) -> None:
        import time

        self._env = env
        self._clock = time.monotonic
        self._interval = interval
        self._next = 0.0
        self._shown = False

    def show(self, characters: int, chunks: int, tokens: int) -> None:
        now = self._clock()
        if now < self._next:
            return
        self._next = now + self._interval
        self._env.stderr.write(
            f"\rread {characters / 1e6:,.1f} M characters, {chunks:,} chunks, {tokens:,} tokens\x1b[K"
        )
        self._env.stderr.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            self._env.stderr.write("\r\x1b[K")
            self._env.stderr.flush()


def _tokenizer(model: str | None) -> Any:
    """tiktoken (offline) by default; with ``--model``, that model's own tokenizer (vocabulary only)."""
    if model is None:
        from memread.tokens import default_tokenizer

        return default_tokenizer()
    from memread import models
    from memread.errors import BackendError

    path = models.resolve(model, pull=False)
    try:
        from memread.backends.llamacpp import LlamaTokenizer
    except ImportError as error:
        raise BackendError(
            f"cannot load the tokenizer of {model}: llama-cpp-python is not installed ({error})",
            hint="install memread with its default dependencies, or drop --model to count with tiktoken",
        ) from None
    return LlamaTokenizer(path)


def _table(report: dict[str, Any]) -> list[tuple[str, str]]:
    """The human-readable rows: only what this kind of document has."""
    rows = [("source", report["source"]), ("format", report["format"])]
    if report["size_bytes"] is not None:
        rows.append(("size", _size(report["size_bytes"])))
    if report["format"] == "directory" or report["files"] > 1:
        formats = ", ".join(f"{n} {name}" for name, n in sorted(report["formats"].items()))
        rows.append(("files", f"{report['files']:,}" + (f" ({formats})" if formats else "")))
    if report["skipped"]:
        skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(report["skipped"].items()))
        rows.append(("skipped", skipped))
    if report["pages"]:
        empty = report["empty_pages"]
        note = f" ({len(empty)} without text: {_numbers(empty)})" if empty else ""
        rows.append(("pages", f"{report['pages']:,}{note}"))
    if report["chapters"]:
        rows.append(("chapters", f"{report['chapters']:,}"))
    if report["lines"]:
        rows.append(("lines", f"{report['lines']:,}"))
    rows += [
        ("characters", f"{report['characters']:,}"),
        ("tokens", f"{report['tokens']:,} ({report['tokenizer']})"),
        (
            "chunks",
            f"{report['chunks']:,} of at most {report['chunk_tokens']:,} tokens (largest {report['largest_chunk']:,})",
        ),
    ]
    if report["warnings"]:
        rows.append(("warnings", f"{len(report['warnings'])} (on stderr)"))
    return rows


def _numbers(pages: list[int], limit: int = 12) -> str:
    shown = ", ".join(str(page) for page in pages[:limit])
    return shown + (f", … ({len(pages) - limit} more)" if len(pages) > limit else "")


def _size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{size:,} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{size:,} bytes"
