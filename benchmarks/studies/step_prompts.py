"""The evidence strategy's step prompt, varied on the very states a sweep reached: which wording makes the
default model choose sentences instead of counting through the passage ("1, 2, 3, 4, …"), paired, per step.

For each ``evidence`` record of a ``memread bench`` folder (its results.jsonl, which holds the replies), the
read is replayed without the model: the recorded replies are fed back in order, so the strategy reaches the
same states and reads the same chunks (checked against the record: the chunk and the strategy's summary of
every step). At each step whose prompt shows evidence
found so far (a chunk read for the first time; the steps where the model counted, 82 of 193 on the 400-document
acceptance, and never without evidence shown), the real model is asked again with each variant of the prompt.
A variant's reply is read by the strategy itself from the same state: whether it made a choice, whether the
model's picks were kept, and whether a kept pick came from one of the sample's gold documents (by its title).
"as is" re-asks the recorded prompt: its replies should equal the sweep's (same model, build, prompt).

    python -m benchmarks.studies.step_prompts FOLDER [--samples 16] [--threads 2] [--out FILE.md]

Rows go to FOLDER/step-prompts.jsonl as they finish (they hold replies: keep it out of git); a second run skips
the rows it holds. The table goes to stdout (and --out). Variants share the passage, which comes first in the
prompt, so llama.cpp evaluates it once per step.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memread.ask import read
from memread.backends import create_backend
from memread.backends.base import ChatRequest, Completion, Message
from memread.backends.fake import FakeBackend
from memread.bench.methods import settings_for, text_document
from memread.bench.stats import paired, wilson
from memread.bench.tasks import Sample, build_sample
from memread.events import StepFinished
from memread.settings import Settings

try:  # historical: this study measured the evidence strategy before its rewrite (issue 35)
    from memread.strategies.evidence import STEP_INSTRUCTION, EvidenceStrategy, parse_picks, units
except ImportError:  # pragma: no cover - the names it studied are gone
    raise SystemExit(f"{__name__}: a historical study of the evidence strategy before its rewrite; run it at commit da32d42 (git worktree add /tmp/old da32d42)") from None

Variant = Callable[[EvidenceStrategy, str, str, str], str]  # (strategy, question, evidence, numbered) -> prompt


NAMES_CLAUSE = " or the evidence found so far names"  # what the request adds when evidence is shown


def _no_clause(strategy: EvidenceStrategy, question: str, found: str, numbered: str) -> str:
    prompt = strategy.step_prompt(question, found, numbered)
    assert NAMES_CLAUSE in prompt, "the strategy's request no longer has the clause this variant drops"
    return prompt.replace(NAMES_CLAUSE, "")


VARIANTS: dict[str, Variant] = {
    "as is": lambda s, q, found, numbered: s.step_prompt(q, found, numbered),
    "no names clause": _no_clause,
    "no evidence shown": lambda s, q, found, numbered: s.step_prompt(q, "", numbered),
    "none allowed": lambda s, q, found, numbered: (s.step_prompt(q, found, numbered)
                                                    + " If no sentence helps, answer none."),
}


def gold_titles(context: str, slots: list[int]) -> set[str]:
    titles = set()
    for slot in slots:
        marker = f"Document {slot}:\n"
        at = context.find(marker)
        if at >= 0:
            titles.add(context[at + len(marker):].split("\n", 1)[0].strip())
    return titles


def sample_of(record: dict[str, Any], tokenizer: Any) -> Sample:
    return build_sample(record["task"], record["length"], record["index"], record["data_seed"], tokenizer)


def replay(record: dict[str, Any], sample: Sample, settings: Settings, tokenizer: Any, context_length: int,
           on_step: Callable[[int, dict[str, Any]], None]) -> None:
    """Run the strategy on the record's ``sample`` (:func:`sample_of`) with its recorded replies, calling
    ``on_step(number, step)`` at each step before its reply is read (the strategy's index is open then):
    ``step`` holds what the strategy was given (question, state, chunk, the prompt's parts) and the request
    sent."""
    replies = [step["reply"] for step in record["steps"]]
    seen: list[dict[str, Any]] = []
    summaries: list[str] = []
    original_plan = EvidenceStrategy.plan_step
    original_prompt = EvidenceStrategy.step_prompt

    def plan_step(self: EvidenceStrategy, lane: int, question: str, state: Any, chunk: Any) -> Any:
        seen.append({"question": question, "state": state, "chunk": chunk, "strategy": self})
        return original_plan(self, lane, question, state, chunk)

    def step_prompt(self: EvidenceStrategy, question: str, found: str, numbered: str) -> str:
        if seen and "numbered" not in seen[-1]:
            seen[-1].update(found=found, numbered=numbered)
        return original_prompt(self, question, found, numbered)

    def answer(request: ChatRequest) -> str:
        if not request.messages[-1].content.startswith(STEP_INSTRUCTION):
            return "x}"  # the final answer: not asked again here
        number = len(seen) - 1
        if seen[-1]["chunk"].index != record["steps"][number]["chunk"]:
            raise SystemExit(f"{record['key']}: step {number} of the replay read chunk {seen[-1]['chunk'].index}, "
                             f"the sweep {record['steps'][number]['chunk']}")
        seen[-1]["request"] = request
        on_step(number, seen[-1])
        return str(replies.pop(0))

    backend = FakeBackend(answer, tokenizer=tokenizer, context_length=context_length, continues_replies=True)
    EvidenceStrategy.plan_step = plan_step  # type: ignore[method-assign]
    EvidenceStrategy.step_prompt = step_prompt  # type: ignore[method-assign,assignment]
    try:
        read(text_document(sample), [sample.question], backend=backend, settings=settings_for("evidence", settings),
             sinks=[lambda event: summaries.append(event.summary) if isinstance(event, StepFinished) else None])
    finally:
        EvidenceStrategy.plan_step = original_plan  # type: ignore[method-assign]
        EvidenceStrategy.step_prompt = original_prompt  # type: ignore[method-assign]
    if len(seen) != len(record["steps"]):
        raise SystemExit(f"{record['key']}: the replay took {len(seen)} steps, the sweep {len(record['steps'])}")
    for number, (summary, step) in enumerate(zip(summaries, record["steps"], strict=True)):
        if summary != step["summary"]:  # the same chunk, but the strategy made something else of it
            raise SystemExit(f"{record['key']}: step {number} of the replay: {summary!r}, "
                             f"the sweep: {step['summary']!r}")


def judge(step: dict[str, Any], reply: str, golds: set[str]) -> dict[str, Any]:
    """What the strategy makes of ``reply`` at this step: a choice or not, the model's picks kept, gold ones."""
    strategy: EvidenceStrategy = step["strategy"]
    chunk, state = step["chunk"], step["state"]
    _picks, issues = parse_picks(reply, len(units(chunk.text)), strategy.options.picks)
    # No choice: counting through the passage, or no sentence named and no "none" (both leave picks empty).
    chose = bool(reply.strip()) and not any("counts through" in i or "names no sentence" in i for i in issues)
    completion = Completion(text=reply, finish_reason="stop", prompt_tokens=0, completion_tokens=0)
    result = strategy.read_reply(0, step["question"], state, chunk, completion)
    before = {(e["chunk"], e["start"]) for e in state.get("evidence", [])}
    picked = [e for e in result.state.get("evidence", []) if (e["chunk"], e["start"]) not in before and e["rank"] >= 1]
    return {"choice": chose, "kept": len(picked), "gold": sum(e["head"] in golds for e in picked)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    config = json.loads((args.folder / "run.json").read_text(encoding="utf-8"))["config"]
    # run.json records every evidence option under "strategies" (older folders: the given ones, in the loop)
    options = config.get("strategies", {}).get("evidence", config["loop"].get("options", {}))
    settings = Settings(**{**config["loop"], "strategy": "evidence", "options": options})
    records = [json.loads(line) for line in (args.folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    records = sorted((r for r in records if r["method"] == "evidence"), key=lambda r: r["index"])[:args.samples]
    rows_path = args.folder / "step-prompts.jsonl"
    rows = [json.loads(line) for line in rows_path.read_text(encoding="utf-8").splitlines()] \
        if rows_path.exists() else []
    done = {(row["key"], row["step"]) for row in rows}
    backend = create_backend("llamacpp", model=args.model, n_ctx=config["context_length"], n_threads=args.threads,
                             seed=settings.seed)
    try:
        for record in records:
            first_reads: set[int] = set()
            sample = sample_of(record, backend.tokenizer)
            golds = gold_titles(sample.context, record["meta"].get("gold_documents", []))

            def ask_variants(number: int, step: dict[str, Any], record: dict[str, Any] = record,
                             first_reads: set[int] = first_reads, golds: set[str] = golds) -> None:
                again = step["chunk"].index in first_reads
                first_reads.add(step["chunk"].index)
                if again or not step.get("found") or (record["key"], number) in done:
                    return
                row: dict[str, Any] = {"key": record["key"], "step": number, "chunk": step["chunk"].index,
                                       "recorded": record["steps"][number]["reply"], "variants": {}}
                request: ChatRequest = step["request"]
                for name, variant in VARIANTS.items():
                    prompt = variant(step["strategy"], step["question"], step["found"], step["numbered"])
                    messages = (*request.messages[:-1], Message("user", prompt))
                    reply = backend.complete([ChatRequest(messages=messages, max_tokens=request.max_tokens,
                                                          stop=request.stop, temperature=request.temperature,
                                                          top_p=request.top_p, seed=request.seed)])[0].text
                    row["variants"][name] = {"reply": reply, **judge(step, reply, golds)}
                rows.append(row)
                with rows_path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                print(record["key"], number, {k: (v["choice"], v["kept"], v["gold"]) for k, v in
                                              row["variants"].items()}, file=sys.stderr, flush=True)

            replay(record, sample, settings, backend.tokenizer, backend.context_length, ask_variants)
    except KeyboardInterrupt:
        print("stopped; run again to continue", file=sys.stderr)
    finally:
        backend.close()
    emit(report(rows), args.out)
    return 0


def emit(table: str, out: Path | None) -> None:
    """The table to stdout, and to ``out`` if given."""
    print(table)
    if out:
        out.write_text(table + "\n", encoding="utf-8")


def report(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no rows yet"
    n = len(rows)
    same = sum(row["variants"]["as is"]["reply"] == row["recorded"] for row in rows)
    lines = [f"Steps with evidence shown, first reads: n = {n} (from {len({r['key'] for r in rows})} samples). "
             f"\"as is\" reproduced the sweep's reply in {same} of {n}.", "",
             "| prompt | chose (not counting) | steps with a pick kept | steps with a gold pick kept | "
             "chose: − as is [95 %] |", "|---|---|---|---|---|"]
    base = [float(row["variants"]["as is"]["choice"]) for row in rows]
    for name in VARIANTS:
        chose = [float(row["variants"][name]["choice"]) for row in rows]
        kept = sum(row["variants"][name]["kept"] > 0 for row in rows)
        gold = sum(row["variants"][name]["gold"] > 0 for row in rows)
        interval = wilson(int(sum(chose)), n)
        diff = "" if name == "as is" else paired_text(paired(chose, base, seed=f"step-prompts|{name}"))
        lines.append(f"| {name} | {sum(chose):.0f} of {n} ({100 * sum(chose) / n:.0f} % "
                     f"[{100 * interval.low:.0f}, {100 * interval.high:.0f}]) | {kept} | {gold} | {diff} |")
    return "\n".join(lines)


def paired_text(result: Any) -> str:
    """A paired difference as the tables give it: points, interval, discordant samples, McNemar p."""
    return (f"{100 * result.difference:+.1f} [{100 * result.interval.low:+.0f}, {100 * result.interval.high:+.0f}], "
            f"{result.a_better} to {result.b_better}, p = {result.p_value:.2g}")


if __name__ == "__main__":
    sys.exit(main())
