"""One read of one question as training data: the turns of a memory agent, token for token.

:func:`run_episode` drives a strategy exactly as :class:`memread.loop.Loop` does for one lane (the same
:meth:`~memread.strategies.Strategy.plan_step` / :meth:`~memread.strategies.Strategy.read_reply`, the same messages,
the same begun final reply), but instead of a backend it calls ``generate(prompt_ids, request)``: token ids in, token
ids (and log-probabilities) out. A reply's ids are kept as generated; its text, decoded once, is only what the
strategy reads to make the next memory (MemAgent's "the truncated response tokens become the next memory").
Nothing is ever re-encoded, so the ids a trainer optimises are the ids the model produced.

An :class:`Episode` holds one :class:`Turn` per conversation: one per chunk read (``kind="memory"``), then the
answer (``kind="final"``), which is what MemAgent's Multi-Conv training makes rows of.

Every request is what ``memread ask`` sends for the same document, question and settings
(tests/test_train_episode.py replays a real ``memread ask`` run on SmolLM2 and compares every prompt id).
Strategies that choose their own reading order (``chooses_order``, e.g. evidence) are not trained here: the
papers' strategies read in document order.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memread.answer import final_answer
from memread.backends.base import Completion, Message
from memread.document import Chunk, Document, Provenance, Segment
from memread.errors import BudgetError, UsageError
from memread.settings import Settings
from memread.strategies import check_settings, create_strategy
from memread.strategies.base import State, StepPlan
from memread.tokens import Tokenizer
from memread.train.chat import ChatTokenizer


@dataclass(frozen=True)
class SamplingRequest:
    """What one generation asks of the engine besides the prompt ids."""

    max_tokens: int
    stop: tuple[str, ...] = ()
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None


@dataclass(frozen=True)
class Generated:
    """What the engine returns: the reply's token ids as sampled, and their log-probabilities when it has them."""

    token_ids: list[int]
    logprobs: list[float] | None = None


Generate = Callable[[list[int], SamplingRequest], Awaitable[Generated]]


@dataclass(frozen=True)
class Turn:
    """One conversation of an episode: a memory step (one chunk) or the final answer."""

    kind: str  # "memory" | "final"
    step: int  # the chunk's index for a memory turn; the number of chunks read for the final turn
    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float] | None
    text: str  # the reply as the strategy read it (a stop string removed, a begun reply included)
    finish_reason: str  # "stop" | "length"
    memory_before: str
    memory_after: str
    chunk: str = ""  # the chunk's text (memory turns)
    decisions: dict[str, Any] = field(default_factory=dict)
    parse_issues: tuple[str, ...] = ()
    exit: bool = False

    @property
    def truncated(self) -> bool:
        """The reply hit its generation cap (its memory may be cut off)."""
        return self.finish_reason == "length"


@dataclass(frozen=True)
class Episode:
    """Every turn of one read, the answer and what the strategy concluded."""

    question: str
    strategy: str
    turns: list[Turn]
    answer: str
    boxed: bool  # the final reply held the expected form (\\boxed{} or "the answer is")
    chunks: int  # chunks the document made (after ``max_chunks``)
    exited_at: int | None  # the step whose exit gate stopped the reading, if any

    @property
    def memory_turns(self) -> list[Turn]:
        return [turn for turn in self.turns if turn.kind == "memory"]

    @property
    def final(self) -> Turn:
        return self.turns[-1]


def document_from_text(text: str, name: str = "context") -> Document:
    """A document of one segment, as ``memread bench`` reads a benchmark sample's context."""
    return Document(name, "text", lambda _doc: iter([Segment(text, Provenance(name))]),
                    size_bytes=len(text.encode("utf-8")))


def chunk_text(text: str, tokenizer: Tokenizer, chunk_tokens: int, *, max_chunks: int | None = None) -> list[Chunk]:
    """``text`` cut by memread's chunker (as ``memread ask`` and ``memread bench`` cut it), then, when it makes more
    than ``max_chunks``, its middle dropped: the first ``ceil(max_chunks/2)`` and the last ``floor(max_chunks/2)``
    chunks are kept and numbered again (MemAgent centre-truncates its training contexts to ``max_chunks`` chunks'
    worth of tokens; memread drops whole chunks, so every chunk it keeps is one ``memread ask`` would read)."""
    from memread.chunk import Chunker

    chunks = list(Chunker(tokenizer, chunk_tokens).chunks(document_from_text(text).segments()))
    if max_chunks is None or len(chunks) <= max_chunks:
        return chunks
    if max_chunks < 1:
        raise UsageError(f"max_chunks must be at least 1, not {max_chunks}", hint="e.g. max_chunks=8 (MemAgent)")
    head = math.ceil(max_chunks / 2)
    kept = chunks[:head] + chunks[len(chunks) - (max_chunks - head):]
    return [replace(chunk, index=i) for i, chunk in enumerate(kept)]


def evidence_chunks(chunks: Sequence[Chunk], evidence: Iterable[str]) -> list[int]:
    """The indices of the chunks that hold (a part of) an evidence text (a gold paragraph, a needle): the chunk
    texts joined give the document, so each evidence text is placed by its first occurrence there and every chunk
    it overlaps counts. Evidence absent from the text is ignored (centre truncation may have dropped it)."""
    offsets: list[tuple[int, int]] = []
    position = 0
    for chunk in chunks:
        offsets.append((position, position + len(chunk.text)))
        position += len(chunk.text)
    whole = "".join(chunk.text for chunk in chunks)
    found: set[int] = set()
    for text in evidence:
        text = text.strip()
        at = whole.find(text) if text else -1
        if at < 0:
            continue
        for i, (start, end) in enumerate(offsets):
            if start < at + len(text) and at < end:
                found.add(i)
    return sorted(found)


def _messages(settings: Settings, prompt: str) -> tuple[Message, ...]:
    # As memread.loop.Loop._messages: a system message only when the settings ask for one.
    user = Message("user", prompt)
    return (Message("system", settings.system), user) if settings.system is not None else (user,)


class _Turns:
    """Sends one plan through ``generate`` and reads the reply as a backend's Completion."""

    def __init__(self, chat: ChatTokenizer, generate: Generate, settings: Settings,
                 prompt_limit: int | None) -> None:
        self.chat, self.generate, self.settings, self.prompt_limit = chat, generate, settings, prompt_limit

    async def send(self, plan: StepPlan, seed: int | None, reply_start: str = ""
                   ) -> tuple[list[int], Generated, Completion]:
        prompt_ids = self.chat.prompt_ids(_messages(self.settings, plan.prompt)) + self.chat.text_ids(reply_start)
        if self.prompt_limit is not None and len(prompt_ids) > self.prompt_limit:
            raise BudgetError(f"a prompt of {len(prompt_ids):,} tokens is over the {self.prompt_limit:,}-token limit",
                              hint="raise the prompt length (verl: data.max_prompt_length) or lower chunk_tokens")
        request = SamplingRequest(max_tokens=plan.max_tokens, stop=plan.stop, temperature=self.settings.temperature,
                                  top_p=self.settings.top_p, seed=seed)
        generated = await self.generate(prompt_ids, request)
        ids = list(generated.token_ids)
        text = self.chat.decode(ids)
        stop_reason: str | None = None
        hits = [(text.find(stop), stop) for stop in plan.stop if stop and stop in text]
        if hits:
            at, stop_reason = min(hits)
            text = text[:at]
        if stop_reason is not None or (ids and self.chat.is_end(ids[-1])):
            finish = "stop"
        else:
            finish = "length" if len(ids) >= plan.max_tokens else "stop"
        completion = Completion(text=reply_start + text, finish_reason=finish, prompt_tokens=len(prompt_ids),
                                completion_tokens=len(ids), stop_reason=stop_reason)
        return prompt_ids, generated, completion


async def run_episode(question: str, chunks: Iterable[Chunk], *, settings: Settings, chat: ChatTokenizer,
                      generate: Generate, prompt_limit: int | None = None) -> Episode:
    """Read ``chunks`` for ``question`` with ``settings.strategy``, every reply from ``generate``.

    As ``memread ask``: the request seed is ``settings.seed + step`` (the final answer's: ``seed + steps read``),
    the final reply begins with ``settings.answer_start`` (set it to "" to let the model begin it, as the papers
    trained), and a chunk over the strategy's budget is refused (BudgetError). ``prompt_limit`` refuses any prompt
    longer than that many tokens (a trainer's fixed prompt length) instead of letting the engine cut it.
    """
    settings = check_settings(settings)
    strategy = create_strategy(settings, chat.tokenizer, engine_names_stops=True)
    if strategy.chooses_order:
        strategy.close()
        raise UsageError(f"the {settings.strategy} strategy chooses its own reading order, which training does not "
                         "support", hint="train overwrite (MemAgent), gated (GRU-Mem) or callback (ReMemR1)")
    sender = _Turns(chat, generate, settings, prompt_limit)
    turns: list[Turn] = []
    state: State = strategy.initial_state()
    steps = 0
    exited_at: int | None = None
    count = 0
    try:
        for chunk in chunks:
            count += 1
            if exited_at is not None:
                continue  # counted, not read
            if chunk.tokens > strategy.chunk_tokens:
                raise BudgetError(f"chunk {chunk.index + 1} has {chunk.tokens} tokens, over the "
                                  f"{strategy.chunk_tokens}-token chunk budget",
                                  hint="chunk the document with the same chunk_tokens as the strategy")
            plan = strategy.plan_step(0, question, state, chunk)
            seed = None if settings.seed is None else settings.seed + chunk.index
            prompt_ids, generated, completion = await sender.send(plan, seed)
            result = strategy.read_reply(0, question, state, chunk, completion)
            steps += 1
            before = strategy.memory(state)
            state = {**result.state, "steps": steps}
            if result.exit:
                state["exited_at"] = exited_at = chunk.index
            turns.append(Turn(kind="memory", step=chunk.index, prompt_ids=prompt_ids,
                              response_ids=list(generated.token_ids), logprobs=generated.logprobs,
                              text=completion.text, finish_reason=completion.finish_reason, memory_before=before,
                              memory_after=result.memory, chunk=chunk.text, decisions=dict(result.decisions),
                              parse_issues=tuple(result.parse_issues), exit=result.exit))
            strategy.observe_chunk(chunk)
        plan = strategy.plan_final(0, question, state)
        seed = None if settings.seed is None else settings.seed + (turns[-1].step + 1 if turns else 0)
        prompt_ids, generated, completion = await sender.send(plan, seed, settings.answer_start or "")
        answer, boxed = final_answer(completion.text, style=settings.final_prompt)
        memory = strategy.memory(state)
        turns.append(Turn(kind="final", step=steps, prompt_ids=prompt_ids, response_ids=list(generated.token_ids),
                          logprobs=generated.logprobs, text=completion.text, finish_reason=completion.finish_reason,
                          memory_before=memory, memory_after=memory))
    finally:
        strategy.close()
    return Episode(question=question, strategy=settings.strategy, turns=turns, answer=answer, boxed=boxed,
                   chunks=count, exited_at=exited_at)
