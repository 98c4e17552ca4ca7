"""The Typer application. Each command lives in its own ``cmd_*.py`` module; this file only assembles
them and turns :class:`~memread.errors.MemreadError`, and Click's own usage errors, into one line, a hint and an
exit status."""

from __future__ import annotations

import signal
import sys
from typing import Any

import typer
import typer.main
from typer.core import TyperGroup

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
    cmd_train,
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
app.add_typer(cmd_train.app, name="train")


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
        if type(error).__name__ == "NoArgsIsHelpError":  # `memread` alone: the help, as Click shows it
            error.show()
        else:
            report_error(_click_error(error, click_exceptions.UsageError, argv))
        sys.exit(int(ExitStatus.USAGE) if error.exit_code == 2 else error.exit_code)
    except typer.Exit as error:
        sys.exit(error.exit_code)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    sys.exit(result if isinstance(result, int) else 0)


def _click_error(error: Any, usage_error: type[Any], argv: list[str] | None) -> Any:
    """Click's own error (a bad option value, an unknown option or command, a missing argument) as memread's:
    Click's message on one line, and a hint that says where to look, or what Click suggests."""
    from memread.errors import MemreadError, UsageError

    message = " ".join(error.format_message().split())
    if not isinstance(error, usage_error):  # not about the command line (a file Click could not open)
        return MemreadError(message)
    # Click's parser leaves the context out of some errors (an option missing its value): the command is then
    # found from the arguments.
    ctx = error.ctx
    path, group = (ctx.command_path, isinstance(ctx.command, TyperGroup)) if ctx else _command_of(argv)
    where = f"{path} -h lists the {'commands' if group and not hasattr(error, 'option_name') else 'options'}"
    said, suggests, suggested = message.partition(" Did you mean ")  # Typer's guess at a mistyped command
    if suggests:
        return UsageError(said, hint=f"did you mean {suggested} {where}")
    guesses = getattr(error, "possibilities", None)  # Click's guesses at a mistyped option
    if guesses:
        return UsageError(" ".join(error.message.split()), hint=f"did you mean {' or '.join(sorted(guesses))}? {where}")
    about_arguments = (getattr(getattr(error, "param", None), "param_type_name", "") == "argument"
                       or message.startswith("Got unexpected extra argument"))
    if ctx is not None and about_arguments:
        return UsageError(message, hint="usage: " + " ".join(ctx.get_usage().split()).removeprefix("Usage: "))
    return UsageError(message, hint=where)


def _command_of(argv: list[str] | None) -> tuple[str, bool]:
    """The command path that ``argv`` runs ("memread traces show") and whether it is a group of commands."""
    command: Any = typer.main.get_command(app)
    path = ["memread"]
    for word in sys.argv[1:] if argv is None else argv:
        found = command.get_command(typer.Context(command), word) if isinstance(command, TyperGroup) else None
        if found is None:
            break
        command, path = found, [*path, word]
    return " ".join(path), isinstance(command, TyperGroup)


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
