"""Making a derived format: another entry's pinned file converted here by llama.cpp's own quantizer
(``llama_model_quantize``), into the same cache folder, and checked against its pin (see
:class:`memread.models.catalog.Conversion` for when a different result is an error and when it is kept).

The quantizer runs in a child process: llama.cpp logs every tensor to stderr (kept in a file, shown on
failure), and a child can be stopped on Ctrl-C while the C call cannot.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memread.cpu import machine_arch, physical_cores
from memread.errors import BackendError
from memread.models.cache import exclusive, is_valid, model_path, sha256_of, write_marker
from memread.models.catalog import Conversion, ModelSpec
from memread.models.progress import ProgressCallback, PullProgress

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


def converter_build() -> str:
    """The llama.cpp build that converts here, as :attr:`Conversion.pinned_build` names one."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("llama-cpp-python")
    except PackageNotFoundError:
        installed = "(not installed)"
    return f"llama-cpp-python {installed} on {machine_arch()}"


def convert_model(spec: ModelSpec, conversion: Conversion, source: Path, *, force: bool,
                  progress: ProgressCallback | None) -> Path:
    """Make ``spec`` from ``source`` (the file of ``conversion.source``) next to it in the cache, unless a
    verified copy is there and not ``force``. Returns its path."""
    target = model_path(spec.name)
    directory = target.parent  # the source's folder: same filesystem, so the final rename is atomic
    with exclusive(directory / ".lock"):
        if not force and is_valid(spec, target, progress):
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
        write_marker(spec, target, sha256=digest, made_by=build)
    return target


def quantize(source: Path, target: Path, ftype: str, *, threads: int | None = None,
             progress: ProgressCallback | None = None, model: str = "", expected: int = 0) -> None:
    """Write ``source`` converted to ``ftype`` ("Q4_0", …) at ``target`` with llama.cpp's quantizer (default
    parameters, requantizing allowed). ``progress`` gets the bytes written against ``expected``. Raises
    BackendError when llama.cpp cannot be run or refuses."""
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
