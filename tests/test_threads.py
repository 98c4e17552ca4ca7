"""The llama.cpp thread count follows what runs on the machine now: it drops while another process keeps a
core busy and comes back once it ends; a fixed count never moves."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from memread.backends.threads import (
    ThreadPolicy,
    default_threads,
    free_cores,
    other_runnable_tasks,
    own_runnable_threads,
    parse_cpu_list,
    physical_cores,
    runnable_tasks,
)
from memread.errors import UsageError

LINUX = os.path.exists("/proc/loadavg")


class Script:
    """A clock and a sample source that a test moves by hand."""

    def __init__(self, others: float) -> None:
        self.now = 0.0
        self.others = others
        self.samples = 0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def sample(self) -> float:
        self.samples += 1
        return self.others


def scripted(cores: int, others: float, **options: float) -> tuple[ThreadPolicy, Script]:
    script = Script(others)
    policy = ThreadPolicy(cores, clock=script.clock, sleep=script.sleep, others=script.sample,
                          **options)  # type: ignore[arg-type]
    return policy, script


def test_cores_and_the_fixed_count(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_cpu_list("0,64") == {0, 64} and parse_cpu_list("0-3,8-9\n") == {0, 1, 2, 3, 8, 9}
    cores = physical_cores()
    assert 1 <= cores <= len(os.sched_getaffinity(0))
    monkeypatch.delenv("MEMREAD_THREADS", raising=False)
    assert 1 <= default_threads() <= cores
    # Busy cores are left alone: one other busy task on 2 cores leaves 1 thread, never fewer than 1.
    assert free_cores(2, 0.2) == 2 and free_cores(2, 1) == 1 and free_cores(2, 6.5) == 1
    assert free_cores(8, 2.4) == 6 and free_cores(8, None) == 8
    monkeypatch.setenv("MEMREAD_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.setenv("MEMREAD_THREADS", "many")
    with pytest.raises(UsageError):
        default_threads()


def test_a_load_that_starts_or_ends_moves_the_count_within_half_a_window() -> None:
    policy, script = scripted(2, 0, interval=0.25, window=2.0)
    assert policy.threads() == 2 and policy.changes == []
    script.others = 1  # another process starts
    seen = []
    for _ in range(12):
        script.now += 0.25
        seen.append(policy.threads())
    # The median of the last 2 s turns once half of it is busy: the drop comes within a second, and stays.
    assert seen[:2] == [2, 2] and set(seen[3:]) == {1}
    script.others = 0  # and ends
    seen = []
    for _ in range(12):
        script.now += 0.25
        seen.append(policy.threads())
    assert seen[-1] == 2 and seen.index(2) <= 5  # back within ~1 s: never stuck at half speed
    assert [(c.before, c.after) for c in policy.changes] == [(2, 1), (1, 2)]
    assert "threads 2 -> 1" in policy.changes[0].message() and "1 other task" in policy.changes[0].message()


def test_a_moment_of_other_work_changes_nothing_and_samples_stay_rare() -> None:
    policy, script = scripted(2, 0, interval=0.25, window=2.0)
    for step in range(40):
        script.now += 0.05  # a token every 50 ms
        script.others = 3 if step == 20 else 0
        assert policy.threads() == 2
    assert script.samples <= 2 + 40 * 0.05 / 0.25 + 1  # one sample per interval, not per call
    assert policy.changes == []


def test_sparse_calls_decide_on_a_burst_of_samples_not_one_instant() -> None:
    policy, script = scripted(4, 0, interval=0.25, window=2.0, burst=3)
    before = script.samples
    script.now += 30  # one long prompt block later
    script.others = 2
    assert policy.threads() == 2
    assert script.samples - before == 3


def test_a_fixed_count_never_moves() -> None:
    script = Script(5)
    policy = ThreadPolicy(2, fixed=2, clock=script.clock, others=script.sample)
    for _ in range(10):
        script.now += 1
        assert policy.threads() == 2
    assert script.samples == 0 and not policy.follows_the_machine


def test_without_proc_the_load_average_decides_once() -> None:
    script = Script(0)
    policy = ThreadPolicy(2, clock=script.clock, others=lambda: None)
    script.now += 10
    assert 1 <= policy.threads() <= 2
    assert policy.changes == []


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_the_samples_read_proc_and_leave_this_process_out() -> None:
    total = runnable_tasks()
    assert total is not None and total >= 1  # this test is running
    assert own_runnable_threads() >= 1
    others = other_runnable_tasks()
    assert others is not None and others >= 0


def _busy_process() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def _ambient(seconds: float = 1.0) -> float:
    values = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = other_runnable_tasks()
        assert value is not None
        values.append(value)
        time.sleep(0.02)
    return statistics.median_low(values)


def _until(policy: ThreadPolicy, wanted: int, timeout: float = 15.0) -> list[int]:
    seen: list[int] = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        seen.append(policy.threads())
        if seen[-1] == wanted:
            return seen
        time.sleep(0.05)
    return seen


@pytest.fixture()
def busy() -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        started.append(_busy_process())
        return started[-1]

    yield start
    for process in started:
        process.kill()
        process.wait()


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_a_real_busy_process_takes_a_thread_while_it_runs_and_gives_it_back_when_it_ends(
    busy: Callable[[], subprocess.Popen[bytes]],
) -> None:
    # The machine the suite runs on may be busy already: the policy is given the cores that are free now
    # plus two, so it starts at 2 threads (on an idle 2-core machine that is just its 2 cores).
    cores = int(_ambient() + 0.5) + 2
    policy = ThreadPolicy(cores, interval=0.05, window=0.6)
    assert _until(policy, 2)[-1] == 2
    spinner = busy()
    assert _until(policy, 1)[-1] == 1, "the policy did not make room for a busy process"
    spinner.kill()
    spinner.wait()
    assert _until(policy, 2)[-1] == 2, "the policy stayed down after the busy process ended"
    moves = [(change.before, change.after) for change in policy.changes]
    assert (2, 1) in moves and moves[-1][1] == 2
