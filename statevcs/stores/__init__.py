"""Storage backends: the abstract :class:`Store`, its memory, SQLite and S3 implementations,
and the registry that maps repository URL schemes to them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import ANY, RefUpdate, Store, StoredReflogEntry
from .memory import MemoryStore
from .registry import backend_for, register, schemes
from .sqlite import SQLiteStore

if TYPE_CHECKING:
    from .s3 import S3Store


def __getattr__(name: str) -> Any:
    """Load the S3 store's module on first use: a local repository never needs it."""
    if name == "S3Store":
        from .s3 import S3Store

        return S3Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ANY",
    "MemoryStore",
    "RefUpdate",
    "S3Store",
    "SQLiteStore",
    "Store",
    "StoredReflogEntry",
    "backend_for",
    "register",
    "schemes",
]
