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
from .memory import MemoryStore

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_USERINFO = re.compile(r"(//|%2f%2f)[^/?#&\s]*(@|%40)", re.IGNORECASE)


def mask_credentials(text: str) -> str:
    """``text`` with the user and password of every URL in it replaced by ``***``."""
    return _USERINFO.sub(r"\1***\2", text)


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
        return None
    with _LOCK:
        backend = _BACKENDS.get(scheme)
    if backend is None:
        masked = mask_credentials(location)
        shown = masked if len(masked) <= 200 else masked[:200] + "..."
        raise RepositoryError(
            f"unsupported repository URL scheme {scheme!r} in {shown!r}; use a folder path "
            f"(SQLite) or a URL with one of: {', '.join(f'{s}://' for s in schemes())}"
        )
    return backend


# --- the built-in backends --------------------------------------------------------------------

MEMORY_URL = "memory://"


def _create_memory(url: str, *, config: Mapping[str, str], head: str) -> Store:
    if url != MEMORY_URL:
        raise RepositoryError(
            f"a memory repository's URL is exactly {MEMORY_URL!r}, "
            f"got {mask_credentials(url)[:200]!r}"
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
    "MEMORY_URL",
    "Backend",
    "Create",
    "Open",
    "backend_for",
    "register",
    "scheme_of",
    "schemes",
]
