"""``memread plugins``: the installed plugins, what each registers, and whether it loads.

Every entry point is imported here (a normal run imports a backend, strategy or command plugin only when it is
chosen), so a broken plugin shows up as ``failed: <error>`` in this list rather than in the middle of a run.

``--json`` prints an array of objects: ``distribution``, ``version``, ``kind`` (loader | backend | strategy |
command), ``name``, ``group`` (the entry-point group), ``value`` (``module:attribute``), ``status`` (loaded |
failed | disabled), ``error`` (null unless failed) and, for loaders that loaded, ``extensions``.
"""

from __future__ import annotations

from typing import Any

import typer


def plugins_command(
    ctx: typer.Context,
    json_output: bool = typer.Option(False, "--json", help="Print a JSON array instead of a table."),
) -> None:
    """List installed plugins: distribution, version, what they register, and whether they load."""
    import json

    from memread import plugins
    from memread.cli.environment import current

    env = current()
    found = plugins.installed()
    group: Any = ctx.parent.command if ctx.parent is not None else None
    if hasattr(group, "_plugin_commands"):
        group._plugin_commands()  # records command plugins shadowed by a built-in as failed
    previous = plugins.set_warning_handler(lambda message: None)  # the list below says it, once
    try:
        rows = [_row(plugin) for plugin in found]
    finally:
        plugins.set_warning_handler(previous)
    if json_output:
        env.out(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    if not rows:
        env.err("no plugins installed (`pip install ./plugins/memread-docx`, or see docs/plugins.md)")
        return
    table = [("distribution", "version", "registers", "status")] + [
        (
            row["distribution"],
            row["version"] or "-",
            f"{row['kind']} {row['name']}" + (f" ({' '.join(row['extensions'])})" if row.get("extensions") else ""),
            _status_text(row),
        )
        for row in rows
    ]
    widths = [max(len(line[column]) for line in table) for column in range(3)]
    for line in table:
        env.out("  ".join(cell.ljust(width) for cell, width in zip(line[:3], widths, strict=True)) + "  " + line[3])
    allow_list = env.environ.get(plugins.ENVIRONMENT_VARIABLE)
    if allow_list is not None:
        env.err(f"{plugins.ENVIRONMENT_VARIABLE}={allow_list!r}: only the plugins it names load")


def _kinds() -> dict[str, tuple[Any, Any]]:
    """Each plugin kind's way to load its plugins, and its check of what an entry point names."""
    from memread.backends import backend_names
    from memread.backends import validate_plugin as backend
    from memread.cli.plugin_group import validate_command
    from memread.ingest.registry import loaders
    from memread.ingest.registry import validate_plugin as loader
    from memread.strategies import strategy_names
    from memread.strategies import validate_plugin as strategy

    return {"loaders": (loaders, loader), "backends": (backend_names, backend),
            "strategies": (strategy_names, strategy), "commands": (None, validate_command)}


def _row(plugin: Any) -> dict[str, Any]:
    from memread import plugins

    load, validate = _kinds()[plugin.kind]

    row: dict[str, Any] = {
        "distribution": plugin.distribution,
        "version": plugin.version,
        "kind": plugin.kind.rstrip("s"),
        "name": plugin.name,
        "group": plugins.GROUPS[plugin.kind],
        "value": plugin.value,
    }
    status, error = plugins.status(plugin)
    if status != plugins.DISABLED and load is not None:
        load()  # registers the kind's plugins, as a run that needs them would
        status, error = plugins.status(plugin)
    if status not in (plugins.DISABLED, plugins.FAILED):
        error = plugins.check(plugin, validate)  # imports it: backends, strategies and commands are otherwise lazy
        status = plugins.FAILED if error else plugins.LOADED
    if status == plugins.FAILED and error:
        plugins.failed(plugin, error, warn=False)
    row["status"], row["error"] = status, error
    if plugin.kind == "loaders" and status == plugins.LOADED:
        row["extensions"] = list(plugins.import_object(plugin).extensions)
    return row


def _status_text(row: dict[str, Any]) -> str:
    if row["status"] == "failed":
        return f"failed: {row['error']}"
    if row["status"] == "disabled":
        return "disabled by MEMREAD_PLUGINS"
    return str(row["status"])
