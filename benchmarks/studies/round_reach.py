"""Which questions can a round that ends at a line holding the question reach? Counted in code, before any read.

`evidence` ends a lookup's round at an answer found on a line sharing at least
:data:`~memread.strategies.evidence.reading.HOLDS_AT_LEAST` and :data:`~memread.strategies.evidence.reading.HOLDS`
of the question's words (v36, ``docqa-design.md`` "Toward v36"). A read can change only where some line of its
document shares that much, counted as :func:`~memread.strategies.evidence.reading.support` counts (the line, its neighbours, its passage's label); a question
read in two hops is counted as reachable (its second hop's question is made from the bridge its read finds).
This tells which recorded reads must be read again, without a model.

    python -m benchmarks.studies.round_reach docqa [EXTRA.jsonl …]    # docqa's lookups, and our own questions
    python -m benchmarks.studies.round_reach hqa LENGTH SEED SCORES   # the samples of a HotpotQA cell's records

Design samples (docqa's even-numbered questions, our own, HotpotQA's design seed) print the count; held-out
ones print only whether they are reachable.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.studies.replay_reads import DESIGN_SEEDS

DATA = Path(__file__).resolve().parents[2] / "memread" / "data" / "docqa-questions.jsonl"


def unit_words(chunks: Iterable[Any]) -> list[frozenset[str]]:
    """For each unit of each passage as a step shows it (boilerplate left out), the words ``reading.support`` counts
    for it (its neighbours' and the passage label's too), computed once for all of a document's questions."""
    from memread.strategies.evidence.ranking import Passages
    from memread.strategies.evidence.reading import Shown, support_words

    passages = Passages(chunks)
    found = []
    for index in range(len(passages)):  # units not kept by the index: a scan of the whole document
        shown = Shown(index, passages.labels[index], tuple(u for u in passages.units(index, keep=False) if u.readable))
        found += [frozenset(support_words(shown, position)) for position in range(len(shown.units))]
    passages.close()
    return found


def reach(question: str, words: Sequence[frozenset[str]]) -> tuple[int, int, bool]:
    """(the most of the question's words a unit shares, how many it has, whether a round can end there)."""
    from memread.fulltext import query_terms
    from memread.strategies.evidence import hops
    from memread.strategies.evidence.keeping import stems
    from memread.strategies.evidence.reading import holds_question

    asked = stems(query_terms(question))
    top = max((len(asked & unit) for unit in words), default=0)
    return top, len(asked), holds_question(question, {"support": top}) or hops.split(question) is not None


def _chunks(document: Any, tokenizer: Any) -> list[Any]:
    from memread.chunk import Chunker
    from memread.strategies.evidence import EvidenceStrategy

    return list(Chunker(tokenizer, EvidenceStrategy.default_chunk_tokens).chunks(document.segments()))


def docqa_lines(extra: Sequence[str], tokenizer: Any) -> Iterable[str]:
    from memread.bench import docqa
    from memread.ingest import open_document
    from memread.strategies.evidence import questions

    asked = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    for path in extra:
        asked += [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    by_document: dict[str, list[dict[str, Any]]] = {}
    for question in asked:
        if questions.question_kind(question["question"]) == questions.LOOKUP and question["kind"] != "aggregate":
            by_document.setdefault(question["doc"], []).append(question)
    for name, group in by_document.items():
        words = unit_words(_chunks(open_document(str(docqa.document_path(name))), tokenizer))
        for question in group:
            top, count, can = reach(question["question"], words)
            verdict = "reachable" if can else "not reachable"
            held_out = not question["id"].startswith("own-") and int(question["id"][-2:]) % 2 == 1
            yield f"{question['id']} held-out: {verdict}" if held_out else \
                f"{question['id']} design: {top} of {count}: {verdict}"


def hqa_lines(length: int, seed: int, scores: str, tokenizer: Any) -> Iterable[str]:
    from memread.bench.methods import text_document
    from memread.bench.results import context_digest
    from memread.bench.tasks import build_sample

    for line in Path(scores).read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if line.strip() else {}
        if record.get("method") != "evidence":
            continue
        sample = build_sample("hqa", length, int(record["index"]), seed, tokenizer)
        if context_digest(sample) != record["context_sha256"]:
            raise SystemExit(f"hqa/{length}/{record['index']}: the sample built now is not the one recorded")
        top, count, can = reach(sample.question, unit_words(_chunks(text_document(sample), tokenizer)))
        verdict = "reachable" if can else "not reachable"
        yield (f"hqa/{length}/{record['index']} seed {seed}: {top} of {count}: {verdict}" if seed in DESIGN_SEEDS
               else f"hqa/{length}/{record['index']} seed {seed}: {verdict}")


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] not in ("docqa", "hqa") or (argv[0] == "hqa" and len(argv) != 4):
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    from memread.backends.llamacpp import LlamaTokenizer
    from memread.models import resolve

    tokenizer = LlamaTokenizer(resolve("qwen2.5-coder-1.5b-q4_0", pull=False))
    lines = docqa_lines(argv[1:], tokenizer) if argv[0] == "docqa" else \
        hqa_lines(int(argv[1]), int(argv[2]), argv[3], tokenizer)
    for line in lines:
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
