"""Training rows for verl, from memread's benchmark builders or from a user's own JSONL.

A row is what verl's ``RLHFDataset`` reads (parquet or JSONL) plus what memread's agent loop needs::

    {"data_source": "memread/hqa",              # the task; the reward function is memread's either way
     "agent_name": "memread",                    # selects memread's agent loop
     "prompt": [{"role": "user", "content": Q}], # the question (verl filters prompts by its length)
     "context": "...",                           # the document's text
     "ability": "memory",
     "reward_model": {"style": "rule", "ground_truth": ["gold", ...]},
     "extra_info": {"index": 0, "metric": "strict" | "recall",
                    "evidence": ["a gold paragraph", "a needle", ...],   # for GRU-Mem's update and exit rewards
                    "task": "hqa", "length": 50}}

**Your own data** (MemAgent's tracker has asked for this since 2025): a JSONL file, one question per line::

    {"question": "Who repaired the lamp?", "answers": ["Ada Quist"],
     "context": "the document's text"            # or "document": "manual.pdf" (any file memread reads)
     "evidence": ["Ada Quist repaired the lamp"], # optional: the passages the answer needs
     "metric": "strict"}                          # optional: "recall" when every answer must be found

``answers`` may be one string (``"answer"`` is accepted too); a ``document`` path is read with memread's loaders
(PDF, EPUB, HTML, text, ...) relative to the JSONL's folder.

Benchmark rows take the benchmark's question order from ``start`` on (default 1000): ``memread bench`` asks the first
questions of the same seeded order, so rows built with the default ``start`` and seed never hold a question that a
``memread bench`` run of fewer than 1000 samples asks. The HotpotQA and SQuAD data memread ships are the *dev*
sets (the papers trained on HotpotQA's train split, which memread does not carry).

:func:`closed_book_filter` drops the questions a model answers without the document (MemAgent's ``filter.py``:
best of 2, temperature 1, top-p 0.7), through any memread backend.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from memread.errors import InputError, UsageError
from memread.tokens import Tokenizer

AGENT_NAME = "memread"
DEFAULT_START = 1000
METRICS = ("strict", "recall")
_BENCH_METRIC = {"qa": "strict", "recall": "recall"}
NOT_FOR_TRAINING = ("docqa",)  # memread's own evaluation questions about real documents


def row(question: str, golds: Sequence[str], context: str, *, index: int, source: str = "memread/custom",
        metric: str = "strict", evidence: Sequence[str] = (), **extra: Any) -> dict[str, Any]:
    """One training row (see the module docstring)."""
    if metric not in METRICS:
        raise UsageError(f"unknown metric {metric!r} (question {index + 1})", hint=f"use one of: {', '.join(METRICS)}")
    return {
        "data_source": source,
        "agent_name": AGENT_NAME,
        "prompt": [{"role": "user", "content": question}],
        "context": context,
        "ability": "memory",
        "reward_model": {"style": "rule", "ground_truth": [str(g) for g in golds]},
        "extra_info": {"index": index, "metric": metric, "evidence": [str(e) for e in evidence], **extra},
    }


# --- from the benchmark builders ---------------------------------------------------------------------------


def bench_rows(task: str, lengths: Sequence[int], samples: int, *, tokenizer: Tokenizer, seed: int = 42,
               start: int = DEFAULT_START) -> Iterator[dict[str, Any]]:
    """``samples`` rows per length of benchmark ``task`` (memread.bench.tasks), questions ``start`` onwards."""
    from memread.bench import tasks

    if task in NOT_FOR_TRAINING:
        raise UsageError(f"{task} is memread's evaluation set of real documents, not training data",
                         hint="build rows from hqa, squad, niah-* or vt, or from your own JSONL (--jsonl)")
    spec = tasks.get_task(task)
    index = 0
    for length in lengths:
        for number in range(start, start + samples):
            sample = tasks.build_sample(spec.name, length, number, seed, tokenizer)
            yield row(sample.question, sample.golds, sample.context, index=index, source=f"memread/{spec.name}",
                      metric=_BENCH_METRIC.get(sample.metric, "strict"), evidence=sample_evidence(sample),
                      task=spec.name, length=length, sample=number, seed=seed)
            index += 1


_DOCUMENTS = re.compile(r"\n\n(?=Document \d+:\n)")


def sample_evidence(sample: Any) -> list[str]:
    """The texts that hold a benchmark sample's answer: its gold documents, the needles or the variable chain."""
    meta = sample.meta or {}
    if "gold_documents" in meta:
        documents = _DOCUMENTS.split(sample.context)
        return [documents[slot - 1] for slot in meta["gold_documents"] if 0 < slot <= len(documents)]
    found: list[str] = []
    for gold in sample.golds:
        needle = re.search(rf"One of the special magic \w+ for [^.]*? is: {re.escape(gold)}\.", sample.context)
        chain = re.search(rf"VAR {re.escape(gold)} = [^\n]*?(?= The grass| VAR|\n|$)", sample.context)
        if needle:
            found.append(needle.group(0))
        elif chain:
            found.append(chain.group(0).strip())
    return found


# --- from a user's JSONL ---------------------------------------------------------------------------------


def jsonl_rows(path: Path, *, read_document: Callable[[Path], str] | None = None) -> Iterator[dict[str, Any]]:
    """Rows from a JSONL of questions (see the module docstring). InputError names the line of a bad record."""
    read = read_document or document_text
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}", hint="check the path") from None
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text", hint="a JSONL file holds one JSON object per line") from None
    index = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path.name} line {number}"
        try:
            record = json.loads(line)
        except ValueError as error:
            raise InputError(f"{where} is not JSON: {error}",
                             hint='each line is an object like {"question": …, "answers": […], "context": …}') from None
        if not isinstance(record, dict):
            raise InputError(f"{where} is not a JSON object", hint='e.g. {"question": …, "answers": […], "context": …}')
        question = record.get("question")
        golds = record.get("answers", record.get("answer"))
        if isinstance(golds, str):
            golds = [golds]
        if not isinstance(question, str) or not question.strip():
            raise InputError(f"{where} has no question", hint='add "question": "…"')
        if not isinstance(golds, list) or not golds or not all(isinstance(g, str) and g.strip() for g in golds):
            raise InputError(f"{where} has no answers", hint='add "answers": ["…"] (the gold answers)')
        context = record.get("context")
        document = record.get("document")
        if isinstance(document, str) and context is None:
            context = read(_relative(path, document))
        if not isinstance(context, str) or not context.strip():
            raise InputError(f"{where} has no document text",
                             hint='add "context": "…" or "document": "a file memread reads"')
        evidence = record.get("evidence") or []
        if isinstance(evidence, str):
            evidence = [evidence]
        if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
            raise InputError(f"{where}: evidence must be a list of texts", hint='e.g. "evidence": ["the passage"]')
        metric = record.get("metric", "strict")
        if metric not in METRICS:
            raise InputError(f"{where}: unknown metric {metric!r}", hint=f"use one of: {', '.join(METRICS)}")
        yield row(question, golds, context, index=index, metric=metric, evidence=evidence,
                  **({"document": document} if isinstance(document, str) else {}))
        index += 1


def _relative(jsonl: Path, document: str) -> Path:
    path = Path(document).expanduser()
    return path if path.is_absolute() else jsonl.parent / path


def document_text(path: Path) -> str:
    """A file's text as memread's loaders give it (what ``memread ask FILE`` reads)."""
    from memread.ingest import open_document

    return "".join(segment.text for segment in open_document(str(path)).segments())


# --- the closed-book filter ----------------------------------------------------------------------------------

CLOSED_BOOK_PROMPT = "{question}\nYour final answer in \\boxed{{}}.\n"  # MemAgent's filter.py


def closed_book_filter(rows: Iterable[dict[str, Any]], backend: Any, *, samples: int = 2, max_tokens: int = 512,
                       on_drop: Callable[[dict[str, Any]], None] | None = None) -> Iterator[dict[str, Any]]:
    """``rows`` without those ``backend`` answers right, in any of ``samples`` tries, from the question alone."""
    from memread.answer import final_answer, lenient_match
    from memread.backends.base import ChatRequest, Message

    for item in rows:
        question = item["prompt"][-1]["content"]
        golds = item["reward_model"]["ground_truth"]
        request = ChatRequest(messages=(Message("user", CLOSED_BOOK_PROMPT.format(question=question)),),
                              max_tokens=max_tokens, temperature=1.0, top_p=0.7)
        replies = backend.complete([request] * samples)
        if any(lenient_match(final_answer(reply.text)[0], golds) for reply in replies):
            if on_drop is not None:
                on_drop(item)
            continue
        yield item


# --- writing and reading -------------------------------------------------------------------------------------


def write_rows(rows: Iterable[dict[str, Any]], path: Path) -> int:
    """Write ``rows`` as parquet (``.parquet``, needs pyarrow: ``memread[train]``) or JSONL (``.jsonl``/``.json``);
    returns how many. The file appears only when complete."""
    items = list(rows)
    partial = path.with_name(path.name + ".partial")
    if path.suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise UsageError("writing parquet needs pyarrow, which is not installed",
                             hint="pip install 'memread[train]' (or pyarrow), or write .jsonl, which verl reads too"
                             ) from None
        pq.write_table(pa.Table.from_pylist(items), partial)
    elif path.suffix in (".jsonl", ".json"):
        with open(partial, "w", encoding="utf-8") as handle:
            for item in items:
                handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    else:
        raise UsageError(f"cannot tell the format of {path.name}", hint="name it .parquet or .jsonl")
    partial.replace(path)
    return len(items)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows as :func:`write_rows` wrote them."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_table(path).to_pylist())
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def resolve_tokenizer(name: str | None) -> Tokenizer:
    """The tokenizer benchmark lengths are measured with: ``tiktoken`` (default, model-free), a registry model's
    or a GGUF file's own (``smollm2-135m``, ``model.gguf``; the vocabulary only is loaded)."""
    if name in (None, "", "tiktoken"):
        from memread.tokens import default_tokenizer

        return default_tokenizer()
    from memread import models
    from memread.backends.llamacpp import LlamaTokenizer

    return LlamaTokenizer(models.resolve(name))
