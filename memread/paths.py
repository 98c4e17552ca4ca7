"""Where memread keeps things, from platformdirs. ``MEMREAD_HOME`` puts everything under one folder."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def _dirs() -> tuple[Path, Path, Path]:
    home = os.environ.get("MEMREAD_HOME")
    if home:
        root = Path(home).expanduser()
        return root / "config", root / "cache", root / "data"
    from platformdirs import PlatformDirs

    dirs = PlatformDirs("memread", appauthor=False)
    return dirs.user_config_path, dirs.user_cache_path, dirs.user_data_path


def config_dir() -> Path:
    return _dirs()[0]


def cache_dir() -> Path:
    return _dirs()[1]


def data_dir() -> Path:
    return _dirs()[2]


def models_dir() -> Path:
    """GGUF model cache. ``MEMREAD_MODELS_DIR`` overrides it alone (tests keep the real cache so a model
    is pulled once while everything else goes to a temporary ``MEMREAD_HOME``)."""
    override = os.environ.get("MEMREAD_MODELS_DIR")
    if override:
        return Path(override).expanduser()
    return cache_dir() / "models"


def traces_dir() -> Path:
    return data_dir() / "traces"


def locations() -> dict[str, Path]:
    """Every location memread uses, by name (what ``memread paths`` prints)."""
    return {
        "config": config_dir(),
        "cache": cache_dir(),
        "models": models_dir(),
        "data": data_dir(),
        "traces": traces_dir(),
    }


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700: traces and caches hold the user's documents."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):  # not our folder to change (e.g. a shared --trace location)
        os.chmod(path, 0o700)
    return path
