"""What requests share is evaluated once on llama.cpp, and every reply stays the one its request gets from an
empty cache: several questions over one chunk, consecutive steps of one question, a batch in any order, a
resumed run's cold start (SmolLM2-135M, greedy)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import llama_cpp
import numpy as np
import pytest

from memread.ask import read
from memread.backends.base import ChatRequest, Completion, Message
from memread.backends.llamacpp import LlamaCppBackend
from memread.backends.prefill import PARAGRAPH_BLOCK, block_ends, shared_length
from memread.backends.threads import ThreadPolicy
from memread.document import Document, Provenance, Segment
from memread.events import Answered, Event, StepFinished
from memread.loop import LoopSettings
from memread.prompts import memagent_memory_prompt

ROOT = Path(__file__).resolve().parents[1]
REPORT = (ROOT / "docs" / "sample" / "harbour-report.md").read_text()
QUESTIONS = ("How many commercial vessels called at Saltmere?", "Which pier is the oldest?",
             "How many times was the lifeboat called out?")


def request(prompt: str, max_tokens: int = 24) -> ChatRequest:
    return ChatRequest((Message("user", prompt),), max_tokens=max_tokens, temperature=0.0, seed=3)


def texts(completions: list[Completion]) -> list[str]:
    return [completion.text for completion in completions]


@pytest.fixture()
def fresh(smollm2_path: Path) -> Iterator[list[LlamaCppBackend]]:
    """Backends loaded for one test (a fresh one is what a resumed run starts with: an empty cache)."""
    made: list[LlamaCppBackend] = []
    yield made
    for backend in made:
        backend.close()


def load(smollm2_path: Path, made: list[LlamaCppBackend], **options: object) -> LlamaCppBackend:
    backend = LlamaCppBackend(smollm2_path, n_ctx=4096, **{"n_threads": 1, **options})  # type: ignore[arg-type]
    made.append(backend)
    return backend


# --- where blocks end ------------------------------------------------------------------------------------


def test_block_cuts_depend_only_on_the_tokens_before_them() -> None:
    rng = random.Random(7)
    alphabet = [b"word", b" the", b".", b"\n", b"\n\n", b".\n\n", b"", b"\n\n\n"]
    for _ in range(300):
        shared = [rng.choice(alphabet) for _ in range(rng.randint(0, 400))]
        a = shared + [rng.choice(alphabet) for _ in range(rng.randint(1, 300))]
        b = shared + [rng.choice(alphabet) for _ in range(rng.randint(1, 300))]
        common = shared_length(a, b)  # type: ignore[arg-type]
        ends_a, ends_b = block_ends(a, most=128), block_ends(b, most=128)
        assert [e for e in ends_a[:-1] if e <= common] == [e for e in ends_b[:-1] if e <= common]
        assert ends_a[-1] == len(a) and all(0 < y - x <= 128 for x, y in zip([0, *ends_a], ends_a, strict=False))


def test_blocks_end_at_paragraphs_once_long_enough_and_never_pass_the_batch_size() -> None:
    words = [b" w"] * 100
    assert block_ends(words, most=40) == [40, 80, 100]
    paragraphs = ([b" w"] * 32 + [b".\n\n"]) * 4  # 33-token paragraphs: too short alone, cut every second one
    assert block_ends(paragraphs, most=512, paragraph=PARAGRAPH_BLOCK) == [66, 132]
    lines = ([b" w"] * 99 + [b"\n"]) * 3  # no paragraph: cut at the first line end after 192 tokens
    assert block_ends(lines, most=512) == [200, 300]


@pytest.mark.model
@pytest.mark.slow
def test_a_prompt_cut_in_the_same_blocks_gives_the_same_logits_every_time(smollm2_backend: LlamaCppBackend) -> None:
    # What exact replies rest on. Why memread cuts prompts only where the prompt says (prefill.split): llama.cpp
    # evaluating the same tokens in other batches may compute other logits. Zen 5's AVX-512 kernels do (the last
    # token evaluated alone, as llama-cpp-python's own prefix reuse does, gave other numbers); Zen 3's AVX2 ones
    # did not. The same cuts, evaluated again from an empty cache, must give the same numbers bit for bit.
    llm, prefill = smollm2_backend._llm, smollm2_backend._prefill
    prompt = smollm2_backend.prompt_tokens((Message("user", REPORT[:2200]),))  # 563 tokens
    blocks = prefill.split(prompt)
    assert len(blocks) > 1  # Llama.eval cuts at 512 tokens too
    logits = []
    for _ in range(2):
        prefill.forget()
        for block in blocks:
            llm.eval(block)
        logits.append(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
                      .copy())
    prefill.forget()
    assert np.array_equal(logits[0], logits[1])


# --- sharing on the real model ---------------------------------------------------------------------------


class Decodes:
    """Records every prompt evaluation a backend makes: (position, tokens), one llama_decode each."""

    def __init__(self, backend: LlamaCppBackend) -> None:
        self.calls: list[tuple[int, tuple[int, ...]]] = []
        llm = backend._llm
        evaluate = llm.eval

        def recorded(tokens: list[int]) -> None:
            if len(tokens) > 1:  # generated tokens are decoded one by one, the same way in every run
                self.calls.append((llm.n_tokens, tuple(tokens)))
            evaluate(tokens)

        llm.eval = recorded

    def take(self) -> list[tuple[int, tuple[int, ...]]]:
        calls, self.calls = self.calls, []
        return calls


@pytest.mark.model
@pytest.mark.slow
def test_a_prompt_is_always_evaluated_by_the_same_decode_calls_whatever_the_cache_holds(
        smollm2_path: Path, fresh: list[LlamaCppBackend]) -> None:
    # The invariant behind exact replies, on any model: the KV of a prompt comes from the same llama_decode
    # calls (same tokens, same positions) with a warm cache as from an empty one; the cache only skips calls.
    chunk = REPORT[:1601]  # 397 tokens: with the instruction, each prompt is more than one 512-token batch
    prompts = [memagent_memory_prompt(q, "No previous memory", chunk, layout="chunk-first") for q in QUESTIONS[:2]]
    prompts += [memagent_memory_prompt(QUESTIONS[0], "1,412 vessels.", REPORT[1601:2458])]
    cold = load(smollm2_path, fresh, prefix_cache=False)
    shared = load(smollm2_path, fresh)
    cold_calls, shared_calls = Decodes(cold), Decodes(shared)
    for prompt in prompts:
        cold.complete([request(prompt, max_tokens=2)])
        shared.complete([request(prompt, max_tokens=2)])
        expected = cold_calls.take()
        skipped = len(expected) - len(made := shared_calls.take())
        assert made == expected[skipped:]  # the calls it made are the cold run's last ones, no other cut
        held = shared._prefill.blocks
        assert [(sum(map(len, held[:i])), block) for i, block in enumerate(held)] == expected  # the rest was held
        assert all(len(block) <= 512 for _, block in expected)
    assert skipped > 0  # (the last prompt shared the instruction with the first ones)


@pytest.mark.model
@pytest.mark.slow
def test_questions_over_one_chunk_share_its_prefill_and_get_the_replies_they_get_alone(
        smollm2_path: Path, fresh: list[LlamaCppBackend]) -> None:
    chunk = REPORT[:2458]  # 604 tokens: more than one 512-token batch
    batch = [request(memagent_memory_prompt(q, "No previous memory", chunk, layout="chunk-first"))
             for q in QUESTIONS[:2]]
    shared = load(smollm2_path, fresh)
    together = shared.complete(batch)

    chunk_tokens = shared.tokenizer.count(chunk)
    assert chunk_tokens > 600
    reused = sorted(completion.cached_prompt_tokens or 0 for completion in together)
    assert reused[0] == 0 and min(reused[1:]) >= chunk_tokens - PARAGRAPH_BLOCK  # the chunk was read once
    assert all(completion.completion_tokens > 0 for completion in together)

    cold = load(smollm2_path, fresh, prefix_cache=False)
    alone = [cold.complete([one])[0] for one in batch]  # each as a resumed run's first call would see it
    assert all(completion.cached_prompt_tokens == 0 for completion in alone)
    assert texts(together) == texts(alone)
    assert texts(shared.complete(batch[::-1])) == texts(alone)[::-1]  # any order, any cache history


@pytest.mark.model
@pytest.mark.slow
def test_consecutive_steps_reuse_the_instruction_and_question_and_reply_as_from_a_cold_start(
        smollm2_path: Path, fresh: list[LlamaCppBackend]) -> None:
    question = QUESTIONS[0]
    steps = [request(memagent_memory_prompt(question, memory, REPORT[start:start + 800]))
             for memory, start in (("No previous memory", 0), ("1,412 vessels called.", 800),
                                   ("1,412 commercial vessels called at Saltmere.", 1600))]
    shared = load(smollm2_path, fresh)
    replies = [shared.complete([step])[0] for step in steps]
    assert replies[0].cached_prompt_tokens == 0
    assert all((reply.cached_prompt_tokens or 0) >= PARAGRAPH_BLOCK for reply in replies[1:])

    cold = load(smollm2_path, fresh, prefix_cache=False)
    assert texts(replies) == texts([cold.complete([step])[0] for step in steps])


@pytest.mark.model
@pytest.mark.slow
def test_several_questions_read_in_one_run_end_as_each_read_alone_from_a_cold_start(
        smollm2_path: Path, fresh: list[LlamaCppBackend]) -> None:
    text = REPORT[:1601]  # two chunks
    document = Document("report", "text", lambda _doc: iter([Segment(text, Provenance("report", line_start=1))]))
    settings = LoopSettings(strategy="overwrite", chunk_tokens=220, memory_tokens=24, final_tokens=12,
                            temperature=0.0, seed=5, layout="chunk-first")

    def run(backend: LlamaCppBackend, questions: tuple[str, ...]) -> list[Event]:
        events: list[Event] = []
        read(document, questions, backend=backend, settings=settings, sinks=[events.append])
        return events

    questions = QUESTIONS[:2]
    together = run(load(smollm2_path, fresh), questions)
    cold = load(smollm2_path, fresh, prefix_cache=False)
    for lane, question in enumerate(questions):
        alone = run(cold, (question,))
        assert ([e.reply for e in together if isinstance(e, StepFinished) and e.lane == lane]
                == [e.reply for e in alone if isinstance(e, StepFinished)])
        assert ([e.reply for e in together if isinstance(e, Answered) and e.lane == lane]
                == [e.reply for e in alone if isinstance(e, Answered)])
    assert sum(isinstance(e, StepFinished) for e in together) == 2 * len(questions)


# --- threads that follow the machine, on the real model --------------------------------------------------


class Seesaw:
    """A machine whose other load comes and goes at every look: 0, 1, 0, 1, ..."""

    def __init__(self) -> None:
        self.looks = 0
        self.now = 0.0

    def clock(self) -> float:
        self.now += 1.0
        return self.now

    def others(self) -> float:
        self.looks += 1
        return float(self.looks % 2)


@pytest.mark.model
@pytest.mark.slow
def test_thread_changes_during_a_reply_reach_llama_cpp_are_told_and_change_no_reply(
        smollm2_path: Path, fresh: list[LlamaCppBackend]) -> None:
    seesaw = Seesaw()
    policy = ThreadPolicy(2, interval=0.0, window=0.5, burst=1, clock=seesaw.clock, others=seesaw.others)
    moving = load(smollm2_path, fresh, n_threads=None, thread_policy=policy)
    fixed = load(smollm2_path, fresh, n_threads=1)
    prompt = request(memagent_memory_prompt(QUESTIONS[1], "No previous memory", REPORT[:1200]), max_tokens=12)

    reply = moving.complete([prompt])[0]
    assert reply.text == fixed.complete([prompt])[0].text
    assert len(moving.thread_changes) >= 10  # it moved at every block and token
    assert llama_cpp.llama_n_threads(moving._llm.ctx) == moving.n_threads == reply.extra["threads"]
    told = [w for w in moving.warnings if "llama.cpp threads" in w]
    assert told[0].startswith("llama.cpp threads 2 -> 1") or told[0].startswith("llama.cpp threads 1 -> 2")
    assert len(told) == 10 and "keeps changing" in moving.warnings[-1]  # then one line, not hundreds
    assert fixed.thread_changes == [] and not any("threads" in w for w in fixed.warnings)
