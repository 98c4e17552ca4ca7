"""How `evidence`'s docqa figures moved across its frozen versions: design, held-out and two-hop, from the
committed acceptance folders (no model run).

Each ``docqa-MODEL`` (v7) and ``docqa-vN-MODEL`` folder under ``--bench`` holds one version's 45 scored answers.
A row a version, in version order, with the questions whose score changed from the row before, by id only (the
held-out questions are never read while designing; their scores are what the goal is judged on).

    python -m benchmarks.accuracy.held_out_history [--bench benchmarks/results/bench] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._helpers.result_files import emit, table

COLUMNS = ["version", "all", "design", "held-out", "two-hop", "design changed", "held-out changed"]


def version_of(folder: Path, model: str) -> int | None:
    """7 for ``docqa-MODEL`` (the first frozen version), N for ``docqa-vN-MODEL``, None for any other folder."""
    if folder.name == f"docqa-{model}":
        return 7
    found = re.fullmatch(rf"docqa-v(\d+)-{re.escape(model)}", folder.name)
    return int(found.group(1)) if found else None


def scores(folder: Path) -> dict[str, dict[str, Any]]:
    """Each question's id to its kind, split and whether `evidence` answered it right."""
    rows = [json.loads(line) for line in (folder / "scores.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return {r["docqa"]["id"]: {**r["docqa"], "right": bool(r.get("score"))} for r in rows
            if r.get("method") == "evidence" and r.get("status") == "ok"}


def rows(bench: Path, model: str) -> list[list[str]]:
    found = sorted((v, f) for f in bench.iterdir() if f.is_dir() and (v := version_of(f, model)) is not None
                   and (f / "scores.jsonl").is_file())
    body, before = [], None
    for version, folder in found:
        now = scores(folder)

        def count(keep: Any, now: dict[str, dict[str, Any]] = now) -> str:
            picked = [q for q in now.values() if keep(q)]
            return f"{sum(q['right'] for q in picked)}/{len(picked)}"

        def changed(split: str, now: dict[str, dict[str, Any]] = now,
                    before: dict[str, dict[str, Any]] | None = before) -> str:
            if before is None:
                return "—"
            moved = [f"{'+' if now[i]['right'] else '−'}{i}" for i in sorted(now)
                     if now[i]["split"] == split and i in before and now[i]["right"] != before[i]["right"]]
            return ", ".join(moved) or "—"

        body.append([f"v{version}", count(lambda q: True), count(lambda q: q["split"] == "design"),
                     count(lambda q: q["split"] == "held-out"), count(lambda q: q["kind"] == "two-hop"),
                     changed("design"), changed("held-out")])
        before = now
    return body


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, default=Path("benchmarks/results/bench"))
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-q4_0")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if not args.bench.is_dir():
        parser.error(f"--bench {str(args.bench)!r}: no such folder")
    body = rows(args.bench, args.model)
    if not body:
        parser.error(f"no docqa folder of {args.model!r} under {str(args.bench)!r}")
    return emit(table(COLUMNS, body) + "\n", args.out)


if __name__ == "__main__":
    raise SystemExit(main())
