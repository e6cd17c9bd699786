"""``statevcs serve``: browse the repository's history in a web browser."""

from __future__ import annotations

import click

from ...errors import MissingExtra
from ..context import CommandError, server_state


@click.command()
@click.argument("repo", required=False)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port (0 picks a free one; the address is printed on stderr).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the web browser.")
@click.option(
    "--allow-write",
    is_flag=True,
    help="Allow creating branches and tags and resetting a branch, with a token printed at start.",
)
def serve(repo: str | None, host: str, port: int, open_browser: bool, allow_write: bool) -> None:
    """Browse REPO (default: the repository found like git) at http://127.0.0.1:8000/.

    The branch graph, commits with their conversations and state, diffs, search and a turn by
    turn comparison of two branches; a JSON API under /api/. Read-only unless --allow-write.
    Needs the web extra: pip install 'statevcs[web]'.
    """
    state = server_state(repo)
    try:
        from ..web.server import serve as run
    except MissingExtra as exc:
        raise CommandError(str(exc)) from None
    try:
        run(
            state.repo(),
            host=host,
            port=port,
            allow_write=allow_write,
            open_browser=open_browser,
        )
    except OSError as exc:
        raise CommandError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port "
            "(0 picks a free one)"
        ) from None


__all__ = ["serve"]
