"""Storage backends: the abstract :class:`Store` and its memory and SQLite implementations."""

from .base import ANY, ReflogEntry, RefUpdate, Store
from .memory import MemoryStore
from .sqlite import SQLiteStore

__all__ = ["ANY", "MemoryStore", "RefUpdate", "ReflogEntry", "SQLiteStore", "Store"]
