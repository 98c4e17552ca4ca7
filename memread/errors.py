"""Errors a user can meet, each with a one-line message, a hint and a documented exit status.

The CLI prints ``error: <message>``, a blank line and ``hint: <hint>`` to stderr and exits with
``error.exit_status``. Nothing else in memread decides exit codes.
"""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Exit codes of the ``memread`` command (documented in docs/reference.md)."""

    OK = 0
    ERROR = 1  # anything not covered below (also: a trace that cannot be written)
    USAGE = 2  # bad command-line usage (Typer/Click uses 2 as well)
    INPUT = 3  # the document cannot be read: missing, unreadable, empty, corrupt, encrypted, binary, unknown
    BACKEND = 4  # the model or backend failed: model missing, server unreachable, wrong key, timeout
    BUDGET = 5  # the prompt would not fit the model's context window
    INTERRUPTED = 130  # Ctrl-C; the trace is kept and the run can be resumed


class MemreadError(Exception):
    """Base of every error shown to the user as one line plus a hint."""

    exit_status: ExitStatus = ExitStatus.ERROR

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(MemreadError):
    exit_status = ExitStatus.USAGE


class InputError(MemreadError):
    """The input cannot be read as a document."""

    exit_status = ExitStatus.INPUT


class BackendError(MemreadError):
    """The model or the inference backend failed."""

    exit_status = ExitStatus.BACKEND


class BudgetError(MemreadError):
    """A prompt would exceed the model's context window; memread refuses rather than truncate."""

    exit_status = ExitStatus.BUDGET


class TraceError(MemreadError):
    """A trace cannot be written, read or resumed."""

    exit_status = ExitStatus.ERROR
