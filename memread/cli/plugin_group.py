"""The top-level command group: the built-in commands plus the ``memread.commands.v1`` plugins, loaded lazily.

``memread --help`` and TAB completion list plugin commands from entry-point metadata alone (a placeholder
carries the name and which distribution provides it); a plugin's module is imported only when its command is
run or completed further. A built-in command always wins over a plugin of the same name. A command plugin that
fails to import is an error for that command only (one line and a hint, exit 1): the others never import it.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from memread import plugins
from memread.errors import MemreadError

PANEL = "Plugin commands"


class MemreadGroup(TyperGroup):
    def _plugin_commands(self) -> dict[str, plugins.Plugin]:
        """The allowed command plugins that a built-in does not shadow, by command name (first one wins)."""
        found: dict[str, plugins.Plugin] = {}
        for plugin in plugins.installed("commands"):
            if not plugins.allowed(plugin):
                continue
            if plugin.name in self.commands and not self._is_plugin(plugin.name):
                plugins.failed(plugin, f"a built-in command is called {plugin.name!r}", warn=False)
            elif plugin.name in found:
                plugins.failed(plugin, f"{found[plugin.name].distribution} also adds {plugin.name!r}", warn=False)
            else:
                found[plugin.name] = plugin
        return found

    def _is_plugin(self, name: str) -> bool:
        return getattr(self.commands.get(name), "memread_plugin", None) is not None

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        return names + [name for name in self._plugin_commands() if name not in self.commands]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        plugin = self._plugin_commands().get(cmd_name)
        return _placeholder(plugin) if plugin is not None else None

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands:
            plugin = self._plugin_commands().get(args[0])
            if plugin is not None:
                self.commands[args[0]] = _load(plugin)
        return super().resolve_command(ctx, args)


def _placeholder(plugin: plugins.Plugin) -> TyperCommand:
    """What help and completion show for a plugin command that has not been imported."""
    version = f" {plugin.version}" if plugin.version else ""
    command = TyperCommand(
        name=plugin.name,
        help=f"(from the plugin {plugin.distribution}{version})",
        rich_help_panel=PANEL,
    )
    return command


def validate_command(plugin: plugins.Plugin, obj: Any) -> str | None:
    """Why the object a ``memread.commands.v1`` entry point names is not a Typer app (None: it is one)."""
    return None if type(obj).__name__ == "Typer" else f"{plugin.value} is a {type(obj).__name__}, not a typer.Typer app"


def _load(plugin: plugins.Plugin) -> Any:
    try:
        app = plugins.import_object(plugin)
        problem = validate_command(plugin, app)
        if problem:
            raise TypeError(problem)
        if getattr(app, "_add_completion", False):
            app._add_completion = False  # only the top-level app offers --install-completion
        command = typer.main.get_command(app)
    except Exception as error:  # a plugin can fail in any way; it must not take the CLI down with it
        plugins.failed(plugin, error, warn=False)
        raise MemreadError(
            f"the {plugin.name} command (plugin {plugin.distribution}) cannot be loaded: {plugins.describe(error)}",
            hint=f"reinstall or update {plugin.distribution}; `memread plugins` lists what is installed",
        ) from None
    command.name = plugin.name
    command.memread_plugin = plugin  # type: ignore[attr-defined]
    if getattr(command, "rich_help_panel", None) is None:
        command.rich_help_panel = PANEL  # type: ignore[attr-defined]
    plugins.mark_loaded(plugin)
    return command
