"""evidence: answers about real documents, copied from them, for small models never trained to keep a memory.

What untrained small models do well is read one short passage and say what in it answers a question; what they
do badly is keep a memory, judge when to stop, say "none", tell the right passage among several, and count. So
the model only reads and picks, and code does the rest (one concept per module):

* :mod:`.units` — numbering: a passage cut into sentences, log lines, records, list items, headings;
* :mod:`.boilerplate` — running headers and footers, tables of contents, indexes, navigation: left out;
* :mod:`.ranking` — the passages indexed as a reader sees them; the best unread one for a question and for the
  names its evidence brought up (the second hop);
* :mod:`.reading` — a step: one passage, and the question; the model answers in its words, code finds the
  answer in the passage and keeps the lines around it;
* :mod:`.keeping` — the evidence: those lines word for word, with their places and context, bounded;
* :mod:`.questions` — what a question asks: a lookup, or a whole-document question (how many, list every, the
  first or last), and what a unit must hold to answer it;
* :mod:`.collect` — "how many", "list every", "the first …": code collects every matching unit of the whole
  document (or its parts' headings, :mod:`.parts`), grouped (:mod:`.groups`) and counted; the model says which;
* :mod:`.answer` — choosing among the answers found, settled against the document's own words, or "the
  document does not say".
* :mod:`.hops` — a question about "that <thing>" its first sentence names: the thing first, then the rest;
* :mod:`.stopping` — when a round of passages ends, when the reading ends, and the steps left.

A question reads its best passages one step each (``passages`` of them, re-ranked after each with what was
found), then a *select* step shows it only the lines its answers came from: the model answers from them, or says
they do not answer, and the question reads its next passages (``rounds`` at most). Stopping is in code. Several
questions read in one pass: a step reads the passage most of them rank first, for those that do, with the
passage first in the prompt so they share its prefill.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from memread import prompts
from memread.backends.base import Completion
from memread.document import Chunk
from memread.events import WHOLE_DOCUMENT
from memread.fulltext import query_terms
from memread.settings import read_limit
from memread.strategies.base import BudgetItem, ReadChoice, State, StepPlan, StepResult, Strategy
from memread.strategies.evidence import (
    answer,
    collect,
    hops,
    keeping,
    ordering,
    questions,
    ranking,
    reading,
    stopping,
)
from memread.strategies.evidence.dates import asks_date
from memread.strategies.evidence.options import EvidenceOptions
from memread.strategies.evidence.ranking import Passages, names_in
from memread.strategies.evidence.stopping import COLLECT, READ, SELECT
from memread.strategies.evidence.units import units

__all__ = ["EvidenceOptions", "EvidenceStrategy", "units"]

REPLY_TOKENS = 48  # a boxed answer: a name, a value, a path
FINAL_TOKENS = 200  # at most, for the final answer: a copied value, or a count and the lines it cites
COLLECT_REPLY_TOKENS = 24


class EvidenceStrategy(Strategy):
    name = "evidence"
    label = "verbatim evidence"
    summary = "reads the passages that match the question; the model answers from each, code checks it is there"
    Options = EvidenceOptions
    options: EvidenceOptions
    chooses_order = True
    whole_document: ClassVar[dict[str, Any]] = {"mode": "collect"}  # every matching unit, counted in code
    default_chunk_tokens = 400  # a passage: short enough for a small model to read closely

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._passages: Passages | None = None
        self._groups: dict[str, list[collect.Group]] = {}
        self._document: Any = None
        self._backwards: bool | None = None

    # --- the document ---------------------------------------------------------------------------------

    def observe_document(self, document: Any) -> None:
        """Keep the document, whose outline (its own headings) is complete once its chunks are indexed."""
        self._document = document

    def index(self, chunks: Iterable[Chunk]) -> None:
        self.close()
        self._passages = Passages(chunks, outline=lambda: list(getattr(self._document, "outline", None) or []))
        self._groups.clear()
        self._backwards = None

    def _never_mentioned(self, question: str) -> list[str]:
        """The question's identifiers that no passage holds: a lookup about one is answered, without reading, that
        the document does not say (the design set's own absent questions about CVE-2022-38533 and loongarch64)."""
        return self.passages.unheld(ranking.identifiers(question), reading.snap)

    @property
    def passages(self) -> Passages:
        if self._passages is None:
            raise RuntimeError("the evidence strategy reads only after index()")
        return self._passages

    @property
    def _round(self) -> EvidenceOptions:
        """The options as stopping reads them: a round of :func:`stopping.round_size` passages."""
        return replace(self.options, passages=stopping.round_size(self.options, len(self.passages)))

    def mode(self, question: str) -> str:
        """lookup, all, or a :mod:`.collect` kind (count, list, first, last)."""
        if not self.options.exit_gate or self.options.mode == "all":
            return "all"
        kind = questions.question_kind(question)
        if self.options.mode == "lookup" or (self.options.mode == "auto" and kind == questions.LOOKUP):
            return "lookup"
        return kind if kind != questions.LOOKUP else questions.COUNT

    def phase(self, question: str, state: State) -> str | None:
        """What the lane's next step does: COLLECT (choose among the counted groups), READ (one passage), SELECT
        (answer from the lines kept), or None: it is done. A how-many question collects and then reads one round:
        "how many days was the pier closed" is answered by a passage, "how many entries are marked X" by
        counting, and only the model can tell which it is."""
        if state.get("done"):
            return None
        mode = self.mode(question)
        if mode == "lookup" and self._never_mentioned(question):
            return None
        if mode not in ("lookup", "all") and state.get("counts") is None:
            return COLLECT if self._collected(question) else (READ if mode == questions.COUNT else None)
        if mode not in ("lookup", "all", questions.COUNT):
            return None
        return SELECT if state.get("select") else READ

    # --- choosing what each step reads ------------------------------------------------------------------

    def next_read(self, states: Mapping[int, State], questions: Sequence[str]) -> ReadChoice | None:
        wanted: dict[int, list[int]] = {}  # chunk -> the lanes that read it next
        other: list[int] = []  # lanes whose step reads no passage (select, collect): they join any step
        asked = {lane: hops.asking(questions[lane], state) for lane, state in states.items()}
        for lane, state in states.items():
            phase = self.phase(asked[lane], state)
            if phase == READ:
                chunk = self._next_passage(asked[lane], state)
                if chunk is not None:
                    wanted.setdefault(chunk, []).append(lane)
            elif phase is not None:
                other.append(lane)
        if not wanted and not other:
            return None
        if wanted:
            chunk = min(wanted, key=lambda c: (-len(wanted[c]), c))
            lanes = tuple(sorted([*wanted[chunk], *other]))
        else:
            chunk, lanes = self._anchor(asked[other[0]], states[other[0]]), tuple(sorted(other))
        reason = self._reason(chunk, [asked[lane] for lane in lanes], [states[lane] for lane in lanes])
        return ReadChoice(self.passages.get(chunk), lanes, reason)

    def _next_passage(self, question: str, state: State) -> int | None:
        """The best unread passage for the question and what was found so far (None: nothing left to read)."""
        read = list(state.get("read", []))
        if len(read) >= read_limit(self.options.max_read, len(self.passages)):
            return None
        if self.mode(question) == "all":
            return next((i for i in range(len(self.passages)) if i not in set(read)), None)
        # What to look for next: the names the evidence brought up, and the answers the checks turned down (an
        # answer that does not answer names what the question is about: the tool that "takes --delayed").
        found = [str(c["answer"]) for c in state.get("candidates", []) if c.get("answer")]
        # (A line kept only as the one most about the question, with no answer on it, names nothing new.)
        names = names_in([*found, *(e["text"] for e in state.get("evidence", []) if e.get("how") != "near")],
                         question)
        names = [*(w for a in found for w in query_terms(a) if w not in names), *names][:24]
        bridge = state.get("bridge")  # the second hop reads where its bridge is first
        ranked = self.passages.rank(question, names, skip=set(read), limit=len(self.passages) if bridge else 1)
        held = hops.bridged(ranked, self.passages.holding_name(bridge, reading.snap), set(read)) if bridge else None
        return held if held is not None else ranked[0][0] if ranked and ranked[0][1] > 0 else None

    def _steps_left(self, question: str, state: State) -> int:
        """The steps the lane reads at most from ``state`` on (:func:`stopping.steps_left`)."""
        unread = max(read_limit(self.options.max_read, len(self.passages)) - len(state.get("read", [])), 0)
        return stopping.steps_left(self.mode(question), self.phase(question, state), state, self._round, unread)

    def _anchor(self, question: str, state: State) -> int:
        """The chunk a step that reads no passage is shown at: its best answer's, else the last read."""
        entries = state.get("evidence") or []
        if entries:
            return int(entries[-1]["chunk"])
        groups = self._collected(question) if self.mode(question) not in ("lookup", "all") else []
        if groups and groups[0].items:
            return int(groups[0].items[0]["chunk"])
        return int((state.get("read") or [0])[-1])

    def _reason(self, chunk: int, questions: Sequence[str], states: Sequence[State]) -> str:
        place = self.passages.labels[chunk].split(" · ")[0]
        phases = {self.phase(q, s) for q, s in zip(questions, states, strict=True)}
        if phases == {COLLECT}:
            return f"collected {sum(g.count for g in self._collected(questions[0]))} lines of the whole document"
        if phases == {SELECT}:
            return "the lines the answers came from, checked"
        if len(questions) == 1 and self.mode(questions[0]) == "all":
            return "next in document order"
        again = " (re-ranked with what was found)" if any(s.get("candidates") for s in states) else ""
        return f"best unread passage, {place}{again}"

    # --- one lane ---------------------------------------------------------------------------------------

    def initial_state(self) -> State:
        return {"memory": prompts.NO_MEMORY, "evidence": [], "read": [], "rounds": 0, "in_round": 0}

    def plan_step(self, lane: int, question: str, state: State, chunk: Chunk) -> StepPlan:
        question = hops.asking(question, state)
        phase = self.phase(question, state)
        if phase == SELECT:
            return StepPlan(answer.final_prompt(question, keeping.for_model(state.get("evidence", []))), REPLY_TOKENS,
                            reply_start=reading.REPLY_START)
        if phase == COLLECT:
            return StepPlan(collect.step_prompt(question, collect.summary(self._collected(question))),
                            COLLECT_REPLY_TOKENS, reply_start=reading.REPLY_START)
        shown = self._shown(chunk.index)
        return StepPlan(reading.step_prompt(question, [shown], ""), REPLY_TOKENS, reply_start=reading.REPLY_START)

    def _shown(self, index: int) -> reading.Shown:
        return reading.Shown(index, self.passages.labels[index], self.passages.readable(index),
                             self.passages.records[index])

    def read_reply(self, lane: int, question: str, state: State, chunk: Chunk,
                   completion: Completion) -> StepResult:
        asked = hops.asking(question, state)
        phase = self.phase(asked, state)
        if phase == SELECT:
            return self._select(asked, state, completion)
        if phase == COLLECT:
            return self._choose_groups(asked, state, completion)
        whole = hops.first_hop(question, state)  # a first hop's round is read whole: its bridge is chosen across it
        result = self._read(asked, state, chunk, completion, whole=whole)
        if not whole:
            return result
        if not (result.exit or result.state.get("select") or result.state.get("in_round") == 0):  # round goes on
            return replace(result, steps_left=(result.steps_left or 0) + self._steps_left(question, {}))
        second = hops.next_hop(question, result.state, self.initial_state())  # the first hop's round is read
        asked, bridge = str(second["asking"]), second["bridge"]
        return replace(result, state=second, exit=False, exit_reason="exit-gate",
                       summary=f"first hop: {bridge!r}, now: {asked}" if bridge else
                       f"the first hop found nothing: the question is read as asked ({result.summary})",
                       steps_left=self._steps_left(asked, second))

    def _read(self, question: str, state: State, chunk: Chunk, completion: Completion, whole: bool) -> StepResult:
        """One passage read: the answer found in it, the lines around it kept, and whether the round is over."""
        shown = self._shown(chunk.index)
        mode = self.mode(question)
        step = len(state.get("read", [])) + 1
        evidence = [dict(e) for e in state.get("evidence", [])]
        candidates = [dict(c) for c in state.get("candidates", [])]
        said = reading.step_answer(completion.text)
        found, issues = reading.found(question, shown, said, evidence, step, self.passages)
        if found:
            candidates.append(found)
        evidence, dropped = keeping.bounded(evidence, question, self.settings.memory_tokens, self._tokens)
        read = [*state.get("read", []), chunk.index]
        in_round = int(state.get("in_round", 0)) + 1
        new_state = {**state, "evidence": evidence, "read": read, "candidates": candidates, "in_round": in_round}
        left = self._next_passage(question, new_state) is not None
        sure = stopping.sure(question, mode, found, state, chunk.index, whole=whole, early=self.options.early,
                             holding=lambda name: self.passages.holding_name(name, reading.snap))
        exit_reason, changes = stopping.after_read(mode, state, new_state, self._round, left=left, sure=sure)
        new_state.update(changes)
        new_state["done"] = bool(exit_reason)
        new_state["memory"] = keeping.render(evidence)
        new_state["sources"] = keeping.sources([*state.get("items", []), *evidence])  # a count's lines first
        if found and found["answer"]:
            summary = f"answer {found['answer']!r} on a line sharing {found['support']} of the question's words"
        else:
            summary = "kept the line most about the question" if found else "no answer in this passage"
        if dropped:
            summary += f", dropped {dropped} (memory full)"
        return StepResult(state=new_state, memory=new_state["memory"],
                          memory_changed=new_state["memory"] != state.get("memory"), truncated=False,
                          exit=bool(exit_reason), exit_reason=exit_reason or "exit-gate",
                          decisions={"answer": said, "found": found, "read": len(read)},
                          summary=summary, parse_issues=tuple(issues), steps_left=self._steps_left(question, new_state))

    def _select(self, question: str, state: State, completion: Completion) -> StepResult:
        """The round's check: shown only the lines its answers came from, does the model answer from them? Yes
        ends the reading; "not in the document" sends the question on to its next round, if any is left."""
        said = reading.step_answer(completion.text)
        confirmed = answer.checked(question, said, keeping.searchable(state.get("evidence", [])),
                                   state.get("candidates", []), stopping.round_start(state))
        rounds = int(state.get("rounds", 0)) + 1
        new_state = {**state, "select": False, "confirmed": confirmed, "rounds": rounds, "in_round": 0}
        exit_reason = stopping.after_select(confirmed, rounds, self._round,
                                            left=lambda: self._next_passage(question, new_state) is not None)
        new_state["done"] = bool(exit_reason)
        summary = f"checked: the lines kept answer {confirmed!r}" if confirmed else "checked: the lines kept do not answer"
        return StepResult(state=new_state, memory=str(state.get("memory")), memory_changed=False, truncated=False,
                          exit=bool(exit_reason), exit_reason=exit_reason or "exit-gate",
                          decisions={"check": said, "confirmed": confirmed}, summary=summary,
                          steps_left=self._steps_left(question, new_state))

    def _choose_groups(self, question: str, state: State, completion: Completion) -> StepResult:
        groups = self._collected(question)
        chosen, issues = collect.chosen_groups(completion.text, len(groups))
        kind = self.mode(question)
        decided, why = collect.decided(question, kind in (questions.LIST, questions.COUNT), groups)
        if decided is not None and chosen != [decided]:
            issues.append(f"{why}: group {decided}, not {', '.join(map(str, chosen)) or 'none'}")
            chosen = [decided]
        if not chosen and groups:
            chosen = [1]
            issues.append("the reply names no group; the first (the closest match) is taken")
        picked = collect.picked_groups(question, groups, chosen)
        items = [item for g in picked for item in g.items]
        items = ordering.in_order(items, kind in (questions.FIRST, questions.LAST) and self._newest_first())
        if kind == questions.FIRST:
            items = items[:1]
        elif kind == questions.LAST:
            items = items[-1:]
        counts, counted = collect.counts_of(question, picked, groups)  # lines, or the identifiers or words asked
        listed = keeping.render(items[:12]) if items else prompts.NO_MEMORY
        memory = f"{counted}\n{listed}" if kind in (questions.COUNT, questions.LIST) else listed
        shown = keeping.for_model(items[:12]) if items else prompts.NO_MEMORY  # the model is shown no places
        shown = f"{counted}\n{shown}" if kind in (questions.COUNT, questions.LIST) else shown
        # A how-many question also reads its best passages (phase), for a number a line states ("closed for 12
        # days"), unless it counts the document's parts: a number on a contents line or a heading is a section's
        # own ("5.2 Character Arrays" gave 2 for the sections of "5 Strings"; own-aggregate.md).
        more = kind == questions.COUNT and not all(g.parts for g in picked) and not questions.mentioned(question)
        total = sum(g.count for g in picked)
        lines = f"{total} line{'s' if total != 1 else ''}"
        new_state = {**state, "done": not more, "counts": counts, "kind": kind, "items": items[:200],
                     "counted": shown, "sources": keeping.sources(items[:200]), "memory": memory,
                     "parts": all(g.parts for g in picked)}  # headings: a first/last one is answered whole
        if not more:
            new_state["evidence"] = items[:200]
        return StepResult(state=new_state, memory=memory, memory_changed=True, truncated=False, exit=not more,
                          exit_reason=f"{WHOLE_DOCUMENT}: {lines} in {len(picked)} group(s)",
                          decisions={"groups": chosen, "counts": counts},
                          summary=f"chose group {', '.join(map(str, chosen))}: {lines}",
                          parse_issues=tuple(issues), steps_left=self._steps_left(question, new_state))

    def _newest_first(self) -> bool:
        """Whether the document runs backwards in time (:func:`ordering.newest_first`; computed once)."""
        if self._backwards is None:
            passages = self.passages
            self._backwards = ordering.newest_first(unit.text for index in range(len(passages))
                                                   for unit in passages.units(index, keep=False))
        return self._backwards

    def _collected(self, question: str) -> list[collect.Group]:
        """The groups of the whole document's units that a collect question is about (computed once)."""
        if question not in self._groups:
            self._groups[question] = collect.collected(self.passages, question)
        return self._groups[question]

    # --- the answer -------------------------------------------------------------------------------------

    def plan_final(self, lane: int, question: str, state: State) -> StepPlan:
        question = hops.asking(question, state)
        if state.get("counts") is not None:
            lines = keeping.for_model(state.get("evidence", [])) if state.get("kind") == questions.COUNT else ""
            return StepPlan(answer.collect_prompt(question, str(state.get("counted", "")), lines), self._final_tokens)
        memory = keeping.for_model(state.get("evidence", []))
        evidence = memory if state.get("evidence") else "(no line of the document was found to answer)"
        return StepPlan(answer.final_prompt(question, evidence), self._final_tokens)

    @property
    def _final_tokens(self) -> int:
        # A final reply past a short answer is what a small model degenerates into (". . . ." to the limit).
        return min(self.settings.final_tokens, FINAL_TOKENS)

    def answered_in_code(self, lane: int, question: str, state: State) -> str | None:
        """What :meth:`settle` answers whatever the final reply says, so no final call is made: a lookup no check
        confirmed, that the document does not say (naming what it never mentions, if the question names it); a
        count that can be one number only (one group counted, no number a passage stated), that number."""
        question = hops.asking(question, state)
        counts = state.get("counts")
        if counts is not None and state.get("kind") == questions.LIST:
            return answer.list_answer(state.get("items") or [], sum(counts))
        if counts and state.get("kind") == questions.COUNT:
            choices = answer.count_choices(list(counts), answer.stated_numbers(state.get("candidates", [])))
            return str(sum(counts)) if choices == {str(sum(counts))} else None
        if counts is not None or self.mode(question) != "lookup" or state.get("confirmed"):
            return None
        missing = self._never_mentioned(question)
        return answer.never_mentioned(missing) if missing else answer.DOES_NOT_SAY

    def settle(self, lane: int, question: str, state: State, reply_answer: str, boxed: bool) -> tuple[str, bool]:
        question = hops.asking(question, state)
        counts = state.get("counts")
        if counts is not None and state.get("kind") == questions.COUNT:
            return answer.settle_count(reply_answer, list(counts), answer.stated_numbers(state.get("candidates", []))), True
        items = state.get("items") or []
        if counts is not None and state.get("kind") in (questions.FIRST, questions.LAST) and items:
            first = items[0]
            return answer.settle_item(reply_answer, first, question, whole=bool(state.get("parts"))), True
        if counts is not None and state.get("kind") == questions.LIST:
            return answer.list_answer(items, sum(counts)), True
        if counts is not None:
            return reply_answer, boxed
        unconfirmed = self.answered_in_code(lane, question, state)  # settled so without a final call too
        if unconfirmed is not None:
            return unconfirmed, True
        evidence = keeping.searchable(state.get("evidence", []))
        return answer.settle_lookup(reply_answer, evidence, state.get("confirmed"), dates=asks_date(question),
                                    question=question), True

    # --- what the rest of memread asks ------------------------------------------------------------------

    def templates(self) -> dict[str, str]:
        return {"memory": reading.step_prompt("{prompt}", [], "{chunk}"),
                "final": answer.final_prompt("{prompt}", "{memory}"),
                "collect": collect.step_prompt("{prompt}", "{groups}"),
                "collect_final": answer.collect_prompt("{prompt}", "{memory}")}

    def budget(self, question: str) -> list[BudgetItem]:
        evidence = self.settings.memory_tokens
        return [BudgetItem("step", reading.step_prompt(question, [], ""), self.chunk_tokens + 32, REPLY_TOKENS),
                BudgetItem("select", answer.final_prompt(question, ""), evidence, REPLY_TOKENS),
                BudgetItem("final", answer.collect_prompt(question, "", ""), 2 * evidence, self._final_tokens)]

    def close(self) -> None:
        if self._passages is not None:
            self._passages.close()
            self._passages = None

    def _tokens(self, text: str) -> int:
        return self.tokenizer.count(text) if self.tokenizer is not None else len(text) // 4 + 1

