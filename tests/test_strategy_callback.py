"""The callback strategy (ReMemR1): multi-line <update>, <recall> queries, and what gets recalled when."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memread import prompts
from memread.backends.base import Completion
from memread.document import Chunk, Span
from memread.loop import LoopSettings
from memread.strategies.callback import CallbackStrategy, parse_recall, parse_update
from memread.tokens import CharTokenizer

REPLIES = Path(__file__).parent / "data" / "replies"


def chunk(i: int, text: str = "some text") -> Chunk:
    return Chunk(i, text, len(text), (Span("report.txt"),))


def step(strategy: CallbackStrategy, state: dict, reply: str, i: int = 0) -> tuple[dict, object]:
    result = strategy.read_reply(0, "Who repaired the lighthouse lamp?", state, chunk(i),
                                 Completion(reply, "stop", 1, 1))
    return result.state, result


def test_update_is_read_across_lines_and_recall_is_the_first_query() -> None:
    memory, issues = parse_update("<thinking>hm</thinking>\n<update>line one\nline two</update>\n"
                                  "<recall>lamp repair</recall><recall>other</recall>")
    assert memory == "line one\nline two" and issues == []
    query, issues = parse_recall("<update>x</update><recall>who\nrepaired the lamp?</recall><recall>b</recall>")
    assert query == "who repaired the lamp?" and issues == ["2 <recall> tags; the first counts"]


@pytest.mark.parametrize(("reply", "memory", "issue"), [
    ("<thinking>t</thinking>Ada Quist fixed it.<recall>lamp</recall>", "Ada Quist fixed it.",
     "no <update> tag: the reply minus thinking and recall is the memory"),
    ("<thinking>t</thinking><UPDATE> Ada fixed it </UPDATE>", "Ada fixed it", None),
    ("<thinking>t</thinking><update>Ada fixed it, and then the reply was cut", "Ada fixed it, and then the reply was cut",
     "<update> is not closed"),
    ("<thinking>only thinking</thinking>", None, "no <update> tag: the reply minus thinking and recall is the memory"),
    ("<update></update>", None, "empty <update>"),
])
def test_update_fallbacks(reply: str, memory: str | None, issue: str | None) -> None:
    got, issues = parse_update(reply)
    assert got == memory
    assert (issue in issues) if issue else issues == []


def test_an_echoed_placeholder_or_empty_query_recalls_nothing() -> None:
    assert parse_recall("<recall>query</recall>") == (None, ["empty <recall> query"])
    assert parse_recall("<recall>  </recall>")[0] is None
    assert parse_recall("no recall at all") == (None, [])


UPDATE_ONLY = {"memory": "update"}  # memread's cleaner parse: only the <update> content is the memory


def test_by_default_the_memory_is_the_reply_minus_its_recall_as_remem_r1_was_trained() -> None:
    strategy = CallbackStrategy(LoopSettings(strategy="callback"))
    assert strategy.reply_tokens == 2048  # ReMemR1's RECURRENT_MAX_NEW
    reply = "<thinking>The lamp\nmatters.</thinking>\n<update>Ada Quist repaired it.</update>\n<recall>who\nrepaired</recall>"
    _, result = step(strategy, strategy.initial_state(), reply)
    assert result.memory == "<thinking>The lamp\nmatters.</thinking>\n<update>Ada Quist repaired it.</update>"
    assert result.recall_query == "who repaired" and result.parse_issues == ()
    _, empty = step(strategy, {"memory": "kept", "recalled": None, "history": []}, "<recall>x</recall>")
    assert empty.memory == "kept" and empty.parse_issues
    assert CallbackStrategy(LoopSettings(strategy="callback", reply_tokens=300)).reply_tokens == 300


def test_recall_searches_earlier_memories_before_adding_the_current_one() -> None:
    strategy = CallbackStrategy(LoopSettings(strategy="callback", options=UPDATE_ONLY))
    state = strategy.initial_state()
    assert strategy.recalled_shown(state) == prompts.NO_RECALLED_MEMORY
    # Step 0 asks about the lamp: nothing earlier exists, and its own new memory is not searched.
    state, result = step(strategy, state, "<update>The lamp was repaired by Ada Quist.</update>"
                                          "<recall>lamp repaired</recall>")
    assert result.recall_query == "lamp repaired" and result.recalled is None
    state, _ = step(strategy, state, "<update>The pier closed for 12 days.</update>", 1)
    state, result = step(strategy, state, "<update>Storm in October.</update><recall>who repaired the lamp</recall>", 2)
    assert result.recalled == "The lamp was repaired by Ada Quist."
    assert state["history"] == ["The lamp was repaired by Ada Quist.", "The pier closed for 12 days.",
                                "Storm in October."]
    # The recalled memory shows in the next step's prompt and in the final prompt.
    plan = strategy.plan_step(0, "Who repaired the lighthouse lamp?", state, chunk(3))
    assert "<recalled_memory>\nThe lamp was repaired by Ada Quist.\n</recalled_memory>" in plan.prompt
    final = strategy.plan_final(0, "Who repaired the lighthouse lamp?", state)
    assert "<recalled_memory>\nThe lamp was repaired by Ada Quist.\n</recalled_memory>" in final.prompt
    # A step without a query shows "No memory was recalled." next.
    state, result = step(strategy, state, "<update>Nothing new.</update>", 3)
    assert result.recalled is None and strategy.recalled_shown(state) == prompts.NO_RECALLED_MEMORY
    # A query sharing no meaningful word with any memory recalls nothing.
    state, result = step(strategy, state, "<update>x</update><recall>what is the ferry timetable?</recall>", 4)
    assert result.recalled is None
    strategy.close()


def test_a_fresh_strategy_rebuilds_the_library_from_the_state() -> None:
    first = CallbackStrategy(LoopSettings(strategy="callback", options=UPDATE_ONLY))
    state = first.initial_state()
    state, _ = step(first, state, "<update>The lamp was repaired by Ada Quist.</update>")
    state, _ = step(first, state, "<update>Pier closed.</update>", 1)
    first.close()
    resumed = CallbackStrategy(LoopSettings(strategy="callback", options=UPDATE_ONLY))  # e.g. after a crash
    state, result = step(resumed, json.loads(json.dumps(state)), "<update>y</update><recall>lamp</recall>", 2)
    assert result.recalled == "The lamp was repaired by Ada Quist."


def test_recall_from_chunks_finds_source_text_already_read() -> None:
    strategy = CallbackStrategy(LoopSettings(strategy="callback", options={"recall_from": "chunks", "recall_tokens": 40}),
                                CharTokenizer())
    strategy.observe_chunk(chunk(0, "The harbour opened in spring.\n\nThe crane driver was Olaf Berg.\n\n"
                                    "Fish prices rose all year long.\n"))
    state = strategy.initial_state()
    state, result = step(strategy, state, "<update>Nothing yet.</update><recall>crane driver</recall>", 1)
    assert result.recalled is not None and "Olaf Berg" in result.recalled
    assert "Fish prices" not in result.recalled  # passages are capped by recall_tokens
    strategy.close()


@pytest.mark.parametrize("path", sorted(REPLIES.glob("*-callback-*.json")), ids=lambda p: p.stem)
def test_recorded_replies_of_real_models_keep_everything_but_the_recall_by_default(path: Path) -> None:
    record = json.loads(path.read_text())
    strategy = CallbackStrategy(LoopSettings(strategy="callback"))
    state = {"memory": record["memory"], "recalled": None, "history": []}
    result = strategy.read_reply(0, record["question"], state, chunk(0, record["section"]),
                                 Completion(record["reply"], record["finish_reason"], 0, 0))
    assert result.memory == re.sub(r"<recall>.*?</recall>", "", record["reply"], flags=re.DOTALL).strip()
    assert "<recall>" not in result.memory
    assert result.recall_query == record["expect"].get("recall_query", result.recall_query)


@pytest.mark.parametrize("path", sorted(REPLIES.glob("*-callback-*.json")), ids=lambda p: p.stem)
def test_recorded_replies_of_real_models_with_the_update_parse(path: Path) -> None:
    record = json.loads(path.read_text())
    strategy = CallbackStrategy(LoopSettings(strategy="callback", options=UPDATE_ONLY))
    state = {"memory": record["memory"], "recalled": None, "history": []}
    result = strategy.read_reply(0, record["question"], state, chunk(0, record["section"]),
                                 Completion(record["reply"], record["finish_reason"], 0, 0))
    assert result.memory.strip()
    assert "<thinking>" not in result.memory and "<recall>" not in result.memory
    assert "<update>" not in result.memory and "</update>" not in result.memory
    for key, value in record["expect"].items():
        assert getattr(result, key) == value, key
    if "<update>" not in record["reply"]:  # SmolLM2 ignores the format: its whole reply becomes the memory
        assert result.memory == record["reply"].strip()
        assert "no <update> tag: the reply minus thinking and recall is the memory" in result.parse_issues
