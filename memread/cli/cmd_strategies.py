"""``memread strategies``: the reading strategies this memread has (built-in and from plugins), each with what it
does and its own options (``--option NAME=VALUE`` on ``ask`` and ``bench``).

Module level imports only typer and the standard library (shell completion imports this on every TAB).
"""

from __future__ import annotations

from typing import Any

from memread.cli import options


def strategies_command(json_output: options.Json = False) -> None:
    """List the reading strategies and their options."""
    import json

    from memread.cli.environment import current

    env = current()
    rows = _rows()
    if json_output:
        env.out(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    for row in rows:
        origin = f"  [plugin {row['origin']}]" if row["origin"] else ""
        title = f"{row['name']} ({row['label']})" if row["label"] else row["name"]
        if row.get("error"):
            env.out(f"{title}{origin}: cannot be loaded: {row['error']}")
            continue
        env.out(f"{title}{origin}: {row['summary']}")
        for option in row["options"]:
            choices = f" [{'|'.join(map(str, option['choices']))}]" if option.get("choices") else ""
            env.out(f"    -o {option['name']}={_shown(option['default'])}{choices}  {option['help']}")


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _rows() -> list[dict[str, Any]]:
    import dataclasses

    from memread.errors import MemreadError
    from memread.strategies import strategy_class, strategy_names, strategy_origin

    rows: list[dict[str, Any]] = []
    for name in strategy_names():
        row: dict[str, Any] = {"name": name, "origin": strategy_origin(name)}
        try:
            cls = strategy_class(name)
        except MemreadError as error:
            rows.append({**row, "label": "", "summary": "", "options": [], "error": error.message})
            continue
        row.update(label=cls.label, summary=cls.summary, options=[
            {"name": f.name, "default": None if f.default is dataclasses.MISSING else f.default,
             "choices": list(f.metadata.get("choices") or []), "help": f.metadata.get("help", "")}
            for f in cls.option_fields()])
        rows.append(row)
    return rows
