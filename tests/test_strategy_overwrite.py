"""The overwrite strategy (MemAgent): the reply is the memory."""

from __future__ import annotations

from memread import prompts
from memread.backends.base import Completion
from memread.document import Chunk, Span
from memread.loop import LoopSettings
from memread.strategies.overwrite import OverwriteStrategy

CHUNK = Chunk(0, "Ada Quist repaired the lamp.", 6, (Span("report.txt"),))


def test_first_prompt_uses_no_previous_memory_and_the_cap_is_memory_tokens() -> None:
    strategy = OverwriteStrategy(LoopSettings(memory_tokens=300))
    plan = strategy.plan_step(0, "Who?", strategy.initial_state(), CHUNK)
    assert plan.prompt == prompts.memagent_memory_prompt("Who?", "No previous memory", CHUNK.text)
    assert plan.max_tokens == 300 and plan.stop == ()


def test_reply_becomes_the_memory_without_its_thinking() -> None:
    strategy = OverwriteStrategy(LoopSettings())
    result = strategy.read_reply(0, "Who?", {"memory": "old"}, CHUNK,
                                 Completion("<think>let me see</think>\nAda Quist repaired it.", "stop", 1, 1))
    assert result.memory == "Ada Quist repaired it." and result.memory_changed and not result.truncated
    assert result.state == {"memory": "Ada Quist repaired it."}


def test_a_reply_cut_by_the_limit_is_marked_truncated_and_an_empty_one_keeps_the_memory() -> None:
    strategy = OverwriteStrategy(LoopSettings())
    cut = strategy.read_reply(0, "Who?", {"memory": "old"}, CHUNK, Completion("Ada Qu", "length", 1, 1024))
    assert cut.truncated and cut.memory == "Ada Qu"
    empty = strategy.read_reply(0, "Who?", {"memory": "old"}, CHUNK, Completion("  ", "stop", 1, 1))
    assert empty.memory == "old" and not empty.memory_changed and empty.parse_issues
