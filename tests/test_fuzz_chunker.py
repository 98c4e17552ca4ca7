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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memread.testing.fuzz import check_chunks, segment_lists
from memread.tokens import TiktokenTokenizer, Tokenizer

EXAMPLES = 400
MODEL_EXAMPLES = 100

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
