"""The history browser as an ASGI app: the JSON API under ``/api/`` and the static front end.

Every response carries a strict Content-Security-Policy (scripts and styles from this server
only, no inline script, Trusted Types required so no string can become markup) and the
headers that keep it out of frames and other sites. Requests must name a local host (no DNS
rebinding). Writes exist only with a token, and each one checks the token and the ``Origin``.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import (
    AmbiguousRevision,
    InvalidRefName,
    InvalidRevision,
    RefConflict,
    RefExists,
    RefNotFound,
    StateVCSError,
    UnknownRevision,
)
from ...experiments import NotInHistory
from ...mcpserver.queries import ToolArgumentError
from ...search import InvalidPattern
from ..safety import UNSAFE_IN_JSON, json_escape
from .api import DEFAULT_PAGE, HistoryBrowser, ReadOnly

_log = logging.getLogger("statevcs.serve")

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
    "require-trusted-types-for 'script'; trusted-types 'none'"
)
"""Only this server's own script and styles; no inline script, no markup from strings."""

SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
"""Headers on every response."""

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
"""Host names a request may name by default (anything else is refused: DNS rebinding)."""

MAX_BODY = 64 * 1024
"""The largest write request body, in bytes."""

TOKEN_HEADER = "x-statevcs-token"
"""The request header carrying the write token."""

_NOT_FOUND = (UnknownRevision, RefNotFound, NotInHistory)
_REFUSED = (
    ToolArgumentError,
    InvalidPattern,
    InvalidRevision,
    AmbiguousRevision,
    InvalidRefName,
    RefExists,
)


def _status(error: StateVCSError) -> int:
    if isinstance(error, _NOT_FOUND):
        return 404
    if isinstance(error, ReadOnly):
        return 403
    if isinstance(error, RefConflict):
        return 409
    if isinstance(error, _REFUSED):
        return 400
    return 500


def json_response(data: Any, status: int = 200) -> Response:
    """``data`` as JSON, with every control, bidi and invisible character as a ``\\u`` escape."""
    text = UNSAFE_IN_JSON.sub(json_escape, json.dumps(data, ensure_ascii=False))
    return Response(
        text,
        status_code=status,
        media_type="application/json",
        headers={"cache-control": "no-store"},
    )


def error_response(status: int, message: str, kind: str) -> Response:
    """The API's error answer: ``{"error": {"status", "type", "message"}}``."""
    return json_response({"error": {"status": status, "type": kind, "message": message}}, status)


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 12:
        raise ToolArgumentError(f"{name} must be a whole number, got {raw[:40]!r}")
    return int(raw)


def _flag(request: Request, name: str, default: bool) -> bool:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ToolArgumentError(f"{name} must be true or false, got {raw[:40]!r}")


def _required(request: Request, name: str) -> str:
    value = request.query_params.get(name)
    if not value:
        raise ToolArgumentError(f"the query parameter {name!r} is required")
    return value


Endpoint = Callable[[Request], Awaitable[Response]]


def _api(work: Callable[[Request], Any]) -> Endpoint:
    """An endpoint answering ``work(request)`` (run in a worker thread) as JSON, errors too."""

    async def endpoint(request: Request) -> Response:
        try:
            return json_response(await run_in_threadpool(work, request))
        except StateVCSError as exc:
            return error_response(_status(exc), str(exc), type(exc).__name__)
        except Exception:
            return _internal_error()

    return endpoint


def _internal_error() -> Response:
    """A bug's answer: the traceback goes to the server's log, not to the page."""
    _log.exception("statevcs serve: a request failed")
    return error_response(
        500, "the server failed to answer; its log (stderr) has the details", "InternalError"
    )


class _SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.decode("latin-1").lower() not in SECURITY_HEADERS
                ]
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, sending)


def host_name(header: str) -> str:
    """The host name of a ``Host`` header, without port or IPv6 brackets, in lower case."""
    text = header.strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else ""
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


class _LocalHostsOnly:
    """ASGI middleware answering 400 to a request whose ``Host`` is not one of ``hosts``.

    A page of another site cannot read this server's answers even if it points its own name
    at 127.0.0.1 (DNS rebinding): its requests name that site's host.
    """

    def __init__(self, app: ASGIApp, hosts: Sequence[str]) -> None:
        self.app = app
        self.hosts = {host_name(h) for h in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers", []))
            host = host_name(headers.get(b"host", b"").decode("latin-1"))
            if host not in self.hosts:
                names = ", ".join(sorted(self.hosts))
                response = error_response(
                    400, f"this server answers only to the host names {names}", "WrongHost"
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _static_text(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


def build_app(
    browser: HistoryBrowser,
    *,
    token: str | None = None,
    hosts: Sequence[str] = LOCAL_HOSTS,
) -> Starlette:
    """The ASGI app over ``browser``: pages at ``/``, the API at ``/api/``.

    Writes need ``browser.writable`` and ``token``: each write request must carry the token in
    the ``X-StateVCS-Token`` header and an ``Origin`` naming this server. ``hosts`` are the host
    names a request may use (``Host`` header); others get 400.
    """
    if not isinstance(browser, HistoryBrowser):
        raise TypeError(f"browser must be a HistoryBrowser, got {type(browser).__name__}")
    if browser.writable and not token:
        raise ValueError("a writable browser needs a token")
    index = _static_text("index.html")

    async def page(request: Request) -> Response:
        return Response(index, media_type="text/html; charset=utf-8")

    async def not_found(request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return error_response(
                404, "no such API endpoint; the list is in docs/serve.md", "NotFound"
            )
        return Response(
            _static_text("404.html"), status_code=404, media_type="text/html; charset=utf-8"
        )

    async def write_body(request: Request) -> dict[str, Any]:
        if not browser.writable or token is None:
            raise _Refused(
                403,
                "this browser is read-only; start it with `statevcs serve --allow-write` "
                "to create branches and tags or reset a branch",
            )
        origin = request.headers.get("origin")
        expected = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin != expected:
            raise _Refused(403, f"writes must come from this server's own pages ({expected})")
        given = request.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(given.encode("utf-8", "replace"), token.encode()):
            raise _Refused(403, "a write needs the token `statevcs serve` printed at start")
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            raise _Refused(415, "send the write as application/json")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise _Refused(413, f"the request body is over {MAX_BODY} bytes")
        try:
            data = json.loads(body)
        except ValueError:
            raise _Refused(400, "the request body is not JSON") from None
        if not isinstance(data, dict):
            raise _Refused(400, "the request body must be a JSON object")
        return data

    def write(work: Callable[[dict[str, Any]], Any]) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            try:
                data = await write_body(request)
                return json_response(await run_in_threadpool(work, data))
            except _Refused as exc:
                return error_response(exc.status, str(exc), "Refused")
            except StateVCSError as exc:
                return error_response(_status(exc), str(exc), type(exc).__name__)
            except Exception:
                return _internal_error()

        return endpoint

    routes = [
        Route("/", page),
        Route("/api/info", _api(lambda r: browser.info())),
        Route("/api/refs", _api(lambda r: browser.refs())),
        Route(
            "/api/graph",
            _api(lambda r: browser.graph(_int(r, "offset", 0), _int(r, "limit", DEFAULT_PAGE))),
        ),
        Route(
            "/api/commit",
            _api(
                lambda r: browser.commit(
                    r.query_params.get("rev") or "HEAD", _int(r, "offset", 0), _int(r, "limit", 50)
                )
            ),
        ),
        Route(
            "/api/diff",
            _api(
                lambda r: browser.diff(
                    _required(r, "a"),
                    r.query_params.get("b") or "HEAD",
                    _int(r, "offset", 0),
                    _int(r, "limit", DEFAULT_PAGE),
                )
            ),
        ),
        Route(
            "/api/search",
            _api(
                lambda r: browser.search(
                    _required(r, "q"),
                    rev=r.query_params.get("rev") or "HEAD",
                    all_refs=_flag(r, "all", "rev" not in r.query_params),
                    regex=_flag(r, "regex", False),
                    ignore_case=_flag(r, "ignore_case", True),
                    limit=_int(r, "limit", 50),
                )
            ),
        ),
        Route(
            "/api/compare",
            _api(
                lambda r: browser.compare(
                    _required(r, "a"),
                    _required(r, "b"),
                    _int(r, "offset", 0),
                    _int(r, "limit", 50),
                )
            ),
        ),
        Route(
            "/api/branches",
            write(lambda d: browser.create_branch(d.get("name"), d.get("rev", "HEAD"))),
            methods=["POST"],
        ),
        Route(
            "/api/tags",
            write(lambda d: browser.create_tag(d.get("name"), d.get("rev", "HEAD"))),
            methods=["POST"],
        ),
        Route(
            "/api/reset",
            write(lambda d: browser.reset(d.get("branch"), d.get("rev"))),
            methods=["POST"],
        ),
        Mount(
            "/static",
            StaticFiles(directory=str(resources.files(__package__).joinpath("static"))),
        ),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(_SecurityHeaders),
            Middleware(_LocalHostsOnly, hosts=list(hosts)),
        ],
        exception_handlers={404: not_found},
    )


__all__ = [
    "CONTENT_SECURITY_POLICY",
    "LOCAL_HOSTS",
    "MAX_BODY",
    "SECURITY_HEADERS",
    "TOKEN_HEADER",
    "build_app",
    "error_response",
    "host_name",
    "json_response",
]
