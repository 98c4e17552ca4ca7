"""The model cache: where a registry model lives, whether the file there is whole, and one writer at a time.

A model is checked against its pinned size and sha256 before use. Hashing 1.1 GB takes seconds, too slow for
every ``memread ask``: after a successful check a small marker (size, mtime, sha256) is written next to the
model, and a file whose size or mtime no longer match it is hashed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from memread import paths
from memread.errors import BackendError
from memread.models.catalog import ModelSpec, get_spec
from memread.models.progress import ProgressCallback, PullProgress

BLOCK = 1 << 20  # copy and hash in 1 MiB blocks: the models are 0.1–1.1 GB


def model_path(name: str) -> Path:
    """Where registry model ``name`` lives in the cache (whether or not it is there yet)."""
    spec = get_spec(name)
    return paths.models_dir() / spec.folder / spec.filename


def is_present(name: str) -> bool:
    """True when the model file is in the cache with the right size (the hash is checked on use)."""
    spec = get_spec(name)
    path = model_path(name)
    return path.is_file() and (path.stat().st_size == spec.size or _marker_matches(spec, path))


def sha256_of(path: Path, *, progress: Callable[[int], None] | None = None) -> str:
    """The hex sha256 of a file, read in blocks; ``progress`` gets the bytes read so far."""
    digest = hashlib.sha256()
    done = 0
    with open(path, "rb") as handle:
        while block := handle.read(BLOCK):
            digest.update(block)
            done += len(block)
            if progress:
                progress(done)
    return digest.hexdigest()


def recorded(path: Path) -> dict[str, object]:
    """What the marker next to ``path`` recorded when the file was last checked ({} when nothing)."""
    try:
        found = json.loads(_marker(path).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def write_marker(spec: ModelSpec, path: Path, *, sha256: str | None = None, made_by: str | None = None) -> None:
    """Record that ``path`` was checked: its size, mtime and sha256 (the pinned one unless ``sha256``), and the
    llama.cpp build that made it when it was converted here."""
    stat = path.stat()
    found: dict[str, object] = {"sha256": sha256 or spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    if made_by:
        found["made_by"] = made_by
    _marker(path).write_text(json.dumps(found))


def is_valid(spec: ModelSpec, path: Path, progress: ProgressCallback | None) -> bool:
    """Whether ``path`` holds ``spec``'s file: the marker says so, or the size and sha256 match (then recorded)."""
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
    write_marker(spec, path)
    return True


def verify(spec: ModelSpec, path: Path, progress: ProgressCallback | None) -> None:
    """BackendError, with the command that repairs it, unless ``path`` holds ``spec``'s file."""
    if not is_valid(spec, path, progress):
        raise BackendError(
            f"model file {path} is corrupt (size or sha256 differs from the registry)",
            hint=f"fetch it again with `memread models pull {spec.name} --force`",
        )


def check_gguf_magic(path: Path) -> None:
    """BackendError unless ``path`` can be read and starts as a GGUF file does."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as error:
        raise BackendError(f"cannot read model file {path}: {error.strerror}") from None
    if magic != b"GGUF":
        raise BackendError(f"{path} is not a GGUF model file",
                           hint="llama.cpp needs a .gguf file; convert the model or use a registry name")


@contextlib.contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
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


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _marker_matches(spec: ModelSpec, path: Path) -> bool:
    found = recorded(path)
    try:
        stat = path.stat()
    except OSError:
        return False
    if (found.get("size"), found.get("mtime_ns")) != (stat.st_size, stat.st_mtime_ns):
        return False
    if found.get("sha256") == spec.sha256:
        return True
    # A conversion made by a build the pin is not for: its own sha256 was recorded when it was made.
    made_by = found.get("made_by")
    return bool(spec.made_from and made_by and made_by != spec.made_from.pinned_build)
