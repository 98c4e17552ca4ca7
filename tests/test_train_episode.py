"""The episode runner sends, turn for turn, what `memread ask` sends, and keeps the model's own reply ids.

Two proofs: against the reading loop with a scripted model (every strategy, every request field), and against a
real `memread ask` run of SmolLM2 through llama.cpp, whose prompt ids it must reproduce token for token.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memread.backends.base import ChatRequest, Completion, Message
from memread.backends.fake import FakeBackend
from memread.errors import BudgetError, UsageError
from memread.loop import Loop
from memread.settings import Settings
from memread.tokens import CharTokenizer
from memread.train.episode import Generated, SamplingRequest, chunk_text, evidence_chunks, run_episode

END = 0  # the end-of-turn id of the character-level tokenizer below

PAGES = [
    "The harbour report opens with the weather. ",
    "A storm closed the pier for 12 days. ",
    "The ferry added a second crossing. ",
    "Ada Quist repaired the lighthouse lamp. ",
]
TEXT = "".join(PAGES)
QUESTION = "Who repaired the lamp?"


class CharChat:
    """Characters as token ids, a message as ``<role>content``, id 0 the end of a turn; records every prompt."""

    def __init__(self) -> None:
        self.tokenizer = CharTokenizer()
        self.sent: list[tuple[tuple[Message, ...], str]] = []

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        self.sent.append((tuple(messages), ""))
        return [ord(c) for m in messages for c in f"<{m.role}>{m.content}"]

    def text_ids(self, text: str) -> list[int]:
        if self.sent and text:
            self.sent[-1] = (self.sent[-1][0], text)
        return [ord(c) for c in text]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(chr(i) for i in ids if i != END)

    def is_end(self, token: int) -> bool:
        return token == END


def scripted(request_prompt: str) -> str:
    """A model following all three formats: it keeps the section's last sentence, and stops after 'lamp'."""
    if "Your answer:" in request_prompt:
        memory = re.search(r"<memory>\s*(.*?)\s*</memory>", request_prompt, re.DOTALL)
        return f"Ada Quist}} said {memory.group(1)[:20] if memory else ''}"
    section = re.search(r"<section>\s*(.*?)\s*</section>", request_prompt, re.DOTALL)
    text = section.group(1).strip() if section else ""
    if "<check>" in request_prompt:  # gated (GRU-Mem)
        relevant = "lamp" in text or "storm" in text
        gate = "yes" if relevant else "no"
        return f"<think>look</think><check>{gate}</check><update>{text}</update><next>{'end' if 'lamp' in text else 'continue'}</next>"
    if "<recall>" in request_prompt:  # callback (ReMemR1)
        return f"<thinking>t</thinking><update>{text}</update><recall>storm</recall>"
    return text


def loop_requests(settings: Settings) -> list[ChatRequest]:
    backend = FakeBackend(lambda request: scripted(request.messages[-1].content), continues_replies=True)
    chunks = chunk_text(TEXT, CharTokenizer(), 48)
    Loop(backend, [QUESTION], settings).run(chunks)
    return backend.requests


def episode(settings: Settings, chat: CharChat | None = None, **kwargs: Any) -> Any:
    chat = chat or CharChat()
    requests: list[SamplingRequest] = []

    async def generate(prompt_ids: list[int], request: SamplingRequest) -> Generated:
        requests.append(request)
        prompt = "".join(chr(i) for i in prompt_ids)
        body = prompt.split("<user>", 1)[1]
        begun = chat.sent[-1][1]
        reply = scripted(body.removesuffix(begun))
        ids = [ord(c) for c in reply][:request.max_tokens]
        if len(ids) < request.max_tokens:
            ids.append(END)
        return Generated(ids, [-0.5] * len(ids))

    chunks = chunk_text(TEXT, chat.tokenizer, 48)
    result = asyncio.run(run_episode(QUESTION, chunks, settings=settings, chat=chat, generate=generate, **kwargs))
    return result, chat, requests


@pytest.mark.parametrize("strategy", ["overwrite", "gated", "callback"])
def test_an_episode_sends_what_the_reading_loop_sends_for_every_strategy(strategy: str) -> None:
    settings = Settings(strategy=strategy, chunk_tokens=48, memory_tokens=200, final_tokens=60, seed=7)
    expected = loop_requests(settings)
    result, chat, requests = episode(settings)
    assert len(result.turns) == len(expected)
    for turn, sent, request, asked in zip(result.turns, chat.sent, requests, expected, strict=True):
        assert sent[0] == asked.messages
        assert sent[1] == asked.reply_start
        assert (request.max_tokens, request.stop, request.seed) == (asked.max_tokens, asked.stop, asked.seed)
        assert (request.temperature, request.top_p) == (asked.temperature, asked.top_p)
        assert turn.logprobs is not None and len(turn.logprobs) == len(turn.response_ids)
    assert result.final.kind == "final" and all(t.kind == "memory" for t in result.turns[:-1])
    assert result.answer == "Ada Quist" and result.boxed


def test_the_gated_exit_gate_ends_the_episode_at_the_lamp_and_the_rest_is_counted_not_read() -> None:
    settings = Settings(strategy="gated", chunk_tokens=48, memory_tokens=200, final_tokens=60)
    result, _chat, _requests = episode(settings)
    lamp = next(i for i, t in enumerate(result.memory_turns) if "lamp" in t.chunk)
    assert result.exited_at == result.memory_turns[lamp].step
    assert len(result.memory_turns) == lamp + 1
    assert result.memory_turns[lamp].exit and result.memory_turns[lamp].decisions["next"] == "end"
    assert result.chunks >= len(result.memory_turns)


def test_a_system_message_and_a_begun_answer_are_sent_as_memread_ask_sends_them() -> None:
    settings = Settings(strategy="overwrite", chunk_tokens=48, memory_tokens=200, final_tokens=60, system="Be brief.",
                        answer_start="\\boxed{")
    result, chat, _requests = episode(settings)
    assert all(messages[0] == Message("system", "Be brief.") for messages, _begun in chat.sent)
    assert chat.sent[-1][1] == "\\boxed{"
    assert result.final.text.startswith("\\boxed{Ada Quist}")
    assert result.final.prompt_ids[-len("\\boxed{"):] == [ord(c) for c in "\\boxed{"]


def test_a_reply_cut_by_its_cap_is_truncated_and_its_ids_are_kept_as_generated() -> None:
    settings = Settings(strategy="overwrite", chunk_tokens=48, memory_tokens=10, final_tokens=60)
    result, _chat, _requests = episode(settings)
    first = result.memory_turns[0]
    assert first.truncated and len(first.response_ids) == 10
    assert first.memory_after == first.text == "".join(chr(i) for i in first.response_ids)


def test_a_stop_string_cuts_the_text_the_strategy_reads_not_the_ids() -> None:
    chat = CharChat()

    async def generate(prompt_ids: list[int], request: SamplingRequest) -> Generated:
        reply = "<think>x</think><check>no</check>" if "<check>" in "".join(map(chr, prompt_ids)) else "\\boxed{a}"
        return Generated([ord(c) for c in reply])

    settings = Settings(strategy="gated", chunk_tokens=48, memory_tokens=100, final_tokens=20)
    chunks = chunk_text(TEXT, chat.tokenizer, 48)
    result = asyncio.run(run_episode(QUESTION, chunks, settings=settings, chat=chat, generate=generate))
    first = result.memory_turns[0]
    assert first.text == "<think>x</think>" and first.finish_reason == "stop"
    assert first.decisions["update"] is False and first.decisions["stopped_early"] is True
    assert "".join(map(chr, first.response_ids)).endswith("<check>no</check>")


def test_a_prompt_over_the_trainers_limit_is_refused_not_cut() -> None:
    with pytest.raises(BudgetError, match="over the 100-token limit"):
        episode(Settings(strategy="overwrite", chunk_tokens=48, memory_tokens=200, final_tokens=60), prompt_limit=100)


def test_a_strategy_that_chooses_its_reading_order_is_not_trained() -> None:
    with pytest.raises(UsageError, match="chooses its own reading order"):
        episode(Settings(strategy="evidence", chunk_tokens=48))


def test_max_chunks_keeps_the_beginning_and_the_end_and_numbers_them_again() -> None:
    text = "".join(f"Paragraph {i} is here.\n\n" for i in range(20))
    every = chunk_text(text, CharTokenizer(), 24)
    kept = chunk_text(text, CharTokenizer(), 24, max_chunks=5)
    assert [c.text for c in kept] == [c.text for c in every[:3] + every[-2:]]
    assert [c.index for c in kept] == [0, 1, 2, 3, 4]


def test_evidence_is_placed_in_every_chunk_it_overlaps() -> None:
    chunks = chunk_text(TEXT, CharTokenizer(), 48)
    assert evidence_chunks(chunks, ["Ada Quist repaired"]) == [len(chunks) - 1]
    straddling = chunks[0].text[-5:] + chunks[1].text[:5]
    assert evidence_chunks(chunks, [straddling, "not in the text"]) == [0, 1]


# --- against a real `memread ask` run -----------------------------------------------------------------------


DOCUMENT = (
    "The Harbour Report, spring edition.\n\n"
    "The February storm closed the Widow's Pier for eleven days while divers checked the pilings.\n\n"
    "The ferry company added a second crossing on Saturdays during the summer season.\n\n"
    "Ada Quist, the lighthouse keeper, repaired the lamp after the storm broke its lens.\n\n"
    "A new crane for the container quay is on order and should arrive in the autumn.\n\n"
)


@pytest.mark.model
@pytest.mark.parametrize("strategy", ["overwrite", "gated", "callback"])
def test_every_turn_sends_the_prompt_ids_memread_ask_sends_on_smollm2(
        strategy: str, smollm2_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memread.backends.llamacpp import LlamaCppBackend
    from memread.run import ReadRequest, Run
    from memread.train.chat import LlamaChatTokenizer

    sent: list[tuple[list[int], Completion]] = []
    original = LlamaCppBackend._complete_one

    def recording(self: LlamaCppBackend, request: ChatRequest, prompt: list[int]) -> Completion:
        completion = original(self, request, prompt)
        sent.append((list(prompt), completion))
        return completion

    monkeypatch.setattr(LlamaCppBackend, "_complete_one", recording)
    monkeypatch.setenv("MEMREAD_THREADS", "1")
    source = tmp_path / "report.txt"
    source.write_text(DOCUMENT, encoding="utf-8")
    settings = Settings(strategy=strategy, chunk_tokens=40, memory_tokens=40, reply_tokens=40, final_tokens=24)
    request = ReadRequest(str(source), [QUESTION], settings=settings, model=str(smollm2_path), backend="llamacpp",
                          write_trace=False)
    with Run(request) as run:
        run.read()
        chat = LlamaChatTokenizer(run.backend)
        replies = iter(sent)

        async def replay(prompt_ids: list[int], request: SamplingRequest) -> Generated:
            # The model's reply as `memread ask` got it, in ids (a stop string put back, as an engine keeps it).
            _prompt, completion = next(replies)
            text = completion.text.removeprefix(settings.answer_start or "") if "Your answer" in chat.decode(
                prompt_ids) else completion.text
            ids = chat.text_ids(text + (completion.stop_reason or ""))
            return Generated(ids)

        chunks = chunk_text(DOCUMENT, chat.tokenizer, run.request.settings.chunk_tokens or 40)
        result = asyncio.run(run_episode(QUESTION, chunks, settings=run.request.settings, chat=chat,
                                         generate=replay))
    assert len(sent) >= 3 and len(result.turns) == len(sent)
    for turn, (prompt, _completion) in zip(result.turns, sent, strict=True):
        assert turn.prompt_ids == prompt
    assert [t.text for t in result.turns] == [completion.text for _prompt, completion in sent]
