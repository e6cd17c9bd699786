"""``statevcs init``: create an empty repository."""

from __future__ import annotations

from pathlib import Path

import click

from ...errors import RepositoryExists
from ...repo import Repo
from ...stores.registry import check_path, scheme_of, shown_location
from ..context import CommandError, current_state, json_option
from ..rendering import emit_json, text
from ..safety import suggest


@click.command()
@click.argument("path", required=False)
@click.option("--branch", "-b", default="main", show_default=True, help="Name of the first branch.")
@click.option(
    "--durability",
    type=click.Choice(["normal", "full"]),
    default="normal",
    show_default=True,
    help="normal: commits survive an application crash; full: they also survive power loss "
    "or an OS crash (an fsync per commit, ~1.5-2x slower). Stored in the repository's config.",
)
@json_option
def init(path: str | None, branch: str, durability: str, as_json: bool) -> None:
    """Create an empty repository in PATH (a folder, default: the current one) or at a
    repository URL (s3://BUCKET/PREFIX?endpoint_url=...)."""
    if path is not None and scheme_of(path) == "memory":
        raise CommandError(
            f"statevcs init makes a repository that outlives the command, not "
            f"{shown_location(path)}; `statevcs --repo memory:// ...` opens a throwaway "
            "in-memory repository"
        )
    location: str | Path
    if path is not None and scheme_of(path) is not None:
        location = path  # a repository URL; Repo.init refuses schemes it cannot open
    else:
        if path is not None:
            check_path(path)  # before resolving: "s3:/b/p" would become a folder
        location = (Path(path) if path else Path.cwd()).resolve()
    try:
        repo = Repo.init(
            location,
            default_branch=branch,
            durability="full" if durability == "full" else "normal",
        )
    except RepositoryExists:
        shown = shown_location(str(location), limit=1000)
        raise CommandError(
            f"a statevcs repository already exists at {shown}; use it with "
            f"{suggest('-C', shown, 'log')}"
        ) from None
    # A URL as the user typed it (credentials masked), not re-encoded: `statevcs -C` takes it.
    folder = location if isinstance(location, Path) else shown_location(path or "", limit=1000)
    repo.close()
    if as_json:
        emit_json({"path": str(folder), "branch": branch, "durability": durability})
    else:
        current_state().out.print(text(f"Initialized empty statevcs repository in {folder}"))


__all__ = ["init"]
