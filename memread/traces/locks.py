"""Whether a trace is still being written: the writer's advisory lock, and its process where locks are missing.

The writer holds an exclusive ``flock`` on the trace for the whole run and the system drops it when the process
ends, even on kill -9, so a held lock means exactly "still being written" (no stale lock files, no pid reuse).
Where the file system has no locks, the writing session's pid on the same host stands in.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def lock(fd: int, *, exclusive: bool) -> bool:
    """Take an advisory lock on the trace without waiting; False when another writer holds it."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no locking, the liveness check in Trace.status() stands in
        return True
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return True  # a file system without locks (some network mounts): do not block the run
    return True


def held_by_writer(path: Path) -> bool | None:
    """Whether a writer holds the trace's lock; None when that cannot be told."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)  # closing releases a lock we took
    return False


def writer_alive(session: Mapping[str, Any]) -> bool:
    """Is the process that wrote this session (a header or ``resumed`` record) still running (same host only)?"""
    pid = session.get("pid")
    if not isinstance(pid, int) or session.get("host") != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
