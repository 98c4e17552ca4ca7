"""Where traced design lookups lose their answer: not read, read and not answered, or answered and not chosen.

A design tool, no model run. For each traced read of one of our lookups (``own_questions --set lookup --traces
DIR``, a trace named by the question's id), the document is cut as `evidence` cuts it, and each passage a read
step was shown is checked for the gold (:func:`benchmarks.studies.expansion_probe.holds`: the lookup's check
pattern, its gold as the first match). A read then stands at the first of:

* **not read**: no passage it read holds the gold;
* **read, not answered**: a read step was shown a passage holding it, and no read step's answer is right;
* **answered, not chosen**: some read step answered right, the read's answer is not;
* **right**: the read's answer is right (docqa's rule, as ``own_questions`` scores).

Also counted: the read steps shown a passage holding the gold, by whether their answer is right.

    python -m benchmarks.studies.where_lost [TRACE.jsonl ...] [--replay FOLDER ...] [--out FILE.md]

``--replay FOLDER``: a ``memread bench`` folder's design reads (docqa's even-numbered questions, HotpotQA's
design seed), replayed with their own replies; a passage holds the gold when a gold stands in what the step
showed of it.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import emit
from benchmarks._helpers.result_files import table as result_table

STAGES = ("not read", "read, not answered", "answered, not chosen", "right")


def stage(steps: Sequence[tuple[str, bool]], final: str | None, right: Callable[[str], bool]) -> tuple[str, int, int]:
    """The stage a read stands at, and its read steps shown the gold: (stage, right, all). ``steps``: each read
    step's reply and whether its passage holds the gold; ``final``: the read's answer."""
    from memread.strategies.evidence.reading import step_answer

    shown = answered = 0
    any_right = False
    for reply, holds in steps:
        said = step_answer(reply)
        good = said is not None and right(said)
        any_right |= good
        if holds:
            shown += 1
            answered += good
    if final is not None and right(final):
        return "right", answered, shown
    if any_right:
        return "answered, not chosen", answered, shown
    return ("read, not answered" if shown else "not read"), answered, shown


def traced_steps(records: Sequence[dict[str, Any]], holds: Callable[[int], bool]) -> list[tuple[str, bool]]:
    """A trace's read steps: (reply, whether the passage numbered as its chunk holds the gold)."""
    return [(str(record.get("reply") or ""), held) for record, held in read_records(records, holds)]


def read_records(records: Sequence[dict[str, Any]], holds: Callable[[int], bool]
                 ) -> list[tuple[dict[str, Any], bool]]:
    """A trace's read step records, each with whether the passage numbered as its chunk holds the gold."""
    found = []
    for record in records:
        if record.get("type") != "step_finished" or "check" in (record.get("decisions") or {}):
            continue  # a select step reads no passage
        chunk = record.get("chunk")
        index = chunk.get("index") if isinstance(chunk, dict) else chunk  # a trace writes the chunk's record
        found.append((record, isinstance(index, int) and holds(index)))
    return found


def replayed_read_steps(calls: Sequence[tuple[str, str]], golds: Sequence[str]) -> list[tuple[str, str, bool]]:
    """A replayed read's read steps among its (prompt, reply) calls: (prompt, reply, whether a gold stands in what
    the step showed of the document, case and spacing aside)."""
    from benchmarks.studies.expansion_probe import holds
    from benchmarks.studies.reask_probe import passage_text

    found = {"golds": [str(gold) for gold in golds]}
    return [(prompt, reply, holds(found, passage_text(prompt))) for prompt, reply in calls
            if prompt.startswith("[Passage ")]


def replayed(folder: Path) -> Iterator[list[Any]]:
    """A row for each of ``folder``'s design reads, replayed with its own replies: a passage holds the gold when
    a gold stands in what the step showed of it, case and spacing aside (docqa's and HotpotQA's golds have no
    check pattern)."""
    from benchmarks.studies import replay_reads

    for result, score, now in replay_reads.replayed(folder):
        steps = [(reply, held) for _, reply, held in replayed_read_steps(now["calls"], result["golds"])]
        prediction = result.get("prediction")
        where, good, shown = stage(steps, None if prediction is None else str(prediction),
                                   partial(_right_replayed, list(result["golds"]), score))
        kind = (score.get("docqa") or {}).get("kind") or f"{score.get('task')}-{score.get('length')}"
        yield [replay_reads.sample_id(score), kind, where, f"{good} of {shown}"]


def _holds_chunk(question: dict[str, Any], chunks: Sequence[Any], index: int) -> bool:
    from benchmarks.studies.expansion_probe import holds

    return holds(question, chunks[index].text)


def _right_replayed(golds: list[str], score: dict[str, Any], said: str) -> bool:
    from benchmarks.studies.replay_reads import right

    return right(said, golds, score)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="*", type=Path, help="TRACE.jsonl, named by a lookup's id")
    parser.add_argument("--replay", action="append", default=[], type=Path, metavar="FOLDER",
                        help="a memread bench folder's design reads (docqa's even-numbered, HotpotQA's design seed)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    from benchmarks.studies.own_questions import own_questions, right
    from benchmarks.studies.select_probe import trace_chunks

    if not args.traces and not args.replay:
        parser.error("give traces, --replay FOLDER, or both")
    lookups = {q["id"]: q for q in own_questions("lookup")}
    for path in args.traces:
        if not path.is_file() or path.name.split(".")[0] not in lookups:
            parser.error(f"{str(path)!r}: give a trace file that exists, named by one of our lookups' ids")
    for folder in args.replay:
        if not (folder / "results.jsonl").is_file():
            parser.error(f"{str(folder)!r}: not a memread bench folder (no results.jsonl)")
    cut: dict[str, Any] = {}
    rows = []
    for path in args.traces:
        question = lookups[path.name.split(".")[0]]
        try:
            records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            chunks = trace_chunks(path, cut)
        except (ValueError, KeyError):
            parser.error(f"{str(path)!r}: not a memread trace (JSON Lines of a traced read)")
        if not chunks:
            parser.error(f"{str(path)!r}: the document it read is not on this machine")
        steps = traced_steps(records, partial(_holds_chunk, question, chunks))
        final = next((r.get("answer") for r in records if r.get("type") == "answered"), None)
        where, good, shown = stage(steps, None if final is None else str(final),
                                   partial(right, question))
        rows.append([question["id"], question["kind"], where, f"{good} of {shown}"])
    for folder in args.replay:
        rows.extend(replayed(folder))
    counts = Counter(row[2] for row in rows)
    shown_right = sum(int(row[3].split(" of ")[0]) for row in rows)
    shown_all = sum(int(row[3].split(" of ")[1]) for row in rows)
    body = result_table(["read", "kind", "stands at", "read steps shown the gold, right"], rows)
    funnel = result_table(["stage", "reads"], [[s, counts.get(s, 0)] for s in STAGES])
    return emit(f"{funnel}\n\nRead steps shown a passage holding the gold: {shown_all}, answered right "
                f"{shown_right}.\n\n{body}\n", args.out)


if __name__ == "__main__":
    raise SystemExit(main())
