"""``statevcs init``: create an empty repository."""

from __future__ import annotations

from pathlib import Path

import click

from ...errors import RepositoryExists
from ...repo import Repo
from ..context import CommandError, current_state, json_option
from ..rendering import emit_json, text


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
    if path is not None and path.startswith("memory://"):
        raise CommandError(
            f"statevcs init makes a repository that outlives the command, not {path}; "
            "`statevcs --repo memory:// ...` opens a throwaway in-memory repository"
        )
    location: str | Path
    if path is not None and "://" in path:
        location = path  # a repository URL; Repo.init refuses schemes it cannot open
    else:
        location = (Path(path) if path else Path.cwd()).resolve()
    try:
        repo = Repo.init(
            location,
            default_branch=branch,
            durability="full" if durability == "full" else "normal",
        )
    except RepositoryExists:
        raise CommandError(
            f"a statevcs repository already exists at {location}; use it with "
            f"`statevcs -C {location} log`"
        ) from None
    folder = location if isinstance(location, Path) else repo.url
    repo.close()
    if as_json:
        emit_json({"path": str(folder), "branch": branch, "durability": durability})
    else:
        current_state().out.print(text(f"Initialized empty statevcs repository in {folder}"))


__all__ = ["init"]
