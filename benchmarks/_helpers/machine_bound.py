"""The machine's arithmetic bound for a model's prefill, and how busy the machine was while we measured.

Used by bench_speed.py. Three pieces:

* :func:`model_facts` reads a GGUF's header (no weights loaded): the parameters every prompt token multiplies
  through (the 2-D weight matrices of the transformer blocks; the output head runs once per prompt, for the last
  token only), the weight bytes a decoded token reads, and the attention shape.
* :func:`peak` estimates this CPU's int8 multiply-accumulates and f32 FLOPs per second from its vector width,
  cores and clock (``memread.cpu``), saying which assumption it made; :func:`measured_kernel_peak` checks the
  per-cycle assumption with a small C kernel (needs a C compiler; skipped otherwise).
* :class:`LoadMeter` says how many cores other processes used during a measurement (``/proc/stat`` minus this
  process's own CPU time), beside the load averages.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

from memread.cpu import Cpu

# --- GGUF header --------------------------------------------------------------------------------------------

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def _read(handle: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize(fmt)
    return struct.unpack(fmt, handle.read(size))[0]


def _string(handle: BinaryIO) -> str:
    return handle.read(_read(handle, "<Q")).decode("utf-8", errors="replace")


def _value(handle: BinaryIO, kind: int) -> Any:
    if kind in _SCALARS:
        return _read(handle, _SCALARS[kind])
    if kind == 8:
        return _string(handle)
    if kind == 9:
        item, count = _read(handle, "<I"), _read(handle, "<Q")
        if item in _SCALARS:  # skip numeric arrays (token scores, types) in one read
            handle.seek(struct.calcsize(_SCALARS[item]) * count, os.SEEK_CUR)
            return None
        for _ in range(count):
            _value(handle, item)
        return None
    raise ValueError(f"unknown GGUF value type {kind}")


@dataclass(frozen=True)
class ModelFacts:
    file_type: int  # general.file_type (2 = Q4_0, 15 = Q4_K_M)
    layers: int
    heads: int
    head_dim: int
    block_params: int  # elements of the 2-D weight matrices in the transformer blocks
    block_bytes: int  # their bytes in the file
    head_bytes: int  # bytes of the output head (output.weight, or token_embd when tied)
    tensor_types: dict[str, int]  # type name -> tensor count

    def prefill_flops_per_token(self, prompt: int) -> tuple[float, float]:
        """(matrix FLOPs, attention FLOPs) per token of a fresh ``prompt``-token prefill: 2 per weight, and
        per layer 2·heads·head_dim FLOPs for QK plus as many for AV per earlier token, (prompt+1)/2 on average."""
        matrix = 2.0 * self.block_params
        attention = 2.0 * 2 * self.layers * self.heads * self.head_dim * (prompt + 1) / 2
        return matrix, attention


_TYPE_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 10: "Q2_K", 11: "Q3_K",
               12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 30: "BF16"}


def model_facts(path: Path) -> ModelFacts:
    with open(path, "rb") as handle:
        if handle.read(4) != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        _version, tensors, kvs = _read(handle, "<I"), _read(handle, "<Q"), _read(handle, "<Q")
        meta: dict[str, Any] = {}
        for _ in range(kvs):
            key = _string(handle)
            meta[key] = _value(handle, _read(handle, "<I"))
        infos = []
        for _ in range(tensors):
            name = _string(handle)
            dims = [_read(handle, "<Q") for _ in range(_read(handle, "<I"))]
            infos.append((name, dims, _read(handle, "<I"), _read(handle, "<Q")))
        alignment = int(meta.get("general.alignment") or 32)
        data_start = -(-handle.tell() // alignment) * alignment
    end = path.stat().st_size - data_start
    offsets = sorted(offset for *_rest, offset in infos) + [end]
    size_at = {offset: offsets[i + 1] - offset for i, offset in enumerate(offsets[:-1])}
    arch = meta["general.architecture"]
    heads = int(meta[f"{arch}.attention.head_count"])
    embd = int(meta[f"{arch}.embedding_length"])
    names = {name for name, *_ in infos}
    head_name = "output.weight" if "output.weight" in names else "token_embd.weight"
    types: dict[str, int] = {}
    block_params = block_bytes = head_bytes = 0
    for name, dims, kind, offset in infos:
        types[_TYPE_NAMES.get(kind, str(kind))] = types.get(_TYPE_NAMES.get(kind, str(kind)), 0) + 1
        if name.startswith("blk.") and len(dims) == 2:
            block_params += dims[0] * dims[1]
            block_bytes += size_at[offset]
        if name == head_name:
            head_bytes = size_at[offset]
    return ModelFacts(file_type=int(meta.get("general.file_type", -1)), layers=int(meta[f"{arch}.block_count"]),
                      heads=heads, head_dim=int(meta.get(f"{arch}.attention.key_length") or embd // heads),
                      block_params=block_params, block_bytes=block_bytes, head_bytes=head_bytes, tensor_types=types)


# --- the CPU's peak -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Peak:
    cores: int
    ghz: float
    int8_macs_per_cycle: int  # per core
    f32_flops_per_cycle: int  # per core
    basis: str  # the assumption, in words

    @property
    def int8_macs_per_s(self) -> float:
        return self.cores * self.ghz * 1e9 * self.int8_macs_per_cycle

    @property
    def f32_flops_per_s(self) -> float:
        return self.cores * self.ghz * 1e9 * self.f32_flops_per_cycle

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "int8_macs_per_s": self.int8_macs_per_s, "f32_flops_per_s": self.f32_flops_per_s}


def peak(cpu: Cpu) -> Peak:
    """Vector width × issue rate × cores × clock. The issue rate is the assumption: two vector multiply pipes
    per core, except that Zen 4 (x86 family 25) runs a 512-bit instruction as two 256-bit halves."""
    ghz = (cpu.mhz or 3000.0) / 1000
    f = cpu.flags
    if cpu.arch == "x86_64":
        bits = 512 if "avx512f" in f else 256 if "avx2" in f else 128
        pipes = 1 if bits == 512 and cpu.family == 25 else 2
        if "avx512_vnni" in f and bits == 512:
            per_instruction, how = 64, "VPDPBUSD (64 u8×s8 MACs per 512-bit instruction)"
        elif "avx_vnni" in f or "avx512_vnni" in f:
            per_instruction, how = 32, "VPDPBUSD on 256 bits (32 MACs per instruction)"
        else:  # VPMADDUBSW + VPMADDWD: two instructions for bits/8 MACs
            per_instruction, how = bits // 16, f"VPMADDUBSW+VPMADDWD ({bits // 8} MACs per two {bits}-bit instructions)"
        fma = bits // 32 * 2
        int8 = per_instruction * pipes
        basis = (f"{how} × {pipes} per cycle = {int8} int8 MACs/cycle/core; f32: {bits // 32} lanes × 2 (FMA) × "
                 f"{pipes} = {fma * pipes} FLOPs/cycle/core")
        return Peak(cpu.cores, ghz, int8, fma * pipes, basis)
    if cpu.arch == "aarch64":
        per_instruction = 32 if "i8mm" in f else 16 if "asimddp" in f else 8
        how = "SMMLA (32 MACs per 128-bit instruction)" if "i8mm" in f else (
            "SDOT (16 MACs per 128-bit instruction)" if "asimddp" in f else "NEON widening multiply (8 MACs)")
        basis = f"{how} × 2 per cycle; f32: 4 lanes × 2 (FMA) × 2 = 16 FLOPs/cycle/core"
        return Peak(cpu.cores, ghz, per_instruction * 2, 16, basis)
    return Peak(cpu.cores, ghz, 16, 8, "unknown architecture: 16 int8 MACs and 8 f32 FLOPs per cycle assumed")


_KERNEL = r"""
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* 16 independent accumulators in named registers (an array is spilled to the stack), each started from a
   different value (identical chains are merged into one by the compiler). */
#define EACH(S) S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11) S(12) S(13) S(14) S(15)
static double now(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    long iters = atol(argv[1]);
    double t0, t1;
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
#define ZERO_I(k) __m512i a##k = _mm512_set1_epi32(k + argc);
#define STEP_I(k) a##k = _mm512_dpbusd_epi32(a##k, x, y);
#define SUM_I(k) s = _mm512_add_epi32(s, a##k);
#define ZERO_F(k) __m512 f##k = _mm512_set1_ps((float)(k + argc));
#define STEP_F(k) f##k = _mm512_fmadd_ps(f##k, v, w);
#define SUM_F(k) t = _mm512_add_ps(t, f##k);
    __m512i x = _mm512_set1_epi8((char)argc), y = _mm512_set1_epi8((char)(argc + 1)), s = _mm512_setzero_si512();
    EACH(ZERO_I)
    t0 = now();
    for (long i = 0; i < iters; i++) { EACH(STEP_I) }
    t1 = now();
    EACH(SUM_I)
    printf("int8 %lld %.6f %d\n", (long long)iters * 16 * 64, t1 - t0, _mm512_reduce_add_epi32(s));
    __m512 v = _mm512_set1_ps(0.999f), w = _mm512_set1_ps((float)argc * 1e-9f), t = _mm512_setzero_ps();
    EACH(ZERO_F)
    t0 = now();
    for (long i = 0; i < iters; i++) { EACH(STEP_F) }
    t1 = now();
    EACH(SUM_F)
    printf("f32 %lld %.6f %f\n", (long long)iters * 16 * 32, t1 - t0, _mm512_reduce_add_ps(t));
#elif defined(__AVX2__) && defined(__FMA__)
#define ZERO_I(k) __m256i a##k = _mm256_set1_epi32(k + argc);
#define STEP_I(k) a##k = _mm256_add_epi32(a##k, _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), one));
#define SUM_I(k) s = _mm256_add_epi32(s, a##k);
#define ZERO_F(k) __m256 f##k = _mm256_set1_ps((float)(k + argc));
#define STEP_F(k) f##k = _mm256_fmadd_ps(f##k, v, w);
#define SUM_F(k) t = _mm256_add_ps(t, f##k);
    __m256i x = _mm256_set1_epi8((char)argc), y = _mm256_set1_epi8((char)(argc + 1));
    __m256i one = _mm256_set1_epi16(1), s = _mm256_setzero_si256();
    EACH(ZERO_I)
    t0 = now();
    for (long i = 0; i < iters; i++) { EACH(STEP_I) }
    t1 = now();
    EACH(SUM_I)
    printf("int8 %lld %.6f %d\n", (long long)iters * 16 * 32, t1 - t0, _mm256_extract_epi32(s, 0));
    __m256 v = _mm256_set1_ps(0.999f), w = _mm256_set1_ps((float)argc * 1e-9f), t = _mm256_setzero_ps();
    EACH(ZERO_F)
    t0 = now();
    for (long i = 0; i < iters; i++) { EACH(STEP_F) }
    t1 = now();
    EACH(SUM_F)
    float out[8];
    _mm256_storeu_ps(out, t);
    printf("f32 %lld %.6f %f\n", (long long)iters * 16 * 16, t1 - t0, out[0]);
#else
    printf("unsupported 0 0 0\n");
#endif
    return 0;
}
"""


def measured_kernel_peak(iterations: int = 100_000_000) -> dict[str, float] | None:
    """One core's int8 MACs and f32 FLOPs per CPU-second with independent VNNI (or AVX2) and FMA chains,
    timed in thread CPU time so that other processes on the core do not count. None without a C compiler or
    on a CPU the kernel does not cover."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not compiler:
        return None
    with tempfile.TemporaryDirectory() as work:
        source, binary = Path(work) / "peak.c", Path(work) / "peak"
        source.write_text(_KERNEL)
        built = subprocess.run([compiler, "-O2", "-march=native", "-o", str(binary), str(source)],
                               capture_output=True, text=True, check=False)
        if built.returncode != 0:
            return None
        out = subprocess.run([str(binary), str(iterations)], capture_output=True, text=True, check=False).stdout
    result: dict[str, float] = {}
    for line in out.splitlines():
        kind, ops, seconds, _ = line.split()
        if kind in ("int8", "f32") and float(seconds) > 0:
            result[f"{kind}_per_cpu_s"] = float(ops) / float(seconds)
    return result or None


# --- how busy the machine was -------------------------------------------------------------------------------


def _busy_seconds() -> float | None:
    """CPU seconds all processes have spent busy since boot (user + nice + system + irq + softirq)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except (OSError, IndexError):
        return None
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + nice + system + irq + softirq) / ticks


def _own_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


class LoadMeter:
    """``with LoadMeter() as meter: …`` then ``meter.result``: wall seconds, this process's CPU seconds, the
    average number of cores other processes kept busy meanwhile, and the 1-minute load average at the end.

    With one llama.cpp thread, CPU seconds are the work itself, whatever else runs: the time the thread waited
    for a core is not in them. With several threads they also count threads spinning at barriers."""

    def __enter__(self) -> LoadMeter:
        self._start = (time.perf_counter(), _busy_seconds(), _own_seconds())
        self.result: dict[str, Any] = {}
        return self

    def __exit__(self, *exc: object) -> None:
        wall0, busy0, own0 = self._start
        wall = time.perf_counter() - wall0
        busy1, own1 = _busy_seconds(), _own_seconds()
        others = None
        if busy0 is not None and busy1 is not None and wall > 0:
            others = max(0.0, (busy1 - busy0 - (own1 - own0)) / wall)
        self.result = {"wall_s": wall, "cpu_s": own1 - own0,
                       "others_cores": None if others is None else round(others, 2),
                       "load1": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}
