"""Does the first round reach the answer when the model's guess at the answering sentence joins the question?

A design tool for `evidence`'s ranking (HyDE: Gao et al., 2022, "Precise Zero-Shot Dense Retrieval without
Relevance Labels", here with BM25). For each design question it ranks the document's passages, cut as `evidence`
cuts them, as the strategy's first round does (:meth:`Passages.rank`, its best ``--passages``), and again with a
sentence the model writes as if quoting the answer from the document added as a second query (BM25 added, as a
two-step question's names are). A round *reaches* the answer when one of its passages holds the gold: where our
own lookup's check finds it (its pattern, the gold as its first match), else the gold's words in a row, case
aside. No read and no answer: what the reader is given to read, not what it makes of it.

Design questions only: our 48 lookups (``docqa-design-lookup.jsonl``) and docqa's even-numbered questions but
the aggregates and absent ones.

    python -m benchmarks.studies.expansion_probe [--questions ID,...] [--passages 8] [--cache FILE.jsonl]
        [--out FILE.md] [--threads 1]

The model's sentences go to ``--cache`` as they are written (a second run reuses them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import emit
from benchmarks._helpers.result_files import table as result_table

GUESS = ("Write the one sentence of the document that answers this question, as the document would say it, "
         "without any explanation.\n\nDocument: {doc}\nQuestion: {question}")
NAMES = {"octave-pdf": "the GNU Octave manual", "devref-epub": "the Debian Developer's Reference",
         "gcc-testlog": "a GCC test suite log", "handbook-html": "The Debian Administrator's Handbook",
         "binutils-changelog": "the Debian changelog of binutils"}


def design_questions(only: Sequence[str] = ()) -> list[dict[str, Any]]:
    from benchmarks.studies.own_questions import own_questions
    from memread.bench.docqa import questions, split_of

    found = own_questions("lookup") + [q for q in questions() if split_of(q) == "design"
                                       and q["kind"] not in ("aggregate", "absent")]
    return [q for q in found if not only or q["id"] in only]


def holds(question: dict[str, Any], text: str) -> bool:
    """Whether ``text`` holds the question's gold: our lookup's check, else a gold's words in a row."""
    from benchmarks.studies.own_questions import computed

    if question.get("check"):
        return bool(computed(question, text) == question["golds"][0])
    flat = " ".join(text.split()).lower()
    return any(" ".join(gold.split()).lower() in flat for gold in question["golds"])


def _outline(document: Any) -> list[Any]:
    return list(getattr(document, "outline", None) or [])


def reached(question: dict[str, Any], passages: Any, order: Sequence[tuple[int, float]]) -> int | None:
    """The place (1 = first) in ``order`` of the first passage holding the gold, or None."""
    return next((place for place, (index, _) in enumerate(order, 1) if holds(question, passages.get(index).text)),
                None)


def summary(rows: Sequence[dict[str, Any]], passages: int) -> str:
    body = [[r["id"], r["doc"], r["kind"], r["now"] or "—", r["with"] or "—", r["guess"][:70].replace("|", "/")]
            for r in rows]
    now = sum(1 for r in rows if r["now"])
    then = sum(1 for r in rows if r["with"])
    gained = [r["id"] for r in rows if r["with"] and not r["now"]]
    lost = [r["id"] for r in rows if r["now"] and not r["with"]]
    head = ["question", "document", "kind", "place now", "place with the guess", "the model's guess"]
    return (result_table(head, body) + f"\n\nReached in the first {passages} passages: {now} of {len(rows)} now, "
            f"{then} with the guess; gained {', '.join(gained) or 'none'}; lost {', '.join(lost) or 'none'}.\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", default="", help="comma-separated ids (default: every design lookup)")
    parser.add_argument("--passages", type=int, default=8, help="a round's passages")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    only = [q.strip() for q in args.questions.split(",") if q.strip()]
    found = design_questions(only)
    if unknown := sorted(set(only) - {q["id"] for q in found}):
        parser.error(f"{unknown[0]!r} is not a design lookup")
    if args.passages < 1:
        parser.error("--passages must be at least 1")

    from memread.backends.base import ChatRequest, Message
    from memread.backends.llamacpp import LlamaCppBackend, LlamaTokenizer
    from memread.bench.docqa import document_path
    from memread.chunk import Chunker
    from memread.ingest import open_document
    from memread.models import resolve
    from memread.strategies.evidence import EvidenceStrategy
    from memread.strategies.evidence.ranking import Passages

    guesses: dict[str, str] = {}
    if args.cache and args.cache.exists():
        guesses = {r["id"]: r["guess"] for r in map(json.loads, args.cache.read_text(encoding="utf-8").splitlines())}
    path = resolve(args.model, pull=False)
    backend = None
    rows = []
    for doc in dict.fromkeys(q["doc"] for q in found):
        document = open_document(str(document_path(doc)))
        chunks = Chunker(LlamaTokenizer(path), EvidenceStrategy.default_chunk_tokens).chunks(document.segments())
        passages = Passages(chunks, outline=partial(_outline, document))  # complete once the chunks are read
        for question in (q for q in found if q["doc"] == doc):
            if question["id"] not in guesses:
                backend = backend or LlamaCppBackend(path, n_ctx=2048, n_threads=args.threads)
                ask = GUESS.format(doc=NAMES.get(doc, "the document"), question=question["question"])
                reply = backend.complete([ChatRequest((Message("user", ask),), 64)])[0].text
                guesses[question["id"]] = re.sub(r"\s+", " ", reply).strip()
                if args.cache:
                    with args.cache.open("a", encoding="utf-8") as out:
                        out.write(json.dumps({"id": question["id"], "guess": guesses[question["id"]]}) + "\n")
            guess = guesses[question["id"]]
            now = passages.rank(question["question"], [], skip=set(), limit=args.passages)
            with_guess = passages.rank(question["question"], [guess], skip=set(), limit=args.passages)
            rows.append({"id": question["id"], "doc": doc, "kind": question["kind"], "guess": guess,
                         "now": reached(question, passages, now), "with": reached(question, passages, with_guess)})
            print(f"{question['id']}: now {rows[-1]['now']}, with {rows[-1]['with']}", file=sys.stderr, flush=True)
        passages.close()
    if backend is not None:
        backend.close()
    return emit(summary(rows, args.passages), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
