"""How the S3 store retries: the policy (URL options), which failures a retry can cure, the waits.

Reads (``GET``, ``HEAD``, ``LIST``) are retried by obstore itself after resets, timeouts and
5xx answers. Conditional writes are retried by obstore only after a 5xx answer (a reset or a
timeout might have hidden a write that landed), so the store retries those itself, knowing
which are safe: objects are content-addressed (the same bytes under the same key, however often
sent), and the repository document is re-read to see whether the write landed before it is
sent again (see ``S3Store._try_write``).
"""

from __future__ import annotations

import datetime as dt
import random
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from ..errors import StoreError

RETRY_PARAMETERS = ("retries", "backoff_ms", "max_backoff_ms", "timeout_ms", "connect_timeout_ms")
"""The URL parameters of a :class:`RetryPolicy`."""

_LIMITS = {
    "retries": (0, 100),
    "backoff_ms": (1, 60_000),
    "max_backoff_ms": (1, 600_000),
    "timeout_ms": (100, 3_600_000),
    "connect_timeout_ms": (100, 600_000),
}

Kind = Literal["network", "server", "credentials", "no-credentials", "refused"]
"""How a request failed: ``network`` (reset, timeout, no connection) and ``server`` (5xx) may
pass; ``credentials`` (403, 401), ``no-credentials`` (none in the environment, so the client
asked the cloud's instance metadata address for a role) and ``refused`` (any other answer)
will not."""

# The instance metadata address every S3 client asks for a role when the environment holds no
# credentials; on a laptop or a local server it answers nothing useful.
_METADATA_ADDRESS = "169.254.169.254"

TRANSIENT: frozenset[Kind] = frozenset(("network", "server"))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often, how patiently and how long one S3 request is tried (see docs/storage.md)."""

    retries: int = 6
    """Retries of one request after a reset, a timeout or a 5xx answer (then it fails)."""
    backoff_ms: int = 50
    """The wait before the first retry (each wait is drawn between half and all of its
    ceiling, which doubles with each retry)."""
    max_backoff_ms: int = 2_000
    """The most any one wait can be."""
    timeout_ms: int = 10_000
    """How long one request may take, from connecting to the last byte of the answer."""
    connect_timeout_ms: int = 5_000
    """How long connecting may take."""

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> RetryPolicy:
        """The policy from URL parameters (others take their defaults).

        A value that is not a whole number in its range raises ``ValueError`` saying so.
        """
        values: dict[str, int] = {}
        for name in RETRY_PARAMETERS:
            raw = params.get(name)
            if raw is None:
                continue
            low, high = _LIMITS[name]
            # The length first: int() refuses strings of thousands of digits.
            if not (raw.isascii() and raw.isdigit() and len(raw) <= 8 and low <= int(raw) <= high):
                raise ValueError(f"{name}={raw!r} is not a whole number from {low} to {high}")
            values[name] = int(raw)
        return cls(**values)

    def query(self) -> dict[str, int]:
        """The parameters that differ from the defaults (for a canonical URL)."""
        default = RetryPolicy()
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        }

    def waits(self) -> Iterator[float]:
        """The waits (seconds) before each of the :attr:`retries` retries of one write.

        Each is drawn between half and all of a ceiling that doubles from :attr:`backoff_ms`
        up to :attr:`max_backoff_ms`: never zero (a server asking to slow down gets a pause),
        never in step with another client that failed at the same moment. They stop early
        once :attr:`request_bound` has passed since the first was asked for, so the retries
        of one write never take longer than one request with all of obstore's retries.
        """
        ceiling = self.backoff_ms / 1000
        cap = self.max_backoff_ms / 1000
        deadline = time.monotonic() + self.request_bound
        for _ in range(self.retries):
            if time.monotonic() > deadline:
                return
            top = min(ceiling, cap)
            yield random.uniform(top / 2, top)
            ceiling *= 2

    @property
    def request_bound(self) -> float:
        """The longest (seconds) one request can take with all its retries."""
        return (self.retries + 1) * (self.timeout_ms + self.max_backoff_ms) / 1000

    def obstore_retry(self) -> dict[str, Any]:
        """obstore's ``retry_config`` for this policy (its own retries of reads and 5xx)."""
        return {
            "max_retries": self.retries,
            "retry_timeout": dt.timedelta(seconds=self.request_bound),
            "backoff": {
                "init_backoff": dt.timedelta(milliseconds=self.backoff_ms),
                "max_backoff": dt.timedelta(milliseconds=self.max_backoff_ms),
                "base": 2.0,
            },
        }

    def obstore_client_options(self) -> dict[str, Any]:
        """obstore's ``client_options`` timeouts for this policy."""
        return {
            "timeout": dt.timedelta(milliseconds=self.timeout_ms),
            "connect_timeout": dt.timedelta(milliseconds=self.connect_timeout_ms),
        }


def classify(exc: BaseException) -> Kind:
    """How an obstore request failed, from its exception."""
    name = type(exc).__name__
    text = str(exc)
    if _METADATA_ADDRESS in text:
        return "no-credentials"
    if name in ("PermissionDeniedError", "UnauthenticatedError"):
        return "credentials"
    if "Server returned non-2xx status code: 5" in text or "Server returned error response" in text:
        return "server"  # a 5xx, or a 200 whose body is an error (S3's InternalError, SlowDown)
    if "Server returned non-2xx status code" in text:
        return "refused"
    if any(
        sign in text
        for sign in ("HTTP error", "error sending request", "timed out", "connection", "Connect")
    ):
        return "network"
    return "refused"


def advice(kind: Kind, policy: RetryPolicy) -> str:
    """What to do about a request that failed this way, after the policy's retries."""
    if kind == "network":
        return (
            f"the connection failed or timed out, also after {policy.retries} retries: the "
            "network or the server is unreachable; retry later (a slow link may need a larger "
            "timeout_ms= in the URL)"
        )
    if kind == "server":
        return (
            f"the server answered with an error, also after {policy.retries} retries; retry "
            "later (or raise retries= in the URL)"
        )
    if kind == "no-credentials":
        return (
            "no S3 credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and "
            "AWS_REGION) in the environment; without them the client asks the cloud's instance "
            "metadata address for a role, which only a cloud machine has (docs/storage.md: a "
            "local S3 server to try it)"
        )
    if kind == "credentials":
        return (
            "check the credentials in the environment (AWS_ACCESS_KEY_ID, "
            "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) and their permissions on the bucket"
        )
    return (
        "check the endpoint, the bucket and the credentials in the environment "
        "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"
    )


def retried(exc: BaseException) -> bool:
    """Whether obstore sent the request more than once before ``exc`` (its message says)."""
    return re.search(r"after [1-9][0-9]* retries", str(exc)) is not None


class RequestFailed(StoreError):
    """An S3 request failed after its retries; :attr:`kind` says how."""

    def __init__(self, message: str, kind: Kind) -> None:
        super().__init__(message)
        self.kind: Kind = kind

    @property
    def transient(self) -> bool:
        """Whether trying again later may succeed (a reset, a timeout, a 5xx)."""
        return self.kind in TRANSIENT


__all__ = [
    "RETRY_PARAMETERS",
    "TRANSIENT",
    "Kind",
    "RequestFailed",
    "RetryPolicy",
    "advice",
    "classify",
    "retried",
]
