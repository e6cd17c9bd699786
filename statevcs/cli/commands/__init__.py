"""The ``statevcs`` commands, grouped by area; :data:`COMMANDS` is what the group offers.

A command's module is imported the first time the command is looked up, so ``statevcs
--version`` and a light command never pay for the heavy ones' imports (rich's tables and
progress bars, dulwich, the S3 client).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

import click

COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("init", "init"),
    "status": ("status", "status"),
    "log": ("history", "log"),
    "show": ("history", "show"),
    "diff": ("history", "diff"),
    "compare": ("experiments", "compare_command"),
    "search": ("experiments", "search"),
    "reflog": ("history", "reflog"),
    "branch": ("refs", "branch"),
    "tag": ("refs", "tag"),
    "switch": ("refs", "switch"),
    "reset": ("refs", "reset"),
    "merge": ("refs", "merge"),
    "gc": ("maintenance", "gc"),
    "fsck": ("maintenance", "fsck"),
    "stats": ("maintenance", "stats"),
    "upgrade": ("maintenance", "upgrade"),
    "export-git": ("mirror", "export_git"),
    "import-git": ("mirror", "import_git"),
    "mcp": ("mcp", "mcp"),
    "serve": ("serve", "serve"),
}
"""Every command by name: the module of :mod:`statevcs.cli.commands` defining it, and its name."""


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands by name, each imported on first lookup (names list without it)."""

    def __init__(self) -> None:
        self._loaded: dict[str, click.Command] = {}
        self._names = list(COMMANDS)

    def __getitem__(self, name: str) -> click.Command:
        command = self._loaded.get(name)
        if command is None:
            if name not in self._names or name not in COMMANDS:
                raise KeyError(name)
            module, attribute = COMMANDS[name]
            loaded = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
            if not isinstance(loaded, click.Command):  # pragma: no cover - a wrong table
                raise TypeError(f"{module}.{attribute} is not a click command")
            command = self._loaded[name] = loaded
        return command

    def __setitem__(self, name: str, command: click.Command) -> None:
        if name not in self._names:
            self._names.append(name)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names


__all__ = ["COMMANDS", "LazyCommands"]
