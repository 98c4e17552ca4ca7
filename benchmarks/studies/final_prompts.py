"""The evidence strategy's final answer, asked again from the very evidence a sweep kept: which way of asking
turns kept evidence into right answers, paired, per sample.

At 400 documents the acceptance's final evidence held a gold answer in 19 of 32 samples and the answer was
right in 12: the answer step loses a third of what the reading found. Each ``evidence`` record of a
``memread bench`` folder stores the final evidence it answered from (``kept``, word for word what the final
prompt held), so the final step can be asked again without reading again. Variants:

* "as is": the strategy's final prompt and its begun reply (``\\boxed{``); its answers should equal the sweep's.
* "two stems": the entries that share fewer than two word stems with the question left out (over 48 final
  memories at 400 documents they held a gold answer in 2 of 49 entries; those sharing two or more, 42 of 167).
* "reason first": the same evidence, the model asked to say which sentences answer the question before the box,
  its reply not begun (the begun box stops a 1.5B model from reasoning at all).

    python -m benchmarks.studies.final_prompts FOLDER [FOLDER ...] [--threads 2] [--out FILE.md]

Rows go to FOLDER/final-prompts.jsonl as they finish (they hold replies: keep them out of git); a second run skips
the samples it holds. Scored with the sweep's own rules (``lenient``, the bench's primary QA score). The table goes
to stdout (and --out).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.studies.step_prompts import emit, paired_text
from memread.answer import final_answer
from memread.backends import create_backend
from memread.backends.base import ChatRequest, Message
from memread.bench.results import score_values
from memread.bench.stats import paired, wilson
from memread.recall import query_terms
from memread.settings import ANSWER_START, FINAL_TOKENS

try:  # historical: this study measured the evidence strategy before its rewrite (issue 35)
    from memread.strategies.evidence import EvidenceStrategy, _stems
except ImportError:  # pragma: no cover - the names it studied are gone
    raise SystemExit(f"{__name__}: a historical study of the evidence strategy before its rewrite; run it at commit da32d42 (git worktree add /tmp/old da32d42)") from None

REASON_TAIL = ("First name the evidence that answers the problem and reason briefly about it, then put the answer "
               "in \\boxed{}.\n\nYour answer:\n")
FINAL_TAIL = "Please answer the problem based on the evidence and put the answer in \\boxed{}.\n\nYour answer:\n"
REASON_TOKENS = 384  # what a brief reasoning and the box need; the sweep's limit (FINAL_TOKENS) for the begun box

Variant = Callable[[str, str], tuple[str, str, int]]  # (question, evidence) -> (prompt, reply start, max tokens)


def entries(evidence: str) -> list[str]:
    """The entries of a rendered evidence memory ("- head: text" lines), or the whole text as one."""
    if not evidence.startswith("- "):
        return [evidence]
    return ["- " + entry for entry in evidence[2:].split("\n- ")]


def shared_stems(question: str, entry: str) -> int:
    return len(_stems(query_terms(question)) & _stems(query_terms(entry)))


def two_stems(question: str, evidence: str) -> str:
    kept = [entry for entry in entries(evidence) if shared_stems(question, entry) >= 2]
    return "\n".join(kept) if kept else evidence  # nothing shares two: the evidence as it was


def _prompt(question: str, evidence: str) -> str:
    return EvidenceStrategy.final_prompt(None, question, evidence)  # type: ignore[arg-type]  # no state used


def _reason(question: str, evidence: str) -> str:
    prompt = _prompt(question, evidence)
    assert prompt.endswith(FINAL_TAIL), "the strategy's final prompt no longer ends as this variant expects"
    return prompt[:-len(FINAL_TAIL)] + REASON_TAIL


VARIANTS: dict[str, Variant] = {
    "as is": lambda q, evidence: (_prompt(q, evidence), ANSWER_START, FINAL_TOKENS),
    "two stems": lambda q, evidence: (_prompt(q, two_stems(q, evidence)), ANSWER_START, FINAL_TOKENS),
    "reason first": lambda q, evidence: (_reason(q, evidence), "", REASON_TOKENS),
}


def records_of(folder: Path) -> list[dict[str, Any]]:
    records = []
    for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a record a running sweep is writing
            continue
        if record["method"] == "evidence" and record["status"] == "ok" and record.get("kept"):
            records.append(record)
    return sorted(records, key=lambda r: r["index"])


def scored(record: dict[str, Any], reply: str) -> float:
    prediction, boxed = final_answer(reply)
    scores = score_values(record["metric"], record["golds"], status="ok", prediction=prediction, reply=reply,
                          boxed=boxed)
    return float(scores["lenient"] or 0.0)


def ask_again(backend: Any, record: dict[str, Any], folder: str = "") -> dict[str, Any]:
    """The row of one record: each variant's reply from ``backend`` and its score."""
    row: dict[str, Any] = {"key": record["key"], "folder": folder, "length": record["length"],
                           "recorded": record["reply"], "recorded_score": record["scores"]["lenient"],
                           "kept_gold": bool(record["scores"].get("kept")), "variants": {}}
    for name, variant in VARIANTS.items():
        prompt, start, tokens = variant(record["question"], record["kept"])
        reply = backend.complete([ChatRequest(messages=(Message("user", prompt),), max_tokens=tokens,
                                              temperature=0.0, top_p=1.0, seed=1, reply_start=start)])[0].text
        row["variants"][name] = {"reply": reply, "score": scored(record, reply),
                                 "entries": len(entries(_evidence_of(prompt)))}
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    backend = None
    rows: list[dict[str, Any]] = []
    try:
        for folder in args.folders:
            rows_path = folder / "final-prompts.jsonl"
            held = [json.loads(line) for line in rows_path.read_text(encoding="utf-8").splitlines()] \
                if rows_path.exists() else []
            rows += held
            done = {row["key"] for row in held}
            for record in records_of(folder):
                if record["key"] in done:
                    continue
                if backend is None:
                    config = json.loads((folder / "run.json").read_text(encoding="utf-8"))["config"]
                    backend = create_backend("llamacpp", model=args.model, n_ctx=config["context_length"],
                                             n_threads=args.threads, seed=1)
                row = ask_again(backend, record, folder.name)
                rows.append(row)
                with rows_path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                print(record["key"], {k: v["score"] for k, v in row["variants"].items()}, file=sys.stderr,
                      flush=True)
    except KeyboardInterrupt:
        print("stopped; run again to continue", file=sys.stderr)
    finally:
        if backend is not None:
            backend.close()
    emit(report(rows), args.out)
    return 0


def _evidence_of(prompt: str) -> str:
    return prompt.split("<evidence>\n", 1)[1].split("\n</evidence>", 1)[0]


def report(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no rows yet"
    lines = []
    for length in sorted({row["length"] for row in rows}):
        group = [row for row in rows if row["length"] == length]
        n = len(group)
        same = sum(row["variants"]["as is"]["reply"] == row["recorded"] for row in group)
        kept = sum(row["kept_gold"] for row in group)
        lines += [f"**{length} documents**: n = {n} samples ({kept} whose final evidence holds a gold answer). "
                  f"\"as is\" reproduced the sweep's reply in {same} of {n}.", "",
                  "| final prompt | right [95 %] | right where the evidence holds gold | − as is [95 %], paired |",
                  "|---|---|---|---|"]
        base = [row["variants"]["as is"]["score"] for row in group]
        for name in VARIANTS:
            right = [row["variants"][name]["score"] for row in group]
            interval = wilson(int(sum(right)), n)
            with_gold = sum(row["variants"][name]["score"] for row in group if row["kept_gold"])
            diff = "" if name == "as is" else paired_text(paired(right, base, seed=f"final-prompts|{name}|{length}"))
            lines.append(f"| {name} | {sum(right):.0f} of {n} ({100 * sum(right) / n:.0f} % "
                         f"[{100 * interval.low:.0f}, {100 * interval.high:.0f}]) | {with_gold:.0f} of {kept} | "
                         f"{diff} |")
        lines.append("")
    return "\n".join(lines).rstrip()


if __name__ == "__main__":
    sys.exit(main())
