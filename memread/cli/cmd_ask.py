"""``memread ask`` and ``memread resume``: read a document once per question and answer from the memory.

Module level imports only typer and the standard library (shell completion imports this on every TAB).
"""

from __future__ import annotations

from pathlib import Path

import typer

from memread import defaults
from memread.cli import options


def ask(
    ctx: typer.Context,
    source: str = typer.Argument(..., help="A file, a directory, or - for standard input."),
    question: str | None = typer.Argument(None, help="The question. Use -q instead to ask several."),
    questions: list[str] = typer.Option(
        [], "--question", "-q", help="A question; repeat to ask several in one pass over the text."
    ),
    strategy: str = typer.Option(
        defaults.STRATEGY, "--strategy", "-s", envvar="MEMREAD_STRATEGY", rich_help_panel=options.READING,
        help="Memory strategy: overwrite (MemAgent), gated (GRU-Mem), callback (ReMemR1).",
    ),
    model: options.Model = None,
    backend: options.Backend = None,
    base_url: options.BaseUrl = None,
    api_key: options.ApiKey = None,
    timeout: options.Timeout = None,
    concurrency: options.Concurrency = None,
    context_length: options.ContextLength = None,
    threads: options.Threads = None,
    tensor_parallel_size: options.TensorParallelSize = None,
    pipeline_parallel_size: options.PipelineParallelSize = None,
    distributed_executor_backend: options.DistributedExecutorBackend = None,
    system: options.System = None,
    chunk_tokens: options.ChunkTokens = defaults.CHUNK_TOKENS,
    memory_tokens: options.MemoryTokens = defaults.MEMORY_TOKENS,
    reply_tokens: options.ReplyTokens = None,
    final_tokens: options.FinalTokens = defaults.FINAL_TOKENS,
    temperature: options.Temperature = defaults.TEMPERATURE,
    top_p: options.TopP = defaults.TOP_P,
    seed: options.Seed = defaults.SEED,
    final_prompt: options.FinalPrompt = defaults.FINAL_PROMPT,
    exit_gate: options.ExitGate = True,
    stop_on_check_no: options.StopOnCheckNo = True,
    recall_from: options.RecallFrom = defaults.RECALL_FROM,
    recall_tokens: options.RecallTokens = defaults.RECALL_TOKENS,
    layout: options.Layout = defaults.LAYOUT,
    password: str | None = typer.Option(None, "--password", help="Password of an encrypted PDF."),
    json_output: options.Json = False,
    quiet: options.Quiet = False,
    progress: str = typer.Option(
        "auto", "--progress", rich_help_panel=options.OUTPUT,
        help="auto (live view on a terminal, plain lines otherwise), live, plain or none.",
    ),
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
    from memread.cli.runner import AskRequest, run_ask

    asked = ([question] if question else []) + list(questions)
    request = AskRequest(
        source=source,
        questions=asked,
        strategy=strategy,
        model=model,
        backend=backend,
        backend_options=options.backend_options(ctx.params),
        settings={"strategy": strategy, **options.loop_settings(ctx.params)},
        password=password,
        json_output=json_output,
        quiet=quiet,
        progress=progress,
        trace=trace,
        no_trace=no_trace,
        resume=resume,
    )
    run_ask(request)


def resume(
    run: str = typer.Argument(..., help="A trace file, a run id, or a unique prefix of one."),
    json_output: options.Json = False,
    quiet: options.Quiet = False,
    progress: str = typer.Option("auto", "--progress", help="auto, live, plain or none."),
    password: str | None = typer.Option(None, "--password", help="Password of an encrypted PDF."),
) -> None:
    """Continue an interrupted run from its last completed step (pipe the same input again for stdin runs)."""
    from memread.cli.runner import resume_run

    resume_run(run, json_output=json_output, quiet=quiet, progress=progress, password=password)

