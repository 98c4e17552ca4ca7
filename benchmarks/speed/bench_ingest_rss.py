"""Ingestion benchmarks: PDF pages per second, and RSS while a large log streams through stdin.

    python -m benchmarks.speed.bench_ingest_rss pdf --pages 500
    python -m benchmarks.speed.bench_ingest_rss stdin --megabytes 100 1000          # ingest only
    python -m benchmarks.speed.bench_ingest_rss stdin --megabytes 100 1000 --chunk  # ingest + chunk (tiktoken, 5000)
    python -m benchmarks.speed.bench_ingest_rss stdin --megabytes 100 1000 --out benchmarks/results/stdin-rss
    python -m benchmarks.speed.bench_ingest_rss stdin --megabytes 100 1000 --spool --out benchmarks/results/stdin-rss-spool

``stdin`` pipes a generated log (realistic lines, never held in memory) from one process into another that only
opens ``-`` and iterates its segments (optionally its chunks), and reports the reader's peak RSS (ru_maxrss) and
throughput for each size. Flat memory means the peak RSS does not grow with the input size.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def bench_pdf(pages: int) -> dict[str, float]:
    from memread.ingest import open_document
    from memread.testing.documents import build_pdf

    paragraph = (
        "The harbour master counted the boats every morning and wrote the number in a ledger. "
        "Some days the fog was so thick that he counted by the sound of the bells instead. "
    ) * 6
    with tempfile.TemporaryDirectory() as tmp:
        path = build_pdf(Path(tmp) / "bench.pdf", [f"Page {n}. {paragraph}" for n in range(1, pages + 1)])
        start = time.perf_counter()
        document = open_document(str(path))
        characters = sum(len(segment.text) for segment in document.segments())
        seconds = time.perf_counter() - start
    return {
        "pages": pages,
        "seconds": round(seconds, 2),
        "pages_per_second": round(pages / seconds, 1),
        "characters": characters,
        "peak_rss_mb": round(_peak_rss_mb(), 1),
    }


def generate(megabytes: int) -> None:
    """Write ``megabytes`` MiB of log lines to stdout without holding them in memory."""
    out = sys.stdout.buffer
    target = megabytes * 1024 * 1024
    written = number = 0
    while written < target:
        block = "".join(
            f"2026-11-22T07:{n // 60 % 60:02d}:{n % 60:02d}Z {'ERROR' if n % 97 == 0 else 'INFO'} "
            f"worker-{n % 7} request {n} path=/api/v1/items/{n % 1000} status=200 took {n % 300} ms\n"
            for n in range(number, number + 2000)
        ).encode()
        number += 2000
        out.write(block)
        written += len(block)


def consume(chunk: bool, spool: bool = False) -> None:
    """Read stdin as memread does and print peak RSS and throughput as JSON. ``spool``: also keep every chunk
    aside and indexed, as the evidence strategy does before it reads (memread.chunkstore), and count the files
    left in TMPDIR while the store is open."""
    from memread.ingest import open_document

    start = time.perf_counter()
    document = open_document("-", stdin=sys.stdin.buffer)
    segments = document.segments()
    count = characters = tokens = 0
    if spool:
        from memread.chunk import Chunker
        from memread.chunkstore import ChunkStore
        from memread.tokens import default_tokenizer

        store = ChunkStore()
        store.add_all(Chunker(default_tokenizer(), 1500).chunks(segments))
        count, tokens = len(store), store.tokens
        characters = document.stats.characters
        scored = len(store.top("disk error worker", 200))
        visible = len(os.listdir(tempfile.gettempdir()))
        store.close()
    elif chunk:
        from memread.chunk import Chunker
        from memread.tokens import default_tokenizer

        for piece in Chunker(default_tokenizer(), 5000).chunks(segments):
            count += 1
            characters += len(piece.text)
            tokens += piece.tokens
    else:
        for segment in segments:
            count += 1
            characters += len(segment.text)
    seconds = time.perf_counter() - start
    result = {
        "units": count,
        "characters": characters,
        "lines": document.stats.lines,
        "seconds": round(seconds, 2),
        "mb_per_second": round(characters / seconds / 1e6, 1),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
    }
    if chunk or spool:
        result["tokens"] = tokens
        result["tokens_per_second"] = round(tokens / seconds)
    if spool:
        result["best_matches_of_a_query"] = scored
        result["files_in_tmpdir_while_open"] = visible
    print(json.dumps(result))


def bench_stdin(megabytes: int, chunk: bool, spool: bool = False) -> dict[str, object]:
    me = [sys.executable, "-m", "benchmarks.speed.bench_ingest_rss"]  # run from the repository root
    producer = subprocess.Popen([*me, "_generate", str(megabytes)], stdout=subprocess.PIPE)
    # The reader's own TMPDIR, so what it leaves there shows; tiktoken's encoding cache (which it keeps in
    # TMPDIR/data-gym-cache unless told otherwise) goes elsewhere, as it is not memread's.
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryDirectory() as tiktoken_cache:
        reader = subprocess.run(
            [*me, "_consume", *(["--chunk"] if chunk else []), *(["--spool"] if spool else [])],
            stdin=producer.stdout,
            capture_output=True,
            check=True,
            env={**os.environ, "TMPDIR": scratch, "TIKTOKEN_CACHE_DIR": tiktoken_cache},
        )
        left = len(os.listdir(scratch))
    assert producer.stdout is not None
    producer.stdout.close()
    producer.wait()
    return {"input_mb": megabytes, "chunk": chunk, "spool": spool, **json.loads(reader.stdout),
            "files_left_in_tmpdir": left}


def write_stdin_result(out: str, results: list[dict[str, Any]], chunk: bool,
                       load_before: tuple[float, ...], spool: bool = False) -> None:
    from benchmarks._helpers import result_files

    what = "ingested and chunked (tiktoken cl100k, 5,000-token chunks)" if chunk else "ingested (segments only)"
    if spool:
        what = ("ingested, chunked (tiktoken cl100k, 1,500-token chunks) and kept aside with a full-text index, as "
                "the evidence strategy does before reading (memread.chunkstore: SQLite's private temporary "
                "database); files in TMPDIR are counted while the store is open and after the process ends")
        chunk = True
    rows = [[f"{r['input_mb']:,}", f"{r['lines']:,}", r["units"], r["seconds"], r["mb_per_second"],
             *([f"{r['tokens']:,}"] if chunk else []), f"**{r['peak_rss_mb']}**",
             *([r["files_in_tmpdir_while_open"], r["files_left_in_tmpdir"]] if spool else [])] for r in results]
    header = ["input MiB", "lines", "chunks" if chunk else "segments", "seconds", "MB/s",
              *(["tokens"] if chunk else []), "peak RSS MB (reader)",
              *(["files in TMPDIR (open)", "files left"] if spool else [])]
    growth = ""
    if len(results) > 1:
        first, last = results[0], results[-1]
        growth = (f"Input grew {last['input_mb'] / first['input_mb']:g}×, the reader's peak RSS "
                  f"{last['peak_rss_mb'] / first['peak_rss_mb']:.2f}×.")
    body = f"""
A generated log (realistic lines, never held in memory) is piped from one process into another that opens `-` with `memread.ingest.open_document`, as `memread ask -` does, and is {what}. Peak RSS is the reading process's `ru_maxrss` (Python, memread and, with chunking, tiktoken included).

{result_files.table(header, rows)}

{growth}
"""
    result_files.write(out, title="Memory while streaming a log through stdin", body=body,
                       data={"chunk": chunk, "results": results}, load_before=load_before,
                       load_after=os.getloadavg(), ratios=False)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    pdf = commands.add_parser("pdf", help="PDF extraction speed on an fpdf2-generated text PDF")
    pdf.add_argument("--pages", type=int, default=500)
    stdin = commands.add_parser("stdin", help="peak RSS while a generated log streams through stdin")
    stdin.add_argument("--megabytes", type=int, nargs="+", default=[100, 1000])
    stdin.add_argument("--chunk", action="store_true", help="also chunk (tiktoken, 5000-token budget)")
    stdin.add_argument("--spool", action="store_true",
                       help="chunk (1,500 tokens) and keep every chunk aside, indexed, as the evidence strategy does")
    stdin.add_argument("--out", help="also write OUT.md and OUT.json (figures, command, machine load)")
    commands.add_parser("_generate").add_argument("megabytes", type=int)
    consume_parser = commands.add_parser("_consume")
    consume_parser.add_argument("--chunk", action="store_true")
    consume_parser.add_argument("--spool", action="store_true")
    args = parser.parse_args()

    if args.command == "pdf":
        print(json.dumps(bench_pdf(args.pages)))
    elif args.command == "stdin":
        load_before = os.getloadavg()
        results = [bench_stdin(size, args.chunk, args.spool) for size in args.megabytes]
        for result in results:
            print(json.dumps(result))
        if len(results) > 1:
            growth = results[-1]["peak_rss_mb"] / results[0]["peak_rss_mb"]  # type: ignore[operator]
            print(
                json.dumps(
                    {"input_growth": args.megabytes[-1] / args.megabytes[0], "rss_growth": round(growth, 2)}
                )
            )
        if args.out:
            write_stdin_result(args.out, results, args.chunk, load_before, args.spool)
    elif args.command == "_generate":
        generate(args.megabytes)
    else:
        consume(args.chunk, args.spool)


if __name__ == "__main__":
    main()
