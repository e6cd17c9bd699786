"""Reading history: ``log``, ``show``, ``diff`` and ``reflog``."""

from __future__ import annotations

import click

from .. import reads
from ..context import REV_EPILOG, CommandError, current_state, json_option
from ..rendering import diff_json, emit_json, print_diff
from ..revisions import resolve

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
    reads.log(current_state(), rev, graph, all_refs, limit, one_line, first_parent, as_json)


# --- show ---------------------------------------------------------------------------------------


@click.command(epilog=REV_EPILOG)
@click.argument("rev", default="HEAD")
@click.option("--messages", "only_messages", is_flag=True, help="Show the conversation.")
@click.option("--state", "only_state", is_flag=True, help="Show the state table.")
@json_option
def show(rev: str, only_messages: bool, only_state: bool, as_json: bool) -> None:
    """Show a commit and its snapshot: messages, state and extras."""
    reads.show(current_state(), rev, only_messages, only_state, as_json)


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
    reads.reflog(current_state(), ref, limit, as_json)


__all__ = ["diff", "log", "reflog", "show"]
