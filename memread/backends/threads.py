"""How many threads llama.cpp should use on this machine: physical cores that are not already busy.

llama.cpp's own defaults count logical CPUs (SMT siblings too), and its threads spin-wait for each other,
so one descheduled thread stalls the rest. Oversubscription is not a little slower; it is several times
slower (measurements in :func:`free_cores`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from memread.errors import UsageError


def physical_cores() -> int:
    """CPU cores this process may run on, counting SMT siblings (hyper-threads) once."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return _physical_cores_elsewhere()
    seen: set[int] = set()
    cores = 0
    for cpu in cpus:
        if cpu in seen:
            continue
        cores += 1
        seen.add(cpu)
        seen.update(_siblings(cpu))
    return max(1, cores)


def _siblings(cpu: int) -> set[int]:
    try:
        text = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list").read_text()
    except OSError:
        return set()
    return parse_cpu_list(text)


def parse_cpu_list(text: str) -> set[int]:
    """Linux's CPU list syntax: ``"0,64"``, ``"0-3,8-11"``."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if "-" in part:
            low, high = part.split("-")
            cpus.update(range(int(low), int(high) + 1))
        elif part:
            cpus.add(int(part))
    return cpus


def _physical_cores_elsewhere() -> int:
    if sys.platform == "darwin":
        import subprocess

        with contextlib.suppress(OSError, ValueError, subprocess.SubprocessError):
            out = subprocess.run(["sysctl", "-n", "hw.physicalcpu"], capture_output=True, text=True, timeout=5)
            return max(1, int(out.stdout.strip()))
    return max(1, (os.cpu_count() or 2) // 2)  # assume SMT: too few threads costs far less than too many


def default_threads() -> int:
    """``MEMREAD_THREADS``, else the physical cores not already busy (see :func:`free_cores`)."""
    value = os.environ.get("MEMREAD_THREADS")
    if value:
        try:
            threads = int(value)
        except ValueError:
            raise UsageError(f"MEMREAD_THREADS must be a whole number, not {value!r}") from None
        if threads < 1:
            raise UsageError("MEMREAD_THREADS must be at least 1")
        return threads
    return free_cores(physical_cores(), load_average())


def free_cores(cores: int, load: float | None) -> int:
    """Cores left for llama.cpp when ``load`` runnable processes (the 1-minute load average) already use
    some: at least 1. llama.cpp's threads spin-wait for each other, so one descheduled thread stalls them
    all: on 2 cores with other work running, 2 threads ran SmolLM2 7x slower than 1 (prefill 29-39 vs
    212 tok/s, decode 2.2-2.8 vs 22-31 tok/s). Rounding the load up from 0.5 errs towards fewer threads,
    which costs at most the idle share; too many costs several times over."""
    if load is None:
        return cores
    return max(1, min(cores, cores - int(load + 0.5)))


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows
        return None


