"""Plumbing containers a :class:`~statevcs.repo.Repo` exposes: ``repo.objects``, ``repo.refs``.

Like dulwich's ``repo.object_store`` and ``repo.refs``: raw access for tools (the git mirror,
importers, third-party maintenance), with the same guarantees the porcelain relies on. Objects
are written only through :meth:`ObjectDatabase.store`, and refs moved only through
:meth:`Refs.update`, which together stay correct when another process collects garbage.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .commitfields import canonical_metadata, check_text, timestamp_us
from .commitgraph import write_graph
from .errors import (
    CorruptObject,
    InvalidRefName,
    MissingObject,
    RepositoryError,
    SerializationError,
    StaleCache,
    StateVCSError,
)
from .hashing import ObjectId, to_hex
from .objectdb import ObjectDB, decode_stored
from .objects import CommitObject, SnapshotObject, children, encode_with_id
from .refs import check_ref_name
from .serializers import StateSerializer, serializer_for
from .snapshot import (
    MessageBase,
    ReadSnapshot,
    StoredMessages,
    WrittenSnapshot,
    extras_entries,
    load_snapshot_object,
    read_conversation,
    read_snapshot,
    read_values,
    state_entries,
    write_snapshot,
)
from .stores.base import ANY, Expected, RefUpdate, Store, StoredReflogEntry
from .structures.chunking import Chunker

_COMMIT_TAG = b"\xa6commit"  # how an encoded commit's kind reads, near its start
if TYPE_CHECKING:
    from .model import Snapshot


_STALE_RETRIES = 8
"""How often a ref update that writes no objects is retried when gc moved the generation."""


@dataclass(frozen=True, slots=True)
class SnapshotValues:
    """A snapshot's parts decoded into fresh Python objects, without the pydantic model."""

    kind: str
    messages: list[Any]
    state: dict[str, Any]
    extras: dict[str, Any]
    state_codec: str


class ObjectDatabase(ObjectDB):
    """A repository's objects: verified, cached reads; writes safe against another's gc.

    Adds the snapshot codec to :class:`~statevcs.objectdb.ObjectDB`: snapshots and commits to
    and from objects, on binary ids.
    """

    def __init__(
        self, store: Store, serializer: StateSerializer, *, chunker: Chunker | None = None
    ) -> None:
        super().__init__(store, chunker=chunker)
        self.serializer = serializer
        """The serializer state values are written with (the repository's)."""

    # --- typed reads -------------------------------------------------------------------

    def load_commit(self, commit_id: ObjectId) -> CommitObject:
        """Return the commit ``commit_id`` (``CorruptObject`` if it is something else)."""
        obj = self.load(_check_id(commit_id, "commit_id"))
        if not isinstance(obj, CommitObject):
            raise CorruptObject(to_hex(commit_id), f"expected a commit, found {type(obj).__name__}")
        return obj

    def load_snapshot(self, snapshot_id: ObjectId) -> SnapshotObject:
        """Return the snapshot object ``snapshot_id`` (``CorruptObject`` otherwise)."""
        return load_snapshot_object(self, _check_id(snapshot_id, "snapshot_id"))

    def read_snapshot(self, snapshot_id: ObjectId) -> ReadSnapshot:
        """Decode a snapshot into fresh Python objects (state through its own codec)."""
        return read_snapshot(self, _check_id(snapshot_id, "snapshot_id"), self.serializer)

    def read_snapshot_values(self, snapshot_id: ObjectId) -> SnapshotValues:
        """Decode a snapshot's kind, messages, state (through its own codec) and extras, as
        :meth:`read_snapshot` does, without building a ``statevcs.Snapshot`` (so without
        loading pydantic: the command line's ``show`` reads this way)."""
        obj = self.load_snapshot(snapshot_id)
        messages, _, tail = read_conversation(self, obj)
        messages.extend(tail)
        codec = serializer_for(obj.state_codec, self.serializer)
        state = read_values(self, state_entries(self, obj), codec)
        extras = read_values(self, extras_entries(self, obj), None)
        return SnapshotValues(obj.kind, messages, state, extras, obj.state_codec)

    def read_state_bytes(self, snapshot_id: ObjectId) -> dict[str, bytes]:
        """Return a snapshot's state values as their stored, still-serialized bytes."""
        snap = self.load_snapshot(snapshot_id)
        return read_values(self, state_entries(self, snap), _RAW)

    # --- writes --------------------------------------------------------------------------

    def encode_snapshot(
        self,
        snapshot: Snapshot,
        *,
        state_codec: str | None = None,
        base: MessageBase | None = None,
        previous: StoredMessages | None = None,
        exclude_state: frozenset[str] = frozenset(),
        raw_state: bool = False,
    ) -> WrittenSnapshot:
        """Encode ``snapshot``; return its id and the objects not stored yet (nothing written).

        ``state_codec`` names the serializer for state values (default: the repository's);
        with ``raw_state=True`` state values are already-serialized ``bytes`` in that codec and
        are stored verbatim (the git mirror's import path).
        """
        serializer: StateSerializer = self.serializer
        if raw_state:
            # Stored verbatim, so no serializer for the codec is needed (nor a pickle key).
            serializer = _RawBytes(serializer.name if state_codec is None else state_codec)
        elif state_codec is not None and state_codec != serializer.name:
            serializer = serializer_for(state_codec, serializer)
        written = write_snapshot(
            self,
            snapshot,
            serializer,
            base=base,
            previous=previous,
            exclude_state=exclude_state,
        )
        return WrittenSnapshot(written.snapshot_id, written.messages, self.unknown(written.objects))

    def encode_commit(self, commit: CommitObject) -> tuple[ObjectId, bytes]:
        """Encode a commit object (already validated) and return ``(id, bytes)``."""
        commit_id, encoded = encode_with_id(commit)
        self.remember(commit_id, commit)
        return commit_id, encoded

    def write_snapshot(self, snapshot: Snapshot, *, state_codec: str | None = None) -> ObjectId:
        """Store a snapshot's objects (no commit, no ref) and return its id."""
        from .model import Snapshot

        if not isinstance(snapshot, Snapshot):
            raise TypeError(f"snapshot must be a statevcs.Snapshot, got {type(snapshot).__name__}")
        written = self.encode_snapshot(snapshot, state_codec=state_codec)
        self.put(written.objects)
        return written.snapshot_id

    def write_commit(
        self,
        snapshot_id: ObjectId,
        parents: Sequence[ObjectId],
        *,
        message: str,
        author: str,
        timestamp: datetime,
        metadata: Mapping[str, Any] | None = None,
    ) -> ObjectId:
        """Store a commit of an existing snapshot and existing parents (no ref moves).

        Every field is checked first (see :mod:`statevcs.commitfields`); nothing is written
        for bad input.
        """
        commit = _commit_object(snapshot_id, parents, message, author, timestamp, metadata)
        self.load_snapshot(snapshot_id)
        for parent in commit.parents:
            self.load_commit(parent)
        commit_id, encoded = self.encode_commit(commit)
        self.put({commit_id: encoded})
        return commit_id

    def build_commit(
        self,
        snapshot_id: ObjectId,
        parents: Sequence[ObjectId],
        *,
        message: str,
        author: str,
        timestamp: datetime,
        metadata: Mapping[str, Any] | None = None,
    ) -> tuple[ObjectId, bytes]:
        """Check a commit's fields and return its ``(id, bytes)`` without writing anything.

        For writers that batch many commits into one :meth:`put` (an importer): unlike
        :meth:`write_commit` it does not read the snapshot and parents, so the caller must
        store them in the same or an earlier :meth:`put`.
        """
        commit = _commit_object(snapshot_id, parents, message, author, timestamp, metadata)
        return self.encode_commit(commit)

    def has_many(self, ids: Iterable[ObjectId]) -> set[ObjectId]:
        """Return the subset of ``ids`` the store holds (nothing is read or checked)."""
        return self.store.has_many(ids)

    def put(self, objects: Mapping[ObjectId, bytes]) -> None:
        """Write objects without moving a ref (they stay unreachable until a ref names them).

        Their ids are only trusted as stored until the next collection: a ref move made with
        :meth:`Refs.update` afterwards re-checks that nothing they need was collected.
        """
        if objects:
            self.store.put_many(self.pack_commits(objects))
            self.mark_stored(objects)

    def missing_below(self, root: ObjectId) -> list[str]:
        """Return problems (missing or corrupt objects) in everything ``root`` refers to."""
        problems: list[str] = []
        seen: set[ObjectId] = set()
        frontier = [root]
        while frontier:
            batch = [i for i in dict.fromkeys(frontier) if i not in seen]
            frontier = []
            found = self.store.get_many(batch)
            for object_id in batch:
                seen.add(object_id)
                data = found.get(object_id)
                if data is None:
                    problems.append(f"missing object {to_hex(object_id)}")
                    continue
                try:
                    frontier.extend(children(decode_stored(self.store, object_id, data)))
                except CorruptObject as exc:
                    problems.append(str(exc))
        return problems


def _commit_object(
    snapshot_id: ObjectId,
    parents: Sequence[ObjectId],
    message: str,
    author: str,
    timestamp: datetime,
    metadata: Mapping[str, Any] | None,
) -> CommitObject:
    """A commit object of checked fields (see :mod:`statevcs.commitfields`)."""
    _check_id(snapshot_id, "snapshot_id")
    if isinstance(parents, (str, bytes)) or not isinstance(parents, Sequence):
        raise TypeError(f"parents must be a list of commit ids, got {type(parents).__name__}")
    return CommitObject(
        snapshot=snapshot_id,
        parents=tuple(_check_id(p, "parents") for p in parents),
        author=check_text(author, "author"),
        timestamp_us=timestamp_us(timestamp),
        message=check_text(message, "message"),
        metadata=canonical_metadata(metadata),
    )


class _RawBytes:
    """Carries already-serialized state bytes through the snapshot codec unchanged."""

    def __init__(self, name: str) -> None:
        self.name = name

    def serialize(self, value: object, path: str = "value") -> bytes:
        if not isinstance(value, bytes):
            raise SerializationError(f"{path}: expected serialized bytes", path)
        return value

    def deserialize(self, data: bytes, path: str = "value") -> bytes:
        return data

    def validate(self, value: object, path: str = "value") -> None:
        self.serialize(value, path)


_RAW = _RawBytes("raw")


class Refs:
    """A repository's refs: full names to commit ids, moved only by compare-and-swap."""

    def __init__(self, store: Store, objects: ObjectDatabase) -> None:
        self._store = store
        self._objects = objects
        self._uncovered = 0  # commits written since this handle last wrote the commit graph

    def get(self, name: str) -> ObjectId | None:
        """Return the commit a full ref name points to, or ``None``."""
        return self._store.get_ref(_check_name(name))

    def set(
        self,
        name: str,
        commit_id: ObjectId | None,
        *,
        expected: Expected = ANY,
        message: str = "",
    ) -> None:
        """Point full ref ``name`` at ``commit_id`` (``None`` deletes it), compare-and-swap.

        ``expected`` is the id the ref must hold now (``None``: must not exist; ``ANY``: do not
        check). Raises ``RefConflict`` when it does not, and ``MissingObject`` /
        ``CorruptObject`` unless ``commit_id`` names a stored commit.
        """
        _check_name(name)
        if not name.startswith("refs/"):
            raise InvalidRefName(name, "a ref set directly must be a full name under refs/")
        check_ref_name(name)
        if commit_id is not None:
            self._objects.load_commit(_check_id(commit_id, "commit_id"))
            # The cache may hold a commit that was encoded but never stored: ask the store.
            if not self._store.has_many([commit_id]):
                # Never stored, or collected since: either way the caches cannot be trusted.
                self._objects.forget()
                raise MissingObject(
                    to_hex(commit_id),
                    "it is not in the store (never put, or garbage-collected since); write it "
                    "again",
                )
        if expected is not ANY and expected is not None:
            _check_id(expected, "expected")
        self.move(name, commit_id, expected, check_text(message, "message"))

    def as_dict(self, prefix: str = "refs/") -> dict[str, ObjectId]:
        """Return every ref under ``prefix``: ``{"refs/heads/main": commit id, ...}``."""
        return self._store.list_refs(prefix)

    def as_hex(self, prefix: str = "refs/") -> dict[str, str]:
        """Return every ref under ``prefix`` with hex commit ids."""
        return {name: to_hex(value) for name, value in self._store.list_refs(prefix).items()}

    def default_branch(self) -> str | None:
        """Return the full ref the stored ``HEAD`` names (the repository's default branch)."""
        return self._store.get_symbolic("HEAD")

    def set_default_branch(self, ref: str, message: str) -> None:
        """Point the stored ``HEAD`` at ``ref``, logging the move in ``HEAD``'s reflog."""
        self._store.set_symbolic("HEAD", ref, message=message)

    def reflog(self, name: str) -> list[StoredReflogEntry]:
        """Return how ``name`` moved, newest first."""
        return self._store.reflog(name)

    def delete_reflog(self, name: str) -> None:
        """Forget the reflog of ``name``."""
        self._store.delete_reflog(name)

    def update(
        self,
        updates: Sequence[RefUpdate],
        objects: Mapping[ObjectId, bytes] | None = None,
        *,
        verify: Iterable[ObjectId] = (),
    ) -> None:
        """Store ``objects`` and apply every compare-and-swap in one atomic step.

        ``update`` is valid for the object database's caches: if another process collected
        garbage since, the caches are dropped and ``StaleCache`` is raised (nothing written) so
        the caller rebuilds its objects, unless ``objects`` is empty: then the commits named in
        ``verify`` are checked to be whole and the update is retried once.
        """
        payload = dict(objects or {})
        stored = self._objects.pack_commits(payload)
        for attempt in range(_STALE_RETRIES):
            try:
                self._store.update_refs(updates, stored, generation=self._objects.generation)
                break
            except StaleCache as stale:
                self._objects.forget(stale.actual)
                # Objects prepared against the old generation are the caller's to rebuild; a
                # bare ref update only needs its commits whole (a gc looping in another
                # process may move the generation again while that is checked).
                if payload or attempt == _STALE_RETRIES - 1:
                    raise
                for commit_id in verify:
                    problems = self._objects.missing_below(commit_id)
                    if problems:
                        raise MissingObject(
                            to_hex(commit_id),
                            f"it was garbage-collected by another process ({problems[0]})",
                        ) from None
        self._objects.mark_stored(payload)
        self._count_commits(payload)

    def _count_commits(self, payload: Mapping[ObjectId, bytes]) -> None:
        """Write the commit graph once this handle wrote enough commits it does not cover."""
        for data in payload.values():
            if _COMMIT_TAG in data[:8]:
                self._uncovered += 1
        if self._uncovered < self._store.commit_graph_every:
            return
        self._uncovered = 0
        # The graph only makes walks faster: a failure waits for the next write (or gc).
        with contextlib.suppress(StateVCSError):
            write_graph(self._store)

    def move(self, name: str, new: ObjectId | None, expected: Expected, message: str) -> None:
        """Compare-and-swap one ref (the store logs ``HEAD`` too when it is the default branch)."""
        update = RefUpdate(name, new, expected, message)  # the store logs HEAD when it should
        self.update([update], verify=[new] if new is not None else [])


RESERVED_CONFIG_KEYS = {
    "core.format": "the repository format this version reads",
    "core.durability": "chosen when the repository is created",
    "core.id": "the repository's identity, set when it is created",
    "core.chunker": "set when the repository is created: large values' ids depend on it",
    "gc.generation": "bumped by garbage collection",
    "core.zstd-dictionary": "names the dictionary messages are compressed with",
    "core.zstd-commit-dictionary": "names the dictionary commits are compressed with",
}
"""Config keys statevcs maintains itself, and why they are not for hand editing."""
_RESERVED_PREFIXES = {
    "core.zstd-dict.": "names a dictionary that compressed objects need to be read",
}


class Config:
    """A repository's configuration: string keys to string values."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def get(self, key: str) -> str | None:
        """Return the value of ``key``, or ``None``."""
        return self._store.config_get(check_text(key, "key"))

    def set(self, key: str, value: str | None) -> None:
        """Set ``key`` (``None`` deletes it); statevcs's own keys cannot be changed here."""
        check_text(key, "key")
        if value is not None:
            check_text(value, "value")
        why = RESERVED_CONFIG_KEYS.get(key) or next(
            (v for k, v in _RESERVED_PREFIXES.items() if key.startswith(k)), None
        )
        if why is not None:
            raise RepositoryError(
                f"config key {key!r} belongs to statevcs ({why}); it cannot be set by hand"
            )
        self._store.config_set(key, value)


def _check_id(value: object, argument: str) -> ObjectId:
    if not isinstance(value, bytes) or len(value) != 32:
        raise TypeError(
            f"{argument} must be a 32-byte object id (statevcs.hashing.from_hex(hex) makes one), "
            f"got {type(value).__name__}"
        )
    return value


def _check_name(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    return name


__all__ = ["Config", "ObjectDatabase", "Refs", "SnapshotValues"]
