"""Storage backends: the abstract :class:`Store`, its memory, SQLite and S3 implementations,
and the registry that maps repository URL schemes to them."""

from .base import ANY, RefUpdate, Store, StoredReflogEntry
from .memory import MemoryStore
from .registry import backend_for, register, schemes
from .s3 import S3Store
from .sqlite import SQLiteStore

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
