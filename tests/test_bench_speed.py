"""The arithmetic behind benchmarks/speed/bench_speed.py's "share of the machine's bound": the parameters it reads
from a GGUF header, the per-cycle peaks it assumes, and how it measures other processes' load. (The speed
figures themselves live in benchmarks/results/, never in tests.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks._helpers import machine_bound
from memread.cpu import Cpu


@pytest.mark.model
def test_the_gguf_header_gives_smollm2s_block_weights_as_its_architecture_predicts(smollm2_path: Path) -> None:
    import llama_cpp

    facts = machine_bound.model_facts(smollm2_path)
    # SmolLM2-135M: 30 layers, d=576, 9 query heads and 3 KV heads of 64, FFN 1536.
    per_layer = 2 * 576 * 576 + 2 * 576 * 192 + 3 * 576 * 1536
    assert (facts.layers, facts.heads, facts.head_dim) == (30, 9, 64)
    assert facts.block_params == 30 * per_layer
    # Every other parameter is the (tied) embedding table and the 1-D norms, as llama.cpp counts them.
    embedding = 49152 * 576
    norms = 30 * 2 * 576 + 576
    llm = llama_cpp.Llama(str(smollm2_path), n_ctx=64, n_threads=1, verbose=False)
    try:
        assert facts.block_params + embedding + norms == llama_cpp.llama_model_n_params(llm.model)
    finally:
        llm.close()
    assert facts.tensor_types == {"Q4_1": 210, "Q8_0": 1, "F32": 61} and facts.file_type == 3
    assert 0 < facts.block_bytes < smollm2_path.stat().st_size
    matrix, attention = facts.prefill_flops_per_token(999)
    assert matrix == 2 * facts.block_params and attention == 2 * 2 * 30 * 9 * 64 * 500


def test_the_peak_is_vector_width_times_issue_rate_times_cores_times_clock() -> None:
    zen5 = Cpu("x86_64", "AMD EPYC", 2, 2600.0, frozenset({"avx2", "avx512f", "avx512_vnni"}), 26)
    peak = machine_bound.peak(zen5)
    assert (peak.int8_macs_per_cycle, peak.f32_flops_per_cycle) == (128, 64)
    assert peak.int8_macs_per_s == pytest.approx(2 * 2.6e9 * 128)
    zen4 = Cpu("x86_64", "", 8, 3000.0, frozenset({"avx2", "avx512f", "avx512_vnni"}), 25)
    assert machine_bound.peak(zen4).int8_macs_per_cycle == 64  # 512-bit ops run as two halves
    avx2 = Cpu("x86_64", "", 4, 3000.0, frozenset({"avx2"}))
    assert machine_bound.peak(avx2).int8_macs_per_cycle == 32  # two instructions per 32 MACs, two pipes
    arm = Cpu("aarch64", "", 4, None, frozenset({"asimddp", "i8mm"}))
    assert machine_bound.peak(arm).int8_macs_per_cycle == 64 and machine_bound.peak(arm).ghz == 3.0


def test_the_load_meter_counts_this_process_apart_from_the_others() -> None:
    with machine_bound.LoadMeter() as meter:
        total = 0
        for i in range(3_000_000):
            total += i
    result = meter.result
    assert result["wall_s"] > 0 and 0 < result["cpu_s"] <= result["wall_s"] * 1.5
    if Path("/proc/stat").exists():
        assert result["others_cores"] is not None and result["others_cores"] >= 0
