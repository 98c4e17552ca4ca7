"""Chunk real documents with the default model's tokenizer and print, per document and budget, the number of
chunks, a digest of every chunk's text and token count, and the seconds it took: run it on two checkouts to
show that a change to counting changes no chunk, and what it saves.

    python -m benchmarks.speed.bench_chunk_digests --out /tmp/after.json          # this checkout
    (cd ../before && python -m benchmarks.speed.bench_chunk_digests --out /tmp/before.json)

The documents are docqa's five (``memread bench docqa`` fetches them into ``MEMREAD_DOCQA_DIR``) and the
repository's sample report; the budgets are evidence's passages (400 tokens) and the papers' chunks (5,000).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from pathlib import Path

from memread import models
from memread.ask import open_source
from memread.backends.llamacpp import LlamaTokenizer
from memread.chunk import Chunker

DOCQA = ("binutils-changelog.Debian.txt", "gcc-12-test-summary.log", "developers-reference.epub",
         "debian-handbook-html", "octave.pdf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docqa-dir", default=os.environ.get("MEMREAD_DOCQA_DIR"),
                        help="where docqa's documents are (default: $MEMREAD_DOCQA_DIR)")
    parser.add_argument("--model", default=models.DEFAULT_MODEL)
    parser.add_argument("--out", default=None, help="a JSON file for the figures")
    args = parser.parse_args()
    documents = [Path(args.docqa_dir) / name for name in DOCQA] if args.docqa_dir else []
    documents.append(Path(__file__).resolve().parents[2] / "docs" / "sample" / "harbour-report.md")
    tokenizer = LlamaTokenizer(models.resolve(args.model))
    found: dict[str, dict[str, object]] = {}
    for document in documents:
        for budget in (400, 5000):
            begun = time.perf_counter()
            digest = hashlib.sha256()
            chunks = 0
            for chunk in Chunker(tokenizer, budget).chunks(open_source(str(document)).segments()):
                digest.update(f"{chunk.tokens}\x00{chunk.text}\x01".encode("utf-8", "surrogatepass"))
                chunks += 1
            found[f"{document.name}@{budget}"] = {"chunks": chunks, "digest": digest.hexdigest()[:16],
                                                  "seconds": round(time.perf_counter() - begun, 1)}
            print(f"{document.name} at {budget} tokens: {found[f'{document.name}@{budget}']}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
