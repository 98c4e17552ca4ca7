"""Chunking throughput: tokens per second through :class:`memread.chunk.Chunker` with tiktoken (cl100k).

    python -m benchmarks.speed.bench_chunk                      # ~10 MB of generated text, 5000-token chunks
    python -m benchmarks.speed.bench_chunk --megabytes 50 --chunk-tokens 2000
    python -m benchmarks.speed.bench_chunk --model /path/to/model.gguf   # also with a GGUF model's own tokenizer
    python -m benchmarks.speed.bench_chunk --json               # one JSON object
    python -m benchmarks.speed.bench_chunk --repeat 3 --out benchmarks/results/chunk   # .md + .json, best of 3

Cases (each generated, deterministic, never written to the repository):

* ``prose``: paragraphs of sentences, cut into 256 KiB segments at line breaks as the text loader does;
* ``log``: one log line after another, no blank lines;
* ``one-line``: words separated by spaces and no newline at all (a 10 MB JSON line);
* ``no-spaces``: a base64-like run, so every cut is the last resort inside a "word";
* ``ingest+chunk``: the prose written to a file and read through ``memread.ingest.open_document``.

``raw`` is one ``encode`` of the whole text with the same tokenizer: the ratio chunking/raw shows the
chunker's cost (it tokenises each character about twice, so about 0.5 is the ceiling). With ``--repeat N``
each case is chunked and encoded N times, alternating, and the fastest of each is kept, which is what a busy
machine disturbs least.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks._helpers import result_files
from memread.chunk import Chunker
from memread.document import Provenance, Segment
from memread.tokens import TiktokenTokenizer, Tokenizer

SEGMENT_CHARS = 256 * 1024
VOCABULARY = (  # noqa: SIM905 (a sentence of words reads better than a list literal)
    "the of and to in a is that for it as was with be by on not he I this are or his from at which but "
    "have an they you were her she there one all we can their has been if more when will would who so no "
    "memory chunk budget context window model reading document page chapter question answer evidence "
    "summary notes river mountain engine protocol algorithm hospital committee revenue quarter migration "
    "kernel lattice theorem"
).split()


def prose(rng: random.Random, chars: int) -> str:
    weights = [1 / (rank + 1) for rank in range(len(VOCABULARY))]  # Zipf-like, as in real text
    parts: list[str] = []
    size = 0
    while size < chars:
        lines = []
        for _ in range(rng.randint(1, 8)):
            words = rng.choices(VOCABULARY, weights, k=rng.randint(6, 30))
            lines.append(" ".join(words).capitalize() + rng.choice([".", ".", ".", "?", "!", ";", ","]))
        paragraph = " ".join(lines[:3]) + ("\n" + "\n".join(lines[3:]) if lines[3:] else "") + "\n\n"
        parts.append(paragraph)
        size += len(paragraph)
    return "".join(parts)


def log(rng: random.Random, chars: int) -> str:
    parts: list[str] = []
    size = n = 0
    while size < chars:
        n += 1
        level = rng.choice(["INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG"])
        line = (
            f"2026-11-22T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.{rng.randrange(1000):03d}Z {level} "
            f"worker-{rng.randrange(16)} req={rng.getrandbits(32):08x} path=/api/v1/items/{rng.randrange(10**6)} "
            f"status={rng.choice([200, 200, 201, 404, 500])} took={rng.randrange(2000)}ms\n"
        )
        parts.append(line)
        size += len(line)
    return "".join(parts)


def one_line(rng: random.Random, chars: int) -> str:
    return prose(rng, chars).replace("\n", " ")[:chars]


def no_spaces(rng: random.Random, chars: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    return "".join(rng.choices(alphabet, k=chars))


def segments(text: str, source: str) -> list[Segment]:
    """Line-ranged segments of at most SEGMENT_CHARS, cut at a line break when there is one (like the loader)."""
    out: list[Segment] = []
    start, line = 0, 1
    while start < len(text):
        end = min(len(text), start + SEGMENT_CHARS)
        if end < len(text):
            end = text.rfind("\n", start, end) + 1 or end
        piece = text[start:end]
        out.append(Segment(piece, Provenance(source, line_start=line)))
        line += piece.count("\n")
        start = end
    return out


def measure(
    tokenizer: Tokenizer, budget: int, make_segments: Callable[[], Iterator[Segment]], raw_text: str | None,
    repeat: int = 1,
) -> dict[str, float]:
    seconds = raw_seconds = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        chunks = list(Chunker(tokenizer, budget).chunks(make_segments()))
        seconds = min(seconds, time.perf_counter() - start)
        if raw_text is not None:
            start = time.perf_counter()
            tokenizer.encode(raw_text)
            raw_seconds = min(raw_seconds, time.perf_counter() - start)
    tokens = sum(chunk.tokens for chunk in chunks)
    full = [chunk.tokens for chunk in chunks[:-1]] or [chunks[-1].tokens]
    result = {
        "megabytes": sum(len(chunk.text) for chunk in chunks) / 1e6,
        "tokens": tokens,
        "chunks": len(chunks),
        "seconds": round(seconds, 3),
        "mtok_per_s": round(tokens / seconds / 1e6, 3),
        "mean_fill": round(sum(full) / len(full) / budget, 3),
        "largest": max(chunk.tokens for chunk in chunks),
    }
    if raw_text is not None:
        result["raw_mtok_per_s"] = round(tokens / raw_seconds / 1e6, 3)
        result["ratio_to_raw"] = round(raw_seconds / seconds, 3)
    return result


def run(tokenizer: Tokenizer, megabytes: float, budget: int, cases: list[str],
        repeat: int = 1) -> dict[str, dict[str, float]]:
    chars = int(megabytes * 1_000_000)
    results: dict[str, dict[str, float]] = {}
    makers = {"prose": prose, "log": log, "one-line": one_line, "no-spaces": no_spaces}
    for name in cases:
        if name == "ingest+chunk":
            from memread.ingest import open_document

            text = prose(random.Random(1), chars)
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "book.txt"
                path.write_text(text, encoding="utf-8")
                del text
                results[name] = measure(
                    tokenizer, budget, lambda path=path: open_document(str(path)).segments(), None, repeat
                )
            continue
        text = makers[name](random.Random(1), chars)
        pieces = segments(text, f"{name}.txt")
        results[name] = measure(tokenizer, budget, lambda pieces=pieces: iter(pieces), text, repeat)
        del text, pieces
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--megabytes", type=float, default=10.0, help="size of each generated text (default 10)"
    )
    parser.add_argument("--chunk-tokens", type=int, default=5000)
    parser.add_argument(
        "--cases", nargs="+", default=["prose", "log", "one-line", "no-spaces", "ingest+chunk"]
    )
    parser.add_argument("--model", help="also measure with this GGUF model's own tokenizer (vocabulary only)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeat", type=int, default=1, help="runs per case; the fastest is kept (default 1)")
    parser.add_argument("--out", help="also write OUT.md and OUT.json (figures, command, machine load)")
    args = parser.parse_args()

    load_before = os.getloadavg()
    tokenizers: list[Tokenizer] = [TiktokenTokenizer()]
    if args.model:
        from memread.backends.llamacpp import LlamaTokenizer

        tokenizers.append(LlamaTokenizer(args.model))
    report = {tok.name: run(tok, args.megabytes, args.chunk_tokens, args.cases, args.repeat)
              for tok in tokenizers}
    if args.out:
        write_result(args.out, report, args.megabytes, args.chunk_tokens, args.repeat, load_before)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"chunking {args.megabytes:g} MB per case into chunks of at most {args.chunk_tokens} tokens")
    columns = (
        "megabytes",
        "tokens",
        "chunks",
        "seconds",
        "mtok_per_s",
        "raw_mtok_per_s",
        "ratio_to_raw",
        "mean_fill",
        "largest",
    )
    for name, results in report.items():
        print(f"\n{name}")
        print(f"  {'case':<13}" + "".join(f"{c:>15}" for c in columns))
        for case, row in results.items():
            print(f"  {case:<13}" + "".join(f"{row.get(c, ''):>15}" for c in columns))


def write_result(out: str, report: dict[str, dict[str, dict[str, float]]], megabytes: float, budget: int,
                 repeat: int, load_before: tuple[float, ...]) -> None:
    sections = []
    for name, results in report.items():
        rows = [[case, f"{row['megabytes']:.1f}", f"{row['tokens']:,}", row["chunks"],
                 f"{row['mtok_per_s']:.2f}", f"{row['raw_mtok_per_s']:.2f}" if "raw_mtok_per_s" in row else "—",
                 f"{row['ratio_to_raw']:.2f}" if "ratio_to_raw" in row else "—", row["mean_fill"], row["largest"]]
                for case, row in results.items()]
        sections.append(f"Tokenizer `{name}`:\n\n" + result_files.table(
            ["case", "MB", "tokens", "chunks", "chunking M tok/s", "plain encode M tok/s", "ratio", "mean fill",
             "largest chunk"], rows))
    ratios = [row["ratio_to_raw"] for results in report.values() for row in results.values() if "ratio_to_raw" in row]
    body = f"""
Each case is about {megabytes:g} MB of generated text (see the script's docstring), cut by `memread.chunk.Chunker` into chunks of at most {budget} tokens; {"the fastest of " + str(repeat) + " runs, chunking and plain encoding alternated" if repeat > 1 else "one run"}. "Plain encode" is one `encode` of the whole text with the same tokenizer, in the same run, and "ratio" is chunking speed ÷ plain encode speed: the chunker's own cost, which stays meaningful on a busy machine (it tokenizes each character about twice, so about 0.5 is the ceiling). **Chunking ran at {min(ratios):.2f}–{max(ratios):.2f} of the speed of a plain encode.**

{chr(10).join(sections)}

"ingest+chunk" reads the prose from a file through `memread.ingest.open_document`: it has no plain-encode column. "mean fill" is the mean size of the chunks but the last, as a share of the budget.
"""
    result_files.write(out, title="Chunking throughput", body=body,
                       data={"megabytes": megabytes, "chunk_tokens": budget, "repeat": repeat, "results": report},
                       load_before=load_before, load_after=os.getloadavg())


if __name__ == "__main__":
    main()
