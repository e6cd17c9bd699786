"""Reading history: ``log``, ``show``, ``diff`` and ``reflog``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import click
from rich.text import Text

from ...errors import StateVCSError
from ...repo import Commit, Repo
from ..context import REV_EPILOG, CommandError, current_state, json_option, snapshot_codec
from ..graph import graph_cells, graph_order, graph_text
from ..rendering import (
    Decorations,
    commit_json,
    diff_json,
    emit_json,
    message_lines,
    oneline,
    plural,
    print_diff,
    print_header,
    role_text,
    short,
    text,
)
from ..revisions import has_refs, resolve, unborn_head, unborn_message

# --- log ---------------------------------------------------------------------------------------


@click.command(epilog=REV_EPILOG)
@click.argument("rev", required=False)
@click.option("--graph", is_flag=True, help="Draw the commit graph (of all branches unless REV).")
@click.option("--all", "all_refs", is_flag=True, help="Every commit reachable from any ref.")
@click.option("-n", "--max-count", "limit", type=click.IntRange(min=0), help="At most N commits.")
@click.option("--oneline", "one_line", is_flag=True, help="One line per commit.")
@click.option("--first-parent", is_flag=True, help="Follow only the first parent of merges.")
@json_option
def log(
    rev: str | None,
    graph: bool,
    all_refs: bool,
    limit: int | None,
    one_line: bool,
    first_parent: bool,
    as_json: bool,
) -> None:
    """Show commit history, newest first (--graph: children before parents, like git)."""
    state = current_state()
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


@click.command(epilog=REV_EPILOG)
@click.argument("rev", default="HEAD")
@click.option("--messages", "only_messages", is_flag=True, help="Show the conversation.")
@click.option("--state", "only_state", is_flag=True, help="Show the state table.")
@json_option
def show(rev: str, only_messages: bool, only_state: bool, as_json: bool) -> None:
    """Show a commit and its snapshot: messages, state and extras."""
    state = current_state()
    repo = state.repo()
    commit = repo.get_commit(resolve(repo, rev))
    repo = state.reading([commit.snapshot_id])
    snapshot = repo.show(commit.id)
    codec = snapshot_codec(repo, commit.snapshot_id)
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
                out.print(Text("    ").append_text(line))
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


# --- diff ----------------------------------------------------------------------------------------


@click.command(epilog=REV_EPILOG)
@click.argument("a", required=False)
@click.argument("b", default="HEAD")
@click.option("--exit-code", is_flag=True, help="Exit with 1 when the snapshots differ.")
@json_option
def diff(a: str | None, b: str, exit_code: bool, as_json: bool) -> None:
    """Compare the snapshots of revisions A and B (default HEAD) structurally.

    With no revision, what the last commit changed: HEAD~1 against HEAD (statevcs has no
    working tree for git's meaning, the changes not yet committed).
    """
    state = current_state()
    repo = state.repo()
    if a is None:
        head = repo.get_commit(resolve(repo, "HEAD"))
        if not head.parents:
            raise CommandError(
                f"HEAD ({head.short_id}) is the first commit: there is no HEAD~1 to compare "
                "it with; `statevcs show HEAD` shows what it holds"
            )
        a = "HEAD~1"
    old, new = repo.get_commit(resolve(repo, a)), repo.get_commit(resolve(repo, b))
    repo = state.reading([old.snapshot_id, new.snapshot_id])
    result = repo.diff(a, b)
    state.page()
    if as_json:
        emit_json(diff_json(result, old.id, new.id))
    else:
        print_diff(state.out, result, old, new)
    if exit_code and not result.is_empty:
        click.get_current_context().exit(1)


# --- reflog --------------------------------------------------------------------------------------


@click.command()
@click.argument("ref", default="HEAD")
@click.option("-n", "--max-count", "limit", type=click.IntRange(min=0), help="At most N entries.")
@json_option
def reflog(ref: str, limit: int | None, as_json: bool) -> None:
    """Show how REF (default HEAD, or a branch or tag name) moved, newest first."""
    state = current_state()
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


__all__ = ["diff", "log", "reflog", "show"]
