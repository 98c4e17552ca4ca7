"""memread's version, in a module of its own so that any part of memread can name it without importing the
package's face (``memread/__init__.py``)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

__version__ = "0.1.0"


@cache
def code_id() -> str:
    """Which code is running: the version, and when memread runs from a git checkout its commit
    (``0.1.0+g75e7590a1b2c``), with ``.dirty`` when files under ``memread/`` differ from that commit.
    A benchmark record carries it, so that records of a strategy changed mid-sweep can be told apart."""
    import subprocess

    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10,
                                  check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    if not (root / ".git").exists() or (commit := git("rev-parse", "--short=12", "HEAD")) is None:
        return __version__  # an installed wheel or sdist: the version says it
    changed = git("status", "--porcelain", "--", "memread")
    return f"{__version__}+g{commit}" + (".dirty" if changed else "")
