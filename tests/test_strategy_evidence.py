"""The evidence strategy: the model picks numbered sentences, memread keeps them word for word, reads the
best-matching chunks first (re-ranked with what the evidence names), stops in code, answers from the evidence."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from docbuilders import COMMON_WORDS_QUESTION, common_words_chunks

from memread.backends.base import ChatRequest
from memread.backends.fake import FakeBackend
from memread.chunk import Chunker
from memread.document import Chunk, Provenance, Segment
from memread.events import Event, LaneExited, RunFinished, StepFinished, StepStarted, Warned
from memread.loop import LaneResult, Loop
from memread.settings import Settings
from memread.strategies.evidence import EvidenceStrategy, _heading, evidence_names, parse_picks, units
from memread.tokens import CharTokenizer
from memread.traces import TraceWriter, read_trace, verify_chunks

# Ten "documents" of a RULER-HotpotQA-like haystack: the bridge (who starred in the film) is in document 7, the
# answer (what she became) in document 2; the rest is filler.
FILLER = ("Document {i}:\nHarbour notes {i}\nThe ferry timetable changed in spring. Gulls nested on the pier. "
          "The market sold fish every morning.\n\n")
FILM = ("Document 7:\nKiss and Tell (1945 film)\nKiss and Tell is a 1945 American comedy film. "
        "It starred Shirley Temple as Corliss Archer.\n\n")
CAREER = ("Document 2:\nShirley Temple\nShirley Temple was an American actress. "
          "As an adult, she served as Chief of Protocol of the United States.\n\n")
QUESTION = "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"


def document() -> str:
    parts = [FILLER.format(i=i) for i in range(10)]
    parts[7], parts[2] = FILM, CAREER
    return "".join(parts)


def chunks(text: str, budget: int = 330) -> list[Chunk]:
    lines = text.splitlines(keepends=True)
    segments = [Segment(line, Provenance("hqa.txt", line_start=n, line_end=n)) for n, line in enumerate(lines, 1)]
    return list(Chunker(CharTokenizer(), budget).chunks(segments))


def passage(prompt: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in prompt.splitlines() if re.match(r"\[\d+\] ", line)]


def question_of(prompt: str) -> str:
    return re.search(r"^Question: (.*)$", prompt, re.MULTILINE).group(1)  # type: ignore[union-attr]


def reader(request: ChatRequest) -> str:
    """A model that picks every sentence naming Corliss Archer or Shirley Temple's career, and answers from the
    evidence it is shown."""
    prompt = request.messages[-1].content
    if "<evidence>" in prompt:
        evidence = re.search(r"<evidence>\n(.*?)\n</evidence>", prompt, re.DOTALL).group(1)  # type: ignore[union-attr]
        return "\\boxed{Chief of Protocol}" if "Chief of Protocol" in evidence else "\\boxed{unknown}"
    picks = [str(n) for n, text in enumerate(passage(prompt), 1) if "Corliss" in text or "Protocol" in text]
    return ", ".join(picks) or "none"


def run(settings: Settings, *, questions: tuple[str, ...] = (QUESTION,), text: str | None = None,
        backend: FakeBackend | None = None) -> tuple[list[Event], list[LaneResult], FakeBackend]:
    backend = backend or FakeBackend(reader, tokenizer=CharTokenizer())
    events: list[Event] = []
    loop = Loop(backend, list(questions), settings, [events.append], document="hqa.txt")
    results = loop.run(chunks(text or document()))
    return events, results, backend


SETTINGS = Settings(strategy="evidence", chunk_tokens=330, memory_tokens=600, final_tokens=40)


def test_passages_are_numbered_by_sentence_and_titles_are_headings() -> None:
    found = units("Document 7:\nKiss and Tell (1945 film)\nKiss and Tell is a film. It starred Shirley Temple.\n")
    assert [u.text for u in found] == ["Document 7:", "Kiss and Tell (1945 film)", "Kiss and Tell is a film.",
                                       "It starred Shirley Temple."]
    assert [u.heading for u in found] == [True, True, False, False]
    text = "a.\n" * 400
    assert len(units(text)) == 150  # neighbours joined: the numbering stays bounded


def test_a_title_with_initials_is_one_heading_and_heads_its_own_document_s_sentences_only() -> None:
    # Found on a 400-document sample of another seed than the measured one: "Montejo v. Louisiana" was split at
    # "v.", so it was no heading, and its sentences took the previous document's title ("Winans family").
    text = ("Document 2:\nWinans family\nThe Winans are a family of gospel singers.\n\n"
            "Document 3:\nMontejo v. Louisiana\nMontejo v. Louisiana, 556 U.S. 778 (2009), is a decision of the "
            "Supreme Court. It was written by Dr. Scalia with John C. Whitcomb's help. It overruled a case.\n\n"
            "Document 4:\nThis paragraph has no title line above it.\n")
    found = units(text)
    assert [u.text for u in found if u.heading] == ["Document 2:", "Winans family", "Document 3:",
                                                     "Montejo v. Louisiana", "Document 4:"]
    sentences = [(u.text, _heading(found, i)) for i, u in enumerate(found) if not u.heading]
    assert sentences == [
        ("The Winans are a family of gospel singers.", "Winans family"),
        ("Montejo v. Louisiana, 556 U.S. 778 (2009), is a decision of the Supreme Court.", "Montejo v. Louisiana"),
        ("It was written by Dr. Scalia with John C. Whitcomb's help.", "Montejo v. Louisiana"),
        ("It overruled a case.", "Montejo v. Louisiana"),
        ("This paragraph has no title line above it.", "")]


# A hard-wrapped report (as a PDF page or a text file wrapped at a fixed width gives it): sentences run over
# line ends. Numbered line by line, "[30] Waves" and "reopened after 23 days" were pieces the model could not
# pick whole; docs/sample/harbour-report.md was answered "1" instead of 23.
WRAPPED = """## 3. The February storm

The worst damage was to the Widow's Pier. A section of decking about twelve metres long near the lantern was
lifted and broken, and the handrail on the seaward side was torn away. The harbour master closed the Widow's Pier
to the public on the morning of the 10th of February. Engineers judged the substructure sound, and the pier was
repaired with new oak decking and reopened after 23 days, on the 5th of March. The repairs cost twenty-
six thousand pounds, paid from the reserves that the Board had set aside for such works in the years against
1,288 pounds the year before, and the harbour staff were thanked with the volunteers of the lifeboat and the
Saltmere sea scouts.
Short closing line.
"""


def test_sentences_wrapped_over_line_ends_are_numbered_whole_and_cite_their_lines() -> None:
    found = units(WRAPPED)
    assert [u.text for u in found] == [
        "## 3. The February storm",
        "The worst damage was to the Widow's Pier.",
        "A section of decking about twelve metres long near the lantern was lifted and broken, and the handrail on "
        "the seaward side was torn away.",
        "The harbour master closed the Widow's Pier to the public on the morning of the 10th of February.",
        "Engineers judged the substructure sound, and the pier was repaired with new oak decking and reopened after "
        "23 days, on the 5th of March.",
        "The repairs cost twenty-six thousand pounds, paid from the reserves that the Board had set aside for such "
        "works in the years against 1,288 pounds the year before, and the harbour staff were thanked with the "
        "volunteers of the lifeboat and the Saltmere sea scouts.",
        "Short closing line."]
    assert [u.heading for u in found] == [True] + [False] * 6
    assert len({u.line for u in found[1:6]}) == 1  # one paragraph: a pick keeps its neighbours as context
    for unit in found:  # the offsets are the chunk's own text, line breaks and all
        assert " ".join(WRAPPED[unit.start:unit.end].split()).replace("-\n", "-").replace("- ", "-") == unit.text

    # Kept as evidence, a wrapped sentence is one line of memory and cites the lines it runs over.
    def picker(request: ChatRequest) -> str:
        prompt = request.messages[-1].content
        if "<evidence>" in prompt:
            return "\\boxed{23}" if "after 23 days" in prompt else "\\boxed{1}"
        return ", ".join(str(n) for n, text in enumerate(passage(prompt), 1) if "23 days" in text) or "none"

    settings = Settings(strategy="evidence", chunk_tokens=2000, memory_tokens=600, final_tokens=40)
    events: list[Event] = []
    loop = Loop(FakeBackend(picker, tokenizer=CharTokenizer()), ["How many days was the Widow's Pier closed?"],
                settings, [events.append], document="hqa.txt")
    results = loop.run(chunks(WRAPPED, budget=2000))
    [entry] = [e for e in events if isinstance(e, StepFinished)][-1].state["evidence"]
    assert "\n" not in entry["text"] and "reopened after 23 days, on the 5th of March." in entry["text"]
    # With the sentence before it and the one after it in its paragraph, as on a one-line paragraph.
    assert entry["text"].startswith("The harbour master closed") and entry["text"].endswith("sea scouts.")
    assert entry["where"] == "hqa.txt lines 4-9" and entry["head"] == "## 3. The February storm"
    assert results[0].answer == "23"


def test_a_reply_cut_at_its_limit_is_a_format_issue_not_a_memory_cut_off() -> None:
    # The model rambles past the 48 tokens a reply of numbers gets: the numbers before the cut count, the memory
    # (code's) is whole, and the user is not warned that "its memory may be cut off".
    def rambler(request: ChatRequest) -> str:
        if "<evidence>" in request.messages[-1].content:
            return "\\boxed{Chief of Protocol}"
        return reader(request) + ". " + "These sentences are the ones that matter most here. " * 5

    events, results, _ = run(SETTINGS, backend=FakeBackend(rambler, tokenizer=CharTokenizer()))
    steps = [e for e in events if isinstance(e, StepFinished)]
    cut = [s for s in steps if s.finish_reason == "length"]
    assert cut and not any(s.truncated for s in steps)
    assert all(any("48-token limit" in issue for issue in s.parse_issues) for s in cut)
    assert not any(isinstance(e, Warned) and "cut off" in e.message for e in events)
    assert results[0].answer == "Chief of Protocol"


def test_lines_that_are_records_headings_or_items_are_never_joined() -> None:
    records = ("2026-11-25 10:00:01 INFO connecting to the database server at db.internal port 5432 as the\n"
               "2026-11-25 10:00:02 WARN slow answer from the database server at db.internal after 900 ms for\n"
               "level=info msg=\"the cache was warmed with 120 entries from the previous run of the\"\n"
               "level=info msg=\"the scheduler started with four workers and a queue of twenty jobs for\"\n"
               "apple,3,red,grown in the orchard behind the station and sold at the market on the\n"
               "pear,5,green,grown in the orchard behind the station and sold at the market on the\n"
               "PASS: gdb.arch/amd64-disp-step-avx.exp: vex2: xmm0 has expected value before\n"
               "PASS: gdb.arch/amd64-disp-step-avx.exp: vex2: xmm1 has expected value before\n"
               "Nov 25 10:00:03 host sshd[123]: Failed password for root from 10.0.0.1 port 22 with the\n"
               "Nov 25 10:00:04 host sshd[123]: Failed password for root from 10.0.0.1 port 22 with the\n")
    assert len(units(records)) == 10
    items = ("The harbour plan for next year lists the works the Board has agreed to pay for, and\n"
             "- new tenders for the fish market, which came in well above the estimate this spring\n"
             "- a decision on the dredger the Board has been asked to buy for the inner basin and\n"
             "# The year ahead\n"
             "| table | row that is long enough to count as a full line of the passage |\n")
    assert len(units(items)) == 5
    # The measured benchmarks' layout: a label, a title, then a paragraph on one line; nothing there is wrapped.
    hotpot = ("Document 3:\nthe Hungry (band)\nthe Hungry is a band from a city by the sea, formed in the year of "
              "the long storm and still playing to\n\nDocument 4:\nafroman\nafroman is a rapper.\n")
    assert [u.text for u in units(hotpot)] == [
        "Document 3:", "the Hungry (band)",
        "the Hungry is a band from a city by the sea, formed in the year of the long storm and still playing to",
        "Document 4:", "afroman", "afroman is a rapper."]


def test_picks_are_numbers_within_the_passage_and_none_is_an_answer() -> None:
    assert parse_picks("3, 7, 3, 12", 10, 5) == ([3, 7], ["sentence 12 does not exist (the passage has 10)"])
    assert parse_picks("none", 10, 5) == ([], [])
    assert parse_picks("<think>sentence 9?</think>\n[2] and [4]", 10, 5)[0] == [2, 4]
    assert parse_picks("1,4,7,9", 10, 2)[0] == [1, 4]
    assert parse_picks("I cannot tell.", 10, 5)[1] == ["the reply names no sentence and does not say none"]
    # Counting through the passage is no choice: nothing is kept (cover and link still read the passage).
    picks, issues = parse_picks("1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1", 40, 5)
    assert picks == [] and issues == ["the reply counts through the sentences (1, 2, 3, 4, …) instead of choosing: "
                                      "no pick kept"]
    assert parse_picks("2, 18, 19, 20, 21, 22", 40, 5)[0] == [2, 18, 19, 20, 21]  # a run of five is a choice
    assert parse_picks("3, 9, 14, 15, 16, 30", 40, 5)[0] == [3, 9, 14, 15, 16]


def test_the_best_matching_chunk_is_read_first_and_the_evidence_leads_to_the_second_hop() -> None:
    events, results, _ = run(SETTINGS)
    order = [e.chunk.index for e in events if isinstance(e, StepStarted)]
    all_chunks = chunks(document())
    film = next(c.index for c in all_chunks if "Corliss" in c.text)
    career = next(c.index for c in all_chunks if "Protocol" in c.text)
    assert order[0] == film  # the question names the film and Corliss Archer
    assert order[1] == career  # "Shirley Temple", named by the evidence, leads to the career
    assert len(order) == 3 and len(all_chunks) > 4  # one more, then no unread chunk matches well enough
    assert results[0].answer == "Chief of Protocol"
    exited = [e for e in events if isinstance(e, LaneExited)]
    assert exited and "no unread chunk matches the question or what the evidence names" in exited[0].reason
    started = [e for e in events if isinstance(e, StepStarted)]
    assert "best match" in started[0].reason


def test_evidence_is_copied_word_for_word_with_its_own_lines_and_cited_by_them() -> None:
    from memread.citations import cite

    events, results, _ = run(SETTINGS)
    steps = [e for e in events if isinstance(e, StepFinished)]
    evidence = steps[-1].state["evidence"]
    # The picked sentence, with the one before it on its line (what "It" and "she" are) and those after it.
    assert [e["text"] for e in evidence] == [
        "Kiss and Tell is a 1945 American comedy film. It starred Shirley Temple as Corliss Archer.",
        "Shirley Temple was an American actress. As an adult, she served as Chief of Protocol of the United States."]
    # The title line above a sentence says what "it" and "she" are, when the chunk holds it.
    chunk_text = {c.index: c.text for c in chunks(document())}
    for entry in evidence:
        title = "Kiss and Tell (1945 film)" if "Corliss" in entry["text"] else "Shirley Temple"
        assert entry["head"] == (title if title + "\n" in chunk_text[entry["chunk"]][:entry["start"]] else "")
    assert any(entry["head"] for entry in evidence)
    lines = document().splitlines()
    for entry in evidence:
        number = int(re.search(r"line (\d+)", entry["where"]).group(1))  # type: ignore[union-attr]
        assert entry["text"] in lines[number - 1]  # the sentence's own line, not the chunk's range
    memory = results[0].memory
    assert memory.index("Chief of Protocol") < memory.index("Corliss Archer")  # document order: doc 2 before 7
    assert [c.where for c in cite(steps)] == [e["where"] for e in sorted(evidence, key=lambda e: e["chunk"])]


def test_without_the_exit_gate_every_chunk_is_read_and_max_read_bounds_it() -> None:
    everything, _, _ = run(Settings(**{**SETTINGS.to_dict(), "options": {"exit_gate": False}}))
    read = [e.chunk.index for e in everything if isinstance(e, StepStarted)]
    assert sorted(set(read)) == [c.index for c in chunks(document())]
    some, _, _ = run(Settings(**{**SETTINGS.to_dict(), "options": {"max_read": 0.2, "patience": 9, "cutoff": 0}}))
    assert sum(isinstance(e, StepStarted) for e in some) == -(-len(chunks(document())) * 2 // 10)


def test_in_document_order_it_reads_from_the_start() -> None:
    events, _, _ = run(Settings(**{**SETTINGS.to_dict(), "options": {"order": "document"}}))
    order = [e.chunk.index for e in events if isinstance(e, StepStarted)]
    assert order == sorted(order) and order[0] == 0


def test_a_full_memory_drops_the_entries_that_share_least_with_the_question() -> None:
    def greedy(request: ChatRequest) -> str:
        prompt = request.messages[-1].content
        if "<evidence>" in prompt:
            return "\\boxed{x}"
        return ", ".join(str(n) for n in range(1, len(passage(prompt)) + 1))

    events, _, _ = run(Settings(**{**SETTINGS.to_dict(), "memory_tokens": 120,
                                   "options": {"exit_gate": False, "picks": 50}}),
                       backend=FakeBackend(greedy, tokenizer=CharTokenizer()))
    last = [e for e in events if isinstance(e, StepFinished)][-1]
    assert len(last.memory) <= 120 and "dropped" in " ".join(
        e.summary for e in events if isinstance(e, StepFinished))
    assert "Corliss Archer" in last.memory  # the entry that shares most with the question stays


def test_several_questions_read_together_and_stop_on_their_own() -> None:
    questions = (QUESTION, "What did the market sell every morning?")

    def both(request: ChatRequest) -> str:
        prompt = request.messages[-1].content
        if "<evidence>" in prompt:
            return "\\boxed{fish}" if "market" in prompt.split("<problem>")[1] else reader(request)
        if "market" in question_of(prompt):
            return ", ".join(str(n) for n, t in enumerate(passage(prompt), 1) if "fish" in t)[:1] or "none"
        return reader(request)

    events, results, backend = run(SETTINGS, questions=questions, backend=FakeBackend(both, tokenizer=CharTokenizer()))
    assert [r.answer for r in results] == ["Chief of Protocol", "fish"]
    assert {len(batch) for batch in backend.calls} <= {1, 2}
    assert all(e.lanes for e in events if isinstance(e, StepStarted))


def test_an_interrupted_read_resumes_in_the_same_order_to_the_same_answer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    straight, whole, _ = run(SETTINGS)

    class Interrupting(FakeBackend):
        def complete(self, requests):  # type: ignore[no-untyped-def]
            if len(self.calls) == 2:
                raise KeyboardInterrupt
            return super().complete(requests)

    path = tmp_path / "run.jsonl"
    writer = TraceWriter(path)
    with pytest.raises(KeyboardInterrupt):
        Loop(Interrupting(reader, tokenizer=CharTokenizer()), [QUESTION], SETTINGS, [writer],
             document="hqa.txt").run(chunks(document()))
    writer.close()
    trace = read_trace(path)
    point = trace.resume_point()
    assert point.start_step == 2
    writer = TraceWriter(path, resume=True)
    resumed = Loop(FakeBackend(reader, tokenizer=CharTokenizer()), [QUESTION], SETTINGS, [writer], document="hqa.txt",
                   run_id=trace.run_id).run(verify_chunks(trace, iter(chunks(document())), every_recorded=True),
                                            start_step=point.start_step, states=point.states, exited=point.exited)
    writer.close()
    assert resumed == whole
    again = read_trace(path)
    assert [s.chunk.index for s in again.steps()] == [s.chunk.index for s in straight if isinstance(s, StepFinished)]
    assert isinstance(straight[-1], RunFinished)


def _traced_run(path: Path) -> None:
    """One uninterrupted evidence run over the test document, its trace written to ``path``."""
    writer = TraceWriter(path)
    Loop(FakeBackend(reader, tokenizer=CharTokenizer()), [QUESTION], SETTINGS, [writer],
         document="hqa.txt").run(chunks(document()))
    writer.close()


def test_a_changed_document_is_refused_at_a_chunk_read_out_of_order(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from memread.errors import TraceError

    path = tmp_path / "run.jsonl"
    _traced_run(path)
    changed = document().replace("Corliss Archer", "Corliss Archie")
    with pytest.raises(TraceError, match="the document changed at chunk"):
        list(verify_chunks(read_trace(path), iter(chunks(changed)), every_recorded=True))


def test_the_names_the_evidence_brings_up_are_what_the_question_does_not_say() -> None:
    names = evidence_names([{"head": "Kiss and Tell (1945 film)", "text": "It starred Shirley Temple in 1945."}],
                           "Who starred in Kiss and Tell?")
    assert names == ["1945", "shirley", "temple"]


def _chunks_of(text: str) -> Iterator[Chunk]:
    yield from chunks(text)


def test_a_chunk_holding_both_hops_is_read_again_once_the_first_hop_names_the_second() -> None:
    # Film and career in one chunk: a model that only sees the career sentence as relevant once the evidence
    # names Shirley Temple needs a second look at the same passage.
    def hops(request: ChatRequest) -> str:
        prompt = request.messages[-1].content
        if "<evidence>" in prompt:
            return reader(request)
        knows_star = "Shirley Temple" in prompt.split("Evidence found so far:")[-1] if "Evidence found" in prompt \
            else False
        wanted = ("Protocol",) if knows_star else ("Corliss",)
        return ", ".join(str(n) for n, t in enumerate(passage(prompt), 1) if any(w in t for w in wanted)) or "none"

    text = FILM + CAREER + "".join(FILLER.format(i=i) for i in range(10, 16))
    events, results, _ = run(SETTINGS, text=text, backend=FakeBackend(hops, tokenizer=CharTokenizer()))
    order = [e.chunk.index for e in events if isinstance(e, StepStarted)]
    assert order[:2] == [0, 0] and order.count(0) == 2  # read again once, not more
    assert results[0].answer == "Chief of Protocol"
    assert [e.reason for e in events if isinstance(e, StepStarted)][1].startswith("read again")


def test_a_second_look_that_finds_nothing_more_does_not_spend_patience() -> None:
    # Seen on 400-document design samples: a chunk read again for a name its own evidence brought up, finding
    # nothing, was one of the `patience` chunks, and reading stopped before the next-ranked unread chunk.
    def first_hop_only(request: ChatRequest) -> str:
        prompt = request.messages[-1].content
        if "<evidence>" in prompt:
            return reader(request)
        return ", ".join(str(n) for n, t in enumerate(passage(prompt), 1) if "Corliss" in t) or "none"

    text = FILM + CAREER + "".join(FILLER.format(i=i) for i in range(10, 16))
    settings = Settings(**{**SETTINGS.to_dict(), "options": {"cutoff": 0.0, "patience": 1}})
    events, _, _ = run(settings, text=text, backend=FakeBackend(first_hop_only, tokenizer=CharTokenizer()))
    order = [e.chunk.index for e in events if isinstance(e, StepStarted)]
    summaries = [e.summary for e in events if isinstance(e, StepFinished)]
    assert order[:2] == [0, 0] and summaries[1].startswith("nothing kept")  # the second look found nothing
    assert len(order) == 3 and order[2] != 0  # and the next unread chunk was still read
    assert [e.reason for e in events if isinstance(e, LaneExited)] == ["evidence found; 1 new chunk(s) in a row added none"]


def test_the_trace_replays_with_the_reading_order_and_what_each_step_kept(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from memread.cli.player import memory_diffs
    from memread.cli.render import chunk_pane
    from memread.cli.viewstate import ViewState
    from memread.report import RunReport

    path = tmp_path / "run.jsonl"
    _traced_run(path)
    trace = read_trace(path)
    diffs = list(memory_diffs(trace))
    first = trace.steps()[0].chunk.index
    assert f"+++ memory after step 1 (chunk {first + 1}) (hqa.txt lines" in "\n".join(diffs)
    assert any(line.startswith("+- Kiss and Tell (1945 film): Kiss and Tell is a 1945") for line in diffs)
    state = ViewState()
    events = list(trace.events())
    for at, event in events[:3]:  # run started, step started, step finished
        state.apply(event, at)
    assert "best match of" in str(chunk_pane(state).title)
    result = RunReport.from_trace(trace).result()
    assert [c["where"] for c in result["lanes"][0]["citations"]][0].startswith("hqa.txt line ")


def _careless(request: ChatRequest) -> str:
    """A model that picks the gulls, whatever the question (and Corliss Archer), and answers from the evidence."""
    prompt = request.messages[-1].content
    if "<evidence>" in prompt:
        return reader(request)
    return ", ".join(str(n) for n, t in enumerate(passage(prompt), 1) if "Gulls" in t or "Corliss" in t)


def test_a_pick_that_shares_no_word_with_the_question_or_the_evidence_is_set_aside() -> None:
    events, _, _ = run(SETTINGS, backend=FakeBackend(_careless, tokenizer=CharTokenizer()))
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert all("Gulls" not in s.memory for s in steps) and "Corliss Archer" in steps[-1].memory
    assert any(s.decisions["set_aside"] for s in steps) and "set aside" in " ".join(s.summary for s in steps)


def test_a_pick_linked_to_the_evidence_only_by_a_name_most_chunks_hold_is_set_aside() -> None:
    # The evidence (the film) says "American"; so does every filler document's gull sentence.
    text = document().replace("Gulls nested on the pier.", "Gulls nested on the American pier.")
    events, _, _ = run(SETTINGS, text=text, backend=FakeBackend(_careless, tokenizer=CharTokenizer()))
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert "American comedy film" in steps[0].memory and len(steps) > 1
    assert all("Gulls" not in s.memory for s in steps) and all(s.decisions["set_aside"] for s in steps)


def test_without_the_cutoff_it_stops_after_patience_chunks_without_new_evidence() -> None:
    events, results, _ = run(Settings(**{**SETTINGS.to_dict(), "options": {"cutoff": 0.0, "patience": 2}}))
    assert sum(isinstance(e, StepStarted) for e in events) == 4
    assert [e.reason for e in events if isinstance(e, LaneExited)] == ["evidence found; 2 new chunk(s) in a row added none"]
    assert results[0].answer == "Chief of Protocol"


def _silent(request: ChatRequest) -> str:
    """A model that picks no sentence, and answers from the evidence it is shown."""
    prompt = request.messages[-1].content
    return reader(request) if "<evidence>" in prompt else "none"


def test_when_the_model_picks_nothing_the_answer_comes_from_the_best_matching_passages_read() -> None:
    no_cover = Settings(**{**SETTINGS.to_dict(), "options": {"cover": False}})
    events, results, _ = run(no_cover, backend=FakeBackend(_silent, tokenizer=CharTokenizer()))
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert all(not s.state["evidence"] for s in steps)
    memory = results[0].memory
    assert memory.startswith("(no sentence was picked yet") and "Corliss Archer" in memory
    assert not [e for e in events if isinstance(e, Warned) and "nothing from the document" in e.message]


def test_a_sentence_naming_what_the_question_names_is_kept_when_the_model_picks_none() -> None:
    events, _, _ = run(SETTINGS, backend=FakeBackend(_silent, tokenizer=CharTokenizer()))
    steps = [e for e in events if isinstance(e, StepFinished)]
    first = steps[0]
    assert first.decisions["picked"] == [] and first.decisions["matched"] == [
        "Kiss and Tell is a 1945 American comedy film. It starred Shirley Temple as Corliss Archer."]
    assert "matched 1 naming the question" in first.summary
    assert [e["rank"] for e in first.state["evidence"]] == [0]  # code's pick, not the model's
    assert sum(bool(s.decisions["matched"]) for s in steps) == 1  # the names are held: nothing more is matched


COMPARISON = "Which was founded first, the Ashgrove Rowing Club or the Wexley Chess Society?"
ROWING = "Document {i}:\nAshgrove Rowing Club\nThe Ashgrove Rowing Club was founded in 1866 on the river.\n\n"
CHESS = "Document {i}:\nWexley Chess Society\nThe Wexley Chess Society was founded in 1901 in a cafe.\n\n"


def _comparison_document() -> str:
    parts = [FILLER.format(i=i) for i in range(12)]
    parts[1], parts[10] = ROWING.format(i=1), CHESS.format(i=10)
    return "".join(parts)


def _rowing_only(request: ChatRequest) -> str:
    """A model that picks the rowing club's sentence and never the chess society's."""
    prompt = request.messages[-1].content
    if "<evidence>" in prompt:
        return "\\boxed{Ashgrove Rowing Club}" if "1901" in prompt else "\\boxed{unknown}"
    return ", ".join(str(n) for n, t in enumerate(passage(prompt), 1) if "Rowing Club was" in t) or "none"


@pytest.mark.parametrize("cover", [True, False])
def test_reading_goes_on_until_the_evidence_names_both_sides_of_a_comparison(cover: bool) -> None:
    settings = Settings(**{**SETTINGS.to_dict(), "options": {"cover": cover, "cutoff": 0.0, "patience": 1}})
    events, results, _ = run(settings, questions=(COMPARISON,), text=_comparison_document(),
                             backend=FakeBackend(_rowing_only, tokenizer=CharTokenizer()))
    memory = results[0].memory
    assert "founded in 1866" in memory
    if cover:  # the chess society's chunk is read next (it holds the names the evidence lacks), and matched
        order = [e.chunk.index for e in events if isinstance(e, StepStarted)]
        assert len(order) == 3 and "founded in 1901" in memory
        assert results[0].answer == "Ashgrove Rowing Club"
    else:  # one chunk without new evidence and it stops: the model never picked the chess society
        assert "1901" not in memory and results[0].answer == "unknown"


def test_the_question_names_are_its_capitalised_words_and_numbers_that_tell_chunks_apart() -> None:
    strategy = EvidenceStrategy(SETTINGS, CharTokenizer())
    strategy.index(chunks(_comparison_document()))
    try:  # "Harbour" is in most chunks (it tells none apart); "Which" and "The" are not names
        question = "Which Harbour notes name the Wexley Chess Society of 1901, and which the year 1866?"
        assert strategy.question_names(question) == ["wexley", "chess", "society", "1901", "1866"]
    finally:
        strategy.close()


def test_a_question_whose_every_word_is_in_half_the_chunks_reads_the_rarer_words_chunk_first() -> None:
    # A manual's question ("Which package field?" where every chunk says "package" and half say "field"): FTS5
    # weighs both words alike, near zero, and would read the chunk that says "package" most; the strategy ranks the
    # question by Lucene's IDF then (benchmarks/results/idf.md: the Debian policy manual's Depends chunk, 28th → 6th).
    strategy = EvidenceStrategy(SETTINGS, CharTokenizer())
    strategy.index(common_words_chunks())
    try:
        choice = strategy.next_read({0: strategy.initial_state()}, [COMMON_WORDS_QUESTION])
        assert choice is not None and choice.chunk.index == 1
        assert re.fullmatch(r"best match of 6 unread \(BM25 0\.\d\)", choice.reason)
    finally:
        strategy.close()


BRIDGE = "What is the highest peak in the mountain range in which Elk Valley is located?"
ELK = "Document {i}:\nElk Valley\nElk Valley is a small community in the Cumberland Mountains, near Jellico.\n\n"
RANGE = ("Document {i}:\nCumberland Mountains\nThe Cumberland Mountains lie in Tennessee and Kentucky. "
         "Their highest peak is High Knob, near Norton.\n\n")
OTHER_RANGE = "Document {i}:\nBalkan Mountains\nThe highest peak of the Balkan Mountains is Botev.\n\n"


def _bridge_document() -> str:
    parts = [FILLER.format(i=i) for i in range(12)]
    parts[2], parts[6], parts[10] = OTHER_RANGE.format(i=2), ELK.format(i=6), RANGE.format(i=10)
    return "".join(parts)


def _first_hop_only(request: ChatRequest) -> str:
    """A model that picks the sentence about Elk Valley and never the one about the range's highest peak."""
    prompt = request.messages[-1].content
    if "<evidence>" in prompt:
        return "\\boxed{High Knob}" if "High Knob" in prompt else "\\boxed{unknown}"
    return ", ".join(str(n) for n, t in enumerate(passage(prompt), 1) if t.startswith("Elk Valley is")) or "none"


@pytest.mark.parametrize("link", [True, False])
def test_the_sentence_about_what_the_evidence_names_that_shares_the_question_s_words_is_linked(link: bool) -> None:
    settings = Settings(**{**SETTINGS.to_dict(), "options": {"link": link, "cutoff": 0.0}})
    events, results, _ = run(settings, questions=(BRIDGE,), text=_bridge_document(),
                             backend=FakeBackend(_first_hop_only, tokenizer=CharTokenizer()))
    steps = [e for e in events if isinstance(e, StepFinished)]
    memory = results[0].memory
    assert "Elk Valley is a small community" in memory
    # The other range shares the question's words ("highest peak", "Mountains") but nothing the evidence
    # names: never linked, whether or not it was read.
    assert "Botev" not in memory
    if link:
        linked = [s for s in steps if s.decisions["linked"]]
        assert [s.decisions["linked"] for s in linked] == [[  # with the sentence before it, as a pick is kept
            "The Cumberland Mountains lie in Tennessee and Kentucky. Their highest peak is High Knob, near Norton."]]
        assert "linked 1 about what the evidence names" in linked[0].summary
        assert results[0].answer == "High Knob"
    else:
        assert "High Knob" not in memory and results[0].answer == "unknown"
    # A link is code's guess, not new evidence: reading stops after `patience` chunks without a pick either way.
    assert [e.reason for e in events if isinstance(e, LaneExited)] == ["evidence found; 2 new chunk(s) in a row added none"]


BAND_QUESTION = "Who is the current drummer of the band who did the song Lovers Do?"
SONG = "Document {i}:\nLovers Do\nLovers Do is a 2017 song by the pop band Maroon Five.\n\n"
BAND = ("Document {i}:\nMaroon Five\nMaroon Five is a pop rock band from Los Angeles. It consists of "
        "singer Adam Levine and drummer Matt Flynn.\n\n")
YEAR = ("Document {i}:\nThe Unguided\nThe Unguided is a metal band. In 2017 the band found its current drummer, "
        "Richard Schill.\n\n")


def test_a_link_reads_the_sentence_with_the_next_one_of_its_paragraph_and_never_links_by_a_year() -> None:
    parts = [FILLER.format(i=i) for i in range(12)]
    parts[3], parts[7], parts[10] = SONG.format(i=3), BAND.format(i=7), YEAR.format(i=10)

    def song_only(request: ChatRequest) -> str:
        prompt = request.messages[-1].content
        if "<evidence>" in prompt:
            return "\\boxed{Matt Flynn}" if "Matt Flynn" in prompt and "Schill" not in prompt else "\\boxed{unknown}"
        return ", ".join(str(n) for n, t in enumerate(passage(prompt), 1) if t.startswith("Lovers Do is")) or "none"

    settings = Settings(**{**SETTINGS.to_dict(), "options": {"cutoff": 0.0, "patience": 3}})
    events, results, _ = run(settings, questions=(BAND_QUESTION,), text="".join(parts),
                             backend=FakeBackend(song_only, tokenizer=CharTokenizer()))
    linked = [t for e in events if isinstance(e, StepFinished) for t in e.decisions["linked"]]
    # "band" in one sentence, "drummer" in the next: together they share two words with the question.
    assert linked == ["Maroon Five is a pop rock band from Los Angeles. It consists of singer Adam Levine and "
                      "drummer Matt Flynn."]
    assert results[0].answer == "Matt Flynn"


def _picks_film(request: ChatRequest) -> str:
    """``reader``, also picking a filler sentence that shares one word ("film") with the question."""
    prompt = request.messages[-1].content
    if "<evidence>" in prompt:
        return reader(request)
    return ", ".join(str(n) for n, t in enumerate(passage(prompt), 1) if "Corliss" in t or "film house" in t) or "none"


def test_a_pick_the_full_memory_drops_at_once_is_not_new_evidence() -> None:
    # A pick that the bound drops in the same step was never kept: reported as kept, it reset patience, and a
    # question whose memory was full never stopped before max_read.
    text = document().replace("Gulls nested on the pier.", "Gulls nested by the film house.")
    settings = Settings(**{**SETTINGS.to_dict(), "memory_tokens": 150,
                           "options": {"cutoff": 0.0, "patience": 1, "cover": False, "link": False}})
    events, _, _ = run(settings, text=text, backend=FakeBackend(_picks_film, tokenizer=CharTokenizer()))
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert [s.decisions["dropped"] for s in steps] == [1, 1]
    assert steps[1].summary == "nothing kept, dropped 1 (memory full)" and steps[1].decisions["kept"] == []
    assert [e.reason for e in events if isinstance(e, LaneExited)] == [
        "evidence found; 1 new chunk(s) in a row added none"]
    assert "Corliss Archer" in steps[-1].memory and "film house" not in steps[-1].memory


def test_max_read_bounds_a_question_without_the_exit_gate_too_and_says_so() -> None:
    settings = Settings(**{**SETTINGS.to_dict(), "options": {"exit_gate": False, "max_read": 0.2}})
    events, _, _ = run(settings)
    total = len(chunks(document()))
    assert sum(isinstance(e, StepStarted) for e in events) == -(-total * 2 // 10) < total
    assert [e.reason for e in events if isinstance(e, LaneExited)] == [
        f"read {-(-total * 2 // 10)} of {total} chunks (max_read 0.2)"]


def test_the_question_s_ranking_depends_on_the_chunks_read_not_on_what_was_asked_before(monkeypatch: pytest.MonkeyPatch) -> None:
    # A resumed run starts with no cache: what it ranks must not depend on the lists a first run asked for.
    from memread.strategies import evidence

    monkeypatch.setattr(evidence, "CANDIDATES", 2)
    text = "".join(f"Document {i}:\nArcher notes {i}\n" + "Corliss Archer filed a note. " * (1 + i % 4) + "\n\n"
                   for i in range(12))
    first, resumed = (EvidenceStrategy(Settings(strategy="evidence")) for _ in range(2))
    for strategy in (first, resumed):
        strategy.index(chunks(text, budget=80))
    first._question_top(QUESTION, 0)
    assert first._question_top(QUESTION, 1) == resumed._question_top(QUESTION, 1)
    assert len(resumed._question_top(QUESTION, 1)) == 3
    for strategy in (first, resumed):
        strategy.close()


def test_without_picks_a_long_read_searches_only_the_best_matching_chunks_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from memread.strategies import evidence

    monkeypatch.setattr(evidence, "FALLBACK_CHUNKS", 2)
    searched: list[set[int]] = []

    class Counting(evidence.TextIndex):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            searched.append(set())

        def add(self, key: int, text: str) -> None:
            searched[-1].add(key // (evidence.MAX_UNITS + 1))
            super().add(key, text)

    monkeypatch.setattr(evidence, "TextIndex", Counting)
    settings = Settings(**{**SETTINGS.to_dict(), "options": {"cover": False, "exit_gate": False}})
    _, results, _ = run(settings, backend=FakeBackend(_silent, tokenizer=CharTokenizer()))
    assert max(len(chunks_indexed) for chunks_indexed in searched) == 2 and len(searched) == len(chunks(document()))
    assert "Corliss Archer" in results[0].memory


def test_an_entry_longer_than_the_memory_is_cut_at_a_word_with_its_place() -> None:
    line = "Kiss and Tell starred Shirley Temple as Corliss Archer, " + "a part she played again on the radio, " * 6
    text = "Document 7:\nKiss and Tell (1945 film)\n" + line.strip() + ".\n\n" + "".join(
        FILLER.format(i=i) for i in range(3))
    settings = Settings(**{**SETTINGS.to_dict(), "memory_tokens": 120})
    events, _, _ = run(settings, text=text)
    step = [e for e in events if isinstance(e, StepFinished)][0]
    entry = step.state["evidence"][0]
    assert len(step.memory) <= 120 and step.memory.endswith(" …") and entry["cut"]
    assert entry["text"] in " ".join(line.split()) and entry["text"].startswith("Kiss and Tell starred")
    assert entry["where"] == "hqa.txt line 3"


def test_indexing_says_how_far_it_is_before_the_first_read_and_the_trace_keeps_the_chunk_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memread import loop
    from memread.events import Indexed

    monkeypatch.setattr(loop, "INDEX_PROGRESS_SECONDS", 0.0)
    events, _, _ = run(SETTINGS)
    total = len(chunks(document()))
    indexed = [e for e in events if isinstance(e, Indexed)]
    first_read = next(i for i, e in enumerate(events) if isinstance(e, StepStarted))
    assert [e.chunks for e in indexed] == [*range(1, total + 1), total] and indexed[-1].done
    assert events.index(indexed[-1]) < first_read and not any(e.done for e in indexed[:-1])
    assert indexed[-1].tokens == sum(c.tokens for c in chunks(document()))
    path = tmp_path / "run.jsonl"
    writer = TraceWriter(path)
    Loop(FakeBackend(reader, tokenizer=CharTokenizer()), [QUESTION], SETTINGS, [writer],
         document="hqa.txt").run(chunks(document()))
    writer.close()
    from memread.cli.player import Player

    assert path.read_text().count('"indexed"') == 1 and read_trace(path).steps()
    player = Player(read_trace(path))
    read = len({s.chunk.index for s in read_trace(path).steps()})
    assert player.state().total == total > read and player.state().chunks_done == read  # not "3/3 100 %"


NEEDLE_QUESTION = "What is the special magic number for dry-gate mentioned in the provided text?"


def _needle_document() -> str:
    parts = [FILLER.format(i=i) for i in range(10)]
    parts[3] = parts[3].replace("Gulls nested on the pier.", "It was like being told to use dry water.")
    parts[6] = parts[6].replace("Gulls nested on the pier.",
                                "Gulls nested on the pier. One of the special magic numbers for dry-gate is: 8841720.")
    return "".join(parts)


def _misses_the_needle(request: ChatRequest) -> str:
    """A model that picks the sentence about dry water (sharing "dry" with the question), never the needle, and
    answers from the evidence it is shown."""
    prompt = request.messages[-1].content
    if "<evidence>" in prompt:
        return "\\boxed{8841720}" if "8841720" in prompt.split("<problem>")[0] else "\\boxed{1}"
    return ", ".join(str(n) for n, t in enumerate(passage(prompt), 1) if "dry water" in t) or "none"


@pytest.mark.parametrize("ids", [False, True])
def test_with_ids_a_needle_s_key_is_a_name_that_code_keeps_when_the_model_misses_it(ids: bool) -> None:
    settings = Settings(**{**SETTINGS.to_dict(), "options": {"ids": ids}})
    events, results, _ = run(settings, questions=(NEEDLE_QUESTION,), text=_needle_document(),
                             backend=FakeBackend(_misses_the_needle, tokenizer=CharTokenizer()))
    memory = [e for e in events if isinstance(e, StepFinished)][-1].memory
    assert ("8841720" in memory) is ids and "dry water" in memory
    assert results[0].answer == ("8841720" if ids else "1")


def test_identifiers_are_compounds_and_words_with_digits() -> None:
    from memread.strategies.evidence import _names_in

    assert _names_in(NEEDLE_QUESTION) == [] and _names_in(NEEDLE_QUESTION, ids=True) == ["dry", "gate"]
    assert _names_in("When did backup_nightly fail on db01.prod via eth0 in 2024?", ids=True) == [
        "2024", "backup_nightly", "db01", "prod", "eth0"]
    assert _names_in("Which sentence ends here. Then what?", ids=True) == []
