"""Revisions on the command line: resolve one, or say in command-line terms why it names nothing.

Every command says the same about an empty branch (:func:`unborn_message`), whichever way it
ran into it; a revision that walks past the first commit says where history ends.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import StateVCSError, UnknownRevision
from ..revisions import parse_revision
from .advice import cli_message
from .rendering import plural
from .safety import suggest

if TYPE_CHECKING:
    from ..repo import Repo

_COUNT_CAP = 1000


def has_refs(repo: Repo) -> bool:
    """Whether any branch or tag exists (an empty repository has neither)."""
    return bool(repo.branches() or repo.tags())


def unborn_head(repo: Repo) -> str | None:
    """The current branch's name if it has no commits yet, else ``None``."""
    name = repo.head_branch
    if name is None or name in repo.branches():
        return None
    return name


def _count_commits(repo: Repo, commit_id: str) -> str:
    count = sum(1 for _ in repo.log(commit_id, limit=_COUNT_CAP + 1, all_parents=True))
    return f"{_COUNT_CAP}+ commits" if count > _COUNT_CAP else plural(count, "commit")


def unborn_message(repo: Repo, branch: str) -> str:
    """Say that ``branch`` has no commits, and which branches have (with how to look at them).

    Every command says the same about an empty branch, whichever way it ran into it.
    """
    others = repo.branches()
    if not others:
        return (
            f"branch {branch} has no commits yet, and neither has any other branch: the "
            "repository is empty; commits come from the Python library, or from a git mirror "
            "with `statevcs import-git MIRROR`"
        )
    newest = sorted(others, key=lambda n: repo.get_commit(others[n]).timestamp, reverse=True)
    shown = ", ".join(f"{n} ({_count_commits(repo, others[n])})" for n in newest[:5])
    if len(newest) > 5:
        shown += f" and {len(newest) - 5} more (`statevcs branch`)"
    return (
        f"branch {branch} has no commits yet; these branches have commits: {shown}; "
        f"try {suggest('log', newest[0])} or {suggest('switch', newest[0])}"
    )


def resolve(repo: Repo, rev: str) -> str:
    """Resolve ``rev`` to a commit id, or raise a :class:`CommandError` that explains why not.

    A revision on an empty branch gets :func:`unborn_message`; one that walks past the first
    commit (``main~9`` on a shorter history) says where history ends.
    """
    try:
        return repo.resolve(rev)
    except UnknownRevision as exc:
        from .context import CommandError  # click loads only for the error

        raise CommandError(_explain_unknown(repo, rev, exc)) from exc


def _explain_unknown(repo: Repo, rev: str, exc: UnknownRevision) -> str:
    parsed = parse_revision(rev)
    unborn = unborn_head(repo)
    if unborn is not None and parsed.base in ("HEAD", unborn, f"refs/heads/{unborn}"):
        return unborn_message(repo, unborn)
    if not has_refs(repo):
        return f"unknown revision {rev!r}: " + unborn_message(repo, repo.head_branch or "main")
    if parsed.steps and parsed.reflog_index is None:
        return _explain_walk(repo, rev, parsed.base, parsed.steps) or cli_message(exc)
    return cli_message(exc)


def _explain_walk(repo: Repo, rev: str, base: str, steps: Sequence[tuple[str, int]]) -> str | None:
    try:
        commit = repo.get_commit(base)
    except StateVCSError:
        return None  # the base itself is unknown: the library's message says so
    walked = base
    for op, count in steps:
        if op == "~":
            for _ in range(count):
                if not commit.parents:
                    return (
                        f"unknown revision {rev!r}: {walked} ({commit.short_id}) is the first "
                        "commit of its history, it has no parent to go back to; "
                        f"see the history with {suggest('log', base)}"
                    )
                commit = repo.get_commit(commit.parents[0])
                walked = _step(walked)
        elif count > 0:
            if count > len(commit.parents):
                have = plural(len(commit.parents), "parent") if commit.parents else "no parent"
                return (
                    f"unknown revision {rev!r}: {walked} ({commit.short_id}) has {have}, so "
                    f"{walked}^{count} does not exist"
                )
            commit = repo.get_commit(commit.parents[count - 1])
            walked = f"{walked}^{count}"
    return None


def _step(expression: str) -> str:
    """``main`` -> ``main~1``, ``main~1`` -> ``main~2``: the walked expression, one step back."""
    match = re.fullmatch(r"(.*)~([0-9]+)", expression)
    if match is not None:
        return f"{match.group(1)}~{int(match.group(2)) + 1}"
    return f"{expression}~1"


__all__ = ["has_refs", "resolve", "unborn_head", "unborn_message"]
