"""Our own lookups asked of short documents: a window of the real document around each answer, read as a text file.

docqa's documents are 175 to 1,944 passages long, so a rule that changes how `evidence` reads a *short* document
(v40's round of a quarter of the document, ``round_share``) reaches none of them: HotpotQA at 50 documents was the
only short document measured. This study makes short real documents: for each chosen lookup of ours (design
questions, ``data/docqa-design-lookup.jsonl``), a window of ``--chars`` characters of its document's text holding
the first place its gold is found, at an offset drawn from the question's id, and never within 3,000 characters of
a held-out docqa answer (:mod:`benchmarks.studies.regions`). The same window is read under each ``-o`` setting
given, so the reads pair.

    python -m benchmarks.studies.short_documents --questions ID,… --option round_share=1 --option round_share=0.25 \\
        [--chars 24000] [--threads 1] [--cache FILE.jsonl] [--out FILE.md]

Rows (right, seconds, prompt tokens) go to ``--cache`` as they finish; a second run skips what it holds for the
same code version. The windows are third-party text: they are written to a temporary folder and deleted.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import emit

DEFAULT_CHARS = 24000  # about 7K tokens: HotpotQA's 50 documents, 19 to 27 passages


def window(question: dict[str, Any], text: str, spans: Sequence[tuple[int, int]], chars: int) -> str | None:
    """``chars`` characters of ``text`` holding the question's gold where it is first found, cut at line ends,
    at an offset drawn from its id, touching no hidden span; None when no such window exists."""
    from benchmarks.studies.regions import allowed

    check = question.get("check", {}).get("first")
    found = re.search(check, text) if check else None
    if found is None:
        found = re.search(re.escape(str(question["golds"][0])), text, re.IGNORECASE)
    if found is None:
        return None
    rng = random.Random(question["id"])
    earliest, latest = max(0, found.end() - chars), min(found.start(), max(0, len(text) - chars))
    for _ in range(200):
        start = rng.randint(earliest, max(earliest, latest))
        if allowed(start, start + chars, spans):
            start = text.rfind("\n", 0, start) + 1
            end = text.find("\n", start + chars)
            return text[start:end if end > 0 else len(text)]
    return None


def parse_option(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME=VALUE`` (VALUE as JSON) as (the setting's label, its options); ValueError when it is not one."""
    name, _, value = text.partition("=")
    try:
        return text, {name: json.loads(value)}
    except json.JSONDecodeError:
        raise ValueError(f"--option {text!r}: give NAME=VALUE with a JSON value, e.g. round_share=0.25") from None


def table(rows: Sequence[dict[str, Any]], settings: Sequence[str]) -> str:
    from memread.bench.stats import paired

    by = {(r["id"], r["setting"]): r for r in rows}
    ids = sorted({r["id"] for r in rows if all((r["id"], s) in by for s in settings)})
    lines = ["| question | " + " | ".join(f"`{s}`: right, seconds, prompt tokens, steps" for s in settings) + " |",
             "|---|" + "---|" * len(settings)]
    for qid in ids:
        cells = [f"{'yes' if by[qid, s]['right'] else 'no'}, {by[qid, s]['seconds']:.0f}, "
                 f"{by[qid, s]['prompt_tokens']}, {by[qid, s]['steps']}" for s in settings]
        lines.append(f"| {qid} | " + " | ".join(cells) + " |")
    lines.append("")
    for s in settings:
        right = sum(by[q, s]["right"] for q in ids)
        lines.append(f"- `{s}`: {right} of {len(ids)} right, {sum(by[q, s]['seconds'] for q in ids):.0f} s, "
                     f"{sum(by[q, s]['prompt_tokens'] for q in ids)} prompt tokens")
    if len(settings) == 2 and ids:
        a, b = ([float(by[q, s]["right"]) for q in ids] for s in settings)
        diff = paired(b, a, seed="short-documents")
        lines.append(f"- `{settings[1]}` − `{settings[0]}`: {100 * diff.difference:+.1f} points "
                     f"[{100 * diff.interval.low:+.1f}, {100 * diff.interval.high:+.1f}] on {diff.n} questions, "
                     f"{diff.a_better} to {diff.b_better}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.studies.own_questions import ask, document_text, own_questions
    from benchmarks.studies.regions import hidden
    from memread.version import code_id

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", required=True, help="comma-separated ids of our own lookups")
    parser.add_argument("--option", action="append", required=True, help="an evidence option, NAME=VALUE (JSON)")
    parser.add_argument("--chars", type=int, default=DEFAULT_CHARS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=Path("short-documents.jsonl"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    wanted = args.questions.split(",")
    questions = [q for q in own_questions("lookup") if q["id"] in wanted]
    try:
        settings = [parse_option(text) for text in args.option]
    except ValueError as error:
        parser.error(str(error))
    code = code_id()
    done = {}
    if args.cache.is_file():
        for line in args.cache.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("code") == code and row.get("chars") == args.chars:
                done[row["id"], row["setting"]] = row
    texts: dict[str, tuple[str, list[tuple[int, int]]]] = {}
    with tempfile.TemporaryDirectory(prefix="memread-short-") as folder:
        for question in questions:
            if all((question["id"], s) in done for s, _ in settings):
                continue
            if question["doc"] not in texts:
                text = document_text(question["doc"])
                texts[question["doc"]] = (text, hidden(question["doc"], text))
            text, spans = texts[question["doc"]]
            cut = window(question, text, spans, args.chars)
            if cut is None:
                print(f"{question['id']}: no window holds its answer away from the held-out ones", file=sys.stderr)
                continue
            path = Path(folder) / f"{question['id']}.txt"
            path.write_text(cut, encoding="utf-8")
            for setting, options in settings:
                if (question["id"], setting) in done:
                    continue
                row = {**ask(question, strategy="evidence", model=None, threads=args.threads, source=path,
                             options=options),
                       "setting": setting, "chars": args.chars, "code": code}
                with args.cache.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                done[question["id"], setting] = row
                print(f"{row['id']} {setting}: {'right' if row['right'] else 'wrong'} ({row['seconds']:.0f} s, "
                      f"{row['prompt_tokens']} tokens)", file=sys.stderr)
    rows = [done[q["id"], s] for q in questions for s, _ in settings if (q["id"], s) in done]
    return emit(table(rows, [s for s, _ in settings]), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
