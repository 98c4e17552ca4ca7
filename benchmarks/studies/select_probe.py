"""The select step of recorded `evidence` reads, asked of the model again as it was made and in variants.

A design tool: given traces of design reads (``own_questions --traces``) and each one's gold, it rebuilds the
select step's prompt from the state before it (the lines kept, the round's answers and their support) and asks
the default model that prompt and three variants: the lines most about the question first (by their answer's
support), only the lines an answer was found on, and those by support. It prints what the model answers to
each and whether that is right (docqa's rule): whether a select step's wrong answer comes from how its lines are
laid out or from what they say.

    python -m benchmarks.studies.select_probe TRACE.jsonl=GOLD [TRACE.jsonl=GOLD ...] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def select_state(trace: Path) -> tuple[str, dict[str, Any]]:
    """The question the select step asked and the lane's state before it (the last select step of the read)."""
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines() if line.strip()]
    finished = [r for r in records if r.get("type") == "step_finished"]
    select = max(i for i, r in enumerate(finished) if "check" in (r.get("decisions") or {}))
    state = finished[select - 1]["state"]
    return str(state.get("asking") or records[0]["questions"][0]), state


def variants(state: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    from memread.strategies.evidence import keeping

    evidence = list(state["evidence"])
    support = {c["step"]: int(c.get("support", 0)) for c in state.get("candidates", [])}

    def by_support(entry: dict[str, Any]) -> tuple[int, ...]:
        return (-support.get(entry.get("step", -1), 0), *keeping.document_order(entry))

    answers = [e for e in evidence if e.get("how") == "answer"]
    return {"as made": evidence, "by support": sorted(evidence, key=by_support), "answer lines only": answers,
            "answer lines by support": sorted(answers, key=by_support)}


def main(argv: Sequence[str] | None = None) -> int:
    from memread.backends.base import ChatRequest, Message
    from memread.backends.llamacpp import LlamaCppBackend
    from memread.bench.docqa import docqa_match
    from memread.models import resolve
    from memread.strategies.evidence import answer, keeping, reading

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", help="TRACE.jsonl=GOLD")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    for case in args.cases:  # a one-line error (exit 2) before the model loads, not a traceback later
        path = case.split("=", 1)[0]
        if "=" not in case or not Path(path).is_file():
            parser.error(f"{case!r}: give a trace file that exists and its gold, TRACE.jsonl=GOLD")
    backend = LlamaCppBackend(resolve(args.model, pull=False), n_ctx=8192, n_threads=args.threads)
    print("| read | question | variant | lines | answer | right |\n|---|---|---|---|---|---|")
    for case in args.cases:
        path, gold = case.split("=", 1)
        question, state = select_state(Path(path))
        for name, lines in variants(state).items():
            if not lines:
                continue
            prompt = answer.final_prompt(question, keeping.for_model(lines))
            reply = backend.complete([ChatRequest((Message("user", prompt),), 48,
                                                  reply_start=reading.REPLY_START)])[0].text
            said = reading.step_answer(reading.REPLY_START + reply) or ""
            print(f"| {Path(path).stem} | {question[:60]} | {name} | {len(lines)} | {said[:50]} | "
                  f"{'yes' if docqa_match(said, [gold]) else 'no'} |", flush=True)
    backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
