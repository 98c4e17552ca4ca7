"""``memread bench``: run the papers' benchmarks (RULER-HotpotQA, NIAH, variable tracking, SQuAD) through the
reading loop and the baselines, and write results, tables and plots.

Module level imports only typer and the standard library (shell completion imports this on every TAB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from memread import defaults

_BACKEND_HELP = "Backend options"
_READ_HELP = "Reading"
_RUN_HELP = "Sweep"


def bench(
    tasks: list[str] = typer.Argument(
        None, help="Tasks, comma-separated: hqa, hqa-early, squad, niah-single, niah-multikey, niah-multivalue, "
        "niah-multiquery, niah-single-early, vt.",
    ),
    lengths: list[str] = typer.Option(
        [], "--lengths", "-l", rich_help_panel=_RUN_HELP,
        help="Document lengths, comma-separated: documents for hqa (50,200), tokens otherwise (8K,32K).",
    ),
    samples: int = typer.Option(8, "--samples", "-n", min=1, rich_help_panel=_RUN_HELP, help="Samples per length."),
    methods: list[str] = typer.Option(
        [], "--methods", "--strategy", "-s", rich_help_panel=_RUN_HELP,
        help="Methods, comma-separated: overwrite, gated, callback (the loop), full (whole document in one "
        "prompt), bm25 (BM25-RAG). Default: overwrite,full,bm25.",
    ),
    out: Path | None = typer.Option(
        None, "--out", "-o", rich_help_panel=_RUN_HELP,
        help="Results folder (results.jsonl, run.json, summary.md, accuracy-TASK.svg). Default: <data>/bench. "
        "Run the same command again to continue an interrupted sweep.",
    ),
    smoke: bool = typer.Option(
        False, "--smoke", rich_help_panel=_RUN_HELP,
        help="A preset for CI: niah-single at 300 and 1200 tokens, 1 sample, overwrite/full/bm25 on "
        "smollm2-135m with a 1024-token window (replaces the tasks, lengths, methods and reading options).",
    ),
    report_only: bool = typer.Option(
        False, "--report", rich_help_panel=_RUN_HELP, help="Only rewrite the tables and plots of --out."
    ),
    data_seed: int = typer.Option(42, "--data-seed", rich_help_panel=_RUN_HELP, help="Seed of the samples."),
    rag_passage_tokens: int = typer.Option(
        512, "--rag-passage-tokens", min=16, rich_help_panel=_RUN_HELP, help="bm25: tokens per passage."
    ),
    rag_k: int | None = typer.Option(
        None, "--rag-k", min=1, rich_help_panel=_RUN_HELP,
        help="bm25: passages in the prompt (default: as many as fill one --chunk-tokens).",
    ),
    model: str | None = typer.Option(
        None, "--model", "-m", envvar="MEMREAD_MODEL", rich_help_panel=_BACKEND_HELP,
        help="Registry name (see `memread models`) or GGUF path; for --backend openai/vllm the served model id.",
    ),
    backend: str | None = typer.Option(
        None, "--backend", "-b", envvar="MEMREAD_BACKEND", rich_help_panel=_BACKEND_HELP,
        help="llamacpp (default), openai or vllm.",
    ),
    base_url: str | None = typer.Option(None, "--base-url", rich_help_panel=_BACKEND_HELP,
                                        help="Server URL for --backend openai."),
    api_key: str | None = typer.Option(None, "--api-key", rich_help_panel=_BACKEND_HELP,
                                       help="API key for --backend openai."),
    context_length: int | None = typer.Option(
        None, "--context-length", "--n-ctx", min=0, rich_help_panel=_BACKEND_HELP,
        help="Context window in tokens; full context is N/A above it. llamacpp default: the model's training context.",
    ),
    threads: int | None = typer.Option(
        None, "--threads", min=1, envvar="MEMREAD_THREADS", rich_help_panel=_BACKEND_HELP,
        help="CPU threads for llama.cpp.",
    ),
    chunk_tokens: int = typer.Option(defaults.CHUNK_TOKENS, "--chunk-tokens", min=16, rich_help_panel=_READ_HELP),
    memory_tokens: int = typer.Option(defaults.MEMORY_TOKENS, "--memory-tokens", min=16, rich_help_panel=_READ_HELP),
    reply_tokens: int | None = typer.Option(None, "--reply-tokens", min=16, rich_help_panel=_READ_HELP),
    final_tokens: int = typer.Option(defaults.FINAL_TOKENS, "--final-tokens", min=16, rich_help_panel=_READ_HELP),
    temperature: float = typer.Option(defaults.TEMPERATURE, "--temperature", min=0.0, rich_help_panel=_READ_HELP),
    top_p: float = typer.Option(defaults.TOP_P, "--top-p", min=0.0, max=1.0, rich_help_panel=_READ_HELP),
    seed: int = typer.Option(defaults.SEED, "--seed", rich_help_panel=_READ_HELP, help="Sampling seed."),
    final_prompt: str = typer.Option(defaults.FINAL_PROMPT, "--final-prompt", rich_help_panel=_READ_HELP,
                                     help="boxed or therefore."),
    exit_gate: bool = typer.Option(True, "--exit-gate/--no-exit-gate", rich_help_panel=_READ_HELP,
                                   help="gated: stop reading at <next>end</next>."),
    quiet: bool = typer.Option(False, "--quiet", help="No line per sample on stderr."),
    json_output: bool = typer.Option(False, "--json", help="Print the summary as JSON instead of Markdown."),
) -> None:
    """Measure accuracy and speed of memread's strategies and two baselines on RULER-style benchmarks.

    Every finished sample is one line of OUT/results.jsonl; running the same command again skips them.
    """
    _run(tasks=list(tasks or []), lengths=lengths, samples=samples, methods=methods, out=out, smoke=smoke,
         report_only=report_only, data_seed=data_seed, rag_passage_tokens=rag_passage_tokens, rag_k=rag_k,
         model=model, backend=backend,
         backend_options={"base_url": base_url, "api_key": api_key, "context_length": context_length,
                          "n_threads": threads},
         loop={"chunk_tokens": chunk_tokens, "memory_tokens": memory_tokens, "reply_tokens": reply_tokens,
               "final_tokens": final_tokens, "temperature": temperature, "top_p": top_p, "seed": seed,
               "final_prompt": final_prompt, "exit_gate": exit_gate},
         quiet=quiet, json_output=json_output)


def _plan(tasks: list[str], lengths: list[str], samples: int, methods: list[str], data_seed: int,
          rag_passage_tokens: int, rag_k: int | None, loop: dict[str, Any]) -> Any:
    from memread.bench.methods import MethodSettings
    from memread.bench.run import BenchPlan, parse_list
    from memread.bench.tasks import parse_length
    from memread.errors import UsageError
    from memread.loop import LoopSettings

    task_list = parse_list(tasks)
    if not task_list:
        raise UsageError("no benchmark task given", hint="e.g. memread bench hqa --lengths 50,200 (or --smoke)")
    length_list = [parse_length(text) for text in parse_list(lengths)]
    if not length_list:
        raise UsageError("no --lengths given", hint="e.g. --lengths 50,200 for hqa, --lengths 8K,32K for niah-single")
    return BenchPlan(tasks=tuple(task_list), lengths=tuple(length_list), samples=samples,
                     methods=tuple(parse_list(methods) or ["overwrite", "full", "bm25"]),
                     settings=MethodSettings(LoopSettings(**loop), rag_passage_tokens=rag_passage_tokens,
                                             rag_k=rag_k),
                     data_seed=data_seed)


def _describe(record: dict[str, Any]) -> str:
    status = record["status"]
    if status == "n/a":
        result = "N/A (" + str(record.get("note")) + ")"
    elif status == "error":
        result = f"failed: {record.get('error')}"
    else:
        prediction = " ".join(str(record.get("prediction") or "").split())
        prediction = prediction if len(prediction) <= 60 else prediction[:57] + "..."
        result = f"score {record['score']:.2f}  answer {prediction!r}"
    return (f"{record['key']}: {result}  ({record['seconds']:.1f} s, {record['prompt_tokens']:,} prompt + "
            f"{record['completion_tokens']:,} completion tokens)")


def _run(*, tasks: list[str], lengths: list[str], samples: int, methods: list[str], out: Path | None,
         smoke: bool, report_only: bool, data_seed: int, rag_passage_tokens: int, rag_k: int | None,
         model: str | None, backend: str | None, backend_options: dict[str, Any], loop: dict[str, Any],
         quiet: bool, json_output: bool) -> None:
    import json
    import signal

    from memread import paths
    from memread.bench import run as bench_run
    from memread.bench.report import markdown, write_report
    from memread.bench.results import ResultsFolder
    from memread.cli.environment import current
    from memread.errors import ExitStatus, UsageError

    env = current()
    folder = out or (paths.data_dir() / "bench")
    if report_only:
        records = ResultsFolder(folder).records()
        if not records:
            raise UsageError(f"there are no results in {folder}", hint="run a sweep first, or pass its --out folder")
        _finish(env, folder, records, json_output, write_report, markdown, json)
        return
    if smoke:
        plan = bench_run.SMOKE
        model = model or bench_run.SMOKE_MODEL
        if backend_options.get("context_length") is None:
            backend_options = {**backend_options, "context_length": bench_run.SMOKE_CONTEXT}
    else:
        plan = _plan(tasks, lengths, samples, methods, data_seed, rag_passage_tokens, rag_k, loop)
    engine = _create_backend(env, model, backend, backend_options, plan.settings.loop.seed)

    def stop(_signum: int, _frame: Any) -> None:  # `kill PID` ends a long sweep like Ctrl-C does
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    result = None
    try:
        for warning in getattr(engine, "warnings", []):
            env.err(f"warning: {warning}")

        def show(record: dict[str, Any]) -> None:
            if not quiet:
                env.err(_describe(record))

        def skipped(key: str) -> None:
            if not quiet:
                env.err(f"{key}: done already, skipped")

        try:
            result = bench_run.run_sweep(plan, engine, folder, on_result=show, on_skip=skipped)
        except KeyboardInterrupt:
            records = ResultsFolder(folder).records()
            if records:
                write_report(folder, records)
            env.err(f"interrupted: {len(records)} finished samples are saved in {folder}")
            env.err("")
            env.err("hint: run the same command again to continue where it stopped")
            raise typer.Exit(int(ExitStatus.INTERRUPTED)) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
        engine.close()
    if not quiet:
        env.err(f"{result.ran} samples run, {result.skipped} already done; results in {folder}")
    _finish(env, folder, result.records, json_output, write_report, markdown, json)


def _finish(env: Any, folder: Path, records: list[dict[str, Any]], json_output: bool, write_report: Any,
            markdown: Any, json: Any) -> None:
    written = write_report(folder, records)
    if json_output:
        env.out((folder / "summary.json").read_text(encoding="utf-8").rstrip())
    else:
        env.out(markdown(records))
    env.err("wrote " + ", ".join(str(path) for path in written))


def _create_backend(env: Any, model: str | None, name: str | None, options: dict[str, Any], seed: int | None) -> Any:
    from memread.backends import create_backend, default_backend

    name = name or default_backend()
    options = {key: value for key, value in options.items() if value is not None}
    if name != "llamacpp":
        return create_backend(name, model=model, **options)
    from memread.cli.cmd_models import pull_progress

    if seed is not None:
        options.setdefault("seed", seed)
    options.setdefault("context_length", 0)  # 0: the model's training context, so full context gets its window
    with pull_progress(env) as progress:
        return create_backend(name, model=model, progress=progress, **options)
