"""What an export or an import did: the reports :mod:`statevcs.mirror.git` returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

Progress = Callable[[str, int, int], None]
"""A progress callback: called with (what is being done, commits done, commits to do), where
what is ``"exporting"``, or ``"reading"`` then ``"importing"`` for an import."""


@dataclass
class ExportReport:
    """What :func:`~statevcs.mirror.git.export_git` wrote."""

    target: str
    commits_exported: int = 0
    """statevcs commits newly written as git commits."""
    objects_written: int = 0
    """git objects (blobs, trees, commits) newly added to the git object store."""
    refs_updated: dict[str, str] = field(default_factory=dict)
    """Ref name -> git sha for every ref created or moved."""
    refs_deleted: list[str] = field(default_factory=list)
    mirror_commits: int = 0
    """statevcs commits the mirror holds (also ones no ref reaches any more)."""
    worktree_updated: bool = False
    pushed: str | None = None
    push_refs: dict[str, str | None] = field(default_factory=dict)
    """Ref name -> ``None`` when the remote accepted it, else the remote's reason."""
    remote_head: str | None = None
    """The branch a pushed remote's ``HEAD`` was pointed at (it named no existing branch)."""
    warnings: list[str] = field(default_factory=list)


@dataclass
class ImportReport:
    """What :func:`~statevcs.mirror.git.import_git` read."""

    source: str
    commits_imported: int = 0
    """git commits written as new statevcs commits."""
    commits_existing: int = 0
    """git commits whose statevcs commit was already in the repository."""
    commits_from_git: int = 0
    """Imported commits made with git tools (no matching ``statevcs.json``); new ids."""
    refs_updated: dict[str, str] = field(default_factory=dict)
    """Ref name -> statevcs commit id for every ref created or fast-forwarded."""
    refs_skipped: dict[str, str] = field(default_factory=dict)
    """Ref name -> why it was left alone (it diverged from the mirror)."""
    warnings: list[str] = field(default_factory=list)


__all__ = ["ExportReport", "ImportReport", "Progress"]
