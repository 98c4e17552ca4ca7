"""Prompt evaluation on llama.cpp that computes what prompts share once, and still gives every request the
reply it would get alone, from an empty cache.

**Why fixed blocks.** llama.cpp's numbers for a token depend on the ``llama_decode`` call that evaluated it.
Measured on this CPU (AVX-512) with llama-cpp-python 0.3.16: Qwen2.5-1.5B Q4_K_M gave other last-token logits
(up to 0.57 apart) whenever a block's size was not a multiple of 4 (300 + 2 + 298 tokens against 512 + 88;
300 + 4 + 296 matched), and SmolLM2 Q4_1 when the last token of some prompts came alone (up to 0.58 apart):
enough to change a greedy reply. So a prompt is always evaluated in the same blocks, cut where the prompt
itself says (:func:`block_ends`), whether or not a cache holds part of it; a block is taken from the cache
only when the cache holds the very same leading blocks, evaluated by the very same calls. The KV the model
then attends to is, bit for bit, the KV a cold evaluation computes, so a run resumed after a crash (empty
cache) reaches the same replies. Also measured: truncating the cache back to a block boundary (after another
prompt's blocks) and 1 against 2 threads gave identical logits on both models; only the blocks matter.

**Where blocks end.** A block ends at a paragraph end (``"\\n\\n"``) once it has :data:`PARAGRAPH_BLOCK`
tokens, at a line end once it has :data:`LINE_BLOCK`, and at the batch size in any case. Each cut depends
only on the tokens before it, so two prompts that share a beginning share every block boundary inside it.
memread's prompts put ``"\\n\\n"`` between their parts, so what several requests share (the instruction, a
chunk that comes first) ends on a boundary, give or take one short paragraph. Blocks of at least 64 tokens
keep llama.cpp's batched prompt evaluation efficient.

**One sequence.** The cache is llama.cpp's single sequence: the blocks of the last prompt evaluated, from
position 0. A new prompt keeps the leading blocks it shares and evaluates the rest after them (the cells
past the shared part are freed first, so every token sits in the same cell as in a cold run). Requests of a
batch run in token order, so neighbours share the longest prefixes; a prefix is evaluated once per batch,
not kept in copies. This needs no extra memory and no state copies (a 5,000-token Qwen2.5-1.5B prefix is
140 MB of KV).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

PARAGRAPH_BLOCK = 64  # a block may end at a paragraph end once it has this many tokens
LINE_BLOCK = 192  # ... or at a line end once it has this many


def block_ends(pieces: Sequence[bytes], *, most: int, paragraph: int = PARAGRAPH_BLOCK,
               line: int = LINE_BLOCK) -> list[int]:
    """Where the blocks of a prompt end (token offsets, the last one ``len(pieces)``), given each token's
    text. A cut depends only on the tokens before it. ``most`` is the largest block (the batch size)."""
    ends: list[int] = []
    start = 0
    newlines = 0  # newlines at the end of the text so far
    for i, piece in enumerate(pieces):
        text = piece.rstrip(b"\n")
        trailing = len(piece) - len(text)
        newlines = newlines + trailing if not text else trailing
        size = i + 1 - start
        if size >= most or (newlines >= 2 and size >= paragraph) or (newlines >= 1 and size >= line):
            ends.append(i + 1)
            start = i + 1
    if start < len(pieces):
        ends.append(len(pieces))
    return ends


def shared_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` have in common."""
    length = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        length += 1
    return length


class SharedPrefill:
    """Evaluates prompts in llama.cpp's one sequence, reusing the leading blocks the sequence already holds.

    ``llm`` is a loaded ``llama_cpp.Llama``; ``before_decode`` runs before every ``llama_decode`` this class
    makes (the backend adjusts its thread count there). ``blocks`` is what the sequence holds.
    """

    def __init__(self, llm: Any, *, before_decode: Callable[[], None] = lambda: None) -> None:
        self._llm = llm
        self._before_decode = before_decode
        self._pieces: dict[int, bytes] = {}
        self.blocks: list[tuple[int, ...]] = []
        self.most = int(llm.n_batch)

    def split(self, prompt: Sequence[int]) -> list[tuple[int, ...]]:
        """The blocks ``prompt`` is always evaluated in."""
        ends = block_ends([self._piece(token) for token in prompt], most=self.most)
        return [tuple(prompt[start:end]) for start, end in zip([0, *ends], ends, strict=False)]

    def evaluate(self, prompt: Sequence[int], *, reuse: bool = True) -> int:
        """Leave the sequence holding ``prompt``, its last token's logits ready for sampling; return how many
        prompt tokens came from the cache. The last block is always evaluated (its logits are needed)."""
        blocks = self.split(prompt)
        kept = 0
        if reuse:
            while kept < min(len(blocks) - 1, len(self.blocks)) and self.blocks[kept] == blocks[kept]:
                kept += 1
        self.blocks = blocks[:kept]
        cached = sum(len(block) for block in self.blocks)
        llm = self._llm
        llm.n_tokens = cached  # Llama.eval frees every cell from here on before it decodes
        try:
            for block in blocks[kept:]:
                self._before_decode()
                llm.eval(block)  # one llama_decode: a block is never larger than the batch
                self.blocks.append(block)
        except BaseException:
            self.forget()
            raise
        return cached

    def forget(self) -> None:
        """Drop everything the sequence holds (after an error, or to start cold)."""
        self.blocks = []
        self._llm.reset()
        self._llm.n_tokens = 0

    def order(self, prompts: Sequence[Sequence[int]]) -> list[int]:
        """An order to run ``prompts`` in: token order, so neighbours share the longest prefixes, starting
        with the one that shares most with what the sequence holds now."""
        ranked = sorted(range(len(prompts)), key=lambda i: tuple(prompts[i]))
        held = [token for block in self.blocks for token in block]
        if not held or len(ranked) < 2:
            return ranked
        best = max(range(len(ranked)), key=lambda k: shared_length(held, prompts[ranked[k]]))
        return ranked[best:] + ranked[:best]

    def _piece(self, token: int) -> bytes:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = bytes(self._llm.detokenize([token], special=False))
        return piece
