"""Each read answer of a select step's round verified on its own line, and the likeliest chosen: a design probe.

For every select step :mod:`.select_probe` finds (design samples only: the same traces and replayed bench
folders), each read answer of the step's round is put to the default model one line at a time::

    Here is a line from a document, under the heading "…":
    "…"

    Question: …
    Proposed answer: …

    Does this line show that the proposed answer is the answer to the question? Reply Yes or No.

and scored by the model's next-token logits, logit(``Yes``) − logit(``No``); an answer's score is its best line's.
Two ways to use the scores, each paired with the select step as made (its answers from ``--made``, a
:mod:`.select_probe` cache holding its ``as-made`` rows):

* ``verify``: the highest-scored read answer (a tie to more support), confirmed when its score is above 0;
* ``verify-check``: the answer as made, unless it is a read answer scored 0 or less while another scores above
  0: then the highest of those (a step that confirms nothing, or an answer no read step gave, is left as made).

    python -m benchmarks.studies.verify_probe [TRACE.jsonl[=GOLD] ...] [--replay FOLDER ...] --made FILE.jsonl
        [--cache FILE.jsonl] [--out FILE.md] [--threads 1]

Each step's scores go to ``--cache`` as they are computed (a second run skips the steps there).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import emit
from benchmarks.studies import select_probe

ASK = ("Here is a line from a document{under}:\n\"{line}\"\n\nQuestion: {question}\nProposed answer: {answer}\n\n"
       "Does this line show that the proposed answer is the answer to the question? Reply Yes or No.")
VARIANTS = ("verify", "verify-check")


def round_answers(question: str, state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The round's read answers (as the select step's fallback counts them: after the round began, not the
    question's own words), each with the lines its read step found it on."""
    from memread.strategies.evidence import answer, stopping

    start = stopping.round_start(state)
    found = []
    for c in state.get("candidates", []):
        said = str(c.get("answer") or "")
        if not said or int(c["step"]) <= start or answer.repeats_question(said, question):
            continue
        lines = [e for e in state.get("evidence", []) if e.get("step") == c["step"] and e.get("how") == "answer"]
        found.append({"answer": said, "step": int(c["step"]), "support": int(c.get("support", 0)),
                      "lines": lines or [e for e in state.get("evidence", []) if e.get("step") == c["step"]]})
    return found


def asked(question: str, answer: str, entry: Mapping[str, Any]) -> str:
    head, text = str(entry.get("head") or ""), str(entry["text"])
    under = f', under the heading "{head}"' if head and head != text else ""
    return ASK.format(under=under, line=text, question=question, answer=answer)


def chosen(variant: str, scores: Mapping[str, float], support: Mapping[str, int], made: str | None) -> str | None:
    """The answer ``variant`` confirms from the read answers' ``scores`` (None: nothing)."""
    if not scores:
        return None if variant == "verify" else made
    best = max(scores, key=lambda a: (scores[a], support.get(a, 0)))
    if variant == "verify":
        return best if scores[best] > 0 else None
    same = [a for a in scores if made is not None and _norm(a) == _norm(made)]
    if not same or scores[same[0]] > 0 or scores[best] <= 0:
        return made
    return best


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="*", help="TRACE.jsonl[=GOLD]")
    parser.add_argument("--replay", action="append", default=[], metavar="FOLDER")
    parser.add_argument("--made", type=Path, required=True, help="a select_probe cache with the as-made rows")
    parser.add_argument("--cache", type=Path, help="JSONL of each step's scores, appended to and skipped on a rerun")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if not args.traces and not args.replay:
        parser.error("give traces, --replay FOLDER, or both")
    if not args.made.is_file():
        parser.error(f"--made {str(args.made)!r}: no such file (a select_probe --cache with as-made rows)")
    made = {r["id"]: r for r in _rows(args.made, parser) if r.get("variant") == "as-made"}
    found = select_probe.situations(args.traces, args.replay, every=True, error=parser.error)
    cached = {r["id"]: r for r in _rows(args.cache, parser)} if args.cache and args.cache.exists() else {}
    todo = [s for s in found if s["id"] not in cached]
    if todo:
        import llama_cpp
        import numpy as np

        from memread.backends.base import Message
        from memread.backends.llamacpp import LlamaCppBackend
        from memread.models import resolve

        backend = LlamaCppBackend(resolve(args.model, pull=False), n_ctx=8192, n_threads=args.threads)
        llm = backend._llm
        yes, no = (llm.tokenize(word.encode(), add_bos=False, special=False)[0] for word in ("Yes", "No"))
        for s in todo:
            scores: dict[str, float] = {}
            for read in round_answers(s["question"], s["state"]):
                for entry in read["lines"]:
                    tokens = backend.prompt_tokens([Message("user", asked(s["question"], read["answer"], entry))])
                    backend._prefill.evaluate(tokens)
                    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1),
                                                   shape=(llm.n_vocab(),))
                    score = float(logits[yes] - logits[no])
                    scores[read["answer"]] = max(scores.get(read["answer"], score), score)
            row = {"id": s["id"], "scores": scores,
                   "support": {r["answer"]: r["support"] for r in round_answers(s["question"], s["state"])}}
            cached[s["id"]] = row
            if args.cache:
                with args.cache.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row) + "\n")
            print(f"{s['id']}: {json.dumps(scores)[:120]}", file=sys.stderr, flush=True)
        backend.close()
    # select_probe's rows, scored here with the situations' golds (the caches keep answers and scores only)
    paired = [s for s in found if s["id"] in made]
    answers = [("as-made", s, made[s["id"]]["answer"]) for s in paired]
    answers += [(v, s, chosen(v, cached[s["id"]]["scores"], cached[s["id"]]["support"], made[s["id"]]["answer"]))
                for v in VARIANTS for s in paired]
    rows = [{"variant": v, "id": s["id"], "right": select_probe.is_right(said, s["golds"], s["score"])}
            for v, s, said in answers]
    return emit(select_probe.summary(rows, VARIANTS) + "\n", args.out)


def _rows(path: Path, parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except ValueError:
        parser.error(f"{str(path)!r}: not JSON Lines")
        raise  # unreachable: parser.error exits


if __name__ == "__main__":
    raise SystemExit(main())
