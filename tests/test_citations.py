"""Citations name the chunks whose content survives into the final memory, with pages."""

from __future__ import annotations

import synthetic_run

from memread.citations import cite, describe
from memread.document import Chunk, Span
from memread.events import StepFinished


def lane_steps(lane):
    return [e for e in synthetic_run.events() if isinstance(e, StepFinished) and e.lane == lane]


def step(index, before, after, *, update=None, page=None):
    chunk = Chunk(index=index, text="...", tokens=1,
                  spans=(Span(source="book.pdf", page_first=page or index + 1, page_last=page or index + 1),))
    return StepFinished(lane=0, step=index, chunk=chunk, memory_before=before, recalled_before=None, prompt="",
                        reply=after, finish_reason="stop", memory=after, memory_changed=after != before,
                        truncated=False, update=update)


def test_the_gated_run_cites_the_pages_where_the_facts_were_read():
    assert [(c.step, c.where) for c in cite(lane_steps(0))] == [(1, "report.pdf p. 2"), (4, "report.pdf p. 5")]
    pier = cite(lane_steps(0))[0]
    assert "12 days" in pier.excerpt
    lighthouse = cite(lane_steps(1))
    assert [c.where for c in lighthouse] == ["report.pdf p. 4"]
    assert "Ada Quist" in lighthouse[0].excerpt


def test_overwrite_content_that_is_later_dropped_is_not_cited():
    steps = [
        step(0, "No previous memory", "The butler was in the garden at nine."),
        step(1, "The butler was in the garden at nine.", "The gardener owned a red bicycle in 1952."),
        step(2, "The gardener owned a red bicycle in 1952.",
             "The gardener owned a red bicycle in 1952. The bicycle was found at the quay."),
    ]
    assert [c.step for c in cite(steps)] == [1, 2]


def test_a_rewording_of_boilerplate_is_not_evidence():
    steps = [
        step(0, "No previous memory", "There is no relevant information in the section yet."),
        step(1, "There is no relevant information in the section yet.", "The ship sank in 1912."),
        step(2, "The ship sank in 1912.", "So far: the ship sank in 1912. No relevant information here."),
    ]
    assert [c.step for c in cite(steps)] == [1]


def test_a_gated_step_that_kept_the_memory_is_never_cited():
    steps = [step(0, "No previous memory", "Ada Quist repaired the lamp.", update=True),
             step(1, "Ada Quist repaired the lamp.", "Ada Quist repaired the lamp.", update=False)]
    assert [c.step for c in cite(steps)] == [0]


def test_citations_as_one_line_and_as_data():
    citations = cite(lane_steps(0))
    assert describe(citations) == "report.pdf pp. 2, 5"
    data = citations[0].to_dict()
    assert data["chunk"] == 2 and data["spans"] == [{"source": "report.pdf", "page_first": 2, "page_last": 2}]
    assert cite([]) == []


def test_one_line_names_each_source_once_with_its_pages_or_lines():
    from memread.citations import Citation
    from memread.document import Span

    def cited(*spans: Span) -> list[Citation]:
        return [Citation(lane=0, step=n, spans=(span,), weight=1, excerpt="") for n, span in enumerate(spans)]

    log = [Span("app.log", line_first=234, line_last=234), Span("app.log", line_first=3408, line_last=3414),
           Span("app.log", line_first=234, line_last=234), Span("-", line_first=9, line_last=9)]
    assert describe(cited(*log)) == "app.log lines 234, 3408-3414; stdin line 9"
    assert describe(cited(Span("app.log", line_first=7, line_last=7))) == "app.log line 7"
    # lines that follow or overlap are one range, in order: a count's FAIL lines one after another
    counted = [Span("app.log", line_first=n, line_last=n) for n in (24, 15, 16, 17, 22)]
    assert describe(cited(*counted, Span("app.log", line_first=17, line_last=21))) == "app.log lines 15-22, 24"
    assert describe(cited(Span("app.log", line_first=7, line_last=7), Span("app.log", line_first=7, line_last=8))) \
        == "app.log lines 7-8"
    assert describe(cited(Span("My Report.pdf", 3, 3), Span("My Report.pdf", 5, 7))) == "My Report.pdf pp. 3, 5-7"
    mixed = [Span("book.epub", chapters=("2. Setup",)), Span("book.epub", chapters=("5. Upgrades",)),
             Span("a.html", chapters=("Intro",), line_first=3, line_last=4), Span("notes.txt")]
    assert describe(cited(*mixed)) == "book.epub § 2. Setup; § 5. Upgrades; a.html § Intro lines 3-4; notes.txt"
