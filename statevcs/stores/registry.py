"""Which store opens a repository URL: a registry from URL schemes to store backends.

``Repo.init`` and ``Repo.open`` (and the command line) look a URL's scheme up here; a location
without a scheme is a folder path, opened by the SQLite store. Register a third-party backend
with :func:`register`::

    register("mystore", create=MyStore.create, open=MyStore.open)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from ..errors import RepositoryError, RepositoryNotFound
from .base import Store
from .locations import MASK, holds_credentials, mask_credentials, shown_location
from .memory import MemoryStore

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# A location that starts like a URL but lacks its "//" (``s3:/bucket``, ``s3:bucket``). Two
# letters at least: ``C:/`` is a drive.
_SCHEME_LIKE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):(?!//)")


# Where a URL's userinfo starts: after the first "scheme:" and its slashes.
class Create(Protocol):
    """Create a new repository at ``url`` holding ``config``, with ``HEAD`` -> ``head``.

    Raises :class:`~statevcs.errors.RepositoryExists` if one is there (decided atomically, so
    two racing creations cannot both succeed).
    """

    def __call__(self, url: str, *, config: Mapping[str, str], head: str) -> Store: ...


class Open(Protocol):
    """Open the existing repository at ``url`` (:class:`RepositoryNotFound` if none)."""

    def __call__(self, url: str) -> Store: ...


@dataclass(frozen=True, slots=True)
class Backend:
    """How one URL scheme creates and opens repositories."""

    scheme: str
    create: Create
    open: Open


_BACKENDS: dict[str, Backend] = {}
_LOCK = threading.Lock()


def register(scheme: str, *, create: Create, open: Open, replace: bool = False) -> None:
    """Make ``scheme://`` URLs open with ``create`` and ``open``.

    Registering a scheme twice raises ``RepositoryError`` unless ``replace=True``.
    """
    if not isinstance(scheme, str) or not re.fullmatch(r"[a-z][a-z0-9+.-]*", scheme):
        raise TypeError(f"scheme must be a lowercase URL scheme like 's3', got {scheme!r}")
    with _LOCK:
        if scheme in _BACKENDS and not replace:
            raise RepositoryError(
                f"the URL scheme {scheme!r} is already registered; pass replace=True to replace it"
            )
        _BACKENDS[scheme] = Backend(scheme, create, open)


def schemes() -> list[str]:
    """Return the registered URL schemes, sorted."""
    with _LOCK:
        return sorted(_BACKENDS)


def scheme_of(location: str) -> str | None:
    """Return the lowercased URL scheme of ``location``, or ``None`` for a plain path."""
    match = _SCHEME.match(location)
    return match.group(1).lower() if match else None


def backend_for(location: str) -> Backend | None:
    """Return the backend of ``location``'s scheme; ``None`` for a folder path.

    Raises ``RepositoryError`` for a scheme nobody registered.
    """
    scheme = scheme_of(location)
    if scheme is None:
        check_path(location)
        return None
    with _LOCK:
        backend = _BACKENDS.get(scheme)
    if backend is None:
        raise RepositoryError(
            f"unsupported repository URL scheme {scheme!r} in {shown_location(location)!r}; "
            f"use a folder path (SQLite) or a URL with one of: "
            f"{', '.join(f'{s}://' for s in schemes())}"
        )
    return backend


# What may precede a pasted URL unseen: whitespace, control and invisible format characters.
_LEADING_JUNK = re.compile(
    r"^[\s\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]+"
)


def check_path(location: str) -> None:
    """Refuse a folder path that is a mistyped URL: ``s3:/bucket/p`` (one slash), ``s3:bucket``,
    `` s3://bucket/p`` (a space or an invisible character before the scheme).

    Such a path would silently become a local folder named after the URL (and its
    credentials). A path starting ``./`` or ``/`` is always a folder.
    """
    junk = _LEADING_JUNK.match(location)
    if junk is not None:
        rest = location[junk.end() :]
        if _SCHEME.match(rest) or _SCHEME_LIKE.match(rest):
            raise RepositoryError(
                f"{shown_location(location)!r} has whitespace or an invisible character before "
                "what looks like a repository URL: remove it; for a local folder of that name, "
                "start the path with ./ or give it absolute"
            )
    match = _SCHEME_LIKE.match(location)
    if match is None:
        return
    scheme = match.group(1).lower()
    rest = location[match.end() :]
    with _LOCK:
        registered = scheme in _BACKENDS
    if not rest.startswith("/") and not registered:
        return  # "notes:v2" is a folder name; "s3:bucket" is not
    url = "s3://bucket/prefix" if scheme == "s3" else f"{scheme}://... (S3: s3://bucket/prefix)"
    raise RepositoryError(
        f"{shown_location(location)!r} looks like a repository URL missing its '//': write "
        f"{url}; for a local folder of that name, start the path with ./ or give it absolute"
    )


# --- the built-in backends --------------------------------------------------------------------

MEMORY_URL = "memory://"


def _create_memory(url: str, *, config: Mapping[str, str], head: str) -> Store:
    if url != MEMORY_URL:
        raise RepositoryError(
            f"a memory repository's URL is exactly {MEMORY_URL!r}, got {shown_location(url)!r}"
        )
    store = MemoryStore()
    for key, value in config.items():
        store.config_set(key, value)
    store.set_symbolic("HEAD", head)
    return store


def _open_memory(url: str) -> Store:
    raise RepositoryNotFound(
        "a memory:// repository lives only in the handle that created it and cannot be "
        "reopened; keep that Repo object, or create one with Repo.init('memory://')"
    )


def _create_s3(url: str, *, config: Mapping[str, str], head: str) -> Store:
    from .s3 import S3Store  # imported on use: obstore is an optional dependency

    return S3Store.create(url, config=config, head=head)


def _open_s3(url: str) -> Store:
    from .s3 import S3Store

    return S3Store.open(url)


register("memory", create=_create_memory, open=_open_memory)
register("s3", create=_create_s3, open=_open_s3)

__all__ = [
    "MASK",
    "MEMORY_URL",
    "Backend",
    "Create",
    "Open",
    "backend_for",
    "check_path",
    "holds_credentials",
    "mask_credentials",
    "register",
    "scheme_of",
    "schemes",
    "shown_location",
]
