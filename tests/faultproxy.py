"""A fault-injecting HTTP proxy to put between an S3 client and the test SeaweedFS server.

It forwards every request unchanged (headers byte for byte, so SigV4 signatures still verify:
the client signs the ``Host`` it sends, which is forwarded as it is) and answers with what the
server answered, except where a fault applies:

``slowdown``       ``503 SlowDown``, not forwarded
``error_before``   ``500 InternalError``, not forwarded
``error_after``    forwarded (the write lands), then ``500``: the response is lost
``reset_before``   the connection is reset (TCP RST), not forwarded
``reset_after``    forwarded (the write lands), then the connection is reset
``delay``          forwarded after ``delay`` seconds
``stall``          never forwarded nor answered; the connection is held for ``delay`` seconds
                   (default: until the client gives up or the proxy stops), then closed
``conflict``       ``409 ConditionalRequestConflict``, not forwarded (S3's answer to a
                   conditional write while another one of the same key is in flight)

Faults come from targeted rules (:meth:`FaultProxy.rule`: method, key pattern, the n-th
matching request) and from a seeded random mode (:meth:`FaultProxy.randomly`). A rule may run a
callback after its fault's forwarding and before the client hears anything (another writer
committing while a response is lost). Every injected fault is counted by kind.
"""

from __future__ import annotations

import contextlib
import http.client
import random
import re
import select
import socket
import socketserver
import struct
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

FAULTS = (
    "slowdown",
    "error_before",
    "error_after",
    "reset_before",
    "reset_after",
    "delay",
    "stall",
    "conflict",
)
"""Every kind of fault the proxy injects."""

_ANSWERS = {
    "slowdown": (503, "Slow Down", "SlowDown", "Please reduce your request rate."),
    "error_before": (500, "Internal Server Error", "InternalError", "Injected before forwarding."),
    "error_after": (500, "Internal Server Error", "InternalError", "Injected after forwarding."),
    "conflict": (
        409,
        "Conflict",
        "ConditionalRequestConflict",
        "A conflicting conditional operation is currently in progress against this resource.",
    ),
}


@dataclass(frozen=True)
class Request:
    """One request as the proxy saw it."""

    method: str
    key: str
    """The object key (path after the bucket, percent-decoded); ``""`` for bucket requests."""
    query: str
    headers: dict[str, str]
    """Header names lowercased."""
    body: bytes

    @property
    def conditional(self) -> bool:
        """Whether this is a conditional write (``If-None-Match`` or ``If-Match``)."""
        return self.method == "PUT" and (
            "if-none-match" in self.headers or "if-match" in self.headers
        )


@dataclass
class Rule:
    """Inject ``fault`` into matching requests number ``nth`` .. ``nth + times - 1``."""

    fault: str
    method: str | None = None
    key: str | None = None
    """A regular expression searched in the request's key."""
    nth: int = 1
    times: int = 1
    delay: float = 0.0
    then: Callable[[], None] | None = None
    """Run after the fault's forwarding (if any), before the client gets an answer."""
    when: Callable[[Request], bool] | None = None
    seen: int = 0
    fired: int = 0

    def matches(self, request: Request) -> bool:
        return (
            (self.method is None or request.method == self.method)
            and (self.key is None or re.search(self.key, request.key) is not None)
            and (self.when is None or self.when(request))
        )


@dataclass
class _Random:
    rate: float
    kinds: Sequence[str]
    rng: random.Random
    delay: float
    stall: float


@dataclass
class Record:
    """What happened to one request."""

    method: str
    key: str
    fault: str | None
    conditional: bool


@dataclass
class _State:
    rules: list[Rule] = field(default_factory=list)
    random: _Random | None = None
    faults: Counter[str] = field(default_factory=Counter)
    log: list[Record] = field(default_factory=list)


class FaultProxy:
    """A threaded HTTP/1.1 proxy on 127.0.0.1 in front of ``upstream`` (``http://HOST:PORT``)."""

    def __init__(self, upstream: str) -> None:
        parts = urllib.parse.urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise ValueError(f"upstream must be http://HOST:PORT, got {upstream!r}")
        self.upstream = (parts.hostname, parts.port)
        self._lock = threading.Lock()
        self._state = _State()
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self._thread: threading.Thread | None = None

    # --- control -------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """The URL to give the client as its S3 endpoint."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FaultProxy:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def rule(
        self,
        fault: str,
        *,
        method: str | None = None,
        key: str | None = None,
        nth: int = 1,
        times: int = 1,
        delay: float = 0.0,
        then: Callable[[], None] | None = None,
        when: Callable[[Request], bool] | None = None,
    ) -> Rule:
        """Add a targeted rule; return it (its ``seen`` and ``fired`` count as requests pass)."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r} (known: {', '.join(FAULTS)})")
        rule = Rule(fault, method, key, nth, times, delay, then, when)
        with self._lock:
            self._state.rules.append(rule)
        return rule

    def randomly(
        self,
        rate: float,
        *,
        seed: int | str,
        kinds: Sequence[str] = FAULTS,
        delay: float = 0.2,
        stall: float = 3600.0,
    ) -> None:
        """Inject a fault into each request with probability ``rate`` (kind drawn uniformly).

        ``conflict`` only goes to conditional writes (anything else gets another kind).
        """
        unknown = set(kinds) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}")
        with self._lock:
            self._state.random = _Random(rate, tuple(kinds), random.Random(seed), delay, stall)

    def clear(self) -> None:
        """Drop every rule and the random mode (counts and the log stay)."""
        with self._lock:
            self._state.rules.clear()
            self._state.random = None

    @property
    def faults(self) -> Counter[str]:
        """How many faults of each kind were injected so far."""
        with self._lock:
            return Counter(self._state.faults)

    @property
    def log(self) -> list[Record]:
        """Every request so far, with the fault it got."""
        with self._lock:
            return list(self._state.log)

    # --- deciding ------------------------------------------------------------------------

    def _decide(self, request: Request) -> tuple[str | None, float, Callable[[], None] | None]:
        with self._lock:
            state = self._state
            chosen: tuple[str | None, float, Callable[[], None] | None] = (None, 0.0, None)
            for rule in state.rules:
                if not rule.matches(request):
                    continue
                rule.seen += 1
                if rule.nth <= rule.seen < rule.nth + rule.times:
                    rule.fired += 1
                    chosen = (rule.fault, rule.delay, rule.then)
                    break
            else:
                chance = state.random
                if chance is not None and chance.rng.random() < chance.rate:
                    kinds = [k for k in chance.kinds if k != "conflict" or request.conditional] or [
                        "error_before"
                    ]
                    kind = chance.rng.choice(kinds)
                    wait = chance.stall if kind == "stall" else chance.delay
                    chosen = (kind, wait, None)
            if chosen[0] is not None:
                state.faults[chosen[0]] += 1
            state.log.append(Record(request.method, request.key, chosen[0], request.conditional))
            return chosen

    # --- forwarding ----------------------------------------------------------------------

    def forward(
        self, request: Request, raw_headers: list[tuple[str, str]], target: str
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """Send ``request`` upstream; return its status, reason, headers and body."""
        connection = http.client.HTTPConnection(*self.upstream, timeout=120)
        try:
            connection.putrequest(request.method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in raw_headers:
                connection.putheader(name, value)
            connection.endheaders(request.body if request.body else None)
            response = connection.getresponse()
            body = response.read()
            return response.status, response.reason, response.getheaders(), body
        finally:
            connection.close()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    proxy: FaultProxy


class _Closed(Exception):
    """The client closed its connection."""


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        proxy = self.server.proxy
        while not proxy._stopping.is_set():
            try:
                parsed = self._read_request()
            except (_Closed, OSError, ValueError):
                return
            request, raw_headers, target = parsed
            fault, delay, then = proxy._decide(request)
            if not self._serve(proxy, request, raw_headers, target, fault, delay, then):
                return

    def _serve(
        self,
        proxy: FaultProxy,
        request: Request,
        raw_headers: list[tuple[str, str]],
        target: str,
        fault: str | None,
        delay: float,
        then: Callable[[], None] | None,
    ) -> bool:
        """Answer one request; whether the connection stays open."""
        if fault in ("reset_before", "stall") or fault in ("slowdown", "error_before", "conflict"):
            if fault == "stall":
                self._hold(proxy, delay or 3600.0)
                self._close()
                return False
            if then is not None:
                then()
            if fault == "reset_before":
                self._reset()
                return False
            assert fault is not None
            return self._answer_error(fault, request)
        if fault == "delay":
            time.sleep(delay)
        try:
            status, reason, headers, body = proxy.forward(request, raw_headers, target)
        except OSError:
            self._reset()
            return False
        if then is not None:
            then()
        if fault == "reset_after":
            self._reset()
            return False
        if fault == "error_after":
            return self._answer_error(fault, request)
        return self._answer(request, status, reason, headers, body)

    def _read_request(self) -> tuple[Request, list[tuple[str, str]], str]:
        line = self.rfile.readline(65537)
        if not line:
            raise _Closed
        method, target, _version = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        raw_headers: list[tuple[str, str]] = []
        while True:
            header = self.rfile.readline(65537)
            if not header:
                raise _Closed
            if header in (b"\r\n", b"\n"):
                break
            name, _, value = header.decode("latin-1").partition(":")
            raw_headers.append((name.strip(), value.strip()))
        headers = {name.lower(): value for name, value in raw_headers}
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = self._read_chunked()
            raw_headers = [(n, v) for n, v in raw_headers if n.lower() != "transfer-encoding"] + [
                ("Content-Length", str(len(body)))
            ]
        else:
            length = int(headers.get("content-length", "0") or 0)
            body = self.rfile.read(length) if length else b""
            if len(body) < length:
                raise _Closed
        path, _, query = target.partition("?")
        segments = urllib.parse.unquote(path).lstrip("/").split("/", 1)
        key = segments[1] if len(segments) > 1 else ""
        return Request(method, key, query, headers, body), raw_headers, target

    def _read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            size_line = self.rfile.readline(65537)
            if not size_line:
                raise _Closed
            size = int(size_line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(body)
            body += self.rfile.read(size)
            self.rfile.readline(65537)

    def _answer(
        self,
        request: Request,
        status: int,
        reason: str,
        headers: list[tuple[str, str]],
        body: bytes,
    ) -> bool:
        lines = [f"HTTP/1.1 {status} {reason}"]
        for name, value in headers:
            if name.lower() in ("transfer-encoding", "connection", "keep-alive"):
                continue
            if name.lower() == "content-length" and request.method != "HEAD":
                continue
            lines.append(f"{name}: {value}")
        if request.method != "HEAD" and status not in (204, 304):
            lines.append(f"Content-Length: {len(body)}")
        else:
            body = b""
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            self.wfile.write(head + body)
            self.wfile.flush()
        except OSError:
            return False
        return True

    def _answer_error(self, fault: str, request: Request) -> bool:
        status, reason, code, message = _ANSWERS[fault]
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{message}</Message>"
            f"<Resource>/{request.key}</Resource><RequestId>faultproxy</RequestId></Error>"
        ).encode()
        headers = [("Content-Type", "application/xml")]
        return self._answer(request, status, reason, headers, body)

    def _hold(self, proxy: FaultProxy, seconds: float) -> None:
        """Wait ``seconds``, or until the client hangs up or the proxy stops."""
        deadline = time.monotonic() + seconds
        while not proxy._stopping.is_set() and time.monotonic() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable:
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        return
                except OSError:
                    return
                time.sleep(0.05)  # a pipelined request: keep holding

    def _reset(self) -> None:
        """Close the connection with a TCP RST (SO_LINGER 0), as a crashed peer would."""
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self._close()

    def _close(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.close()


__all__ = ["FAULTS", "FaultProxy", "Record", "Request", "Rule"]
