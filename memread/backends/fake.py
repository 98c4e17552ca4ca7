"""A scripted backend for unit tests of the loop (never the only proof: integration tests use llama.cpp).

Replies come from a list (consumed in order, one per request) or a function of the request. A reply is a
string or a full :class:`Completion`. Strings are treated like an engine would: stop strings cut the text
before the first match (``finish_reason="stop"``; ``stop_reason`` names the stop string unless
``names_stops=False``, which imitates llama-server), and a reply longer than ``max_tokens`` is cut there
(``finish_reason="length"``). Tokens are counted with :class:`~memread.tokens.CharTokenizer` unless
another tokenizer is given. Every batch received is kept in :attr:`calls`. With ``continues_replies=True`` a
request's ``reply_start`` begins the reply and the scripted string is what the model adds to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memread.backends.base import Capabilities, ChatRequest, Completion, Message
from memread.tokens import CharTokenizer, Tokenizer

Reply = str | Completion
Script = Sequence[Reply] | Callable[[ChatRequest], Reply]

# Tokens a chat template adds per message (role markers), roughly as ChatML does.
TEMPLATE_TOKENS_PER_MESSAGE = 4


class FakeBackend:
    name = "fake"

    def __init__(self, replies: Script, *, context_length: int = 1_000_000, tokenizer: Tokenizer | None = None,
                 model: str = "fake-model", names_stops: bool = True, tokenizes_text_safely: bool = True,
                 concurrent_calls: bool = False, continues_replies: bool = False) -> None:
        self._script = replies
        self._position = 0
        self.context_length = context_length
        self._tokenizer = tokenizer or CharTokenizer()
        self.model = model
        self.names_stops = names_stops
        # tokenizes_text_safely=False imitates a server that reads control-token strings in messages as control
        # tokens, so the loop's text guard applies (memread.backends.text_guard); concurrent_calls=True: a
        # scripted function answers, safe from threads.
        self.capabilities = Capabilities(names_stop_strings=names_stops, tokenizes_text_safely=tokenizes_text_safely,
                                         concurrent_calls=concurrent_calls, continues_replies=continues_replies)
        self.calls: list[list[ChatRequest]] = []
        self.closed = False

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    @property
    def requests(self) -> list[ChatRequest]:
        """Every request received, in order."""
        return [request for batch in self.calls for request in batch]

    def count_prompt(self, messages: Sequence[Message]) -> int:
        return sum(self._tokenizer.count(m.content) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.calls.append(list(requests))
        return [self._one(request) for request in requests]

    def close(self) -> None:
        self.closed = True

    def _next(self, request: ChatRequest) -> Reply:
        if callable(self._script):
            return self._script(request)
        if self._position >= len(self._script):
            raise AssertionError(f"the fake backend ran out of scripted replies at request {self._position + 1}")
        reply = self._script[self._position]
        self._position += 1
        return reply

    def _one(self, request: ChatRequest) -> Completion:
        reply = self._next(request)
        if isinstance(reply, Completion):
            return reply
        text, finish, stop_reason = reply, "stop", None
        hits = [(text.find(stop), stop) for stop in request.stop if stop and stop in text]
        if hits:
            cut, stop = min(hits)
            text, stop_reason = text[:cut], (stop if self.names_stops else None)
        ids = self._tokenizer.encode(text)
        if len(ids) > request.max_tokens:
            text, finish, stop_reason = self._tokenizer.decode(ids[:request.max_tokens]), "length", None
        begun = request.reply_start if self.capabilities.continues_replies else ""
        return Completion(text=begun + text, finish_reason=finish, prompt_tokens=self.count_prompt(request.messages),
                          completion_tokens=self._tokenizer.count(text), stop_reason=stop_reason)


def create(model: str | None = None, **options: object) -> FakeBackend:
    """Registry-style factory: a fake backend that answers every request with ``options["reply"]``."""
    reply = str(options.pop("reply", "\\boxed{fake}"))
    return FakeBackend(lambda request: reply, model=model or "fake-model")
