"""The evidence strategy's reading order with another IDF: retrieval only, no model.

memread ranks chunks with SQLite FTS5's BM25, whose IDF is Robertson's log((N - n + 0.5) / (n + 0.5)) clamped to
1e-6 when a word is in half the N chunks or more: such words count for (almost) nothing. On a manual whose
every chunk says "package" and "debian", a question made only of such words ranks the chunks by near-equal
crumbs (the live view's "BM25 0.0"). Lucene's IDF, log(1 + (N - n + 0.5) / (n + 0.5)), is never zero. This
script measures which order finds the evidence sooner: for the samples a ``memread bench`` sweep reads
(RULER-HotpotQA, chunked as the evidence strategy reads them: 1,500 tokens of the default model's tokenizer), the
ranks, for the question alone, of the chunks that hold the sample's gold documents (NIAH single-key: the needle),
under FTS5's BM25 and under the same BM25 with Lucene's IDF (``ChunkStore.lucene_top``: the same tokenizer and
term-frequency part), and how many questions memread's own order (``top(grade_common=True)``) ranks differently
from FTS5's. ``--ask DOCUMENT QUESTION PHRASE`` shows both orders' first chunks for
a real document, and where each puts the chunk that holds PHRASE (the answer's words). Needs llama-cpp-python and
the default model (``memread models pull``).

    python -m benchmarks.studies.idf [--ask DOCUMENT QUESTION PHRASE ...] [--out benchmarks/results/idf.md]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

from memread.bench.tasks import build_sample
from memread.chunk import Chunker
from memread.chunkstore import ChunkStore
from memread.document import Chunk, Provenance, Segment
from memread.ingest import open_document
from memread.models import resolve
from memread.strategies.evidence import EvidenceStrategy

CELLS = (("hqa", 50, 42, 48), ("hqa", 400, 42, 32), ("niah-single", 32768, 42, 16), ("niah-single", 131072, 42, 16))
# task, length, data seed, samples: issue 14's acceptance


def gold_ranks(order: list[int], golds: set[int], chunks: int) -> list[int]:
    """The 1-based ranks of the gold chunks in ``order`` (one past the last for a chunk it does not hold)."""
    return sorted(order.index(g) + 1 if g in order else chunks + 1 for g in golds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ask", nargs=3, action="append", default=[], metavar=("DOCUMENT", "QUESTION", "PHRASE"),
                        help="a real document, a question and the words of its answer: both orders' first chunks, "
                        "and where each puts the answer's")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from memread.backends.llamacpp import LlamaTokenizer

    tokenizer = LlamaTokenizer(resolve(args.model, pull=False))
    size = EvidenceStrategy.default_chunk_tokens
    rows: list[tuple[Any, ...]] = []
    for task, length, seed, samples in CELLS:
        first: dict[str, list[int]] = {"fts": [], "smooth": []}
        last: dict[str, list[int]] = {"fts": [], "smooth": []}
        collapsed = top_differs = chunk_count = memread_differs = 0
        for index in range(samples):
            sample = build_sample(task, length, index, seed, tokenizer)
            chunks = list(Chunker(tokenizer, size).chunks([Segment(sample.context, Provenance("sample"))]))
            store = ChunkStore()
            store.add_all(chunks)
            marks = ([f"Document {slot}:" for slot in sample.meta["gold_documents"]] if task == "hqa"
                     else list(sample.golds))  # a HotpotQA gold document's heading, a needle's value
            golds = {c.index for c in chunks for mark in marks if mark in c.text}
            fts = store.top(sample.question, len(chunks))
            orders = {"fts": [i for i, _ in fts], "smooth": [i for i, _ in store.lucene_top(sample.question, len(chunks))]}
            graded = [i for i, _ in store.top(sample.question, len(chunks), grade_common=True)]
            memread_differs += graded != orders["fts"]
            for name, order in orders.items():
                ranks = gold_ranks(order, golds, len(chunks))
                first[name].append(ranks[0])
                last[name].append(ranks[-1])
            collapsed += store.collapses(sample.question)
            top_differs += orders["fts"][:1] != orders["smooth"][:1]
            chunk_count += len(chunks)
            store.close()
        better = sum(s < f for s, f in zip(last["smooth"], last["fts"], strict=True))
        worse = sum(s > f for s, f in zip(last["smooth"], last["fts"], strict=True))
        rows.append((task, length, seed, samples, chunk_count / samples, collapsed, memread_differs, top_differs,
                     *(statistics.mean(first[k]) for k in ("fts", "smooth")),
                     *(statistics.mean(last[k]) for k in ("fts", "smooth")),
                     *(sum(r <= 3 for r in last[k]) for k in ("fts", "smooth")), better, worse))
        print(rows[-1], flush=True)
    asked: list[tuple[str, str, str, list[list[int]], int, list[tuple[Chunk, float]], list[tuple[Chunk, float]]]] = []
    for path, question, phrase in args.ask:
        chunks = list(Chunker(tokenizer, size).chunks(open_document(path).segments()))
        store = ChunkStore()
        store.add_all(chunks)
        fts, smooth = store.top(question, len(chunks)), store.lucene_top(question, len(chunks))
        holding = {c.index for c in chunks if phrase in c.text}
        mine = store.top(question, len(chunks), grade_common=True)
        found = [gold_ranks([i for i, _ in order], holding, len(chunks)) if holding else []
                 for order in (fts, smooth, mine)]
        asked.append((Path(path).name, question, phrase, found, len(chunks), [(chunks[i], s) for i, s in fts[:5]],
                      [(chunks[i], s) for i, s in smooth[:5]]))
        store.close()
    command = " ".join(["python -m benchmarks.studies.idf", *(f'--ask {p} "{q}" "{w}"' for p, q, w in args.ask)])
    lines = ["# Reading order: FTS5's BM25 against BM25 with Lucene's IDF", "",
             f"`{command}` (model `{args.model}`'s tokenizer, chunks of {size} tokens as the evidence strategy reads "
             "them; no model run). Ranks are of the chunks holding the sample's gold documents (a needle), for the "
             "question alone (the strategy's first read; later reads add the names the evidence brings up). "
             "memread's order is FTS5's, or Lucene's IDF when every word of the question is in half the chunks "
             "or more (`ChunkStore.top(..., grade_common=True)`, what the evidence strategy ranks the question by).",
             "",
             "| task | length | data seed | samples | chunks a sample | every word in half the chunks | "
             "memread's order differs from FTS5's | Lucene's best chunk differs | first gold rank, FTS5 | Lucene | "
             "last gold rank, FTS5 | Lucene | all gold in the best 3, FTS5 | Lucene | last gold sooner with Lucene "
             "| later |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (task, length, seed, samples, per, collapsed, graded, differs, f1, s1, f2, s2, f3, s3, better,
         worse) in rows:
        lines.append(f"| {task} | {length} | {seed} | {samples} | {per:.1f} | {collapsed} | {graded} | {differs} | "
                     f"{f1:.2f} | {s1:.2f} | {f2:.2f} | {s2:.2f} | {f3} | {s3} | {better} | {worse} |")
    for name, question, phrase, (fts_ranks, smooth_ranks, graded_ranks), count, fts_top, smooth_top_ in asked:
        lines += ["", f"## {name} ({count} chunks): {question}", "",
                  f"The chunks holding \"{phrase}\": rank {_ranks(fts_ranks)} by FTS5, {_ranks(smooth_ranks)} with "
                  f"Lucene's IDF, {_ranks(graded_ranks)} in memread's order.", "",
                  "| rank | FTS5 | score | Lucene | score |", "|---|---|---|---|---|"]
        for rank, ((a, sa), (b, sb)) in enumerate(zip(fts_top, smooth_top_, strict=False), 1):
            lines.append(f"| {rank} | {a.describe()}: {_opening(a.text)} | {sa:.2g} | {b.describe()}: "
                         f"{_opening(b.text)} | {sb:.2g} |")
    report = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0


def _ranks(ranks: list[int]) -> str:
    return ", ".join(str(rank) for rank in ranks) or "none (no chunk holds it)"


def _opening(text: str) -> str:
    """A chunk's first words past a running header, for the table."""
    lines = [line for line in text.splitlines() if line.strip()]
    words = " ".join(lines[1:] if len(lines) > 1 else lines).split()
    return " ".join(words[:10]).replace("|", "/")


if __name__ == "__main__":
    sys.exit(main())
