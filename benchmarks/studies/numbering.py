"""A change to the evidence strategy's numbering (``memread.strategies.evidence.units``) against a past commit:
whether it leaves the benchmark passages as they were (so results measured before it still stand for the code
after it), and what it does to real documents given on the command line.

For the benchmarks, it builds the samples a ``memread bench`` sweep reads (RULER-HotpotQA at the given lengths, seeds and counts),
chunks them as the evidence strategy does (1,500 tokens, the default model's own tokenizer), numbers every chunk
with the ``units`` of a past commit and with today's, and counts the chunks whose numbered sentences differ
(offsets, text or heading). Needs llama-cpp-python and the default model (``memread models pull``). For each
DOCUMENT (read and chunked as ``memread ask`` does), it counts the numbered sentences (headings aside) that do
not end as a sentence does (. ! ? : ;): pieces of a sentence cut at a line end, or lines that are records.

    python -m benchmarks.studies.numbering --against 6555bea [DOCUMENT ...] [--out benchmarks/results/numbering.md]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from memread.bench.tasks import build_sample
from memread.chunk import Chunker
from memread.document import Provenance, Segment
from memread.ingest import open_document
from memread.models import resolve
from memread.strategies import evidence
from memread.strategies.evidence import EvidenceStrategy

CELLS = (("hqa", 50, 42, 48), ("hqa", 400, 42, 32), ("hqa", 400, 7, 16))  # task, documents, data seed, samples


def past_module(commit: str) -> ModuleType:
    """memread/strategies/evidence.py as it was at ``commit``, imported under another name."""
    source = subprocess.run(["git", "-C", str(Path(__file__).parent), "show",
                             f"{commit}:memread/strategies/evidence.py"], check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "evidence_then.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("evidence_then", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["evidence_then"] = module
    spec.loader.exec_module(module)
    return module


def numbered(module: Any, text: str) -> list[tuple[int, int, str, bool]]:
    return [(u.start, u.end, u.text, u.heading) for u in module.units(text)]


_ENDS = re.compile(r"[.!?:;][\"'”’)\]*_]*$")


def cut_pieces(module: Any, texts: list[str]) -> tuple[int, int, float]:
    """Numbered sentences (headings aside), how many do not end as a sentence does, and their mean length."""
    found = [u.text for text in texts for u in module.units(text) if not u.heading]
    cut = sum(1 for text in found if not _ENDS.search(text))
    return len(found), cut, sum(map(len, found)) / max(1, len(found))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("documents", nargs="*", help="real documents to number both ways (PDF, text, logs, ...)")
    parser.add_argument("--against", required=True, help="the commit whose numbering the results were measured with")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from memread.backends.llamacpp import LlamaTokenizer

    tokenizer = LlamaTokenizer(resolve(args.model, pull=False))
    then = past_module(args.against)
    rows = []
    for task, length, seed, samples in CELLS:
        chunks = differing = 0
        for index in range(samples):
            sample = build_sample(task, length, index, seed, tokenizer)
            pieces = Chunker(tokenizer, EvidenceStrategy.default_chunk_tokens).chunks(
                [Segment(sample.context, Provenance("sample"))])
            for chunk in pieces:
                chunks += 1
                differing += numbered(then, chunk.text) != numbered(evidence, chunk.text)
        rows.append((task, length, seed, samples, chunks, differing))
        print(f"{task} {length} docs, seed {seed}: {samples} samples, {chunks} chunks, {differing} numbered differently",
              flush=True)
    documents = []
    for path in args.documents:
        texts = [chunk.text for chunk in Chunker(tokenizer, EvidenceStrategy.default_chunk_tokens).chunks(
            open_document(path).segments())]
        documents.append((Path(path).name, len(texts), cut_pieces(then, texts), cut_pieces(evidence, texts)))
        print(f"{path}: {documents[-1]}", flush=True)
    command = " ".join(["python -m benchmarks.studies.numbering", f"--against {args.against}", *args.documents])
    lines = ["# The evidence strategy's numbering against a past commit", "",
             f"`{command}` (model `{args.model}`'s tokenizer, chunks of "
             f"{EvidenceStrategy.default_chunk_tokens} tokens as the strategy reads them)", "",
             "## The benchmarks' passages", "",
             "| task | documents | data seed | samples | chunks | numbered differently |", "|---|---|---|---|---|---|"]
    lines += [f"| {t} | {n} | {s} | {k} | {c:,} | {d} |" for t, n, s, k, c, d in rows]
    if documents:
        lines += ["", "## Real documents", "",
                  "Numbered sentences (headings aside) that do not end as a sentence does (. ! ? : ;), then and now, "
                  "and their mean length in characters:", "",
                  "| document | chunks | sentences then | not ending then | mean chars then | sentences now | "
                  "not ending now | mean chars now |", "|---|---|---|---|---|---|---|---|"]
        for name, count, (a, a_cut, a_len), (b, b_cut, b_len) in documents:
            lines.append(f"| {name} | {count} | {a:,} | {a_cut:,} ({a_cut / max(1, a):.0%}) | {a_len:.0f} | {b:,} | "
                         f"{b_cut:,} ({b_cut / max(1, b):.0%}) | {b_len:.0f} |")
    report = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0 if all(row[-1] == 0 for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
