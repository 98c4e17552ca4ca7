"""A command line memread cannot take gets what every memread error gets (docs/reference.md, "Exit statuses"): one line
``error: …``, a blank line and ``hint: …`` on stderr, exit status 2 — whether Click refused it (a bad option value,
an unknown option or command, a missing argument) or a strategy did (``-o NAME=VALUE``), and before any model
is looked for. Help, ``memread`` alone and TAB completion are not errors and behave as Click makes them."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_memread

NO_MODEL = "/nonexistent/model.gguf"  # looking for it would fail with exit 4 and name it


def one_error(err: str) -> tuple[str, str]:
    """The message and the hint of stderr that holds exactly one memread error, and nothing else."""
    lines = err.splitlines()
    assert len(lines) == 3, err
    assert lines[0].startswith("error: ") and lines[1] == "" and lines[2].startswith("hint: "), err
    return lines[0].removeprefix("error: "), lines[2].removeprefix("hint: ")


@pytest.fixture
def tiny(tmp_path: Path) -> str:
    path = tmp_path / "note.txt"
    path.write_text("The ferry left at nine.\n")
    return str(path)


@pytest.fixture
def no_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Creating a backend (the step that loads a model) fails the test."""

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a backend was created: the usage error came too late")

    monkeypatch.setattr("memread.backends.create_backend", refuse)


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    """Run ``memread argv…``, check it was refused as a usage error and nothing else was said; return the
    message and the hint."""
    status, out, err = run_memread(*argv)
    assert status == 2, err
    assert out == "" and "Traceback" not in err
    message, hint = one_error(err)
    leaked = capsys.readouterr()  # Click printing its own "Usage: … Error: …" would land here
    assert leaked.out == "" and leaked.err == ""
    return message, hint


@pytest.mark.parametrize("value", ["1.5", "abc", "-1", "nan", "inf"])
def test_a_bad_max_read_is_one_error_line_and_a_hint(value: str, tiny: str, no_backend: None,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    message, hint = refused(capsys, "ask", tiny, "When did the ferry leave?", "--max-read", value,
                            "--model", NO_MODEL)
    assert message.startswith("Invalid value for '--max-read': ")
    assert hint == "memread ask -h lists the options"


def test_an_unknown_option_names_where_the_options_are(tiny: str, no_backend: None,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    message, hint = refused(capsys, "ask", tiny, "q", "--bogus")
    assert (message, hint) == ("No such option: --bogus", "memread ask -h lists the options")


def test_a_mistyped_option_gets_clicks_guess_as_the_hint(tiny: str, no_backend: None,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    message, hint = refused(capsys, "ask", tiny, "q", "--max-raed", "0.3")
    assert message == "No such option: --max-raed"
    assert hint.startswith("did you mean --max-read") and hint.endswith("memread ask -h lists the options")


def test_a_mistyped_command_gets_the_guess_as_the_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(capsys, "askk") == ("No such command 'askk'.", "did you mean 'ask'? memread -h lists the commands")
    message, hint = refused(capsys, "traces", "shwo", "x")
    assert hint == "did you mean 'show'? memread traces -h lists the commands"


def test_a_missing_argument_shows_the_usage_as_the_hint(capsys: pytest.CaptureFixture[str]) -> None:
    message, hint = refused(capsys, "ask")
    assert message == "Missing argument 'source'."
    assert hint.startswith("usage: memread ask [OPTIONS]")


def test_an_option_without_its_value_names_the_command_it_belongs_to(tiny: str, no_backend: None,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # Click raises this one without its context; the command is found from the arguments.
    message, hint = refused(capsys, "ask", tiny, "q", "--max-read")
    assert message == "Option '--max-read' requires an argument."
    assert hint == "memread ask -h lists the options"
    assert refused(capsys, "traces", "rm", "--older-than")[1] == "memread traces rm -h lists the options"


@pytest.mark.parametrize(("flags", "said"), [
    (("-o", "passages=0"), "the evidence option passages must be from 1 up, not 0"),
    (("-o", "mode=everything"), "the evidence option mode must be one of"),
    (("-o", "max_read=-1"), "the evidence option max-read must be from 0.0 to 1.0, not -1.0"),
    (("-o", "rounds=abc"), "the evidence option rounds takes a whole number, not 'abc'"),
    (("-o", "max_read=nan"), "the evidence option max-read takes a number, not 'nan'"),
    (("-o", "max_read=inf"), "the evidence option max-read takes a number, not 'inf'"),
    (("-o", "max_read=-inf"), "the evidence option max-read takes a number, not '-inf'"),
    (("-o", "nosuch=1"), "the evidence strategy has no option 'nosuch'"),
    (("--max-read", "1.5"), "Invalid value for '--max-read'"),
    (("--max-read", "-1"), "Invalid value for '--max-read'"),
    (("--max-read", "abc"), "Invalid value for '--max-read'"),
    (("--max-read", "nan"), "Invalid value for '--max-read'"),
])
def test_evidence_options_out_of_range_are_refused_before_any_model_is_looked_for(
        flags: tuple[str, ...], said: str, tiny: str, no_backend: None, capsys: pytest.CaptureFixture[str]) -> None:
    message, hint = refused(capsys, "ask", tiny, "When did the ferry leave?", "--strategy", "evidence",
                            "--model", NO_MODEL, *flags)
    assert message.startswith(said)
    assert "nonexistent" not in message + hint


@pytest.mark.parametrize(("flags", "said"), [
    (("--temperature", "nan"), "Invalid value for '--temperature'"),
    (("--temperature", "inf"), "temperature must be from 0 to 2, not inf"),
    (("--top-p", "nan"), "Invalid value for '--top-p'"),
    (("--top-p", "inf"), "Invalid value for '--top-p'"),
    (("--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "nan"),
     "the timeout must be a positive number of seconds, not nan"),
    (("--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "inf"),
     "the timeout must be a positive number of seconds, not inf"),
])
def test_sampling_and_timeout_numbers_that_are_not_finite_are_refused(
        flags: tuple[str, ...], said: str, tiny: str, capsys: pytest.CaptureFixture[str]) -> None:
    message, _ = refused(capsys, "ask", tiny, "q", "--model", NO_MODEL, *flags)
    assert message.startswith(said)


def test_settings_given_as_a_library_refuse_numbers_that_are_not_finite() -> None:
    from memread.errors import UsageError
    from memread.settings import Settings
    from memread.strategies.evidence import EvidenceStrategy

    for changes in ({"temperature": float("nan")}, {"temperature": float("inf")}, {"top_p": float("nan")},
                    {"top_p": float("inf")}):
        with pytest.raises(UsageError):
            Settings(**changes)  # type: ignore[arg-type]
    for name in ("max_read",):
        for value in (float("nan"), float("inf"), "NaN", "-inf"):
            with pytest.raises(UsageError, match="takes a number"):
                EvidenceStrategy.parse_options({name: value})
    assert EvidenceStrategy.parse_options({"max_read": "0"}).max_read == 0.0  # zero is a share: one chunk


def test_an_age_or_a_limit_that_is_not_a_finite_number_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from memread.errors import UsageError
    from memread.ingest.expansion import max_ratio

    # "older than -1 day" is every run: refused, not obeyed.
    for age in ("-1d", "nand", "infd"):
        message, hint = refused(capsys, "traces", "rm", "--older-than", age)
        assert message == f"cannot read the age {age!r}" and "30m" in hint
    for limit in ("nan", "inf"):
        monkeypatch.setenv("MEMREAD_MAX_EXPANSION", limit)
        with pytest.raises(UsageError, match="is not a number"):
            max_ratio()


def test_help_and_memread_alone_are_not_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("-h", "--help"):
        status, _, err = run_memread("ask", flag)
        shown = capsys.readouterr().out
        assert status == 0 and err == "" and "memread ask" in shown and "--max-read" in shown
    status, _, err = run_memread()
    alone = capsys.readouterr()
    assert status == 2 and "error:" not in err + alone.err  # as before: the help, and Click's status for it
    assert "memread [OPTIONS] COMMAND" in alone.out


def test_tab_completion_still_completes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("_MEMREAD_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", "memread ask x --max-re")
    monkeypatch.setenv("COMP_CWORD", "3")
    status, _, err = run_memread()
    assert status == 0 and err == "" and capsys.readouterr().out.split() == ["--max-read"]
