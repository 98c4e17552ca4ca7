"""Run ``memread`` in-process with an injected environment (httpie-style): fake streams and TTY flags, no
monkeypatching of sys.stdout. Shared by the CLI tests."""

from __future__ import annotations

import io
from collections.abc import Mapping

from memread.cli.app import main
from memread.cli.environment import Environment, use


def run_memread(*argv: str, stdin: bytes = b"", stderr_isatty: bool = False,
                environ: Mapping[str, str] | None = None) -> tuple[int, str, str]:
    """``memread argv…`` with a non-terminal stdout; return (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    env = Environment(stdin=io.TextIOWrapper(io.BytesIO(stdin)), stdout=out, stderr=err, stdin_isatty=False,
                      stdout_isatty=False, stderr_isatty=stderr_isatty)
    if environ is not None:
        env.environ = dict(environ)
    use(env)
    try:
        main(list(argv))
        status = 0
    except SystemExit as stop:
        status = int(stop.code or 0)
    finally:
        use(None)
    return status, out.getvalue(), err.getvalue()
