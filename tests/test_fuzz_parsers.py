"""Property tests on everything that reads a model's reply: whatever string comes back, each strategy's parser
returns a defined result (never an exception), and the boxed-answer extractor handles nested and unbalanced
braces. Replies are drawn from arbitrary text mixed with the fragments small models actually garble: tags with
odd case and spacing, unclosed tags, code fences, think blocks, ``\\boxed{`` and stray braces.

CI examples per run: :data:`EXAMPLES` for each of the ten properties below and a quarter of it for the evidence
strategy's whole step (2,050).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memread.answer import (
    extract_boxed,
    extract_therefore,
    final_answer,
    last_boxed_only_string,
    strict_match,
    strip_thinking,
)
from memread.loop import LoopSettings
from memread.strategies import tags
from memread.strategies.callback import parse_recall, parse_update
from memread.strategies.gated import GatedStrategy, parse_gated, stopped_at_check_no
from memread.strategies.overwrite import OverwriteStrategy
from memread.testing.fuzz import (
    CHUNK,
    EVIDENCE_TEXT,
    answer_holds,
    answer_reply,
    balanced,
    completion,
    evidence_step_holds,
    evidence_strategy,
    replies,
)

EXAMPLES = 200

fuzz = settings(max_examples=EXAMPLES, deadline=None)


@fuzz
@given(reply=replies, stopped=st.booleans())
def test_any_gated_reply_parses_to_a_defined_decision(reply: str, stopped: bool) -> None:
    parsed = parse_gated(reply, stopped_early=stopped)
    assert parsed.check in (None, True, False)
    assert parsed.next in (None, "continue", "end")
    assert parsed.update is None or parsed.update == parsed.update.strip()
    assert all(isinstance(issue, str) and issue for issue in parsed.issues)


@fuzz
@given(reply=replies, finish=st.sampled_from(["stop", "length"]),
       stop=st.sampled_from([None, "<check>no</check>", "</update>"]), names_stops=st.booleans(),
       memory=st.text(max_size=30))
def test_the_gated_strategy_never_loses_a_memory(reply: str, finish: str, stop: str | None, names_stops: bool,
                                                 memory: str) -> None:
    strategy = GatedStrategy(LoopSettings(strategy="gated"), engine_names_stops=names_stops)
    state: dict[str, Any] = {"memory": memory or "No previous memory"}
    completed = completion(reply, finish, stop)
    stopped_at_check_no(completed, engine_names_stops=names_stops)
    result = strategy.read_reply(0, "q?", state, CHUNK, completed)
    assert isinstance(result.memory, str) and result.memory  # kept or replaced, never emptied
    assert result.memory == state["memory"] or result.update
    assert result.state["memory"] == result.memory
    assert not result.exit or parse_gated(reply).next == "end" or stop is not None


@fuzz
@given(reply=replies)
def test_any_callback_reply_gives_a_memory_or_none_and_a_query_or_none(reply: str) -> None:
    memory, issues = parse_update(reply)
    assert memory is None or (memory and memory == memory.strip())
    query, recall_issues = parse_recall(reply)
    assert query is None or (query and query == " ".join(query.split()) and query.lower() != "query")
    assert all(isinstance(issue, str) for issue in (*issues, *recall_issues))


@fuzz
@given(reply=replies, memory=st.text(min_size=1, max_size=30))
def test_the_overwrite_strategy_keeps_the_memory_on_an_empty_reply(reply: str, memory: str) -> None:
    strategy = OverwriteStrategy(LoopSettings())
    result = strategy.read_reply(0, "q?", {"memory": memory}, CHUNK, completion(reply))
    written = strip_thinking(reply).strip()
    assert result.memory == (written or memory)
    assert result.parse_issues == (() if written else ("empty reply: the previous memory is kept",))


@fuzz
@given(text=replies, name=st.sampled_from(["check", "update", "next", "recall", "think", "thinking"]))
def test_the_lenient_tag_reader_accepts_any_text(text: str, name: str) -> None:
    cleaned = tags.clean(text)
    found = tags.find_all(cleaned, name, until=("update", "next"))
    assert all(f.count == len(found) for f in found)
    assert all(f.content in cleaned for f in found)
    assert isinstance(tags.word(text), str)
    assert tags.has_tag(cleaned, name) or not found
    thinking, rest, closed = tags.split_thinking(cleaned)
    assert rest in cleaned and (thinking is None or closed in (True, False))
    assert isinstance(tags.remove_blocks(cleaned, name), str)


# --- boxed answers ------------------------------------------------------------------------------------------------

@fuzz
@given(text=st.lists(st.one_of(st.sampled_from(["\\boxed{", "\\fbox{", "\\boxed ", "{", "}", "$", "\n", "\\"]),
                               st.text(max_size=6)), max_size=30).map("".join))
def test_the_boxed_extractor_takes_any_text_and_returns_a_balanced_box_or_none(text: str) -> None:
    boxed = last_boxed_only_string(text)
    if boxed is not None:
        assert boxed.startswith(("\\boxed", "\\fbox")) and boxed in text
        if not boxed.startswith("\\boxed "):
            assert boxed.count("{") == boxed.count("}") and boxed.endswith("}")
    answer, found = final_answer(text)
    assert isinstance(answer, str) and found in (True, False)
    assert final_answer(text, style="therefore")[0] is not None
    assert extract_therefore(text) is None or isinstance(extract_therefore(text), str)
    assert strict_match(text, ["x", "\\frac{1}{2}"]) in (True, False)


@fuzz
@given(before=replies, content=balanced, after=st.text(alphabet=st.characters(blacklist_characters="\\"),
                                                       max_size=20))
def test_the_last_box_is_found_whole_with_nested_braces(before: str, content: str, after: str) -> None:
    reply = f"{before}</think> so \\boxed{{{content}}}{after}"
    assert extract_boxed(reply) == content.strip()
    assert final_answer(reply) == (content.strip(), True)


@fuzz
@given(content=balanced, cut=st.integers(min_value=1, max_value=40))
def test_an_unbalanced_box_is_no_box(content: str, cut: int) -> None:
    opened = f"The answer: \\boxed{{{content}"  # the closing brace never comes
    assert last_boxed_only_string(opened) is None
    answer, found = final_answer(opened)
    # No box: the reply after its thinking, or the whole reply when nothing follows the thinking.
    assert not found and answer == (strip_thinking(opened).strip() or opened.strip())
    shortened = f"\\boxed{{{{{content}}}"[: cut + 7]
    assert last_boxed_only_string(shortened) in (None, shortened)


# --- the tag reader against its plain-regex definition --------------------------------------------------------


def _reference_find_all(text: str, name: str, until: tuple[str, ...]) -> list[tuple[str, bool]]:
    """The obvious (quadratic on degenerate replies) reading that tags.find_all must agree with."""
    import re

    opener = re.compile(tags.open_tag(name), re.IGNORECASE)
    closer = re.compile(tags.close_tag(name), re.IGNORECASE)
    stoppers = [re.compile(tags.open_tag(n), re.IGNORECASE) for n in (*until, name)]
    found: list[tuple[str, bool]] = []
    pos = 0
    while (start := opener.search(text, pos)) is not None:
        end = closer.search(text, start.end())
        nxt = min((m.start() for m in (s.search(text, start.end()) for s in stoppers) if m), default=len(text))
        if end is not None and end.start() <= nxt:
            found.append((text[start.end():end.start()], True))
            pos = end.end()
        else:
            found.append((text[start.end():nxt], False))
            pos = nxt
    return found


def _reference_remove_blocks(text: str, name: str) -> str:
    import re

    text = re.sub(rf"{tags.open_tag(name)}.*?{tags.close_tag(name)}", "", text, flags=re.IGNORECASE | re.DOTALL)
    return re.sub(rf"{tags.open_tag(name)}.*\Z", "", text, flags=re.IGNORECASE | re.DOTALL)


@fuzz
@given(text=replies, name=st.sampled_from(["check", "update", "next", "recall", "think"]),
       until=st.sampled_from([(), ("update", "next"), ("next", "check"), ("recall", "thinking", "think")]))
def test_the_linear_tag_reader_agrees_with_the_plain_regex_reading(text: str, name: str,
                                                                   until: tuple[str, ...]) -> None:
    assert [(f.content, f.closed) for f in tags.find_all(text, name, until=until)] == \
        _reference_find_all(text, name, until)
    assert tags.remove_blocks(text, name) == _reference_remove_blocks(text, name)


def test_a_reply_repeating_a_tag_thousands_of_times_is_read() -> None:
    """A small model stuck in a loop until max_tokens. (Each tag is found once and looked up by position: 32 KB
    of this took 2.4 s with one regex search per tag, 0.06 s now; timings belong in benchmarks, not here.)"""
    degenerate = "<update>" * 4000 + "<think>" * 4000
    found = tags.find_all(degenerate, "update")
    assert len(found) == 4000 and not any(f.closed for f in found)
    assert parse_update(degenerate) == (None, ["4000 <update> blocks; the last counts", "<update> is not closed",
                                               "empty <update>"])
    assert parse_gated(degenerate).check is None


# --- the evidence strategy: the model answers, code finds the answer in the text and keeps the lines ----------

@fuzz
@given(reply=answer_reply)
def test_any_evidence_reply_gives_no_answer_or_one_taken_from_the_text(reply: str) -> None:
    answer_holds(reply, EVIDENCE_TEXT)


@settings(max_examples=EXAMPLES // 4, deadline=None)
@given(replies_=st.lists(answer_reply, min_size=1, max_size=3), finish=st.sampled_from(["stop", "length"]),
       memory=st.sampled_from([1024, 40, 12]))
def test_the_evidence_strategy_keeps_only_verbatim_lines_and_never_loses_one(replies_: list[str],
                                                                               finish: str, memory: int) -> None:
    strategy, chunk = evidence_strategy(memory)
    try:
        state = strategy.initial_state()
        for reply in replies_:
            state = evidence_step_holds(strategy, chunk, state, "\\boxed{" + reply, finish)
    finally:
        strategy.close()
