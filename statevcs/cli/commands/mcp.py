"""``statevcs mcp``: serve the repository's history to MCP clients (stdio or HTTP)."""

from __future__ import annotations

import click

from ...errors import MissingExtra
from ..context import CommandError, server_state


@click.command()
@click.argument("repo", required=False)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a client that starts the server; http for streamable HTTP at /mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="HTTP: port (0 picks a free one; the address is printed on stderr).",
)
@click.option("--allow-write", is_flag=True, help="Add the branch, tag, reset and rollback tools.")
@click.option(
    "--max-chars",
    type=click.IntRange(min=1000),
    default=200_000,
    show_default=True,
    help="The longest answer, in characters of JSON; a longer one is a tool error.",
)
def mcp(
    repo: str | None, transport: str, host: str, port: int, allow_write: bool, max_chars: int
) -> None:
    """Serve REPO (default: the repository found like git) over the Model Context Protocol.

    Read-only unless --allow-write. Needs the mcp extra: pip install 'statevcs[mcp]'.
    """
    state = server_state(repo)
    try:
        from ...mcpserver.server import serve
    except MissingExtra as exc:
        raise CommandError(str(exc)) from None
    serve(
        state.repo(),
        transport="http" if transport == "http" else "stdio",
        host=host,
        port=port,
        allow_write=allow_write,
        max_chars=max_chars,
    )


__all__ = ["mcp"]
