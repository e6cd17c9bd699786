"""What the hot read commands print: ``log``, ``show``, ``reflog``, ``status`` and the branch list.

Free of click (and of rich where the output is not a terminal): the click commands call these
functions with the options they parsed, and so does the fast path (:mod:`.fastpath`) that
answers the same command lines without loading click, so both print the same bytes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import StateVCSError
from ..hashing import from_hex
from .rendering import (
    Decorations,
    commit_json,
    emit_json,
    first_line,
    human_bytes,
    message_lines,
    oneline,
    plural,
    print_header,
    role_text,
    safe_text,
    short,
    text,
)
from .revisions import has_refs, resolve, unborn_head, unborn_message
from .styled import Styled

if TYPE_CHECKING:
    from ..repo import Commit, Repo
    from .session import State

# --- log ---------------------------------------------------------------------------------------


def log(
    state: State,
    rev: str | None,
    graph: bool,
    all_refs: bool,
    limit: int | None,
    one_line: bool,
    first_parent: bool,
    as_json: bool,
) -> None:
    """Show commit history, newest first (--graph: children before parents, like git)."""
    repo = state.repo()
    everything = all_refs or (graph and rev is None)
    if rev is not None:
        resolve(repo, rev)
    else:
        unborn = unborn_head(repo)
        if (unborn is not None and not everything) or not has_refs(repo):
            if as_json:
                emit_json([])
            else:
                state.err.print(text(unborn_message(repo, unborn or repo.head_branch or "main")))
            return
    state.page()
    decorations = Decorations(repo)
    commits: list[Commit]
    if graph:
        from .graph import graph_cells, graph_order, graph_text  # only --graph draws

        reachable = {
            c.id: c for c in _history(repo, rev, everything, limit=None, first_parent=first_parent)
        }
        # git orders by every parent even with --first-parent; only the drawing drops the rest.
        order = graph_order(
            {c.id: c.parents for c in reachable.values()}, _tips(repo, rev, everything, reachable)
        )
        commits = [reachable[c] for c in order[:limit]]
        parents = {c.id: list(c.parents[:1] if first_parent else c.parents) for c in commits}
    else:
        commits = list(_history(repo, rev, everything, limit=limit, first_parent=first_parent))
    if as_json:
        emit_json([commit_json(c, decorations.labels(c.id)) for c in commits])
        return
    out = state.out
    if graph:
        by_id = {c.id: c for c in commits}
        # Parents cut off by -n keep their lanes open to the bottom, as in git.
        pairs = [(c.id, parents[c.id]) for c in commits]
        for cells, commit_id in graph_cells(pairs):
            line = graph_text(cells, keep_padding=commit_id is not None)
            if commit_id is not None:
                line.append_text(oneline(by_id[commit_id], decorations))
            out.print(line)
        return
    for index, commit in enumerate(commits):
        if one_line:
            out.print(oneline(commit, decorations))
        else:
            if index:
                out.print()
            print_header(out, commit, decorations)


def _ref_commits(repo: Repo) -> list[str]:
    """The commits every branch, tag and other ref (by name) and ``HEAD`` point to, once each."""
    refs = repo.refs.as_hex("refs/")
    ordered = sorted(refs, key=lambda name: (not name.startswith("refs/heads/"), name))
    starts = [refs[name] for name in ordered]
    with contextlib.suppress(StateVCSError):  # HEAD may be on a branch with no commits yet
        starts.append(repo.resolve("HEAD"))
    return list(dict.fromkeys(starts))


def _tips(
    repo: Repo, rev: str | None, everything: bool, commits: Mapping[str, Commit]
) -> list[str]:
    """The starting commits of a graph in git's order: newest first, then by ref name."""
    if not everything:
        return [repo.resolve(rev or "HEAD")]
    unique = [c for c in _ref_commits(repo) if c in commits]
    return sorted(unique, key=lambda c: commits[c].timestamp, reverse=True)


def _history(
    repo: Repo, rev: str | None, everything: bool, *, limit: int | None, first_parent: bool
) -> Iterator[Commit]:
    if everything and rev is None:
        yield from repo.log_all(limit=limit, all_parents=not first_parent)
        return
    yield from repo.log(rev or "HEAD", limit=limit, all_parents=not first_parent)


# --- show ---------------------------------------------------------------------------------------


def show(state: State, rev: str, only_messages: bool, only_state: bool, as_json: bool) -> None:
    """Show a commit and its snapshot: messages, state and extras."""
    repo = state.repo()
    commit = repo.get_commit(resolve(repo, rev))
    repo = state.reading([commit.snapshot_id])
    # The snapshot's parts without the pydantic model: show needs no validation, and pydantic
    # would cost more start-up than the rest of the command.
    snapshot = repo.objects.read_snapshot_values(from_hex(commit.snapshot_id))
    codec = snapshot.state_codec
    everything = not only_messages and not only_state
    state.page()
    decorations = Decorations(repo)
    if as_json:
        payload: dict[str, Any] = {
            "commit": commit_json(commit, decorations.labels(commit.id)),
            "snapshot": {"id": commit.snapshot_id, "kind": snapshot.kind, "state_codec": codec},
        }
        if everything or only_messages:
            payload["snapshot"]["messages"] = snapshot.messages
        if everything or only_state:
            payload["snapshot"]["state"] = snapshot.state
        if everything:
            payload["snapshot"]["extras"] = snapshot.extras
        emit_json(payload)
        return
    out = state.out
    print_header(out, commit, decorations)
    if commit.metadata:
        out.print()
        out.print(text(("Metadata: " + short(commit.metadata, 400), "dim")))
    out.print()
    out.print(
        text(
            (f"snapshot {commit.snapshot_id[:12]}", "cyan"),
            f"  kind {snapshot.kind}  ·  {plural(len(snapshot.messages), 'message')}  ·  "
            f"{plural(len(snapshot.state), 'state key')}  ·  codec {codec}",
        )
    )
    if everything or only_messages:
        out.print()
        out.print(text((f"Messages ({len(snapshot.messages)})", "bold underline")))
        for index, message in enumerate(snapshot.messages):
            header = text((f"[{index}] ", "dim"))
            header.append_text(role_text(message))
            out.print(header)
            for line in message_lines(message):
                out.print(Styled("    ").append_text(line))
    if everything or only_state:
        out.print()
        if snapshot.state:
            from rich import box  # rich's tables load only where a table is drawn
            from rich.table import Table

            table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
            table.add_column("state key", style="cyan", no_wrap=True)
            table.add_column("value", overflow="fold")
            for key, value in snapshot.state.items():
                table.add_row(text(key), text(short(value, 200)))
            out.print(table)
        else:
            out.print(text(("(no state)", "dim")))
    if everything and snapshot.extras:
        out.print()
        out.print(text(("Extras", "bold underline")))
        for key, value in snapshot.extras.items():
            out.print(text((f"  {key}: ", "cyan"), short(value, 120)))


# --- reflog --------------------------------------------------------------------------------------


def reflog(state: State, ref: str, limit: int | None, as_json: bool) -> None:
    """Show how REF (default HEAD, or a branch or tag name) moved, newest first."""
    entries = state.repo().reflog(ref)
    if limit is not None:
        entries = entries[:limit]
    state.page()
    if as_json:
        emit_json(
            [
                {
                    "index": i,
                    "old": e.old,
                    "new": e.new,
                    "timestamp": e.timestamp.isoformat(),
                    "message": e.message,
                }
                for i, e in enumerate(entries)
            ]
        )
        return
    for index, entry in enumerate(entries):
        state.out.print(
            text(
                ((entry.new or "0" * 12)[:12], "yellow"),
                (f" {ref}@{{{index}}}: ", "cyan"),
                entry.message,
                ("  " + entry.timestamp.strftime("%Y-%m-%d %H:%M:%S"), "dim"),
            )
        )


# --- status --------------------------------------------------------------------------------------


def status(state: State, as_json: bool) -> None:
    """Show the current branch and its tip, the other branches, and what `gc` would delete.

    The current branch is the repository's default branch: where `log`, `show` and new
    repository handles start. A Python handle may have switched elsewhere without moving it
    (`repo.checkout(obj, "x")` commits `obj` to x); `status` shows the stored one.
    """
    repo = state.repo()
    current = repo.default_branch
    branches = repo.branches()
    tip = None if current is None else branches.get(current)
    head = repo.get_commit("HEAD") if current is None or tip is not None else None
    report = repo.gc(dry_run=True)
    if as_json:
        emit_json(
            {
                "branch": current,
                "detached": current is None,
                "commit": None if head is None else head.id,
                "branches": len(branches),
                "tags": len(repo.tags()),
                "gc": {
                    "unreachable": report.unreachable,
                    "would_delete": report.deleted,
                    "would_delete_bytes": report.deleted_bytes,
                    "kept_recent": report.kept_recent,
                },
            }
        )
        return
    out = state.out
    if current is None:
        out.print(text(("HEAD detached at ", "bold"), (head.short_id if head else "?", "yellow")))
    else:
        out.print(text("On branch ", (current, "bold green")))
    if head is None:
        out.print(text(f"No commits yet on {current} ({unborn_head(repo) or current} is empty)"))
    else:
        line = text((head.short_id, "yellow"))
        line.append_text(Decorations(repo).text(head.id))
        line.append_text(text(" " + first_line(head.message)))
        out.print(line)
    others = sorted(name for name in branches if name != current)
    if others:
        shown = ", ".join(others[:8]) + (", ..." if len(others) > 8 else "")
        kind = "other branch" if len(others) == 1 else "other branches"
        out.print(text(f"{len(others)} {kind}: {shown}"))
    if report.deleted:
        out.print(
            text(
                f"gc would delete {plural(report.deleted, 'unreachable object')} "
                f"({human_bytes(report.deleted_bytes)}): `statevcs gc`"
            )
        )
    elif report.unreachable:
        out.print(
            text(
                f"{plural(report.unreachable, 'unreachable object')}, all younger than gc's "
                "2-week grace: `statevcs gc --prune=now` deletes them"
            )
        )
    else:
        out.print(text("nothing for gc to delete"))


# --- branch and tag lists -------------------------------------------------------------------------


def branches(state: State, as_json: bool, verbose: int = 0) -> None:
    """List the branches, the current one starred, each with its tip and subject (as git's
    ``branch -v``: ``verbose`` is taken and changes nothing)."""
    repo = state.repo()
    list_refs(state, repo.branches(), repo.head_branch, "branch", as_json)


def list_refs(
    state: State, refs: Mapping[str, str], current: str | None, what: str, as_json: bool
) -> None:
    """List ``refs`` (branches or tags, as ``what`` says) with each tip and its subject."""
    repo = state.repo()
    commits = {name: repo.get_commit(commit_id) for name, commit_id in sorted(refs.items())}
    if as_json:
        key = "branches" if what == "branch" else "tags"
        payload: dict[str, Any] = {key: {n: commit_json(c) for n, c in commits.items()}}
        if what == "branch":
            payload["head"] = current
        emit_json(payload)
        return
    names = {name: safe_text(name) for name in commits}
    width = max((len(shown) for shown in names.values()), default=0)
    for name, commit in commits.items():
        state.out.print(
            text(
                ("* " if name == current else "  ", "bold green"),
                (names[name].ljust(width), "bold green" if name == current else ""),
                ("  " + commit.short_id, "yellow"),
                " " + first_line(commit.message),
            )
        )


__all__ = ["branches", "list_refs", "log", "reflog", "show", "status"]
