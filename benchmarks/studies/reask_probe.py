"""Read steps whose answer only repeats the question, asked again with a note that those words are the question's.

A design tool for `evidence`'s read step. A step that answers with the question's own words ("dry-run mode" for
"… what does that tool support running in dry-run mode after the upload?") gives no answer (`repeats_question`),
and the read goes on. Here each such step of the design reads is asked again, its prompt amended after the
question with ``(Not "X": those are the question's own words.)``, and the new answer is settled as a read
step settles one: an answer is one the passage holds, that does not repeat the question. Each step is counted by
whether its passage holds a gold, and whether the new answer is right, another answer, or none.

Where the read steps come from (design samples only): traces named by a design question's id (our own, or
docqa's even-numbered), each read step's prompt and reply as recorded; ``--replay FOLDER``: a ``memread bench``
folder's design records, replayed with their own replies to recover the prompts.

    python -m benchmarks.studies.reask_probe [TRACE.jsonl ...] [--replay FOLDER ...] [--cache FILE.jsonl]
        [--out FILE.md] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import emit
from benchmarks._helpers.result_files import table as result_table

NOTE = '(Not "{said}": those are the question\'s own words.)'


def amended(prompt: str, question: str, said: str) -> str:
    """The step's prompt with the note after its question."""
    marker = f"\n\nQuestion: {question}"
    head, _, tail = prompt.rpartition(marker)
    return f"{head}{marker}\n{NOTE.format(said=said)}{tail}"


def question_of(prompt: str) -> str:
    return prompt.rsplit("\n\nQuestion: ", 1)[-1].split("\n\n", 1)[0]


def passage_text(prompt: str) -> str:
    """What the step showed of the document: its passages, without the question or the evidence found earlier."""
    return prompt.rsplit("\n\nQuestion: ", 1)[0].split("\n\nFound earlier in the document:\n", 1)[0]


def echo_steps(pairs: Iterator[tuple[str, str]]) -> Iterator[tuple[str, str, str]]:
    """(prompt, question, answer) of the read steps among (prompt, reply) whose answer repeats the question."""
    from memread.strategies.evidence.reading import repeats_question, step_answer

    for prompt, reply in pairs:
        if not prompt.startswith("[Passage "):
            continue  # a select step or the final answer
        question, said = question_of(prompt), step_answer(reply)
        if said is not None and repeats_question(said, question):
            yield prompt, question, said


def traced(path: Path) -> Iterator[tuple[str, str]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if line.strip() else {}
        if record.get("type") == "step_finished":
            yield str(record["prompt"]), str(record["reply"])


def replayed(folder: Path) -> Iterator[tuple[str, list[str], dict[str, Any], Iterator[tuple[str, str]]]]:
    """(sample, golds, score record, its (prompt, reply) pairs) of ``folder``'s design reads, replayed."""
    from benchmarks.studies import replay_reads

    for result, score, now in replay_reads.replayed(folder):
        yield replay_reads.sample_id(score), list(result["golds"]), score, iter(now["calls"])


def outcome(new: str | None, prompt: str, question: str, right: bool) -> str:
    """How a new answer settles: right, another answer the passage holds, or none."""
    from memread.strategies.evidence.reading import repeats_question, snap

    if new is None or repeats_question(new, question) or snap(new, passage_text(prompt)) is None:
        return "none"
    return "right" if right else "other"


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
    from benchmarks.studies.expansion_probe import holds as gold_held
    from benchmarks.studies.select_probe import design_golds, is_right

    golds = design_golds()
    found: list[dict[str, Any]] = []
    for path in args.traces:
        name = path.name.split(".")[0]
        if not path.is_file() or name not in golds:
            parser.error(f"{str(path)!r}: give a trace file that exists, named by a design question's id")
        try:
            steps = list(echo_steps(traced(path)))
        except (ValueError, KeyError):  # JSON or a record that is not a trace's
            parser.error(f"{str(path)!r}: not a memread trace (JSON Lines of a traced read)")
        for n, (prompt, question, said) in enumerate(steps, 1):
            found.append({"id": f"{name}#{n}", "prompt": prompt, "question": question, "said": said,
                          "golds": golds[name], "score": None})
    for folder in args.replay:
        if not (folder / "results.jsonl").is_file():
            parser.error(f"{str(folder)!r}: not a memread bench folder (no results.jsonl)")
        for sample, sample_golds, score, pairs in replayed(folder):
            for n, (prompt, question, said) in enumerate(echo_steps(pairs), 1):
                found.append({"id": f"{sample}#{n}", "prompt": prompt, "question": question, "said": said,
                              "golds": sample_golds, "score": score})
    rows = {}
    if args.cache and args.cache.exists():
        rows = {r["id"]: r for r in map(json.loads, args.cache.read_text(encoding="utf-8").splitlines())}
    todo = [s for s in found if s["id"] not in rows]
    if todo:
        from memread.backends.base import ChatRequest, Message
        from memread.backends.llamacpp import LlamaCppBackend
        from memread.models import resolve
        from memread.strategies.evidence.reading import REPLY_START, step_answer

        backend = LlamaCppBackend(resolve(args.model, pull=False), n_ctx=8192, n_threads=args.threads)
        for s in todo:
            request = ChatRequest((Message("user", amended(s["prompt"], s["question"], s["said"])),), 48,
                                  reply_start=REPLY_START)
            rows[s["id"]] = {"id": s["id"], "answer": step_answer(backend.complete([request])[0].text)}
            if args.cache:
                with args.cache.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(rows[s["id"]]) + "\n")
            print(f"{s['id']}: {s['said']!r} -> {rows[s['id']]['answer']!r}", file=sys.stderr, flush=True)
        backend.close()
    counts: Counter[tuple[bool, str]] = Counter()
    body = []
    for s in found:
        new = rows[s["id"]]["answer"]
        holds = gold_held({"golds": s["golds"]}, passage_text(s["prompt"]))
        settled = outcome(new, s["prompt"], s["question"], new is not None and is_right(new, s["golds"], s["score"]))
        counts[holds, settled] += 1
        body.append([s["id"], "yes" if holds else "no", s["said"][:40], str(new)[:40], settled])
    table = result_table(["step", "passage holds a gold", "answered", "asked again", "settles"], body)
    tally = result_table(["passage holds a gold", "steps", "right", "another answer", "none"],
                         [[label, sum(counts[holds, o] for o in ("right", "other", "none")), counts[holds, "right"],
                           counts[holds, "other"], counts[holds, "none"]] for holds, label in ((True, "yes"),
                                                                                              (False, "no"))])
    return emit(f"{tally}\n\n{table}\n", args.out)


if __name__ == "__main__":
    raise SystemExit(main())
