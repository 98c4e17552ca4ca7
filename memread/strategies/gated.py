"""gated (GRU-Mem): an update gate and an exit gate around MemAgent's memory.

The model is asked for ``<think>…</think>``, ``<check>yes|no</check>``, ``<update>…</update>`` and
``<next>continue|end</next>``. ``yes`` replaces the memory with the ``<update>`` content, ``no`` keeps the
previous memory, ``end`` stops this lane's reading and sends it to answer (unless ``exit_gate`` is
False: GRU-Mem's "w/o EG" mode for questions that need the whole text, such as "list all X").

Malformed replies (small untrained models omit tags, misspell values, forget close tags). The policy is
conservative — never lose a memory, never stop reading on a guess — and every deviation is recorded in
``StepResult.parse_issues``:

* tags are read leniently: any case, spaces inside the brackets or around the value (``<check> Yes
  </check>``), a missing close tag (the content runs to the next tag), tags inside markdown code fences
  or inline code; tags inside the ``<think>`` block are ignored when the block is closed;
* missing or invalid ``<check>`` (not yes/no/true/false): update if an ``<update>`` is present, else keep;
* ``<check>yes`` without an (non-empty) ``<update>``: keep the previous memory;
* several ``<update>`` blocks: the last one counts;
* missing or invalid ``<next>`` (not continue/end): continue.

Early stop (memread's speed feature, not in the paper; ``stop_on_check_no``, on by default): the request
carries stop strings for ``<check>no</check>`` (:data:`CHECK_NO_STOPS`), because everything the model would
write after a "no" is discarded anyway. Engines remove the stop string from the text, so the strategy
recognises a reply stopped there by:

1. ``Completion.stop_reason`` naming one of those stop strings (the llama.cpp backend in-process, vLLM), or
2. when the engine does not say which stop fired (llama-server, most OpenAI-compatible servers): the reply
   ended with ``finish_reason == "stop"`` and holds no ``<check``, ``<update`` or ``<next`` tag at all.
   A complete reply always has at least one of those, and a reply that naturally ended without any of them
   is read by the malformed-reply policy as "keep the memory, continue" — exactly what check=no means —
   so this inference can change what is recorded, never what happens to the memory. Engines known to
   name their stop strings (``Strategy.engine_names_stops``, set by the loop from the backend) skip the
   inference: there a reply without ``stop_reason`` ended naturally.

A reply stopped at ``<check>no`` means check=no and next=continue (``stopped_early`` is recorded). If the
text before the stop already held a ``<check>`` decision (the model wrote a second gate), that first
decision is parsed as usual. With the flag off, replies are generated in full (for fidelity tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from memread import prompts
from memread.backends.base import Completion
from memread.document import Chunk
from memread.strategies import tags
from memread.strategies.base import BudgetItem, State, StepPlan, StepResult, Strategy

# At most 4: OpenAI-compatible servers reject more stop strings.
CHECK_NO_STOPS: tuple[str, ...] = ("<check>no</check>", "<check>No</check>", "<check>NO</check>",
                                   "<check> no </check>")

_YES = {"yes", "true", "y"}
_NO = {"no", "false", "n"}


@dataclass(frozen=True)
class GatedReply:
    """A gated reply as parsed, before the policy is applied."""

    think: str | None
    check: bool | None  # None: missing or invalid
    update: str | None  # None: no <update> block
    next: str | None  # "continue" | "end" | None (missing or invalid)
    issues: tuple[str, ...]
    stopped_early: bool = False


def stopped_at_check_no(completion: Completion, *, engine_names_stops: bool = False) -> bool:
    """Did the engine stop this reply at a ``<check>no</check>`` stop string? (see the module docstring)

    ``engine_names_stops``: the engine always fills ``stop_reason`` when a stop string fires (llama.cpp
    in-process, vLLM), so None there means a natural end and nothing is inferred.
    """
    if completion.stop_reason is not None or engine_names_stops:
        return completion.stop_reason in CHECK_NO_STOPS
    if completion.finish_reason != "stop":
        return False
    text = tags.clean(completion.text)
    return not any(tags.has_tag(text, name) for name in ("check", "update", "next"))


def parse_gated(text: str, *, stopped_early: bool = False) -> GatedReply:
    """Read a GRU-Mem reply leniently; ``stopped_early`` says the engine cut it at ``<check>no``."""
    issues: list[str] = []
    cleaned = tags.clean(text)
    think, body, closed = tags.split_thinking(cleaned, ("think",))
    if think is None and not stopped_early:
        issues.append("no <think> block")
    elif not closed:
        issues.append("<think> is not closed")

    if stopped_early and not tags.has_tag(body, "check"):
        if not closed:
            issues.append("stopped at <check>no</check> inside the <think> block")
        return GatedReply(think, False, None, "continue", tuple(issues), stopped_early=True)
    if stopped_early:
        issues.append("stopped at a second <check>no</check>; the first decision counts")

    check: bool | None = None
    found = tags.find_all(body, "check", until=("update", "next"))
    if not found:
        issues.append("no <check> tag")
    else:
        value = tags.word(found[0].content)
        if value in _YES:
            check = True
        elif value in _NO:
            check = False
        else:
            issues.append(f"invalid <check> value {found[0].content.strip()[:40]!r}")
        if len(found) > 1:
            issues.append(f"{len(found)} <check> tags; the first counts")
        if not found[0].closed:
            issues.append("<check> is not closed")

    update: str | None = None
    updates = tags.find_all(body, "update", until=("next", "check"))
    if updates:
        update = updates[-1].content.strip()
        if len(updates) > 1:
            issues.append(f"{len(updates)} <update> blocks; the last counts")
        if not updates[-1].closed:
            issues.append("<update> is not closed")

    next_: str | None = None
    nexts = tags.find_all(body, "next", until=("check", "update"))
    if not nexts:
        if not stopped_early:
            issues.append("no <next> tag")
    else:
        value = tags.word(nexts[-1].content)
        if value in ("continue", "end"):
            next_ = value
        else:
            issues.append(f"invalid <next> value {nexts[-1].content.strip()[:40]!r}")
    return GatedReply(think, check, update, next_, tuple(issues), stopped_early=stopped_early)


@dataclass(frozen=True)
class GatedOptions:
    exit_gate: bool = field(default=True, metadata={
        "help": "stop reading when the model says <next>end</next>; off for 'list all X' questions"})
    stop_on_check_no: bool = field(default=True, metadata={
        "help": "stop generating at <check>no</check> (the rest of the reply would be discarded)"})


class GatedStrategy(Strategy):
    name = "gated"
    label = "GRU-Mem"
    summary = "the model says whether to update the memory and whether it has read enough"
    Options = GatedOptions
    whole_document: ClassVar[dict[str, Any]] = {"exit_gate": False}  # GRU-Mem's "w/o EG" mode
    options: GatedOptions

    def memory_prompt(self, question: str, memory: str, chunk: str) -> str:
        return prompts.grumem_memory_prompt(question, memory, chunk, layout=self.settings.layout)

    def _final_prompt(self, question: str, memory: str) -> str:
        if self.settings.final_prompt == "boxed":
            return prompts.grumem_final_prompt(question, memory)
        return prompts.final_prompt(question, memory, style=self.settings.final_prompt)

    def templates(self) -> dict[str, str]:
        return {"memory": self.memory_prompt("{prompt}", "{memory}", "{chunk}"),
                "final": self._final_prompt("{prompt}", "{memory}")}

    def budget(self, question: str) -> list[BudgetItem]:
        step, _ = super().budget(question)
        return [step, BudgetItem("final", self._final_prompt(question, ""), self.reply_tokens,
                                 self.settings.final_tokens)]

    def plan_step(self, lane: int, question: str, state: State, chunk: Chunk) -> StepPlan:
        prompt = self.memory_prompt(question, self.memory(state), chunk.text)
        stop = CHECK_NO_STOPS if self.options.stop_on_check_no else ()
        return StepPlan(prompt, self.reply_tokens, stop)

    def plan_final(self, lane: int, question: str, state: State) -> StepPlan:
        return StepPlan(self._final_prompt(question, self.memory(state)), self.settings.final_tokens)

    def describe(self, result: StepResult) -> str:
        next_ = "end" if result.exit or result.decisions.get("next") == "end" else "continue"
        return f"check {'yes' if result.update else 'no'} · next {next_}" + (
            " (ignored: --no-exit-gate)" if next_ == "end" and not result.exit else "")

    def read_reply(self, lane: int, question: str, state: State, chunk: Chunk,
                   completion: Completion) -> StepResult:
        before = self.memory(state)
        stopped = self.options.stop_on_check_no and stopped_at_check_no(
            completion, engine_names_stops=self.engine_names_stops)
        reply = parse_gated(completion.text, stopped_early=stopped)
        issues = list(reply.issues)
        apply = reply.check if reply.check is not None else reply.update is not None
        memory = before
        if apply:
            if reply.update:
                memory = reply.update
            else:
                apply = False
                issues.append("<check>yes</check> without an <update>: the previous memory is kept")
        elif reply.check is None:
            issues.append("no usable <check> and no <update>: the previous memory is kept")
        exit_ = reply.next == "end" and self.options.exit_gate
        new_state = {**state, "memory": memory}
        if reply.next == "end" and not self.options.exit_gate:
            new_state["ignored_exits"] = int(state.get("ignored_exits", 0)) + 1
        return StepResult(state=new_state, memory=memory, memory_changed=memory != before,
                          truncated=completion.finish_reason == "length", exit=exit_, exit_reason="exit-gate",
                          decisions={"update": apply, "next": reply.next or "continue",
                                     "stopped_early": reply.stopped_early},
                          parse_issues=tuple(issues))
