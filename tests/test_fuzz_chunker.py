"""Property tests on the chunker: whatever text comes in, in whatever segments, every chunk fits the budget as
the tokenizer counts it, and joining the chunks gives back the input exactly (nothing dropped or repeated).

Texts mix the boundaries the chunker cuts at (blank lines, line breaks, sentence ends, CJK full stops, spaces)
with long runs that have none (base64, repeated letters), multi-byte characters a BPE token may split
(emoji, combining marks, CJK) and control characters. tiktoken (offline cl100k) runs :data:`EXAMPLES`
examples; SmolLM2's own tokenizer (vocabulary only, via llama.cpp) a smaller sample.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzzing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memread.chunk import Chunker
from memread.document import Provenance, Segment
from memread.tokens import TiktokenTokenizer, Tokenizer

EXAMPLES = examples(400)
MODEL_EXAMPLES = examples(100)

PIECES = ["\n\n", "\n", " \n \n", ". ", "! ", "? ", "。", "！", "…", "\u2026\" ", " ", "\t", "word", "Harbour",
          "é", "e\u0301", "😀", "👩‍👩‍👧", "漢字", "ﾊﾝｶｸ", "\u200b", "\x00", "\r\n", "<|im_end|>", "A" * 300,
          "QUJD" * 200, "1234567890" * 30, "\n" * 120]

texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=40)), max_size=60).map("".join)
segment_lists = st.lists(st.tuples(texts, st.sampled_from(["lines", "page", "chapter"])), min_size=0, max_size=5)


def _segments(parts: list[tuple[str, str]]) -> list[Segment]:
    made = []
    for index, (text, kind) in enumerate(parts):
        if kind == "lines":
            provenance = Provenance("log.txt", line_start=1 + index * 1000, line_end=1 + index * 1000)
        elif kind == "page":
            provenance = Provenance("book.pdf", page=index + 1)
        else:
            provenance = Provenance("book.epub", chapter=f"Chapter {index}")
        made.append(Segment(text, provenance))
    return made


def check_chunks(tokenizer: Tokenizer, parts: list[tuple[str, str]], budget: int) -> None:
    segments = _segments(parts)
    chunks = list(Chunker(tokenizer, budget).chunks(segments))
    assert "".join(chunk.text for chunk in chunks) == "".join(segment.text for segment in segments)
    for index, chunk in enumerate(chunks):
        assert chunk.index == index and chunk.text
        assert chunk.tokens == tokenizer.count(chunk.text) <= budget
        assert chunk.spans  # every chunk says where it comes from


@pytest.fixture(scope="module")
def tiktoken() -> Tokenizer:
    return TiktokenTokenizer()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=segment_lists, budget=st.integers(min_value=16, max_value=300))
def test_any_text_is_chunked_within_budget_and_rejoins_exactly(tiktoken: Tokenizer, parts: list[tuple[str, str]],
                                                               budget: int) -> None:
    check_chunks(tiktoken, parts, budget)


@pytest.fixture(scope="module")
def smollm2_tokenizer(smollm2_path: Path) -> Tokenizer:
    from memread.backends.llamacpp import LlamaTokenizer

    return LlamaTokenizer(smollm2_path)


@pytest.mark.model
@settings(max_examples=MODEL_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=segment_lists, budget=st.integers(min_value=16, max_value=200))
def test_the_model_tokenizer_chunks_any_text_within_budget_too(smollm2_tokenizer: Tokenizer,
                                                               parts: list[tuple[str, str]], budget: int) -> None:
    check_chunks(smollm2_tokenizer, parts, budget)
