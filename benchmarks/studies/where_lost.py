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

    python -m benchmarks.studies.where_lost TRACE.jsonl ... [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import emit
from benchmarks._helpers.result_files import table as result_table

STAGES = ("not read", "read, not answered", "answered, not chosen", "right")


def stage(question: dict[str, Any], records: Sequence[dict[str, Any]], holds: Any) -> tuple[str, int, int]:
    """The stage the traced read stands at, and its read steps shown the gold: (stage, right, all).
    ``holds(chunk)``: whether the passage numbered ``chunk`` holds the gold."""
    from benchmarks.studies.own_questions import right
    from memread.strategies.evidence.reading import step_answer

    shown = answered = 0
    any_right = False
    for record in records:
        if record.get("type") != "step_finished" or "check" in (record.get("decisions") or {}):
            continue  # a select step reads no passage
        said = step_answer(str(record.get("reply") or ""))
        good = said is not None and right(question, said)
        any_right |= good
        chunk = record.get("chunk")
        index = chunk.get("index") if isinstance(chunk, dict) else chunk  # a trace writes the chunk's record
        if isinstance(index, int) and holds(index):
            shown += 1
            answered += good
    final = next((r.get("answer") for r in records if r.get("type") == "answered"), None)
    if final is not None and right(question, str(final)):
        return "right", answered, shown
    if any_right:
        return "answered, not chosen", answered, shown
    return ("read, not answered" if shown else "not read"), answered, shown


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", type=Path, help="TRACE.jsonl, named by a lookup's id")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    from benchmarks.studies.expansion_probe import holds
    from benchmarks.studies.own_questions import own_questions
    from benchmarks.studies.select_probe import trace_chunks

    lookups = {q["id"]: q for q in own_questions("lookup")}
    for path in args.traces:
        if not path.is_file() or path.name.split(".")[0] not in lookups:
            parser.error(f"{str(path)!r}: give a trace file that exists, named by one of our lookups' ids")
    cut: dict[str, Any] = {}
    rows = []
    steps: Counter[bool] = Counter()
    for path in args.traces:
        question = lookups[path.name.split(".")[0]]
        try:
            records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            chunks = trace_chunks(path, cut)
        except (ValueError, KeyError):
            parser.error(f"{str(path)!r}: not a memread trace (JSON Lines of a traced read)")
        if not chunks:
            parser.error(f"{str(path)!r}: the document it read is not on this machine")
        where, good, shown = stage(question, records, lambda c, q=question, cs=chunks: holds(q, cs[c].text))
        steps.update({True: good, False: shown - good})
        rows.append([question["id"], question["kind"], where, f"{good} of {shown}"])
    counts = Counter(row[2] for row in rows)
    body = result_table(["question", "kind", "stands at", "read steps shown the gold, right"], rows)
    funnel = result_table(["stage", "reads"], [[s, counts.get(s, 0)] for s in STAGES])
    return emit(f"{funnel}\n\nRead steps shown a passage holding the gold: {steps[True] + steps[False]}, "
                f"answered right {steps[True]}.\n\n{body}\n", args.out)


if __name__ == "__main__":
    raise SystemExit(main())
