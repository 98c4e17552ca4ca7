"""The collect path of `evidence` on a document's structure: the parts a question names, numbered headings
wherever an outline has them, numbers that start again, and "first"/"last" in the order a reader means."""

from __future__ import annotations

import pytest

from memread.chunk import Chunker
from memread.document import Heading, Provenance, Segment, Span
from memread.events import LaneExited, StepFinished
from memread.strategies.evidence import collect, ordering, parts, questions
from memread.tokens import CharTokenizer
from tests.test_strategy_evidence import run


def heading(level: int, title: str, source: str = "book.html") -> Heading:
    return Heading(level=level, title=title, source=source)


# An HTML folder's outline follows its files' names: chapter 12's later sections come from other files, after
# chapter 6 and before nothing in particular.
FOLDER = [heading(0, "The Handbook", "index.html"), heading(1, "Foreword", "index.html"),
          heading(0, "Chapter 12. Advanced Administration", "advanced.html"),
          heading(1, "12.1. RAID and LVM", "advanced.html"), heading(2, "12.1.1. Software RAID", "advanced.html"),
          heading(0, "Chapter 6. The APT Tools", "apt.html"), heading(1, "6.1. Filling sources.list", "apt.html"),
          heading(1, "12.3. Automated Installation", "sect.install.html"),
          heading(1, "12.2. Virtualization", "sect.virt.html"), heading(1, "12.4. Monitoring", "sect.mon.html")]


def counted(outline: list[Heading], question: str) -> tuple[int, str]:
    groups = parts.group_outline(outline, questions.quoted(question), question)
    return groups[0].count, groups[0].key


def test_a_section_named_next_to_a_part_word_scopes_the_count_to_its_numbered_headings_wherever_they_are() -> None:
    count, key = counted(FOLDER, "How many sections does the Advanced Administration chapter have?")
    assert (count, key) == (4, "level 2 headings numbered like #.# under Chapter 12. Advanced Administration")
    assert parts.headings_under(FOLDER, 5) == [FOLDER[6]]  # chapter 6: its one section
    # each counted heading is cited where it is: the answer's sources name the parts it counted
    groups = parts.group_outline(FOLDER, [], "How many sections does the Advanced Administration chapter have?")
    places = sorted(Span.from_dict(item["spans"][0]).describe() for item in groups[0].items)
    assert places[:2] == ["advanced.html § 12.1. RAID and LVM", "sect.install.html § 12.3. Automated Installation"]


def test_unnumbered_sections_are_those_that_follow_the_named_one_a_level_deeper() -> None:
    pdf = [heading(0, "4 Numeric Data Types"), heading(1, "Integer Types"), heading(0, "5 Strings"),
           heading(1, "Escape Sequences"), heading(2, "Octal escapes"), heading(1, "Character Arrays"),
           heading(0, "6 Data Containers"), heading(1, "Structures")]
    assert counted(pdf, "How many sections does the Strings chapter of the manual have?")[0] == 2
    assert counted(pdf, "How many sections does chapter Strings have?")[0] == 2


def test_a_title_the_question_names_as_no_part_does_not_scope_it() -> None:
    # "the Handbook" is the book's own title: the question counts the book's chapters, not the title's children
    assert counted(FOLDER, "How many chapters does The Handbook have?") == (2, "level 1 headings numbered like #")
    assert parts.named_section(FOLDER, "How many chapters does The Handbook have?") is None
    assert parts.named_section(FOLDER, "Which tools does the APT Tools chapter describe?") == 5


def test_a_number_that_comes_again_is_a_second_sequence_not_one_more_chapter() -> None:
    epub = [heading(0, f"{n}. Chapter {n}") for n in range(1, 9)] + [heading(0, "1. Overview of Tools")]
    groups = parts.group_outline(epub, [], "How many chapters does the reference have?")
    assert [(g.count, g.key) for g in groups] == [(8, "level 1 headings numbered like #"),
                                                  (1, "level 1 headings numbered like #, numbered again")]


def test_dates_tell_a_document_that_runs_backwards_in_time() -> None:
    assert ordering.date_of(" -- Matthias Klose <doko@debian.org>  Sun,  9 Mar 2003 01:02:39 +0100") == (2003, 3, 9)
    assert ordering.date_of("released 2021-06-30 with fixes") == (2021, 6, 30)
    assert ordering.date_of("12.2.0 (Debian 12.2.0-14+deb12u1)") is None
    newest = [f" -- A <a@b>  Mon, {d} Jan {y}" for y in range(2020, 2008, -1) for d in (20, 3)]
    assert ordering.newest_first(newest) and not ordering.newest_first(newest[::-1])
    mixed = [f"in {y}-01-01" for y in (2001, 1999, 2005, 1998, 2010, 2003, 2011, 2000, 2012, 2004, 2013)]
    assert not ordering.newest_first(mixed)  # a manual's dates go both ways
    assert not ordering.newest_first(newest[:8])  # too few to tell


def test_first_and_last_follow_numbers_for_headings_and_time_for_the_rest() -> None:
    chapters = [{"text": t, "chunk": 0, "start": 0, "how": "outline"} for t in
                ("Chapter 12. Advanced", "Chapter 6. APT", "Chapter 16. Conclusion", "Chapter 2. Case Study")]
    assert [i["text"] for i in ordering.in_order(chapters)][::3] == ["Chapter 2. Case Study", "Chapter 16. Conclusion"]
    lines = [{"text": f"line {n}", "chunk": n // 2, "start": n, "how": "collected"} for n in (3, 1, 2)]
    assert [i["text"] for i in ordering.in_order(lines)] == ["line 1", "line 2", "line 3"]
    assert [i["text"] for i in ordering.in_order(lines, backwards=True)] == ["line 3", "line 2", "line 1"]


CHANGELOG = "".join(f"tool ({v}.0-1) unstable; urgency=medium\n\n  * Build with zstd {v}.\n\n"
                    f" -- Ann Maintainer <ann@example.org>  Mon, {v:02d} Jan {2000 + v} 10:00:00 +0100\n\n"
                    for v in range(12, 0, -1))  # newest first, as Debian changelogs are


@pytest.mark.parametrize(("question", "version"), [
    ("Which is the earliest upload that builds with zstd?", 1),  # the last in the text: the oldest
    ("Which is the latest upload that builds with zstd?", 12),
])
def test_in_a_newest_first_changelog_the_earliest_upload_is_the_last_in_the_text(question: str,
                                                                                  version: int) -> None:
    chunks = chunked(CHANGELOG, 300, name="changelog")
    results, _, backend = run([question], {"Group 1": "1", "zstd": "nothing"}, chunks=chunks)
    assert results[0].answer.startswith(f"tool ({version}.0-1)")
    shown = backend.requests[-1].messages[-1].content  # the final prompt: the one item code found
    assert f"zstd {version}." in shown and f"zstd {13 - version}." not in shown


def test_a_count_of_parts_is_the_structures_and_reads_no_passage_for_a_stated_number() -> None:
    text = ("Contents: 1.2.2 debdiff, the second of 2 lint tools in section Package lint tools.\n\n"
            "1.1. Package tools\n\nThey build packages.\n\n1.2. Package lint tools\n\n1.2.1. lintian\n\n"
            "Checks packages.\n\n1.2.2. debdiff\n\nCompares packages.\n\n1.2.3. duck\n\nChecks links.\n\n"
            "1.3. Helpers\n\n1.3.1. debhelper\n\nHelps.\n")
    chunks = chunked(text, 120, name="tools.txt")
    question = 'How many tools are described in the "Package lint tools" section?'
    results, _, backend = run([question], {"Group 1": "1", "counted": "2"}, chunks=chunks)
    assert results[0].answer == "3"  # the three headings under 1.2; the "2" a contents line states is no count
    # The group chosen, and nothing more: no passage read for a stated number, and no final call, since the
    # answer can be one number only (one group counted)
    assert len(backend.requests) == 1


def test_the_part_a_question_counts_picks_its_group_by_numbering_not_by_the_models_reading() -> None:
    epub = ([heading(0, f"{n}. Chapter {n}") for n in range(1, 9)] + [heading(0, "1. Overview of Tools")] +
            [heading(1, f"{n}.{m}. Section") for n in range(1, 9) for m in (1, 2)] + [heading(0, "A. Glossary")])
    question = "How many chapters does the reference have?"
    groups = parts.group_outline(epub, [], question)
    assert [(g.numbering, g.count) for g in groups] == [("#", 8), ("A", 1), ("# again", 1), ("#.#", 16)]
    assert parts.part_group(question, groups) == 1
    assert parts.part_group("How many appendices does the reference have?", groups) == 2
    assert parts.part_group("How many sections does the reference have?", groups) == 4
    # two kinds of part named, or a section named: the model chooses
    assert parts.part_group("How many chapters, not counting appendices, does it have?", groups) is None
    scoped = parts.group_outline(FOLDER, [], "How many sections does the Advanced Administration chapter have?")
    assert parts.part_group("How many sections does the Advanced Administration chapter have?", scoped) is None
    text = "".join(f"{n}. Chapter {n}\n\nText.\n\n{n}.1. Section\n\nMore.\n\n{n}.2. Section\n\nMore.\n\n"
                   for n in (1, 2))
    chunks = list(Chunker(CharTokenizer(), 200).chunks([Segment(text, Provenance("r.txt"))]))
    results, _, _ = run(["How many chapters does the reference have?"], {"Group": "2"}, chunks=chunks)
    assert results[0].answer == "2"  # the model chose group 2 (the 4 sections): code's group of chapters counted


def test_a_count_the_final_reply_could_change_still_asks_for_it() -> None:
    from memread.settings import Settings
    from memread.strategies import create_strategy
    from memread.strategies.evidence.answer import count_choices

    assert count_choices([3], []) == {"3"} and count_choices([3, 3], []) == {"3", "6"}
    assert count_choices([50], ["4", " 1,000"]) == {"50", "4", "1000"}
    ask = create_strategy(Settings(strategy="evidence"), CharTokenizer()).answered_in_code
    parts = {"counts": [8], "kind": "count", "candidates": []}
    assert ask(0, "How many chapters are there?", parts) == "8"
    two = {**parts, "counts": [8, 2]}  # two groups: the model may answer either count or their sum
    stated = {**parts, "candidates": [{"answer": "12", "own_support": 4}]}  # "closed for 12 days"
    first = {"counts": [3], "kind": "first", "candidates": [], "items": [{"text": "x"}]}
    assert [ask(0, "How many?", s) for s in (two, stated, first)] == [None, None, None]


@pytest.mark.parametrize(("question", "words"), [
    ("How many uploads were made to experimental?", ["uploads"]),
    ("How many unexpected failures did the libstdc++ testsuite have in total?", ["unexpected", "failures"]),
    ("What is the earliest binutils version in the changelog?", ["binutils", "version"]),
    ("Which test is the first one reported as FAIL in the log?", ["test"]),
    ("What does the tool do?", []),  # no whole-document question
    ("How many tests failed in the g++ testsuite?", ["tests"]),  # "failed" is a condition: the tests that did
    ("How many tests passed?", ["tests"]),
    ("How many signed uploads are there?", ["signed", "uploads"]),  # before what is counted, it is part of it
    ("How many tests passed unexpectedly in the gcc testsuite?", ["tests"]),  # a past form, an adverb, "in"
    ("List every upload made to experimental.", ["upload"]),  # what a list lists, as what a count counts
    ("Which tests failed in the objc testsuite?", ["tests"]),
    ("Name all the maintainers of the package.", ["maintainers"]),
    ("Which tool uploads the package?", []),  # a lookup: nothing is listed
])
def test_the_words_naming_what_is_counted_end_where_the_condition_begins(question: str, words: list[str]) -> None:
    assert questions.counted(question) == words


# Newest first; every third upload went to experimental; one item says "made" and "changelog" once, as real
# changelogs do somewhere: the rarest words of the questions below, and no part of what they count. One item
# holds both words of "tool version", and is no entry.
ITEMS = {7: "Upload made with the changelog fixed", 4: "Check the tool version at build time"}
TRACKS = "".join(f"tool ({v}.0-1) {'experimental' if v % 3 == 0 else 'unstable'}; urgency=medium\n\n"
                 f"  * {ITEMS.get(v, f'Build with zstd {v}')}.\n\n"
                 f" -- Ann Maintainer <ann@example.org>  Mon, {v:02d} Jan {2000 + v} 10:00:00 +0100\n\n"
                 for v in range(12, 0, -1))


@pytest.mark.parametrize(("question", "answer"), [
    ("How many uploads were made to experimental?", "4"),  # 12, 9, 6, 3: the entries, which never say "upload"
    # the oldest entry, last in the text: the entries are the largest group, and the one line holding both words
    # of what is counted comes after them (what is counted ranks no group)
    ("What is the earliest tool version in the changelog?", "tool (1.0-1)"),
])
def test_what_a_question_counts_does_not_narrow_the_units_to_the_lines_that_say_it(question: str,
                                                                                   answer: str) -> None:
    chunks = chunked(TRACKS, 300, name="changelog")
    results, _, _ = run([question], {"Group 1": "1", "zstd": "nothing"}, chunks=chunks)
    assert results[0].answer.startswith(answer)


def test_verbs_that_say_where_not_what_are_no_condition() -> None:
    # "report" as "reported" already was: a line need not say "report" to be one of the warnings counted
    assert questions.anchors("How many warnings does the log report for libgomp?") == ["warnings", "libgomp"]
    assert questions.anchors("How many tests does the manual say are flaky?") == ["tests", "flaky"]


# --- list questions (v14): the items code collected are the answer ---------------------------------------------

LOG = ("\t\t=== objc tests ===\n\nRunning target unix\nFAIL: objc/execute/nested-func-1.m compilation\n"
       "PASS: objc/execute/a.m\n\n\t\t=== objc Summary ===\n\n# of expected passes\t\t1\n"
       "\t\t=== gotools tests ===\n\nRunning target unix\nFAIL: gotools/go-cmd.go\nFAIL: gotools/go-cmd.go\n"
       "FAIL: gotools/go-vet.go\nPASS: gotools/go-fmt.go\n")


def chunked(text: str, size: int = 400, name: str = "test.log") -> list:
    """``text`` cut into chunks of ``size`` characters, numbered by line from 1."""
    return list(Chunker(CharTokenizer(), size).chunks([Segment(text, Provenance(name, line_start=1))]))


def log_chunks(size: int = 400) -> list:
    return chunked(LOG, size)


def test_a_log_line_holds_the_words_of_the_banner_it_is_under_and_failed_is_held_by_fail() -> None:
    assert collect.holds("FAIL: x.m", "failed") and collect.holds("PASS: x.m", "passed")
    assert not collect.holds("FAIL: x.m", "filed") and not collect.holds("XPASS: x.m", "passed")
    # a result code holds the words it stands for when the question asks all of them
    codes = collect.codes_asked(["tests", "passed", "unexpectedly", "gcc"])
    assert codes == {"xpass"} and collect.codes_asked(["tests", "passed", "gcc"]) == set()
    assert collect.holds("XPASS: x.m", "passed", codes=codes) and collect.holds("XPASS: x.m", "unexpectedly", codes=codes)
    assert not collect.holds("PASS: x.m", "unexpectedly", codes=codes)
    assert collect.holds("# of unexpected successes 4", "unexpectedly")  # an adverb held as its adjective
    item, line = {"head": "=== objc tests ==="}, next(u for u in units_of("FAIL: a.m\n") if u.text == "FAIL: a.m")
    assert collect.held_text(item, line) == "=== objc tests === FAIL: a.m"
    assert collect.held_text({"head": "1.2. Tools"}, line) == "FAIL: a.m"  # a section title is no banner
    results, _, backend = run(["Which tests failed in the objc testsuite?"], {"Group": "1"}, chunks=log_chunks())
    shown = backend.requests[0].messages[-1].content  # the groups: the objc FAIL line first
    assert shown.index("Group 1: 1 line (FAIL: · holding failed, objc)") < shown.index("gotools")
    assert results[0].answer == "1 line: FAIL: objc/execute/nested-func-1.m compilation"


def units_of(text: str) -> list:
    from memread.strategies.evidence.units import units

    return units(text)


def test_a_list_is_answered_by_code_each_item_once_with_the_count_and_no_final_call() -> None:
    results, _, backend = run(["Which tests failed in the gotools testsuite?"], {"Group": "1", "lines": "none"},
                              chunks=log_chunks())
    assert results[0].answer == ("3 lines, 2 different: FAIL: gotools/go-cmd.go; FAIL: gotools/go-vet.go")
    assert len(backend.requests) == 1  # the group chosen; the model writes no list
    assert questions.question_kind("List the appendices of the manual.") == questions.LIST
    assert questions.question_kind("List of the tools: which one uploads?") == questions.LOOKUP


def test_a_list_item_inside_a_record_comes_with_the_records_first_line() -> None:
    from memread.strategies.evidence import answer

    items = [{"text": "-- Ann <a@x.org> Sat", "record": "tool (2.0-2) unstable; urgency=low"},
             {"text": "-- Ann <a@x.org> Fri", "record": "tool (1.9-3) unstable; urgency=low"}]
    assert answer.list_answer(items, 2) == ("2 lines: tool (2.0-2) unstable; urgency=low: -- Ann <a@x.org> Sat; "
                                            "tool (1.9-3) unstable; urgency=low: -- Ann <a@x.org> Fri")
    many = [{"text": f"FAIL: t{n}"} for n in range(answer.LISTED + 5)]
    assert answer.list_answer(many, len(many)).endswith(f"t{answer.LISTED - 1}; … and 5 more")
    assert answer.list_answer(many, 1226).startswith("1226 lines: ")  # the items kept are the first of many
    assert answer.list_answer(many, 1226).endswith(f"t{answer.LISTED - 1}; … and more")
    assert answer.list_answer([], 0) == answer.DOES_NOT_SAY
    near = [{"text": "tool (2.0-2) unstable; urgency=low * Fix. -- Ann", "record": "tool (2.0-2) unstable; urgency=low"}]
    assert answer.list_answer(near, 1) == "1 line: tool (2.0-2) unstable; urgency=low * Fix. -- Ann"  # not twice
    items = "".join(f"  * Fix the build on port {n}.\n" for n in range(6))  # the header is far above the sign-off
    changelog = (f"tool (2.0-2) unstable; urgency=low\n\n{items}\n -- Ann Example <ann@example.org>  Sat\n\n"
                 "tool (2.0-1) unstable; urgency=low\n\n  * Recognize Go.\n\n -- Bob Example <bob@example.org>  Tue\n")
    chunks = list(Chunker(CharTokenizer(), 400).chunks([Segment(changelog, Provenance("changelog"))]))
    results, _, _ = run(["List every upload made by Ann Example."], {"Group": "1"}, chunks=chunks)
    assert results[0].answer == "1 line: tool (2.0-2) unstable; urgency=low: -- Ann Example <ann@example.org>  Sat"


def test_a_full_stop_makes_no_word_an_identifier() -> None:
    assert questions.identifiers("List every XPASS in the g++ testsuite.") == ["xpass", "g"]
    assert questions.identifiers("Who set urgency=high.") == ["urgency high"]
    assert questions.identifiers("Which upload is 2.7-3.") == ["2 7 3"]


def test_a_list_takes_the_one_group_holding_most_of_its_words_whatever_the_model_chose() -> None:
    groups = [collect.Group("FAIL:", held=3), collect.Group("# of", held=2), collect.Group("===", held=2)]
    assert collect.most_held(groups) == 1
    assert collect.most_held(groups[1:]) is None  # a tie: the model chooses
    assert collect.most_held([collect.Group("a"), collect.Group("b")]) is None  # not ranked by words
    results, _, _ = run(["Which tests failed in the objc testsuite?"], {"Group": "2"}, chunks=log_chunks())
    assert results[0].answer == "1 line: FAIL: objc/execute/nested-func-1.m compilation"
    # a count too (v20): what it counts holds none of the words, so "# of unexpected failures" is no better match
    _, events, _ = run(["How many tests failed in the objc testsuite?"], {"Group": "2"}, chunks=log_chunks())
    assert [e.decisions["groups"] for e in events if isinstance(e, StepFinished) and "groups" in e.decisions] == [[1]]


def test_a_one_letter_identifier_is_held_only_as_written() -> None:
    assert questions.written("List every XPASS in the g++ testsuite.") == {"g": "g++"}
    assert questions.written("Which upload is 2.7-3?") == {} and questions.written("A x86-64 build?") == {}
    log = ("\t\t=== g++ tests ===\n\nXPASS: c-c++-common/a.c (internal compiler error)\n\n"
           "\t\t=== gcc tests ===\n\nXPASS: gcc.dg/guality/b.c   -O3 -g  execution test\n")
    chunks = chunked(log)
    results, _, _ = run(["List every XPASS in the g++ testsuite."], {"Group": "1"}, chunks=chunks)
    assert results[0].answer == "1 line: XPASS: c-c++-common/a.c (internal compiler error)"  # not the -g line


def test_a_listed_items_record_line_is_the_unit_above_it_not_indented_of_whatever_kind() -> None:
    from memread.strategies.evidence.units import units

    entry = ("tool (2.7-5) unstable; urgency=low (HIGH for m68k)\n\n  * Added a patch.\n\n"
             " -- Ann Example <ann@example.org>  Tue\n")
    found = units(entry)
    assert found[0].kind != "line"  # the header reads as a sentence, and is still the record's first line
    assert collect.record_line(found, len(found) - 1) == "tool (2.7-5) unstable; urgency=low (HIGH for m68k)"
    assert collect.record_line(found, 0) == ""  # not indented: no record line
    opening = units(" -- Ann Example <ann@example.org>  Tue\n")  # a chunk that opens with a sign-off
    assert collect.record_line(opening, 0, lambda: "tool (2.7-4) unstable; urgency=low") == \
        "tool (2.7-4) unstable; urgency=low"


GPP = ("Results for 12.2.0 testsuite on x86_64\n\n" + "".join(f"Filler line {n} about nothing.\n" for n in range(30))
       + "\t\t=== g++ tests ===\n\nRunning target unix\nFAIL: g++.dg/a.C (test for excess errors)\n"
       + "".join(f"FAIL: c-c++-common/t{n}.c (test for excess errors)\n" for n in range(14))
       + "\n\t\t=== g++ Summary for unix ===\n\n# of expected passes\t\t20\n# of unexpected failures\t5\n"
       + "".join(f"More filler {n} here.\n" for n in range(30)) + "\t\t=== gcc tests ===\n\nFAIL: gcc.dg/x.c -g\n")


def test_an_identifier_the_index_cannot_hold_is_found_as_written_and_a_count_takes_the_lines_holding_its_words() -> None:
    # "g++" is the phrase "g", which the index does not hold: the chunks are found by "g++" as written, in their
    # text or their banner (the chunk of the last FAIL lines says "g++" nowhere), and the FAIL lines (holding
    # "g++" under their banner, and "failed") are counted, not the summary's "# of" lines
    chunks = chunked(GPP, 300)
    assert any("g++" not in c.text and "FAIL: c-c++" in c.text for c in chunks)
    _, events, backend = run(["How many tests failed in the g++ testsuite?"], {"Group": "2", "lines": "none"},
                             chunks=chunks)
    shown = backend.requests[0].messages[-1].content
    assert "Group 1: 15 lines (FAIL: · holding g, failed)" in shown and "gcc.dg" not in shown
    assert [e.decisions["groups"] for e in events if isinstance(e, StepFinished) and "groups" in e.decisions] == [[1]]
    # it counted through the index, then read passages: no hint to read it all, and the counted lines are cited
    assert [e.whole for e in events if isinstance(e, LaneExited)] == [True]
    last = [e for e in events if isinstance(e, StepFinished)][-1]
    assert "groups" not in last.decisions and len(last.state["sources"]) >= 15


def test_a_part_named_by_its_number_scopes_the_count() -> None:
    assert questions.part_numbers("How many sections does chapter 8 of the handbook have?") == [("chapter", "8")]
    assert questions.part_numbers("What is in Appendix B and section 4.2?") == [("appendix", "B"), ("section", "4.2")]
    assert questions.part_numbers("Which part a is it?") == []
    assert counted(FOLDER, "How many sections does chapter 12 have?") == (4, "level 2 headings numbered like #.# "
                                                                           "under Chapter 12. Advanced Administration")
    assert counted(FOLDER, "How many sections does chapter 6 have?")[0] == 1


def test_after_a_mark_the_next_word_joins_a_lines_shape_only_when_the_question_asks_it() -> None:
    assert collect.shape_of(" -- Galen Hazelwood <g@x.org>  Sat", ["galen", "hazelwood"]) == "-- Galen"
    assert collect.shape_of(" -- James Troup <j@x.org>  Wed", ["2005"]) == "--"
    assert collect.shape_of("# of expected passes\t\t12", ["libstdc"]) == "#"
    signers = zip(range(6, 0, -1), ["Ann A", "Bob B"] * 3, strict=True)  # 2005: Ann's 6, Bob's 5 and 3
    signed = "".join(f"tool ({v}.0-1) unstable; urgency=low\n\n  * Fix {v}.\n\n -- {who} <a@x.org>  Mon, 0{v} Jan "
                     f"{2004 + (v in (6, 5, 3))} 10:00:00 +0100\n\n" for v, who in signers)
    chunks = list(Chunker(CharTokenizer(), 400).chunks([Segment(signed, Provenance("changelog"))]))
    results, _, backend = run(["How many uploads were made in 2005?"], {"Group": "1"}, chunks=chunks)
    assert "Group 1: 3 lines (-- · holding 2005)" in backend.requests[0].messages[-1].content
    assert results[0].answer == "3"


def test_with_no_identifier_the_chunks_are_where_the_questions_words_come_together() -> None:
    log = ("Results for 12.2.0 testsuite on x86_64\n\n" + "".join(f"Filler line {n} about nothing.\n" for n in range(30))
           + "\t\t=== libgomp tests ===\n\nRunning target unix\n"
           + "".join(f"FAIL: libgomp.c/t{n}.c (test for excess errors)\n" for n in range(5))
           + "".join(f"More filler {n} here.\n" for n in range(30))
           + "\nlibgomp-kfreebsd-testsuite: Disable lock-2.c test on kfreebsd\n")
    chunks = chunked(log, 300)
    results, _, _ = run(["Which tests failed in the libgomp testsuite?"], {"Group": "1"}, chunks=chunks)
    assert results[0].answer.startswith("5 lines: FAIL: libgomp.c/t0.c")  # not the patch line holding "testsuite"


def test_tests_that_passed_unexpectedly_are_the_xpass_lines_and_a_list_ranks_by_its_condition() -> None:
    log = ("\t\t=== gcc tests ===\n\nRunning target unix\nPASS: gcc.dg/a.c\nPASS: gcc.dg/b.c\nPASS: gcc.dg/c.c\n"
           "XPASS: gcc.dg/guality/example.c -O0\nXPASS: gcc.dg/guality/pr1.c -O1\n\n\t\t=== gcc Summary ===\n\n"
           "# of expected passes\t\t3\n# of unexpected successes\t2\n")
    chunks = chunked(log)
    results, _, _ = run(["Which tests passed unexpectedly in the gcc testsuite?"], {"Group": "3"}, chunks=chunks)
    assert results[0].answer.startswith("2 lines: XPASS: gcc.dg/guality/example.c")  # code's choice, not the model's
    changelog = "".join(f"tool (1.{n}-1) {'experimental' if n % 3 == 0 else 'unstable'}; urgency=low\n\n  * Fix {n}.\n\n"
                        f" -- Ann <a@b.org>  Mon, 0{n % 9 + 1} Jan 2001\n\n" for n in range(9, 0, -1))
    changelog += "tool (1.0-1) unstable; urgency=low\n\n  * Merge the experimental uploads.\n\n -- Ann <a@b.org>\n"
    chunks = chunked(changelog, 300, name="changelog")
    results, _, _ = run(["List every upload made to experimental."], {"Group": "1"}, chunks=chunks)
    # the entries: "upload" ranks no group, so the item saying "experimental uploads" is not taken over them
    assert results[0].answer.startswith("3 lines: tool (1.9-1) experimental")


@pytest.mark.parametrize(("question", "kind"), [
    ("Which tests failed in the libstdc++ testsuite?", ["testsuite"]),
    ("How many tests failed in the libgomp testsuite?", ["testsuite"]),
    ("List every upload made by Galen Hazelwood.", []),  # a name, not a place
    ("How many uploads were made to experimental?", []),
    ("Which testsuite is the last one in the log?", []),  # what is ordered, not where
])
def test_the_kind_of_place_a_question_names_is_its_last_noun_after_a_lower_case_name(question: str,
                                                                                       kind: list[str]) -> None:
    assert questions.place_kind(question) == kind


def test_of_groups_holding_as_many_words_code_takes_the_one_whose_lines_begin_with_one() -> None:
    fail = collect.Group("FAIL: · holding failed, libgomp", held=2, shape="FAIL:", words=("failed", "libgomp"))
    unresolved = collect.Group("UNRESOLVED: · holding failed, libgomp", held=2, shape="UNRESOLVED:",
                               words=("failed", "libgomp"))
    summary = collect.Group("# · holding libgomp", held=1, shape="#", words=("libgomp",))
    assert collect.most_held([unresolved, fail, summary]) == 2
    assert collect.most_held([unresolved, summary]) == 1  # one holds most: as before
    assert collect.most_held([unresolved, unresolved]) is None  # none begins with a word of the question
    log = ("\t\t=== libstdc++ tests ===\n\nRunning target unix\nFAIL: libstdc++-prettyprinters/80276.cc whatis p4\n"
           "PASS: libstdc++-prettyprinters/a.cc\n\n\t\t=== libstdc++ Summary ===\n\n# of expected passes\t\t1\n"
           "# of unexpected failures\t1\n\nlibgo-testsuite: Only run the libgo testsuite for flags\n")
    chunks = chunked(log)
    results, _, _ = run(["Which tests failed in the libstdc++ testsuite?"], {"Group": "2"}, chunks=chunks)
    assert results[0].answer == "1 line: FAIL: libstdc++-prettyprinters/80276.cc whatis p4"  # code's choice


def test_how_many_different_identifiers_counts_the_different_tokens_not_the_lines() -> None:
    assert questions.distinct_identifier("How many different CVE identifiers does the changelog mention?") == "CVE"
    assert questions.distinct_identifier("How many CVE identifiers does it mention?") is None  # lines, as before
    assert questions.distinct_identifier("How many different uploads fixed CVE-2018-1?") is None
    changelog = ("tool (1.3-1) unstable; urgency=high\n\n  * Fix CVE-2018-1, CVE-2018-2 and cve-2018-3.\n"
                 "    - CVE-2018-1 again, in the linker.\n\n -- Ann <a@b.org>  Mon\n\n"
                 "tool (1.2-1) unstable; urgency=low\n\n  * Fix CVE-2017-9 (PR 12). CVEs are listed above.\n\n"
                 " -- Ann <a@b.org>  Sun\n")
    chunks = chunked(changelog, name="changelog")
    results, _, backend = run(["How many different CVE identifiers does the changelog mention?"], {"Group": "1"},
                              chunks=chunks)
    assert results[0].answer == "4"  # CVE-2018-1, -2, -3 and CVE-2017-9, in two groups; not "CVEs", not 3 lines
    groups = [collect.Group("* · holding cve", count=2), collect.Group("- · holding cve", count=1)]
    counts, shown = collect.counts_of("How many CVE identifiers are there?", groups[:1], groups)
    assert counts == [2] and shown == "2 lines (* · holding cve)"  # no "different": lines, as before


def test_a_first_or_last_heading_is_answered_whole_and_numbered_parts_listed_in_their_numbers_order() -> None:
    from memread.strategies.evidence import answer

    found = {"text": "6.1. Best practices for debian/rules", "how": "outline"}
    question = "Which is the first section of the Best Packaging Practices chapter?"
    assert answer.settle_item("6.1", found, question, whole=True) == "6.1. Best practices for debian/rules"
    assert answer.settle_item("6.1", found, question) == "6.1"  # a line's item: the model's part of it, as before
    files = [{"text": t, "how": "outline", "chunk": n, "start": 0}  # in the files' names' order
             for n, t in enumerate(("8.1. Locale", "8.10. Compiling", "8.2. Network"))]
    assert [i["text"] for i in ordering.in_order(files)] == ["8.1. Locale", "8.2. Network", "8.10. Compiling"]


@pytest.mark.parametrize(("question", "term"), [
    ("How many times does the log mention gfortran?", "gfortran"),
    ("How many times is objc mentioned in the log?", "objc"),
    ("How many times does segfault appear in the log?", "segfault"),
    ("How many times does the manual mention the word \"printf\" in chapter 5?", "printf"),
    ("How many times did the Lakers win the title?", None),  # a quantity a passage states
    ("How many times did she appear in the final?", None),
])
def test_how_many_times_a_document_mentions_a_word_is_a_count_of_its_occurrences(question: str,
                                                                                  term: str | None) -> None:
    assert questions.mentioned(question) == term
    assert questions.question_kind(question) == (questions.COUNT if term else questions.LOOKUP)


def test_the_occurrences_are_counted_in_every_line_holding_the_word_and_all_are_cited() -> None:
    log = ("\t\t=== gfortran tests ===\n\nRunning target unix\nPASS: gfortran.dg/a.f90\n"
           "PASS: gfortran.dg/b.f90 (gfortran -O2)\n\n\t\t=== gfortran Summary ===\n\n# of expected passes\t\t2\n"
           "/build/gcc/gfortran version 12.2.0\n\t\t=== objc tests ===\n\nRunning target unix\nPASS: objc/a.m\n")
    chunks = chunked(log, 200)
    results, events, _ = run(["How many times does the log mention gfortran?"], {"Group": "1"}, chunks=chunks)
    assert results[0].answer == "6"  # two banners, three PASS lines (one twice) and the version line; no summary line
    last = [e for e in events if isinstance(e, StepFinished)][-1]
    cited = " ".join(s["excerpt"] for s in last.state["sources"])
    assert "# of expected passes" not in cited and "/build/gcc/gfortran version" in cited

