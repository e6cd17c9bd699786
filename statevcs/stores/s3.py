"""A store on S3-compatible object storage (AWS S3, R2, MinIO, SeaweedFS, ...): ``s3://``.

Layout under ``s3://BUCKET/PREFIX/``:

``objects/<hex id>``
    One immutable object per key, written with ``If-None-Match: *`` (the first bytes win).
``logs/<sha-256>``
    Immutable reflog chunks (32 entries each), content-addressed.
``statevcs.json``
    The repository document: every ref, symbolic ref, reflog's newest entries and chunk list,
    the config and the gc generation. Every change is one conditional ``PUT`` with
    ``If-Match: <etag>`` of the version it was computed from, so a batch of ref moves, its
    reflog entries, the generation check and the ``HEAD`` it logs to land together or not at
    all. Writers that lose the race re-read and re-check their expected values; a ref that
    really moved raises :class:`~statevcs.errors.RefConflict`. The document names its last
    64 writes (``writes``), so a writer whose answer was lost recognises its own write.

Requests that fail on the network are retried (:mod:`statevcs.stores.s3_retry` has the policy,
the URL's ``retries``, ``backoff_ms``, ``max_backoff_ms``, ``timeout_ms`` and
``connect_timeout_ms``); no commit is acknowledged before its objects were seen stored.

Garbage collection takes a sweep lease in the document before it deletes anything and bumps
the generation when it releases it; no ref moves while a lease is held. See docs/storage.md for
the argument that a writer can never publish a ref to a deleted object.

Reads go through a local read-through cache (a bounded SQLite file, least recently used out):
objects are immutable, so each crosses the network once per machine.

Every read-only call (a ref, ``HEAD``, the config, a reflog, the gc generation) reads the
document afresh (a conditional ``GET``, ``304`` when unchanged), unless it runs inside
:meth:`S3Store.operation`, whose read-only calls share one read, or the URL sets
``doc_ttl_ms=N``, which lets read-only calls reuse a document read in the last N ms when no
handle in this process wrote since. Writes always start from, and are conditional on, a version
read or written by the write itself.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import os
import random
import re
import sqlite3
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..compression import content_id
from ..errors import (
    RefConflict,
    RefsChanged,
    RepositoryError,
    RepositoryExists,
    RepositoryNotFound,
    StaleCache,
    StateVCSError,
    StoreError,
)
from ..hashing import ID_SIZE, ObjectId
from . import forksafety
from .base import (
    ANY,
    RefsState,
    RefUpdate,
    Store,
    StoredReflogEntry,
    check_batch,
    logged_names,
    reflog_note,
)
from .locations import holds_credentials, shown_location
from .s3_retry import RETRY_PARAMETERS, RequestFailed, RetryPolicy, advice, classify, retried

_XML_BODY = re.compile(r":?\s*<\?xml.*$", re.S)

DOCUMENT = "statevcs.json"
DOCUMENT_FORMAT = 1
LOG_CHUNK = 32
"""Reflog entries kept inline in the document per ref before they move to an immutable chunk."""
SWEEP_LEASE = 60.0
"""Seconds a gc sweep lease lasts; writers wait for it, and take it over only once it expired."""
DEFAULT_CACHE_MB = 256
_CONCURRENCY = 32
_WRITE_DEADLINE = 120.0  # seconds a write keeps retrying lost races before it gives up
_DELETE_BATCH = 1000

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_IP_LIKE = re.compile(r"^\d+\.\d+\.\d+\.\d+$")
_SEGMENT = re.compile(r"^[A-Za-z0-9!_.*'()-]+$")
_REGION = re.compile(r"^[a-z0-9-]{1,40}$")
_HEX = re.compile(r"^[0-9a-f]{64}$")
_PARAMETERS = ("endpoint_url", "region", "cache", "cache_mb", "doc_ttl_ms", *RETRY_PARAMETERS)
_MAX_DOC_TTL_MS = 60_000

_T = TypeVar("_T")


# --- the URL ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class S3Location:
    """A parsed ``s3://bucket/prefix?endpoint_url=...&region=...`` repository URL."""

    bucket: str
    prefix: str
    endpoint_url: str | None = None
    region: str | None = None
    cache: str | None = None
    """A cache folder, ``"none"`` for no local cache, or ``None`` for the default folder."""
    cache_mb: int | None = None
    doc_ttl_ms: int | None = None
    """How long (ms) read-only calls may reuse a document read; ``None`` or 0: never."""
    retries: int | None = None
    backoff_ms: int | None = None
    max_backoff_ms: int | None = None
    timeout_ms: int | None = None
    connect_timeout_ms: int | None = None
    """The retry options (``None``: the default); see :attr:`policy`."""

    @property
    def policy(self) -> RetryPolicy:
        """How requests are retried and timed out: the URL's options, defaults for the rest."""
        given = {n: v for n in RETRY_PARAMETERS if (v := getattr(self, n)) is not None}
        return RetryPolicy(**given)

    @property
    def url(self) -> str:
        """The canonical URL (parameters in a fixed order; never any credentials)."""
        query = urllib.parse.urlencode(
            [(k, str(v)) for k in _PARAMETERS if (v := getattr(self, k)) is not None]
        )
        path = f"/{self.prefix}" if self.prefix else ""
        return f"s3://{self.bucket}{path}" + (f"?{query}" if query else "")

    def key(self, name: str) -> str:
        """The object key of ``name`` under this repository's prefix."""
        return f"{self.prefix}/{name}" if self.prefix else name


def _bad_url(url: str, problem: str) -> RepositoryError:
    # ``problem`` may quote parts of the URL: parse_s3_url refuses credentials first, so by
    # then the URL holds none.
    return RepositoryError(
        f"invalid S3 repository URL {shown_location(url)!r}: {problem}; write it as "
        "s3://BUCKET/PREFIX?endpoint_url=http://HOST:PORT&region=REGION "
        "(credentials come from the environment, as for every S3 client)"
    )


def parse_s3_url(url: object) -> S3Location:
    """Parse an ``s3://`` repository URL; a malformed one raises ``RepositoryError`` saying why."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    if holds_credentials(url):
        # Before anything else: no later message may quote a part of a secret.
        raise _bad_url(
            url,
            "it holds credentials (an '@' or a secret parameter), which go in neither the URL "
            "nor its endpoint_url",
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise _bad_url(url, "it contains a control character")
    if url[:5].lower() != "s3://":  # a URL's scheme is case-insensitive: S3:// is s3://
        raise _bad_url(url, "it does not start with s3://")
    rest = url[len("s3://") :]
    rest, hash_mark, _fragment = rest.partition("#")
    if hash_mark:
        raise _bad_url(url, "it has a #fragment")
    location, _, query = rest.partition("?")
    bucket, _, prefix = location.partition("/")
    if not bucket:
        raise _bad_url(url, "the bucket name is missing")
    if "@" in bucket or ":" in bucket:
        raise _bad_url(
            url, "the bucket name holds '@' or ':' (credentials and ports do not go there)"
        )
    if not _BUCKET.match(bucket) or ".." in bucket or _IP_LIKE.match(bucket):
        raise _bad_url(
            url,
            f"{bucket!r} is not a valid bucket name (3-63 lowercase letters, digits, '.' and "
            "'-', starting and ending with a letter or digit)",
        )
    prefix = prefix.strip("/")
    if len(prefix) > 512:
        raise _bad_url(url, "the prefix is longer than 512 characters")
    for segment in prefix.split("/") if prefix else []:
        if segment in ("", ".", "..") or not _SEGMENT.match(segment):
            raise _bad_url(
                url,
                f"the prefix segment {segment!r} is not allowed (use letters, digits and "
                "!_.*'()- between single slashes; no '.' or '..' segments)",
            )
    try:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise _bad_url(url, "its query is not name=value pairs joined by '&'") from None
    params: dict[str, str] = {}
    for name, value in pairs:
        if name not in _PARAMETERS:
            raise _bad_url(url, f"unknown parameter {name!r} (known: {', '.join(_PARAMETERS)})")
        if name in params:
            raise _bad_url(url, f"the parameter {name!r} is given twice")
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise _bad_url(url, f"the parameter {name!r} contains a control character")
        params[name] = value
    endpoint = params.get("endpoint_url")
    if endpoint is not None:
        try:  # urlsplit refuses a bad IPv6 host or an NFKC-folding netloc with a ValueError
            parts = urllib.parse.urlsplit(endpoint)
            _ = parts.hostname
        except ValueError:
            raise _bad_url(url, "endpoint_url is not an http(s)://HOST[:PORT] URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _bad_url(url, f"endpoint_url {endpoint!r} is not an http(s)://HOST[:PORT] URL")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise _bad_url(url, "endpoint_url must not hold credentials, a query or a fragment")
        try:
            _ = parts.port
        except ValueError:
            raise _bad_url(url, f"endpoint_url {endpoint!r} has an invalid port") from None
    region = params.get("region")
    if region is not None and not _REGION.match(region):
        raise _bad_url(url, f"region {region!r} is not a region name like us-east-1")
    cache = params.get("cache")
    if cache is not None and not cache:
        raise _bad_url(url, "cache= needs a folder, or 'none' for no local cache")
    cache_mb: int | None = None
    if "cache_mb" in params:
        raw = params["cache_mb"]
        if not raw.isascii() or not raw.isdigit() or len(raw) > 8 or not 0 < int(raw) <= 10**7:
            raise _bad_url(url, f"cache_mb={raw!r} is not a whole number of megabytes (1+)")
        cache_mb = int(raw)
    doc_ttl_ms: int | None = None
    if "doc_ttl_ms" in params:
        raw = params["doc_ttl_ms"]
        # The length first: int() refuses strings of thousands of digits.
        if not raw.isascii() or not raw.isdigit() or len(raw) > 5 or int(raw) > _MAX_DOC_TTL_MS:
            raise _bad_url(
                url,
                f"doc_ttl_ms={raw!r} is not a whole number of milliseconds from 0 to "
                f"{_MAX_DOC_TTL_MS}",
            )
        doc_ttl_ms = int(raw)
    try:
        RetryPolicy.from_query(params)
    except ValueError as exc:
        raise _bad_url(url, str(exc)) from None
    retry = {n: int(params[n]) for n in RETRY_PARAMETERS if n in params}
    return S3Location(bucket, prefix, endpoint, region, cache, cache_mb, doc_ttl_ms, **retry)


# --- the client ---------------------------------------------------------------------------


# A URL's userinfo inside obstore's messages: the request URL it prints is built from the
# endpoint, which may come from the environment (AWS_ENDPOINT_URL) with a user:password in it.
# Its userinfo is percent-encoded there, so it ends at the first '@'; cut at 300 characters, a
# message may lack that '@', so a URL's authority with no '@' left is masked whole.
_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^\s/?#@]*@")
_CUT_AUTHORITY = re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^\s/?#@]*:[^\s/?#@]*$")


def _without_userinfo(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced by ``***``."""
    return _CUT_AUTHORITY.sub(r"\1***", _USERINFO.sub(r"\1***@", text))


def _obstore() -> Any:
    try:
        import obstore
        import obstore.exceptions
        import obstore.store
    except ImportError:
        raise RepositoryError(
            "s3:// repositories need the obstore package: pip install 'statevcs[s3]'"
        ) from None
    return obstore


class _Client:
    """obstore calls on one bucket, every failure as a StoreError that says what to check."""

    def __init__(self, location: S3Location) -> None:
        forksafety.enter_s3(location.url)  # a store made in a forked child would hang
        self.location = location
        self.policy = location.policy
        self.obstore = _obstore()
        errors = self.obstore.exceptions
        self.AlreadyExists: type[Exception] = errors.AlreadyExistsError
        self.Precondition: type[Exception] = errors.PreconditionError
        self.NotModified: type[Exception] = errors.NotModifiedError
        options: dict[str, Any] = {}
        client_options = self.policy.obstore_client_options()
        if location.endpoint_url is not None:
            options["endpoint"] = location.endpoint_url
            client_options["allow_http"] = location.endpoint_url.startswith("http://")
        options["client_options"] = client_options
        if location.region is not None:
            options["region"] = location.region
        retry = self.policy.obstore_retry()
        try:
            self.store = self.obstore.store.S3Store(location.bucket, retry_config=retry, **options)
        except Exception as exc:  # obstore reports bad configuration with its own types
            raise RepositoryError(
                f"cannot configure S3 access to {location.url}: {_without_userinfo(str(exc))}"
            ) from None
        self._pool = concurrent.futures.ThreadPoolExecutor(
            _CONCURRENCY, thread_name_prefix="statevcs-s3"
        )

    def failure(self, exc: BaseException, what: str) -> StoreError:
        """``exc`` from obstore as a StoreError naming the request and what to do about it
        (a :class:`RequestFailed` that says whether a retry may cure it)."""
        text = _without_userinfo(str(exc).split("\n", 1)[0][:300])
        # An error body is S3's XML; the status line before it says what the reader needs.
        text = _XML_BODY.sub("", text)
        if "NoSuchBucket" in str(exc):
            return RepositoryNotFound(
                f"bucket {self.location.bucket!r} does not exist at "
                f"{self.location.endpoint_url or 'AWS'}; create it, or fix the URL"
            )  # type: ignore[return-value]
        kind = classify(exc)
        return RequestFailed(
            f"S3 {what} failed on {self.location.url}: {text}; {advice(kind, self.policy)}", kind
        )

    def get(self, key: str, *, if_none_match: str | None = None) -> tuple[bytes, str, float] | None:
        """Return ``(bytes, etag, last modified)``, ``None`` if absent; NotModified passes up."""
        options = {"if_none_match": if_none_match} if if_none_match else None
        try:
            result = self.obstore.get(self.store, key, options=options)
            data = bytes(result.bytes())
        except FileNotFoundError as exc:
            if "NoSuchBucket" in str(exc):
                raise self.failure(exc, f"GET {key}") from None
            return None
        except self.NotModified:
            raise
        except Exception as exc:
            raise self.failure(exc, f"GET {key}") from None
        meta = result.meta
        return data, str(meta.get("e_tag") or ""), meta["last_modified"].timestamp()

    def head(self, key: str) -> bool:
        """Whether ``key`` exists."""
        return self.stat(key) is not None

    def stat(self, key: str) -> str | None:
        """The etag of ``key`` (``""`` if the server gave none), ``None`` if it is absent."""
        try:
            meta = self.obstore.head(self.store, key)
        except FileNotFoundError as exc:
            if "NoSuchBucket" in str(exc):
                raise self.failure(exc, f"HEAD {key}") from None
            return None
        except Exception as exc:
            raise self.failure(exc, f"HEAD {key}") from None
        return str(meta.get("e_tag") or "")

    def put(self, key: str, data: bytes, mode: Any = None) -> str:
        """PUT ``data``; return the new etag. AlreadyExists and Precondition pass up."""
        try:
            if mode is None:
                result = self.obstore.put(self.store, key, data)
            else:
                result = self.obstore.put(self.store, key, data, mode=mode)
        except (self.AlreadyExists, self.Precondition):
            raise
        except Exception as exc:
            raise self.failure(exc, f"PUT {key}") from None
        return str(result.get("e_tag") or "")

    def create(self, key: str, data: bytes, *, ours: Callable[[], bool] | None = None) -> bool:
        """Store immutable ``data`` under ``key`` unless it is there: whether this call wrote it.

        Content-addressed, so safe to send again: retried after resets, timeouts and 5xx
        answers. An "already exists" answer is never taken on trust (S3 also gives it, as
        ``409``, while another upload of the key is still in flight, which may never finish):
        the key is confirmed with ``HEAD``, and its etag with the MD5 of ``data``; absent, it
        is uploaded again. Other bytes under the key are replaced if ``ours()`` says ``data``
        is right for it (a damaged object repaired), else left.
        """
        waits = self.policy.waits()
        failed: RequestFailed | None = None
        while True:
            try:
                self.put(key, data, mode="create")
                return True
            except self.AlreadyExists:
                there = self._holds(key, data)
                if there is True:
                    return False
                if there is False:
                    if ours is not None and ours():
                        self.put(key, data)  # unconditional: replaces the damaged bytes
                        return True
                    return False
                # Absent: another upload of it is in flight, or one that failed.
            except RequestFailed as exc:
                if exc.kind != "network":
                    raise  # refused, or a 5xx after obstore's own retries
                failed = exc
            wait = next(waits, None)
            if wait is None:
                raise failed or RequestFailed(
                    f"S3 PUT {key} failed on {self.location.url}: the server kept answering "
                    "that the key exists while it is absent (another upload of it in flight "
                    f"that never finished), also after {self.policy.retries} retries; retry "
                    "later",
                    "server",
                )
            time.sleep(wait)

    def _holds(self, key: str, data: bytes) -> bool | None:
        """Whether ``key`` holds ``data`` (``None``: absent), by its etag when that is the
        MD5 of the bytes (a plain upload), else by reading it."""
        etag = self.stat(key)
        if etag is None:
            return None
        if etag.strip('"').lower() == hashlib.md5(data, usedforsecurity=False).hexdigest():
            return True
        found = self.get(key)  # multipart or encrypted: the etag is no digest of the bytes
        if found is None:
            return None
        return found[0] == data

    def delete(self, keys: list[str]) -> None:
        """Delete ``keys`` (absent ones are fine), in bulk requests."""
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            try:
                self.obstore.delete(self.store, batch)
            except FileNotFoundError:
                pass
            except Exception as exc:
                raise self.failure(exc, "DELETE") from None

    def listing(self, prefix: str, offset: str | None = None) -> Iterator[tuple[str, int, float]]:
        """Yield ``(key, size, last modified)`` under ``prefix`` in key order."""
        try:
            if offset is None:
                stream = self.obstore.list(self.store, prefix)
            else:
                stream = self.obstore.list(self.store, prefix, offset=offset)
            for chunk in stream:
                for meta in chunk:
                    yield str(meta["path"]), int(meta["size"]), meta["last_modified"].timestamp()
        except FileNotFoundError as exc:
            if "NoSuchBucket" in str(exc):
                raise self.failure(exc, f"LIST {prefix}") from None
            return
        except Exception as exc:
            raise self.failure(exc, f"LIST {prefix}") from None

    def concurrently(self, call: Callable[[_T], Any], items: Sequence[_T]) -> list[Any]:
        """``[call(item) for item in items]``, the requests in flight together."""
        if len(items) <= 1:
            return [call(item) for item in items]
        return list(self._pool.map(call, items))

    def close(self) -> None:
        """Stop the request threads."""
        self._pool.shutdown(wait=False, cancel_futures=True)


# --- the local cache ----------------------------------------------------------------------


def default_cache_folder() -> Path:
    """Where the read-through cache lives: ``$STATEVCS_CACHE_DIR`` or the user cache folder."""
    explicit = os.environ.get("STATEVCS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "statevcs"


class _Cache:
    """A bounded, least-recently-used cache of immutable bytes in one SQLite file.

    Shared by every process on the machine that opens the same repository. Any failure of the
    cache counts as a miss: the bucket is the truth, the cache only saves requests. Each entry
    carries ``seen``, the gc generation at which it was last seen in the bucket: its bytes are
    always good (only verified bytes go in), but that it still exists is known only until the
    next collection.
    """

    _TOUCH_AFTER = 60.0  # seconds: a hit re-stamps its row at most once a minute

    def __init__(self, path: Path, limit_bytes: int) -> None:
        self.path = path
        self.limit = limit_bytes
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._inserted = 0
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                str(path), timeout=5, isolation_level=None, check_same_thread=False
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")  # a cache lost on power failure is refetched
            db.execute(
                "CREATE TABLE IF NOT EXISTS cache (key BLOB PRIMARY KEY, data BLOB NOT NULL, "
                "used REAL NOT NULL, seen INTEGER NOT NULL DEFAULT -1)"
            )
            columns = {row[1] for row in db.execute("PRAGMA table_info(cache)")}
            if "seen" not in columns:
                # A cache from before entries were verified and tagged: start it afresh.
                db.execute("DELETE FROM cache")
                with contextlib.suppress(sqlite3.OperationalError):  # another process did it
                    db.execute("ALTER TABLE cache ADD COLUMN seen INTEGER NOT NULL DEFAULT -1")
            db.execute("CREATE INDEX IF NOT EXISTS cache_by_use ON cache (used)")
            self._db = db
        except (OSError, sqlite3.Error):
            self._db = None

    def get(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        """Return the cached bytes of the keys that are cached."""
        return {key: data for key, (data, _) in self.get_seen(keys).items()}

    def get_seen(self, keys: Sequence[bytes]) -> dict[bytes, tuple[bytes, int]]:
        """Return ``(bytes, generation last seen in the bucket)`` of the keys that are cached."""
        db = self._db
        if db is None or not keys:
            return {}
        found: dict[bytes, tuple[bytes, int]] = {}
        stale: list[bytes] = []
        now = time.time()
        try:
            with self._lock:
                for start in range(0, len(keys), 500):
                    batch = list(keys[start : start + 500])
                    marks = ",".join("?" * len(batch))
                    for key, data, used, seen in db.execute(
                        f"SELECT key, data, used, seen FROM cache WHERE key IN ({marks})", batch
                    ):
                        found[bytes(key)] = (bytes(data), int(seen))
                        if used < now - self._TOUCH_AFTER:
                            stale.append(key)
                if stale:
                    db.executemany(
                        "UPDATE cache SET used = ? WHERE key = ?", [(now, k) for k in stale]
                    )
        except sqlite3.Error:
            return found
        return found

    def put(self, items: Mapping[bytes, bytes], seen: int = -1) -> None:
        """Cache verified ``items``, seen in the bucket at gc generation ``seen``; evict the
        least recently used when over the size limit."""
        db = self._db
        if db is None or not items:
            return
        now = time.time()
        try:
            with self._lock:
                db.execute("BEGIN")
                db.executemany(
                    "INSERT INTO cache (key, data, used, seen) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET seen = max(seen, excluded.seen)",
                    [(k, v, now, seen) for k, v in items.items()],
                )
                db.execute("COMMIT")
                self._inserted += sum(len(v) for v in items.values())
                if self._inserted > self.limit // 16:
                    self._inserted = 0
                    self._evict(db)
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")

    def _evict(self, db: sqlite3.Connection) -> None:
        (size,) = db.execute("SELECT total(length(data)) FROM cache").fetchone()
        if size <= self.limit:
            return
        # Down to 90% of the limit, oldest use first.
        excess = size - self.limit * 0.9
        rows = db.execute("SELECT key, length(data) FROM cache ORDER BY used").fetchall()
        doomed = []
        for key, length in rows:
            if excess <= 0:
                break
            doomed.append((key,))
            excess -= length
        db.executemany("DELETE FROM cache WHERE key = ?", doomed)

    def mark_seen(self, keys: Iterable[bytes], seen: int) -> None:
        """Record that ``keys`` were seen in the bucket at gc generation ``seen``."""
        db = self._db
        if db is None:
            return
        with contextlib.suppress(sqlite3.Error), self._lock:
            db.executemany(
                "UPDATE cache SET seen = max(seen, ?) WHERE key = ?", [(seen, k) for k in keys]
            )

    def drop(self, keys: Iterable[bytes]) -> None:
        """Forget ``keys`` (objects this process deleted from the bucket)."""
        db = self._db
        if db is None:
            return
        with contextlib.suppress(sqlite3.Error), self._lock:
            db.executemany("DELETE FROM cache WHERE key = ?", [(k,) for k in keys])

    def close(self) -> None:
        """Close the cache file."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


# --- the repository document ----------------------------------------------------------------


class _Doc:
    """One version of ``statevcs.json`` and the etag it was read or written with."""

    __slots__ = ("data", "etag")

    def __init__(self, data: dict[str, Any], etag: str) -> None:
        self.data = data
        self.etag = etag

    @property
    def refs(self) -> dict[str, str]:
        return self.data["refs"]  # type: ignore[no-any-return]

    @property
    def symbolic(self) -> dict[str, str]:
        return self.data["symbolic"]  # type: ignore[no-any-return]

    @property
    def logs(self) -> dict[str, dict[str, Any]]:
        return self.data["logs"]  # type: ignore[no-any-return]

    @property
    def config(self) -> dict[str, str]:
        return self.data["config"]  # type: ignore[no-any-return]

    @property
    def generation(self) -> int:
        return int(self.data["generation"])

    @property
    def sweep(self) -> dict[str, Any] | None:
        return self.data["sweep"]  # type: ignore[no-any-return]

    def copy(self) -> dict[str, Any]:
        """A deep copy of the data, to build the next version from."""
        return json.loads(json.dumps(self.data))  # type: ignore[no-any-return]


def new_document(config: Mapping[str, str], head: str | None) -> dict[str, Any]:
    """The document of a new repository: ``HEAD`` -> ``head`` (if given), no refs, ``config``."""
    token = uuid.uuid4().hex
    return {
        "statevcs": DOCUMENT_FORMAT,
        "serial": 0,
        "writer": token,
        "writes": [[0, token]],
        "refs_serial": 0,
        "generation": 0,
        "sweep": None,
        "config": dict(config),
        "refs": {},
        "symbolic": {"HEAD": head} if head is not None else {},
        "logs": {},
    }


WRITES_KEPT = 64
"""How many of its last writes the document names (``writes``: ``[serial, token]`` pairs): a
writer whose answer was lost finds its own token there even after others wrote on top."""


def _recent_writes(data: Mapping[str, Any]) -> list[list[Any]]:
    """The document's ``writes`` that are well formed (a damaged list only forgets writes)."""
    found = data.get("writes")
    if not isinstance(found, list):
        return []
    return [
        [w[0], w[1]]
        for w in found[-WRITES_KEPT:]
        if isinstance(w, list)
        and len(w) == 2
        and type(w[0]) is int
        and isinstance(w[1], str)
        and len(w[1]) <= 64
    ]


def _matches(object_id: ObjectId, data: bytes, scope: str) -> bool:
    """Whether stored bytes (plain or compressed) are the object ``object_id`` names (a frame
    naming a dictionary is read with the one of repository ``scope``)."""
    try:
        return content_id(data, scope) == object_id
    except StateVCSError:
        return False


def _damaged(where: str, problem: str) -> StoreError:
    return StoreError(
        f"the repository document {where} is damaged ({problem}); restore statevcs.json from "
        "a bucket version or a backup (or, to give up its history, delete statevcs.json and "
        "create a new repository there with statevcs.Repo.init)"
    )


def _parse_document(data: bytes, where: str) -> object:
    """The JSON of ``statevcs.json``; damage (not JSON, nested too deep) as a StoreError."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise _damaged(where, "not JSON, or nested too deeply") from None


def _check_document(data: object, where: str) -> dict[str, Any]:
    """The document's top-level shape, checked; damaged values inside are caught where read."""
    if not isinstance(data, dict):
        raise _damaged(where, "not a JSON object")
    version = data.get("statevcs")
    if type(version) is not int or version != DOCUMENT_FORMAT:  # `true == 1` is no format
        raise _damaged(where, f"format {version!r}, expected {DOCUMENT_FORMAT}")
    for key, kind in (
        ("serial", int),
        ("refs_serial", int),
        ("generation", int),
        ("config", dict),
        ("refs", dict),
        ("symbolic", dict),
        ("logs", dict),
        ("writer", str),
    ):
        if not isinstance(data.get(key), kind) or isinstance(data.get(key), bool):
            raise _damaged(where, f"{key!r} is missing or not a {kind.__name__}")
        # Counters also key the local cache (SQLite INTEGER): a huge one is damage, not a count.
        if kind is int and not 0 <= data[key] < _MAX_COUNTER:
            raise _damaged(where, f"{key!r} is out of range")
    sweep = data.get("sweep")
    if sweep is not None and not (
        isinstance(sweep, dict)
        and isinstance(sweep.get("token"), str)
        and _is_time(sweep.get("until"))
    ):
        raise _damaged(where, "'sweep' is not a lease")
    for key in ("config", "symbolic"):
        if not all(isinstance(v, str) for v in data[key].values()):
            raise _damaged(where, f"a value in {key!r} is not text")
    for name, log in data["logs"].items():
        if not (
            isinstance(log, dict)
            and isinstance(log.get("recent"), list)
            and isinstance(log.get("chunks"), list)
            and all(isinstance(c, str) and _HEX.match(c) for c in log["chunks"])
        ):
            raise _damaged(where, f"the reflog of {name!r} is malformed")
        for entry in log["recent"]:
            if isinstance(entry, list) and len(entry) == 4 and not _is_time(entry[2]):
                raise _damaged(where, f"a reflog entry of {name!r} has no valid time")
    return data


_MAX_COUNTER = 2**62
_MAX_TIME = 1e11  # seconds since 1970: beyond the year 5000


def _is_time(value: object) -> bool:
    """Whether ``value`` is a finite timestamp ``float()`` can take (NaN and huge ints are not)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and -_MAX_TIME < value < _MAX_TIME
    )


def _lease(token: str) -> dict[str, Any]:
    """A sweep lease: ``for`` seconds as timed by each writer; ``until`` for people reading."""
    return {"token": token, "until": time.time() + SWEEP_LEASE, "for": SWEEP_LEASE}


def _lease_length(sweep: Mapping[str, Any]) -> float:
    """How long a writer must see one version of a lease unchanged before taking it over."""
    length = sweep.get("for")
    if isinstance(length, (int, float)) and _is_time(length):
        return min(max(float(length), 0.0), SWEEP_LEASE)
    # A lease written without a length (by hand, or an older version): what its end leaves.
    return min(max(float(sweep["until"]) - time.time(), 0.0), SWEEP_LEASE)


def _hex(value: ObjectId | None) -> str | None:
    return value.hex() if value is not None else None


def _ref_target(name: str, value: object) -> ObjectId | None:
    if value is None:
        return None
    if isinstance(value, str) and _HEX.match(value):
        return bytes.fromhex(value)
    raise StoreError(
        f"ref {name} holds a damaged value ({str(value)[:80]!r}); repair it by moving it "
        "unconditionally: repo.refs.set(name, commit_id) (expected=ANY, the default)"
    )


def _entry(raw: object) -> StoredReflogEntry:
    """A reflog entry as stored (``[old, new, time, message]``); damaged parts read as empty."""
    if not isinstance(raw, list) or len(raw) != 4:
        return StoredReflogEntry(None, None, 0.0, "")
    old, new, ts, message = raw

    def one(value: object) -> ObjectId | None:
        return bytes.fromhex(value) if isinstance(value, str) and _HEX.match(value) else None

    stamp = float(ts) if isinstance(ts, (int, float)) and _is_time(ts) else 0.0
    return StoredReflogEntry(one(old), one(new), stamp, message if isinstance(message, str) else "")


def _raw_entry(entry: StoredReflogEntry) -> list[Any]:
    return [_hex(entry.old), _hex(entry.new), entry.timestamp, entry.message]


def _chunk_bytes(entries: list[Any]) -> tuple[str, bytes]:
    data = json.dumps({"entries": entries}, separators=(",", ":"), ensure_ascii=False).encode()
    return hashlib.sha256(data).hexdigest(), data


# --- the store ------------------------------------------------------------------------------


@contextlib.contextmanager
def _not_written() -> Iterator[None]:
    """A ``StoreError`` inside comes before the write is sent: it says it did not land."""
    try:
        yield
    except StoreError as exc:
        exc.landed = False
        raise


# Writes to each repository by any store in this process: a handle may reuse a document it read
# (``doc_ttl_ms``) only while no handle in the process wrote since, so every handle sees a
# write made in its own process at once.
_PROCESS_WRITES: dict[str, int] = {}
_PROCESS_LOCK = threading.Lock()


def _process_writes(key: str) -> int:
    with _PROCESS_LOCK:
        return _PROCESS_WRITES.get(key, 0)


def _count_process_write(key: str) -> int:
    with _PROCESS_LOCK:
        count = _PROCESS_WRITES[key] = _PROCESS_WRITES.get(key, 0) + 1
        return count


class _Operation(threading.local):
    """This thread's :meth:`S3Store.operation` block: nesting depth, and whether it read yet."""

    depth = 0
    synced = False


class S3Store(Store):
    """A repository on S3-compatible object storage (see the module docstring for the layout).

    Open one through ``Repo.open("s3://...")``; :meth:`create` and :meth:`open` are the
    store-level entry points the registry uses.
    """

    commit_graph_every = 8  # an uncovered commit costs a cold reader one GET of its own
    commit_graph_data = True  # a cold log reads the graph's data, not one GET per commit

    def __init__(self, location: S3Location, *, client: _Client | None = None) -> None:
        self.location = location
        self.url = location.url
        self._client = client or _Client(location)
        self._lock = threading.RLock()
        self._doc: _Doc | None = None
        # The installed document only moves forward: when it was last known current (monotonic
        # clock, at the start of the request that showed it), this process's write count then,
        # and how many installs happened (a read that raced a newer install is not installed).
        self._doc_at = float("-inf")
        self._doc_writes = 0
        self._installs = 0
        self._ttl = (location.doc_ttl_ms or 0) / 1000
        self._operation = _Operation()
        self._repository_key = (
            f"{location.endpoint_url or 'aws'}|{location.bucket}|{location.key(DOCUMENT)}"
        )
        self._cache: _Cache | None = None
        self._cache_ready = False
        self._closed = False
        self._doc_key = location.key(DOCUMENT)

    # --- opening ------------------------------------------------------------------------

    @classmethod
    def create(cls, url: str, *, config: Mapping[str, str], head: str | None) -> S3Store:
        """Create a repository at ``url`` with one conditional write (``RepositoryExists``)."""
        store = cls(parse_s3_url(url))
        try:
            store._create_document(new_document(config, head))
        except BaseException:
            store.close()
            raise
        return store

    def _create_document(self, data: dict[str, Any]) -> None:
        """Create the document (``If-None-Match: *``), retried like every write.

        A create whose answer was lost (a reset, or a 5xx and then "exists" on obstore's
        retry) is recognised by the token it wrote; anyone else's document raises
        ``RepositoryExists``.
        """
        token = data["writer"]
        body = self._encode(data)
        waits = self._client.policy.waits()
        failed: RequestFailed | None = None
        while True:
            started = time.monotonic()
            try:
                etag = self._client.put(self._doc_key, body, mode="create")
            except self._client.AlreadyExists:
                pass
            except RequestFailed as exc:
                if not exc.transient:
                    exc.landed = False
                    raise
                failed = exc
            else:
                writes = _count_process_write(self._repository_key)
                self._install(_Doc(data, etag), self._installs, started, writes)
                return
            retry = failed is None or failed.kind == "network"  # obstore retried 5xx already
            try:
                found = self._client.get(self._doc_key)
            except StoreError as exc:
                raise StoreError(
                    f"{failed or exc}; whether the repository at {self.url} was created is "
                    "unknown: once the store answers, open it (statevcs.Repo.open), and create "
                    "it again only if there is none",
                    landed=None,
                ) from None
            if found is not None:
                try:
                    doc = _Doc(_check_document(_parse_document(found[0], self.url), self.url), "")
                except StoreError:
                    doc = None
                if doc is None or token not in (w[1] for w in _recent_writes(doc.data)):
                    raise RepositoryExists(
                        f"a statevcs repository already exists at {self.url}; open it instead "
                        f"(statevcs.Repo.open({self.url!r}) or `statevcs --repo URL log`)"
                    )
                doc.etag = found[1]
                writes = _count_process_write(self._repository_key)
                self._install(doc, self._installs, started, writes)
                return
            # Absent: a 409 (another create in flight) or a request that never arrived.
            wait = next(waits, None) if retry else None
            if wait is None:
                raise StoreError(
                    f"{failed or 'the server kept answering that the repository exists'}; the "
                    f"repository at {self.url} was not created yet when last checked: once the "
                    "store answers, open it (statevcs.Repo.open), and create it again only if "
                    "there is none",
                    landed=None,
                )
            time.sleep(wait)

    @classmethod
    def open(cls, url: str) -> S3Store:
        """Open the repository at ``url``; ``RepositoryNotFound`` if there is none."""
        store = cls(parse_s3_url(url))
        try:
            started = time.monotonic()
            writes = _process_writes(store._repository_key)
            found = store._client.get(store._doc_key)
            if found is None:
                raise RepositoryNotFound(
                    f"not a statevcs repository: {store.url} (no {DOCUMENT} under the prefix); "
                    f"create one with statevcs.Repo.init({store.url!r})"
                )
            data, etag, _ = found
            doc = _Doc(_check_document(_parse_document(data, store.url), store.url), etag)
            store._install(doc, store._installs, started, writes)
        except BaseException:
            store.close()
            raise
        return store

    @property
    def identity(self) -> str:
        """The bucket, prefix, endpoint and the repository's ``core.id``."""
        cached = self.__dict__.get("_identity")
        if cached is None:
            token = self._view().config.get("core.id", "")
            loc = self.location
            cached = self.__dict__["_identity"] = (
                f"s3:{loc.endpoint_url or 'aws'}/{loc.bucket}/{loc.prefix}:{token}"
            )
        return str(cached)

    # --- the document -------------------------------------------------------------------

    @staticmethod
    def _encode(data: dict[str, Any]) -> bytes:
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()

    def _install(self, doc: _Doc, installs: int, started: float, writes: int) -> None:
        """Make ``doc`` (current at monotonic time ``started``) the store's newest version.

        ``installs`` is the install count when its request started: a response that raced a
        newer install is kept only if its serial is higher, so the document, and with it the
        gc generation this store trusts its cache by, never goes backwards.
        """
        with self._lock:
            known = self._doc
            if (
                known is None
                or installs == self._installs
                or int(doc.data["serial"]) > int(known.data["serial"])
            ):
                self._doc = doc
                self._doc_at = started
                self._doc_writes = writes
                self._installs += 1

    def _read(self) -> _Doc:
        """The current document: one conditional GET (304 when unchanged since last read)."""
        self._check_open()
        started = time.monotonic()
        writes = _process_writes(self._repository_key)
        with self._lock:
            known = self._doc
            installs = self._installs
        try:
            found = self._client.get(self._doc_key, if_none_match=known.etag if known else None)
        except self._client.NotModified:
            assert known is not None
            with self._lock:
                if self._doc is known:
                    self._doc_at = max(self._doc_at, started)
                    self._doc_writes = writes
            return known
        if found is None:
            raise RepositoryNotFound(
                f"the repository at {self.url} is gone ({DOCUMENT} was deleted); "
                "restore it from a backup"
            )
        data, etag, _ = found
        doc = _Doc(_check_document(_parse_document(data, self.url), self.url), etag)
        self._install(doc, installs, started, writes)
        return doc

    def _view(self) -> _Doc:
        """The document for a read-only call: the one read in this thread's
        :meth:`operation` block, or one read within ``doc_ttl_ms`` with no write by this
        process since, or else a fresh read. Never used to decide a write."""
        self._check_open()
        operation = self._operation
        with self._lock:
            doc = self._doc
            if doc is not None and (
                (operation.depth and operation.synced)
                or (
                    self._ttl
                    and time.monotonic() - self._doc_at < self._ttl
                    and _process_writes(self._repository_key) == self._doc_writes
                )
            ):
                return doc
        doc = self._read()
        if operation.depth:
            operation.synced = True
        return doc

    @contextlib.contextmanager
    def operation(self) -> Iterator[None]:
        """Serve the read-only calls of this block (in this thread) from one document read.

        The first read-only call inside reads the document; the others see that version, or
        a newer one this store wrote or read for a write since (its own writes are always
        visible). Like one read at the block's first call: use a block per porcelain operation,
        not around a wait for another host's write. Blocks nest; writes are unaffected.
        """
        operation = self._operation
        if not operation.depth:
            operation.synced = False
        operation.depth += 1
        try:
            yield
        finally:
            operation.depth -= 1

    def _unswept(self, doc: _Doc | None = None) -> _Doc:
        """The current document once no gc sweep holds it (an expired lease is taken over)."""
        doc = doc or self._read()
        deadline = time.monotonic() + SWEEP_LEASE * 2
        # A lease is timed on this machine's own clock, from when this version of it was first
        # seen: the collector renews it (a new version) before each delete, so no clock skew
        # between hosts lets a writer take over a live lease.
        watched: tuple[str, float, float] | None = None  # etag, first seen, lease length
        while doc.sweep is not None:
            now = time.monotonic()
            if watched is None or watched[0] != doc.etag:
                watched = (doc.etag, now, _lease_length(doc.sweep))
            if now - watched[1] >= watched[2]:
                # The collector died mid-sweep: release its lease; the generation moves on,
                # so every cache that may name what it deleted is refused.
                data = doc.copy()
                data["sweep"] = None
                data["generation"] = doc.generation + 1
                self._try_write(doc, data)
            elif time.monotonic() > deadline:
                raise StoreError(
                    f"garbage collection has held {self.url} for too long; retry later"
                )
            else:
                time.sleep(0.02)
            doc = self._read()
        return doc

    def _try_write(
        self,
        doc: _Doc,
        data: dict[str, Any],
        landed: Callable[[_Doc], bool | None] | None = None,
    ) -> _Doc | None:
        """Write ``data`` if the document is still ``doc``: the new version, or ``None`` when
        another write got there first (nothing of this one was written).

        A request whose answer was lost (a reset, a timeout, a 5xx after the write landed,
        then "precondition failed" on obstore's retry) is settled by reading the document:
        it names its last writes, so this one is recognised by its token even after other
        writes on top of it (``landed`` may tell too, for a write older than that list). If
        the document is unchanged, the same bytes are sent again: whichever copy lands, only
        one can. When nothing tells, ``StoreError`` with ``landed=None``.
        """
        serial = int(doc.data["serial"]) + 1
        token = uuid.uuid4().hex
        data["serial"] = serial
        data["writer"] = token
        data["writes"] = [*_recent_writes(doc.data), [serial, token]][-WRITES_KEPT:]
        body = self._encode(data)
        waits = self._client.policy.waits()
        sent = False  # whether a copy of this write went out before the current one
        while True:
            with self._lock:
                installs = self._installs
            started = time.monotonic()
            failed: RequestFailed | None = None
            try:
                etag = self._client.put(self._doc_key, body, mode={"e_tag": doc.etag})
            except self._client.Precondition as exc:
                if not sent and not retried(exc):
                    return None  # the only copy sent was refused: another write won the race
            except RequestFailed as exc:
                if not exc.transient:
                    exc.landed = False  # refused (credentials, a bad request): not applied
                    raise
                failed = exc
            else:
                written = _Doc(data, etag)
                # Counted before the call returns: any handle in this process that reads
                # after this write was acknowledged sees it.
                writes = _count_process_write(self._repository_key)
                self._install(written, installs, started, writes)
                return written
            sent = True
            outcome = self._settle(doc, serial, token, landed, failed)
            if isinstance(outcome, _Doc):
                _count_process_write(self._repository_key)
                return outcome
            if outcome is False:
                return None
            # Unchanged: resent after a reset or a timeout, which obstore does not retry (a 5xx
            # was retried by obstore already; S3 may still apply a write it answered 500 to).
            wait = next(waits, None) if failed is None or failed.kind == "network" else None
            if wait is None:
                # Unchanged when last read, but a request that timed out may still arrive.
                raise StoreError(
                    f"{failed or f'S3 PUT {self._doc_key} kept failing its precondition'}; "
                    f"{DOCUMENT} was unchanged when last read, but a copy of this write may "
                    "still be on its way",
                    landed=None,
                )
            time.sleep(wait)

    def _settle(
        self,
        doc: _Doc,
        serial: int,
        token: str,
        landed: Callable[[_Doc], bool | None] | None,
        failed: RequestFailed | None,
    ) -> _Doc | bool | None:
        """Whether the write of ``serial`` (from ``doc``, with ``token``) landed, read afresh:
        the current document if it did, ``False`` if another write took its place, ``None``
        if the document is still ``doc`` (it may be sent again)."""
        try:
            current = self._read()
        except StateVCSError as exc:
            raise StoreError(
                f"{failed or exc}; reading {DOCUMENT} back failed too ({exc}), so whether the "
                f"write to {self.url} landed is unknown",
                landed=None,
            ) from None
        names = {s: t for s, t in _recent_writes(current.data)}
        if serial in names:
            return current if names[serial] == token else False
        if current.etag == doc.etag:
            return None
        # Older than the list of writes (a base read long before, the objects slow to upload):
        # the caller may still tell, from what its write would have left behind.
        verdict = landed(current) if landed is not None else None
        if verdict is not None:
            return current if verdict else False
        raise StoreError(
            f"{failed or 'a conditional write lost its answer'}; {DOCUMENT} of {self.url} moved "
            f"on too far (or was written by an older statevcs) to tell whether this write "
            f"landed: whether it landed is unknown",
            landed=None,
        )

    def _mutate(
        self,
        change: Callable[[_Doc], dict[str, Any] | None],
        *,
        cached: bool = False,
        landed: Callable[[_Doc], bool | None] | None = None,
    ) -> _Doc:
        """Apply ``change`` (document -> next data, or ``None`` for no write) until it lands.

        ``change`` may raise to refuse (RefConflict, StaleCache, RefsChanged). With ``cached``,
        the first attempt starts from the last document this store saw, which saves a read on
        the common path: a write from it lands only if it is still current (the etag), and a
        refusal or a no-op decided on it is decided again on a freshly read one. ``landed``
        tells, from a later document, whether the last data ``change`` made was written
        (``None``: it cannot tell; see :meth:`_try_write`). A ``StoreError`` says whether the
        write landed (its ``landed``).
        """
        self._check_open()
        with self._lock:
            doc = self._doc if cached else None
        fresh = False
        deadline = time.monotonic() + _WRITE_DEADLINE
        attempt = 0
        while True:
            if doc is None or doc.sweep is not None:
                with _not_written():
                    doc = self._unswept(doc)
                fresh = True
            try:
                with _not_written():
                    data = change(doc)
            except StateVCSError:
                if fresh:
                    raise
                doc = None
                continue
            if data is None:
                if fresh:
                    return doc
                doc = None
                continue
            written = self._try_write(doc, data, landed)
            if written is not None:
                return written
            attempt += 1
            if time.monotonic() > deadline:
                raise StoreError(
                    f"a write to {self.url} lost the race {attempt} times in a row; nothing was "
                    "written: retry later",
                    landed=False,
                )
            if attempt > 3:
                time.sleep(random.uniform(0, min(0.05, 0.002 * attempt)))
            doc = None

    # --- objects ------------------------------------------------------------------------

    def _object_key(self, object_id: ObjectId) -> str:
        return self.location.key(f"objects/{object_id.hex()}")

    def _local(self) -> _Cache | None:
        if not self._cache_ready:
            with self._lock:
                if not self._cache_ready:
                    self._cache = self._open_cache()
                    self._cache_ready = True
        return self._cache

    def _open_cache(self) -> _Cache | None:
        loc = self.location
        if loc.cache == "none":
            return None
        folder = Path(loc.cache) if loc.cache else default_cache_folder() / "s3"
        name = hashlib.sha256(self.identity.encode()).hexdigest()[:32]
        limit = (loc.cache_mb or DEFAULT_CACHE_MB) * 1024 * 1024
        return _Cache(folder / f"{name}.sqlite3", limit)

    def _seen_generations(self) -> tuple[int, int]:
        """``(tag, trusted)``: the gc generation to tag a sighting in the bucket made from now
        on, and the oldest tag that still proves an object exists.

        Only a sweep deletes objects, and releasing its lease bumps the generation: an entry
        seen at a generation no older than the last one this store read was not deleted by any
        sweep it knows of. While a sweep holds the lease, nothing cached is proof.
        """
        with self._lock:
            doc = self._doc
        if doc is None:
            return -1, _MAX_COUNTER
        return doc.generation, doc.generation + (1 if doc.sweep is not None else 0)

    def get_many(self, ids: Iterable[ObjectId]) -> dict[ObjectId, bytes]:
        """Return the stored bytes of every id that exists (cache first, then one round trip).

        The cache is a source of bytes, never proof of existence across a gc: an entry last
        seen in the bucket before the newest collection this store knows of is asked of the
        bucket again (``HEAD``), as another machine's gc may have deleted it.
        """
        self._check_open()
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        tag, trusted = self._seen_generations()
        cache = self._local()
        found: dict[ObjectId, bytes] = {}
        unproven: dict[ObjectId, bytes] = {}
        if cache is not None:
            for key, (data, seen) in cache.get_seen([b"o" + i for i in wanted]).items():
                (found if seen >= trusted else unproven)[key[1:]] = data
        missing = [i for i in wanted if i not in found]

        def fetch(object_id: ObjectId) -> tuple[ObjectId, bytes | None]:
            key = self._object_key(object_id)
            if object_id in unproven:
                return object_id, unproven[object_id] if self._client.head(key) else None
            got = self._client.get(key)
            return object_id, None if got is None else got[0]

        fetched = {i: d for i, d in self._client.concurrently(fetch, missing) if d is not None}
        if cache is not None and missing:
            # Only bytes that match their id: a tampered object must not outlive its repair.
            cache.put(
                {
                    b"o" + k: v
                    for k, v in fetched.items()
                    if k not in unproven and _matches(k, v, self.identity)
                },
                seen=tag,
            )
            cache.mark_seen((b"o" + i for i in unproven if i in fetched), tag)
            cache.drop(b"o" + i for i in unproven if i not in fetched)
        found.update(fetched)
        return found

    def get_many_stored(self, ids: Iterable[ObjectId]) -> dict[ObjectId, bytes]:
        """Return the bucket's bytes of every id that exists, never the local cache's (fsck)."""
        self._check_open()

        def fetch(object_id: ObjectId) -> tuple[ObjectId, bytes | None]:
            got = self._client.get(self._object_key(object_id))
            return object_id, None if got is None else got[0]

        fetched = self._client.concurrently(fetch, list(dict.fromkeys(ids)))
        return {i: data for i, data in fetched if data is not None}

    def put_many(self, objects: Mapping[ObjectId, bytes]) -> int:
        """Store the objects that are new (``If-None-Match: *``, all in flight together)."""
        self._check_open()
        items = list(objects.items())
        if not items:
            return 0

        def create(item: tuple[ObjectId, bytes]) -> bool:
            object_id, data = item[0], bytes(item[1])
            return self._client.create(
                self._object_key(object_id),
                data,
                ours=lambda: _matches(object_id, data, self.identity),
            )

        tag, _ = self._seen_generations()
        created: list[bool] = self._client.concurrently(create, items)
        cache = self._local()
        if cache is not None:
            # Only bytes this call stored (an existing key keeps the first bytes written) and
            # that match their id; every key is in the bucket now, whoever wrote it.
            cache.put(
                {
                    b"o" + k: bytes(v)
                    for (k, v), new in zip(items, created)
                    if new and _matches(k, bytes(v), self.identity)
                },
                seen=tag,
            )
            cache.mark_seen((b"o" + k for (k, _), new in zip(items, created) if not new), tag)
        return sum(created)

    def has_many(self, ids: Iterable[ObjectId]) -> set[ObjectId]:
        """Return the subset of ``ids`` in the bucket (asked of the bucket, not the cache)."""
        self._check_open()
        wanted = list(dict.fromkeys(ids))
        present: list[bool] = self._client.concurrently(
            lambda i: self._client.head(self._object_key(i)), wanted
        )
        return {i for i, there in zip(wanted, present, strict=True) if there}

    def _listed(self, offset: str | None = None) -> Iterator[tuple[ObjectId, int, float]]:
        prefix = self.location.key("objects")
        for key, size, modified in self._client.listing(prefix, offset):
            name = key[len(prefix) + 1 :]
            if _HEX.match(name):
                yield bytes.fromhex(name), size, modified

    def iter_objects(self, *, older_than: float | None = None) -> Iterator[tuple[ObjectId, int]]:
        """Yield ``(id, size)`` of every object, or those whose S3 LastModified < ``older_than``.

        Write times are the server's clock (S3 ``LastModified``, whole seconds).
        """
        self._check_open()
        for object_id, size, modified in self._listed():
            if older_than is None or modified < older_than:
                yield object_id, size

    def ids_in_range(self, low: ObjectId, high: ObjectId, limit: int = 16) -> list[ObjectId]:
        """Return up to ``limit`` ids in ``[low, high]`` (one LIST from ``low`` on)."""
        self._check_open()
        if limit <= 0 or low > high:
            return []
        key = self._object_key(low)
        # S3 lists keys *after* the offset: start just before ``low``'s own key.
        offset = key[:-1] + chr(ord(key[-1]) - 1)
        found: list[ObjectId] = []
        for object_id, _, _ in self._listed(offset):
            if object_id > high or len(found) >= limit:
                break
            if object_id >= low:
                found.append(object_id)
        return found

    def delete_many(self, ids: Iterable[ObjectId], *, if_refs: RefsState | None = None) -> int:
        """Delete objects under a sweep lease, then release it with the generation bumped.

        No ref moves while the lease is held, and the lease is taken only if no ref or reflog
        moved since ``if_refs`` (else :class:`RefsChanged`, nothing deleted).
        """
        self._check_open()
        wanted = list(dict.fromkeys(ids))
        token = uuid.uuid4().hex

        def take(doc: _Doc) -> dict[str, Any] | None:
            if if_refs is not None and self._refs_state(doc) != if_refs:
                raise RefsChanged("refs moved while garbage collection was marking")
            if not wanted:
                return None
            data = doc.copy()
            data["sweep"] = _lease(token)
            return data

        taken = self._mutate(take, cached=True)
        if not wanted:
            return 0
        deleted = 0
        try:
            for start in range(0, len(wanted), _DELETE_BATCH):
                batch = wanted[start : start + _DELETE_BATCH]
                present = self.has_many(batch)
                # Renew the lease right before each delete: a collector that stalled past it
                # must not delete under a writer that took it over.
                self._renew(token)
                self._client.delete([self._object_key(i) for i in present])
                cache = self._local()
                if cache is not None:
                    cache.drop(b"o" + i for i in present)
                deleted += len(present)
            self._renew(token)
            self._delete_unused_chunks(taken)
        finally:
            self._release(token)
        return deleted

    def _renew(self, token: str) -> None:
        """Give this collector's sweep lease a full term again (``RefsChanged`` if it is lost)."""
        while True:
            doc = self._read()
            if (doc.sweep or {}).get("token") != token:
                raise RefsChanged("the gc sweep lease expired while deleting; gc marks again")
            data = doc.copy()
            data["sweep"] = _lease(token)
            if self._try_write(doc, data) is not None:
                return

    def _delete_unused_chunks(self, doc: _Doc) -> None:
        """Delete reflog chunks no reflog names (lost races, expired or deleted reflogs).

        Safe under the lease: a writer that uploaded a chunk before the sweep fails its
        conditional write (the lease changed the document) and uploads it again.
        """
        used = {c for log in doc.logs.values() for c in log["chunks"]}
        prefix = self.location.key("logs")
        unused = [
            key for key, _, _ in self._client.listing(prefix) if key[len(prefix) + 1 :] not in used
        ]
        self._client.delete(unused)

    def _release(self, token: str) -> None:
        def release(doc: _Doc) -> dict[str, Any] | None:
            if (doc.sweep or {}).get("token") != token:
                return None  # taken over (and released) by a writer after it expired
            data = doc.copy()
            data["sweep"] = None
            data["generation"] = doc.generation + 1
            return data

        # Not through _mutate: that would wait for this very lease.
        while True:
            doc = self._read()
            data = release(doc)
            if data is None or self._try_write(doc, data) is not None:
                return

    def fence(self) -> None:
        """Move the document to a new version: a write sent before, on an older version, and
        still on its way (a request that timed out) can no longer land."""
        self._mutate(lambda doc: doc.copy())

    def generation(self) -> int:
        """Return the gc generation (bumped when each sweep lease is released)."""
        return self._view().generation

    @staticmethod
    def _refs_state(doc: _Doc) -> RefsState:
        return (int(doc.data["refs_serial"]),)

    def refs_state(self) -> RefsState:
        """Return a counter bumped by every change of a ref, symbolic ref or reflog."""
        return self._refs_state(self._view())

    # --- refs ---------------------------------------------------------------------------

    def get_ref(self, name: str) -> ObjectId | None:
        """Return the id ``name`` points to, or ``None``."""
        return _ref_target(name, self._view().refs.get(name))

    def list_refs(self, prefix: str = "refs/") -> dict[str, ObjectId]:
        """Return every direct ref under ``prefix``."""
        refs = self._view().refs
        found: dict[str, ObjectId] = {}
        for name in sorted(refs):
            if name.startswith(prefix):
                target = _ref_target(name, refs[name])
                if target is not None:
                    found[name] = target
        return found

    def get_symbolic(self, name: str) -> str | None:
        """Return the target of symbolic ref ``name``, or ``None``."""
        return self._view().symbolic.get(name)

    def set_symbolic(self, name: str, target: str, message: str = "") -> None:
        """Make ``name`` a symbolic ref to ``target`` (a ``message`` logs the move)."""

        def change(doc: _Doc) -> dict[str, Any]:
            data = doc.copy()
            current = doc.symbolic.get(name)
            old = doc.refs.get(current) if current is not None else doc.refs.get(name)
            data["symbolic"][name] = target
            data["refs"].pop(name, None)
            data["refs_serial"] += 1
            if message:
                note = reflog_note(message)
                entry = [_valid_hex(old), _valid_hex(doc.refs.get(target)), self.now(), note]
                self._append_logs(data, [(name, entry)])
            return data

        self._mutate(change)

    def _append_logs(self, data: dict[str, Any], entries: list[tuple[str, list[Any]]]) -> None:
        """Append reflog entries to ``data``; full inline lists move to chunks (uploaded now)."""
        uploads: dict[str, bytes] = {}
        logs = data["logs"]
        for name, entry in entries:
            log = logs.setdefault(name, {"recent": [], "chunks": []})
            if len(log["recent"]) >= LOG_CHUNK:
                chunk_id, body = _chunk_bytes(log["recent"])
                uploads[chunk_id] = body
                log["chunks"].append(chunk_id)
                log["recent"] = []
            log["recent"].append(entry)
        self._upload_chunks(uploads)

    def _upload_chunks(self, chunks: Mapping[str, bytes]) -> None:
        items = list(chunks.items())
        self._client.concurrently(
            lambda item: self._client.create(
                self.location.key(f"logs/{item[0]}"),
                item[1],
                ours=lambda: hashlib.sha256(item[1]).hexdigest() == item[0],
            ),
            items,
        )
        cache = self._local()
        if cache is not None and items:
            cache.put({b"l" + bytes.fromhex(k): v for k, v in items})

    def update_refs(
        self,
        updates: Sequence[RefUpdate],
        objects: Mapping[ObjectId, bytes] | None = None,
        *,
        generation: int | None = None,
    ) -> None:
        """Check, upload ``objects``, then move every ref in one conditional document write.

        The objects are uploaded after a document version is read and before the write that
        must match it: if a gc sweep began in between, the write fails and is redone (objects
        uploaded again, or ``StaleCache`` when ``generation`` no longer matches).
        """
        check_batch(updates)
        payload = dict(objects or {})
        uploaded_at: list[int] = []  # the generation the objects were last uploaded under
        logged: list[tuple[str, list[Any]]] = []  # the reflog entries of the last attempt

        # Only a write that references objects depends on the gc generation: deleting refs
        # does not, and must not fail because a collection ran while it was prepared.
        deletes_only = not payload and all(u.new is None for u in updates)

        def change(doc: _Doc) -> dict[str, Any] | None:
            if generation is not None and doc.generation != generation and not deletes_only:
                raise StaleCache(generation, doc.generation)
            current: dict[str, ObjectId | None] = {}
            for update in updates:
                try:
                    value = _ref_target(update.name, doc.refs.get(update.name))
                except StoreError:
                    if update.expected is not ANY:
                        raise
                    value = None  # an unconditional move repairs a damaged ref
                current[update.name] = value
                if update.expected is not ANY and value != update.expected:
                    expected = update.expected if isinstance(update.expected, bytes) else None
                    raise RefConflict(update.name, _hex(expected), _hex(value))
            if payload and (not uploaded_at or uploaded_at[-1] != doc.generation):
                self.put_many(payload)
                uploaded_at.append(doc.generation)
            if not updates:
                return None
            data = doc.copy()
            head_target = doc.symbolic.get("HEAD")
            now = self.now()
            entries: list[tuple[str, list[Any]]] = []
            for update in updates:
                if update.new is None:
                    data["refs"].pop(update.name, None)
                else:
                    data["refs"][update.name] = update.new.hex()
                data["symbolic"].pop(update.name, None)
                note = reflog_note(update.message)
                entry = [_hex(current[update.name]), _hex(update.new), now, note]
                for log_name in logged_names(update, head_target):
                    entries.append((log_name, entry))
            data["refs_serial"] += 1
            self._append_logs(data, entries)
            logged[:] = entries
            return data

        def landed(doc: _Doc) -> bool | None:
            # The reflog entry of this very move (its time, to the microsecond) is in the ref's
            # reflog: the write landed, however many writes followed it. Not there, while an
            # entry older than it is, it never landed: no expiry can have removed it alone.
            if not logged:
                return None
            name, entry = logged[0]
            entries = self._log_entries(doc, name)
            if entry in entries:
                return True
            if any(_entry(e).timestamp < entry[2] for e in entries):
                return False
            return None

        # With objects to upload, decide on a fresh document first (one conditional GET), so a
        # refused write uploads nothing; a bare ref move can start from the cached one.
        self._mutate(change, cached=not payload, landed=landed)

    # --- reflogs --------------------------------------------------------------------------

    def _chunks(self, ids: Sequence[str]) -> dict[str, list[Any]]:
        """Read reflog chunks (cache first, the rest in one round trip)."""
        cache = self._local()
        found: dict[str, list[Any]] = {}
        if cache is not None:
            for key, body in cache.get([b"l" + bytes.fromhex(c) for c in ids]).items():
                found[key[1:].hex()] = json.loads(body)["entries"]
        missing = [c for c in ids if c not in found]

        def fetch(chunk_id: str) -> tuple[str, bytes | None]:
            got = self._client.get(self.location.key(f"logs/{chunk_id}"))
            return chunk_id, None if got is None else got[0]

        fetched = dict(self._client.concurrently(fetch, missing))
        for chunk_id, body in fetched.items():
            if body is None or hashlib.sha256(body).hexdigest() != chunk_id:
                raise StoreError(
                    f"reflog chunk {chunk_id} of {self.url} is missing or damaged; delete the "
                    "reflog (repo.refs.delete_reflog) or restore the chunk from a backup"
                )
            try:
                entries = json.loads(body)["entries"]
            except (ValueError, KeyError, TypeError, RecursionError):
                raise StoreError(f"reflog chunk {chunk_id} of {self.url} is damaged") from None
            found[chunk_id] = entries if isinstance(entries, list) else []
        if cache is not None and fetched:
            cache.put({b"l" + bytes.fromhex(k): v for k, v in fetched.items() if v is not None})
        return found

    def _log_entries(self, doc: _Doc, name: str) -> list[list[Any]]:
        """Every raw entry of ``name``'s reflog, oldest first."""
        log = doc.logs.get(name)
        if log is None:
            return []
        chunks = self._chunks(log["chunks"])
        raw: list[Any] = []
        for chunk_id in log["chunks"]:
            raw.extend(chunks[chunk_id])
        raw.extend(log["recent"])
        return raw

    def reflog_names(self) -> list[str]:
        """Return every name that has reflog entries."""
        logs = self._view().logs
        return sorted(n for n, log in logs.items() if log.get("recent") or log.get("chunks"))

    def reflog(self, name: str) -> list[StoredReflogEntry]:
        """Return the reflog of ``name``, newest first."""
        return [_entry(e) for e in reversed(self._log_entries(self._view(), name))]

    def delete_reflog(self, name: str) -> None:
        """Forget the reflog of ``name`` (its chunks go at the next gc sweep)."""

        def change(doc: _Doc) -> dict[str, Any] | None:
            if name not in doc.logs:
                return None
            data = doc.copy()
            del data["logs"][name]
            data["refs_serial"] += 1
            return data

        self._mutate(change, cached=True)

    def expire_reflogs(self, older_than: float) -> int:
        """Delete reflog entries written before ``older_than``; return how many."""
        removed: list[int] = []

        def change(doc: _Doc) -> dict[str, Any] | None:
            removed.clear()
            data = doc.copy()
            uploads: dict[str, bytes] = {}
            count = 0
            for log in data["logs"].values():
                chunks = self._chunks(log["chunks"])
                kept_chunks: list[str] = []
                for chunk_id in log["chunks"]:
                    entries = chunks[chunk_id]
                    kept = [e for e in entries if _entry(e).timestamp >= older_than]
                    count += len(entries) - len(kept)
                    if len(kept) == len(entries):
                        kept_chunks.append(chunk_id)
                    elif kept:
                        new_id, body = _chunk_bytes(kept)
                        uploads[new_id] = body
                        kept_chunks.append(new_id)
                recent = [e for e in log["recent"] if _entry(e).timestamp >= older_than]
                count += len(log["recent"]) - len(recent)
                log["chunks"], log["recent"] = kept_chunks, recent
            if not count:
                return None
            self._upload_chunks(uploads)
            data["refs_serial"] += 1
            removed.append(count)
            return data

        self._mutate(change)
        return sum(removed)

    # --- config ---------------------------------------------------------------------------

    def config_get(self, key: str) -> str | None:
        """Return a config value, or ``None``."""
        return self._view().config.get(key)

    def config_set(self, key: str, value: str | None) -> None:
        """Set or delete a config value (one conditional write of the document)."""

        def change(doc: _Doc) -> dict[str, Any] | None:
            if doc.config.get(key) == value:
                return None
            data = doc.copy()
            if value is None:
                data["config"].pop(key, None)
            else:
                data["config"][key] = value
            return data

        self._mutate(change, cached=True)

    # --- lifecycle ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the store for {self.url} is closed; open the repository again")
        # Before any lock: one held by a parent's thread at the fork is never released here.
        forksafety.enter_s3(self.url)

    def close(self) -> None:
        """Stop the request threads and close the local cache."""
        if self._closed:
            return
        self._closed = True
        if forksafety.s3_runtime_inherited():
            return  # the parent's request threads, locks and cache connection: not ours
        self._client.close()
        if self._cache is not None:
            self._cache.close()


def _valid_hex(value: object) -> str | None:
    return value if isinstance(value, str) and _HEX.match(value) else None


_ = ID_SIZE  # ids are 32 bytes: 64 hex digits in keys

__all__ = ["DOCUMENT", "S3Location", "S3Store", "default_cache_folder", "parse_s3_url"]
