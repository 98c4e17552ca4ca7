"""``memread inspect``: what memread sees in a document, without a model. (Filled in by the ingest work.)"""

from __future__ import annotations

import typer


def inspect(
    source: str = typer.Argument(..., help="A file, a directory, or - for standard input."),
) -> None:
    """Show format, pages, chapters or files, characters, tokens, chunks and warnings for a document."""
    raise NotImplementedError
