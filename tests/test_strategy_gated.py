"""The gated strategy (GRU-Mem): lenient tag reading, the malformed-reply policy, and the early stop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memread.backends.base import ChatRequest, Completion, Message
from memread.backends.fake import FakeBackend
from memread.document import Chunk, Span
from memread.loop import LoopSettings
from memread.strategies.gated import CHECK_NO_STOPS, GatedStrategy, parse_gated, stopped_at_check_no

REPLIES = Path(__file__).parent / "data" / "replies"
CHUNK = Chunk(0, "Ada Quist repaired the lamp.", 6, (Span("report.txt"),))


def read(reply: str | Completion, *, before: str = "old memory", **settings: object) -> object:
    strategy = GatedStrategy(LoopSettings(strategy="gated", options=settings))
    completion = reply if isinstance(reply, Completion) else Completion(reply, "stop", 10, 10)
    return strategy.read_reply(0, "Who repaired the lamp?", {"memory": before}, CHUNK, completion)


def test_a_well_formed_yes_replaces_the_memory_and_end_exits() -> None:
    result = read("<think>found it</think>\n<check>yes</check>\n<update>Ada Quist repaired the lamp.</update>\n"
                  "<next>end</next>")
    assert result.memory == "Ada Quist repaired the lamp." and result.memory_changed
    assert result.update is True and result.exit is True and result.parse_issues == ()


def test_no_keeps_the_previous_memory_even_with_an_update_block() -> None:
    result = read("<think>nothing</think><check>no</check><update>No previous memory</update>"
                  "<next>continue</next>")
    assert result.memory == "old memory" and not result.memory_changed and result.update is False
    assert result.exit is False


def test_exit_gate_off_keeps_reading() -> None:
    result = read("<think>x</think><check>yes</check><update>m</update><next>end</next>", exit_gate=False)
    assert result.exit is False and result.state["ignored_exits"] == 1


@pytest.mark.parametrize(("reply", "memory", "exit_", "issue"), [
    # spaces and case inside the tags and values
    ("<think>t</think><check> Yes </check><update>new</update><NEXT>End</NEXT>", "new", True, None),
    # tags in a markdown code fence, inline code
    ("```xml\n<think>t</think>\n<check>yes</check>\n<update>new</update>\n<next>continue</next>\n```",
     "new", False, None),
    ("<think>t</think> `<check>yes</check>` `<update>`new`</update>` `<next>end</next>`", "new", True, None),
    # missing close tags: the content runs to the next tag
    ("<think>t</think><check>yes<update>new memory\n<next>continue", "new memory", False, "<check> is not closed"),
    ("<think>t</think><check>yes</check><update>cut off by the limit", "cut off by the limit", False,
     "<update> is not closed"),
    # missing <check>: update when an <update> is there
    ("<think>t</think><update>new</update><next>continue</next>", "new", False, "no <check> tag"),
    # invalid <check>: same policy
    ("<think>t</think><check>maybe</check><update>new</update><next>continue</next>", "new", False,
     "invalid <check> value 'maybe'"),
    # missing <check> and <update>: keep
    ("<think>t</think><next>continue</next>", "old memory", False, "no <check> tag"),
    # yes without an update: keep
    ("<think>t</think><check>yes</check><next>continue</next>", "old memory", False,
     "<check>yes</check> without an <update>: the previous memory is kept"),
    # invalid or missing <next>: continue
    ("<think>t</think><check>yes</check><update>new</update><next>stop now</next>", "new", False,
     "invalid <next> value 'stop now'"),
    ("<think>t</think><check>yes</check><update>new</update>", "new", False, "no <next> tag"),
    # gates quoted inside the thinking do not count
    ("<think>I could say <check>no</check> or <next>end</next></think><check>yes</check><update>new</update>"
     "<next>continue</next>", "new", False, None),
    # several updates: the last counts
    ("<think>t</think><check>yes</check><update>draft</update><update>final</update><next>continue</next>",
     "final", False, "2 <update> blocks; the last counts"),
    # no thinking at all is tolerated
    ("<check>yes</check><update>new</update><next>continue</next>", "new", False, "no <think> block"),
])
def test_malformed_replies_follow_the_documented_policy(reply: str, memory: str, exit_: bool,
                                                        issue: str | None) -> None:
    result = read(reply, stop_on_check_no=False)
    assert result.memory == memory
    assert result.exit is exit_
    if issue is None:
        assert result.parse_issues == ()
    else:
        assert issue in result.parse_issues


def test_the_early_stop_strings_are_sent_and_can_be_turned_off() -> None:
    strategy = GatedStrategy(LoopSettings(strategy="gated"))
    plan = strategy.plan_step(0, "Q?", strategy.initial_state(), CHUNK)
    assert plan.stop == CHECK_NO_STOPS and len(plan.stop) <= 4
    assert plan.max_tokens == 1024  # thinking, gates and memory share the memory cap
    assert GatedStrategy(LoopSettings(strategy="gated", reply_tokens=2048)).reply_tokens == 2048
    off = GatedStrategy(LoopSettings(strategy="gated", options={"stop_on_check_no": False}))
    assert off.plan_step(0, "Q?", off.initial_state(), CHUNK).stop == ()


def test_a_reply_stopped_at_check_no_is_recognised_with_or_without_the_stop_reason() -> None:
    full = "<think>The section is about tourism.</think>\n<check>no</check>\n<update>old</update>\n<next>end</next>"
    request = ChatRequest((Message("user", "p"),), max_tokens=500, stop=CHECK_NO_STOPS)
    for names_stops in (True, False):  # in-process llama.cpp / vLLM name the stop; llama-server does not
        completion = FakeBackend([full], names_stops=names_stops).complete([request])[0]
        assert completion.text == "<think>The section is about tourism.</think>\n"
        assert stopped_at_check_no(completion, engine_names_stops=names_stops)
        strategy = GatedStrategy(LoopSettings(strategy="gated"), engine_names_stops=names_stops)
        result = strategy.read_reply(0, "Q?", {"memory": "kept"}, CHUNK, completion)
        assert result.stopped_early and result.memory == "kept" and result.update is False
        assert result.exit is False  # the cut-off <next>end</next> is never seen: continue
        assert result.parse_issues == ()


def test_a_natural_end_is_not_mistaken_for_the_early_stop() -> None:
    with_tags = Completion("<think>t</think><check>yes</check><update>m</update><next>continue</next>", "stop", 1, 1)
    assert not stopped_at_check_no(with_tags)
    cut_by_limit = Completion("<think>a very long thought", "length", 1, 1)
    assert not stopped_at_check_no(cut_by_limit)
    # An engine that names its stops ended this tag-less reply naturally (EOS): no inference.
    tagless = Completion("I am a helpful assistant.", "stop", 1, 1)
    assert not stopped_at_check_no(tagless, engine_names_stops=True)
    # Without the engine's word the same reply is read as stopped at <check>no</check>: either way the
    # memory is kept and reading continues.
    assert stopped_at_check_no(tagless)
    assert read(tagless).memory == "old memory" and read(tagless).exit is False


def test_stop_inside_the_thinking_is_recorded() -> None:
    completion = Completion("<think>Nothing here, so I answer ", "stop", 1, 1, stop_reason="<check>no</check>")
    result = read(completion)
    assert result.stopped_early and result.memory == "old memory"
    assert "stopped at <check>no</check> inside the <think> block" in result.parse_issues


def test_a_second_gate_stopped_early_keeps_the_first_decision() -> None:
    completion = Completion("<think>t</think><check>yes</check><update>new</update>", "stop", 1, 1,
                            stop_reason="<check>no</check>")
    result = read(completion)
    assert result.memory == "new" and result.stopped_early


@pytest.mark.parametrize("path", sorted(REPLIES.glob("*-gated-*.json")), ids=lambda p: p.stem)
def test_recorded_replies_of_real_models(path: Path) -> None:
    """Raw replies of SmolLM2-135M (no tags at all) and Qwen2.5-Coder-1.5B (well formed, memory prefixed with
    "Updated memory:"), some generated with the early-stop strings as llama.cpp returns them: cut before
    the stop string, with no word on which stop fired."""
    record = json.loads(path.read_text())
    early = bool(record["settings"].get("stop"))
    completion = Completion(record["reply"], record["finish_reason"], 0, 0)
    strategy = GatedStrategy(LoopSettings(strategy="gated", options={"stop_on_check_no": early}),
                             engine_names_stops=False)
    result = strategy.read_reply(0, record["question"], {"memory": record["memory"]}, CHUNK, completion)
    assert result.memory.strip(), "a memory is never emptied"
    expected = record["expect"]
    if expected.get("stopped_early"):
        assert result.stopped_early and result.memory == record["memory"] and not result.exit
        assert record["reply"].rstrip().endswith("</think>")  # the engine cut "<check>no</check>" and all after
        return
    assert not result.stopped_early
    parsed = parse_gated(record["reply"])
    assert {"check": parsed.check, "next": parsed.next} == expected
    if parsed.check:
        assert result.memory == parsed.update and result.update is True and result.exit is True
    else:
        assert result.memory == record["memory"] and result.update is False
        assert ("no <check> tag" in result.parse_issues) == (parsed.check is None)
