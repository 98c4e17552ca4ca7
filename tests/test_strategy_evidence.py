"""The evidence strategy: real document structure, the best passages read together, answers checked against
the document's own words, counts made in code, "the document does not say" when it does not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memread.backends.base import ChatRequest
from memread.backends.fake import FakeBackend
from memread.chunk import Chunker
from memread.document import Chunk, Provenance, Segment
from memread.events import Event, StepFinished
from memread.loop import LaneResult, Loop
from memread.settings import Settings
from memread.strategies.evidence import (
    EvidenceStrategy,
    answer,
    boilerplate,
    keeping,
    parts,
    questions,
    reading,
)
from memread.strategies.evidence.units import BOILERPLATE, HEADING, LINE, SENTENCE, units
from memread.tokens import CharTokenizer

# --- numbering: units from the text's own structure ------------------------------------------------------


def test_a_logs_short_lines_are_units_of_their_own_and_none_is_taken_for_a_heading() -> None:
    log = ("Running target unix\nPASS: gcc.dg/a.c\nFAIL: gcc.dg/b.c  -O2 (test for excess errors)\n"
           "Nov 25 10:00:03 host sshd[42]: Accepted key for root\n")
    found = units(log)
    assert [u.text for u in found] == log.strip().splitlines()
    assert not any(u.kind == HEADING for u in found)
    assert {u.kind for u in found} <= {LINE, SENTENCE}


def test_prose_wrapped_at_a_fixed_width_is_cut_into_sentences_not_lines() -> None:
    text = ("Query or set the internal variable that specifies how many entries to store in the\n"
            "history file.\n"
            "The default value is 1000, but may be overridden by the environment variable\n"
            "OCTAVE_HISTSIZE.\n")
    assert [u.text for u in units(text)] == [
        "Query or set the internal variable that specifies how many entries to store in the history file.",
        "The default value is 1000, but may be overridden by the environment variable OCTAVE_HISTSIZE."]


def test_a_changelog_items_wrapped_lines_stay_with_the_item_under_its_entry_header() -> None:
    text = ("binutils (2.40-2) unstable; urgency=high\n\n"
            "  * binutils 2.40 release.\n"
            "    - PR bfd/29988, Fix a potential illegal memory access in the BFD library\n"
            "      when parsing a corrupt DWARF file.\n"
            "  * Refresh patches.\n")
    texts = [u.text for u in units(text)]
    assert "- PR bfd/29988, Fix a potential illegal memory access in the BFD library when parsing a corrupt " \
           "DWARF file." in texts
    assert "* Refresh patches." in texts


@pytest.mark.parametrize(("line", "heading"), [
    ("2.4.5 Commands for Manipulating the History", True),
    ("12.1. RAID and LVM", True),
    ("Chapter 3. Inputs", True),
    ("=== g++ Summary ===", True),
    ("# of unexpected failures\t21", False),  # a log's record, not a Markdown heading (those come from the outline)
    ("Running target unix", False),  # short, unnumbered: a line, not a heading
    ("Prev", False),
    ("1 A Brief Introduction to Octave", True),
    ("2328 tests passed", False),
])
def test_a_heading_is_what_the_text_marks_as_one_not_a_short_line(line: str, heading: bool) -> None:
    assert (units(line + "\n")[0].kind == HEADING) is heading


# --- boilerplate -------------------------------------------------------------------------------------------


def _pages(texts: list[str], labels: list[str] | None = None) -> list[Chunk]:
    segments = [Segment(text + "\n\n", Provenance("manual.pdf", page=n, page_label=(labels or [])[n - 1]
                                                  if labels else str(n)))
                for n, text in enumerate(texts, 1)]
    return list(Chunker(CharTokenizer(), 400).chunks(segments))


def test_dot_leaders_of_a_table_of_contents_or_an_index_are_boilerplate() -> None:
    found = boilerplate.detect(_pages(["Intro"]))
    assert found("1.2.5 Integrating Differential Equations. . . . . . . . . . 9")
    assert found("history_size . . . . . . . . 32")
    assert not found("The default value is 1000.")


def test_a_running_header_with_the_pages_number_is_boilerplate_and_names_the_pages_chapter() -> None:
    pages = [f"{n} Chapter {2 if n < 5 else 3}: {'Getting Started' if n < 5 else 'Data Types'}\nText of page {n} "
             "about history.\nMore text." if n % 2 else f"GNU Octave (version 7.3.0) {n}\nText of page {n}.\nMore."
             for n in range(1, 9)]
    chunks = _pages(pages)
    found = boilerplate.detect(chunks)
    assert found("3 Chapter 2: Getting Started") and found("GNU Octave (version 7.3.0) 4")
    assert not found("Text of page 3 about history.")
    assert found.page_context[("manual.pdf", 3)] == "Chapter 2: Getting Started"
    assert found.page_context[("manual.pdf", 4)] == "Chapter 2: Getting Started"  # the title page inherits


def test_navigation_repeated_across_many_pages_of_a_folder_is_boilerplate() -> None:
    topics = ["ferries", "gulls", "markets", "tides", "harbours", "boats", "nets", "piers", "storms", "lights",
              "docks", "cranes"]
    segments = [Segment(f"Prev\nUp\nNext\nThis page explains {topic} at length.\n\n", Provenance(f"p{n}.html"))
                for n, topic in enumerate(topics)]
    found = boilerplate.detect(Chunker(CharTokenizer(), 400).chunks(segments))
    assert found("Prev") and found("Next")
    assert not found("This page explains tides at length.")
    assert any(u.kind == BOILERPLATE for u in units("Prev\nThis page explains tides.\n", boilerplate=found))


# --- reading: the answer as the document writes it -----------------------------------------------------------


@pytest.mark.parametrize(("said", "text", "snapped"), [
    ("OCTAVE-JAVA-DIR", "specified by the environment variable OCTAVE_JAVA_DIR. If unset", "OCTAVE_JAVA_DIR"),
    ("octave_java_dir", "variable OCTAVE_JAVA_DIR.", "OCTAVE_JAVA_DIR"),
    ("5 days", "must stay in unstable 15 days", None),
    ("100000", "Maximum number of steps allowed (default is 100000).", "100000"),
    ("help request@octave.org", "write to help-request@octave.org to join", "help-request@octave.org"),
    # a list, its items joined as the text joins them; in the same order only, and all of them
    ("lu, qr", "returned from the built-in functions lu and qr, if pivoted", "lu and qr"),
    ("inv and lu", "Examples include inv, or lu.", "inv, or lu"),
    ("lu/qr", "lu, qr", "lu, qr"),
    ("qr, lu", "the built-in functions lu and qr", None),
    ("lu, qr, chol", "the built-in functions lu and qr", None),
    ("lu, qr", "lu then qr", None),
])
def test_an_answer_is_taken_as_the_document_spells_it_or_not_at_all(said: str, text: str,
                                                                     snapped: str | None) -> None:
    assert reading.snap(said, text) == snapped


def test_a_section_number_on_a_heading_is_no_answer() -> None:
    heading, line = units("1.2.3. piuparts\nIt installs 3 packages.\n")
    assert heading.heading and reading.numbering_only("3", heading)
    assert not reading.numbering_only("piuparts", heading)
    assert not reading.numbering_only("3", line)


def test_a_steps_answer_is_its_box_and_none_means_no_answer() -> None:
    assert reading.step_answer("\\boxed{OCTAVE_JAVA_DIR}") == "OCTAVE_JAVA_DIR"
    assert reading.step_answer("\\boxed{none}") is None
    assert reading.step_answer("It is lsode.\nMore.") == "It is lsode"
    # cut off at the reply's limit inside its box, as a line copied whole is: the words, without the box
    assert reading.step_answer("\\boxed{binutils (2.21-1) unstable; urgency=low * Update") == (
        "binutils (2.21-1) unstable; urgency=low * Update")


# --- questions about the whole document --------------------------------------------------------------------


@pytest.mark.parametrize(("question", "kind"), [
    ("How many XPASS results are listed in the whole log?", questions.COUNT),
    ("How many changelog entries are marked urgency=high?", questions.COUNT),
    ("How many days was the Widow's Pier closed after the February storm?", questions.LOOKUP),
    ("How many seconds did the testsuite take to run?", questions.LOOKUP),
    ("List every test that failed.", questions.LIST),
    ("What is the first libgomp test reported as FAIL?", questions.FIRST),
    ("Which is the last entry signed by Matthias Klose?", questions.LAST),
    ("Octave was first meant as companion software for a textbook. Who wrote it?", questions.LOOKUP),
    ("Which environment variable sets the directory of java.opts?", questions.LOOKUP),
    # a question offering its answers compares what it names; "the first name" is a kind of name
    ("Which upload came first, 2.38-1 or 2.39-1?", questions.LOOKUP),
    ("Which is the latest release: 2.38, 2.39 or 2.40?", questions.LOOKUP),
    ("Which test failed first, pr123.c, pr124.c or pr125.c?", questions.LOOKUP),
    ("What is the last name of the maintainer who signed the 2.7-3 upload?", questions.LOOKUP),
    ("What is the first name in the list of uploaders?", questions.FIRST),  # here an ordinal
    ("What is the first test reported as FAIL in gcc, g++ or gfortran?", questions.FIRST),  # conditions
    ("How many tests failed in gcc, g++ or gfortran?", questions.COUNT),
    ("Which tests failed in gcc, g++ or gfortran?", questions.LIST),
])
def test_questions_about_the_whole_document_are_told_from_lookups(question: str, kind: str) -> None:
    assert questions.question_kind(question) == kind


def test_a_questions_identifiers_are_anchors_as_phrases() -> None:
    assert questions.anchors("How many changelog entries are marked urgency=high?")[:1] == ["urgency high"]
    assert "libgomp fortran" in questions.anchors("What is the first libgomp Fortran test (under libgomp.fortran/) "
                                                "reported as FAIL?")
    assert "xpass" in questions.anchors("How many XPASS results are listed?")


CHANGELOG = ("tool (2.0-2) unstable; urgency=low\n\n  * Fix the build on hurd.\n  * Update the docs.\n\n"
             " -- Ann Example <ann@example.org>  Sat, 07 Jan 2012 09:07:25 +0100\n\n"
             "tool (2.0-1) unstable; urgency=low\n\n  * Don't bump the soversion (revert the change in 1.9-3).\n"
             "  * Recognize Go.\n\n -- Bob Example <bob@example.org>  Tue, 03 Jan 2012 06:06:20 +0100\n\n"
             "tool (1.9-3) unstable; urgency=low\n\n  * Bump the soversion.\n\n"
             " -- Bob Example <bob@example.org>  Sun, 01 Jan 2012 10:00:00 +0100\n")


def test_a_passage_naming_the_questions_identifier_comes_before_one_sharing_only_its_other_words() -> None:
    """A test log: the question's rarer words head the log, the test it names is on one line of many alike, and
    "excess-errors" is on every line: only the test's own name identifies its passage."""
    from memread.strategies.evidence.ranking import Passages

    log = "Test results of the optimization option sweep for libgomp\n"
    log += "".join(f"FAIL: libgomp.fortran/case-{n}.f90   -O3  (test for excess errors)\n" for n in range(30))
    log += "FAIL: libgomp.fortran/error-1.f90   -O  (test for excess errors)\n"
    log += "".join(f"FAIL: libgomp.fortran/late-{n}.f90   -O2  (test for excess errors)\n" for n in range(30))
    chunks = list(Chunker(CharTokenizer(), 400).chunks([Segment(log, Provenance("log", line_start=1))]))
    held = next(c.index for c in chunks if "error-1.f90" in c.text)
    passages = Passages(chunks)
    assert 2 * len(passages.index.matching('"excess errors"')) >= len(passages)  # on every passage: no identifier
    question = ("In the libgomp test results, at which optimization option did libgomp.fortran/error-1.f90 fail its "
                "excess-errors test?")
    assert passages.rank(question, [], skip=set(), limit=1)[0][0] == held
    passages.close()


def test_a_passage_that_begins_inside_a_record_is_read_under_the_records_first_line() -> None:
    from memread.strategies.evidence.ranking import Passages, open_record

    chunks = list(Chunker(CharTokenizer(), 190).chunks([Segment(CHANGELOG, Provenance("changelog", line_start=1))]))
    cut = next(c.index for c in chunks if c.text.startswith("  * Don't bump"))
    assert chunks[cut - 1].text.endswith("tool (2.0-1) unstable; urgency=low\n\n")  # cut from its items
    passages = Passages(chunks)
    assert passages.records[cut] == "tool (2.0-1) unstable; urgency=low"
    strategy = EvidenceStrategy(Settings(strategy="evidence"))
    strategy._passages = passages
    shown = strategy._shown(cut)
    assert shown.text().startswith("tool (2.0-1) unstable; urgency=low\n* Don't bump")  # shown above its items
    every = passages.units(cut)
    heads = [keeping.entry(chunks[cut], every, i, "", step=1, how="answer", record=passages.records[cut])["head"]
             for i in range(len(every))]
    assert every[-1].text == "tool (1.9-3) unstable; urgency=low"  # the passage holds the next entry's header too
    assert heads[0] == heads[-2] == "tool (2.0-1) unstable; urgency=low"  # its items and trailer: the chunk before's
    assert heads[-1] == ""  # not the next entry's header
    question = "The 2.0-1 upload reverts a change made in an earlier upload. On what date was that earlier upload made?"
    assert passages.rank(question, [], skip=set(), limit=1)[0][0] == cut  # its items, where the answer is
    # Lines aligned in columns (a program's output) are no record: an indented line that is not a list item
    assert open_record(units("Profile:  /usr/sbin/dhclient\nSeverity: 2\n"), units("   Raid Devices : 2\n")) == ""
    passages.close()


def test_a_banner_a_log_centres_with_tabs_is_kept_alone_not_under_the_line_above() -> None:
    log = ("FAIL: libstdc++-prettyprinters/libfundts.cc print as\n\n\t\t=== libstdc++ Summary ===\n\n"
           "# of expected passes\t\t16106\n\nbinutils (2.30-4) unstable\n\n  * Fix the build.\n")
    chunk = next(Chunker(CharTokenizer(), 400).chunks([Segment(log, Provenance("test.log", line_start=1))]))
    every = units(chunk.text)
    banner = next(i for i, u in enumerate(every) if u.heading)
    assert every[banner].indent == 16
    assert keeping.entry(chunk, every, banner, "", step=1, how="answer")["text"] == "=== libstdc++ Summary ==="
    item = next(i for i, u in enumerate(every) if u.text.startswith("* Fix"))  # an item still comes with its header
    assert keeping.entry(chunk, every, item, "", step=1, how="answer")["text"].startswith("binutils (2.30-4)")


def test_a_label_in_a_lookup_comes_with_the_lines_it_labels_and_heads_them() -> None:
    text = ("binutils (2.21-3) experimental; urgency=low\n\n  [ Matthias Klose ]\n"
            "  * Don't include `-system' in the bfd version identifier.\n  * Build gold on all targets.\n"
            "  * Update symbols files.\n  * Drop a patch.\n\n  [ Sedat Dilek ]\n  * 160_pr12327.patch: Fix PR ld/12327.\n\n"
            " -- Matthias Klose <doko@debian.org>  Mon, 10 Jan 2011 12:00:00 +0100\n\n"
            "[Service]\nExecStart=/usr/sbin/sshd -D\nRestart=always\n\n[1]\nA footnote.\n")
    chunk = next(Chunker(CharTokenizer(), 900).chunks([Segment(text, Provenance("changelog", line_start=1))]))
    every = units(chunk.text)
    at = {u.text: i for i, u in enumerate(every)}

    def kept(text: str, lookup: bool = True) -> dict:
        return keeping.entry(chunk, every, at[text], "", step=1, how="answer", lookup=lookup)

    sedat = kept("[ Sedat Dilek ]")
    assert sedat["text"].endswith("[ Sedat Dilek ] * 160_pr12327.patch: Fix PR ld/12327.")  # not the sign-off
    assert "Matthias Klose <doko" not in sedat["text"]
    assert kept("[ Sedat Dilek ]", lookup=False)["text"].endswith("[ Sedat Dilek ]")  # the collect path's, as was
    assert kept("[ Matthias Klose ]")["text"].endswith("* Update symbols files.")  # three lines it labels at most
    drop = kept("* Drop a patch.")
    assert drop["text"] == "* Drop a patch." and drop["head"] == "binutils (2.21-3) experimental; urgency=low [ Matthias Klose ]"
    assert kept("* Drop a patch.", lookup=False)["head"] == "binutils (2.21-3) experimental; urgency=low"
    assert kept("[Service]")["text"] == "[Service] ExecStart=/usr/sbin/sshd -D Restart=always"
    assert kept("Restart=always")["head"] == "[Service]"
    assert kept("[1]")["text"] == "[1]"  # a footnote mark is no label


def test_a_sentence_opening_with_a_connective_comes_with_the_one_before_in_a_lookup() -> None:
    text = ("Seek to use built-in functions. For example, one could use a handle to @plus or define an anonymous "
            "function. But, the anonymous function is 60% slower than the first method.\n\nHowever, a new "
            "paragraph begins here.\n")
    chunk = next(Chunker(CharTokenizer(), 900).chunks([Segment(text, Provenance("manual", line_start=1))]))
    every = units(chunk.text)
    at = {u.text.split(",")[0]: i for i, u in enumerate(every)}

    def kept(opening: str, lookup: bool = True) -> str:
        return str(keeping.entry(chunk, every, at[opening], "", step=1, how="answer", lookup=lookup)["text"])

    assert kept("But").startswith("For example, one could use a handle to @plus")  # what "the first method" is
    assert kept("But", lookup=False).startswith("But, the anonymous")  # the collect path's entries, as they were
    assert kept("For example").startswith("Seek to use built-in functions.")
    assert kept("However").startswith("However, a new")  # the paragraph before is not this sentence's
    assert keeping.points_back("It is slower.") and not keeping.points_back("But it is.")
    assert keeping.points_back("But it is.", connectives=True) and not keeping.points_back("Butter.", connectives=True)


def test_headings_are_grouped_by_numbering_and_scoped_under_a_named_section() -> None:
    text = ("1.1. Package tools\n\n1.2. Package lint tools\n\n1.2.1. lintian\n\n1.2.2. debdiff\n\n"
            "1.2.3. duck\n\n1.3. Helpers\n\n1.3.1. debhelper\n")
    found = [({"text": u.text, "where": "p", "chunk": 0, "start": u.start}, u) for u in units(text)]
    scope = parts.section_number("Package lint tools", (u.text for _, u in found))
    assert scope == "1.2"
    groups = parts.group_headings(found, scope)
    assert [g.count for g in groups] == [3]


# --- the answer ------------------------------------------------------------------------------------------


def test_of_lines_as_much_about_the_question_the_one_holding_its_words_is_best() -> None:
    # With its neighbours, the "Update" line shares as many of the question's words as the riscv64 line below it
    # (binutils-changelog-02 of the design set kept it, and the upload's version was lost with the right line).
    entry = ("tool (2.30-4) unstable; urgency=high\n\n  * Update, taken from the 2.30 branch 20180209.\n"
             "    - Fix PR 22788 (CVE-2018-6872).\n  * tool-multiarch: Add riscv64 support.\n  * Bump dpkg version.\n")
    shown = reading.Shown(0, "changelog", tuple(units(entry)))
    question = "Which upload added riscv64 support to tool-multiarch?"
    (_, best), = reading.best_lines(question, [shown], count=1)
    assert shown.units[best].text == "* tool-multiarch: Add riscv64 support."
    assert reading.support(question, shown, best) == reading.support(question, shown, best - 1)


def test_an_answer_the_evidence_does_not_hold_becomes_the_document_does_not_say() -> None:
    lines = "The directory is given by the environment variable OCTAVE_JAVA_DIR."
    assert answer.settle_lookup("octave-java-dir", lines, None) == "OCTAVE_JAVA_DIR"
    assert answer.settle_lookup("CUDA 11.2", lines, None) == answer.DOES_NOT_SAY
    assert answer.settle_lookup("not in the document", lines, None) == answer.DOES_NOT_SAY
    assert answer.settle_lookup("anything", "", None) == answer.DOES_NOT_SAY


def test_a_count_is_one_code_made_or_one_the_passages_state() -> None:
    assert answer.settle_count("50", [50, 8]) == "50"
    assert answer.settle_count("about 48", [50]) == "50"  # not a count memread made: its own count
    assert answer.settle_count("12 days", [3], ["12"]) == "12"  # a passage read stated it
    assert answer.settle_count("2", [11], ["1.2"]) == "11"  # a section number is no count


# --- the strategy, end to end with a scripted model ---------------------------------------------------------

MANUAL = ["Intro to the tool. It reads files and writes reports every day.",
          "The history is kept in a file. Many commands are stored.",
          "The history file keeps entries: the default value of history_size is 1000, but may be overridden.",
          "Plotting draws figures. Figures have axes and titles.",
          "Java options live in java.opts, in the directory named by OCTAVE_JAVA_DIR (on x86_64 too).",
          *(f"Filler page {n} about matrices and vectors and sums." for n in range(5, 12))]


def manual_chunks() -> list[Chunk]:
    segments = [Segment(text + "\n\n", Provenance("manual.pdf", page=n, page_label=str(n)))
                for n, text in enumerate(MANUAL, 1)]
    return list(Chunker(CharTokenizer(), 120).chunks(segments))


def reader(answers: dict[str, str]):  # type: ignore[no-untyped-def]
    """A model that answers each question from the passages (or lines) it is shown when they hold a key word."""

    def reply(request: ChatRequest) -> str:
        prompt = request.messages[-1].content
        for word, said in answers.items():
            if word in prompt.split("Question:")[0]:
                return said + "}"
        return "not in the document}"

    return reply


def run(questions: list[str], answers: dict[str, str], chunks: list[Chunk] | None = None,
        **options: object) -> tuple[list[LaneResult], list[Event], FakeBackend]:
    backend = FakeBackend(reader(answers), continues_replies=True)
    events: list[Event] = []
    loop = Loop(backend, questions, Settings(strategy="evidence", options=dict(options)), sinks=[events.append])
    return loop.run(chunks or manual_chunks()), events, backend


def test_a_lookup_reads_the_best_passages_and_answers_in_the_documents_own_words() -> None:
    results, events, backend = run(["What is the default value of history_size unless overridden?"],
                                   {"history_size": "1000"})
    assert results[0].answer == "1000"
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert "history_size" in steps[0].chunk.text  # the passage holding history_size is read first
    assert steps[0].decisions["found"]["answer"] == "1000"
    assert steps[-1].decisions["confirmed"] == "1000"  # the select step answered from the kept line
    assert "history_size is 1000" in results[0].memory


def test_early_ends_a_round_at_an_answer_on_a_line_sharing_enough_of_the_questions_words() -> None:
    question = "What is the default value of the history size unless overridden?"  # no identifier to hold
    pages = [MANUAL[2], *(f"Unless overridden, the {name} size has a default value of {n}." for n, name in
                          enumerate(("cache", "buffer", "page", "stack", "queue", "window"))),
             *(f"Filler page {n} about matrices and vectors and sums." for n in range(40))]
    segments = [Segment(text + "\n\n", Provenance("manual.pdf", page=n)) for n, text in enumerate(pages, 1)]
    chunks = list(Chunker(CharTokenizer(), 120).chunks(segments))
    whole, _, _ = run([question], {"history_size": "1000"}, chunks)
    early, events, _ = run([question], {"history_size": "1000"}, chunks, early=3)
    assert early[0].answer == whole[0].answer == "1000"
    assert early[0].steps == 2 and whole[0].steps > 5  # read and select, against the round's other passages
    assert [e.decisions.get("confirmed") for e in events if isinstance(e, StepFinished)] == [None, "1000"]
    never, _, _ = run([question], {"history_size": "1000"}, chunks, early=20)  # no line shares 20 of its words
    assert never[0].steps == whole[0].steps


def test_a_round_ends_at_an_answer_on_a_line_saying_nearly_all_the_question_says() -> None:
    from memread.strategies.evidence.reading import holds_question

    pages = ["Unless overridden, the history size has a default value of 1000.",
             *(f"The {name} size has a default value of {n}." for n, name in
               enumerate(("cache", "buffer", "page", "stack", "queue", "window"))),
             *(f"Filler page {n} about matrices and vectors and sums." for n in range(40))]
    segments = [Segment(text + "\n\n", Provenance("manual.pdf", page=n)) for n, text in enumerate(pages, 1)]
    chunks = list(Chunker(CharTokenizer(), 120).chunks(segments))
    question = "What is the default value of the history size unless overridden?"  # 6 words, all on the line
    results, events, _ = run([question], {"history size": "1000"}, chunks)
    assert results[0].answer == "1000" and results[0].steps == 2  # read, then the select step at once
    assert [e.decisions.get("confirmed") for e in events if isinstance(e, StepFinished)] == [None, "1000"]
    # A question the line says less of (as a first hop's line, in a question about two places) reads its round
    longer = "Which manual gives the default value of the history size unless overridden, in its chapter on shells?"
    assert not holds_question(longer, {"support": 6}) and holds_question(question, {"support": 5})
    assert not holds_question("What is the history size?", {"support": 2})  # all of 2 words: too few to tell
    on, _, _ = run([longer], {"history size": "1000"}, chunks)
    assert on[0].answer == "1000" and on[0].steps > 2


def test_an_answer_with_other_punctuation_is_settled_to_the_documents_spelling() -> None:
    results, _, _ = run(["Which environment variable names the directory of java.opts?"],
                        {"java.opts": "OCTAVE-JAVA-DIR"})
    assert results[0].answer == "OCTAVE_JAVA_DIR"


def test_a_question_the_document_does_not_answer_ends_with_the_document_does_not_say() -> None:
    from memread.events import Answered, Warned

    results, events, backend = run(["Which CUDA version does gpuArray require?"], {})
    assert results[0].answer == answer.DOES_NOT_SAY
    # said by code, so no final call, and no warning that the model answers from its own knowledge
    assert not any("answer" in str(request.tag) for request in backend.requests)
    assert [e.reply for e in events if isinstance(e, Answered)] == [""]
    assert not any(isinstance(e, Warned) for e in events)


def test_only_the_questions_code_does_not_answer_make_a_final_call() -> None:
    results, _, backend = run(["What is the default value of history_size unless overridden?",
                               "Which CUDA version does gpuArray require?"], {"history_size": "1000"})
    assert [r.answer for r in results] == ["1000", answer.DOES_NOT_SAY]
    assert [r.tag for r in backend.requests if "answer" in str(r.tag)] == ["lane 0, answer"]


def test_a_how_many_question_stated_in_a_passage_is_answered_from_it() -> None:
    results, _, _ = run(["How many entries does history_size keep unless overridden?"], {"history_size": "1000"})
    assert results[0].answer == "1000"  # counted groups were shown too; the passage states it


def test_a_how_many_question_about_the_whole_document_is_counted_by_code() -> None:
    lines = "".join(f"PASS: t{n}.c\n" if n % 3 else f"XPASS: t{n}.c -O2\n" for n in range(60))
    chunks = list(Chunker(CharTokenizer(), 200).chunks([Segment(lines, Provenance("test.log", line_start=1))]))
    results, events, backend = run(["How many XPASS results are listed in the whole log?"], {"Group 1": "1"},
                                   chunks=chunks)
    assert results[0].answer == "20"  # the model only chose the group; 20 is code's count
    collect_prompt = backend.requests[0].messages[-1].content
    assert "Group 1: 20 lines" in collect_prompt


TEST_LOG = "".join(f"PASS: libgomp.c/t{n}.c\n" for n in range(30)) + \
    "FAIL: libgomp.fortran/declare-target-1.f90   -O0  (test for excess errors)\n" + \
    "".join(f"PASS: libgomp.c/u{n}.c\n" for n in range(30)) + "FAIL: libgomp.fortran/target10.f90   -O2\n"


@pytest.mark.parametrize(("said", "answered"), [
    ("libgomp.fortran/declare-target-1.f90", "libgomp.fortran/declare-target-1.f90"),  # found in the item
    ("FAIL", "FAIL: libgomp.fortran/declare-target-1.f90 -O0 (test for excess errors)"),  # the question's word
    ("libgomp.fortran/target10.f90", "FAIL: libgomp.fortran/declare-target-1.f90 -O0 (test for excess errors)"),
])
def test_a_first_question_is_answered_from_the_item_code_found(said: str, answered: str) -> None:
    chunks = list(Chunker(CharTokenizer(), 300).chunks([Segment(TEST_LOG, Provenance("test.log", line_start=1))]))
    results, _, _ = run(["What is the first libgomp Fortran test reported as FAIL?"],
                        {"Group 1": "1", "excess errors": said}, chunks=chunks)
    assert results[0].answer == answered


def test_a_last_question_may_be_answered_by_its_items_header() -> None:
    changelog = "".join(f"tool ({v}.0-1) unstable; urgency=medium\n\n  * Build with zstd {v}.\n  * Fix docs.\n\n"
                        for v in range(9, 1, -1))
    chunks = list(Chunker(CharTokenizer(), 300).chunks([Segment(changelog, Provenance("changelog", line_start=1))]))
    results, _, _ = run(["Which is the last upload that builds with zstd?"], {"Group 1": "1", "zstd 2": "2.0-1"},
                        chunks=chunks)
    assert results[0].answer == "2.0-1"  # the entry's version, from its header line
    # the header as the item's head (shown to the model above the item) counts as the item's words
    item = {"text": "* Build with zstd 2.", "head": "tool (2.0-1) unstable"}
    assert answer.settle_item("2.0-1", item, "Which …?") == "2.0-1"
    assert answer.settle_item("2.0-1", {"text": "* Build with zstd 2."}, "Which …?") == "* Build with zstd 2."
    # an item inside a record comes under the record's first line, as a listed one does (own-aggregate-17)
    signed = {"text": "-- Ann <a@x.org>  Sat", "head": "tool (2.0-2) unstable", "record": "tool (2.0-2) unstable"}
    assert answer.settle_item("-- Ann <a@x.org> Sat", signed, "Which …?") == "tool (2.0-2) unstable: Ann <a@x.org> Sat"
    assert answer.settle_item("2.0-2", signed, "Which …?") == "2.0-2"  # the record's own words need no more


def test_an_echo_is_an_answer_made_of_the_questions_own_words_only() -> None:
    assert reading.echoes("FAIL", "What is the first test reported as FAIL?")
    assert not reading.echoes("declare-target-1.f90", "What is the first test reported as FAIL?")
    assert not reading.echoes("", "What?")
    assert reading.repeats_question("Sway", "Which package provides the Sway window manager?")
    assert not reading.repeats_question("Arthur's Magazine", "Which came first, Arthur's Magazine or Time?")
    assert not reading.repeats_question("Blackpool Football Club", "Which football club is based in Blackpool?")
    # "and/or" offers no choice: the question's own words are still no answer
    assert reading.repeats_question("qa.debian.org", "Under inactive and/or unreachable, where on qa.debian.org is it?")


def test_a_line_copied_with_a_slip_is_the_lines_words() -> None:
    lines = ("binutils (2.20-1) unstable; urgency=low * New upstream release.\n"
             "binutils (2.21-5) experimental; urgency=low * Update gold to 1.11. * Add the arm-linux-gnueabi "
             "target to binutils-multiarch (Loic Minier).")
    said = "binutils (2.17-5) experimental; urgency=low * Add the arm-linux-gnueabi target to binutils-multiarch"
    assert reading.snap(said, lines) is None  # one word changed, others left out: not the words in a row
    assert reading.copied(said, lines) == ("binutils (2.21-5) experimental; urgency=low * Update gold to 1.11. * "
                                           "Add the arm-linux-gnueabi target to binutils-multiarch")
    assert answer.settle_lookup(said, lines, None).startswith("binutils (2.21-5)")
    assert reading.copied("binutils (2.17-5) experimental", lines) is None  # short: a value, which must be exact
    assert reading.copied("binutils (2.17-9) stable; urgency=high * Add the arm-linux-gnueabi target", lines) is None


def test_a_select_answer_that_only_repeats_the_question_falls_back_on_the_rounds_best_answer() -> None:
    question = "Where on qa.debian.org is the MIA database?"
    found = [{"answer": "2004", "step": 1, "support": 2}, {"answer": "org/qa.debian.org/mia", "step": 2, "support": 5},
             {"answer": "qa.debian.org", "step": 3, "support": 6}, {"answer": "mia-query", "step": 4, "support": 5}]
    assert answer.best_found(question, found, after=0) == "org/qa.debian.org/mia"  # earliest of the best lines
    assert answer.best_found(question, found, after=2) == "mia-query"  # only this round's
    assert answer.best_found(question, found[2:3], after=0) is None
    lines = "7.4. Inactive maintainers: This system is available in /org/qa.debian.org/mia on the host qa.debian.org."
    assert answer.settle_lookup("qa.debian.org", lines, "org/qa.debian.org/mia",
                                question=question) == "/org/qa.debian.org/mia"
    assert answer.settle_lookup("qa.debian.org", lines, None, question=question) == answer.DOES_NOT_SAY


def test_the_select_step_does_not_take_the_questions_own_words_for_its_answer() -> None:
    """A read step answers from the line holding the value; the select step answers a name the question says:
    the read step's answer stands."""

    def reply(request: ChatRequest) -> str:
        prompt = request.messages[-1].content
        if "[Passage" in prompt:
            return "OCTAVE_JAVA_DIR}" if "java.opts" in prompt else "not in the document}"
        return "java.opts}"  # the select and final steps

    backend = FakeBackend(reply, continues_replies=True)
    events: list[Event] = []
    question = "Which environment variable names the directory of java.opts?"
    results = Loop(backend, [question], Settings(strategy="evidence"), sinks=[events.append]).run(manual_chunks())
    checks = [e.decisions for e in events if isinstance(e, StepFinished) and "check" in e.decisions]
    assert checks and checks[0]["check"] == "java.opts" and checks[0]["confirmed"] == "OCTAVE_JAVA_DIR"
    assert results[0].answer == "OCTAVE_JAVA_DIR"


def test_a_step_answer_that_only_repeats_the_question_keeps_nothing() -> None:
    """The model answers a word of the question at every passage; the select step, shown the line most about the
    question, would answer from it: nothing is kept, and the document does not say."""

    def reply(request: ChatRequest) -> str:
        return ("Sway}" if "[Passage" in request.messages[-1].content else "Plotting}")

    backend = FakeBackend(reply, continues_replies=True)
    events: list[Event] = []
    question = "Which add-on draws the Sway figures?"
    results = Loop(backend, [question], Settings(strategy="evidence"), sinks=[events.append]).run(manual_chunks())
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert steps and all(s.decisions.get("found") is None for s in steps if "answer" in s.decisions)
    assert results[0].answer == answer.DOES_NOT_SAY


@pytest.mark.parametrize(("question", "names"), [
    ("Which upload fixed CVE-2022-38533?", ["CVE-2022-38533"]),
    ("Which upload first built binutils for the loongarch64 architecture?", ["loongarch64"]),
    ("According to the changelog, who made the changes in binutils 2.7-3?", ["2.7-3"]),
    ("Which test under libgomp.fortran/ failed first, and was it x86_64 or riscv64?", ["x86_64", "riscv64"]),
    ("Which film of the 1990s won in 1994, the 3rd year of the 21st-century list?", []),  # years and ordinals
    ("How many entries are marked urgency=high?", []),
])
def test_a_questions_identifiers_are_names_with_digits_and_versions(question: str, names: list[str]) -> None:
    from memread.strategies.evidence.ranking import identifiers

    assert identifiers(question) == names


def test_a_lookup_about_a_name_the_document_never_holds_reads_nothing() -> None:
    results, events, backend = run(["Which CUDA version does gpuArray need on x86-64 with octave9?"], {"gpuArray": "11.2"})
    assert results[0].answer == "The document does not say: it never mentions octave9."  # x86-64: x86_64 below
    assert not [e for e in events if isinstance(e, StepFinished)] and len(backend.calls) <= 1  # no passage read


def test_several_questions_read_in_one_pass_each_with_its_own_passages() -> None:
    results, events, backend = run(["What is the default value of history_size unless overridden?",
                                    "Which environment variable names the directory of java.opts?"],
                                   {"history_size": "1000", "java.opts": "OCTAVE_JAVA_DIR"})
    assert [r.answer for r in results] == ["1000", "OCTAVE_JAVA_DIR"]
    assert any(len(batch) == 2 for batch in backend.calls)  # a step served both questions in one batch


def test_a_run_killed_after_its_first_step_resumes_to_the_same_answer(tmp_path: Path) -> None:
    from memread.traces import TraceWriter, read_trace

    question = "Which environment variable names the directory of java.opts?"
    path = tmp_path / "t.jsonl"
    calls = {"n": 0}

    def dying(request: ChatRequest) -> str:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return reader({"java.opts": "OCTAVE_JAVA_DIR"})(request)

    backend = FakeBackend(dying, continues_replies=True)
    writer = TraceWriter(path, header={"document": {"source": "manual.pdf"}, "questions": [question]})
    with pytest.raises(KeyboardInterrupt):
        Loop(backend, [question], Settings(strategy="evidence"), sinks=[writer]).run(manual_chunks())
    writer.close()
    trace = read_trace(path)
    point = trace.resume_point()
    again = FakeBackend(reader({"java.opts": "OCTAVE_JAVA_DIR"}), continues_replies=True)
    results = Loop(again, [question], Settings(strategy="evidence")).run(
        manual_chunks(), start_step=point.start_step, states=point.states, exited=point.exited)
    assert results[0].answer == "OCTAVE_JAVA_DIR"


def test_the_strategy_is_a_package_of_small_modules() -> None:
    folder = Path(__file__).resolve().parents[1] / "memread" / "strategies" / "evidence"
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in folder.glob("*.py")}
    assert max(sizes.values()) <= 450, sizes
    assert re.search(r"def read_reply", (folder / "__init__.py").read_text(encoding="utf-8"))
    assert EvidenceStrategy.name == "evidence"


def test_a_settled_answer_is_the_whole_name_the_evidence_writes() -> None:
    from memread.answer import normalize_answer
    from memread.strategies.evidence.answer import settle_lookup, whole_name

    lines = ("The --force-confask option requires dpkg to ask again. Kept with the .dpkg-dist suffix. "
             "Available in /org/qa.debian.org/mia on the host. binutils (2.17-1) unstable; a well-known tool.")
    assert settle_lookup("force-confask", lines, None) == "--force-confask"
    assert settle_lookup("dpkg-dist", lines, None) == ".dpkg-dist"
    assert settle_lookup("not in the document", lines, "org/qa.debian.org/mia") == "/org/qa.debian.org/mia"
    assert settle_lookup("binutils (2.17-1", lines, None) == "binutils (2.17-1)"
    assert whole_name("known tool", lines) == "known tool"  # glued to a word: as found
    for found in ("force-confask", "dpkg-dist", "binutils (2.17-1", "known tool"):  # no score can change
        assert normalize_answer(whole_name(found, lines)) == normalize_answer(found)
