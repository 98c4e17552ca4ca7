"""The chunker: chunks fit the budget, keep every character exactly once, cut at natural boundaries, and say
where they came from."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence

import pytest
from fuzzing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memread.chunk import Chunker
from memread.document import Chunk, Provenance, Segment
from memread.errors import BudgetError, UsageError
from memread.tokens import CharTokenizer, TiktokenTokenizer

WORDS = [
    "the",
    "memory",
    "of",
    "a",
    "long",
    "book",
    "is",
    "kept",
    "in",
    "small",
    "notes",
    "while",
    "reading",
    "page",
]


@pytest.fixture(scope="module")
def tiktoken() -> TiktokenTokenizer:
    return TiktokenTokenizer()


def prose(rng: random.Random, paragraphs: int) -> str:
    out = []
    for _ in range(paragraphs):
        sentences = [" ".join(rng.choices(WORDS, k=rng.randint(3, 25))).capitalize() + "." for _ in range(5)]
        lines = [" ".join(sentences[i : i + 2]) for i in range(0, 5, 2)]
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def check(chunks: list[Chunk], text: str, tokenizer: object, budget: int) -> None:
    """The invariants every chunking must keep."""
    assert "".join(chunk.text for chunk in chunks) == text
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.text
        assert chunk.tokens == tokenizer.count(chunk.text)  # type: ignore[attr-defined]
        assert chunk.tokens <= budget


def one_file(text: str, source: str = "notes.txt") -> list[Segment]:
    return [Segment(text, Provenance(source, line_start=1, line_end=text.count("\n") + 1))]


# -- never drops, duplicates or overflows ---------------------------------------------------------------------

ALPHABET = st.sampled_from(
    ["a", "b", "word", " ", "  ", "\n", "\n\n", ".", "! ", "\t", "東京", "😀", "é", "\u3000"]
)


@st.composite
def segmented_texts(draw: st.DrawFn) -> list[str]:
    text = "".join(draw(st.lists(ALPHABET, max_size=400)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=segmented_texts(), budget=st.integers(16, 80))
def test_any_text_cut_anywhere_comes_back_whole_with_characters(parts: list[str], budget: int) -> None:
    tokenizer = CharTokenizer()
    segments = [Segment(p, Provenance("f.txt", line_start=1)) for p in parts]
    check(list(Chunker(tokenizer, budget).chunks(segments)), "".join(parts), tokenizer, budget)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=segmented_texts(), budget=st.integers(16, 60))
def test_any_text_cut_anywhere_comes_back_whole_with_tiktoken(
    parts: list[str], budget: int, tiktoken: TiktokenTokenizer
) -> None:
    segments = [Segment(p, Provenance(f"f{i % 2}.txt", page=i + 1)) for i, p in enumerate(parts)]
    check(list(Chunker(tiktoken, budget).chunks(segments)), "".join(parts), tiktoken, budget)


def test_a_book_of_prose_fills_chunks_close_to_the_budget(tiktoken: TiktokenTokenizer) -> None:
    text = prose(random.Random(1), 400)
    chunks = list(Chunker(tiktoken, 1000).chunks(one_file(text)))
    check(chunks, text, tiktoken, 1000)
    assert len(chunks) > 10
    assert all(chunk.tokens >= 850 for chunk in chunks[:-1])


class JoinPenalty:
    """A tokenizer whose counts are not additive: a line break followed by text costs 5 extra tokens, so
    joining units costs more than the units did alone (like BPE merges, but worse)."""

    name = "join-penalty"

    def count(self, text: str) -> int:
        return len(text) + 5 * len(re.findall(r"\n[^\n]", text))

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text] + [0] * 5 * len(re.findall(r"\n[^\n]", text))

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(chr(i) for i in ids if i)


def test_chunks_are_verified_as_assembled_when_counts_do_not_add_up() -> None:
    tokenizer = JoinPenalty()
    text = "".join(f"entry {i:04d} ok\n" for i in range(3000))
    chunks = list(Chunker(tokenizer, 200).chunks(one_file(text)))
    check(chunks, text, tokenizer, 200)


# -- natural boundaries ----------------------------------------------------------------------------------------


def test_chunks_end_between_paragraphs_when_paragraphs_fit(tiktoken: TiktokenTokenizer) -> None:
    text = prose(random.Random(2), 200)
    chunks = list(Chunker(tiktoken, 800).chunks(one_file(text)))
    assert all(chunk.text.endswith("\n\n") for chunk in chunks)


def test_a_log_without_blank_lines_is_cut_between_lines(tiktoken: TiktokenTokenizer) -> None:
    text = "".join(f"2026-11-22 07:{i % 60:02d} INFO worker {i} finished job {i * 7}\n" for i in range(20000))
    chunks = list(Chunker(tiktoken, 500).chunks(one_file(text, "app.log")))
    check(chunks, text, tiktoken, 500)
    assert all(chunk.text.endswith("\n") for chunk in chunks)
    assert min(chunk.tokens for chunk in chunks[:-1]) >= 450


def test_one_huge_paragraph_is_cut_at_sentence_ends(tiktoken: TiktokenTokenizer) -> None:
    rng = random.Random(3)
    text = " ".join(" ".join(rng.choices(WORDS, k=12)) + "." for _ in range(3000))
    chunks = list(Chunker(tiktoken, 300).chunks(one_file(text)))
    check(chunks, text, tiktoken, 300)
    assert all(chunk.text.endswith(". ") for chunk in chunks[:-1])


@pytest.mark.slow
def test_a_ten_megabyte_line_chunks_between_words(tiktoken: TiktokenTokenizer) -> None:
    rng = random.Random(4)
    line = " ".join(rng.choices(WORDS, k=2_000_000))[:10_000_000]
    # The text loader cuts a long line into 256 KiB segments that may split a word; chunks must not.
    size = 256 * 1024
    segments = [
        Segment(line[i : i + size], Provenance("one.json", line_start=1, line_end=1))
        for i in range(0, len(line), size)
    ]
    chunks = list(Chunker(tiktoken, 5000).chunks(segments))
    assert "".join(chunk.text for chunk in chunks) == line
    assert all(chunk.text.endswith(" ") for chunk in chunks[:-1])
    assert max(chunk.tokens for chunk in chunks) <= 5000
    assert all(chunk.describe() == "one.json line 1" for chunk in chunks)


def test_text_with_no_spaces_at_all_is_cut_inside_words_as_a_last_resort(tiktoken: TiktokenTokenizer) -> None:
    rng = random.Random(5)
    blob = "".join(rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", k=400_000))
    chunks = list(Chunker(tiktoken, 2000).chunks([Segment(blob, Provenance("key.b64"))]))
    check(chunks, blob, tiktoken, 2000)
    assert all(chunk.tokens >= 1990 for chunk in chunks[:-1])  # cut as late as the budget allows


def test_a_run_of_one_repeated_character_still_fills_chunks(tiktoken: TiktokenTokenizer) -> None:
    # cl100k packs eight x's into one token, far denser than the chunker's first guess.
    blob = "x" * 200_000
    chunks = list(Chunker(tiktoken, 500).chunks([Segment(blob, Provenance("x.txt"))]))
    check(chunks, blob, tiktoken, 500)
    assert all(chunk.tokens >= 495 for chunk in chunks[:-1])


class Dense(CharTokenizer):
    """Plain letters cost a token each, but every "#" costs ten: the density changes mid-document."""

    def count(self, text: str) -> int:
        return len(text) + 9 * text.count("#")

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text for _ in range(10 if c == "#" else 1)]


def test_text_far_denser_than_what_came_before_is_still_cut_between_lines() -> None:
    text = "plain words here\n" * 300 + "#######\n" * 300
    chunks = list(Chunker(Dense(), 100).chunks(one_file(text)))
    check(chunks, text, Dense(), 100)
    assert all(chunk.text.endswith("\n") for chunk in chunks)


class NoRoundTrip(CharTokenizer):
    """Decoding loses information, so the chunker cannot ask where tokens end: it must search."""

    name = "lossy"

    def decode(self, ids: Sequence[int]) -> str:
        return "?" * len(ids)


def test_cutting_inside_words_falls_back_to_a_binary_search() -> None:
    blob = "x" * 1000 + "y" * 1000
    chunks = list(Chunker(NoRoundTrip(), 300).chunks([Segment(blob, Provenance("blob"))]))
    check(chunks, blob, NoRoundTrip(), 300)
    assert [chunk.tokens for chunk in chunks] == [300] * 6 + [200]


# -- provenance ------------------------------------------------------------------------------------------------


def test_pdf_chunks_name_their_pages_by_label() -> None:
    labels = ["i", "ii", "iii", "1", "2", "3"]
    pages = [
        Segment(
            ("\n\n" if n else "") + f"Page {label} " + "text " * 30,
            Provenance("book.pdf", page=n + 1, page_label=label),
        )
        for n, label in enumerate(labels)
    ]
    chunks = list(Chunker(CharTokenizer(), 400).chunks(pages))
    assert [chunk.describe() for chunk in chunks] == [
        "book.pdf pp. i-ii",
        "book.pdf pp. iii-1",
        "book.pdf pp. 2-3",
    ]
    assert chunks[0].spans[0].page_first == 1 and chunks[0].spans[0].page_last == 2


def test_a_page_separator_alone_does_not_claim_the_next_page() -> None:
    pages = [
        Segment("a" * 30, Provenance("book.pdf", page=1)),
        Segment("\n\n" + "b" * 60, Provenance("book.pdf", page=2)),
    ]
    chunks = list(Chunker(CharTokenizer(), 40).chunks(pages))
    assert [chunk.text for chunk in chunks] == ["a" * 30 + "\n\n", "b" * 40, "b" * 20]
    assert [chunk.describe() for chunk in chunks] == ["book.pdf p. 1", "book.pdf p. 2", "book.pdf p. 2"]


def test_epub_chunks_list_the_chapters_they_cover() -> None:
    chapters = [
        Segment(f"{title}\n\n" + "words " * 20 + "\n\n", Provenance("novel.epub", chapter=title))
        for title in ("One", "Two", "Three")
    ]
    chunks = list(Chunker(CharTokenizer(), 260).chunks(chapters))
    assert chunks[0].describe() == "novel.epub § One / Two"
    assert chunks[-1].spans[-1].chapters[-1] == "Three"


def test_log_chunks_give_the_line_numbers_they_hold() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 2001))
    # Two segments, as the text loader would give them: line numbers continue from one to the next.
    first, second = text[: text.index("line 1201\n")], text[text.index("line 1201\n") :]
    segments = [
        Segment(first, Provenance("app.log", line_start=1, line_end=1200)),
        Segment(second, Provenance("app.log", line_start=1201, line_end=2000)),
    ]
    for chunk in Chunker(CharTokenizer(), 700).chunks(segments):
        numbers = [int(n) for n in re.findall(r"line (\d+)", chunk.text)]
        (span,) = chunk.spans
        assert (span.line_first, span.line_last) == (numbers[0], numbers[-1])


def test_a_chunk_across_files_has_one_span_per_file() -> None:
    files = [
        Segment("alpha\nbeta\n", Provenance("reports/a.txt", line_start=1, line_end=2)),
        Segment("\n\ngamma\n", Provenance("reports/b.md", line_start=1, line_end=3)),
    ]
    (chunk,) = Chunker(CharTokenizer(), 100).chunks(files)
    assert chunk.describe() == "reports/a.txt lines 1-2; reports/b.md lines 1-3"


def test_a_file_that_ends_mid_word_keeps_its_last_word() -> None:
    files = [
        Segment("alpha beta gamma delta", Provenance("a.txt", line_start=1, line_end=1)),
        Segment("epsilon zeta eta theta\n", Provenance("b.txt", line_start=1, line_end=1)),
    ]
    chunks = list(Chunker(CharTokenizer(), 20).chunks(files))
    check(chunks, "".join(segment.text for segment in files), CharTokenizer(), 20)
    assert [(chunk.text, chunk.describe()) for chunk in chunks] == [
        ("alpha beta gamma ", "a.txt line 1"),
        ("deltaepsilon zeta ", "a.txt line 1; b.txt line 1"),  # "delta" is still a.txt's, not b.txt's
        ("eta theta\n", "b.txt line 1"),
    ]


# -- streaming and limits --------------------------------------------------------------------------------------


def test_chunks_come_out_while_segments_are_still_being_read() -> None:
    read = 0

    def endless() -> Iterator[Segment]:
        nonlocal read
        line = 1
        while True:
            read += 1
            yield Segment("x" * 50 + "\n", Provenance("-", line_start=line, line_end=line))
            line += 1

    chunks = Chunker(CharTokenizer(), 1000).chunks(endless())
    first = next(chunks)
    assert first.tokens > 900
    assert read <= 25  # one chunk's worth of segments (about 20), plus the one that did not fit


def test_a_budget_too_small_to_be_useful_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as error:
        Chunker(CharTokenizer(), 3)
    assert "--chunk-tokens" in (error.value.hint or "")


class Wide(CharTokenizer):
    """One character costs 40 tokens."""

    def count(self, text: str) -> int:
        return 40 * len(text)

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text for _ in range(40)]


def test_a_character_that_cannot_fit_is_a_budget_error_not_a_silent_overflow() -> None:
    with pytest.raises(BudgetError):
        list(Chunker(Wide(), 20).chunks([Segment("abc", Provenance("x"))]))


def test_empty_input_gives_no_chunks() -> None:
    assert list(Chunker(CharTokenizer(), 100).chunks([])) == []
    assert list(Chunker(CharTokenizer(), 100).chunks([Segment("", Provenance("x"))])) == []


def test_a_file_without_a_final_newline_ends_on_its_last_line(tiktoken: TiktokenTokenizer) -> None:
    text = "line one\nline two\nline three\nlast words here"  # the last word is carried past the segment end
    (chunk,) = Chunker(tiktoken, 1000).chunks(one_file(text))
    assert (chunk.spans[0].line_first, chunk.spans[0].line_last) == (1, 4)
