"""``memread completions SHELL``: print the shell completion script (``eval "$(memread completions bash)"``)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer


class Shell(str, Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def completions(
    shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.", case_sensitive=False)],
) -> None:
    """Print the completion script for SHELL (the same text as the files in completions/)."""
    from memread.cli.completion_scripts import script
    from memread.cli.environment import current

    current().stdout.write(script(shell.value))
    current().stdout.flush()
