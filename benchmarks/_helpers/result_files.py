"""A benchmark's committed result: ``NAME.json`` (the figures) and ``NAME.md`` (what they say), both naming the
command that made them, when, and how busy the machine was, so every figure quoted elsewhere can be traced to
the run that produced it and repeated. Used by the scripts' ``--out PATH`` option (``PATH`` without suffix).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import sys
from pathlib import Path
from typing import Any

from benchmarks._helpers import ROOT


def command_line(argv: list[str] | None = None) -> str:
    """The command as typed from the repository root: ``python -m benchmarks.speed.bench_chunk --flag ...``
    (``argv``: the arguments, default the running script's)."""
    args = sys.argv[1:] if argv is None else argv
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name.startswith("benchmarks."):
        return shlex.join(["python", "-m", spec.name, *args])
    script = Path(sys.argv[0]).resolve()
    try:
        shown = str(script.relative_to(ROOT))
    except ValueError:
        shown = str(script)
    return shlex.join(["python", shown, *args])


def machine(load_before: tuple[float, ...], load_after: tuple[float, ...]) -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
    }


def write(out: str | Path, *, title: str, body: str, data: dict[str, Any], load_before: tuple[float, ...],
          load_after: tuple[float, ...], ratios: bool = True) -> tuple[Path, Path]:
    """Write ``out``.json and ``out``.md; return their paths. ``ratios``: the figures that matter are ratios
    of two things measured in the same run (said in the machine note)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    when = datetime.date.today().isoformat()
    host = machine(load_before, load_after)
    command = command_line()
    record = {"command": command, "measured": when, "machine": host, **data}
    json_path, md_path = out.with_suffix(".json"), out.with_suffix(".md")
    json_path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    before = ", ".join(f"{x:g}" for x in host["loadavg_before"])
    after = ", ".join(f"{x:g}" for x in host["loadavg_after"])
    md_path.write_text(
        f"# {title} (measured {when})\n\n"
        f"```bash\n{command}\n```\n\n"
        f"Machine: {host['cpus']} CPUs ({host['platform']}, Python {host['python']}); load average (1, 5, 15 min) "
        f"{before} before the run and {after} after it. The machine was shared with other work, so absolute "
        "times are inflated and vary from run to run"
        + ("; the ratios compare two things measured in the same run.\n\n" if ratios else ".\n\n") +
        f"{body.strip()}\n\nRaw figures: [{json_path.name}]({json_path.name}).\n",
        encoding="utf-8",
    )
    return json_path, md_path


def cell(text: Any, width: int) -> str:
    """``text`` as one table cell: on one line, at most ``width`` characters, its pipes escaped."""
    return " ".join(str(text).split())[:width].replace("|", "\\|")


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def emit(text: str, out: Path | None) -> int:
    """A report that is its own result: to stdout, and to ``out`` when given (a script's ``--out FILE.md``)."""
    sys.stdout.write(text)
    if out is not None:
        out.write_text(text, encoding="utf-8")
    return 0
