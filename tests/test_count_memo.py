"""A token count asked for twice is counted once (memread.tokens.CountMemo): the chunker's second pass over a
document (after the progress line counted its chunks) costs no tokenizer calls, and memory stays bounded."""

from __future__ import annotations

import threading

from memread.tokens import CountMemo


class Counting:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, text: str) -> int:
        self.calls.append(text)
        return len(text.split())


def test_a_text_counted_again_is_answered_from_the_memo_with_the_same_count() -> None:
    inner = Counting()
    memo = CountMemo(inner)
    texts = ["one two", "three", "one two", "", "four five six", "three"]
    assert [memo(t) for t in texts] == [2, 1, 2, 0, 3, 1]
    assert inner.calls == ["one two", "three", "", "four five six"]


def test_the_memo_keeps_at_most_its_bytes_and_forgets_the_least_recently_used_first() -> None:
    inner = Counting()
    memo = CountMemo(inner, max_bytes=10 + 2 * CountMemo.ENTRY_BYTES)
    memo("aaaa b")      # 6 characters
    memo("cc d")        # 4: 10 in all, both kept
    memo("aaaa b")      # a hit: now the most recently used
    memo("eee")         # 13 > 10: "cc d" goes
    assert inner.calls == ["aaaa b", "cc d", "eee"]
    memo("aaaa b")
    memo("cc d")
    assert inner.calls == ["aaaa b", "cc d", "eee", "cc d"]
    memo("x" * 211)     # longer than the memo holds: counted, never kept
    memo("x" * 211)
    assert inner.calls[-2:] == ["x" * 211, "x" * 211]


def test_threads_counting_at_once_get_right_counts() -> None:
    memo = CountMemo(lambda text: len(text), max_bytes=5 * CountMemo.ENTRY_BYTES)
    wrong: list[tuple[str, int]] = []

    def work(seed: int) -> None:
        for i in range(2000):
            text = "y" * ((seed * 7 + i) % 13)
            got = memo(text)
            if got != len(text):
                wrong.append((text, got))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_many_counts_only_the_texts_not_known_each_once_and_keeps_them_for_one_by_one_counts() -> None:
    inner = Counting()
    batches: list[list[str]] = []

    def count_many(texts: list[str]) -> list[int]:
        batches.append(list(texts))
        return [len(text.split()) for text in texts]

    memo = CountMemo(inner)
    memo("one two")
    assert memo.many(["a b c", "one two", "a b c", "d"], count_many) == [3, 2, 3, 1]
    assert batches == [["a b c", "d"]]
    assert [memo("a b c"), memo("d")] == [3, 1] and inner.calls == ["one two"]
    assert memo.many(["d", "one two"], count_many) == [1, 2] and len(batches) == 1
