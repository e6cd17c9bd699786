"""An in-process store: fast, thread-safe, gone when the process exits (``memory://``)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence

from ..errors import RefConflict, RefsChanged, StaleCache
from ..hashing import ObjectId
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


def _hex(value: ObjectId | None) -> str | None:
    return value.hex() if value is not None else None


class MemoryStore(Store):
    """A store held in dictionaries; used for tests and throwaway repositories."""

    def __init__(self) -> None:
        self.url = "memory://"
        self._objects: dict[ObjectId, tuple[bytes, float]] = {}
        self._refs: dict[str, ObjectId] = {}
        self._symbolic: dict[str, str] = {}
        self._reflogs: dict[str, list[StoredReflogEntry]] = {}
        self._config: dict[str, str] = {}
        self._generation = 0
        self._ref_changes = 0  # bumped by every change of a ref, symbolic ref or reflog
        self._lock = threading.RLock()
        forksafety.track(self)

    def _before_fork(self) -> None:
        """Wait for a write in progress: the forked child would find the lock held for ever."""
        self._lock.acquire()

    def _after_fork(self, *, in_child: bool) -> None:
        self._lock.release()

    def get_many(self, ids: Iterable[ObjectId]) -> dict[ObjectId, bytes]:
        """Return the stored bytes of every id that exists."""
        objects = self._objects
        found: dict[ObjectId, bytes] = {}
        for object_id in ids:
            entry = objects.get(object_id)
            if entry is not None:
                found[object_id] = entry[0]
        return found

    def put_many(self, objects: Mapping[ObjectId, bytes]) -> int:
        """Store the objects that are new; return how many were new."""
        now = self.now()
        new = 0
        with self._lock:
            for object_id, data in objects.items():
                if object_id not in self._objects:
                    self._objects[object_id] = (bytes(data), now)
                    new += 1
        return new

    def has_many(self, ids: Iterable[ObjectId]) -> set[ObjectId]:
        """Return the subset of ``ids`` that exist."""
        return {i for i in ids if i in self._objects}

    def iter_objects(self, *, older_than: float | None = None) -> Iterator[tuple[ObjectId, int]]:
        """Yield ``(id, size)`` of every stored object."""
        with self._lock:
            items = list(self._objects.items())
        for object_id, (data, created) in items:
            if older_than is None or created < older_than:
                yield object_id, len(data)

    def ids_in_range(self, low: ObjectId, high: ObjectId, limit: int = 16) -> list[ObjectId]:
        """Return up to ``limit`` ids in ``[low, high]``."""
        with self._lock:
            found = sorted(i for i in self._objects if low <= i <= high)
        return found[:limit]

    def delete_many(self, ids: Iterable[ObjectId], *, if_refs: RefsState | None = None) -> int:
        """Delete objects and bump the gc generation; return how many existed."""
        deleted = 0
        with self._lock:
            if if_refs is not None and self.refs_state() != if_refs:
                raise RefsChanged("refs moved while garbage collection was marking")
            self._generation += 1
            for object_id in ids:
                if self._objects.pop(object_id, None) is not None:
                    deleted += 1
        return deleted

    def generation(self) -> int:
        """Return the gc generation."""
        return self._generation

    def refs_state(self) -> RefsState:
        """Return a fingerprint of every ref and reflog."""
        return (self._ref_changes,)

    def get_ref(self, name: str) -> ObjectId | None:
        """Return the id ``name`` points to, or ``None``."""
        return self._refs.get(name)

    def list_refs(self, prefix: str = "refs/") -> dict[str, ObjectId]:
        """Return every direct ref under ``prefix``."""
        with self._lock:
            return {k: v for k, v in sorted(self._refs.items()) if k.startswith(prefix)}

    def get_symbolic(self, name: str) -> str | None:
        """Return the target of symbolic ref ``name``, or ``None``."""
        return self._symbolic.get(name)

    def set_symbolic(self, name: str, target: str, message: str = "") -> None:
        """Make ``name`` a symbolic ref to ``target`` (a ``message`` logs the move)."""
        with self._lock:
            current = self._symbolic.get(name)
            old = self._refs.get(current) if current is not None else self._refs.get(name)
            self._symbolic[name] = target
            self._refs.pop(name, None)
            self._ref_changes += 1
            if message:
                entry = StoredReflogEntry(
                    old, self._refs.get(target), self.now(), reflog_note(message)
                )
                self._reflogs.setdefault(name, []).append(entry)

    def update_refs(
        self,
        updates: Sequence[RefUpdate],
        objects: Mapping[ObjectId, bytes] | None = None,
        *,
        generation: int | None = None,
    ) -> None:
        """Store objects, then apply all compare-and-swaps atomically."""
        check_batch(updates)
        with self._lock:
            if generation is not None and generation != self._generation:
                raise StaleCache(generation, self._generation)
            if objects:
                self.put_many(objects)
            for update in updates:
                current = self._refs.get(update.name)
                if update.expected is not ANY and current != update.expected:
                    expected = update.expected if isinstance(update.expected, bytes) else None
                    raise RefConflict(update.name, _hex(expected), _hex(current))
            now = self.now()
            self._ref_changes += 1
            for update in updates:
                old = self._refs.get(update.name)
                if update.new is None:
                    self._refs.pop(update.name, None)
                else:
                    self._refs[update.name] = update.new
                self._symbolic.pop(update.name, None)
                entry = StoredReflogEntry(old, update.new, now, reflog_note(update.message))
                for log_name in logged_names(update, self._symbolic.get("HEAD")):
                    self._reflogs.setdefault(log_name, []).append(entry)

    def reflog_names(self) -> list[str]:
        """Return every name that has reflog entries."""
        with self._lock:
            return sorted(name for name, entries in self._reflogs.items() if entries)

    def reflog(self, name: str) -> list[StoredReflogEntry]:
        """Return the reflog of ``name``, newest first."""
        with self._lock:
            return list(reversed(self._reflogs.get(name, [])))

    def delete_reflog(self, name: str) -> None:
        """Forget the reflog of ``name``."""
        with self._lock:
            self._reflogs.pop(name, None)
            self._ref_changes += 1

    def expire_reflogs(self, older_than: float) -> int:
        """Delete reflog entries older than ``older_than``."""
        removed = 0
        with self._lock:
            for name, entries in list(self._reflogs.items()):
                kept = [e for e in entries if e.timestamp >= older_than]
                removed += len(entries) - len(kept)
                self._reflogs[name] = kept
            if removed:
                self._ref_changes += 1
        return removed

    def config_get(self, key: str) -> str | None:
        """Return a config value, or ``None``."""
        return self._config.get(key)

    def config_set(self, key: str, value: str | None) -> None:
        """Set or delete a config value."""
        with self._lock:
            if value is None:
                self._config.pop(key, None)
            else:
                self._config[key] = value


__all__ = ["MemoryStore"]
