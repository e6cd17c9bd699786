"""Run the history browser on uvicorn: bind, print the address (and token), serve until stopped."""

from __future__ import annotations

import secrets
import socket
import sys
import webbrowser
from typing import TextIO

from ...repo import Repo
from .api import HistoryBrowser
from .app import LOCAL_HOSTS, build_app


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``port=0``: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    # Listening before the address is printed: a browser that connects at once is queued by the
    # kernel until the server accepts, never refused.
    sock.listen(128)
    return sock


def address(sock: socket.socket) -> str:
    """``http://host:port`` of a bound socket, as a browser writes it."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if sock.family == socket.AF_INET6 else host
    return f"http://{shown}:{port}"


def serve(
    repo: Repo,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    allow_write: bool = False,
    open_browser: bool = False,
    out: TextIO | None = None,
) -> None:
    """Serve ``repo``'s history at ``http://host:port/`` until stopped (Ctrl-C).

    The address is printed on ``out`` (stderr by default) once the socket listens; with
    ``allow_write`` a fresh token is printed too, inside the address's fragment (the browser
    keeps it, the server never logs it).
    """
    import anyio
    import uvicorn

    stream = out if out is not None else sys.stderr
    token = secrets.token_urlsafe(24) if allow_write else None
    hosts = list(dict.fromkeys([*LOCAL_HOSTS, host]))
    app = build_app(HistoryBrowser(repo, writable=allow_write), token=token, hosts=hosts)
    sock = bind(host, port)
    url = address(sock) + "/"
    shown = url if token is None else f"{url}#token={token}"
    print(f"statevcs serve: browsing {repo.url} at {shown}", file=stream, flush=True)
    if token is not None:
        print(f"statevcs serve: writes need the token {token}", file=stream, flush=True)
    if open_browser:
        webbrowser.open(shown)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    anyio.run(uvicorn.Server(config).serve, [sock])


__all__ = ["address", "bind", "serve"]
