"""evidence: answers about real documents, copied from them, for small models never trained to keep a memory.

What untrained small models do well is read a few short passages and copy the lines that answer; what they do
badly is keep a memory, judge when to stop, say "none", and count. So the model only reads and copies, and
code does the rest (one concept per module):

* :mod:`.units` — numbering: a passage cut into sentences, log lines, records, list items, headings;
* :mod:`.boilerplate` — running headers and footers, tables of contents, indexes, navigation: left out;
* :mod:`.ranking` — the passages indexed as a reader sees them; the best unread ones for a question and for
  the names its evidence brought up (the second hop);
* :mod:`.reading` — a step: a question's best passages shown together, in document order; the model copies
  the lines that answer and gives the answer; code finds the copied lines and the answer in the passages;
* :mod:`.keeping` — the evidence: those lines word for word, with their places and context, bounded;
* :mod:`.collect` — "how many", "list every", "the first …": code collects every matching unit of the whole
  document, grouped and counted; the model says which group the question means;
* :mod:`.answer` — the final answer from the evidence, settled against the document's own words, or "the
  document does not say".

Stopping is in code: a question stops once a step's answer is found in its passages, after ``rounds`` steps, or
when no unread passage matches it. Several questions read in one pass: every step serves each reading question
with its own passages, in one batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memread import prompts
from memread.backends.base import Completion
from memread.document import Chunk
from memread.settings import read_limit
from memread.strategies.base import BudgetItem, ReadChoice, State, StepPlan, StepResult, Strategy
from memread.strategies.evidence import answer, collect, keeping, reading
from memread.strategies.evidence.ranking import Passages, names_in
from memread.strategies.evidence.units import HEADING, units

__all__ = ["EvidenceOptions", "EvidenceStrategy", "units"]

REPLY_TOKENS = 48  # a boxed answer: a name, a value, a path
FINAL_TOKENS = 200  # at most, for the final answer: a copied value, or a count and the lines it cites
COLLECT_REPLY_TOKENS = 24


@dataclass(frozen=True)
class EvidenceOptions:
    passages: int = field(default=6, metadata={
        "min": 1, "max": 16, "help": "passages a question reads in one step, shown together in document order"})
    rounds: int = field(default=3, metadata={
        "min": 1, "help": "steps a question reads at most before it answers (each re-ranks with what was found)"})
    mode: str = field(default="auto", metadata={
        "choices": ("auto", "lookup", "collect", "all"),
        "help": "auto: how-many, list-every and first/last questions are collected from the whole document, the "
                "rest read their best passages; lookup or collect: always that; all: read every chunk in order "
                "and copy what answers (slow; for questions no words of the text can find)"})
    exit_gate: bool = field(default=True, metadata={
        "help": "off: read every chunk in document order (as mode=all), up to max_read"})
    max_read: float = field(default=1.0, metadata={
        "min": 0.0, "max": 1.0, "help": "the share of the chunks a question reads at most (at least one)"})


class EvidenceStrategy(Strategy):
    name = "evidence"
    label = "verbatim evidence"
    summary = "reads the passages that match the question; the model copies the lines that answer, code checks them"
    Options = EvidenceOptions
    options: EvidenceOptions
    chooses_order = True
    default_chunk_tokens = 400  # a passage: four of them make one step's prompt

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._passages: Passages | None = None
        self._groups: dict[str, list[collect.Group]] = {}
        self._document: Any = None
        self._outline: list[Any] = []

    # --- the document ---------------------------------------------------------------------------------

    def observe_document(self, document: Any) -> None:
        """Keep the document, whose outline (its own headings) is complete once its chunks are indexed."""
        self._document = document

    def index(self, chunks: Iterable[Chunk]) -> None:
        self.close()
        self._passages = Passages(chunks, outline=lambda: list(getattr(self._document, "outline", None) or []))
        self._outline = self._passages.outline
        self._groups.clear()

    @property
    def passages(self) -> Passages:
        if self._passages is None:
            raise RuntimeError("the evidence strategy reads only after index()")
        return self._passages

    def mode(self, question: str) -> str:
        """lookup, all, or a :mod:`.collect` kind (count, list, first, last)."""
        if not self.options.exit_gate or self.options.mode == "all":
            return "all"
        kind = collect.question_kind(question)
        if self.options.mode == "lookup" or (self.options.mode == "auto" and kind == collect.LOOKUP):
            return "lookup"
        return kind if kind != collect.LOOKUP else collect.COUNT

    # --- choosing what each step reads ------------------------------------------------------------------

    def next_read(self, states: Mapping[int, State], questions: Sequence[str]) -> ReadChoice | None:
        plans = {lane: self._plan(questions[lane], state) for lane, state in states.items()}
        plans = {lane: plan for lane, plan in plans.items() if plan}
        if not plans:
            return None
        first = min(plans, key=lambda lane: (plans[lane][0], lane))
        lanes = tuple(sorted(plans))
        chunk = self.passages.get(plans[first][0])
        if len(lanes) == 1:
            reason = self._reason(questions[first], states[first], plans[first])
        else:
            reason = f"{len(lanes)} questions, each its own passages"
        return ReadChoice(chunk, lanes, reason)

    def phase(self, question: str, state: State) -> str | None:
        """What the lane's next step does: "collect" (choose among the counted groups), "passages" (read its
        best passages, or, in mode all, the next chunk), or None: it is done. A how-many question does both:
        "how many days was the pier closed" is answered by a passage, "how many entries are marked X" by
        counting, and only the model can tell which it is."""
        if state.get("done"):
            return None
        mode = self.mode(question)
        if mode == "lookup" and state.get("pending"):
            return "check"
        if mode in ("lookup", "all"):
            return "passages"
        if state.get("counts") is None:
            return "collect" if self._collected(question) else ("passages" if mode == collect.COUNT else None)
        return "passages" if mode == collect.COUNT and not state.get("rounds") else None

    def _plan(self, question: str, state: State) -> list[int]:
        """The chunks the lane reads in its next step ([] when it has nothing left to read)."""
        read = list(state.get("read", []))
        phase = self.phase(question, state)
        if phase is None or len(read) >= read_limit(self.options.max_read, len(self.passages)):
            return []
        mode = self.mode(question)
        if mode == "all":
            following = next((i for i in range(len(self.passages)) if i not in set(read)), None)
            return [] if following is None else [following]
        if phase == "collect":
            groups = self._collected(question)
            return [int(groups[0].items[0]["chunk"])] if groups[0].items else []
        if phase == "check":
            return [int(state["evidence"][-1]["chunk"])] if state.get("evidence") else [0]
        names = names_in((e["text"] for e in state.get("evidence", [])), question)
        room = read_limit(self.options.max_read, len(self.passages)) - len(read)
        ranked = self.passages.rank(question, names, skip=set(read), limit=min(self.options.passages, room))
        return sorted(chunk for chunk, score in ranked if score > 0)

    def _reason(self, question: str, state: State, plan: list[int]) -> str:
        mode = self.mode(question)
        if mode == "all":
            return "next in document order"
        if self.phase(question, state) == "collect":
            return f"collected {sum(g.count for g in self._collected(question))} lines of the whole document"
        places = ", ".join(self.passages.labels[i].split(" · ")[0] for i in plan)
        again = " (re-ranked with what was found)" if state.get("evidence") else ""
        return f"best {len(plan)} passages: {places}{again}"

    # --- one lane ---------------------------------------------------------------------------------------

    def initial_state(self) -> State:
        return {"memory": prompts.NO_MEMORY, "evidence": [], "read": [], "rounds": 0}

    def plan_step(self, lane: int, question: str, state: State, chunk: Chunk) -> StepPlan:
        if self.phase(question, state) == "check":
            return StepPlan(answer.final_prompt(question, keeping.render(state.get("evidence", []))), REPLY_TOKENS,
                            reply_start=reading.REPLY_START)
        if self.phase(question, state) == "passages":
            shown = self._shown(self._plan(question, state))
            evidence = keeping.render(state.get("evidence", [])) if state.get("evidence") else ""
            return StepPlan(reading.step_prompt(question, shown, evidence), REPLY_TOKENS,
                            reply_start=reading.REPLY_START)
        groups = collect.summary(self._collected(question))
        return StepPlan(collect_step_prompt(question, groups), COLLECT_REPLY_TOKENS, reply_start=reading.REPLY_START)

    def _shown(self, plan: Sequence[int]) -> list[reading.Shown]:
        return [reading.Shown(i, self.passages.labels[i], self.passages.readable(i)) for i in plan]

    def read_reply(self, lane: int, question: str, state: State, chunk: Chunk,
                   completion: Completion) -> StepResult:
        phase = self.phase(question, state)
        if phase == "check":
            return self._check(question, state, completion)
        if phase == "passages":
            return self._read_passages(question, state, completion)
        return self._read_groups(question, state, completion)

    def _read_passages(self, question: str, state: State, completion: Completion) -> StepResult:
        plan = self._plan(question, state)
        shown = self._shown(plan)
        mode = self.mode(question)
        step = int(state.get("rounds", 0)) + 1
        evidence = [dict(e) for e in state.get("evidence", [])]
        candidates = [dict(c) for c in state.get("candidates", [])]
        said = reading.step_answer(completion.text)
        places = reading.holding(said, shown) if said else []
        issues: list[str] = []
        best = None
        if said and reading.yes_no(question, said):  # "yes" is in no passage: keep the lines about the question
            lines = reading.best_lines(question, shown)
            self._keep(shown, lines, evidence, step)
            best = {"answer": said.strip().strip(".").lower(), "step": step,
                    "support": max((reading.support(question, shown[p], u) for p, u in lines), default=0)}
            candidates.append(best)
        elif places:
            p, u = max(places, key=lambda place: (reading.support(question, shown[place[0]], place[1]), -place[0]))
            best = {"answer": reading.snap(said or "", shown[p].units[u].text), "step": step,
                    "support": reading.support(question, shown[p], u)}
            self._keep(shown, [(p, u)], evidence, step)
            candidates.append(best)
        elif said:
            issues.append(f"the answer {said[:60]!r} is not in the passages shown")
        else:
            issues.append("the reply gives no answer")
        evidence, dropped = keeping.bounded(evidence, question, self.settings.memory_tokens, self._tokens)
        read = [*state.get("read", []), *plan]
        new_state = {**state, "evidence": evidence, "read": read, "rounds": step, "candidates": candidates,
                     "pending": bool(best) and mode == "lookup"}
        exit_reason = ""
        if mode == collect.COUNT:
            exit_reason = "counted, and read the best passages"
        elif mode == "lookup" and not best and step >= self.options.rounds:
            exit_reason = f"read {step} steps of {self.options.passages} passages (rounds {self.options.rounds})"
        if not exit_reason and not new_state["pending"] and not self._plan(question, new_state):
            exit_reason = "no unread passage matches the question" if mode == "lookup" else "read every chunk"
        new_state["done"] = bool(exit_reason)
        new_state["memory"] = keeping.render(evidence)
        new_state["sources"] = _sources(evidence)
        summary = (f"answer {best['answer']!r} on a line sharing {best['support']} of the question's words"
                   if best else "no answer found in the passages")
        if dropped:
            summary += f", dropped {dropped} (memory full)"
        return StepResult(state=new_state, memory=new_state["memory"],
                          memory_changed=new_state["memory"] != state.get("memory"), truncated=False,
                          exit=bool(exit_reason), exit_reason=exit_reason or "exit-gate",
                          decisions={"passages": plan, "answer": said, "found": best, "read": len(read)},
                          summary=summary, parse_issues=tuple(issues))

    def _check(self, question: str, state: State, completion: Completion) -> StepResult:
        """The answerability check: shown only the lines kept, does the model answer from them? Yes ends the
        reading; "not in the document" sends the question on to its next passages, if any are left."""
        said = reading.step_answer(completion.text)
        lines = "\n".join(f"{e.get('head', '')} {e['text']}" for e in state.get("evidence", []))
        confirmed = None
        if said and not answer.says_absent(said):
            confirmed = said.lower() if reading.yes_no(question, said) else reading.snap(said, lines)
        rounds = int(state.get("rounds", 0))
        new_state = {**state, "pending": False, "confirmed": confirmed}
        exit_reason = ""
        if confirmed:
            exit_reason = f"the lines kept answer the question ({confirmed[:40]})"
        elif rounds >= self.options.rounds:
            exit_reason = f"read {rounds} steps of {self.options.passages} passages (rounds {self.options.rounds})"
        elif not self._plan(question, new_state):
            exit_reason = "no unread passage matches the question"
        new_state["done"] = bool(exit_reason)
        summary = f"checked: the lines kept answer {confirmed!r}" if confirmed else "checked: the lines kept do not answer"
        return StepResult(state=new_state, memory=str(state.get("memory")), memory_changed=False, truncated=False,
                          exit=bool(exit_reason), exit_reason=exit_reason or "exit-gate",
                          decisions={"check": said, "confirmed": confirmed}, summary=summary)

    def _keep(self, shown: Sequence[reading.Shown], places: Iterable[tuple[int, int]],
              evidence: list[dict[str, Any]], step: int) -> list[dict[str, Any]]:
        added = []
        for p, u in places:
            passage = shown[p]
            unit = passage.units[u]
            if keeping.covered(evidence, passage.chunk, unit):
                continue
            every = list(self.passages.units(passage.chunk))
            position = next(i for i, other in enumerate(every) if other.start == unit.start)
            entry = keeping.entry(self.passages.get(passage.chunk), every, position,
                                  self.passages.contexts[passage.chunk], step=step, how="answer")
            evidence.append(entry)
            added.append(entry)
        return added

    def _read_groups(self, question: str, state: State, completion: Completion) -> StepResult:
        groups = self._collected(question)
        chosen, issues = _group_numbers(completion.text, len(groups))
        if not chosen and groups:
            chosen = [1]
            issues.append("the reply names no group; the first (the closest match) is taken")
        picked = [groups[n - 1] for n in chosen]
        items = sorted((item for g in picked for item in g.items), key=keeping.document_order)
        kind = self.mode(question)
        if kind == collect.FIRST:
            items = items[:1]
        elif kind == collect.LAST:
            items = items[-1:]
        counts = [g.count for g in picked]
        counted = "\n".join(f"{g.count} lines ({g.key})" for g in picked)
        listed = keeping.render(items[:12]) if items else prompts.NO_MEMORY
        memory = f"{counted}\n{listed}" if kind in (collect.COUNT, collect.LIST) else listed
        more = kind == collect.COUNT  # a how-many question also reads its best passages (phase)
        new_state = {**state, "done": not more, "counts": counts, "kind": kind, "items": items[:200],
                     "counted": memory, "sources": _sources(items[:200])}
        if not more:
            new_state.update(evidence=items[:200], memory=memory)
        else:
            new_state["memory"] = memory
        return StepResult(state=new_state, memory=memory, memory_changed=True, truncated=False, exit=not more,
                          exit_reason=f"counted the whole document: {sum(counts)} lines in {len(picked)} group(s)",
                          decisions={"groups": chosen, "counts": counts},
                          summary=f"chose group {', '.join(map(str, chosen))}: {sum(counts)} lines",
                          parse_issues=tuple(issues))

    def _collected(self, question: str) -> list[collect.Group]:
        """The groups of the whole document's units that a collect question is about (computed once)."""
        if question not in self._groups:
            self._groups[question] = self._collect(question)
        return self._groups[question]

    def _collect(self, question: str) -> list[collect.Group]:
        store = self.passages
        if collect.parts_asked(question) and self._outline:
            groups = collect.group_outline(self._outline, collect.quoted(question))
            if groups:
                return groups
        if collect.parts_asked(question):
            headings = list(self._units_of(range(len(store)), headings_only=True))
            scope = None
            for title in collect.quoted(question):
                scope = collect.section_number(title, (unit.text for _, unit in headings))
                if scope:
                    break
            groups = collect.group_headings(headings, scope)
            if groups:
                return groups
        wanted = collect.anchors(question)
        # The chunks to collect from: those holding every identifier of the question ("urgency=high", "XPASS"),
        # else those holding its rarest word that the document holds.
        chunks = store.holding(collect.identifiers(question))
        if not chunks:
            held = [(len(found), found) for anchor in wanted if (found := store.holding([anchor]))]
            chunks = min(held)[1] if held else []
        return collect.group_units(self._units_of(chunks), wanted)

    def _units_of(self, chunks: Iterable[int], *, headings_only: bool = False) -> Iterable[tuple[dict[str, Any], Any]]:
        for index in chunks:
            chunk = self.passages.get(index)
            every = units(chunk.text, boilerplate=self.passages.boilerplate)
            for position, unit in enumerate(every):
                if not unit.readable or (headings_only and unit.kind != HEADING):
                    continue
                yield keeping.entry(chunk, every, position, self.passages.contexts[index], step=1,
                                    how="collected"), unit

    # --- the answer -------------------------------------------------------------------------------------

    def plan_final(self, lane: int, question: str, state: State) -> StepPlan:
        if state.get("counts") is not None:
            lines = keeping.render(state.get("evidence", [])) if state.get("kind") == collect.COUNT else ""
            return StepPlan(answer.collect_prompt(question, str(state.get("counted", "")), lines), self._final_tokens)
        return StepPlan(answer.final_prompt(question, self._final_evidence(state)), self._final_tokens)

    @property
    def _final_tokens(self) -> int:
        # A final reply past a short answer is what a small model degenerates into (". . . ." to the limit).
        return min(self.settings.final_tokens, FINAL_TOKENS)

    def _final_evidence(self, state: State) -> str:
        memory = str(state.get("memory", prompts.NO_MEMORY))
        return memory if memory != prompts.NO_MEMORY else "(no line of the document was found to answer)"

    def settle(self, lane: int, question: str, state: State, reply_answer: str, boxed: bool) -> tuple[str, bool]:
        counts = state.get("counts")
        if counts is not None and state.get("kind") == collect.COUNT:
            evidence = "\n".join(e["text"] for e in state.get("evidence", []))
            return answer.settle_count(reply_answer, list(counts), evidence), True
        if counts is not None:
            return reply_answer, boxed
        if self.mode(question) == "lookup" and not state.get("confirmed"):
            return answer.DOES_NOT_SAY, True  # every check said the lines kept do not answer
        evidence = "\n".join(f"{e.get('head', '')} {e['text']}" for e in state.get("evidence", []))
        return answer.settle_lookup(reply_answer, evidence, state.get("confirmed")), True

    # --- what the rest of memread asks ------------------------------------------------------------------

    def templates(self) -> dict[str, str]:
        return {"memory": reading.step_prompt("{prompt}", [], "{memory}"),
                "final": answer.final_prompt("{prompt}", "{memory}"),
                "collect": collect_step_prompt("{prompt}", "{groups}"),
                "collect_final": answer.collect_prompt("{prompt}", "{memory}")}

    def budget(self, question: str) -> list[BudgetItem]:
        evidence = self.settings.memory_tokens
        shown = self.options.passages * (self.chunk_tokens + 24)  # each passage's heading line
        return [BudgetItem("step", reading.step_prompt(question, [], ""),
                           shown + evidence, REPLY_TOKENS),
                BudgetItem("final", answer.final_prompt(question, ""), evidence, self._final_tokens)]

    def close(self) -> None:
        if self._passages is not None:
            self._passages.close()
            self._passages = None

    def _tokens(self, text: str) -> int:
        return self.tokenizer.count(text) if self.tokenizer is not None else len(text) // 4 + 1


def collect_step_prompt(question: str, groups: str) -> str:
    return (f"memread read the whole document and grouped the lines that hold the question's words:\n\n{groups}\n\n"
            f"Question: {question}\n\nWhich group or groups of lines is the question about? Answer with the group "
            "numbers in \\boxed{}, e.g. \\boxed{2}.")


def _group_numbers(reply: str, count: int) -> tuple[list[int], list[str]]:
    import re

    from memread.answer import final_answer

    text, boxed = final_answer(reply, style="boxed")
    numbers = [int(n) for n in re.findall(r"\d+", text if boxed else reply)]
    chosen = [n for n in dict.fromkeys(numbers) if 1 <= n <= count]
    issues = [f"group {n} does not exist" for n in numbers if not 1 <= n <= count]
    return chosen, issues


def _sources(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"where": e["where"], "spans": e["spans"], "excerpt": e["text"][:200], "chunk": e["chunk"]}
            for e in sorted(entries, key=keeping.document_order)]
