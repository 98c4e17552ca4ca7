"""evidence: reading that keeps the evidence, for small models that were never trained to keep a memory.

What the papers and memread's own measurements say about untrained models (``docs``: README "Benchmarks"):
they lose evidence when they rewrite a memory, they guess before they have read the evidence, and their gates
say "no" to the chunks that matter. So this strategy asks the model for the one thing it does well, picking
the sentences of a short passage that bear on a question, and moves every other decision into code:

* **Relevance order.** The whole document is chunked and indexed first (:class:`memread.chunkstore.ChunkStore`,
  SQLite FTS5 in a private temporary file: standard input and pipes too, memory flat, nothing left after kill
  -9). Each step reads, for each question, the unread chunk that best matches the question plus the names the
  evidence found so far has brought up (the second hop of a multi-hop question: a film's star, then the
  star's career). A question whose every word is in half the chunks or more, which FTS5's BM25 weighs at
  nothing, is ranked with Lucene's IDF (``ChunkStore.top(grade_common=True)``). ``order=document`` reads in
  document order instead.
* **Verbatim evidence.** The passage is shown as numbered sentences; the model answers with numbers. Code copies
  those sentences word for word, with the line above them that names what they are about (a title, a
  heading), and with their own pages and lines (:meth:`memread.document.Chunk.locate`), into an append-only
  memory. The model never rewrites or drops evidence; when the memory outgrows ``--memory-tokens``, code drops
  the entries that share the fewest words with the question.
* **Cover what the question names.** The model misses sentences (measured at 400 documents: it read the chunk
  holding the answer and picked other sentences). So from each chunk read, code also keeps the sentence that
  best matches a name of the question (a capitalised word or a number) that the evidence does not hold yet, and
  the reading goes on to the chunks that hold such names: a comparison ("A or B?") needs both.
* **Link the second hop.** Once the evidence names something rare (a range, a band), code also keeps from each
  chunk read the sentence about it that shares two words with the question besides its names ("Their highest
  peak is High Knob" under "Cumberland Mountains"): the model, shown both hops in one chunk, often picks only the
  first. A link is code's guess, so it does not count as new evidence for stopping.
* **Stop in code.** A question stops reading once it has evidence, every name of the question that the document
  holds is in it, and ``patience`` chunks in a row added none (the rest of the ranking has stopped paying; a
  chunk read again does not count), or
  when it has read ``max_read`` of the chunks (a chunk read again counts again); without the exit gate
  (``--no-exit-gate``, for "list all X" questions) it reads every chunk, up to ``max_read``.
* **Answer from the evidence**, in document order, the question last, in ``\\boxed{}``. The sources are the
  evidence's own pages and lines.

Several questions read in one pass: each step reads the chunk that most of them rank first, for those that do,
so they share its prefill on engines that share prompt prefixes (the passage comes first in the prompt).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memread import prompts
from memread.backends.base import Completion
from memread.chunkstore import ChunkStore
from memread.document import Chunk
from memread.recall import TextIndex, query_terms
from memread.settings import read_limit
from memread.strategies.base import BudgetItem, ReadChoice, State, StepPlan, StepResult, Strategy

# Measured on Qwen2.5-Coder-1.5B (benchmarks/results/evidence-prompts.md): asked to reply "none" when nothing
# helps, it said "none" to passages holding the answer; asked for numbers "most relevant first", it listed
# ranges of numbers. This wording, the question after the passage, gave short, mostly right lists.
STEP_INSTRUCTION = "Read the numbered sentences and the question."
STEP_REQUEST = (
    "List the numbers of the sentences that help answer the question, including sentences about the people, "
    "places or things the question mentions{or_evidence}. Answer with numbers only, separated by commas."
)
FINAL_INSTRUCTION = (
    "You are presented with evidence quoted word for word from a document, in document order, and a problem. "
    "Please answer the problem based on the evidence and put the answer in \\boxed{}."
)
NO_EVIDENCE = ""
BEST_MATCHES = "(no sentence was picked yet; the passages read so far that best match the question:)\n"
FALLBACK_PASSAGES = 4
FALLBACK_CHUNKS = 32  # read chunks searched for them at most (the best-matching ones)
COVER_PER_CHUNK = 2  # sentences code keeps from one chunk for the question's names the evidence lacks
LINK_WORDS = 2  # words of the question (not its names) a sentence about an evidence name shares to be kept

CANDIDATES = 200  # best matches of the question, and of the evidence's names, ranked at each step
MAX_UNITS = 150  # numbered sentences per passage at most (shorter neighbours are joined): bounds the numbering
NUMBER_TOKENS = 4  # "[123] " and the line break: what numbering adds per sentence, at most
REPLY_TOKENS = 48  # "3, 7, 12" needs a few tokens; room for a model that says a little more

# A sentence ends at . ! ? (and closing quotes or brackets), followed by space and what can start a sentence;
# not after an initial ("John C. Whitcomb", "U.S. 778") or a title or "v." before a name ("Montejo v. Louisiana"):
# their pieces, numbered apart, were picked alone and took the title of the document before them.
_ABBREVIATIONS = ("v", "vs", "Mr", "Mrs", "Ms", "Dr", "St", "Mt", "Ft", "Jr", "Sr", "No", "Gen", "Col", "Lt",
                  "Capt", "Rev", "Prof", "Sgt")
_SENTENCE_END = re.compile(
    r"(?<!\b[A-Z]\.)" + "".join(rf"(?<!\b{word}\.)" for word in _ABBREVIATIONS)
    + r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9À-Þ])")
_NUMBER = re.compile(r"\b\d{1,4}\b")
_NAME = re.compile(r"\b(?:[A-Z][\w'’-]*|\d{3,})\b")
_QUESTION_NAME = re.compile(r"\b(?:[A-Z][\w'’-]*|\d+)\b")  # in a question every number counts, "41" too
# An identifier: words joined by - _ . ("dry-gate", "backup_nightly", "db01.prod") or a word with a digit ("eth0").
_IDENTIFIER = re.compile(r"\b(?:\w+(?:[-_.]\w+)+|[^\W\d]+\d\w*|\d+[^\W\d]\w*)\b")


@dataclass(frozen=True)
class EvidenceOptions:
    exit_gate: bool = field(default=True, metadata={
        "help": "stop a question once it has evidence and `patience` new chunks in a row added none; off reads "
                "every chunk (for 'list all X' questions), up to max_read either way"})
    patience: int = field(default=2, metadata={
        "min": 1, "help": "chunks read for the first time, in a row, without new evidence after which a question "
                   "with evidence stops"})
    cutoff: float = field(default=0.25, metadata={
        "min": 0.0, "max": 1.0,
        "help": "a question with evidence also stops when no unread chunk matches it, or the names its evidence "
                "brought up, this share as well as the document's best chunk does (BM25)"})
    max_read: float = field(default=1.0, metadata={
        "min": 0.0, "max": 1.0, "help": "the share of the chunks a question reads at most, at least one, a chunk "
                                         "read again counting again (0.3: 30 %), with or without the exit gate"})
    picks: int = field(default=5, metadata={"min": 1, "help": "sentences the model may pick in one passage"})
    cover: bool = field(default=True, metadata={
        "help": "also keep, from each chunk read, the sentence that best matches a name of the question the "
                "evidence does not hold yet, and read on until the evidence holds every name of the question the "
                "document does; off: the model's picks only"})
    link: bool = field(default=True, metadata={
        "help": "also keep, from each chunk read, the sentence about something the evidence names (a rare name it "
                "brought up, not a year) that, with the next sentence of its paragraph, shares two words with the "
                "question: the second hop a small model misses (\"the highest peak\" of the range the evidence "
                "found); it does not count as new evidence for stopping; off: not"})
    context: int = field(default=2, metadata={
        "min": 0, "help": "sentences after a picked one on its line (its paragraph) kept with it, besides the one "
                          "before it"})
    ids: bool = field(default=True, metadata={
        "help": "also count a question's identifiers as its names (for cover): lower-case compounds such as dry-gate "
                "or backup_nightly, and words with digits such as eth0 (a needle's key, a job or host name); "
                "off: capitalised words and numbers only"})
    order: str = field(default="relevance", metadata={
        "choices": ("relevance", "document"),
        "help": "relevance: best-matching chunks first, re-ranked with what the evidence names; document: in order"})


@dataclass(frozen=True)
class Unit:
    """A numbered sentence (or line) of a passage: its text and where it is in the chunk."""

    start: int
    end: int
    text: str  # the chunk's text from start to end, a wrapped line's break made a space (or nothing after a hyphen)
    heading: bool  # a short line of its own without a full stop: a title or heading
    line: int = 0  # the passage's paragraph it is in (a line, or the lines of text wrapped at a fixed width)


def units(text: str) -> list[Unit]:
    """The passage's sentences and lines, in order, at most :data:`MAX_UNITS` (neighbours joined). Lines of text
    wrapped at a fixed width (a PDF page, a hard-wrapped report) are read as the paragraph they make, so a
    sentence is not cut at the end of a line."""
    found: list[Unit] = []
    for number, (offset, body, wrapped) in enumerate(_paragraphs(text)):
        heading = not wrapped and _is_heading(body.strip())
        pieces = [] if not body.strip() else [body] if heading else _SENTENCE_END.split(body)
        cursor = 0
        for piece in pieces:
            at = body.find(piece, cursor)
            cursor = at + len(piece)
            stripped = piece.strip()
            if not stripped:
                continue
            start = offset + at + (len(piece) - len(piece.lstrip()))
            found.append(Unit(start, start + len(stripped), one_line(stripped), heading, number))
    while len(found) > MAX_UNITS:  # join neighbours, shortest pair first, until the numbering is bounded
        pair = min(range(len(found) - 1), key=lambda i: (len(found[i].text) + len(found[i + 1].text), i))
        a, b = found[pair], found[pair + 1]
        found[pair:pair + 2] = [Unit(a.start, b.end, one_line(text[a.start:b.end].strip()), False, a.line)]
    return found


def one_line(text: str) -> str:
    """``text`` with its line breaks made spaces, and none after a hyphen that ends a line ("twenty-|six")."""
    if "\n" not in text and "\r" not in text:
        return text
    return _BREAK.sub(" ", _HYPHEN_BREAK.sub("", text))


# Hard-wrapped text. A line continues on the next when it is about as long as the passage's full lines (the
# passage's 90th-percentile line length; titles and headings are short), does not end a sentence or clause, and
# the next line starts with a lower-case word ("lifted and broken"), or it ends on a comma or a word no sentence
# ends on ("the", "of") and the next starts with a word or a number (a line ending a sentence, or a label such
# as "Document 3:", is a line break the text meant). A list item, heading, table row or log line (a date, or a
# time among its first words: "Nov 25 10:00:03 host ...") starts a line of its own; so does a record
# ("level=info ...", "apple,3,red", "PASS: ...", a line that starts with the same word as the line before it).
_WRAP_SHARE = 0.6
_MIN_WIDTH = 30
_BLOCK_START = re.compile(r"\s*(?:[-*+•]\s|\d{1,3}[.)]\s|#|\||```|>|\[|\d{4}-\d\d-\d\d|(?:\S+\s+){1,3}\d{1,2}:\d\d)")
_LINE_END = re.compile(r"[.!?…:][\"'”’)\]*_]*$")
_OPEN_END = re.compile(
    r"(?:[,;(–—-]|\b(?:a|an|the|of|in|on|at|to|for|from|by|with|and|or|but|nor|as|that|which|who|whose|whom|is|"
    r"was|were|are|be|been|being|has|have|had|its|their|his|her|our|your|my|this|these|those|into|onto|"
    r"near|about|over|under|between|after|before|during|without|within|via|per|not|if|such|will|would|can|"
    r"could|may|might|must|should|shall|do|does|did|against|among|around|across|through|toward|towards|upon|"
    r"since|until|while|because|although|though|where|when|whether|both|either|neither|each|every|some|any|"
    r"all|more|less|most|than|then|also|only|very|just))$", re.IGNORECASE)
_LOWER_WORD = re.compile(r"[a-zß-ÿ][\w'’-]*[,;.!?]?[\"'”’)\]*_]*")
_WORD = re.compile(r"[\"'“‘(£$€]?(?:[^\W\d_][\w'’-]*|\d{1,3}(?:,\d{3})*(?:\.\d+)?%?)[,;.]?")
_HYPHEN_BREAK = re.compile(r"(?<=\w-)[ \t]*\r?\n\s*(?=[a-zß-ÿ])")
_BREAK = re.compile(r"\s*\r?\n\s*")


def _paragraphs(text: str) -> list[tuple[int, str, bool]]:
    """The passage's lines as (offset, text without its line break, whether wrapped lines were joined), the
    lines of one wrapped paragraph joined with their breaks."""
    lines = text.splitlines(keepends=True)
    lengths = sorted(len(line.strip()) for line in lines if line.strip())
    width = lengths[int(0.9 * (len(lengths) - 1))] if lengths else 0
    paragraphs: list[tuple[int, str, bool]] = []
    offset = 0
    for line in lines:
        body = line.rstrip("\n\r")
        if paragraphs and width >= _MIN_WIDTH and _continues(paragraphs[-1][1], body, width):
            start = paragraphs[-1][0]
            paragraphs[-1] = (start, text[start:offset + len(body)], True)
        else:
            paragraphs.append((offset, body, False))
        offset += len(line)
    return paragraphs


def _continues(before: str, line: str, width: int) -> bool:
    """Whether ``line`` goes on with the sentence that the paragraph ``before`` (its last line) breaks off."""
    last = before.rsplit("\n", 1)[-1].rstrip()
    head = line.strip()
    if not head or len(last.strip()) < _WRAP_SHARE * width or _LINE_END.search(last):
        return False
    if last.lstrip().startswith(("#", "|", "```")) or _BLOCK_START.match(line):
        return False
    word = head.split(None, 1)[0]
    if word == last.split(None, 1)[0]:  # "PASS: ...", "Nov 25 ...", "INFO ...": records, one a line
        return False
    if _LOWER_WORD.fullmatch(word):
        return True
    return bool(_OPEN_END.search(last)) and bool(_WORD.fullmatch(word))


def _is_heading(line: str) -> bool:
    """A short line of its own without a full stop: a title or heading, one unit however many dots it holds."""
    return bool(line) and len(line.split()) <= 12 and not line.endswith((".", "!", "?"))


def parse_picks(reply: str, count: int, limit: int) -> tuple[list[int], list[str]]:
    """The sentence numbers a reply picks (1-based, valid, distinct, at most ``limit``) and the deviations."""
    from memread.answer import strip_thinking

    text = strip_thinking(reply).strip()
    issues: list[str] = []
    head = text.split("\n\n")[0]
    numbers: list[int] = []
    for match in _NUMBER.finditer(head):
        value = int(match.group())
        if 1 <= value <= count and value not in numbers:
            numbers.append(value)
        elif value > count:
            issues.append(f"sentence {value} does not exist (the passage has {count})")
    if not numbers and not re.search(r"\bnone\b", head, re.IGNORECASE) and text:
        issues.append("the reply names no sentence and does not say none")
    if len(numbers) > limit and _longest_run(numbers) > limit:
        # "1, 2, 3, 4, 5, 6, …": a small model counts through the passage instead of choosing (about half the
        # steps of an untrained 1.5B model on a 400-document sample). Its first sentences are no choice: keeping
        # them filled the evidence with unrelated text whose names led the reading astray. Code's cover and link
        # still read the passage.
        issues.append(f"the reply counts through the sentences ({', '.join(map(str, numbers[:4]))}, …) "
                      "instead of choosing: no pick kept")
        return [], issues
    if len(numbers) > limit:
        issues.append(f"{len(numbers)} sentences picked; the first {limit} are kept")
        numbers = numbers[:limit]
    return numbers, issues


def _longest_run(numbers: Sequence[int]) -> int:
    """The longest stretch of ``numbers`` that goes up by one ("4, 5, 6, 7")."""
    longest = run = 1 if numbers else 0
    for before, after in zip(numbers, numbers[1:], strict=False):
        run = run + 1 if after == before + 1 else 1
        longest = max(longest, run)
    return longest


class EvidenceStrategy(Strategy):
    name = "evidence"
    label = "verbatim evidence"
    summary = "reads the best-matching chunks first; the model picks sentences, memread keeps them word for word"
    Options = EvidenceOptions
    options: EvidenceOptions
    chooses_order = True
    default_chunk_tokens = 1500  # a passage short enough for a small model to number and pick from

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._store: ChunkStore | None = None
        self._question_scores: dict[str, tuple[int, list[tuple[int, float]]]] = {}  # question -> (limit, top)
        self._questions: dict[int, str] = {}
        self._names: dict[str, list[str]] = {}  # question -> its names that the document holds
        self._rare: dict[str, bool] = {}  # name -> whether at most half the chunks hold it

    # --- the document ---------------------------------------------------------------------------------

    def index(self, chunks: Iterable[Chunk]) -> None:
        if self._store is not None:
            self._store.close()
        self._store = ChunkStore()
        self._store.add_all(chunks)
        self._question_scores.clear()
        self._names.clear()
        self._rare.clear()

    @property
    def store(self) -> ChunkStore:
        if self._store is None:
            raise RuntimeError("the evidence strategy reads only after index()")
        return self._store

    def next_read(self, states: Mapping[int, State], questions: Sequence[str]) -> ReadChoice | None:
        proposals: dict[int, list[tuple[int, float, int]]] = {}  # chunk -> (lane, score, unread)
        for lane, state in states.items():
            ranked = self._ranking(questions[lane], state)
            if ranked:
                chunk, score = ranked[0]
                proposals.setdefault(chunk, []).append((lane, score, len(self.store) - len(set(state.get("read", [])))))
        if not proposals:
            return None
        chosen = min(proposals, key=lambda c: (-len(proposals[c]), -max(s for _, s, _ in proposals[c]), c))
        readers = sorted(lane for lane, _, _ in proposals[chosen])
        if self.options.order == "document":
            reason = "next in document order"
        elif any(chosen in states[lane].get("read", []) for lane in readers):
            best = max(score for _, score, _ in proposals[chosen])
            reason = f"read again: the evidence now names what it holds (BM25 {best:.1f})"
        else:
            best = max(score for _, score, _ in proposals[chosen])
            left = max(unread for _, _, unread in proposals[chosen])
            reason = (f"best match of {left} unread (BM25 {best:.1f})" if best > 0
                      else f"no unread chunk matches; next of {left} in document order")
        return ReadChoice(self.store.get(chosen), tuple(readers), reason)

    def _ranking(self, question: str, state: State) -> list[tuple[int, float]]:
        """The lane's best chunks to read next, best first: BM25 of the question plus that of the names the
        evidence brought up, over the best :data:`CANDIDATES` matches of each (so a 2 GB log costs no more memory
        than a report); with no unread match, the next unread chunk in document order."""
        read: list[int] = list(state.get("read", []))
        if self._budget_spent(state):
            return []
        done = set(read)
        if self.options.order == "document":
            following = self.store.first_not_in(done)
            return [] if following is None else [(following, 0.0)]
        evidence = state.get("evidence", [])
        asked = dict(self._question_top(question, len(done)))
        names = dict(self.store.top(" ".join(evidence_names(evidence, question)), CANDIDATES + len(done)))
        missing = dict(self.store.top(" ".join(self._uncovered(question, evidence)), CANDIDATES + len(done)))
        scored = [(chunk, asked.get(chunk, 0.0) + names.get(chunk, 0.0) + missing.get(chunk, 0.0))
                  for chunk in {*asked, *names, *missing} if chunk not in done]
        # A chunk read again competes on what the evidence names only: the question has had its turn there.
        times = Counter(read)
        first: dict[int, int] = {}
        for position, chunk in enumerate(read, 1):
            first.setdefault(chunk, position)
        scored += [(chunk, names.get(chunk, 0.0)) for chunk in sorted(done)
                   if times[chunk] == 1 and self._worth_rereading(chunk, first[chunk], evidence, question)]
        if not scored:
            following = self.store.first_not_in(done)
            return [] if following is None else [(following, 0.0)]
        return sorted(scored, key=lambda item: (-item[1], item[0]))

    def _question_top(self, question: str, skip: int) -> list[tuple[int, float]]:
        """The :data:`CANDIDATES` ``+ skip`` chunks that best match the question alone (so that ``skip`` read ones
        leave :data:`CANDIDATES`). The index is asked again only when a cut-off list runs short; what is returned
        depends on ``skip`` alone, never on the lists asked for before, so a resumed run ranks as the first did."""
        want = CANDIDATES + skip
        limit, cached = self._question_scores.get(question, (0, []))
        if limit == 0 or (len(cached) == limit and limit < want):
            limit = 2 * want
            cached = self.store.top(question, limit, grade_common=True)
            self._question_scores[question] = (limit, cached)
        return cached[:want]

    def _worth_rereading(self, index: int, when: int, evidence: list[dict[str, Any]], question: str) -> bool:
        """A chunk read once, at read ``when`` (from 1), is read again when the sentences kept since (its own
        included) name something the chunk says outside them and outside their titles: both hops of a question
        are often in one chunk, and the second only shows once the first is known."""
        names = evidence_names([{"text": e["text"]} for e in evidence if e["read"] >= when], question)
        heads = set(query_terms(" ".join(str(e["head"]) for e in evidence)))
        names = [name for name in names if name not in heads]
        if not names:
            return False
        text = self.store.get(index).text
        for entry in sorted((e for e in evidence if e["chunk"] == index), key=lambda e: -int(e["start"])):
            text = text[:entry["start"]] + text[entry["end"]:]
        words = set(re.findall(r"\w+", text.lower()))
        return any(name in words for name in names)

    def _worth_reading_on(self, question: str, state: State) -> bool:
        """Whether some chunk still to read matches the question at least ``cutoff`` as well as the document's best
        chunk does, or the names the evidence brought up ``cutoff`` as well as the best chunk the evidence did not
        come from (BM25): past that, reading finds only chunks that share common words with them."""
        evidence = state.get("evidence", [])
        asked = dict(self._question_top(question, 0))
        names = dict(self.store.top(" ".join(evidence_names(evidence, question)), CANDIDATES))
        # The chunks the evidence came from hold its names by definition: the yardstick is the best of the others.
        sources = {int(entry["chunk"]) for entry in evidence}
        top_asked = max(asked.values(), default=0.0)
        top_names = max((score for chunk, score in names.items() if chunk not in sources), default=0.0)
        for chunk, _ in self._ranking(question, state):
            if (top_asked > 0 and asked.get(chunk, 0.0) >= self.options.cutoff * top_asked) or \
                    (top_names > 0 and names.get(chunk, 0.0) >= self.options.cutoff * top_names):
                return True
        return False

    def question_names(self, question: str) -> list[str]:
        """The question's names (capitalised words and numbers, and with ``ids`` its identifiers, as lower-case
        words) that the document holds in at least one chunk and at most half of them (a name in every chunk tells
        no chunk apart)."""
        if question not in self._names:
            self._names[question] = self._rare_names(_names_in(question, ids=self.options.ids))
        return self._names[question]

    def _rare_names(self, names: Iterable[str]) -> list[str]:
        """The ``names`` (lower-case words) that the document holds in at most half of its chunks: a name in
        every other chunk ("American") links nothing."""
        limit = max(1, len(self.store) // 2)
        rare = []
        for name in names:
            if name not in self._rare:
                self._rare[name] = 0 < len(self.store.top(name, limit + 1)) <= limit
            if self._rare[name]:
                rare.append(name)
        return rare

    def _uncovered(self, question: str, evidence: Iterable[Mapping[str, Any]]) -> list[str]:
        """The question's names that the document holds and the evidence does not (yet)."""
        if not self.options.cover:
            return []
        held = _stems(query_terms(" ".join(f"{e['head']} {e['text']}" for e in evidence)))
        return [name for name in self.question_names(question) if not _stems([name]) <= held]

    def _pending(self, question: str, state: State) -> bool:
        """Whether a chunk not read yet holds a name of the question that the evidence does not."""
        missing = self._uncovered(question, state.get("evidence", []))
        done = set(state.get("read", []))
        return bool(missing) and any(chunk not in done
                                     for chunk, _ in self.store.top(" ".join(missing), len(done) + 1))

    def _budget_spent(self, state: State) -> bool:
        """Whether the question has read its ``max_read`` share of the chunks (a chunk read again counts again:
        the budget is of reading time), with or without the exit gate."""
        return len(state.get("read", [])) >= read_limit(self.options.max_read, len(self.store))

    # --- one lane -------------------------------------------------------------------------------------

    def initial_state(self) -> State:
        return {"memory": prompts.NO_MEMORY, "evidence": [], "read": [], "barren": 0}

    def plan_step(self, lane: int, question: str, state: State, chunk: Chunk) -> StepPlan:
        numbered = "\n".join(f"[{n}] {unit.text}" for n, unit in enumerate(units(chunk.text), 1))
        return StepPlan(self.step_prompt(question, self._evidence_text(state), numbered), REPLY_TOKENS)

    def step_prompt(self, question: str, evidence: str, numbered: str) -> str:
        """The step's prompt: the passage first (lanes reading the same chunk share that prefix), then the question
        and the evidence so far, then what to reply."""
        found = f"\n\nEvidence found so far:\n{evidence}" if evidence else ""
        request = STEP_REQUEST.format(or_evidence=" or the evidence found so far names" if evidence else "")
        return f"{STEP_INSTRUCTION}\n\n{numbered}\n\nQuestion: {question}{found}\n\n{request}"

    def read_reply(self, lane: int, question: str, state: State, chunk: Chunk,
                   completion: Completion) -> StepResult:
        found = units(chunk.text)
        picks, issues = parse_picks(completion.text, len(found), self.options.picks)
        if completion.finish_reason == "length":
            # The memory is code's, never the reply: a reply cut at its limit loses only what it said after
            # the numbers read (not "memory may be cut off", as for the strategies whose memory is the reply).
            issues.append(f"the reply hit its {REPLY_TOKENS}-token limit; what it said after that was not read")
        evidence = [dict(entry) for entry in state.get("evidence", [])]
        covered = [(int(e["start"]), int(e["end"])) for e in evidence if e["chunk"] == chunk.index]
        read = [*state.get("read", []), chunk.index]
        # What a pick must share a word with: the question, or a name the evidence brought up that tells chunks
        # apart (a pick linked only by "American", in most chunks, is what a small model picks at random).
        wanted = _stems(query_terms(question)) | _stems(self._rare_names(evidence_names(evidence, question)))
        added, set_aside = [], []
        for rank, number in enumerate(picks):
            position = _sentence_at(found, number - 1)  # a title or heading picked: the sentence under it
            if position is None or _covered(found[position], covered):
                continue
            entry = self._passage(chunk, found, position, covered, read=len(read), rank=rank + 1)
            if not wanted & _stems(query_terms(f"{entry['head']} {entry['text']}")):
                # Shares no word with the question or the rare names the evidence brought up: small models pick
                # such sentences when they find nothing better. Recorded, not kept.
                set_aside.append(number)
                continue
            covered.append((entry["start"], entry["end"]))
            evidence.append(entry)
            added.append(entry)
        matched: list[dict[str, Any]] = []
        while self.options.cover and len(matched) < COVER_PER_CHUNK:
            position = _best_cover(found, covered, set(self._uncovered(question, evidence)), question)
            if position is None:
                break
            entry = self._passage(chunk, found, position, covered, read=len(read), rank=0)
            covered.append((entry["start"], entry["end"]))
            evidence.append(entry)
            matched.append(entry)
        linked: list[dict[str, Any]] = []
        if self.options.link:
            position = _best_link(found, covered, set(self._rare_names(evidence_names(evidence, question))),
                                  question)
            if position is not None:
                entry = self._passage(chunk, found, position, covered, read=len(read), rank=0)
                covered.append((entry["start"], entry["end"]))
                evidence.append(entry)
                linked.append(entry)
        evidence, dropped = self._bounded(evidence, question)
        # What the bound dropped at once was not kept: it neither counts as new evidence nor is reported as kept.
        kept = {id(entry) for entry in evidence}
        added = [entry for entry in added if id(entry) in kept]
        matched = [entry for entry in matched if id(entry) in kept]
        linked = [entry for entry in linked if id(entry) in kept]
        # A link is code's guess at the second hop: it does not count as new evidence for stopping. A second look
        # at a chunk that finds nothing more is no step of the ranking: patience counts the chunks read first.
        again = chunk.index in state.get("read", [])
        barren = 0 if added or matched else int(state.get("barren", 0)) + (0 if again else 1)
        before = self.memory(state)
        new_state = {**state, "evidence": evidence, "read": read, "barren": barren}
        # Until the model has picked anything, the memory is the passages of the chunks read so far that best
        # match the question (said so in it): an answer from the text, not from what the model already knows.
        shown = evidence or self._bounded(self._best_matches(question, read), question,
                                          room=self.settings.memory_tokens - self._tokens(BEST_MATCHES))[0]
        new_state["memory"] = self._render(shown) if evidence or not shown else BEST_MATCHES + self._render(shown)
        new_state["sources"] = [{"where": e["where"], "spans": e["spans"], "excerpt": e["text"][:200], "chunk": e["chunk"]}
                                for e in sorted(shown, key=_document_order)]
        exit_reason = ""
        if self.options.exit_gate:
            pending = self.options.cover and self._pending(question, new_state)
            if evidence and not pending and barren >= self.options.patience:
                exit_reason = f"evidence found; {barren} new chunk(s) in a row added none"
            elif evidence and not pending and not self._worth_reading_on(question, new_state):
                exit_reason = (f"evidence found; no unread chunk matches the question or what the evidence names "
                               f"{self.options.cutoff:g} as well as the best chunk does")
        distinct = len(set(read))
        if not exit_reason and self._budget_spent(new_state) and distinct < len(self.store):
            repeats = f", {len(read) - distinct} read again" if len(read) > distinct else ""
            exit_reason = (f"read {distinct} of {len(self.store)} chunks{repeats} "
                           f"(max_read {self.options.max_read:g})")
        summary = (f"kept {len(added)} passage{'s' if len(added) != 1 else ''} ({_places(added)})" if added
                   else "nothing kept")
        if matched:
            summary += f", matched {len(matched)} naming the question ({_places(matched)})"
        if linked:
            summary += f", linked 1 about what the evidence names ({_places(linked)})"
        if set_aside:
            summary += f", set aside {len(set_aside)} unrelated"
        if dropped:
            summary += f", dropped {dropped} (memory full)"
        return StepResult(state=new_state, memory=new_state["memory"], memory_changed=new_state["memory"] != before,
                          truncated=False, exit=bool(exit_reason),
                          exit_reason=exit_reason or "exit-gate",
                          decisions={"picked": picks, "kept": [e["text"] for e in added],
                                     "matched": [e["text"] for e in matched],
                                     "linked": [e["text"] for e in linked], "set_aside": set_aside,
                                     "dropped": dropped, "read": len(read)},
                          summary=summary, parse_issues=tuple(issues))

    def plan_final(self, lane: int, question: str, state: State) -> StepPlan:
        return StepPlan(self.final_prompt(question, self._final_evidence(state)), self.settings.final_tokens)

    def final_prompt(self, question: str, evidence: str) -> str:
        return (f"{FINAL_INSTRUCTION}\n\n<evidence>\n{evidence}\n</evidence>\n\n<problem> \n{question}\n</problem>\n\n"
                "Please answer the problem based on the evidence and put the answer in \\boxed{}.\n\nYour answer:\n")

    # --- what the rest of memread asks ------------------------------------------------------------------

    def templates(self) -> dict[str, str]:
        return {"memory": self.step_prompt("{prompt}", "{memory}", "{chunk}"),
                "final": self.final_prompt("{prompt}", "{memory}")}

    def budget(self, question: str) -> list[BudgetItem]:
        evidence = self.settings.memory_tokens
        return [
            BudgetItem("step", self.step_prompt(question, "", ""),
                       self.chunk_tokens + NUMBER_TOKENS * MAX_UNITS + evidence, REPLY_TOKENS),
            BudgetItem("final", self.final_prompt(question, ""), evidence, self.settings.final_tokens),
        ]

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # --- the evidence -------------------------------------------------------------------------------------

    def _evidence_text(self, state: State) -> str:
        return str(state.get("memory")) if state.get("evidence") else NO_EVIDENCE

    def _final_evidence(self, state: State) -> str:
        memory = str(state.get("memory", prompts.NO_MEMORY))
        return memory if memory != prompts.NO_MEMORY else "(no sentence of the document was found to help)"

    def _passage(self, chunk: Chunk, found: Sequence[Unit], position: int, covered: list[tuple[int, int]], *,
                 read: int, rank: int) -> dict[str, Any]:
        """The entry for the sentence at ``position``: with the sentence before it on its line (what its "she"
        or "it" is) and up to ``context`` after it, none already kept, and the title line above it."""
        first = position
        if first > 0 and found[first - 1].line == found[position].line and not found[first - 1].heading \
                and not _covered(found[first - 1], covered):
            first -= 1
        last = position
        while (last + 1 < len(found) and last - position < self.options.context
               and found[last + 1].line == found[position].line and not found[last + 1].heading
               and not _covered(found[last + 1], covered)):
            last += 1
        start, end = found[first].start, found[last].end
        spans = chunk.locate(start, end)
        return {"chunk": chunk.index, "start": start, "end": end, "text": one_line(chunk.text[start:end]),
                "head": _heading(found, position), "where": "; ".join(span.describe() for span in spans),
                "spans": [span.to_dict() for span in spans], "read": read, "rank": rank}

    def _best_matches(self, question: str, read: Sequence[int]) -> list[dict[str, Any]]:
        """The :data:`FALLBACK_PASSAGES` sentences of the chunks read that best match the question (BM25), as
        passages; [] when none shares a word with it. Past :data:`FALLBACK_CHUNKS` chunks read, the sentences
        come from the read chunks that best match the question, so a long read without evidence costs no more
        memory or time per step than a short one."""
        searched = list(dict.fromkeys(read))
        if len(searched) > FALLBACK_CHUNKS:
            searched = [chunk for chunk, _ in self.store.top(question, FALLBACK_CHUNKS, among=searched,
                                                             grade_common=True)]
        index = TextIndex()
        try:
            found: dict[int, list[Unit]] = {}
            for chunk_index in searched:
                found[chunk_index] = units(self.store.get(chunk_index).text)
                for number, unit in enumerate(found[chunk_index]):
                    index.add(chunk_index * (MAX_UNITS + 1) + number, unit.text)
            hits = index.top(question, FALLBACK_PASSAGES)
        finally:
            index.close()
        entries: list[dict[str, Any]] = []
        covered: dict[int, list[tuple[int, int]]] = {}
        for rank, hit in enumerate(hits, 1):
            chunk_index, position = divmod(hit.key, MAX_UNITS + 1)
            spots = covered.setdefault(chunk_index, [])
            if _covered(found[chunk_index][position], spots):
                continue
            entry = self._passage(self.store.get(chunk_index), found[chunk_index], position, spots, read=0, rank=rank)
            spots.append((entry["start"], entry["end"]))
            entries.append(entry)
        return entries

    @staticmethod
    def _render(evidence: Sequence[Mapping[str, Any]]) -> str:
        if not evidence:
            return prompts.NO_MEMORY
        return "\n".join(_entry_line(e) for e in sorted(evidence, key=_document_order))

    def _bounded(self, evidence: list[dict[str, Any]], question: str,
                 room: int | None = None) -> tuple[list[dict[str, Any]], int]:
        """Drop the weakest entries until the rendered memory fits ``room`` tokens (``memory_tokens``): those
        sharing the fewest words with the question and with the other entries (a second hop shares none with the
        question, but names what the first hop names), the latest first among equals. An entry that alone
        outgrows it (a long log line) is cut at a word to fit, its place cut with it."""
        room = self.settings.memory_tokens if room is None else room
        asked = _stems(query_terms(question))
        dropped = 0
        while len(evidence) > 1 and self._tokens(self._render(evidence)) > room:
            words = [_stems(query_terms(f"{e['head']} {e['text']}")) for e in evidence]
            evidence.pop(min(range(len(evidence)), key=lambda i: _strength(i, evidence, words, asked)))
            dropped += 1
        if len(evidence) == 1 and self._tokens(self._render(evidence)) > room:
            evidence[0] = self._cut(evidence[0], room)
        return evidence, dropped

    def _cut(self, entry: dict[str, Any], room: int) -> dict[str, Any]:
        """``entry`` ended at the last word boundary that lets it render within ``room`` tokens (its first word at
        least), with the pages and lines of what is left."""
        chunk = self.store.get(int(entry["chunk"]))
        start, end = int(entry["start"]), int(entry["end"])
        ends = [start + m.start() for m in re.finditer(r"\s+", chunk.text[start:end])] or [end]

        def shortened(stop: int) -> dict[str, Any]:
            spans = chunk.locate(start, stop)
            return {**entry, "end": stop, "text": one_line(chunk.text[start:stop]), "cut": True,
                    "where": "; ".join(span.describe() for span in spans), "spans": [span.to_dict() for span in spans]}

        low, high = 0, len(ends) - 1  # the last fitting boundary, by bisection (the rendering grows with the text)
        while low < high:
            middle = (low + high + 1) // 2
            if self._tokens(self._render([shortened(ends[middle])])) <= room:
                low = middle
            else:
                high = middle - 1
        return shortened(ends[low])

    def _tokens(self, text: str) -> int:
        return self.tokenizer.count(text) if self.tokenizer is not None else len(text) // 4 + 1


def _entry_line(entry: Mapping[str, Any]) -> str:
    """One entry as the memory shows it: ``- head: text``, ending `` …`` when the bound cut it."""
    line = f"- {entry['head']}: {entry['text']}" if entry["head"] else f"- {entry['text']}"
    return line + " …" if entry.get("cut") else line


def _places(entries: Iterable[Mapping[str, Any]]) -> str:
    """Where the entries come from, each place once, for a step's summary."""
    return "; ".join(dict.fromkeys(_short_place(str(e["where"])) for e in entries))


def _short_place(where: str) -> str:
    """``report.pdf p. 12`` as ``p. 12``: the view names the document already."""
    first, _, rest = where.partition(" ")
    return rest if rest and not first.endswith(":") else where


def _document_order(entry: Mapping[str, Any]) -> tuple[int, int]:
    return int(entry["chunk"]), int(entry["start"])


def _strength(i: int, evidence: Sequence[Mapping[str, Any]], words: Sequence[set[str]],
              asked: set[str]) -> tuple[int, int, int]:
    """How much entry ``i`` is worth keeping: words shared with the question plus (up to 2) with the other
    entries, then the earlier and the better-ranked pick."""
    others = set().union(*(w for j, w in enumerate(words) if j != i))
    linked = min(2, len((words[i] - asked) & others))
    return len(asked & words[i]) + linked, -int(evidence[i]["read"]), -int(evidence[i]["rank"])


def _stems(words: Iterable[str]) -> set[str]:
    """Words as compared for relatedness: lower case, without a plural or possessive s."""
    out = set()
    for word in words:
        word = word.lower().removesuffix("'s")
        out.add(word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") else word)
    return out


def _names_in(question: str, *, ids: bool = False) -> list[str]:
    """The capitalised words and numbers of a question (and its identifiers with ``ids``), lower-cased, without
    stop words, each once."""
    names: list[str] = []
    found = _QUESTION_NAME.findall(question)
    if ids:
        found = [*found, *_IDENTIFIER.findall(question)]
    for name in found:
        for word in query_terms(name):
            if word not in names:
                names.append(word)
    return names


def _best_cover(found: Sequence[Unit], covered: Sequence[tuple[int, int]], missing: set[str],
                question: str) -> int | None:
    """The sentence of a passage that holds the most of the ``missing`` names (in it or in its title), then the
    most of them in itself, then the most words of the question, then the earliest; None if none holds one."""
    if not missing:
        return None
    wanted = _stems(missing)
    asked = _stems(query_terms(question))
    best: tuple[int, int, int, int] | None = None
    position = None
    for number, unit in enumerate(found):
        if unit.heading or _covered(unit, covered):
            continue
        own = _stems(query_terms(unit.text))
        titled = own | _stems(query_terms(_heading(found, number)))
        key = (len(wanted & titled), len(wanted & own), len(asked & own), -number)
        if key[0] and (best is None or key > best):
            best, position = key, number
    return position


def _best_link(found: Sequence[Unit], covered: Sequence[tuple[int, int]], names: set[str],
               question: str) -> int | None:
    """The sentence of a passage about one of the evidence's ``names`` (in it or in its title) that, with the
    next sentence of its paragraph, shares the most words with the question besides the question's own names,
    at least :data:`LINK_WORDS` of them (all of them when the question has fewer): "Their highest peak … is High
    Knob" under "Cumberland Mountains" once the evidence says Elk Valley is in the Cumberland Mountains. Then the
    most names, then the earliest; None if no sentence qualifies."""
    asked = _stems(query_terms(question))
    relation = asked - _stems(_names_in(question))
    need = min(LINK_WORDS, len(relation))
    # "Mountains" of a title is no link for a question about a mountain range, nor a year shared with the evidence.
    wanted = {name for name in _stems(names) - asked if not name.isdigit()}
    if not wanted or not need:
        return None
    best: tuple[int, int, int] | None = None
    position = None
    for number, unit in enumerate(found):
        if unit.heading or _covered(unit, covered):
            continue
        # The sentence and the next one of its paragraph, both kept with it: "Maroon 5 is an American pop rock
        # band … It currently consists of … drummer Matt Flynn" answers "the current drummer of the band".
        after = found[number + 1] if number + 1 < len(found) else None
        text = unit.text if after is None or after.heading or after.line != unit.line else f"{unit.text} {after.text}"
        own = _stems(query_terms(text))
        about = wanted & (own | _stems(query_terms(_heading(found, number))))
        key = (len(relation & own), len(about), -number)
        if about and key[0] >= need and (best is None or key > best):
            best, position = key, number
    return position


def _covered(unit: Unit, covered: Sequence[tuple[int, int]]) -> bool:
    return any(start <= unit.start < end for start, end in covered)


def _sentence_at(found: Sequence[Unit], position: int) -> int | None:
    """``position``, or for a title or heading the first sentence after it (None if there is none nearby)."""
    for candidate in range(position, min(len(found), position + 4)):
        if not found[candidate].heading:
            return candidate
    return None


def _heading(found: Sequence[Unit], position: int) -> str:
    """The title or heading line just above a sentence in the same paragraph (what "she" or "it" is), if any."""
    if found[position].heading:
        return ""
    for unit in reversed(found[max(0, position - 8):position]):
        if unit.heading:  # "Document 3:" (or any "label:") above it ends the search: its title is not above that
            return "" if unit.text.rstrip().endswith(":") else unit.text
    return ""


def evidence_names(evidence: Iterable[Mapping[str, Any]], question: str) -> list[str]:
    """The names and numbers the evidence brings up that the question does not: what to look for next."""
    asked = set(query_terms(question))
    names: list[str] = []
    for entry in evidence:
        for name in _NAME.findall(f"{entry.get('head', '')} {entry.get('text', '')}"):
            word = name.lower()
            if word not in asked and word not in names and query_terms(word):
                names.append(word)
    return names[:24]
