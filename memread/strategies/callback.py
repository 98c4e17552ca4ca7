"""callback (ReMemR1): the model may ask to recall an earlier memory with ``<recall>query</recall>``.

Each reply should hold ``<thinking>…</thinking>``, one ``<update>…</update>`` (the new memory) and
optionally one ``<recall>query</recall>``. The best-matching earlier memory (BM25 via
:mod:`memread.recall`) is shown as ``<recalled_memory>`` in the next step's prompt and in the final
prompt; without a query or a match the block says "No memory was recalled.".

The memory, as ReMemR1-7B was trained (``memory="reply"``, the default): the whole reply minus its
``<recall>…</recall>`` blocks, thinking and tags included (ReMemR1's ``re.sub(r'<recall>.*?</recall>', '',
text, flags=re.DOTALL)``), with replies capped at 2,048 tokens (its ``RECURRENT_MAX_NEW``; ``--reply-tokens``
changes it). So the memory is bounded by the reply cap, not by ``--memory-tokens``. An empty result keeps
the previous memory (recorded as a parse issue).

``memory="update"`` (memread's cleaner parse, for untrained models that keep their thinking long): only
the ``<update>`` content, read across lines (DOTALL), leniently (case, spaces, a missing close tag); with
several blocks the last counts. Without any ``<update>``, the memory is the reply minus its thinking and
recall blocks, and the deviation is recorded.

Choices where ReMemR1's code was loose:

* The first ``<recall>`` counts (DOTALL); an empty query, or the literal placeholder "query" echoed from the
  prompt, recalls nothing.
* Retrieval runs **before** the current step's memory joins the library (ReMemR1's training order), with a
  minimum score so "no match" is possible and the earliest memory winning ties.
* ``recall_from="chunks"`` (beyond the paper): the query also searches the source text already read, in
  passages of at most ``recall_tokens`` tokens kept in a temporary SQLite file; the best passage follows
  the recalled memory. That index is shared by all lanes and rebuilt on resume from the chunks the loop
  re-feeds through :meth:`observe_chunk`.

Lane state: ``memory``, ``recalled`` (shown at the next step, or None) and ``history`` (every memory so
far, oldest first), so a resumed run rebuilds the library exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memread import prompts
from memread.backends.base import Completion
from memread.document import Chunk, Provenance, Segment
from memread.recall import TextIndex
from memread.strategies import tags
from memread.strategies.base import BudgetItem, State, StepPlan, StepResult, Strategy

# ReMemR1's generation cap (RECURRENT_MAX_NEW in its evaluation, MAX_NEW_TOKEN in training).
REMEMR1_REPLY_TOKENS = 2048
_RECALL_BLOCK = re.compile(r"<recall>.*?</recall>", re.DOTALL)


def reply_memory(text: str) -> str:
    """ReMemR1's memory: the reply minus its ``<recall>`` blocks, everything else kept."""
    return _RECALL_BLOCK.sub("", text).strip()


def parse_update(text: str) -> tuple[str | None, list[str]]:
    """The new memory in a ReMemR1 reply (None when nothing usable) and the deviations found."""
    issues: list[str] = []
    cleaned = tags.clean(text)
    updates = tags.find_all(cleaned, "update", until=("recall", "thinking", "think"))
    if updates:
        if len(updates) > 1:
            issues.append(f"{len(updates)} <update> blocks; the last counts")
        if not updates[-1].closed:
            issues.append("<update> is not closed")
        memory = updates[-1].content.strip()
        if memory:
            return memory, issues
        issues.append("empty <update>")
    else:
        issues.append("no <update> tag: the reply minus thinking and recall is the memory")
    rest = cleaned
    for name in ("thinking", "think", "recall", "update"):
        rest = tags.remove_blocks(rest, name)
    rest = rest.strip()
    return (rest or None), issues


def parse_recall(text: str) -> tuple[str | None, list[str]]:
    """The first ``<recall>`` query (None when absent or empty) and the deviations found."""
    issues: list[str] = []
    found = tags.find_all(tags.clean(text), "recall", until=("update", "thinking", "think", "recall"))
    if not found:
        return None, issues
    if len(found) > 1:
        issues.append(f"{len(found)} <recall> tags; the first counts")
    query = " ".join(found[0].content.split())
    if not found[0].closed:
        issues.append("<recall> is not closed")
    if not query or query.lower() == "query":
        issues.append("empty <recall> query")
        return None, issues
    return query, issues


@dataclass(frozen=True)
class CallbackOptions:
    memory: str = field(default="reply", metadata={
        "choices": ("reply", "update"),
        "help": "reply: the whole reply minus <recall> is the memory (ReMemR1); update: only <update>"})
    recall_from: str = field(default="memories", metadata={
        "choices": ("memories", "chunks"),
        "help": "search earlier memories, or also the text already read (chunks)"})
    recall_tokens: int = field(default=512, metadata={
        "min": 16, "help": "with recall_from=chunks: size of a recalled passage in tokens"})


class CallbackStrategy(Strategy):
    name = "callback"
    label = "ReMemR1"
    summary = "the model may recall an earlier memory with <recall>query</recall>"
    Options = CallbackOptions
    options: CallbackOptions

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._memories: dict[int, TextIndex] = {}
        self._passages: TextIndex | None = None
        self._passage_count = 0

    @property
    def reply_tokens(self) -> int:
        """ReMemR1's 2,048-token reply cap unless ``--reply-tokens`` says otherwise (the memory is the reply,
        or a part of it, so this also bounds the memory)."""
        return self.settings.reply_tokens or REMEMR1_REPLY_TOKENS

    @property
    def recalled_tokens(self) -> int:
        """The most a <recalled_memory> block can hold: a memory, plus a passage when recalling chunks."""
        extra = self.options.recall_tokens + 2 if self.options.recall_from == "chunks" else 0
        return self.reply_tokens + extra

    def templates(self) -> dict[str, str]:
        return {"memory": prompts.rememr1_memory_prompt("{prompt}", "{memory}", "{chunk}", "{recalled_memory}",
                                                        layout=self.settings.layout),
                "final": prompts.final_prompt("{prompt}", "{memory}", style=self.settings.final_prompt,
                                              recalled="{recalled_memory}")}

    def describe(self, result: StepResult) -> str:
        parts = ["rewritten" if result.memory_changed else "unchanged"]
        if result.recall_query:
            got = " ".join(result.recalled.split())[:30] if result.recalled else "nothing"
            parts.append(f"recall {' '.join(result.recall_query.split())[:30]!r} → {got}")
        return " · ".join(parts)

    def initial_state(self) -> State:
        return {"memory": prompts.NO_MEMORY, "recalled": None, "history": []}

    def recalled_shown(self, state: State) -> str:
        recalled = state.get("recalled")
        return str(recalled) if recalled else prompts.NO_RECALLED_MEMORY

    def plan_step(self, lane: int, question: str, state: State, chunk: Chunk) -> StepPlan:
        prompt = prompts.rememr1_memory_prompt(question, self.memory(state), chunk.text,
                                               self.recalled_shown(state), layout=self.settings.layout)
        return StepPlan(prompt, self.reply_tokens)

    def read_reply(self, lane: int, question: str, state: State, chunk: Chunk,
                   completion: Completion) -> StepResult:
        before = self.memory(state)
        history = [str(m) for m in state.get("history", [])]
        if self.options.memory == "reply":
            memory, issues = (reply_memory(completion.text) or None), list[str]()
        else:
            memory, issues = parse_update(completion.text)
        if memory is None:
            issues.append("nothing usable in the reply: the previous memory is kept")
            memory = before
        query, recall_issues = parse_recall(completion.text)
        issues += recall_issues
        recalled = self._recall(lane, history, query) if query else None
        history.append(memory)
        new_state = {**state, "memory": memory, "recalled": recalled, "history": history}
        return StepResult(state=new_state, memory=memory, memory_changed=memory != before,
                          truncated=completion.finish_reason == "length",
                          decisions={"recalled_before": self.recalled_shown(state), "recall_query": query,
                                     "recalled": recalled},
                          parse_issues=tuple(issues))

    def plan_final(self, lane: int, question: str, state: State) -> StepPlan:
        prompt = prompts.final_prompt(question, self.memory(state), style=self.settings.final_prompt,
                                      recalled=self.recalled_shown(state))
        return StepPlan(prompt, self.settings.final_tokens)

    def budget(self, question: str) -> list[BudgetItem]:
        s = self.settings
        return [
            BudgetItem("step", prompts.rememr1_memory_prompt(question, "", "", "", layout=s.layout),
                       self.reply_tokens + self.recalled_tokens + self.chunk_tokens, self.reply_tokens),
            BudgetItem("final", prompts.final_prompt(question, "", style=s.final_prompt, recalled=""),
                       self.reply_tokens + self.recalled_tokens, s.final_tokens),
        ]

    # --- the libraries ------------------------------------------------------------------------------------

    def _recall(self, lane: int, history: list[str], query: str) -> str | None:
        index = self._memories.get(lane)
        if index is None or len(index) > len(history):
            if index is not None:
                index.close()
            index = self._memories[lane] = TextIndex()
        for key in range(len(index), len(history)):  # a resumed lane catches up from its state
            index.add(key, history[key])
        parts: list[str] = []
        hit = index.search(query)
        if hit is not None:
            parts.append(hit.text)
        if self._passages is not None:
            passage = self._passages.search(query)
            if passage is not None:
                parts.append(passage.text.strip())
        return "\n\n".join(parts) or None

    def observe_chunk(self, chunk: Chunk) -> None:
        if self.options.recall_from != "chunks":
            return
        if self._passages is None:
            self._passages = TextIndex(temporary=True)
        for text in self._split(chunk):
            if text.strip():
                self._passages.add(self._passage_count, text)
                self._passage_count += 1

    def _split(self, chunk: Chunk) -> list[str]:
        budget = max(16, self.options.recall_tokens)
        if self.tokenizer is None:
            width = budget * 4  # about four characters a token
            return [chunk.text[i:i + width] for i in range(0, len(chunk.text), width)]
        from memread.chunk import Chunker

        source = chunk.spans[0].source if chunk.spans else "-"
        return [p.text for p in Chunker(self.tokenizer, budget).chunks([Segment(chunk.text, Provenance(source))])]

    def close(self) -> None:
        for index in self._memories.values():
            index.close()
        self._memories.clear()
        if self._passages is not None:
            self._passages.close()
            self._passages = None
