"""The select step of recorded `evidence` reads, asked of the model again as it was made and in variants.

A design tool: it rebuilds each select step's prompt from the lane's state before it (the lines kept, the round's
answers and their support) and asks the default model that prompt and variants of it, then settles the reply as
the strategy does (a copied line snapped to its words, an answer made of the question's words replaced by the
round's best) and scores it with the bench's rule. Whether a select step's wrong answer comes from how its lines
are laid out, how it is asked, or what the lines say.

Where the select steps come from (design samples only):

* ``TRACE.jsonl=GOLD`` or ``TRACE.jsonl``: a traced read (``own_questions --traces``, ``memread ask --trace``);
  without ``=GOLD`` the file's name is a design question's id (our own, or docqa's even-numbered), whose golds
  are used; our own absent questions are right when the step says the lines do not answer. Every select step of
  the read with ``--all-steps``, else its last.
* ``--replay FOLDER``: a ``memread bench`` folder's design records (docqa's even-numbered questions, HotpotQA's
  design seed), replayed with their own replies (:mod:`.replay_reads`); every select step.

Variants: ``as-made``, ``by-support`` (the lines most about the question first), ``answer-lines`` (only the lines
an answer was found on: none, when no read step found one), ``answer-lines-by-support``, ``find-the-line`` (the instruction asks to find the line that
answers and says "not in the document" only if none does), ``line-number`` (the model names the line that
answers by its number; the answer is the one a read step found on it) and ``quote-first`` (the model copies the
line that answers, then answers, in up to 160 tokens), ``unit-before`` (each line shown after the unit before it
in its passage: the sentence or line the kept one follows, as its context) and ``vote`` (five replies sampled at
temperature 0.7, seeds 1 to 5, each settled; the answer most of them confirm, a tie going to as made's).

    python -m benchmarks.studies.select_probe [TRACE.jsonl[=GOLD] ...] [--replay FOLDER ...] [--all-steps]
        [--variants as-made,by-support,...] [--cache FILE.jsonl] [--out FILE.md] [--threads 1]

Rows go to ``--cache`` as they are answered (a second run skips them); the table pairs each variant with
``as-made`` on the steps both answered.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import emit
from benchmarks._helpers.result_files import table as result_table

FIND_THE_LINE = (
    "You are given lines quoted word for word from a document, each with where it is, and a question. Find the "
    "line that answers the question and copy its answer in \\boxed{}, with the exact words of the line. Only if "
    "no line answers the question, write \\boxed{not in the document}.")
LINE_NUMBER = (
    "You are given numbered lines quoted word for word from a document, and a question. Which line answers the "
    "question? Reply with that line's number in \\boxed{}. If no line answers it, reply \\boxed{0}.")
QUOTE_FIRST = (
    "You are given lines quoted word for word from a document, each with where it is, and a question. First copy "
    "the one line that answers the question, word for word. Then write its answer to the question with the exact "
    "words of that line, in \\boxed{}. If no line answers the question, write \\boxed{not in the document}.")
VARIANTS = ("as-made", "by-support", "answer-lines", "answer-lines-by-support", "find-the-line", "line-number",
            "quote-first", "unit-before", "vote")
VOTES = 5


def design_golds() -> dict[str, list[str]]:
    """Each design question's golds by id: our own (an absent one's is docqa's ABSENT_GOLD) and docqa's
    even-numbered."""
    from benchmarks.studies.own_questions import SETS, own_questions
    from memread.bench.docqa import questions, split_of

    found = [q for name in SETS for q in own_questions(name)] + [q for q in questions() if split_of(q) == "design"]
    return {str(q["id"]): list(q["golds"]) for q in found}


def select_states(trace: Path, *, every: bool = False) -> list[tuple[str, dict[str, Any], int]]:
    """(question asked, the lane's state before it, step) of the read's select steps (the last unless ``every``)."""
    records = _records(trace)
    finished = [r for r in records if r.get("type") == "step_finished"]
    found = []
    for i, record in enumerate(finished):
        if i and "check" in (record.get("decisions") or {}):
            state = finished[i - 1]["state"]
            asked = str(record["prompt"]).rsplit("\n\nQuestion: ", 1)[-1].split("\n\nAnswer with", 1)[0]
            found.append((asked or str(state.get("asking") or records[0]["questions"][0]), state, int(record["step"])))
    return found if every else found[-1:]


def _records(trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines() if line.strip()]


def trace_chunks(trace: Path, cache: dict[str, Any]) -> list[Any]:
    """The passages of the document a trace read, cut as `evidence` cuts it (an entry's chunk and offsets are
    into them)."""
    from memread.backends.llamacpp import LlamaTokenizer
    from memread.chunk import Chunker
    from memread.ingest import open_document
    from memread.models import resolve
    from memread.strategies.evidence import EvidenceStrategy

    with trace.open(encoding="utf-8") as lines:  # the header, first: the rest is not needed here
        header = json.loads(lines.readline() or "{}")
    source = str((header.get("document_info") or {}).get("source") or "")
    if not Path(source).exists():  # a trace of stdin, or of a document since moved: no context shown
        return []
    if source not in cache:
        if "tokenizer" not in cache:
            cache["tokenizer"] = LlamaTokenizer(resolve("qwen2.5-coder-1.5b-q4_0", pull=False))
        chunker = Chunker(cache["tokenizer"], EvidenceStrategy.default_chunk_tokens)
        cache[source] = list(chunker.chunks(open_document(source).segments()))
    return list(cache[source])


def replayed_states(folder: Path) -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any], list[str], list[Any]]]:
    """(sample, question asked, state, score record, golds, the document's passages) at every select step of
    ``folder``'s design reads."""
    from benchmarks.studies import replay_reads
    from memread.backends.llamacpp import LlamaTokenizer
    from memread.models import resolve
    from memread.strategies.evidence import EvidenceStrategy

    tokenizer = LlamaTokenizer(resolve("qwen2.5-coder-1.5b-q4_0", pull=False))
    seen: list[tuple[str, dict[str, Any]]] = []
    select = EvidenceStrategy._select

    def spy(self: Any, question: str, state: Any, completion: Any) -> Any:
        seen.append((question, copy.deepcopy(dict(state))))
        return select(self, question, state, completion)

    documents: dict[str, Any] = {}
    EvidenceStrategy._select = spy  # type: ignore[method-assign]
    try:
        for result, score in replay_reads.recorded(folder):
            seen.clear()
            document, chunks = replay_reads._document(score, tokenizer, documents)
            replay_reads.replay(result, document, chunks, tokenizer)
            for question, state in list(seen):
                yield replay_reads.sample_id(score), question, state, score, list(result["golds"]), chunks
    finally:
        EvidenceStrategy._select = select  # type: ignore[method-assign]


def shown(entries: Sequence[dict[str, Any]], *, numbered: bool = False) -> str:
    lines = []
    for i, e in enumerate(entries, 1):
        head, text = str(e.get("head") or ""), str(e["text"])
        mark = f"{i}." if numbered else "-"
        lines.append(f"{mark} {head}: {text}" if head and head != text else f"{mark} {text}")
    return "\n".join(lines)


def lines_of(variant: str, state: dict[str, Any]) -> list[dict[str, Any]]:
    from memread.strategies.evidence import keeping

    evidence = sorted(state.get("evidence", []), key=keeping.document_order)
    support = {c["step"]: int(c.get("support", 0)) for c in state.get("candidates", [])}
    answers = [e for e in evidence if e.get("how") == "answer"]

    def by_support(entry: dict[str, Any]) -> tuple[int, ...]:
        return (-support.get(entry.get("step", -1), 0), *keeping.document_order(entry))

    if variant == "unit-before":  # each line after the unit it follows in its passage, as the document reads
        return [{**e, "text": f"{e.get('before', '')} {e['text']}".strip()} for e in evidence]
    return {"by-support": sorted(evidence, key=by_support), "answer-lines": answers,
            "answer-lines-by-support": sorted(answers, key=by_support)}.get(variant, evidence)


def with_before(state: dict[str, Any], chunks: Sequence[Any]) -> dict[str, Any]:
    """``state`` with each kept entry's ``before``: the readable unit of its passage that ends before it begins
    (none at the passage's start, or when the entry is not where it says in ``chunks``)."""
    from memread.strategies.evidence.units import one_line, units

    found: dict[int, list[Any]] = {}
    entries = []
    for e in state.get("evidence", []):
        before = ""
        index = int(e["chunk"])
        if 0 <= index < len(chunks) and one_line(chunks[index].text[e["start"]:e["end"]]) == e["text"]:
            if index not in found:
                found[index] = units(chunks[index].text)
            above = [u for u in found[index] if u.end <= e["start"] and u.readable]
            before = above[-1].text if above else ""
        entries.append({**e, "before": before})
    return {**state, "evidence": entries}


def prompt(variant: str, question: str, state: dict[str, Any]) -> str:
    from memread.strategies.evidence import answer

    lines = lines_of(variant, state)
    if variant == "find-the-line":
        return (f"{FIND_THE_LINE}\n\n<lines>\n{shown(lines)}\n</lines>\n\nQuestion: {question}\n\n"
                "Answer with the exact words of the lines, in \\boxed{}.")
    if variant == "line-number":
        return (f"{LINE_NUMBER}\n\n<lines>\n{shown(lines, numbered=True)}\n</lines>\n\nQuestion: {question}\n\n"
                "The number of the line that answers it, in \\boxed{}:")
    if variant == "quote-first":
        return (f"{QUOTE_FIRST}\n\n<lines>\n{shown(lines)}\n</lines>\n\nQuestion: {question}\n\n"
                "The line that answers, copied, then the answer in \\boxed{}.")
    return answer.final_prompt(question, shown(lines))


def settled(variant: str, question: str, state: dict[str, Any], reply: str) -> str | None:
    """The answer the select step confirms from ``reply`` (None: the lines do not answer): the strategy's own
    :func:`~memread.strategies.evidence.answer.checked`, or for ``line-number`` the read answer on the line named."""
    from memread.strategies.evidence import answer, keeping, reading, stopping

    said = reading.step_answer(reply)
    if variant == "line-number":  # the read step's answer on the line named
        number = re.match(r"\s*(\d+)", said or "")
        lines = lines_of(variant, state)
        if number is None or not 1 <= int(number.group(1)) <= len(lines):
            return None
        step = lines[int(number.group(1)) - 1].get("step")
        found = [c for c in state.get("candidates", []) if c.get("step") == step and c.get("answer")]
        return str(found[-1]["answer"]) if found else None
    searched = lines_of(variant, state) if variant == "unit-before" else state.get("evidence", [])
    return answer.checked(question, said, keeping.searchable(searched),
                          state.get("candidates", []), stopping.round_start(state))


def voted(answers: Sequence[str | None], greedy: str | None) -> str | None:
    """The answer most of ``answers`` confirm (None: the lines do not answer), a tie going to ``greedy``'s."""
    counts = Counter(answers)
    most = max(counts.values())
    tied = [a for a in counts if counts[a] == most]
    return greedy if greedy in tied else tied[0]


def is_right(confirmed: str | None, golds: Sequence[str], score: dict[str, Any] | None) -> bool:
    """The bench's rule (a trace's question: docqa's); a question the document does not answer (docqa's
    ABSENT_GOLD) is right when the step confirms nothing, which the read then answers "does not say"."""
    from benchmarks.studies.replay_reads import right
    from memread.bench.docqa import ABSENT_GOLD

    if list(golds) == [ABSENT_GOLD]:
        return confirmed is None
    return right(confirmed, golds, score or {"metric": "docqa"})


def situations(traces: Sequence[str], replays: Sequence[str], *, every: bool,
               error: Callable[[str], Any], context: bool = False) -> list[dict[str, Any]]:
    """The select steps to ask, each with its question, state and golds; with ``context``, each kept line's unit
    before it (:func:`with_before`: the document is cut again, which takes a while for a large one)."""
    known = design_golds()
    cut: dict[str, Any] = {}
    found: list[dict[str, Any]] = []
    for case in traces:
        path, _, gold = case.partition("=")
        name = Path(path).name.split(".")[0]
        if not Path(path).is_file() or not (gold or name in known):
            error(f"{case!r}: give a trace file that exists, named by a design question's id, or TRACE.jsonl=GOLD")
        try:
            states = select_states(Path(path), every=every)
        except (ValueError, KeyError):  # JSON or a record that is not a trace's
            error(f"{case!r}: not a memread trace (JSON Lines of a traced read)")
        for question, state, step in states:
            state = with_before(state, trace_chunks(Path(path), cut)) if context else state
            found.append({"id": f"{name}@{step}", "question": question, "state": state,
                          "golds": [gold] if gold else known[name], "score": None})
    for folder in replays:
        if not (Path(folder) / "results.jsonl").is_file():
            error(f"{folder!r}: not a memread bench folder (no results.jsonl)")
        count: dict[str, int] = {}
        for sample, question, state, score, golds, chunks in replayed_states(Path(folder)):
            count[sample] = count.get(sample, 0) + 1
            found.append({"id": f"{sample}@{count[sample]}", "question": question,
                          "state": with_before(state, chunks) if context else state,
                          "golds": golds, "score": score})
    return [s for s in found if s["state"].get("evidence")]


def summary(rows: Sequence[dict[str, Any]], variants: Sequence[str], steps: str = "select steps") -> str:
    """Each variant's rows paired with ``as-made``'s on the ids both have: how many right, which gained and lost
    (``steps`` names what the ids are, in the table's header)."""
    made = {r["id"]: r for r in rows if r["variant"] == "as-made"}
    body = []
    for variant in variants:
        mine = {r["id"]: r for r in rows if r["variant"] == variant}
        both = [i for i in mine if i in made]
        gained = [i for i in both if mine[i]["right"] and not made[i]["right"]]
        lost = [i for i in both if made[i]["right"] and not mine[i]["right"]]
        body.append([variant, len(both), sum(made[i]["right"] for i in both), sum(mine[i]["right"] for i in both),
                     ", ".join(gained) or "—", ", ".join(lost) or "—"])
    return result_table(["variant", steps, "right as made", "right", "gained", "lost"], body)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="*", help="TRACE.jsonl[=GOLD]")
    parser.add_argument("--replay", action="append", default=[], metavar="FOLDER")
    parser.add_argument("--all-steps", action="store_true", help="every select step of a trace, not only its last")
    parser.add_argument("--variants", default=",".join(VARIANTS[:4]), help="comma-separated; as-made is the pair")
    parser.add_argument("--cache", type=Path, help="JSONL of answered steps, appended to and skipped on a rerun")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if unknown := [v for v in variants if v not in VARIANTS]:  # a one-line error before the model loads
        parser.error(f"unknown variant {unknown[0]!r}; choose from {', '.join(VARIANTS)}")
    if not args.traces and not args.replay:
        parser.error("give traces, --replay FOLDER, or both")
    found = situations(args.traces, args.replay, every=args.all_steps, error=parser.error,
                       context="unit-before" in variants)
    rows = [json.loads(line) for line in args.cache.read_text(encoding="utf-8").splitlines()
            if line.strip()] if args.cache and args.cache.exists() else []
    done = {(r["variant"], r["id"]) for r in rows}
    todo = [(v, s) for v in variants for s in found if (v, s["id"]) not in done]
    if todo:
        from memread.backends.base import ChatRequest, Message
        from memread.backends.llamacpp import LlamaCppBackend
        from memread.models import resolve
        from memread.strategies.evidence import reading

        backend = LlamaCppBackend(resolve(args.model, pull=False), n_ctx=8192, n_threads=args.threads)
        for variant, s in todo:
            quoting = variant == "quote-first"
            request = ChatRequest((Message("user", prompt(variant, s["question"], s["state"])),),
                                  160 if quoting else 48, reply_start="" if quoting else reading.REPLY_START)
            reply = backend.complete([request])[0].text  # begun with the box, as the strategy's replies are
            confirmed = settled(variant, s["question"], s["state"], reply)
            if variant == "vote":  # self-consistency: sampled replies, settled each, the most confirmed
                sampled = [replace(request, temperature=0.7, seed=seed) for seed in range(1, VOTES + 1)]
                confirmed = voted([settled(variant, s["question"], s["state"], r.text)
                                   for r in backend.complete(sampled)], confirmed)
            row = {"variant": variant, "id": s["id"], "answer": confirmed,
                   "right": is_right(confirmed, s["golds"], s["score"])}
            rows.append(row)
            if args.cache:
                with args.cache.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row) + "\n")
            print(f"{variant} {s['id']}: {str(confirmed)[:60]!r} {'right' if row['right'] else 'wrong'}",
                  file=sys.stderr, flush=True)
        backend.close()
    # scored here, not from the cache: the golds are the situations' (a row keeps only its answer's score)
    by_id = {s["id"]: s for s in found}
    rows = [{**r, "right": is_right(r["answer"], by_id[r["id"]]["golds"], by_id[r["id"]]["score"])}
            for r in rows if r["id"] in by_id]
    # each variant paired with as-made on the steps both answered (as-made's rows may come from another run's
    # --cache: two processes can share one, each answering its own variants)
    return emit(summary(rows, variants) + "\n", args.out)


if __name__ == "__main__":
    raise SystemExit(main())
