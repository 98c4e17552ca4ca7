"""Counting tokens with llama.cpp's own tokenizer in as few calls as the model's pre-tokenizer allows.

Every ``llama_tokenize`` call builds its pre-tokenizer's regular expression again (a ``std::regex``: about
0.5 ms on the machines we measured, as much as tokenizing several hundred characters), and the chunker counts
thousands of pieces of a few hundred characters. Three things here cut that cost without changing a count:

* **One call per count.** ``Llama.tokenize`` asks for at most the training context's worth of tokens, which a
  vocabulary-only model reports as 0, so every text was tokenized twice (once to learn the size). A count
  asks llama.cpp for no tokens at all and reads the size it answers with.
* **Texts side by side** (:meth:`LlamaCounter.count_many`): several texts joined with :data:`SEPARATOR` (a
  space, then a digit) are tokenized in one call, and each text's count is the number of tokens between two
  separators, found by the tokens' byte lengths.
* **Joins at line starts** (:meth:`LlamaCounter.count_joined`): the count of texts put together is the sum of
  their counts where each join follows a line break and precedes a letter, digit or ASCII punctuation; only
  the runs joined elsewhere are counted again.

BPE merges only inside the pieces the pre-tokenizer's regular expression cuts, so both are exact when the cuts
fall at the joins, and as they would at the end and the start of each text alone. They do for Qwen2's
expression, ``(?:'[sS]|…)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+``,
which looks at nothing before the place it matches, and one character past a match at most:

* a text's last piece does not grow into " 0": runs of letters, of punctuation or of line breaks stop at a
  space, a digit is a piece of its own, a contraction needs a letter after its apostrophe. Trailing spaces:
  at the end of a text ``\\s+(?!\\S)`` takes them all; followed by " 0", all but the separator's own space,
  which is the same piece (followed by a bare digit it would leave one out: hence the space). The separator is
  then " " and "0" (no prefix takes a digit), and the next text starts a piece afresh;
* a piece that ends in a line break followed by a letter, a digit or punctuation ends there, as it does at the
  end of a text (``\\s*[\\r\\n]+`` and the line breaks after punctuation stop at anything else, and no
  alternative starts with a line break and goes on): the text after starts a piece afresh.

Each side-by-side call is checked all the same: every text must start and end on a token boundary and each
separator must come out as the tokens of " " and "0", else that batch is counted one text at a time, and a set
of probes must agree with one-by-one counts before either is used. Tokens the vocabulary defines as whole
strings (matched before the expression runs) must hold no whitespace or digit. Other pre-tokenizers
(SmolLM2's; Llama 3's ``\\p{N}{1,3}`` would join the separator's digit to a text's leading digits) are counted
one text at a time: the same counts, only slower.
"""

from __future__ import annotations

import ctypes
from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

SEPARATOR = " 0"
SHORTCUTS = frozenset({"qwen2"})  # tokenizer.ggml.pre values whose expression is argued above
BATCH_BYTES = 32 * 1024  # texts tokenized in one call: the expression's build becomes a small share
_INT32_MIN = -(2**31)  # llama_tokenize's answer to a text it cannot take
_USER_DEFINED = 16  # LLAMA_TOKEN_ATTR_USER_DEFINED
_STRIPS = 128 | 256  # LLAMA_TOKEN_ATTR_LSTRIP | LLAMA_TOKEN_ATTR_RSTRIP
# Texts ending and starting as the argument above has to hold for; one-by-one counts must agree on them.
PROBES = ("a", "  ", "x  ", "x\n  ", "x \n", "it's", "it'", ".", "a.\n", "\r", "1", "12", " 0", "é\u00a0\u00a0",
          "\u2028", "\t\t", "x\t", "'s", "<tool_call>", "中文", "e\u0301", "😀", "\n\n\n", "word ", "0 ", "\n#",
          "b\r\n", "(x)\n", "\u00e9t\u00e9\n")


def line_start(before: str, after: str) -> bool:
    """Does a join of ``before`` and ``after`` fall where Qwen2's expression cuts anyway (see the module doc)?"""
    if not before or not after or before[-1] not in "\r\n":
        return False
    first = after[0]
    return "!" <= first <= "~" or first.isalnum()


class LlamaCounter:
    """Token counts of texts with the vocabulary ``vocab`` (a ``llama_vocab`` pointer that must outlive this
    object); ``pre`` is the GGUF's ``tokenizer.ggml.pre`` and ``model`` its ``tokenizer.ggml.model``. Texts are
    encoded as UTF-8 (a lone surrogate becomes "?"), special-token strings are plain text."""

    def __init__(self, vocab: Any, *, pre: str | None, model: str | None) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        self._vocab = vocab
        self._none = (llama_cpp.llama_token * 1)()  # never written: llama.cpp is asked for 0 tokens
        self._shortcuts: bool | None = None if (pre in SHORTCUTS and model == "gpt2") else False
        self._lengths: list[int] = []  # bytes of text per token id (-1: not looked up yet)
        self._separator: list[int] = []

    def count(self, text: str) -> int:
        return self._count(_utf8(text))

    def encode(self, text: str) -> list[int]:
        return self._encode(_utf8(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """``[count(text) for text in texts]``, in fewer calls where the pre-tokenizer allows it."""
        data = [_utf8(text) for text in texts]
        if not self.shortcuts():
            return [self._count(item) for item in data]
        counts = [0] * len(data)
        batch: list[int] = []
        size = 0
        for index, item in enumerate(data):
            if not item:
                continue
            if len(item) > BATCH_BYTES:
                counts[index] = self._count(item)
                continue
            if size + len(item) > BATCH_BYTES:
                self._count_batch(data, batch, counts)
                batch, size = [], 0
            batch.append(index)
            size += len(item) + len(SEPARATOR)
        self._count_batch(data, batch, counts)
        return counts

    def count_joined(self, parts: Sequence[str], counts: Sequence[int]) -> int:
        """``count("".join(parts))``, given ``counts[i] == count(parts[i])``: runs of parts joined at line starts
        are added up, the others counted again (all of them in one :meth:`count_many`)."""
        if not self.shortcuts():
            return self.count("".join(parts))
        total = 0
        runs: list[str] = []
        start = 0
        for end in range(1, len(parts) + 1):
            if end < len(parts) and not line_start(parts[end - 1], parts[end]):
                continue
            if end - start == 1:
                total += counts[start]
            else:
                runs.append("".join(parts[start:end]))
            start = end
        return total + sum(self.count_many(runs))

    def shortcuts(self) -> bool:
        """May texts be counted side by side and joins at line starts be added up (see the module doc)?"""
        if self._shortcuts is None:
            self._shortcuts = False
            if self._plain_user_tokens():
                self._separator = [*self._encode(SEPARATOR[:1].encode()), *self._encode(SEPARATOR[1:].encode())]
                self._shortcuts = len(self._separator) == 2  # provisional: the probes below use it
                self._shortcuts = self._shortcuts and self._probes_agree()
        return self._shortcuts

    # -- one call --------------------------------------------------------------------------------------------

    def _count(self, data: bytes) -> int:
        if not data:
            return 0
        found = self._llama_cpp.llama_tokenize(self._vocab, data, len(data), self._none, 0, False, False)
        if found == _INT32_MIN:
            raise RuntimeError(f"llama.cpp could not tokenize a text of {len(data)} bytes")
        return int(abs(found))

    def _encode(self, data: bytes) -> list[int]:
        size = len(data) + 8  # BPE gives at most a token a byte; other vocabularies may add a prefix token
        while True:
            tokens = (self._llama_cpp.llama_token * size)()
            found = self._llama_cpp.llama_tokenize(self._vocab, data, len(data), tokens, size, False, False)
            if found == _INT32_MIN:
                raise RuntimeError(f"llama.cpp could not tokenize a text of {len(data)} bytes")
            if found >= 0:
                ids: list[int] = tokens[:found]
                return ids
            size = -found

    # -- side by side ----------------------------------------------------------------------------------------

    def _count_batch(self, data: Sequence[bytes], batch: list[int], counts: list[int]) -> None:
        found = self._side_by_side([data[index] for index in batch]) if len(batch) > 1 else None
        for position, index in enumerate(batch):
            counts[index] = found[position] if found is not None else self._count(data[index])

    def _side_by_side(self, texts: list[bytes]) -> list[int] | None:
        """Each text's count from one call on the texts joined by the separator; None when a check fails."""
        ids = self._encode(SEPARATOR.encode().join(texts))
        sizes = self._piece_lengths(ids)
        ends = list(accumulate(sizes))  # ends[k]: the byte offset just after token k
        counts: list[int] = []
        first, offset = 0, 0  # the text's first token, and the byte offset where it ends
        for number, text in enumerate(texts):
            offset += len(text)
            last = bisect_left(ends, offset)
            if last >= len(ends) or ends[last] != offset:
                return None  # a token runs over the text's end
            counts.append(last + 1 - first)
            if number < len(texts) - 1:
                if ids[last + 1: last + 3] != self._separator:
                    return None
                offset += len(SEPARATOR)
                first = last + 3
        return counts if ends[-1] == offset else None

    def _piece_lengths(self, ids: list[int]) -> list[int]:
        if not self._lengths:
            self._lengths = [-1] * self._llama_cpp.llama_vocab_n_tokens(self._vocab)
        lengths = self._lengths
        sizes = [lengths[token] for token in ids]
        if min(sizes, default=0) < 0:
            for position, token in enumerate(ids):
                if sizes[position] < 0:
                    sizes[position] = lengths[token] = self._piece_length(token)
        return sizes

    def _piece_length(self, token: int) -> int:
        """How many bytes of text ``token`` stands for."""
        size = 64
        while True:
            buffer = ctypes.create_string_buffer(size)
            written = self._llama_cpp.llama_token_to_piece(self._vocab, token, buffer, size, 0, False)
            if written >= 0:
                return int(written)
            size = -written

    # -- checks ----------------------------------------------------------------------------------------------

    def _plain_user_tokens(self) -> bool:
        """Do the vocabulary's user-defined tokens (matched in text before the expression runs) hold no
        whitespace or digit, and strip nothing around them?"""
        get_attr, get_text = self._llama_cpp.llama_vocab_get_attr, self._llama_cpp.llama_vocab_get_text
        for token in range(self._llama_cpp.llama_vocab_n_tokens(self._vocab)):
            attributes = get_attr(self._vocab, token)
            if attributes & _USER_DEFINED:
                text = bytes(get_text(self._vocab, token) or b"").decode("utf-8", errors="replace")
                if attributes & _STRIPS or any(c.isspace() or c.isdigit() for c in text):
                    return False
        return True

    def _probes_agree(self) -> bool:
        """Side by side, the probes count as they do alone; joined at line starts, as the sum of their counts."""
        probes = list(PROBES)
        alone = {probe: self.count(probe) for probe in probes}
        if self.count_many(probes) != list(alone.values()):
            return False
        pairs = [(a, b) for a in probes for b in probes if line_start(a, b)]
        return self.count_many([a + b for a, b in pairs]) == [alone[a] + alone[b] for a, b in pairs]


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", errors="replace")
