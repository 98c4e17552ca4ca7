"""``memread train``: the papers' RL recipes for the memory policy, on verl (docs/training.md).

``data`` builds verl-ready rows (benchmark builders or your own JSONL), ``check`` runs the CPU check of the whole
plumbing on SmolLM2, ``run`` starts verl with a preset (or prints it as a script, or only checks it), ``export``
merges a checkpoint into a Hugging Face folder for ``memread ask --backend vllm``.

Exit statuses are memread's: 0 done, 1 a check or the training failed, 2 usage (a bad option, the train extra missing),
3 the input cannot be read (a JSONL record, a document), 4 a model or backend failed. Module level imports only typer
and the standard library (shell completion imports this on every TAB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

app = typer.Typer(
    name="train",
    help="Train a memory policy the papers' way (MemAgent, ReMemR1, GRU-Mem) on verl: data, check, run, export.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

INSTALL_HINT = ("pip install torch==2.13.0 (the CPU build here; see docs/training.md elsewhere), then "
                "pip install 'memread[train]'")
_PRESETS = "memagent (MemAgent), rememr1 (ReMemR1), grumem (GRU-Mem)"


def _need_extra(what: str) -> Any:
    """memread.train.verl_adapter, or UsageError with the install hint."""
    from memread.errors import UsageError

    try:
        from memread.train import verl_adapter
    except ImportError as error:
        raise UsageError(f"{what} needs the train extra: {error}", hint=INSTALL_HINT) from None
    return verl_adapter


@app.command("data")
def data(
    tasks: list[str] = typer.Argument(None, help="Benchmark tasks: hqa, hqa-early, squad, niah-single, niah-multikey, "
                                      "niah-multivalue, niah-multiquery, niah-single-early, vt (comma-separated)."),
    out: Path = typer.Option(..., "--out", "-o", help="Where to write the rows: .parquet (needs the train extra) "
                             "or .jsonl (verl reads both)."),
    jsonl: Path | None = typer.Option(None, "--jsonl", help="Your own questions: a JSONL of {question, answers, "
                                      "context | document, [evidence], [metric]} (docs/training.md)."),
    lengths: list[str] = typer.Option([], "--lengths", "-l", help="Lengths, comma-separated: documents for hqa "
                                      "(200 as MemAgent trained), tokens otherwise (8K,32K)."),
    samples: int = typer.Option(64, "--samples", "-n", min=1, help="Rows per length."),
    start: int = typer.Option(1000, "--start", min=0, help="First question of the benchmark's order: memread bench "
                              "asks the ones before 1000, so the default keeps evaluation questions out."),
    data_seed: int = typer.Option(42, "--data-seed", help="Seed of the benchmark's question order (as memread bench)."),
    tokenizer: str = typer.Option("tiktoken", "--tokenizer", help="What token lengths are counted with: tiktoken, "
                                  "or a registry model or GGUF file (the model you will train, e.g. its GGUF)."),
    filter_closed_book: bool = typer.Option(False, "--filter-closed-book", help="Drop questions a model answers "
                                            "without the document (MemAgent's filter, best of --filter-samples)."),
    filter_model: str | None = typer.Option(None, "--filter-model", help="The model that filter asks."),
    filter_backend: str | None = typer.Option(None, "--filter-backend", help="Its backend (default llamacpp)."),
    filter_base_url: str | None = typer.Option(None, "--filter-base-url", help="Its server, with --filter-backend "
                                               "openai."),
    filter_samples: int = typer.Option(2, "--filter-samples", min=1, help="Tries per question for that filter."),
) -> None:
    """Build verl-ready training rows from memread's benchmark builders or from your own JSONL.

    Prints the file written on stdout; counts and dropped questions on stderr.
    """
    from memread.cli.environment import current
    from memread.errors import UsageError
    from memread.train import data as train_data

    env = current()
    names = [name.strip() for text in tasks or [] for name in text.split(",") if name.strip()]
    if bool(names) == bool(jsonl):
        raise UsageError("give benchmark tasks or --jsonl (one of the two)",
                         hint="e.g. memread train data hqa -l 200 -o train.parquet, or --jsonl mine.jsonl -o train.jsonl")
    rows: Any
    if jsonl is not None:
        rows = train_data.jsonl_rows(jsonl)
    else:
        from memread.bench.tasks import get_task, parse_length

        if not lengths:
            raise UsageError("no --lengths given", hint="e.g. --lengths 200 for hqa (documents), 8K for niah (tokens)")
        length_list = [parse_length(part) for text in lengths for part in text.split(",") if part.strip()]
        counter = train_data.resolve_tokenizer(tokenizer)
        rows = (item for name in names for item in train_data.bench_rows(
            get_task(name).name, length_list, samples, tokenizer=counter, seed=data_seed, start=start))
    dropped: list[str] = []
    backend = None
    if filter_closed_book:
        from memread.run import open_backend

        backend = open_backend(filter_backend, model=filter_model,
                               options={"base_url": filter_base_url} if filter_base_url else {})
        rows = train_data.closed_book_filter(rows, backend, samples=filter_samples,
                                             on_drop=lambda item: dropped.append(item["prompt"][-1]["content"]))
    try:
        count = train_data.write_rows(rows, out)
    finally:
        if backend is not None:
            backend.close()
    env.err(f"{count} row(s) written to {out}" + (f"; {len(dropped)} dropped (answered without the document)"
                                                  if filter_closed_book else ""))
    env.out(str(out))


@app.command("check")
def check(
    steps: int = typer.Option(1, "--steps", min=1, max=50, help="Optimizer steps of the tiny CPU run (each: "
                              "rollouts, rewards, advantages, one update)."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Run the CPU check: SmolLM2-135M (from memread's GGUF, no model hub) through memread's verl agent loop,
    rewards and advantages, then optimizer steps with verl's policy loss. A plumbing check, not training.

    Each stage is printed with its time on stderr; exit 1 if one fails.
    """
    import json

    from memread.cli.environment import current

    _need_extra("memread train check")
    from memread.train import check as cpu_check

    env = current()
    report = cpu_check.run_check(steps=steps, say=env.err)
    if json_output:
        env.out(json.dumps(report.to_dict(), indent=2))
    else:
        env.out(report.summary())
    if not report.ok:
        raise typer.Exit(1)


@app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(
    ctx: typer.Context,
    preset: str = typer.Option(..., "--preset", "-p", help=f"The recipe: {_PRESETS}."),
    model: str = typer.Option(..., "--model", "-m", help="The policy to train: a Hugging Face model folder or name "
                              "(e.g. Qwen/Qwen2.5-7B-Instruct), as verl loads it."),
    train_files: str = typer.Option(..., "--train-files", help="Rows from `memread train data` (parquet or jsonl)."),
    val_files: str | None = typer.Option(None, "--val-files", help="Validation rows (default: the training rows)."),
    gpus: int = typer.Option(8, "--gpus", min=1, help="GPUs per node (trainer.n_gpus_per_node)."),
    nodes: int = typer.Option(1, "--nodes", min=1, help="Nodes of the Ray cluster (trainer.nnodes)."),
    rollout: str = typer.Option("vllm", "--rollout", help="verl's rollout engine: vllm or sglang."),
    tensor_parallel: int = typer.Option(1, "--tensor-parallel", min=1, help="Rollout tensor parallelism."),
    clip_high: float | None = typer.Option(None, "--clip-high", help="PPO clip-higher ε_high (MemAgent eq. 5; the "
                                           "released scripts used 0.2, DAPO 0.28)."),
    alpha: float | None = typer.Option(None, "--alpha", min=0.0, max=1.0, help="Weight of the trajectory advantage "
                                       "(default the preset's: 1, 0.8, 0.9)."),
    experiment: str | None = typer.Option(None, "--experiment", help="trainer.experiment_name (default: the preset)."),
    print_script: bool = typer.Option(False, "--print", help="Print the run as a shell script and exit."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Compose verl's config with the overrides, check it, print "
                                 "the main values and exit (catches misspelled overrides; no GPU needed)."),
) -> None:
    """Train with a preset on verl: `python -m memread.train.run` with the preset's overrides.

    Extra arguments are verl overrides (key=value) and come last, e.g. trainer.total_epochs=1.
    """
    import subprocess
    import sys

    from memread.cli.environment import current
    from memread.errors import UsageError
    from memread.train import presets

    env = current()
    recipe = presets.get_recipe(preset)
    if rollout not in ("vllm", "sglang"):
        raise UsageError(f"unknown rollout engine {rollout!r}", hint="use --rollout vllm or --rollout sglang")
    extra = [arg for arg in ctx.args]
    bad = [arg for arg in extra if "=" not in arg]
    if bad:
        raise UsageError(f"not a verl override: {bad[0]!r}", hint="extra arguments are key=value, e.g. trainer.save_freq=20")
    lines = presets.overrides(recipe, model=model, train_files=train_files, val_files=val_files, gpus=gpus,
                              nodes=nodes, rollout=rollout, tensor_parallel=tensor_parallel, clip_high=clip_high,
                              alpha=alpha, experiment=experiment, extra=extra)
    if print_script:
        env.out(presets.script(recipe, lines))
        return
    adapter = _need_extra("memread train run")
    if dry_run:
        try:
            config = adapter.compose(lines)
        except Exception as error:  # Hydra's and memread's config errors alike
            raise UsageError(f"verl refused the configuration: {' '.join(str(error).split())[:300]}",
                             hint="check the override's spelling against verl's ppo_trainer config") from None
        for key in ("algorithm.adv_estimator", "actor_rollout_ref.rollout.n", "data.train_batch_size",
                    "actor_rollout_ref.actor.optim.lr", "actor_rollout_ref.actor.clip_ratio_high",
                    "data.max_prompt_length", "data.max_response_length", "memread.strategy", "memread.alpha"):
            env.out(f"{key} = {_select(config, key)}")
        env.err("the configuration composes with verl's own; `memread train run` without --dry-run starts it")
        return
    done = subprocess.run([sys.executable, "-m", "memread.train.run", *lines], check=False)
    if done.returncode != 0:
        raise typer.Exit(1 if done.returncode > 0 else 130)


def _select(config: Any, key: str) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.select(config, key)


@app.command("export")
def export(
    checkpoint: Path = typer.Argument(..., help="verl's actor checkpoint folder, e.g. "
                                      "checkpoints/memread/memagent/global_step_150/actor."),
    out: Path = typer.Option(..., "--out", "-o", help="The Hugging Face folder to write."),
    preset: str = typer.Option(..., "--preset", "-p", help=f"The preset it was trained with: {_PRESETS}."),
    backend: str = typer.Option("fsdp", "--backend", help="verl's training backend: fsdp or megatron."),
) -> None:
    """Merge a verl checkpoint into a Hugging Face folder that `memread ask --backend vllm` reads, and say how to
    read with it (the strategy it was trained for) and compare it with the untrained model."""
    import json
    import subprocess
    import sys

    from memread.cli.environment import current
    from memread.errors import InputError, UsageError
    from memread.models.trained import TRAIN_RECORD
    from memread.train import presets

    env = current()
    recipe = presets.get_recipe(preset)
    if backend not in ("fsdp", "megatron"):
        raise UsageError(f"unknown training backend {backend!r}", hint="use --backend fsdp or --backend megatron")
    if not checkpoint.is_dir():
        raise InputError(f"{checkpoint}: no such checkpoint folder",
                         hint="give the actor folder of a global_step_N checkpoint of `memread train run`")
    _need_extra("memread train export")
    done = subprocess.run([sys.executable, "-m", "verl.model_merger", "merge", "--backend", backend, "--local_dir",
                           str(checkpoint), "--target_dir", str(out)], check=False)
    if done.returncode != 0:
        raise typer.Exit(1)
    settings = {key: value for key, value in recipe.settings.items() if key != "answer_start"}
    (out / TRAIN_RECORD).write_text(json.dumps(
        {"preset": recipe.name, "strategy": recipe.strategy, "settings": dict(recipe.settings),
         "options": dict(recipe.options), "checkpoint": str(checkpoint)}, indent=2) + "\n", encoding="utf-8")
    flags = " ".join(f"--{key.replace('_', '-')} {value}" for key, value in settings.items())
    env.err(f"read with it: memread ask --backend vllm --model {out} --strategy {recipe.strategy} {flags} FILE "
            "\"QUESTION\"")
    env.err(f"compare: memread bench hqa -l 50,200 --backend vllm --model {out} --strategy {recipe.strategy} "
            "--out trained, the same with the untrained model --out base, then memread bench --report --out trained "
            "--compare base")
    env.out(str(out))
