"""Dates in `evidence`: an answer naming a day is found however the text writes that day."""

from __future__ import annotations

import pytest

from memread.strategies.evidence import reading
from memread.strategies.evidence.dates import asks_date, find_date, whole_date

SIGN_OFF = " -- Matthias Klose <doko@debian.org>  Tue, 03 Jan 2012 06:06:20 +0100"


@pytest.mark.parametrize("answer", ["2012-01-03", "3 January 2012", "January 3, 2012", "Jan 3 2012",
                                    "Tuesday, 3 Jan 2012", "3rd January 2012"])
def test_a_date_in_another_form_is_taken_as_the_text_writes_it(answer: str) -> None:
    assert whole_date(answer) == (2012, 1, 3)
    assert reading.snap(answer, SIGN_OFF, dates=True) == "Tue, 03 Jan 2012"
    assert reading.snap(answer, SIGN_OFF) is None  # a question asking no date: as written only


@pytest.mark.parametrize("answer", ["20120103", "01/03/2012", "2012-01-04", "released 2012-01-03"])
def test_numbers_other_days_and_more_than_a_date_are_not_found_so(answer: str) -> None:
    assert find_date(answer, SIGN_OFF) is None
    assert reading.snap(answer, SIGN_OFF, dates=True) is None


@pytest.mark.parametrize("answer", ["2012", "Jan 2012", "2.22-3"])
def test_no_whole_date_is_no_date(answer: str) -> None:
    assert whole_date(answer) is None


def test_the_text_as_written_comes_first_then_its_first_date_of_that_day() -> None:
    text = "Born on March 2, 1965, in Ohio; on 2 March 1965 the papers said so."
    assert reading.snap("2 March 1965", text, dates=True) == "2 March 1965"  # as written
    assert reading.snap("1965-03-02", text, dates=True) == "March 2, 1965"  # the first of that day
    assert whole_date("2012-13-40") is None


@pytest.mark.parametrize(("question", "asks"), [
    ("On what date was that earlier upload made?", True), ("When was the 2.22-3 upload made?", True),
    ("Which day of the week is the backup run?", True), ("In what year was Debian founded?", False),
    ("Which tool takes --delayed?", False), ("What is the update-alternatives command?", False)])
def test_only_a_question_asking_for_a_date_takes_one_in_another_form(question: str, asks: bool) -> None:
    assert asks_date(question) is asks


def test_a_date_is_looked_for_as_a_date_before_as_the_digits_of_a_version() -> None:
    text = "binutils (2.22.90.20120909-2) experimental\n -- Ann <ann@example.org>  Sun, 09 Sep 2012 15:41:54 +0200"
    assert reading.snap("2012-09-09", text, dates=True) == "Sun, 09 Sep 2012"
    assert reading.snap("2012-09-09", text) == "20120909"  # a question asking for no date: as the same words
