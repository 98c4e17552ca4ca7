"""Design questions of our own about docqa's documents: what the design set lacks, asked of a strategy.

docqa's design set (its even-numbered questions) has no *absent* question, and only four aggregates, all "how
many" of a kind the question names. So the evidence design wrote its own against the same documents, each with
a check that code runs over the document's text: ``absent`` (six questions, ``data/docqa-design-absent.jsonl``:
the text lacks what is asked) and ``aggregate`` (``data/docqa-design-aggregate.jsonl``: counts, firsts and lasts,
their golds computed by a regular expression over the text, not by reading) and ``list`` (eight list questions,
``data/docqa-design-list.jsonl``: each gold the items a regular expression finds). Each is read with
``memread``'s own run (as ``memread ask`` does, default model unless ``--model``) and scored with docqa's rule: an
absent question is right when the answer says the document does not say, a list when every item's words are in
the answer, any other when a gold's words are.

    python -m benchmarks.studies.own_questions [--set absent|aggregate|list] [--questions ID,…] [--strategy evidence]
        [--threads 1] [--model M] [--cache FILE.jsonl] [--traces DIR] [--out FILE.md]
    python -m benchmarks.studies.own_questions --set aggregate --check    # the golds against the documents

Rows go to ``--cache`` (a JSONL, default ``own-SET.jsonl`` in the current folder) as they finish, and a second
run skips the questions it holds for the same strategy and code version. The documents are docqa's, fetched and
checked by sha256 at first use (``MEMREAD_DOCQA_DIR`` to use a cache of them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import cell, emit
from benchmarks._helpers.result_files import table as result_table

DATA = Path(__file__).resolve().parents[1] / "data"
SETS = {"absent": DATA / "docqa-design-absent.jsonl", "aggregate": DATA / "docqa-design-aggregate.jsonl",
        "list": DATA / "docqa-design-list.jsonl", "lookup": DATA / "docqa-design-lookup.jsonl"}


def own_questions(name: str = "absent") -> list[dict[str, Any]]:
    path = SETS[name]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def check_absent(question: dict[str, Any], text: str) -> bool:
    """Whether the document's text indeed lacks what the question asks (its ``absent_regex`` finds nothing)."""
    return re.search(question["absent_regex"], text) is None


def computed(question: dict[str, Any], text: str) -> str | None:
    """The answer code computes from the document's text by the question's ``check``: ``count`` (how many times
    its pattern matches), ``distinct`` (how many different first groups it matches: a contents line and its
    section's heading are one section), ``first`` or ``last`` (the first group of the first or last match),
    ``items`` (the different first groups, in order, joined by "; "), searched only inside the first match of
    ``within`` when the check has one (a log's section)."""
    check = dict(question["check"])
    within = check.pop("within", None)
    if within is not None:
        scope = re.search(within, text)
        text = scope.group(0) if scope else ""
    (how, pattern), = check.items()
    matches = list(re.finditer(pattern, text))
    if how == "items":
        return "; ".join(dict.fromkeys(match.group(1) for match in matches)) or None
    if how == "count":
        return str(len(matches))
    if how == "distinct":
        return str(len({match.group(1) for match in matches}))
    if not matches:
        return None
    return (matches[0] if how == "first" else matches[-1]).group(1)


def checked(question: dict[str, Any], text: str) -> bool:
    """Whether the question's gold stands: absent where it is absent, a list's golds are the items code computes,
    else the first gold is what code computes."""
    if question["kind"] == "absent":
        return check_absent(question, text)
    if question["kind"] == "list":
        entries = question.get("entries")
        found = computed(question, text) == "; ".join(question["golds"])
        return found and (entries is None or entries == len(re.findall(question["check"]["items"], text)))
    return bool(computed(question, text) == question["golds"][0])


def right(question: dict[str, Any], answer: str) -> bool:
    """docqa's rule (a gold's words in the answer; absent: the answer says so), and for a list every item's; a
    list longer than an answer writes out (:data:`LISTED` items) is right when the first ones are all in it and it
    says how many items there are: the different ones, or the lines its check finds (``entries``: a version
    uploaded twice is two uploads)."""
    from memread.bench.docqa import docqa_match
    from memread.strategies.evidence.answer import LISTED

    if question["kind"] == "list":
        golds = question["golds"]
        if len(golds) > LISTED:
            counts = {len(golds), question.get("entries", len(golds))}
            return (all(docqa_match(answer, [gold]) for gold in golds[:LISTED])
                    and any(re.search(rf"(?<![\d.]){n}(?![\d.])", answer) for n in counts))
        return bool(golds) and all(docqa_match(answer, [gold]) for gold in golds)
    return docqa_match(answer, question["golds"])


def document_text(doc: str) -> str:
    """A docqa document's text as memread reads it (its loader's segments, in order)."""
    from memread.bench.docqa import document_path
    from memread.ingest import open_document

    return "\n".join(segment.text for segment in open_document(str(document_path(doc))).segments())


def ask(question: dict[str, Any], *, strategy: str, model: str | None, threads: int,
        traces: Path | None = None, source: Path | None = None,
        options: dict[str, Any] | None = None, chunk_tokens: int | None = None) -> dict[str, Any]:
    """Read the question's document (or ``source``, another file) with ``strategy``, its ``options`` and
    ``chunk_tokens`` (None: the strategy's own): the answer, whether it is right, the seconds, the prompt tokens
    and steps of the read."""
    from memread.bench.docqa import document_path
    from memread.events import Answered, StepFinished
    from memread.run import ReadRequest, Run
    from memread.settings import Settings

    request = ReadRequest(source=str(source or document_path(question["doc"])), questions=[question["question"]],
                          settings=Settings(strategy=strategy, options=dict(options or {}),
                                            chunk_tokens=chunk_tokens), model=model,
                          backend_options={"n_threads": threads}, write_trace=traces is not None,
                          trace=traces / f"{question['id']}.jsonl" if traces is not None else None)
    events: list[Any] = []
    started = time.perf_counter()
    run = Run(request.validated())
    try:
        result = run.read(sinks=[events.append])[0]
    finally:
        run.close()
    answer = result.answer or ""  # an absent question's gold is docqa's ABSENT_GOLD: right when it says so
    return {"id": question["id"], "doc": question["doc"], "strategy": strategy, "answer": answer,
            "right": right(question, answer), "seconds": round(time.perf_counter() - started, 1),
            "prompt_tokens": sum(e.prompt_tokens for e in events if isinstance(e, (StepFinished, Answered))),
            "steps": sum(isinstance(e, StepFinished) for e in events)}


def table(rows: Sequence[dict[str, Any]], absent: bool = True) -> str:
    head = "says absent" if absent else "right"
    body = result_table(["question", "document", "strategy", "answer", head, "s"],
                        [[row["id"], row["doc"], row["strategy"], cell(row["answer"], 80),
                          "yes" if row["right"] else "no", f"{row['seconds']:.0f}"] for row in rows])
    right = sum(1 for row in rows if row["right"])
    return f"{body}\n\n{'Said absent' if absent else 'Right'}: {right} of {len(rows)}.\n"


def check_table(questions: Sequence[dict[str, Any]]) -> str:
    texts: dict[str, str] = {}
    rows = []
    for question in questions:
        text = texts.setdefault(question["doc"], document_text(question["doc"]))
        gold = "; ".join(question["golds"]) if question["kind"] == "list" else question["golds"][0]
        rows.append([question["id"], question["doc"], cell(gold, 40),
                     "absent" if question["kind"] == "absent" else cell(computed(question, text) or "—", 40),
                     "yes" if checked(question, text) else "**no**"])
    return result_table(["question", "document", "gold", "computed from the text", "stands"], rows) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    from memread.version import code_id

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="absent")
    parser.add_argument("--strategy", default="evidence")
    parser.add_argument("--model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--questions", help="only these (comma-separated ids)")
    parser.add_argument("--check", action="store_true", help="only check the golds against the documents' text")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--traces", type=Path, help="write each read's trace here (ID.jsonl), to look at")
    parser.add_argument("--chunk-tokens", type=int, help="the passages' size (default: the strategy's own)")
    parser.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a strategy option, as `memread ask -o` takes it")
    args = parser.parse_args(argv)
    if bad := [o for o in args.option if "=" not in o]:
        parser.error(f"-o {bad[0]!r}: give KEY=VALUE")
    options = dict(o.split("=", 1) for o in args.option)
    made = {"chunk_tokens": args.chunk_tokens, "options": options}  # a cached row counts only if read so
    questions = own_questions(args.set)
    if args.questions:
        wanted = args.questions.split(",")
        questions = [q for q in questions if q["id"] in wanted]
    if args.check:
        return emit(check_table(questions), args.out)
    cache = args.cache or Path(f"own-{args.set}.jsonl")
    code = code_id()
    done: dict[str, dict[str, Any]] = {}
    if cache.is_file():
        for line in cache.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if (row.get("strategy") == args.strategy and row.get("code") == code
                    and row.get("chunk_tokens") == args.chunk_tokens and row.get("options", {}) == options):
                done[row["id"]] = row
    rows = []
    for question in questions:
        if question["id"] not in done:
            row = {**ask(question, strategy=args.strategy, model=args.model, threads=args.threads,
                         traces=args.traces, options=options, chunk_tokens=args.chunk_tokens),
                   "code": code, **made}
            with cache.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
            done[question["id"]] = row
            print(f"{row['id']}: {row['answer'][:80]!r} ({row['seconds']:.0f} s)", file=sys.stderr)
        rows.append({**done[question["id"]], "right": right(question, done[question["id"]]["answer"])})  # scored now
    return emit(table(rows, absent=args.set == "absent"), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
