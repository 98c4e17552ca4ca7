"""A later frozen version's bench folder, from its own reads and the earlier version's records of the samples whose
reads it replays unchanged (``benchmarks/studies/replay_reads.py``: the same passages and prompts, so the same
replies). A sample the later version read itself replaces the earlier record; the tables are then made again.

    python -m benchmarks.accuracy.carry_records --earlier ACC/docqa-v9-Q --own ACC/docqa-v11-Q \\
        --out benchmarks/results/bench/docqa-v11-Q        # then: memread bench --report --out that folder

Only do this for samples a replay showed unchanged (docqa-design.md says which, version by version).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path


def carry(earlier: Path, own: Path | None, out: Path) -> tuple[int, int]:
    """Write ``out``'s scores.jsonl and run.json; returns (records carried, records of its own)."""
    mine = []
    if own is not None and (own / "scores.jsonl").exists():
        mine = [line for line in (own / "scores.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    keys = {json.loads(line)["key"] for line in mine}
    carried = [line for line in (earlier / "scores.jsonl").read_text(encoding="utf-8").splitlines()
               if line.strip() and json.loads(line)["key"] not in keys]
    out.mkdir(parents=True, exist_ok=True)
    (out / "scores.jsonl").write_text("".join(line + "\n" for line in [*carried, *mine]), encoding="utf-8")
    run = own / "run.json" if own is not None and (own / "run.json").exists() else earlier / "run.json"
    shutil.copy(run, out / "run.json")
    return len(carried), len(mine)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--earlier", type=Path, required=True, help="the earlier version's bench folder")
    parser.add_argument("--own", type=Path, help="the later version's folder of its own reads, if any")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    carried, mine = carry(args.earlier, args.own, args.out)
    print(f"{args.out.name}: {carried} records carried from {args.earlier.name}, {mine} read by the later version")
    return 0


if __name__ == "__main__":
    sys.exit(main())
