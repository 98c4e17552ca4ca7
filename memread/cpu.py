"""What this CPU can do for llama.cpp: architecture, cores, clock and the vector instructions its kernels use.

``memread models`` uses it to say why a model format is the default here, ``benchmarks/bench_speed.py``
to estimate the machine's arithmetic bound, and the llama.cpp thread policy (:mod:`memread.backends.threads`)
to count the physical cores it shares out. Read from ``/proc/cpuinfo`` on Linux and ``sysctl`` on macOS;
anything that cannot be read is None or empty, never an error.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_ARCH_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def machine_arch() -> str:
    """``x86_64`` or ``aarch64`` (whatever the OS calls them), else the OS's own name."""
    machine = platform.machine().lower()
    return _ARCH_ALIASES.get(machine, machine)


@dataclass(frozen=True)
class Cpu:
    arch: str  # machine_arch()
    model: str  # "AMD EPYC", "Apple M2", "" when unknown
    cores: int  # physical cores this process may use
    mhz: float | None  # the clock /proc/cpuinfo reports (nominal under a hypervisor), None when unknown
    flags: frozenset[str]  # /proc/cpuinfo flags (x86) or features (ARM)
    family: int | None = None  # x86 "cpu family" (AMD Zen 4 = 25, Zen 5 = 26)

    @property
    def vector(self) -> str:
        """The widest integer dot-product instructions llama.cpp's CPU kernels can use here."""
        f = self.flags
        if self.arch == "x86_64":
            if "avx512_vnni" in f:
                return "AVX-512 VNNI"
            if "avx512f" in f:
                return "AVX-512"
            if "avx_vnni" in f:
                return "AVX-VNNI (256-bit)"
            if "avx2" in f:
                return "AVX2"
            return "SSE only (no AVX2)"
        if self.arch == "aarch64":
            parts = ["NEON"]
            if "sve" in f:
                parts.append("SVE")
            if "asimddp" in f:
                parts.append("dotprod")
            if "i8mm" in f:
                parts.append("i8mm")
            return " ".join(parts)
        return "unknown"

    @property
    def q4_0_fast_path(self) -> bool:
        """Whether llama.cpp has repacked (interleaved) Q4_0 matrix kernels for this CPU: AVX2 and up on
        x86 (seen here: ``repack tensor … with q4_0_8x8``), NEON dotprod or i8mm on ARM."""
        if self.arch == "x86_64":
            return "avx2" in self.flags
        if self.arch == "aarch64":
            return bool({"asimddp", "i8mm"} & self.flags)
        return False

    @property
    def identity(self) -> str:
        """What sets llama.cpp's speed here, without the clock a hypervisor reports loosely:
        ``x86_64 AMD EPYC (family 26), 2 cores, AVX-512 VNNI``. Benchmark records carry it, so that a folder
        whose samples ran on different machines measures each against its own machine's prefill rate."""
        return self._line(after_name=f" (family {self.family})" if self.family is not None else "")

    def describe(self) -> str:
        """One line: ``x86_64 AMD EPYC, 2 cores at 2596 MHz, AVX-512 VNNI``."""
        return self._line(after_cores=f" at {self.mhz:.0f} MHz" if self.mhz else "")

    def _line(self, *, after_name: str = "", after_cores: str = "") -> str:
        name = f" {self.model}" if self.model else ""
        cores = f"{self.cores} core{'s' if self.cores != 1 else ''}"
        return f"{self.arch}{name}{after_name}, {cores}{after_cores}, {self.vector}"


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
        with contextlib.suppress(ValueError):
            return max(1, int(_sysctl("hw.physicalcpu")))
    return max(1, (os.cpu_count() or 2) // 2)  # assume SMT: too few threads costs far less than too many


def this_cpu() -> Cpu:
    """The CPU memread runs on."""
    arch = machine_arch()
    fields = _cpuinfo()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    model = fields.get("model name", "")
    if sys.platform == "darwin":
        model = _sysctl("machdep.cpu.brand_string") or model
        if arch == "aarch64":  # every Apple Silicon core has NEON dotprod; i8mm from M2 on
            flags.update({"asimd", "asimddp"})
            if _sysctl("hw.optional.arm.FEAT_I8MM") == "1":
                flags.add("i8mm")
    mhz: float | None = None
    with contextlib.suppress(ValueError):
        mhz = float(fields.get("cpu MHz", "")) or None
    family: int | None = None
    with contextlib.suppress(ValueError):
        family = int(fields.get("cpu family", ""))
    return Cpu(arch=arch, model=model, cores=physical_cores(), mhz=mhz, flags=frozenset(flags), family=family)


def _cpuinfo(path: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """The first processor's ``key: value`` lines (every core reports the same on the machines we meet)."""
    fields: dict[str, str] = {}
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return fields
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def _sysctl(name: str) -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5,
                             env={**os.environ, "LC_ALL": "C"})
        return out.stdout.strip()
    return ""
