"""``memread paths``: where memread keeps configuration, caches, models and traces."""

from __future__ import annotations

import typer


def paths(
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object instead of lines."),
) -> None:
    """Show where memread keeps its configuration, caches, models and traces."""
    import json

    from memread.cli.environment import current
    from memread.paths import locations

    env = current()
    table = {name: str(path) for name, path in locations().items()}
    if json_output:
        env.out(json.dumps(table, indent=2))
        return
    width = max(len(name) for name in table)
    for name, path in table.items():
        env.out(f"{name.ljust(width)}  {path}")
