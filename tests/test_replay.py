"""`memread replay` and `memread traces`: revisit saved runs without a model."""

from __future__ import annotations

import io
import json
import os
import threading
import time

import pytest
import synthetic_run

from memread.cli.app import main
from memread.cli.environment import Environment, use
from memread.cli.player import Player
from memread.traces import TraceWriter, read_trace


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMREAD_HOME", str(tmp_path / "home"))
    yield tmp_path / "home"
    use(None)


def record(events=None, path=None):
    writer = TraceWriter(path)
    for event in events or synthetic_run.events():
        writer(event)
    writer.close()
    return writer.path


def memread(*args, stdout_tty=False, stderr_tty=False, no_color=False):
    env = Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=io.StringIO(), stdin_isatty=False,
                      stdout_isatty=stdout_tty, stderr_isatty=stderr_tty, columns=110,
                      environ={"NO_COLOR": "1"} if no_color else {"TERM": "xterm"})
    use(env)
    try:
        main(list(args))
        status = 0
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    return status, env.stdout.getvalue(), env.stderr.getvalue()


def test_replay_reproduces_each_steps_memory():
    player = Player(read_trace(record()))
    assert len(player) == 5  # after chunks 1-4, then chunk 5 with the answers
    for position in range(5):
        memories = [lane.memory for lane in player.state(position).lanes]
        assert memories[0] == synthetic_run.MEMORIES[0][position]
        assert memories[1] == synthetic_run.MEMORIES[1][min(position, 3)]
    assert player.state(3).lanes[1].exited_at == 3
    assert player.state().lanes[1].answer.answer == "Ada Quist"


def test_stepping_forward_and_back_with_keys():
    player = Player(read_trace(record()))
    player.handle("home")
    assert player.index == 0
    player.handle("left")
    assert player.index == 0
    player.handle("right")
    player.handle("right")
    assert player.state().steps_done == 3
    player.handle("end")
    assert player.is_final() and player.handle("quit") is False


def test_an_unfinished_trace_replays_as_far_as_it_got():
    path = record(synthetic_run.events(stop_after_step=2))
    player = Player(read_trace(path))
    assert player.state().steps_done == 3 and player.state().total is None
    assert player.state().lanes[0].memory == synthetic_run.MEMORIES[0][2]


def test_diff_prints_the_memory_changes_step_by_step_without_colour_in_a_pipe():
    status, out, _ = memread("replay", str(record()), "--diff")
    assert status == 0 and "\x1b" not in out
    lines = out.splitlines()
    assert "--- lane 1, memory before chunk 2" in lines
    assert "+The Widow's Pier was closed for 12 days after the February storm." in lines
    assert "= lane 2, chunk 2 (report.pdf p. 2): memory unchanged (check no · next continue)" in lines
    assert "+The lighthouse lamp was repaired by Ada Quist in October." in lines


def test_diff_on_a_terminal_is_coloured_unless_no_color():
    path = str(record())
    assert "\x1b[32m+" in memread("replay", path, "--diff", stdout_tty=True)[1]
    assert "\x1b" not in memread("replay", path, "--diff", stdout_tty=True, no_color=True)[1]


def test_replay_off_a_terminal_prints_the_view_at_a_step_as_plain_text():
    record()
    status, out, _ = memread("replay", "20261122", "--step", "2")  # a prefix of the run id
    assert status == 0 and "\x1b" not in out
    assert "chunk 2 · report.pdf p. 2" in out and "12 days" in out and "lighthouse lamp" not in out


def test_export_svg_and_html(tmp_path):
    path = str(record())
    status, _, err = memread("replay", path, "--export-svg", str(tmp_path / "view.svg"), "--step", "4",
                             "--export-html", str(tmp_path / "view.html"))
    assert status == 0 and "saved" in err
    svg = (tmp_path / "view.svg").read_text()
    assert svg.startswith("<svg") and "Ada&#160;Quist" in svg
    assert "lane&#160;2" in svg
    html = (tmp_path / "view.html").read_text()
    assert "<html" in html.lower() and "lighthouse" in html


def test_traces_lists_shows_and_removes_runs(home, tmp_path):
    record()
    elsewhere = tmp_path / "mine.jsonl"
    busy = TraceWriter(elsewhere)  # a run still going: its writer holds the trace
    for event in synthetic_run.events(stop_after_step=1):
        busy(event)
    assert read_trace(elsewhere).status() == "running"

    status, out, _ = memread("traces")
    assert status == 0
    header, *rows = out.splitlines()
    assert header.split()[:3] == ["RUN", "DATE", "STATUS"]
    assert len(rows) == 2 and "ok" in out and "Ada" not in out and "12" in rows[0] + rows[1]

    listed = json.loads(memread("traces", "--json")[1])
    assert {run["path"] for run in listed} >= {str(elsewhere)}
    assert {run["status"] for run in listed} == {"ok", "running"}

    status, out, _ = memread("traces", "show", str(elsewhere))
    assert status == 0 and "report.pdf p. 2" in out and "(not answered)" in out
    shown = json.loads(memread("traces", "show", str(elsewhere), "--json")[1])
    assert shown["status"] == "running" and shown["stats"]["chunks_read"] == 2

    status, _, err = memread("traces", "rm", str(elsewhere))
    assert status == 0 and "still being written" in err and elsewhere.exists()
    busy.close()
    assert json.loads(memread("traces", "show", str(elsewhere), "--json")[1])["status"] == "interrupted"

    finished = home / "data" / "traces" / "20261122-080000-abc123.jsonl"
    os.utime(finished, (time.time() - 3 * 86400,) * 2)
    status, _, err = memread("traces", "rm", "--older-than", "2d")
    assert status == 0 and "removed" in err and not finished.exists()


def test_unknown_runs_and_bad_ages_are_usage_errors():
    status, _, err = memread("replay", "nope")
    assert status == 2 and err.startswith("error: no saved run matches 'nope'") and "hint:" in err
    status, _, err = memread("traces", "rm", "--older-than", "soon")
    assert status == 2 and "30m, 12h, 7d, 2w" in err


def test_on_a_terminal_replay_plays_the_run_to_its_answer():
    path = str(record())
    status, out, err = memread("replay", path, "--speed", "50", stderr_tty=True)
    assert status == 0 and out == ""
    assert "chunk 1 · report.pdf p. 1" in err and "Ada Quist" in err and "5 chunks · " in err


def test_keys_step_through_a_replay_on_a_terminal():
    import pty

    master, slave = pty.openpty()
    path = str(record())
    env = Environment(stdin=os.fdopen(slave, "r"), stdout=io.StringIO(), stderr=io.StringIO(), stdin_isatty=True,
                      stdout_isatty=True, stderr_isatty=True, columns=110, environ={"TERM": "xterm"})
    use(env)
    # right, right, quit, typed once the replay has put the terminal in cbreak mode (which flushes input)
    threading.Timer(0.5, os.write, (master, b"\x1b[C\x1b[Cq")).start()
    try:
        main(["replay", path, "--step", "1", "--speed", "0.5"])
    except SystemExit as exit_:
        assert not exit_.code
    shown = env.stderr.getvalue()
    assert "chunk 3 · report.pdf p. 3" in shown and "Ada Quist" not in shown
    os.close(master)


def test_escape_sequences_and_letters_arriving_together_are_split():
    from memread.cli.cmd_replay import split_keys

    assert split_keys("\x1b[C\x1b[Dq x") == ["right", "left", "quit", "pause", ""]
