"""``python -m memread.train.run [hydra overrides]``: verl's PPO trainer with memread's agent loop and trainer hook.

The overrides are verl's (``data.train_files=…``, ``trainer.n_gpus_per_node=…``) plus memread's own section
(``+memread.*``); ``memread train run --preset NAME --print`` writes a complete set. The configuration is composed
and checked before Ray starts, so a misspelled key fails at once.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    try:
        from memread.train import verl_adapter
    except ImportError as error:
        print(f"error: memread's training needs the train extra ({error})", file=sys.stderr)
        print("\nhint: pip install 'memread[train]' (see docs/training.md)", file=sys.stderr)
        sys.exit(2)
    verl_adapter.run(list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
