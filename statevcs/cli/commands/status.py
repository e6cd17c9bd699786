"""``statevcs status``: where the repository stands, in a few lines."""

from __future__ import annotations

import click

from .. import reads
from ..context import current_state, json_option


@click.command()
@json_option
def status(as_json: bool) -> None:
    """Show the current branch and its tip, the other branches, and what `gc` would delete.

    The current branch is the repository's default branch: where `log`, `show` and new
    repository handles start. A Python handle may have switched elsewhere without moving it
    (`repo.checkout(obj, "x")` commits `obj` to x); `status` shows the stored one.
    """
    reads.status(current_state(), as_json)


__all__ = ["status"]
