"""``memread ask`` and ``memread resume``: read a document once per question and answer from the memory.

Module level imports only typer and the standard library (shell completion imports this on every TAB).
"""

from __future__ import annotations

from pathlib import Path

import typer

from memread import defaults

_BACKEND_HELP = "Backend options"
_READ_HELP = "Reading"
_OUTPUT_HELP = "Output and traces"


def ask(
    source: str = typer.Argument(..., help="A file, a directory, or - for standard input."),
    question: str | None = typer.Argument(None, help="The question. Use -q instead to ask several."),
    questions: list[str] = typer.Option(
        [], "--question", "-q", help="A question; repeat to ask several in one pass over the text."
    ),
    strategy: str = typer.Option(
        defaults.STRATEGY, "--strategy", "-s", envvar="MEMREAD_STRATEGY", rich_help_panel=_READ_HELP,
        help="Memory strategy: overwrite (MemAgent), gated (GRU-Mem), callback (ReMemR1).",
    ),
    model: str | None = typer.Option(
        None, "--model", "-m", envvar="MEMREAD_MODEL", rich_help_panel=_BACKEND_HELP,
        help="Registry name (see `memread models`) or GGUF path; for --backend openai/vllm the served model id.",
    ),
    backend: str | None = typer.Option(
        None, "--backend", "-b", envvar="MEMREAD_BACKEND", rich_help_panel=_BACKEND_HELP,
        help="llamacpp (default, in-process GGUF), openai (any OpenAI-compatible server), vllm (in-process, GPU).",
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", rich_help_panel=_BACKEND_HELP,
        help="Server URL for --backend openai (default: $MEMREAD_BASE_URL, then $URL).",
    ),
    api_key: str | None = typer.Option(
        None, "--api-key", rich_help_panel=_BACKEND_HELP,
        help="API key for --backend openai (default: $MEMREAD_API_KEY, then $API_KEY).",
    ),
    timeout: float | None = typer.Option(
        None, "--timeout", rich_help_panel=_BACKEND_HELP, help="Seconds to wait for one reply (--backend openai)."
    ),
    concurrency: int | None = typer.Option(
        None, "--concurrency", min=1, rich_help_panel=_BACKEND_HELP,
        help="Requests in flight at once (--backend openai).",
    ),
    context_length: int | None = typer.Option(
        None, "--context-length", "--n-ctx", min=0, rich_help_panel=_BACKEND_HELP,
        help="Model context window in tokens (llamacpp: allocated; openai/vllm: max model length).",
    ),
    threads: int | None = typer.Option(
        None, "--threads", min=1, rich_help_panel=_BACKEND_HELP,
        # No envvar here: MEMREAD_THREADS is read by the llama.cpp backend itself, so setting it does not
        # turn into an option the openai/vllm backends must refuse.
        help="CPU threads for llama.cpp (default: $MEMREAD_THREADS, else the physical cores).",
    ),
    tensor_parallel_size: int | None = typer.Option(
        None, "--tensor-parallel-size", min=1, rich_help_panel=_BACKEND_HELP, help="GPUs per model (--backend vllm)."
    ),
    pipeline_parallel_size: int | None = typer.Option(
        None, "--pipeline-parallel-size", min=1, rich_help_panel=_BACKEND_HELP, help="Pipeline stages (--backend vllm)."
    ),
    distributed_executor_backend: str | None = typer.Option(
        None, "--distributed-executor-backend", rich_help_panel=_BACKEND_HELP, help="mp or ray (--backend vllm)."
    ),
    system: str | None = typer.Option(
        None, "--system", rich_help_panel=_BACKEND_HELP,
        help="A system message (default: none, like the papers; the chat template's default applies).",
    ),
    chunk_tokens: int = typer.Option(
        defaults.CHUNK_TOKENS, "--chunk-tokens", min=16, rich_help_panel=_READ_HELP, help="Tokens of document per step."
    ),
    memory_tokens: int = typer.Option(
        defaults.MEMORY_TOKENS, "--memory-tokens", min=16, rich_help_panel=_READ_HELP,
        help="Memory cap: the generation limit of each memory update.",
    ),
    reply_tokens: int | None = typer.Option(
        None, "--reply-tokens", min=16, rich_help_panel=_READ_HELP,
        help="gated/callback: generation limit of a step (thinking + tags + memory); default --memory-tokens. "
        "The papers allowed 2048.",
    ),
    final_tokens: int = typer.Option(
        defaults.FINAL_TOKENS, "--final-tokens", min=16, rich_help_panel=_READ_HELP,
        help="Generation limit of the final answer.",
    ),
    temperature: float = typer.Option(
        defaults.TEMPERATURE, "--temperature", min=0.0, rich_help_panel=_READ_HELP, help="Sampling temperature."
    ),
    top_p: float = typer.Option(defaults.TOP_P, "--top-p", min=0.0, max=1.0, rich_help_panel=_READ_HELP),
    seed: int = typer.Option(defaults.SEED, "--seed", rich_help_panel=_READ_HELP, help="Same seed, same run."),
    final_prompt: str = typer.Option(
        defaults.FINAL_PROMPT, "--final-prompt", rich_help_panel=_READ_HELP,
        help="boxed (\\boxed{} answer, as trained) or therefore (\"Therefore, the answer is\", MemAgent's eval).",
    ),
    exit_gate: bool = typer.Option(
        True, "--exit-gate/--no-exit-gate", rich_help_panel=_READ_HELP,
        help="gated: stop reading when the model says <next>end</next>. Turn off for 'list all X' questions.",
    ),
    stop_on_check_no: bool = typer.Option(
        True, "--stop-on-check-no/--full-replies", rich_help_panel=_READ_HELP,
        help="gated: stop generating at <check>no</check> (the rest would be discarded).",
    ),
    recall_from: str = typer.Option(
        defaults.RECALL_FROM, "--recall-from", rich_help_panel=_READ_HELP,
        help="callback: search earlier memories, or also the text already read (chunks).",
    ),
    recall_tokens: int = typer.Option(
        defaults.RECALL_TOKENS, "--recall-tokens", min=16, rich_help_panel=_READ_HELP,
        help="callback with --recall-from chunks: size of a recalled passage.",
    ),
    layout: str = typer.Option(
        defaults.LAYOUT, "--layout", rich_help_panel=_READ_HELP,
        help="question-first (the papers') or chunk-first (shares the chunk's prefill across questions).",
    ),
    password: str | None = typer.Option(None, "--password", help="Password of an encrypted PDF."),
    json_output: bool = typer.Option(
        False, "--json", rich_help_panel=_OUTPUT_HELP, help="Print one JSON object (answer, citations, stats)."
    ),
    quiet: bool = typer.Option(False, "--quiet", rich_help_panel=_OUTPUT_HELP, help="No progress, warnings only."),
    progress: str = typer.Option(
        "auto", "--progress", rich_help_panel=_OUTPUT_HELP,
        help="auto (live view on a terminal, plain lines otherwise), live, plain or none.",
    ),
    trace: Path | None = typer.Option(
        None, "--trace", rich_help_panel=_OUTPUT_HELP, help="Write the trace here (default: the data dir)."
    ),
    no_trace: bool = typer.Option(False, "--no-trace", rich_help_panel=_OUTPUT_HELP, help="Write no trace."),
    resume: bool = typer.Option(
        False, "--resume", rich_help_panel=_OUTPUT_HELP,
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
        backend_options={
            "base_url": base_url,
            "api_key": api_key,
            "timeout": timeout,
            "concurrency": concurrency,
            "context_length": context_length,
            "n_threads": threads,
            "tensor_parallel_size": tensor_parallel_size,
            "pipeline_parallel_size": pipeline_parallel_size,
            "distributed_executor_backend": distributed_executor_backend,
        },
        settings={
            "strategy": strategy,
            "chunk_tokens": chunk_tokens,
            "memory_tokens": memory_tokens,
            "final_tokens": final_tokens,
            "reply_tokens": reply_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "seed": seed,
            "final_prompt": final_prompt,
            "exit_gate": exit_gate,
            "stop_on_check_no": stop_on_check_no,
            "recall_from": recall_from,
            "recall_tokens": recall_tokens,
            "layout": layout,
            "system": system,
        },
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
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (answer, citations, stats)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress, warnings only."),
    progress: str = typer.Option("auto", "--progress", help="auto, live, plain or none."),
    password: str | None = typer.Option(None, "--password", help="Password of an encrypted PDF."),
) -> None:
    """Continue an interrupted run from its last completed step (pipe the same input again for stdin runs)."""
    from memread.cli.runner import resume_run

    resume_run(run, json_output=json_output, quiet=quiet, progress=progress, password=password)

