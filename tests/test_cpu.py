"""What memread reads about the CPU, to say why a model format is the default here and to estimate the speed
report's arithmetic bound: x86 and ARM ``/proc/cpuinfo`` as the kernel writes them."""

from __future__ import annotations

from pathlib import Path

from memread.cpu import Cpu, _cpuinfo, machine_arch, this_cpu

ZEN5 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
cpu MHz\t\t: 2596.122
flags\t\t: fpu sse sse2 avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16

processor\t: 1
vendor_id\t: AuthenticAMD
cpu MHz\t\t: 9999.0
"""

GRAVITON = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm asimddp sve i8mm
CPU implementer\t: 0x41
"""


def test_an_avx512_vnni_server_is_read_from_the_first_processor_block(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(ZEN5)
    fields = _cpuinfo(info)
    assert fields["model name"] == "AMD EPYC" and fields["cpu MHz"] == "2596.122"  # not the second block's
    cpu = Cpu("x86_64", fields["model name"], 2, float(fields["cpu MHz"]), frozenset(fields["flags"].split()), 26)
    assert cpu.vector == "AVX-512 VNNI" and cpu.q4_0_fast_path
    assert cpu.describe() == "x86_64 AMD EPYC, 2 cores at 2596 MHz, AVX-512 VNNI"
    # What benchmark records carry: no clock (a hypervisor reports it loosely), the family that tells Zen 3 from 5.
    assert cpu.identity == "x86_64 AMD EPYC (family 26), 2 cores, AVX-512 VNNI"
    zen3 = Cpu("x86_64", "AMD EPYC", 2, 2445.4, frozenset({"avx2"}), 25)
    assert zen3.identity == "x86_64 AMD EPYC (family 25), 2 cores, AVX2"


def test_an_arm_server_and_older_x86_get_their_own_kernels_named(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(GRAVITON)
    arm = Cpu("aarch64", "", 4, None, frozenset(_cpuinfo(info)["Features"].split()))
    assert arm.vector == "NEON SVE dotprod i8mm" and arm.q4_0_fast_path
    assert arm.describe() == "aarch64, 4 cores, NEON SVE dotprod i8mm"
    avx2 = Cpu("x86_64", "", 1, None, frozenset({"sse2", "avx", "avx2", "fma"}))
    assert avx2.vector == "AVX2" and avx2.q4_0_fast_path and avx2.describe().startswith("x86_64, 1 core,")
    old = Cpu("x86_64", "", 2, None, frozenset({"sse2", "sse4_2"}))
    assert old.vector == "SSE only (no AVX2)" and not old.q4_0_fast_path


def test_this_machine_is_described_without_errors(tmp_path: Path) -> None:
    cpu = this_cpu()
    assert cpu.arch == machine_arch() and cpu.cores >= 1
    assert cpu.describe().startswith(cpu.arch)
    assert _cpuinfo(tmp_path / "missing") == {}  # no /proc (macOS, Windows): empty, not an error
