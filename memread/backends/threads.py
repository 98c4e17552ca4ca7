"""How many threads llama.cpp should use: the physical cores that other work is not using *now*.

llama.cpp's own defaults count logical CPUs (SMT siblings too), and its threads wait for each other at every
step of a matrix product, so one descheduled thread stalls the rest. Oversubscription is not a little slower;
it is several times slower (measurements in :func:`free_cores`). So memread gives llama.cpp the cores other
tasks leave free, and looks again during a run (:class:`ThreadPolicy`): a load that starts halfway through a
20-minute read takes a thread away within a second or two, and a load that ends gives it back as quickly.

"What runs now" is the kernel's count of runnable tasks (``/proc/loadavg``'s fourth field, the same number as
``procs_running`` in ``/proc/stat``), minus this process's own runnable threads, sampled a few times a second
at most and taken as the median over the last couple of seconds. The 1-minute load average is not used on
Linux: it still counts a job that ended 50 seconds ago.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from memread.cpu import parse_cpu_list, physical_cores
from memread.errors import UsageError

__all__ = ["ThreadChange", "ThreadPolicy", "default_threads", "fixed_threads", "free_cores",
           "load_average", "other_runnable_tasks", "own_runnable_threads", "parse_cpu_list",
           "physical_cores", "runnable_tasks"]


def fixed_threads() -> int | None:
    """``MEMREAD_THREADS`` as a number, or None when unset. A fixed count is never changed during a run."""
    value = os.environ.get("MEMREAD_THREADS")
    if not value:
        return None
    try:
        threads = int(value)
    except ValueError:
        raise UsageError(f"MEMREAD_THREADS must be a whole number, not {value!r}") from None
    if threads < 1:
        raise UsageError("MEMREAD_THREADS must be at least 1")
    return threads


def default_threads() -> int:
    """``MEMREAD_THREADS``, else the physical cores not busy right now (see :class:`ThreadPolicy`)."""
    fixed = fixed_threads()
    return fixed if fixed is not None else ThreadPolicy().threads()


def free_cores(cores: int, load: float | None) -> int:
    """Cores left for llama.cpp when ``load`` other tasks already run: at least 1. llama.cpp's threads wait
    for each other, so one descheduled thread stalls them all: on 2 cores with other work running, 2 threads
    ran SmolLM2 7x slower than 1 (prefill 29-39 vs 212 tok/s, decode 2.2-2.8 vs 22-31 tok/s). Rounding the
    load up from 0.5 errs towards fewer threads, which costs at most the idle share; too many costs several
    times over."""
    if load is None:
        return cores
    return max(1, min(cores, cores - int(load + 0.5)))


def load_average() -> float | None:
    """The 1-minute load average (where nothing better is known: macOS), or None (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


# --- what runs now ----------------------------------------------------------------------------------------


def _read_small(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 512)
    finally:
        os.close(fd)


def runnable_tasks() -> int | None:
    """Tasks running or waiting for a CPU right now, machine-wide (None where ``/proc`` is missing)."""
    try:
        return int(_read_small("/proc/loadavg").split()[3].split(b"/")[0])
    except (OSError, IndexError, ValueError):
        return None


def own_runnable_threads() -> int:
    """This process's threads that are running or waiting for a CPU (at least the caller itself)."""
    running = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 1
    for task in tasks:
        try:
            stat = _read_small(f"/proc/self/task/{task}/stat")
        except OSError:  # the thread ended meanwhile
            continue
        close = stat.rfind(b")")  # the thread name may contain spaces and parentheses
        if close >= 0 and stat[close + 2: close + 3] == b"R":
            running += 1
    return max(1, running)


def other_runnable_tasks() -> float | None:
    """Runnable tasks that are not this process's threads, counted on the CPUs this process may use
    (machine-wide count x share of CPUs, when affinity restricts it, e.g. a container's cpuset)."""
    total = runnable_tasks()
    if total is None:
        return None
    others = max(0, total - own_runnable_threads())
    online = os.cpu_count() or 1
    try:
        ours = len(os.sched_getaffinity(0))
    except AttributeError:
        ours = online
    return others * min(1.0, ours / online)


# --- the policy --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadChange:
    """The policy moved llama.cpp from ``before`` to ``after`` threads because ``others`` tasks were running."""

    seconds: float  # since the policy started
    before: int
    after: int
    others: float
    cores: int

    def message(self) -> str:
        what = (f"{self.others:g} other task(s) running" if self.after < self.before
                else f"other work eased ({self.others:g} task(s) running)")
        return (f"llama.cpp threads {self.before} -> {self.after} after {self.seconds:.0f} s: {what} on "
                f"{self.cores} core(s); --threads or MEMREAD_THREADS fixes the number")


class ThreadPolicy:
    """The llama.cpp thread count for the next call: the physical cores other running tasks leave free.

    ``threads()`` is called before every llama.cpp call; it costs a clock read, and every ``interval``
    seconds a sample of the runnable tasks (tens of microseconds). The count follows the median of the
    samples of the last ``window`` seconds, so a task that runs for a moment changes nothing while a load
    that starts or ends is followed within about ``window / 2``. When samples are sparse (one call lasts
    longer than ``window``, as a long prompt block does), a decision takes ``burst`` samples a millisecond
    apart instead of trusting one instant. ``fixed`` (``--threads``, ``MEMREAD_THREADS``) is never changed.
    Every change is kept in ``changes``.

    ``cores`` defaults to :func:`physical_cores`; ``clock``, ``sleep`` and ``others`` (the sample source,
    :func:`other_runnable_tasks`; None when unknown) can be replaced, e.g. by tests.
    """

    def __init__(self, cores: int | None = None, *, fixed: int | None = None, interval: float = 0.25,
                 window: float = 2.0, burst: int = 3, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 others: Callable[[], float | None] = other_runnable_tasks) -> None:
        self.cores = cores or physical_cores()
        self.fixed = fixed
        self.interval = interval
        self.window = window
        self.burst = max(1, burst)
        self._clock = clock
        self._sleep = sleep
        self._others = others
        self._samples: deque[tuple[float, float]] = deque()
        self._started = clock()
        self._last = float("-inf")
        self.changes: list[ThreadChange] = []
        self.others: float | None = None  # the median behind the current count
        self.current = fixed if fixed is not None else self._decide(self._started)

    @property
    def follows_the_machine(self) -> bool:
        """False when the count is fixed."""
        return self.fixed is None

    def threads(self) -> int:
        """The thread count to use now."""
        if self.fixed is not None:
            return self.fixed
        now = self._clock()
        if now - self._last < self.interval:
            return self.current
        target = self._decide(now)
        if target != self.current:
            self.changes.append(ThreadChange(now - self._started, self.current, target, self.others or 0.0,
                                             self.cores))
            self.current = target
        return self.current

    def _decide(self, now: float) -> int:
        sparse = not self._samples or now - self._samples[-1][0] > self.window
        for i in range(self.burst if sparse else 1):
            if i:
                self._sleep(0.001)
            value = self._others()
            if value is None:  # no /proc: the load average is all there is, read once
                self._last = float("inf")
                self.others = load_average()
                return free_cores(self.cores, self.others)
            self._samples.append((now, value))
        self._last = now
        while self._samples and now - self._samples[0][0] > self.window:
            self._samples.popleft()
        self.others = statistics.median_high([value for _, value in self._samples])
        return free_cores(self.cores, self.others)
