"""Read steps shown a passage that holds the answer, asked again as made and after two worked examples.

A design tool for `evidence`'s read step. Every read step of the design reads whose passage holds a gold is asked
of the default model twice in one run: ``as-made`` (its prompt alone) and ``demo`` (the same prompt after two
worked turns on a passage of our own writing about no real program, each asked with the step's instruction and
answered with the passage's exact words). Each reply is settled as a read step's answer (found in the passage,
not the question's own words) and scored by the bench's rule; the table pairs the two.

Where the read steps come from (design samples only): our lookups' traces (``own_questions --set lookup
--traces DIR``, named by the lookup's id), the passage checked with the lookup's pattern; ``--replay FOLDER``:
a ``memread bench`` folder's design reads replayed with their own replies, a gold standing in what the step
showed.

    python -m benchmarks.studies.read_probe [TRACE.jsonl ...] [--replay FOLDER ...] [--cache FILE.jsonl]
        [--out FILE.md] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import emit
from benchmarks.studies import select_probe

EXAMPLE = ("[Passage 1 — § 3. Configuration · 3.2. Log files]\n"
           "By default the daemon writes its log to /var/log/exampled/main_log.txt.\n"
           "The option --log-dir=DIR sets another directory; the file keeps its name.\n"
           "Old logs are rotated every week and kept for four weeks, unless max_age says otherwise.")
WORKED = (("Which option chooses where the daemon's log goes?", "--log-dir=DIR"),
          ("How long are old logs kept?", "four weeks"))
VARIANTS = ("as-made", "demo")


def turns(variant: str, prompt: str) -> list[tuple[str, str]]:
    """The (role, content) messages of a step's prompt asked as ``variant``."""
    from memread.strategies.evidence.reading import STEP_INSTRUCTION

    before: list[tuple[str, str]] = []
    if variant == "demo":
        for question, answer in WORKED:
            before += [("user", f"{EXAMPLE}\n\nQuestion: {question}\n\n{STEP_INSTRUCTION}"),
                       ("assistant", f"\\boxed{{{answer}}}")]
    return [*before, ("user", prompt)]


def settled(reply: str, prompt: str) -> str | None:
    """The answer a read step's ``reply`` gives: in the passage shown, and more than the question's words."""
    from benchmarks.studies.reask_probe import passage_text, question_of
    from memread.strategies.evidence.reading import repeats_question, snap, step_answer

    said = step_answer(reply)
    if said is None or repeats_question(said, question_of(prompt)):
        return None
    return snap(said, passage_text(prompt))


def traced(path: Path, question: dict[str, Any], cut: dict[str, Any]) -> Iterator[str]:
    """The prompts of a lookup's traced read steps whose passage holds its gold (none when the document it read
    is not on this machine)."""
    from benchmarks.studies.expansion_probe import holds
    from benchmarks.studies.where_lost import read_records

    chunks = select_probe.trace_chunks(path, cut)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def held(index: int) -> bool:
        return 0 <= index < len(chunks) and holds(question, chunks[index].text)

    for record, found in read_records(records, held):
        if found:
            yield str(record["prompt"])


def replayed(folder: Path) -> Iterator[tuple[str, list[str], dict[str, Any], str]]:
    """(sample, golds, score record, prompt) of ``folder``'s design read steps whose passage holds a gold."""
    from benchmarks.studies import replay_reads
    from benchmarks.studies.where_lost import replayed_read_steps

    for result, score, now in replay_reads.replayed(folder):
        for prompt, _, held in replayed_read_steps(now["calls"], result["golds"]):
            if held:
                yield replay_reads.sample_id(score), [str(gold) for gold in result["golds"]], score, prompt


def steps(traces: Sequence[Path], replays: Sequence[Path], error: Any) -> list[dict[str, Any]]:
    from benchmarks.studies.own_questions import own_questions

    lookups = {q["id"]: q for q in own_questions("lookup")}
    found: list[dict[str, Any]] = []
    cut: dict[str, Any] = {}
    for path in traces:
        name = path.name.split(".")[0]
        if not path.is_file() or name not in lookups:
            error(f"{str(path)!r}: give a trace file that exists, named by one of our lookups' ids")
        try:
            prompts = list(traced(path, lookups[name], cut))
        except (ValueError, KeyError):
            error(f"{str(path)!r}: not a memread trace (JSON Lines of a traced read)")
        found += [{"id": f"{name}#{n}", "prompt": p, "question": lookups[name], "score": None}
                  for n, p in enumerate(prompts, 1)]
    for folder in replays:
        if not (folder / "results.jsonl").is_file():
            error(f"{str(folder)!r}: not a memread bench folder (no results.jsonl)")
        count: dict[str, int] = {}
        for sample, golds, score, prompt in replayed(folder):
            count[sample] = count.get(sample, 0) + 1
            found.append({"id": f"{sample}#{count[sample]}", "prompt": prompt, "golds": golds, "score": score})
    return found


def is_right(step: dict[str, Any], answer: str | None) -> bool:
    if answer is None:
        return False
    if step["score"] is None:  # one of our lookups: its own check
        from benchmarks.studies.own_questions import right

        return bool(right(step["question"], answer))
    from benchmarks.studies.replay_reads import right as bench_right

    return bool(bench_right(answer, step["golds"], step["score"]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--replay", action="append", default=[], type=Path, metavar="FOLDER")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if not args.traces and not args.replay:
        parser.error("give traces, --replay FOLDER, or both")
    found = steps(args.traces, args.replay, parser.error)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    if args.cache and args.cache.exists():
        for line in args.cache.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            rows[row["variant"], row["id"]] = row
    todo = [(v, s) for v in VARIANTS for s in found if (v, s["id"]) not in rows]  # the worked turns' prefill shared
    if todo:
        from memread.backends.base import ChatRequest, Message
        from memread.backends.llamacpp import LlamaCppBackend
        from memread.models import resolve
        from memread.strategies.evidence.reading import REPLY_START

        backend = LlamaCppBackend(resolve(args.model, pull=False), n_ctx=8192, n_threads=args.threads)
        for variant, s in todo:
            messages = tuple(Message(role, text) for role, text in turns(variant, s["prompt"]))
            reply = backend.complete([ChatRequest(messages, 48, reply_start=REPLY_START)])[0].text
            row = rows[variant, s["id"]] = {"variant": variant, "id": s["id"], "answer": settled(reply, s["prompt"])}
            if args.cache:
                with args.cache.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row) + "\n")
            print(f"{variant} {s['id']}: {row['answer']!r}", file=sys.stderr, flush=True)
        backend.close()
    scored = [{**rows[v, s["id"]], "right": is_right(s, rows[v, s["id"]]["answer"])} for v in VARIANTS for s in found]
    return emit(select_probe.summary(scored, VARIANTS[1:], steps="read steps shown the gold") + "\n", args.out)


if __name__ == "__main__":
    raise SystemExit(main())
