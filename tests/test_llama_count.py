"""Counting with llama.cpp in few calls gives the counts of one call per text: texts side by side count as they
do alone, texts joined at line starts as the sum of their parts, and a model whose pre-tokenizer was not argued
for (SmolLM2's) is counted one text at a time. Qwen2.5's vocabulary (the default model) is used when it is in
the model cache; it is never downloaded for these tests."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memread.backends.llama_count import SEPARATOR, line_start
from memread.backends.llamacpp import LlamaTokenizer
from memread.chunk import Chunker
from memread.document import Provenance, Segment

pytestmark = pytest.mark.model

# One character of each kind Qwen2's expression tells apart: letters (a contraction's too), digits, spaces,
# tabs, line breaks, punctuation, non-ASCII letters, spaces and marks, NUL.
ALPHABET = ["a", "s", "'", "0", " ", "\t", "\n", "\r", ".", "é", "\u00a0", "\u0301", "中", "\x00"]
PIECES = ["\n\n", "\n", " \n \n", ". ", "  ", "\t", "word", "It's", "x1", "42", "é", "e\u0301", "😀", "漢字", "\u2028",
          "\x00", "\r\n", "<|im_end|>", "<tool_call>", "A" * 300, "1234567890" * 5, " 0", "0 ", "(x)", "#", "    "]
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=12)), max_size=12).map("".join)


@pytest.fixture(scope="module")
def qwen() -> LlamaTokenizer:
    from memread import models
    from memread.errors import BackendError

    for name in (models.DEFAULT_MODEL, "qwen2.5-coder-1.5b"):
        try:
            return LlamaTokenizer(models.resolve(name, pull=False))
        except BackendError:
            continue
    pytest.skip("no Qwen2.5 model in the model cache (memread models pull qwen2.5-coder-1.5b-q4_0)")


def test_qwen_takes_the_shortcuts_and_smollm2_does_not(qwen: LlamaTokenizer, smollm2_path: Path) -> None:
    assert qwen._counter.shortcuts()
    smollm2 = LlamaTokenizer(smollm2_path)
    assert not smollm2._counter.shortcuts()
    some = ["Hello world", "", "  indented\n", "x" * 50]
    assert smollm2.count_many(some) == [smollm2.count(text) for text in some]
    assert smollm2.count_joined(some, [smollm2.count(text) for text in some]) == smollm2.count("".join(some))


def test_every_short_text_counts_side_by_side_as_it_does_alone(qwen: LlamaTokenizer) -> None:
    short = ["".join(letters) for size in (1, 2, 3) for letters in itertools.product(ALPHABET, repeat=size)]
    alone = [qwen.count(text) for text in short]
    assert qwen.count_many(short) == alone
    order = list(range(len(short)))
    random.Random(7).shuffle(order)  # other neighbours on either side
    assert qwen.count_many([short[i] for i in order]) == [alone[i] for i in order]


def test_texts_joined_at_line_starts_count_as_the_sum_of_their_counts(qwen: LlamaTokenizer) -> None:
    ends = ["x\n", "x.\n", "x \n", "\n\n", "\r", "b\r\n", "  \n", "(x)\n", "été\n", "'\n"]
    starts = ["a", "A", "é", "中", "0", "#", "(", "'s", "<tool_call>", ".x", "~"]
    for before in ends:
        for after in starts:
            assert line_start(before, after)
            assert qwen.count(before + after) == qwen.count(before) + qwen.count(after), (before, after)
    for before, after in [("x\n", " a"), ("x\n", "\n"), ("x", "\na"), ("x\n", "\ta"), ("x \n", "\u00a0")]:
        assert not line_start(before, after)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(texts, max_size=20))
def test_any_texts_count_the_same_side_by_side_and_joined(qwen: LlamaTokenizer, parts: list[str]) -> None:
    alone = [qwen.count(part) for part in parts]
    # one call per text is llama-cpp-python's own tokenize, as memread counted before
    assert alone == [len(qwen._llama.tokenize(part.encode("utf-8", errors="replace"), add_bos=False, special=False))
                     for part in parts]
    assert qwen.count_many(parts) == alone
    assert qwen.count_joined(parts, alone) == qwen.count("".join(parts))


def test_a_batch_that_fails_its_check_is_counted_one_text_at_a_time(qwen: LlamaTokenizer) -> None:
    texts = ["one two", "three\n", "  four  ", "five"]
    alone = [qwen.count(text) for text in texts]
    counter = qwen._counter
    assert counter.shortcuts()
    kept = counter._separator
    counter._separator = [kept[1], kept[0]]  # what a pre-tokenizer that cuts elsewhere would give
    try:
        assert counter._side_by_side([text.encode() for text in texts]) is None
        assert qwen.count_many(texts) == alone
    finally:
        counter._separator = kept
    assert qwen.count_many(texts) == alone
    assert qwen.count(SEPARATOR) == 2


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(texts, min_size=1, max_size=6), budget=st.integers(min_value=16, max_value=120))
def test_the_shortcuts_change_no_chunk(qwen: LlamaTokenizer, parts: list[str], budget: int) -> None:
    segments = [Segment(text, Provenance("log.txt", line_start=1 + i * 100)) for i, text in enumerate(parts)]

    class OneByOne:  # the same tokenizer without count_many and count_joined
        name = qwen.name
        count, encode, decode = qwen.count, qwen.encode, qwen.decode

    fast = list(Chunker(qwen, budget).chunks(segments))
    assert fast == list(Chunker(OneByOne(), budget).chunks(segments))  # type: ignore[arg-type]
