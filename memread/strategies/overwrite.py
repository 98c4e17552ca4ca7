"""overwrite (MemAgent): after every chunk the model rewrites the whole memory.

The reply is the new memory, minus a leading ``<think>…</think>`` block (MemAgent's evaluation keeps
only what follows the last ``</think>``). The memory's only cap is the generation limit
(``memory_tokens``, 1,024 by default, as in the paper); a reply cut by that limit is recorded as
truncated. An empty reply keeps the previous memory (MemAgent would pass the empty string on) and is
recorded as a parse issue.
"""

from __future__ import annotations

from memread import prompts
from memread.answer import strip_thinking
from memread.backends.base import Completion
from memread.document import Chunk
from memread.strategies.base import State, StepPlan, StepResult, Strategy


class OverwriteStrategy(Strategy):
    name = "overwrite"
    label = "MemAgent"
    summary = "the model rewrites the whole memory after every chunk"

    def memory_prompt(self, question: str, memory: str, chunk: str) -> str:
        return prompts.memagent_memory_prompt(question, memory, chunk, layout=self.settings.layout)

    def plan_step(self, lane: int, question: str, state: State, chunk: Chunk) -> StepPlan:
        return StepPlan(self.memory_prompt(question, self.memory(state), chunk.text), self.reply_tokens)

    def read_reply(self, lane: int, question: str, state: State, chunk: Chunk,
                   completion: Completion) -> StepResult:
        before = self.memory(state)
        memory = strip_thinking(completion.text).strip()
        issues: list[str] = []
        if not memory:
            issues.append("empty reply: the previous memory is kept")
            memory = before
        return StepResult(state={**state, "memory": memory}, memory=memory, memory_changed=memory != before,
                          truncated=completion.finish_reason == "length", parse_issues=tuple(issues))
