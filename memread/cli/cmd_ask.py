"""``memread ask`` and ``memread resume``: read a document once per question and answer from the memory.

Module level imports only typer and the standard library (shell completion imports this on every TAB).
"""

from __future__ import annotations

from pathlib import Path

import typer

from memread import settings as defaults
from memread.cli import options


@options.shared_options
def ask(
    source: str = typer.Argument(..., help="A file, a directory, or - for standard input."),
    question: str | None = typer.Argument(None, help="The question. Use -q instead to ask several."),
    questions: list[str] = typer.Option(
        [], "--question", "-q", help="A question; repeat to ask several in one pass over the text."
    ),
    strategy: str | None = typer.Option(
        None, "--strategy", "-s", envvar="MEMREAD_STRATEGY", rich_help_panel=options.READING, show_default=False,
        help="Memory strategy: overwrite (MemAgent), gated (GRU-Mem), callback (ReMemR1), evidence (memread's, "
        "for small untrained models), or a plugin's (`memread strategies` lists them). Default: the one the "
        f"model was trained for, else {defaults.STRATEGY}.",
    ),
    whole: bool = typer.Option(
        False, "--all", rich_help_panel=options.READING,
        help="Answer from the whole document (\"how many …\", \"list every …\"): evidence collects and counts "
        "every matching line, gated reads without its exit gate; overwrite and callback read it all anyway.",
    ),
    shared: options.SharedOptions = options.SHARED_DEFAULTS,
    password: str | None = typer.Option(None, "--password", help="Password of an encrypted PDF."),
    json_output: options.Json = False,
    quiet: options.Quiet = False,
    progress: options.Progress = "auto",
    trace: Path | None = typer.Option(
        None, "--trace", rich_help_panel=options.OUTPUT, help="Write the trace here (default: the data dir)."
    ),
    no_trace: bool = typer.Option(False, "--no-trace", rich_help_panel=options.OUTPUT, help="Write no trace."),
    resume: bool = typer.Option(
        False, "--resume", rich_help_panel=options.OUTPUT,
        help="Continue the interrupted run of --trace PATH (or the latest unfinished run of these questions).",
    ),
) -> None:
    """Read SOURCE chunk by chunk and answer QUESTION from the memory the model keeps."""
    from memread.cli.runner import Output, run_ask
    from memread.run import ReadRequest
    from memread.settings import Settings

    asked = ([question] if question else []) + list(questions)
    trained_as = trained_for(shared.model)
    chosen = strategy or trained_as or defaults.STRATEGY
    loop = shared.loop_settings()
    if shared.layout is None:  # several questions share each chunk's prefill, unless the model was trained otherwise
        loop["layout"] = defaults.default_layout(len(asked), trained_as is not None)
    if whole:  # the strategy's whole-document options, under any -o the user gave
        loop["options"] = {**whole_document_options(chosen), **loop["options"]}
    request = ReadRequest(
        source=source,
        questions=asked,
        settings=Settings(strategy=chosen, **loop),
        model=shared.model,
        backend=shared.backend,
        backend_options=shared.backend_options(),
        password=password,
        trace=trace,
        write_trace=not no_trace,
        resume=resume,
    )
    run_ask(request, Output(json=json_output, quiet=quiet, progress=progress))


def trained_for(model: str | None) -> str | None:
    """The strategy ``model`` was trained for (:mod:`memread.models.trained`), else None."""
    from memread.models.trained import trained_strategy

    trained = trained_strategy(model)
    return trained[0] if trained else None


def whole_document_options(strategy: str) -> dict[str, object]:
    """What ``--all`` sets for ``strategy`` (UsageError for an unknown strategy, as the read would say)."""
    from memread.strategies import strategy_class

    return dict(strategy_class(strategy).whole_document)


def resume(
    run: str = typer.Argument(..., help="A trace file, a run id, or a unique prefix of one."),
    json_output: options.Json = False,
    quiet: options.Quiet = False,
    progress: options.Progress = "auto",
    password: str | None = typer.Option(None, "--password", help="Password of an encrypted PDF."),
) -> None:
    """Continue an interrupted run from its last completed step (pipe the same input again for stdin runs)."""
    from memread.cli.runner import Output, resume_run

    resume_run(run, output=Output(json=json_output, quiet=quiet, progress=progress), password=password)

