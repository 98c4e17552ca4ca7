"""How much reading can several `evidence` questions about one document share? Design questions only, no model.

Several questions read in one pass share a step when they read the same passage (the passage comes first in the
prompt, so its prefill is evaluated once). Each question reads its best ``passages`` passages in a round; the
most a pass can share is where those sets overlap. This ranks docqa's design questions (its even-numbered ones,
four a document) as `evidence` ranks them before its first step and counts, per document, the passages the four
first rounds read one by one against the distinct passages among them: the floor of the one-pass cost in
passages read, whatever the order of the steps (later rounds and re-ranking after each step are left out).

    python -m benchmarks.studies.lane_overlap [--passages 8] [--model M] [--out FILE.md]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from benchmarks._helpers.result_files import emit
from benchmarks._helpers.result_files import table as result_table


def overlap(top: Sequence[set[int]]) -> tuple[int, int]:
    """(passages read one question at a time, distinct passages among them)."""
    return sum(len(t) for t in top), len(set().union(*top)) if top else 0


def rows(model: str | None, passages: int) -> list[list[object]]:
    from memread.backends.llamacpp import LlamaTokenizer
    from memread.bench import docqa
    from memread.chunk import Chunker
    from memread.ingest import open_document
    from memread.models import resolve
    from memread.settings import Settings
    from memread.strategies import create_strategy
    from memread.strategies.evidence import EvidenceStrategy

    tokenizer = LlamaTokenizer(resolve(model, pull=False))
    by_doc: dict[str, list[str]] = {}
    for question in docqa.questions():
        if docqa.split_of(question) == "design":
            by_doc.setdefault(question["doc"], []).append(question["question"])
    found: list[list[object]] = []
    for doc, questions in by_doc.items():
        document = open_document(str(docqa.document_path(doc)))
        chunks = list(Chunker(tokenizer, EvidenceStrategy.default_chunk_tokens).chunks(document.segments()))
        strategy = create_strategy(Settings(strategy="evidence"), tokenizer)
        assert isinstance(strategy, EvidenceStrategy)
        strategy.observe_document(document)
        strategy.index(chunks)
        top = [{index for index, score in strategy.passages.rank(q, [], skip=set(), limit=passages) if score > 0}
               for q in questions]
        alone, shared = overlap(top)
        found.append([doc, len(chunks), len(questions), alone, shared, f"{shared / max(alone, 1):.2f}×"])
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=8, help="a round's passages (evidence's default: 8)")
    parser.add_argument("--model", help="the model whose tokenizer cuts the passages (default: memread's)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    found = rows(args.model, args.passages)
    alone = sum(int(str(row[3])) for row in found)
    shared = sum(int(str(row[4])) for row in found)
    body = result_table(["document", "passages", "questions", "first rounds, one by one", "distinct passages",
                         "one pass at best"], found)
    return emit(f"{body}\n\nAll documents: {shared} distinct passages of {alone} read one question at a time "
                f"({shared / max(alone, 1):.2f}×).\n", args.out)


if __name__ == "__main__":
    raise SystemExit(main())
