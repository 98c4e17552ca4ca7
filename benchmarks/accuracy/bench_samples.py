"""`memread bench` on chosen samples of a generated task (HotpotQA, NIAH), not its first ``--samples``.

A frozen version that changes the reads of a few acceptance samples reads those again, and only those, into a
folder of its own that :mod:`benchmarks.accuracy.carry_records` joins with the earlier version's records. The
records are the bench's own (same keys, same configuration: pass the cell's ``--samples`` too); run it with the
frozen worktree's ``memread`` first on the path:

    PYTHONPATH=/work/wt/v31 python benchmarks/accuracy/bench_samples.py --indices 2,8,17 -- \\
        bench hqa --lengths 400 --samples 32 --methods evidence --threads 1 --data-seed 1127 --out acc/…

docqa needs none of this: ``memread bench docqa --questions`` chooses its questions.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if len(args) < 3 or args[0] != "--indices" or "--" not in args:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    try:
        indices = [int(part) for part in args[1].split(",") if part.strip()]
    except ValueError:
        print(f"bench_samples: --indices takes sample numbers, e.g. 2,8,17 (got {args[1]!r})", file=sys.stderr)
        return 2
    rest = args[args.index("--") + 1:]
    from memread.bench import run

    earlier = run.BenchPlan.indices

    def chosen(plan: run.BenchPlan, task: str) -> Sequence[int]:
        return earlier(plan, task) if task == "docqa" else [i for i in indices if i < plan.samples]

    run.BenchPlan.indices = chosen  # type: ignore[method-assign]
    from memread.cli.app import main as cli

    cli(rest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
