"""The ``statevcs`` commands, grouped by area; :data:`COMMANDS` is what the group offers."""

from __future__ import annotations

import click

from .experiments import compare_command, search
from .history import diff, log, reflog, show
from .init import init
from .maintenance import fsck, gc, stats
from .mirror import export_git, import_git
from .refs import branch, merge, reset, switch, tag

COMMANDS: tuple[click.Command, ...] = (
    init,
    log,
    show,
    diff,
    compare_command,
    search,
    reflog,
    branch,
    tag,
    switch,
    reset,
    merge,
    gc,
    fsck,
    stats,
    export_git,
    import_git,
)
"""Every command, each run by :data:`statevcs.cli.cli` under its own name."""

__all__ = ["COMMANDS"]
