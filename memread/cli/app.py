"""The Typer application. Each command lives in its own ``cmd_*.py`` module; this file only assembles
them and turns :class:`~memread.errors.MemreadError` into one line, a hint and an exit status."""

from __future__ import annotations

import signal
import sys
from typing import Any

import typer

from memread.cli import (
    cmd_ask,
    cmd_bench,
    cmd_completions,
    cmd_inspect,
    cmd_models,
    cmd_paths,
    cmd_plugins,
    cmd_replay,
    cmd_strategies,
    cmd_traces,
)
from memread.cli.plugin_group import MemreadGroup
from memread.version import __version__

app = typer.Typer(
    name="memread",
    help="Answer questions about documents far larger than a model's context window, locally.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=MemreadGroup,  # adds the commands of plugins (entry-point group memread.commands.v1), lazily
)


def _version(value: bool) -> None:
    if value:
        print(f"memread {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", "-V", help="Show the version and exit.", callback=_version, is_eager=True
    ),
) -> None:
    """memread reads a document chunk by chunk, keeps a bounded memory, and answers from it."""


app.command("ask")(cmd_ask.ask)
app.command("resume")(cmd_ask.resume)
app.command("inspect")(cmd_inspect.inspect)
app.command("paths")(cmd_paths.paths)
app.command("replay")(cmd_replay.replay)
app.add_typer(cmd_traces.app, name="traces")
app.command("completions")(cmd_completions.completions)
app.add_typer(cmd_models.app, name="models")
app.command("bench")(cmd_bench.bench)
app.command("plugins")(cmd_plugins.plugins_command)
app.command("strategies")(cmd_strategies.strategies_command)


def report_error(error: Any) -> None:
    """Print a MemreadError as ``error: …`` + blank line + ``hint: …`` on stderr."""
    from memread.cli.environment import current

    env = current()
    env.err(f"error: {error.message}")
    if error.hint:
        env.err("")
        env.err(f"hint: {error.hint}")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: runs the app and maps every failure to one line, a hint and an exit status."""
    from memread.errors import ExitStatus, MemreadError

    # standalone_mode=False so that Ctrl-C (which Click turns into Abort, exit 1) and our own errors reach
    # this function and get the documented statuses.
    try:  # Typer >= 0.26 vendors Click as typer._click
        from typer._click import exceptions as click_exceptions
    except ImportError:  # pragma: no cover - older Typer with Click as a dependency
        from click import exceptions as click_exceptions  # type: ignore[no-redef]

    from memread import plugins
    from memread.cli.environment import current

    plugins.set_warning_handler(lambda message: current().err(f"warning: {message}"))
    previous = _stop_on_sigterm()
    try:
        result = app(args=argv, prog_name="memread", standalone_mode=False)
    except MemreadError as error:
        report_error(error)
        sys.exit(int(error.exit_status))
    except (KeyboardInterrupt, typer.Abort):
        from memread.cli.environment import current

        current().err("interrupted")
        sys.exit(int(ExitStatus.INTERRUPTED))
    except click_exceptions.ClickException as error:
        error.show()
        sys.exit(int(ExitStatus.USAGE) if error.exit_code == 2 else error.exit_code)
    except typer.Exit as error:
        sys.exit(error.exit_code)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    sys.exit(result if isinstance(result, int) else 0)


def _stop_on_sigterm() -> Any:
    """``kill PID`` (SIGTERM: also `timeout`, `docker stop`, systemd) stops a run like Ctrl-C: the trace records
    the interruption and the resume hint is printed. This matters for background jobs, which start with
    SIGINT ignored, so that SIGTERM is the only polite way to stop them. Returns the previous handler, or None
    when SIGTERM was not left at its default (an embedding application's choice stands)."""

    def stop(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return None
        return signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread
        return None
