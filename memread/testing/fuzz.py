"""What memread's fuzzing draws and checks, shared by the property tests (``tests/test_fuzz_*.py``) and the
longer run of ``benchmarks/robustness/bench_fuzz.py``: damaged copies of small valid documents, replies the way
small models garble them, text for the chunker, and the invariants each must keep. Needs the ``test`` extra
(hypothesis)."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from memread.backends.base import Completion
from memread.chunk import Chunker
from memread.document import Chunk, Provenance, Segment
from memread.loop import LoopSettings
from memread.strategies import create_strategy
from memread.strategies.evidence import EvidenceStrategy, reading
from memread.testing.documents import Chapter, build_epub, build_pdf, compress, encrypt_pdf, log_lines
from memread.testing.hostile import raw_pdf
from memread.tokens import Tokenizer

# --- damaged documents --------------------------------------------------------------------------------------------

def interesting_regions(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of a PDF or zip where damage hurts most, for mutations to aim at: the whole file, and for a
    zip each member's local header and data and the central directory; for a PDF the xref table, trailer,
    stream and object headers, lengths and the encryption dictionary."""
    regions = [(0, len(data))]
    if data.startswith(b"PK\x03\x04"):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                start = info.header_offset
                header = 30 + int.from_bytes(data[start + 26: start + 28], "little") + \
                    int.from_bytes(data[start + 28: start + 30], "little")
                regions += [(start, start + header), (start + header, start + header + info.compress_size)]
        central = data.find(b"PK\x01\x02")
        if central >= 0:
            regions.append((central, len(data)))
    if data.startswith(b"%PDF"):
        for keyword in (b"xref", b"trailer", b"startxref", b"stream", b" obj", b"/Length", b"/Pages", b"/Kids",
                        b"/Encrypt", b"/Filter", b"/ToUnicode", b"/PageLabels"):
            regions += [(m.start(), min(len(data), m.end() + 48)) for m in re.finditer(re.escape(keyword), data)]
    return [(start, end) for start, end in regions if end > start]


def mutations(seed: bytes) -> Any:
    """A hypothesis strategy of damaged copies of ``seed``: byte flips (aimed at :func:`interesting_regions`),
    truncation, a region replaced by junk, a number replaced by another (lengths, offsets, counts)."""
    regions = interesting_regions(seed)
    numbers = [(m.start(), m.end()) for m in re.finditer(rb"\d+", seed)] or [(0, 1)]

    def flipped(region: tuple[int, int]) -> Any:
        start, end = region
        flips = st.lists(st.tuples(st.integers(start, end - 1), st.integers(1, 255)), min_size=1, max_size=8)
        return flips.map(lambda pairs: _xor(seed, pairs))

    def spliced(args: tuple[tuple[int, int], bytes]) -> bytes:
        (start, end), junk = args
        return seed[:start] + junk + seed[end:]

    return st.one_of(
        st.sampled_from(regions).flatmap(flipped),
        st.integers(0, max(0, len(seed) - 1)).map(lambda cut: seed[:cut]),
        st.tuples(st.sampled_from(regions), st.binary(max_size=64)).map(spliced),
        st.tuples(st.sampled_from(numbers), st.integers(0, 2**40)).map(
            lambda args: seed[: args[0][0]] + str(args[1]).encode() + seed[args[0][1]:]),
    )


def _xor(data: bytes, flips: Iterable[tuple[int, int]]) -> bytes:
    damaged = bytearray(data)
    for position, mask in flips:
        damaged[position] ^= mask
    return bytes(damaged)


class Hang(Exception):
    """Raised by :func:`no_hang` when the code under test runs past its time limit."""


@contextmanager
def no_hang(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` in the main thread if the block runs longer than ``seconds`` (SIGALRM; pure-Python
    parsers such as pypdf are interrupted wherever they loop). A no-op where SIGALRM does not exist."""
    import signal

    if not hasattr(signal, "setitimer"):
        yield
        return

    def expire(_signum: int, _frame: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def read_or_refuse(path: Path, *, password: str | None = None, seconds: float = 20.0) -> str:
    """Open ``path`` with memread and read every segment: ``"read"``, or ``"refused"`` for memread's
    InputError (the documented way to say no). Any other exception, or :class:`Hang`, propagates."""
    from memread.errors import InputError
    from memread.ingest import open_document

    with no_hang(seconds):
        try:
            document = open_document(str(path), password=password)
            for _segment in document.segments():
                pass
        except InputError:
            return "refused"
    return "read"


def fuzz_seeds(folder: Path) -> dict[str, bytes]:
    """Small valid documents for fuzzing, by file name: PDFs (page labels; a broken font map; empty-password
    AES encryption), an EPUB and a gzipped log."""
    labelled = build_pdf(folder / "labelled.pdf", ["Preface text.", "Chapter one: the harbour.", "More."],
                         labels=[(0, "r", 1), (1, "D", 1)])
    encrypted = encrypt_pdf(labelled, folder / "encrypted.pdf", user_password="")
    fonts = raw_pdf(folder / "fonts.pdf", [("A plain page", "plain"), ("A broken font map", "private")])
    book = build_epub(folder / "book.epub", [
        Chapter("One", "<h1>One</h1><p>The pier closed for <b>12</b> days.</p>"),
        Chapter("Two", "<h1>Two</h1><p>Boats: 312.</p><pre>a  b\n c</pre>"),
    ])
    log = folder / "server.log"
    log.write_text("".join(log_lines(400)))
    packed = compress(log, "gz")
    return {path.name: path.read_bytes() for path in (labelled, fonts, encrypted, book, packed)}


# --- replies, as small models garble them -------------------------------------------------------------------

FRAGMENTS = [
    "<check>", "</check>", "< Check >", "<check>yes</check>", "<check>no</check>", "<check> No </check>", "yes",
    "no", "maybe", "<update>", "</update>", "<UPDATE>", "< / update >", "<next>", "</next>", "end", "continue",
    "<next>end</next>", "<think>", "</think>", "<thinking>", "</thinking>", "<recall>", "</recall>", "query",
    "```", "```xml", "`", "\\boxed{", "\\boxed ", "\\fbox{", "{", "}", "$", "the answer is", "**", "<", ">", "/",
    " ", "\n", "\t", "é", "\u0000", "\ufffd", "<|im_end|>", "<｜Assistant｜>",
]

replies = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=40).map("".join)


def completion(text: str, finish: str = "stop", stop: str | None = None) -> Completion:
    return Completion(text=text, finish_reason=finish, prompt_tokens=10, completion_tokens=len(text) // 4,
                      stop_reason=stop)


CHUNK = Chunk(index=0, text="some document text", tokens=4, spans=())


balanced = st.recursive(
    st.text(alphabet=st.characters(blacklist_characters="{}\\"), max_size=8),
    lambda inner: st.lists(st.one_of(inner, inner.map(lambda t: "{" + t + "}")), max_size=4).map("".join),
    max_leaves=12,
)


# --- the evidence strategy's steps ------------------------------------------------------------------------------

EVIDENCE_TEXT = ("Harbour notes\nThe ferry timetable changed in spring. Gulls nested on the pier.\n"
                 "Kiss and Tell is a 1945 American comedy film. It starred Shirley Temple as Corliss Archer.\n"
                 "Shirley Temple was an American actress. As an adult, she served as Chief of Protocol.\n"
                 "- a list item about the market\n2024-01-05 10:00:03 host disk full\n")
EVIDENCE_QUESTION = "What government position was held by the woman who portrayed Corliss Archer?"
answer_reply = st.lists(st.one_of(st.sampled_from([*FRAGMENTS, "none", "Chief of Protocol", "Shirley Temple", "}",
                                                   "\\boxed{", "{", "disk full", "1945", "yes", "not in the document"]),
                                  st.text(max_size=12)), max_size=12).map("".join)


def answer_holds(reply: str, text: str) -> None:
    """A step's answer is None or words; what it snaps to is the text's own words."""
    said = reading.step_answer(reply)
    assert said is None or said.strip(), "an empty answer"
    if said is not None:
        snapped = reading.snap(said, text)
        assert snapped is None or snapped in text, "an answer not taken from the text"


def evidence_strategy(memory_tokens: int = 1024) -> tuple[EvidenceStrategy, Chunk]:
    """The evidence strategy indexed on a passage of titles, sentences, a list item and a log line (and a filler
    chunk), and that passage's chunk; close() it after use."""
    strategy = create_strategy(LoopSettings(strategy="evidence", memory_tokens=memory_tokens))
    assert isinstance(strategy, EvidenceStrategy)
    chunk = Chunk(index=0, text=EVIDENCE_TEXT, tokens=60, spans=())
    strategy.index([chunk, Chunk(index=1, text="Filler about gulls and the pier.", tokens=8, spans=())])
    return strategy, chunk


def evidence_step_holds(strategy: EvidenceStrategy, chunk: Chunk, state: dict[str, Any], reply: str,
                        finish: str = "stop") -> dict[str, Any]:
    """One step on ``reply``, checked: what the evidence holds is word for word from the passage, what it held
    before stays (unless the bound dropped some), the memory is never empty and stays within its bound.
    Returns the new state (a finished lane's state as it is)."""
    if strategy.phase(EVIDENCE_QUESTION, state) is None:
        return state
    before = [entry["text"] for entry in state.get("evidence", [])]
    result = strategy.read_reply(0, EVIDENCE_QUESTION, state, chunk, completion(reply, finish))
    texts = [entry["text"] for entry in result.state.get("evidence", [])]
    flat = " ".join(EVIDENCE_TEXT.split())
    assert all(" ".join(text.split()) in flat for text in texts), "evidence not copied word for word"
    assert texts[:len(before)] == before or len(texts) < len(before), "evidence lost"
    assert isinstance(result.memory, str) and result.memory, "memory emptied"
    evidence = result.state.get("evidence", [])
    fits = strategy._tokens(result.memory) <= strategy.settings.memory_tokens
    one_word = len(evidence) == 1 and evidence[0].get("cut")
    assert fits or one_word, "the memory outgrew its bound"
    return dict(result.state)


# --- text for the chunker ------------------------------------------------------------------------------------

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
