"""``memread bench``: run the papers' benchmarks (RULER-HotpotQA, NIAH, variable tracking, SQuAD) through the
reading loop and the baselines, and write results, tables and plots.

Module level imports only typer and the standard library (shell completion imports this on every TAB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from memread.cli import options

_RUN_HELP = "Sweep"


@options.shared_options
def bench(
    tasks: list[str] = typer.Argument(
        None, help="Tasks, comma-separated: docqa (real documents), hqa, hqa-early, squad, niah-single, "
        "niah-multikey, niah-multivalue, niah-multiquery, niah-single-early, vt.",
    ),
    lengths: list[str] = typer.Option(
        [], "--lengths", "-l", rich_help_panel=_RUN_HELP,
        help="Document lengths, comma-separated: documents for hqa (50,200), tokens otherwise (8K,32K).",
    ),
    samples: int = typer.Option(8, "--samples", "-n", min=1, rich_help_panel=_RUN_HELP, help="Samples per length."),
    questions: list[str] = typer.Option(
        [], "--questions", rich_help_panel=_RUN_HELP,
        help="docqa: which questions, comma-separated: all (default), design (the even-numbered), held-out (the "
        "odd-numbered), a document (octave-pdf, devref-epub, gcc-testlog, handbook-html, binutils-changelog), a "
        "kind (single, two-hop, aggregate, paraphrase, absent) or a question id.",
    ),
    methods: list[str] = typer.Option(
        [], "--methods", "--strategy", "-s", rich_help_panel=_RUN_HELP,
        help="Methods, comma-separated: any strategy (overwrite, gated, callback, a plugin's: the reading loop), "
        "full (whole document in one prompt), bm25 (BM25-RAG), closed-book (the question alone). "
        "Default: overwrite,full,bm25,closed-book.",
    ),
    out: Path | None = typer.Option(
        None, "--out", rich_help_panel=_RUN_HELP,
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
    compare: list[Path] = typer.Option(
        [], "--compare", rich_help_panel=_RUN_HELP,
        help="Another results folder to include in the tables and the paired differences (repeatable); its "
        "samples must be the same (same model and --data-seed). A method both folders hold is shown as "
        "METHOD@FOLDER.",
    ),
    baseline: str | None = typer.Option(
        None, "--baseline", rich_help_panel=_RUN_HELP,
        help="Paired differences of each method against this one only (e.g. bm25); default: every pair.",
    ),
    parallel: int = typer.Option(
        1, "--parallel", "-j", min=1, rich_help_panel=_RUN_HELP,
        help="Samples in flight at once, for a server that batches (--backend openai on vllm serve or "
        "llama-server -np N). Seconds per sample then include waiting for the others.",
    ),
    data_seed: int = typer.Option(42, "--data-seed", rich_help_panel=_RUN_HELP, help="Seed of the samples."),
    rag_passage_tokens: int = typer.Option(
        512, "--rag-passage-tokens", min=16, rich_help_panel=_RUN_HELP, help="bm25: tokens per passage."
    ),
    rag_k: int | None = typer.Option(
        None, "--rag-k", min=1, rich_help_panel=_RUN_HELP,
        help="bm25: passages in the prompt (default: as many as fill one --chunk-tokens).",
    ),
    shared: options.SharedOptions = options.SHARED_DEFAULTS,
    quiet: options.Quiet = False,
    json_output: options.Json = False,
) -> None:
    """Measure accuracy and speed of memread's strategies and three baselines on RULER-style benchmarks.

    Every finished sample is one line of OUT/results.jsonl; running the same command again skips them.
    """
    _run(tasks=list(tasks or []), lengths=lengths, samples=samples, questions=questions, methods=methods, out=out, smoke=smoke,
         report_only=report_only, compare=list(compare or []), baseline=baseline, parallel=parallel, data_seed=data_seed, rag_passage_tokens=rag_passage_tokens, rag_k=rag_k,
         model=shared.model, backend=shared.backend, backend_options=shared.backend_options(),
         loop=shared.loop_settings(),
         quiet=quiet, json_output=json_output)


def _plan(tasks: list[str], lengths: list[str], samples: int, methods: list[str], data_seed: int,
          rag_passage_tokens: int, rag_k: int | None, loop: dict[str, Any], questions: list[str] | None = None) -> Any:
    from memread.bench.methods import MethodSettings
    from memread.bench.run import BenchPlan, parse_list
    from memread.bench.tasks import parse_length
    from memread.errors import UsageError
    from memread.settings import Settings

    task_list = parse_list(tasks)
    if not task_list:
        raise UsageError("no benchmark task given", hint="e.g. memread bench hqa --lengths 50,200 (or --smoke)")
    length_list = [parse_length(text) for text in parse_list(lengths)]
    chosen: tuple[int, ...] = ()
    if "docqa" in task_list:
        from memread.bench import docqa
        from memread.bench.tasks import DOCQA_LENGTH

        chosen = docqa.select(questions)
        if not length_list and set(task_list) == {"docqa"}:
            length_list = [DOCQA_LENGTH]  # docqa's questions have no length
    elif questions:
        raise UsageError("--questions chooses docqa's questions", hint="add the task docqa, or drop --questions")
    if not length_list:
        raise UsageError("no --lengths given", hint="e.g. --lengths 50,200 for hqa, --lengths 8K,32K for niah-single")
    return BenchPlan(tasks=tuple(task_list), lengths=tuple(length_list), samples=samples,
                     methods=tuple(parse_list(methods) or ["overwrite", "full", "bm25", "closed-book"]),
                     settings=MethodSettings(Settings(**loop), rag_passage_tokens=rag_passage_tokens,
                                             rag_k=rag_k),
                     data_seed=data_seed, questions=chosen)


class _Reading:
    """How far the sample being read has got (a 400-document sample reads for half an hour): on a terminal a
    status line rewritten at each step; off one (a log), a line when a step ends a minute or more after the
    last line."""

    def __init__(self, env: Any, *, interval: float = 60.0, clock: Any = None) -> None:
        import time

        from memread.cli.progress import live_terminal

        self.env = env
        self.live = live_terminal(env)
        self.interval = interval
        self.clock = clock or time.monotonic
        self.key: str | None = None
        self.began = self.said = 0.0
        self.resumed: int | None = None
        self.shown = False

    def __call__(self, key: str, event: Any) -> None:
        import shutil

        from memread.cli.viewstate import duration
        from memread.events import RunStarted, StepFinished

        now = self.clock()
        if key != self.key:
            self.key, self.began, self.said, self.resumed = key, now, now, None
        if isinstance(event, RunStarted):
            self.resumed = event.resumed_from_step  # a sample continued from an earlier run: its steps so far
        if not isinstance(event, StepFinished):
            return
        text = f"{key}: {event.step + 1} step{'s' if event.step else ''} read · {duration(now - self.began)}"
        if self.resumed is not None:
            text += f" (continued at step {self.resumed})"
        if self.live:
            width = (self.env.columns or shutil.get_terminal_size().columns) - 1
            self.env.stderr.write("\r\x1b[K" + text[:width])
            self.env.stderr.flush()
            self.shown = True
        elif now - self.said >= self.interval:
            self.env.err(text)
            self.said = now

    def clear(self) -> None:
        """Erase the status line (before a sample's result line)."""
        if self.shown:
            self.env.stderr.write("\r\x1b[K")
            self.env.stderr.flush()
            self.shown = False


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
    resumed = record.get("resumed_at")
    continued = f", continued at step {', '.join(str(step) for step in resumed)}" if resumed else ""
    return (f"{record['key']}: {result}  ({record['seconds']:.1f} s, {record['prompt_tokens']:,} prompt + "
            f"{record['completion_tokens']:,} completion tokens{continued})")


def _run(*, tasks: list[str], lengths: list[str], samples: int, questions: list[str], methods: list[str], out: Path | None,
         smoke: bool, report_only: bool, compare: list[Path], baseline: str | None, parallel: int, data_seed: int, rag_passage_tokens: int, rag_k: int | None,
         model: str | None, backend: str | None, backend_options: dict[str, Any], loop: dict[str, Any],
         quiet: bool, json_output: bool) -> None:
    import json

    from memread import paths
    from memread.backends import backend_capabilities
    from memread.bench import run as bench_run
    from memread.bench.compare import combine
    from memread.bench.report import markdown, write_report
    from memread.bench.results import ResultsFolder
    from memread.cli.environment import current
    from memread.errors import ExitStatus, UsageError

    env = current()
    folder = out or (paths.data_dir() / "bench")
    if report_only:
        records = combine(folder, compare)  # UsageError: no results, or folders holding different samples
        _finish(env, folder, records, json_output, write_report, markdown, json, baseline)
        return
    if smoke:
        plan = bench_run.SMOKE
        model = model or bench_run.SMOKE_MODEL
        if backend_options.get("context_length") is None:
            backend_options = {**backend_options, "context_length": bench_run.SMOKE_CONTEXT}
    else:
        plan = _plan(tasks, lengths, samples, methods, data_seed, rag_passage_tokens, rag_k, loop, questions)
    if baseline is not None and not compare and baseline not in plan.methods:
        raise UsageError(f"--baseline {baseline}: no such method in this sweep",
                         hint=f"choose one of: {', '.join(plan.methods)}")
    if parallel > 1 and backend_options.get("concurrency") is None and backend_capabilities(backend).concurrent_calls:
        backend_options = {**backend_options, "concurrency": parallel}  # the client must let them all through
    engine = _create_backend(env, model, backend, backend_options, plan.settings.loop.seed)

    result = None  # `kill PID` ends a long sweep like Ctrl-C does (memread.cli.app turns SIGTERM into it)
    try:
        for warning in getattr(engine, "warnings", []):
            env.err(f"warning: {warning}")

        status = None if quiet else _Reading(env)

        def show(record: dict[str, Any]) -> None:
            if status:
                status.clear()
            if not quiet:
                env.err(_describe(record))

        def skipped(key: str) -> None:
            if not quiet:
                env.err(f"{key}: done already, skipped")

        try:
            result = bench_run.run_sweep(plan, engine, folder, parallel=parallel, on_result=show, on_skip=skipped,
                                         on_event=status)
        except KeyboardInterrupt:
            if status:
                status.clear()
            records = ResultsFolder(folder).records()
            if records:
                write_report(folder, records)
            env.err(f"interrupted: {len(records)} finished samples are saved in {folder}")
            reading = ResultsFolder(folder).partial_dir
            if reading.is_dir() and any(reading.iterdir()):
                env.err("the sample being read keeps its steps so far, and continues from them")
            env.err("")
            env.err("hint: run the same command again to continue where it stopped")
            raise typer.Exit(int(ExitStatus.INTERRUPTED)) from None
    finally:
        engine.close()
    if not quiet:
        env.err(f"{result.ran} samples run, {result.skipped} already done; results in {folder}")
    records = result.records
    if compare:
        records = combine(folder, compare)
    _finish(env, folder, records, json_output, write_report, markdown, json, baseline)


def _finish(env: Any, folder: Path, records: list[dict[str, Any]], json_output: bool, write_report: Any,
            markdown: Any, json: Any, baseline: str | None = None) -> None:
    written = write_report(folder, records, baseline=baseline)
    from memread.bench.results import ResultsFolder

    results = ResultsFolder(folder)
    if results.results.exists():
        written.append(results.write_scores())  # a folder made before scores.jsonl existed
    if json_output:
        env.out((folder / "summary.json").read_text(encoding="utf-8").rstrip())
    else:
        env.out((folder / "summary.md").read_text(encoding="utf-8").rstrip())
    env.err("wrote " + ", ".join(str(path) for path in written))


def _create_backend(env: Any, model: str | None, name: str | None, options: dict[str, Any], seed: int | None) -> Any:
    """The run's backend builder (memread.run.open_backend), with bench's own window policy: an engine that
    allocates its context gets the model's whole training context, so that "full" has its window."""
    from memread.backends import backend_capabilities
    from memread.cli.cmd_models import pull_progress
    from memread.run import open_backend
    from memread.settings import Settings

    if backend_capabilities(name).sizes_context and options.get("context_length") is None:
        options = {**options, "context_length": 0}  # 0: the model's training context
    with pull_progress(env) as progress:
        return open_backend(name, model=model, options=options, settings=Settings(seed=seed), progress=progress)
