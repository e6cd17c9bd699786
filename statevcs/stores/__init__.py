"""Storage backends: the abstract :class:`Store` and its memory and SQLite implementations."""

from .base import ANY, RefUpdate, Store, StoredReflogEntry
from .memory import MemoryStore
from .sqlite import SQLiteStore

__all__ = ["ANY", "MemoryStore", "RefUpdate", "StoredReflogEntry", "SQLiteStore", "Store"]
