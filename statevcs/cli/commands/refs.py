"""Moving refs: ``branch``, ``tag``, ``switch``, ``reset`` and ``merge``."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import click

from ...errors import RefExists, RefNotFound
from ...merge import Side
from .. import reads
from ..context import REV_EPILOG, CommandError, current_state, json_option
from ..rendering import commit_json, emit_json, first_line, text
from ..revisions import resolve
from ..safety import suggest

if TYPE_CHECKING:
    from ...repo import Repo

_SIDES: dict[str, Side] = {"ours": "ours", "theirs": "theirs"}


@click.command(epilog=REV_EPILOG)
@click.argument("name", required=False)
@click.argument("start", required=False)
@click.option("-d", "--delete", "delete", metavar="NAME", help="Delete branch NAME.")
@click.option("-f", "--force", is_flag=True, help="Move NAME if it already exists.")
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Accepted as git takes it; the list always shows each tip and its subject.",
)
@json_option
def branch(
    name: str | None,
    start: str | None,
    delete: str | None,
    force: bool,
    verbose: int,
    as_json: bool,
) -> None:
    """List branches (with each tip, as git's branch -v), create NAME at START (default HEAD),
    or delete one with -d."""
    state = current_state()
    repo = state.repo()
    out = state.out
    if delete is not None:
        if name is not None:
            raise click.UsageError("give either -d NAME or NAME [START], not both")
        old = repo.branches().get(delete)
        if old is None:
            raise CommandError(f"no branch named {delete!r}; list branches with `statevcs branch`")
        if delete == repo.head_branch:
            raise CommandError(
                f"cannot delete branch {delete!r}: it is the current branch; "
                "`statevcs switch OTHER` first"
            )
        repo.delete_branch(delete)
        if as_json:
            emit_json({"deleted": delete, "was": old})
        else:
            out.print(text(f"Deleted branch {delete} (was {old[:12]})."))
        return
    if name is not None:
        resolve(repo, start or "HEAD")
        try:
            commit = repo.branch(name, start or "HEAD", force=force)
        except RefExists:
            raise CommandError(
                f"branch {name!r} already exists; "
                f"{suggest('branch', '-f', name, then='REV')} moves it"
            ) from None
        if as_json:
            emit_json({"branch": name, "commit": commit_json(commit)})
        else:
            out.print(
                text(f"Created branch {name} at {commit.short_id} {first_line(commit.message)}")
            )
        return
    reads.list_refs(state, repo.branches(), repo.head_branch, "branch", as_json)


@click.command(epilog=REV_EPILOG)
@click.argument("name")
@click.argument("start", required=False)
@click.option("-c", "--create", is_flag=True, help="Create branch NAME at START (default HEAD).")
@json_option
def switch(name: str, start: str | None, create: bool, as_json: bool) -> None:
    """Make NAME the current branch: the one `log`, `show` and new repository handles start from.

    `switch -` goes back to the branch of the previous switch, as in git.
    """
    state = current_state()
    repo = state.repo()
    if name == "-" and not create:
        name = _previous_branch(repo)
    if start is not None and not create:
        raise click.UsageError("START needs -c (create the branch there first)")
    if create and name in repo.branches():
        raise CommandError(
            f"branch {name!r} already exists; {suggest('switch', name)} switches to it"
        )
    if create and start is not None:
        resolve(repo, start)
        repo.branch(name, start)
    try:
        repo.switch(name, create=create)
    except RefNotFound:
        raise CommandError(
            f"no branch named {name!r}; list branches with `statevcs branch`, or create it "
            f"with {suggest('switch', '-c', name, then='[START]')}"
        ) from None
    head = repo.branches().get(name)
    if as_json:
        emit_json({"branch": name, "commit": head, "created": create})
    else:
        verb = "Switched to a new branch" if create else "Switched to branch"
        state.out.print(text(f"{verb} {name}"))


_SWITCHED = re.compile(r"(?:switch|checkout): moving from (\S+) to (\S+)")


def _previous_branch(repo: Repo) -> str:
    """The branch ``HEAD`` was on before the last switch (git's ``@{-1}``), from its reflog."""
    for entry in repo.reflog("HEAD"):
        found = _SWITCHED.fullmatch(entry.message)
        if found is None:
            continue
        previous = found.group(1)
        if previous == "(detached)" or previous not in repo.branches():
            break
        return previous
    raise CommandError(
        "no previous branch to switch back to: `statevcs switch -` follows HEAD's reflog to the "
        "branch of the last switch; name the branch instead (`statevcs branch` lists them)"
    )


@click.command(epilog=REV_EPILOG)
@click.argument("name", required=False)
@click.argument("rev", required=False)
@click.option("-d", "--delete", "delete", metavar="NAME", help="Delete tag NAME.")
@click.option("-f", "--force", is_flag=True, help="Move NAME if it already exists.")
@json_option
def tag(name: str | None, rev: str | None, delete: str | None, force: bool, as_json: bool) -> None:
    """List tags, create tag NAME at REV (default HEAD), or delete one with -d."""
    state = current_state()
    repo = state.repo()
    if delete is not None:
        if name is not None:
            raise click.UsageError("give either -d NAME or NAME [REV], not both")
        old = repo.tags().get(delete)
        if old is None:
            raise CommandError(f"no tag named {delete!r}; list tags with `statevcs tag`")
        repo.delete_tag(delete)
        if as_json:
            emit_json({"deleted": delete, "was": old})
        else:
            state.out.print(text(f"Deleted tag {delete} (was {old[:12]})."))
        return
    if name is not None:
        resolve(repo, rev or "HEAD")
        try:
            commit = repo.tag(name, rev or "HEAD", force=force)
        except RefExists:
            raise CommandError(
                f"tag {name!r} already exists; {suggest('tag', '-f', name, then='REV')} moves it"
            ) from None
        if as_json:
            emit_json({"tag": name, "commit": commit_json(commit)})
        else:
            state.out.print(text(f"Tagged {commit.short_id} as {name}"))
        return
    reads.list_refs(state, repo.tags(), None, "tag", as_json)


@click.command(epilog=REV_EPILOG)
@click.argument("branch_name", metavar="BRANCH")
@click.argument("rev")
@json_option
def reset(branch_name: str, rev: str, as_json: bool) -> None:
    """Move BRANCH to REV (the commits it leaves stay in the reflog)."""
    state = current_state()
    repo = state.repo()
    resolve(repo, rev)
    old = repo.branches().get(branch_name)
    if old is None:
        raise CommandError(
            f"no branch named {branch_name!r}; list branches with `statevcs branch`, or create "
            f"it with {suggest('branch', branch_name, rev)}"
        )
    commit = repo.reset(branch_name, rev)
    if as_json:
        emit_json({"branch": branch_name, "old": old, "commit": commit_json(commit)})
    else:
        state.out.print(
            text(f"{branch_name} is now at {commit.short_id} {first_line(commit.message)}")
        )


@click.command(epilog=REV_EPILOG)
@click.argument("branch_name", metavar="BRANCH")
@click.argument("rev")
@click.option("--strategy", type=click.Choice(sorted(_SIDES)), help="Settle conflicts.")
@click.option("-m", "--message", help="Merge commit message.")
@click.option("--author", help='Author of the merge commit ("Name <email>").')
@click.option("--no-ff", is_flag=True, help="Make a merge commit even when a fast-forward works.")
@json_option
def merge(
    branch_name: str,
    rev: str,
    strategy: str | None,
    message: str | None,
    author: str | None,
    no_ff: bool,
    as_json: bool,
) -> None:
    """Merge REV into BRANCH: three-way on state keys, messages fast-forward or a chosen side."""
    state = current_state()
    repo = state.repo()
    source = resolve(repo, rev)
    old = repo.branches().get(branch_name)
    if old is not None:
        snapshots = [repo.get_commit(old).snapshot_id, repo.get_commit(source).snapshot_id]
        repo = state.reading(snapshots)
    commit = repo.merge(
        branch_name,
        rev,
        strategy=_SIDES[strategy] if strategy is not None else None,
        message=message,
        author=author,
        fast_forward=not no_ff,
    )
    if commit.id == old:
        outcome = "up-to-date"
        said = "Already up to date."
    elif commit.id == source:
        outcome = "fast-forward"
        said = f"Fast-forward {branch_name} to {commit.short_id} {first_line(commit.message)}"
    else:
        outcome = "merge"
        info = commit.metadata.get("merge", {})
        resolved = info.get("resolved", {}) if isinstance(info, dict) else {}
        said = f"Merged {rev} into {branch_name}: {commit.short_id} {first_line(commit.message)}"
        if isinstance(resolved, dict) and resolved:
            said += " (settled: " + ", ".join(f"{k} → {v}" for k, v in resolved.items()) + ")"
    if as_json:
        emit_json({"outcome": outcome, "branch": branch_name, "commit": commit_json(commit)})
    else:
        state.out.print(text(said))


__all__ = ["branch", "merge", "reset", "switch", "tag"]
