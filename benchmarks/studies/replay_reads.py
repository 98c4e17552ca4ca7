"""Which recorded design reads can a change to `evidence` alter? Replays them with the model's own replies.

A bench run's ``results.jsonl`` records, for each sample, the passages each step read and the model's reply to
it. Reading is deterministic given the replies (temperature 0), so feeding those replies back, in order, through
the code as it is now shows without a model whether the change reads the same passages in the same order and
settles the same answer: where it does, and no prompt changed, the model would reply as before and the result
stands; where it diverges, the sample must be read again with the model. Only design samples (docqa's
even-numbered questions, HotpotQA's design seed) are replayed: a held-out sample's read is not looked at.

    python -m benchmarks.studies.replay_reads FOLDER [--model M] [--prompts FILE.json] [--against FILE.json]
                                             [--out FILE.md]

The prompts are not recorded, so whether the current code shows the model the same text is told by comparing
with a replay by the code the run used: ``--prompts`` writes each question's prompts' digests, and ``--against``
compares with a file written so by the older code: ``cd OLD && PYTHONPATH=OLD:MAIN python -m
benchmarks.studies.replay_reads FOLDER --prompts old.json``, where OLD is a folder holding only a link to the
older worktree's ``memread/`` (``python -m`` puts the working folder first on the path, so run from OLD, not from
MAIN). The file names the ``memread`` that wrote it, and ``--against`` refuses a file this same code wrote.

FOLDER is a ``memread bench docqa`` or ``memread bench hqa`` folder with ``evidence`` records (its
``results.jsonl`` quotes the documents, so it stays on the machine that ran it); docqa's documents are fetched as
the bench does (``MEMREAD_DOCQA_DIR`` for a cache of them), a HotpotQA sample is built again from its data seed
and checked against the recorded context's digest. Design samples only: docqa's even-numbered questions, HotpotQA's
design seed (:data:`DESIGN_SEEDS`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import cell, emit
from benchmarks._helpers.result_files import table as result_table

# RULER-HotpotQA's data seeds looked at while designing (goal-35.md); the acceptance seed is never replayed.
DESIGN_SEEDS = frozenset({11})


def sample_id(score: dict[str, Any]) -> str:
    """A record's name in the tables and the prompts files: docqa's question id, or the bench's sample key."""
    return str(score["docqa"]["id"]) if score.get("docqa") else str(score["key"]).rsplit("/", 1)[0]


def is_design(score: dict[str, Any]) -> bool:
    if score.get("docqa"):
        return bool(score["docqa"].get("split") == "design")
    return score.get("task") == "hqa" and int(score.get("data_seed", -1)) in DESIGN_SEEDS


def recorded(folder: Path, only: Sequence[str] = ()) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(result, score) of each design sample's `evidence` read in ``folder`` (of those ``only``, if given)."""
    results = (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
    scores = (folder / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    for line, score_line in zip(results, scores, strict=True):
        score = json.loads(score_line)
        if score.get("method") == "evidence" and is_design(score) and (not only or sample_id(score) in only):
            yield json.loads(line), score


def replay(result: dict[str, Any], document: Any, chunks: Sequence[Any], tokenizer: Any, *,
           expected: Sequence[str] | None = None, model: Any = None,
           options: dict[str, str] | None = None) -> dict[str, Any]:
    """The read of ``result``'s question by the current code (with evidence ``options``), each model call answered
    with the recorded reply; given a ``model`` backend, from the first prompt whose digest is not the ``expected``
    one (the recorded read's, written by the code that made it) the model answers instead."""
    from memread.backends.fake import FakeBackend
    from memread.errors import BackendError
    from memread.events import StepFinished
    from memread.loop import Loop
    from memread.settings import Settings
    from memread.strategies.evidence.reading import REPLY_START

    recorded = [str(step["reply"]) for step in result["steps"]] + [str(result["reply"])]
    prompts: list[str] = []
    calls: list[tuple[str, str]] = []  # each call's prompt and its reply (a recorded one whole, with its box)
    asked: list[int] = []  # the calls the model answered
    tokens = [0]  # the prompts' text, counted by the tokenizer alike for recorded and model replies

    def reply(request: Any) -> str:
        prompts.append(hashlib.sha256(request.messages[-1].content.encode()).hexdigest()[:16])
        tokens[0] += tokenizer.count(request.messages[-1].content)
        call = len(prompts) - 1
        if model is not None and (asked or expected is None or call >= min(len(expected), len(recorded))
                                  or expected[call] != prompts[-1]):
            asked.append(call)
            text = str(model.complete([request])[0].text)
            calls.append((request.messages[-1].content, text))
            return text
        if call >= len(recorded):
            raise LookupError("the replay needs more model calls than were recorded")
        calls.append((request.messages[-1].content, recorded[call]))
        return recorded[call].removeprefix(REPLY_START)  # begun for the model; the backend's reply continues it

    events: list[Any] = []
    loop = Loop(FakeBackend(reply, continues_replies=True, tokenizer=tokenizer), [result["question"]],
                Settings(strategy="evidence", options=dict(options or {})), sinks=[events.append])
    loop.strategy.observe_document(document)
    try:
        answer = loop.run(list(chunks))[0].answer
    except BackendError:  # it read on past the recorded replies: another read
        answer = None
    return {"read": [e.chunk.index for e in events if isinstance(e, StepFinished)], "answer": answer,
            "prompts": prompts, "calls": calls, "model_calls": len(asked), "tokens": tokens[0]}


def replayed(folder: Path, model: str | None = None) -> Iterator[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(record, score record, :func:`replay` of it with its own replies) for each of ``folder``'s design reads,
    the passages cut with ``model``'s tokenizer (default: memread's): its ``calls`` are the prompts the current
    code shows and the replies recorded for them."""
    from memread.backends.llamacpp import LlamaTokenizer
    from memread.models import resolve

    tokenizer = LlamaTokenizer(resolve(model, pull=False))
    documents: dict[str, tuple[Any, list[Any]]] = {}
    for result, score in recorded(folder):
        yield result, score, replay(result, *_document(score, tokenizer, documents), tokenizer)


def rows(folder: Path, model: str | None, *, against: dict[str, list[str]] | None = None, backend: Any = None,
         options: dict[str, str] | None = None, only: Sequence[str] = ()) -> list[dict[str, Any]]:
    from memread.backends.llamacpp import LlamaTokenizer
    from memread.models import resolve

    tokenizer = LlamaTokenizer(resolve(model, pull=False))
    documents: dict[str, tuple[Any, list[Any]]] = {}
    found = []
    for result, score in recorded(folder, only):
        name = sample_id(score)
        document = _document(score, tokenizer, documents)
        now = replay(result, *document, tokenizer, expected=(against or {}).get(name), model=backend,
                     options=options)
        # the recorded read's prompt tokens, counted as the changed read's are (its own replies, no option)
        then = replay(result, *document, tokenizer)["tokens"] if backend is not None else None
        before = [step["chunk"] for step in result["steps"]]
        same = next((i for i, (a, b) in enumerate(zip(before, now["read"], strict=False)) if a != b), None)
        if same is None and len(before) != len(now["read"]):
            same = min(len(before), len(now["read"]))
        found.append({"id": name, "score": score["score"], "steps": len(before),
                      "diverges": same, "answer": result["prediction"], "now": now["answer"],
                      "prompts": now["prompts"], "steps_now": len(now["read"]), "model_calls": now["model_calls"],
                      "tokens": then, "tokens_now": now["tokens"],
                      "right_now": right(now["answer"], result["golds"], score)})
    return found


def _document(score: dict[str, Any], tokenizer: Any, documents: dict[str, tuple[Any, list[Any]]]
              ) -> tuple[Any, list[Any]]:
    """The document a record read, cut as `evidence` cuts it: docqa's file, or the HotpotQA sample built again
    (its context must be the one recorded: another dataset version would replay another document)."""
    from memread.bench.methods import text_document
    from memread.bench.results import context_digest
    from memread.bench.tasks import build_sample
    from memread.chunk import Chunker
    from memread.ingest import open_document
    from memread.strategies.evidence import EvidenceStrategy

    name = str(score["docqa"]["doc"]) if score.get("docqa") else sample_id(score)
    if name not in documents:
        if score.get("docqa"):
            from memread.bench import docqa

            document = open_document(str(docqa.document_path(name)))
        else:
            sample = build_sample(str(score["task"]), int(score["length"]), int(score["index"]),
                                  int(score["data_seed"]), tokenizer)
            if context_digest(sample) != score["context_sha256"]:
                raise SystemExit(f"{name}: the sample built now is not the one recorded (another dataset?)")
            document = text_document(sample)
        chunker = Chunker(tokenizer, EvidenceStrategy.default_chunk_tokens)
        documents[name] = (document, list(chunker.chunks(document.segments())))
    return documents[name]


def right(answer: str | None, golds: Sequence[str], score: dict[str, Any]) -> bool:
    """Whether a replayed answer scores as the bench scores its record (docqa's rule, HotpotQA's lenient match)."""
    from memread.bench.results import score_values

    return bool(score_values(str(score["metric"]), golds, status="ok", prediction=answer, reply=answer or "",
                             boxed=answer is not None)["lenient"])


def read_on_table(found: Sequence[dict[str, Any]]) -> str:
    """The reads as the change makes them, the model answering where they left the recorded ones."""
    body = result_table(
        ["sample", "right then", "right now", "steps then", "steps now", "prompt tokens then", "prompt tokens now",
         "model calls", "answer then", "answer now"],
        [[row["id"], "yes" if row["score"] else "no", "yes" if row["right_now"] else "no", row["steps"],
          row["steps_now"], row.get("tokens", ""), row.get("tokens_now", ""), row["model_calls"],
          cell(row["answer"], 50), cell(row["now"], 50)] for row in found])
    then, now = sum(1 for r in found if r["score"]), sum(1 for r in found if r["right_now"])
    steps_then, steps_now = sum(r["steps"] for r in found), sum(r["steps_now"] for r in found)
    tokens_then, tokens_now = sum(r.get("tokens") or 0 for r in found), sum(r.get("tokens_now") or 0 for r in found)
    return (f"{body}\n\nRight: {then} of {len(found)} then, {now} now. Steps read: {steps_then} then, {steps_now} now "
            f"({steps_now / max(steps_then, 1):.2f}×); prompt tokens {tokens_then:,} then, {tokens_now:,} now "
            f"({tokens_now / max(tokens_then, 1):.2f}×, the prompts' text by the model's tokenizer); the model "
            f"answered {sum(r['model_calls'] for r in found)} calls, the recorded replies the rest.\n")


def table(found: Sequence[dict[str, Any]], against: dict[str, list[str]] | None = None) -> str:
    rows, stands = [], 0
    for row in found:
        replayed = "same passages" if row["diverges"] is None else f"diverges at step {row['diverges'] + 1}"
        shown = "not compared" if against is None else (
            "same" if against.get(row["id"]) == row["prompts"] else "changed")
        now = "—" if row["diverges"] is not None else row["now"]
        stands += row["diverges"] is None and row["now"] == row["answer"] and shown == "same"
        rows.append([row["id"], "yes" if row["score"] else "no", row["steps"], replayed, shown,
                     cell(row["answer"], 60), cell(now, 60)])
    body = result_table(["sample", "right then", "steps", "replayed", "prompts", "answer then", "answer now"], rows)
    if against is None:
        return (f"{body}\n\nPrompts not compared (`--against`): a read with the same passages may still show them "
                "differently.\n")
    return (f"{body}\n\nSame passages, prompts and answer: {stands} of {len(found)}; the others must be read again "
            "with the model.\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--model", help="the model whose tokenizer cut the passages (default: memread's)")
    parser.add_argument("--prompts", type=Path, help="write each question's prompts' digests here (JSON)")
    parser.add_argument("--against", type=Path, help="compare the prompts with those written so by other code")
    parser.add_argument("--read-on", action="store_true",
                        help="from the first prompt that differs from --against's, the model answers (one thread): "
                             "what the change's reads come to")
    parser.add_argument("-o", "--option", action="append", default=[], metavar="NAME=VALUE",
                        help="an evidence option for the replay (e.g. early=5)")
    parser.add_argument("--questions", default="", help="only these design samples (comma-separated: docqa ids, or keys such as hqa/50/3)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    import memread

    code = str(Path(memread.__file__).resolve().parent)
    against = json.loads(args.against.read_text(encoding="utf-8")) if args.against else None
    if against is not None and against.get("memread") == code:
        parser.error(f"{args.against} was written by this same code ({code}): write it with the older code, run "
                     "from a folder that holds only a link to its memread/")
    if not (args.folder / "results.jsonl").is_file():
        parser.error(f"{args.folder} holds no results.jsonl: give a `memread bench docqa` or `bench hqa` folder")
    options = dict(option.split("=", 1) for option in args.option if "=" in option)
    if args.read_on and against is None:
        parser.error("--read-on needs --against: the prompts of the code that made the recorded reads")
    backend = None
    if args.read_on:
        from memread.backends.llamacpp import LlamaCppBackend
        from memread.models import resolve

        backend = LlamaCppBackend(str(resolve(args.model, pull=False)), n_threads=1)
    found = rows(args.folder, args.model, against=None if against is None else against["prompts"], backend=backend,
                 options=options, only=[q for q in args.questions.split(",") if q])
    if args.prompts:
        digests = {"memread": code, "prompts": {row["id"]: row["prompts"] for row in found}}
        args.prompts.write_text(json.dumps(digests, indent=1) + "\n", encoding="utf-8")
    if backend is not None:
        return emit(read_on_table(found), args.out)
    return emit(table(found, None if against is None else against["prompts"]), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
