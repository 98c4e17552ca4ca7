"""``memread traces``: list saved runs, show one, remove some. Traces hold the user's documents (mode 0600)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from memread.cli.trim import cut, cut_left

app = typer.Typer(help="List, show and remove saved runs (traces).", no_args_is_help=False)


def _local(created: str) -> str:
    """The creation time (stored in UTC) in the user's time zone."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(created).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return created[:16]


@app.callback(invoke_without_command=True)
def traces(
    ctx: typer.Context,
    json_output: bool = typer.Option(False, "--json", help="Print a JSON array instead of a table."),
) -> None:
    """List saved runs, newest first: date, status, strategy, model, document, question, answer."""
    if ctx.invoked_subcommand is not None:
        return
    from memread.cli.environment import current
    from memread.traces.index import list_runs

    env = current()
    runs = list_runs()
    if json_output:
        env.out(json.dumps([run.to_dict() for run in runs], indent=2, ensure_ascii=False))
        return
    if not runs:
        env.err("no saved runs yet (`memread ask` saves one per run)")
        return
    rows = [("RUN", "DATE", "STATUS", "STRATEGY", "MODEL", "DOCUMENT", "QUESTION", "ANSWER")]
    for run in runs:
        question = run.questions[0] if run.questions else ""
        if len(run.questions) > 1:
            question += f" (+{len(run.questions) - 1})"
        rows.append((run.run_id, _local(run.created), run.status, run.strategy,
                     cut(Path(run.model).name, 24), cut_left(run.document, 24), cut(question, 40),
                     cut(run.answers[0] if run.answers else None, 30)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        env.out("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


@app.command("show")
def show(
    run: str = typer.Argument(..., help="A run id, a unique prefix of one, or a trace path."),
    json_output: bool = typer.Option(False, "--json", help="Print the run's result object (as ask --json)."),
) -> None:
    """Show a run: what was asked, each step (where, gates, memory size), the answers and their sources."""
    from memread.cli.environment import current
    from memread.report import RunReport
    from memread.traces.index import resolve_run
    from memread.traces.reader import read_trace

    env = current()
    trace = read_trace(resolve_run(run))
    result = RunReport.from_trace(trace).result(trace_path=str(trace.path))
    result["status"] = trace.status() if trace.status() != "ok" else result["status"]
    if json_output:
        env.out(json.dumps(result, indent=2, ensure_ascii=False))
        return
    for line in _summary(trace, result):
        env.out(line)


def _summary(trace: Any, result: dict[str, Any]) -> list[str]:
    from memread.events import step_summary

    header = trace.header
    lines = [
        f"run       {trace.run_id}  ({trace.status()})",
        f"trace     {trace.path}",
        f"created   {header.get('created', '?')}",
        f"document  {result['document']}",
        f"model     {result['model']} ({result['backend']})",
        f"strategy  {result['strategy']}  " + " ".join(f"{k}={v}" for k, v in sorted(result["settings"].items())),
    ]
    for lane in result["lanes"]:
        lines.append(f"question  {lane['question']}")
    lines.append("")
    lines.append("step  lane  where                              what it did                     memory  seconds")
    for step in trace.steps():
        decision = step_summary(step)
        if step.truncated:
            decision += " (cut)"
        lines.append(f"{step.step + 1:>4}  {step.lane + 1:>4}  {cut_left(step.chunk.describe(), 33):<33}  "
                     f"{cut(decision, 30):<30}  {len(step.memory):>5}c  {step.seconds:>7.1f}")
    lines.append("")
    for lane in result["lanes"]:
        label = f" {lane['lane'] + 1}" if len(result["lanes"]) > 1 else ""
        answer = cut(lane["answer"], 300) if lane["answer"] is not None else "(not answered)"
        lines.append(f"answer{label}:  {answer}")
        if lane["citations"]:
            lines.append("sources:  " + "; ".join(dict.fromkeys(c["where"] for c in lane["citations"])))
    stats = result["stats"]
    lines.append(f"stats:    {stats['chunks_read']} chunks, {stats['prompt_tokens']:,} prompt + "
                 f"{stats['completion_tokens']:,} generated tokens, wall {stats['wall_seconds']} s")
    if trace.torn_lines:
        lines.append(f"note:     {trace.torn_lines} unreadable line(s) skipped (a run cut short mid-write)")
    return lines


@app.command("rm")
def rm(
    runs: Annotated[list[str] | None,
                    typer.Argument(help="Run ids, unique prefixes or trace paths.")] = None,
    older_than: str = typer.Option(None, "--older-than", help="Also remove runs last written before this "
                                   "long ago: 30m, 12h, 7d, 2w."),
) -> None:
    """Remove saved runs. Runs still being written are kept."""
    from memread.cli.environment import current
    from memread.errors import UsageError
    from memread.traces.index import older_than as find_older
    from memread.traces.index import parse_age, remove, resolve_run
    from memread.traces.reader import read_trace

    env = current()
    if not runs and older_than is None:
        raise UsageError("say which runs to remove", hint="memread traces rm RUN… or --older-than 30d")
    targets = [resolve_run(ref) for ref in runs or []]
    if older_than is not None:
        targets += find_older(parse_age(older_than))
    chosen: dict[Path, None] = {}
    for path in targets:
        if read_trace(path).status() == "running":
            env.err(f"kept {path.name}: the run is still being written")
        else:
            chosen[path] = None
    for path in remove(chosen):
        env.err(f"removed {path}")
