"""A C library's stderr kept off the user's terminal while it runs, and read back when it fails.

llama.cpp prints while loading a model even when told not to, from C, straight to file descriptor 2: Python's
``sys.stderr`` never sees it. :func:`captured_stderr` points fd 2 at a temporary file for a block, and
:func:`tail` reads the lines worth showing from it when the block failed.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def captured_stderr() -> Iterator[Path | None]:
    """Send fd 2 to a temporary file, deleted afterwards; yields its path. fd 2 is process-wide, so only the main
    thread does this; elsewhere (and where there is no fd 2) it yields None and the noise is accepted rather than
    hiding another thread's errors."""
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 at all (a daemon): nothing to protect
        yield None
        return
    handle, name = tempfile.mkstemp(prefix="memread-llama-", suffix=".log")
    try:
        os.dup2(handle, 2)
        yield Path(name)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(handle)
        with contextlib.suppress(OSError):
            os.unlink(name)


def tail(log: Path | None, pattern: re.Pattern[str], lines: int = 2) -> str:
    """The last ``lines`` lines of ``log`` that match ``pattern``, joined by `` | ``; "" when none or no log."""
    if log is None:
        return ""
    with contextlib.suppress(OSError):
        text = log.read_text(errors="replace").splitlines()
        ours = [line.strip() for line in text if pattern.match(line)]
        return " | ".join(ours[-lines:])
    return ""
