"""`memread train data | check | run | export`: help, output, one-line errors with hints and exit statuses.

These run without the train extra (as memread's own CI environment is); what needs verl is in test_train_verl.py.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

# pytest puts tests/ on sys.path; not tests.cli_runner: verl and TransferQueue install a package named "tests"
from cli_runner import run_memread

from memread.errors import ExitStatus

NO_VERL = importlib.util.find_spec("verl") is None


def test_train_lists_its_commands(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _err = run_memread("train", "--help")
    out += capsys.readouterr().out  # Typer draws help on the process's own stdout
    assert status == 0
    for command in ("data", "check", "run", "export"):
        assert command in out


def test_run_print_writes_the_presets_script_on_stdout() -> None:
    status, out, err = run_memread("train", "run", "--preset", "grumem", "--model", "Qwen/Qwen2.5-3B-Instruct",
                                   "--train-files", "train.parquet", "--gpus", "4", "--print", "trainer.save_freq=20")
    assert status == 0, err
    assert out.startswith("#!/usr/bin/env bash\n")
    assert "+memread.alpha=0.9" in out and "trainer.n_gpus_per_node=4" in out
    assert out.rstrip().endswith('"$@"') and "trainer.save_freq=20" in out


def test_an_unknown_preset_is_a_usage_error_with_the_choices() -> None:
    status, _out, err = run_memread("train", "run", "--preset", "ppo", "--model", "m", "--train-files", "t", "--print")
    assert status == ExitStatus.USAGE
    assert err.startswith("error: unknown training preset 'ppo'")
    assert "hint: choose one of: memagent, rememr1, grumem" in err


def test_an_extra_argument_that_is_not_an_override_is_refused() -> None:
    status, _out, err = run_memread("train", "run", "--preset", "memagent", "--model", "m", "--train-files", "t",
                                    "--print", "oops")
    assert status == ExitStatus.USAGE and "not a verl override: 'oops'" in err


@pytest.mark.skipif(not NO_VERL, reason="the train extra is installed here")
@pytest.mark.parametrize("args", [("check",), ("run", "--preset", "memagent", "--model", "m", "--train-files", "t",
                                              "--dry-run")])
def test_without_the_extra_the_commands_that_need_it_say_how_to_install_it(args: tuple[str, ...]) -> None:
    status, _out, err = run_memread("train", *args)
    assert status == ExitStatus.USAGE
    assert "needs the train extra" in err.splitlines()[0]
    assert "hint: pip install torch==2.13.0" in err and "memread[train]" in err


def test_data_from_a_jsonl_writes_rows_and_prints_their_path(tmp_path: Path) -> None:
    source = tmp_path / "mine.jsonl"
    source.write_text(json.dumps({"question": "Who?", "answers": ["Ada"], "context": "Ada did it."}) + "\n",
                      encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    status, stdout, err = run_memread("train", "data", "--jsonl", str(source), "--out", str(out))
    assert status == 0, err
    assert stdout.strip() == str(out) and "1 row(s) written" in err
    assert json.loads(out.read_text(encoding="utf-8"))["reward_model"]["ground_truth"] == ["Ada"]


def test_data_needs_tasks_or_a_jsonl_and_a_bad_record_is_an_input_error(tmp_path: Path) -> None:
    status, _out, err = run_memread("train", "data", "--out", str(tmp_path / "x.jsonl"))
    assert status == ExitStatus.USAGE and "give benchmark tasks or --jsonl" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q"}\n', encoding="utf-8")
    status, _out, err = run_memread("train", "data", "--jsonl", str(bad), "--out", str(tmp_path / "x.jsonl"))
    assert status == ExitStatus.INPUT
    assert err.startswith("error: bad.jsonl line 1 has no answers") and "hint:" in err


def test_variable_tracking_rows_from_the_benchmark_builder(tmp_path: Path) -> None:
    out = tmp_path / "vt.jsonl"
    status, _stdout, err = run_memread("train", "data", "vt", "--lengths", "600", "--samples", "2", "--out", str(out))
    assert status == 0, err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2 and all(len(r["extra_info"]["evidence"]) == 5 for r in rows)


def test_export_refuses_a_missing_checkpoint_before_anything_else(tmp_path: Path) -> None:
    status, _out, err = run_memread("train", "export", str(tmp_path / "nope"), "--out", str(tmp_path / "hf"),
                                    "--preset", "memagent")
    assert status == ExitStatus.INPUT and "no such checkpoint folder" in err
