"""``statevcs status``: where the repository stands, in a few lines."""

from __future__ import annotations

import click

from ..context import current_state, json_option
from ..rendering import Decorations, emit_json, first_line, human_bytes, plural, text
from ..revisions import unborn_head


@click.command()
@json_option
def status(as_json: bool) -> None:
    """Show the current branch and its tip, the other branches, and what `gc` would delete.

    The current branch is the repository's default branch: where `log`, `show` and new
    repository handles start. A Python handle may have switched elsewhere without moving it
    (`repo.checkout(obj, "x")` commits `obj` to x); `status` shows the stored one.
    """
    state = current_state()
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


__all__ = ["status"]
