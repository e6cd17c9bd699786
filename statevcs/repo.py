"""The repository porcelain: commit, checkout, branch, tag, log, diff, reset, gc, fsck, stats."""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, cast

from .adapters import (
    ADAPTERS,
    Adapter,
    AdapterRegistry,
    IncrementalAdapter,
    acting_for,
    is_incremental,
    message_decoder,
    syncing,
    transient_keys,
)
from .commitfields import canonical_metadata, check_text, copy_tree, timestamp_us
from .errors import (
    CorruptObject,
    DetachedHead,
    InvalidRevision,
    MissingObject,
    RefConflict,
    RefExists,
    RefNotFound,
    RepositoryError,
    RepositoryExists,
    RepositoryNotFound,
    StaleCache,
    StateVCSError,
    StoreError,
    UnknownRevision,
)
from .hashing import ObjectId, from_hex, hash_bytes, to_hex
from .history import CommitGraph, is_ancestor, merge_bases, walk
from .merge import Side, Strategy, merge_snapshots
from .objectdb import ObjectDB, decode_stored
from .objects import CommitObject, Doc, decode, encode_doc, encode_with_id
from .plumbing import Config, ObjectDatabase, Refs
from .refs import (
    BRANCH_PREFIX,
    DEFAULT_BRANCH,
    HEAD,
    TAG_PREFIX,
    branch_ref,
    check_ref_name,
    full_branch_ref,
    short_name,
    tag_ref,
)
from .revisions import ref_candidates, reflog_ref, resolve_revision
from .serializers import JSONSerializer, StateSerializer
from .snapshot import (
    MessageBase,
    MessageDecoder,
    ReadSnapshot,
    StoredMessages,
    WrittenSnapshot,
    check_codec_name,
    read_snapshot,
    stored_messages,
    write_snapshot,
)
from .stores import forksafety
from .stores.base import Expected, RefUpdate, Store
from .stores.memory import MemoryStore
from .stores.registry import backend_for
from .stores.sqlite import DB_FILENAME, Durability, SQLiteStore, read_config
from .structures.chunking import CHUNKER_KEY, DEFAULT_CHUNKER, chunker_for

if TYPE_CHECKING:
    from .commitgraph import GraphWriteReport
    from .diff import SnapshotDiff
    from .gc import FsckReport, GCReport, StatsReport
    from .model import Snapshot
    from .search import SearchResult
    from .upgrade import UpgradeReport

# Loaded where they are used (diff, search, gc, fsck, stats, upgrade, writing the commit graph),
# so that opening a repository and reading its history (the command line's `log`) does not
# pay for them; the reports stay importable from here (PEP 562).
_LAZY_EXPORTS = {"FsckReport": ".gc", "GCReport": ".gc", "StatsReport": ".gc"}


def __getattr__(name: str) -> Any:
    """Load a report class kept importable from this module the first time it is asked for."""
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __package__), name)


DEFAULT_AUTHOR = "statevcs <statevcs@localhost>"
MEMORY_URL = "memory://"
REPOSITORY_FORMAT = "2"
"""The storage format new repositories get (see :data:`statevcs.objectdb.FORMAT_KEY`)."""
READABLE_FORMATS = ("1", "2")
DURABILITY_KEY = "core.durability"
REPOSITORY_ID_KEY = "core.id"


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit: a snapshot, its parents, author, UTC timestamp, message and metadata."""

    id: str
    parents: tuple[str, ...]
    snapshot_id: str
    message: str
    author: str
    timestamp: datetime
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def short_id(self) -> str:
        """The first 12 hex characters of the id."""
        return self.id[:12]


@dataclass(frozen=True, slots=True)
class ReflogEntry:
    """One movement of a ref, newest first in :meth:`Repo.reflog`."""

    old: str | None
    new: str | None
    timestamp: datetime
    message: str


@dataclass(slots=True)
class _Sync:
    """What a live object was last committed as or checked out from."""

    branch: str | None
    commit: ObjectId | None
    messages: StoredMessages | None = None
    generation: int = -1
    """The gc generation ``messages`` was valid for: a later collection may have removed its
    tree nodes (when its branch was deleted), so the next commit then writes a whole tree."""


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _utc(micros: int, commit_id: ObjectId) -> datetime:
    try:
        # Positional (days, seconds, microseconds): the same value, half the cost of a
        # microseconds= keyword that timedelta must normalize (this runs on every commit).
        return _EPOCH + timedelta(0, micros // 1_000_000, micros % 1_000_000)
    except OverflowError:
        raise CorruptObject(
            to_hex(commit_id), f"its timestamp ({micros} µs since 1970) is out of range"
        ) from None


def _commit_from(object_id: ObjectId, obj: CommitObject) -> Commit:
    return Commit(
        id=object_id.hex(),
        parents=tuple(p.hex() for p in obj.parents),
        snapshot_id=obj.snapshot.hex(),
        message=obj.message,
        author=obj.author,
        timestamp=_utc(obj.timestamp_us, object_id),
        # A private deep copy: changing a returned Commit never reaches the stored one.
        metadata=copy_tree(obj.metadata) if obj.metadata else {},
    )


class Repo:
    """A versioned store of agent snapshots with git's commands.

    Open one with :meth:`init` or :meth:`open`; use it as a context manager to close it.

    Each handle has its own ``HEAD`` (the branch it commits plain dicts to and resolves
    ``HEAD`` against), starting at the repository's default branch; only :meth:`switch` moves
    the stored default. Each live object it commits or checks out remembers its branch and the
    commit it was synced with, and a commit made from a stale object raises ``RefConflict``
    instead of overwriting another writer's work.
    """

    def __init__(
        self,
        store: Store,
        *,
        serializer: StateSerializer | None = None,
        author: str | None = None,
        path: Path | None = None,
        adapters: AdapterRegistry | None = None,
    ) -> None:
        _check_serializer(serializer)
        self._store = store
        self._path = path
        self._serializer: StateSerializer = serializer or JSONSerializer()
        self._author = check_text(
            author or os.environ.get("STATEVCS_AUTHOR") or DEFAULT_AUTHOR, "author"
        )
        self.objects: Final = ObjectDatabase(store, self._serializer)
        """Plumbing: the object database (verified reads, cached writes, snapshot codec)."""
        self.refs: Final = Refs(store, self.objects)
        """Plumbing: refs by full name, compare-and-swap, reflogs, the stored default branch."""
        self.config: Final = Config(store)
        """Plumbing: the repository's configuration."""
        if adapters is not None and not isinstance(adapters, AdapterRegistry):
            raise TypeError(f"adapters must be an AdapterRegistry, got {type(adapters).__name__}")
        self.adapters: Final = adapters or AdapterRegistry(parent=ADAPTERS)
        """Which adapter captures and restores each kind of live object, for this handle.

        Register an adapter here to override the process-wide one (``ADAPTERS``) for this
        repository only."""
        self._lock = threading.RLock()
        self._upgrade_map: dict[ObjectId, ObjectId] | None = None
        forksafety.track(self, outer=True)  # a fork waits for this handle's operation
        # Objects are tracked per repository, not per handle: an object checked out through
        # one handle and committed through another is still the same stale object.
        self._tracked, self._dicts = _registries(store)
        # Plain dicts cannot be weakly referenced: the last few this handle synced are held
        # here (by reference, so an id is never reused while its entry lives).
        self._head_ref: str | None = store.get_symbolic(HEAD)
        self._head_commit: ObjectId | None = (
            None if self._head_ref is not None else store.get_ref(HEAD)
        )
        if self._head_ref is None and self._head_commit is None:
            self._head_ref = branch_ref(DEFAULT_BRANCH)

    @property
    def store(self) -> Store:
        """The storage backend (plumbing below ``objects`` and ``refs``)."""
        return self._store

    @property
    def path(self) -> Path | None:
        """The repository folder, or ``None`` for ``memory://``."""
        return self._path

    @property
    def serializer(self) -> StateSerializer:
        """The serializer new state values are written with."""
        return self._serializer

    @property
    def author(self) -> str:
        """The author recorded on commits that do not name one."""
        return self._author

    # --- opening ------------------------------------------------------------

    @classmethod
    def init(
        cls,
        path: str | os.PathLike[str] = MEMORY_URL,
        *,
        serializer: StateSerializer | None = None,
        author: str | None = None,
        default_branch: str = DEFAULT_BRANCH,
        durability: Durability = "normal",
        adapters: AdapterRegistry | None = None,
        storage_format: int = int(REPOSITORY_FORMAT),
    ) -> Repo:
        """Create a repository: a folder holding one SQLite file, ``memory://`` or ``s3://...``.

        ``s3://BUCKET/PREFIX?endpoint_url=...&region=...`` creates one on S3-compatible object
        storage (credentials from the environment; see docs/storage.md).

        ``durability="full"`` makes every acknowledged commit survive power loss (an fsync per
        commit); the default survives application crashes (see docs/concepts.md). The choice
        is stored in the repository's config (``core.durability``) and used by every handle
        that opens it without naming one.

        ``storage_format=1`` writes the format statevcs 0.1 reads (one object per message, no
        compression), for a repository older versions must still open; ``statevcs upgrade``
        moves it to format 2 later (see docs/storage.md).
        """
        import uuid  # only a new repository needs one

        ref = branch_ref(_check_str(default_branch, "default_branch"))
        _check_durability(durability)
        format_text = _check_storage_format(storage_format)
        _check_serializer(serializer)  # before anything is created
        text = _location(path)
        backend = backend_for(text)
        if backend is not None:
            config = {
                # A repository's own identity: a new repository where a deleted one was is
                # another repository (objects synced with the old one must not splice onto it).
                REPOSITORY_ID_KEY: uuid.uuid4().hex,
                "core.format": format_text,
                DURABILITY_KEY: durability,
                # Fixed for the repository's life: its large values' ids depend on it.
                CHUNKER_KEY: DEFAULT_CHUNKER.name,
            }
            store = backend.create(text, config=config, head=ref)
            repo = cls(store, serializer=serializer, author=author, adapters=adapters)
        else:
            folder = Path(text)
            if (folder / DB_FILENAME).exists():
                raise RepositoryExists(
                    f"a statevcs repository already exists at {folder}; open it instead "
                    "(statevcs.Repo.open or `statevcs -C PATH log`)"
                )
            if folder.exists() and not folder.is_dir():
                raise RepositoryError(f"{folder} exists and is not a folder; choose another path")
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise RepositoryError(
                    f"cannot create {folder}: {exc}; choose another path"
                ) from None
            sqlite = SQLiteStore(folder / DB_FILENAME, durability=durability)
            sqlite.config_set(REPOSITORY_ID_KEY, uuid.uuid4().hex)
            sqlite.config_set(CHUNKER_KEY, DEFAULT_CHUNKER.name)
            repo = cls(sqlite, serializer=serializer, author=author, path=folder, adapters=adapters)
            repo.store.set_symbolic(HEAD, ref)
            repo.store.config_set("core.format", format_text)
            repo.store.config_set(DURABILITY_KEY, durability)
        repo._head_ref = ref
        return repo

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        serializer: StateSerializer | None = None,
        author: str | None = None,
        durability: Durability | None = None,
        adapters: AdapterRegistry | None = None,
    ) -> Repo:
        """Open an existing repository folder (or its ``statevcs.sqlite3`` file) or URL.

        Nothing is written until the folder is known to hold a statevcs repository.
        ``durability`` defaults to the repository's ``core.durability`` config.
        """
        if durability is not None:
            _check_durability(durability)
        text = _location(path)
        backend = backend_for(text)
        if backend is not None:
            store = backend.open(text)
            try:
                _check_format(store.config_get("core.format"), store.url)
                chunker_for(store.config_get(CHUNKER_KEY))
            except BaseException:
                store.close()
                raise
            return cls(store, serializer=serializer, author=author, adapters=adapters)
        folder = Path(text)
        if folder.is_file() and folder.name == DB_FILENAME:
            folder = folder.parent
        if not (folder / DB_FILENAME).is_file():
            raise RepositoryNotFound(
                f"no statevcs repository at {folder}; create one with statevcs.Repo.init({text!r}) "
                "or `statevcs init`"
            )
        config = read_config(folder / DB_FILENAME)
        _check_format(config.get("core.format"), str(folder))
        chunker_for(config.get(CHUNKER_KEY))
        if durability is None:
            stored = config.get(DURABILITY_KEY, "normal")
            durability = "full" if stored == "full" else "normal"
        store = SQLiteStore(folder / DB_FILENAME, durability=durability)
        return cls(store, serializer=serializer, author=author, path=folder, adapters=adapters)

    @property
    def url(self) -> str:
        """Where the repository lives: a folder path or a URL (``memory://``, ``s3://...``)."""
        return str(self.path) if self.path is not None else self._store.url

    def close(self) -> None:
        """Close the underlying store."""
        self._store.close()

    def __enter__(self) -> Repo:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Repo({self.url!r})"

    def _before_fork(self) -> None:
        """Wait for this handle's operation in progress: a forked child would find the lock of
        the thread doing it (which the child lacks) held for ever."""
        self._lock.acquire()

    def _after_fork(self, *, in_child: bool) -> None:
        self._lock.release()

    # --- HEAD and live-object tracking ----------------------------------------------

    @property
    def head_branch(self) -> str | None:
        """The branch this handle's ``HEAD`` is on, or ``None`` if it is detached."""
        return short_name(self._head_ref) if self._head_ref is not None else None

    @property
    def default_branch(self) -> str | None:
        """The repository's stored default branch: where new handles and the CLI start."""
        target = self._store.get_symbolic(HEAD)
        return short_name(target) if target else None

    def switch(self, name: str, *, create: bool = False) -> None:
        """Make branch ``name`` the repository's default branch and this handle's ``HEAD``.

        The move is recorded in ``HEAD``'s reflog. ``create=True`` creates the branch at this
        handle's ``HEAD`` first. Plain dicts committed afterwards go to ``name``; load its
        state into them with :meth:`checkout`.
        """
        ref = branch_ref(_check_str(name, "name"))
        _check_bool(create, "create")
        with self._lock:
            exists = self._store.get_ref(ref) is not None
            if not exists:
                if create:
                    head = self._head_value()
                    if head is not None:
                        self._store.set_ref(
                            ref, head, expected=None, message="branch: created by switch"
                        )
                elif self._store.list_refs(BRANCH_PREFIX):
                    raise RefNotFound(
                        f"no branch named {name!r}; pass create=True (`statevcs switch -c`) to "
                        "create it, or pick one of: " + ", ".join(self.branches())
                    )
            before = self.default_branch or "(detached)"
            self._store.set_symbolic(HEAD, ref, message=f"switch: moving from {before} to {name}")
            self._head_ref = ref
            self._head_commit = None

    def attached_branch(self, obj: Any) -> str | None:
        """Return the branch ``obj`` commits to (``None`` when it is detached)."""
        sync = self._sync_of(obj)
        if sync is not None:
            return short_name(sync.branch) if sync.branch else None
        return self.head_branch

    def synced_commit(self, obj: Any) -> str | None:
        """Return the commit ``obj`` was last committed as or checked out from by this handle."""
        sync = self._sync_of(obj)
        return to_hex(sync.commit) if sync is not None and sync.commit is not None else None

    def _sync_of(self, obj: Any) -> _Sync | None:
        if not _weakrefable(obj):
            remembered = self._dicts.get(id(obj))
            return remembered[1] if remembered is not None and remembered[0] is obj else None
        entry = self._tracked.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return None

    def _set_sync(self, obj: Any, sync: _Sync) -> None:
        if not _weakrefable(obj):
            _remember_dict(self._dicts, obj, sync)
            self._head_ref = sync.branch
            self._head_commit = None if sync.branch is not None else sync.commit
            return
        key = id(obj)

        tracked = self._tracked

        def forget(_ref: object, key: int = key) -> None:
            tracked.pop(key, None)

        tracked[key] = (weakref.ref(obj, forget), sync)

    # --- commit and checkout -------------------------------------------------

    def _target(self, obj: Any, branch: str | None) -> tuple[str, _Sync | None]:
        """Return (full branch ref, what the object was last synced with, if anything)."""
        sync = self._sync_of(obj)
        if branch is not None:
            return full_branch_ref(branch), sync
        if sync is not None:
            if sync.branch is None:
                raise DetachedHead(
                    f"this object was checked out at {to_hex(sync.commit or b'')[:12]} (detached); "
                    "pass branch='name' to commit it to a new or existing branch"
                )
            return sync.branch, sync
        if self._head_ref is None:
            raise DetachedHead(
                f"HEAD is detached at {to_hex(self._head_commit or b'')[:12]}; pass "
                "branch='name' to commit, or check out a branch first"
            )
        return self._head_ref, None

    def _message_base(self, sync: _Sync | None, adapter: Adapter, obj: Any) -> MessageBase | None:
        previous = sync.messages if sync is not None else None
        if previous is None or not is_incremental(adapter):
            return None
        with syncing(sync.commit if sync is not None else None):
            keep = cast(IncrementalAdapter, adapter).unchanged_prefix(obj)
        if keep is None:
            return None
        return MessageBase(previous, int(keep))

    def commit(
        self,
        obj: Any,
        message: str = "",
        *,
        metadata: Mapping[str, Any] | None = None,
        author: str | None = None,
        branch: str | None = None,
        timestamp: datetime | None = None,
        on_conflict: OnConflict = "raise",
    ) -> Commit:
        """Commit the live object's current state to its branch; return the new commit.

        The new commit's parent is the commit the object was last synced with (checked out or
        committed by this handle); an object never synced commits on the branch tip. If the
        branch has moved past the synced commit (another handle or process committed), this
        raises :class:`RefConflict` naming both commits and writes nothing, or, with
        ``on_conflict="merge"``, merges three-way like :meth:`merge` (a
        :class:`MergeConflict` when both sides changed the same key or both appended
        messages), loads the merged state into ``obj`` and returns the merge commit.
        New objects and the ref move land in one transaction: a failure leaves the branch
        where it was. Committing a plain ``dict`` (with or without ``branch=``) also moves this
        handle's ``HEAD`` to its branch, so the next fresh dict commits there too.

        A :class:`StoreError` says whether the commit landed anyway (``landed``: ``False``,
        ``True``, or ``None`` when a network failure hid the answer) and names it
        (``commit_id``). After ``landed is None``, ask :meth:`has_landed` before committing the
        change again, so the retry never writes it twice.
        """
        fields = _CommitFields.check(self, message, author, timestamp, metadata)
        if branch is not None:
            _check_str(branch, "branch")
        if on_conflict not in ("raise", "merge"):
            raise TypeError(f"on_conflict must be 'raise' or 'merge', got {on_conflict!r}")
        adapter = self.adapters.lookup(obj)
        with self._lock, acting_for(self), _CommitOutcome() as outcome:
            snapshot = adapter.capture(obj)
            ref, sync = self._target(obj, branch)
            outcome.ref = ref
            skip = transient_keys(obj)
            base = self._message_base(sync, adapter, obj)
            previous = sync.messages if sync is not None else None
            if sync is not None and sync.generation != self.objects.generation:
                base = previous = None  # its tree may have been collected since: write it whole
            if sync is None:
                # A fresh object: splice its messages onto the tip's tree (reachable, so never
                # collected under it), which writes only the paths that differ.
                previous = self._tip_messages(ref)
            for _attempt in range(_MAX_ATTEMPTS):
                synced = sync.commit if sync is not None else None
                expected: ObjectId | None = synced
                starts_branch = (
                    synced is not None
                    and (sync is None or sync.branch != ref)
                    and self._store.get_ref(ref) is None
                )
                if starts_branch and synced is not None:
                    # A new branch starts at ``synced``, which must still exist: another
                    # process may have deleted its branch and collected it since.
                    expected = None
                    if not self._store.has_many([synced]):
                        synced = None
                if synced is not None:
                    # The object's state grew from ``synced``: that is its parent.
                    parents: tuple[ObjectId, ...] = (synced,)
                else:
                    expected = self._store.get_ref(ref)
                    parents = (expected,) if expected is not None else ()
                written = self._encode(snapshot, base, previous, skip)
                commit_id, encoded = fields.encode(written.snapshot_id, parents)
                objects = {**written.objects, commit_id: encoded}
                outcome.phase, outcome.commit_id = "writing", commit_id
                try:
                    self._apply(
                        [_ref_update(ref, commit_id, expected, fields.reflog_note(parents))],
                        objects,
                    )
                except StaleCache:
                    outcome.phase = "before"
                    base = previous = None  # write every object again
                    continue
                except RefConflict as conflict:
                    # No retry that could drop the other side, not even for a fresh object.
                    if on_conflict == "raise" or conflict.actual is None:
                        raise _stale_writer(ref, synced, conflict) from None
                    outcome.phase = "merging"  # its own writes say whether they landed
                    return self._commit_merging(
                        obj,
                        adapter,
                        ref,
                        parents,
                        snapshot,
                        written,
                        fields,
                        commit_id,
                        encoded,
                        from_hex(conflict.actual),
                    )
                outcome.phase = "written"
                sync = _Sync(ref, commit_id, written.messages, self.objects.generation)
                self._after_write(obj, adapter, sync)
                return _commit_from(commit_id, self._load_commit(commit_id))
            raise RefConflict(
                ref, None, None, f"gave up after {_MAX_ATTEMPTS} attempts under heavy contention"
            )

    def has_landed(self, commit_id: str, *, branch: str | None = None) -> bool:
        """Whether commit ``commit_id`` (its 64 hex digits) was committed to ``branch``.

        Ask after :meth:`commit` raised a :class:`StoreError` whose ``landed`` is ``None``
        (its ``commit_id`` names the commit), before committing the change again. First every
        write begun before this call is made unable to land later (a request still on its
        way; ``Store.fence``), then the branch's reflog is searched for the commit: ``False``
        means it did not land and never will, so commit again. ``branch`` defaults to the
        branch ``HEAD`` names. Ask before reflogs are expired (``gc(expire_reflog=...)``): an
        expired entry is forgotten.
        """
        _check_str(commit_id, "commit_id")
        if len(commit_id) != 64 or not all(c in "0123456789abcdef" for c in commit_id):
            raise InvalidRevision(
                f"commit_id {commit_id[:80]!r} is not a full commit id (64 lowercase hex "
                "digits, as in StoreError.commit_id)"
            )
        if branch is not None:
            ref = full_branch_ref(_check_str(branch, "branch"))
        elif self._head_ref is not None:
            ref = self._head_ref
        else:
            raise DetachedHead("HEAD is detached; pass branch='name' to say where to look")
        target = from_hex(commit_id)
        self._store.fence()
        with self._store.operation():
            if self._store.get_ref(ref) == target:
                return True
            return any(entry.new == target for entry in self._store.reflog(ref))

    def _tip_messages(self, ref: str) -> StoredMessages | None:
        """The tip's stored conversation, to splice onto (``None``: write the tree whole)."""
        tip = self._store.get_ref(ref)
        if tip is None:
            return None
        try:
            snapshot = self.objects.load_snapshot(self._load_commit(tip).snapshot)
            return stored_messages(self.objects, snapshot)
        except (MissingObject, CorruptObject):
            return None  # a damaged tip is fsck's to report; this commit writes its own tree

    def _encode(
        self,
        snapshot: Snapshot,
        base: MessageBase | None,
        previous: StoredMessages | None,
        skip: frozenset[str],
    ) -> WrittenSnapshot:
        # With an adapter's hint only new messages are encoded; without one everything is
        # encoded and then spliced onto the last conversation this object synced with, so the
        # tree work stays O(changed + log n) either way.
        if base is not None:
            keep = min(base.keep, base.previous.length, len(snapshot.messages))
            if keep != base.keep:
                base = MessageBase(base.previous, keep)
        written = write_snapshot(
            self.objects,
            snapshot,
            self.serializer,
            base=base,
            previous=previous,
            exclude_state=skip,
        )
        return WrittenSnapshot(
            written.snapshot_id, written.messages, self.objects.unknown(written.objects)
        )

    def _apply(self, updates: Sequence[RefUpdate], objects: Mapping[ObjectId, bytes]) -> None:
        """Store objects and move refs in one transaction, valid for this handle's caches.

        Raises ``StaleCache`` (after dropping the caches) when another process collected
        garbage since: the caller rebuilds its objects from scratch and tries again.
        """
        self.refs.update(updates, objects)

    def _after_write(self, obj: Any, adapter: Adapter, sync: _Sync) -> None:
        self._set_sync(obj, sync)
        if is_incremental(adapter):
            with syncing(sync.commit):
                cast(IncrementalAdapter, adapter).mark_synced(obj)

    def _commit_merging(
        self,
        obj: Any,
        adapter: Adapter,
        ref: str,
        parents: tuple[ObjectId, ...],
        snapshot: Snapshot,
        written: WrittenSnapshot,
        fields: _CommitFields,
        ours_id: ObjectId,
        ours_encoded: bytes,
        theirs: ObjectId,
    ) -> Commit:
        """Write our commit (on ``parents``) beside the branch and merge it into the tip."""
        from .merge import merge_snapshots

        synced = parents[0] if parents else None
        ours = _as_stored(snapshot, self.serializer, transient_keys(obj))
        ours_objects = {**written.objects, ours_id: ours_encoded}
        for _attempt in range(_MAX_ATTEMPTS):
            # repo.merge's rules: against the best common ancestor of ours and theirs (not
            # simply the synced commit: another writer may have reset the branch behind it).
            graph = CommitGraph(self.objects)
            bases = merge_bases(graph, synced, theirs) if synced is not None else []
            base = self._read(graph.commit(bases[0]).snapshot).snapshot if bases else None
            their_commit = self._load_commit(theirs)
            theirs_snapshot = self._read(their_commit.snapshot).snapshot
            merged = merge_snapshots(base, ours, theirs_snapshot).snapshot
            merged_written = write_snapshot(self.objects, merged, self.serializer)
            merge_fields = fields.for_merge(ref, theirs, ours_id)
            merge_id, merge_encoded = merge_fields.encode(
                merged_written.snapshot_id, (theirs, ours_id)
            )
            objects = {
                **ours_objects,
                **self.objects.unknown(merged_written.objects),
                merge_id: merge_encoded,
            }
            note = f"commit (merge): merged {to_hex(ours_id)[:12]} into {to_hex(theirs)[:12]}"
            try:
                self._apply([_ref_update(ref, merge_id, theirs, note)], objects)
            except StaleCache:
                base_snapshot = self._encode(snapshot, None, None, transient_keys(obj))
                ours_id, ours_encoded = fields.encode(base_snapshot.snapshot_id, parents)
                ours_objects = {**base_snapshot.objects, ours_id: ours_encoded}
                continue
            except RefConflict as conflict:
                if conflict.actual is None:
                    raise _stale_writer(ref, synced, conflict) from None
                theirs = from_hex(conflict.actual)
                continue
            adapter.restore(obj, self._read(merged_written.snapshot_id).snapshot)
            read = self._read(merged_written.snapshot_id)
            sync = _Sync(ref, merge_id, read.messages, self.objects.generation)
            self._after_write(obj, adapter, sync)
            return _commit_from(merge_id, self._load_commit(merge_id))
        raise RefConflict(
            ref, None, None, f"gave up after {_MAX_ATTEMPTS} attempts under heavy contention"
        )

    def checkout(self, obj: Any, rev: str) -> Commit:
        """Restore the revision into the live object.

        A branch name, ``HEAD`` or ``@`` keeps the object attached to that branch (its next
        commit moves it); any other revision detaches it. ``HEAD`` means the object's own
        branch when this handle already tracks it, else the handle's ``HEAD``.
        """
        _check_str(rev, "rev")
        adapter = self.adapters.lookup(obj)
        with self._lock, acting_for(self), self._store.operation():
            sync = self._sync_of(obj)
            own_head = sync.branch if sync is not None else self._head_ref
            context = _Context(self, head=own_head if sync is not None else None)
            branch = _branch_named(context, rev)
            if rev in (HEAD, "@"):
                branch = own_head
                if branch is not None and context.ref_value(branch) is None:
                    raise UnknownRevision(
                        f"branch {short_name(branch)!r} has no commits yet; commit first"
                        + _other_branches_hint(self)
                    )
            commit_id = (
                context.ref_value(branch) if branch is not None else resolve_revision(context, rev)
            )
            if commit_id is None:
                raise UnknownRevision(f"revision {rev!r} names no commit")
            commit_object = self._load_commit(commit_id)
            read = self._read(commit_object.snapshot, message_decoder(adapter, obj))
            adapter.restore(obj, read.snapshot)
            sync = _Sync(branch, commit_id, read.messages, self.objects.generation)
            self._after_write(obj, adapter, sync)
            return _commit_from(commit_id, commit_object)

    def _read(self, snapshot_id: ObjectId, decoder: MessageDecoder | None = None) -> ReadSnapshot:
        return read_snapshot(self.objects, snapshot_id, self.serializer, decoder)

    # --- reading ------------------------------------------------------------------

    def _load_commit(self, commit_id: ObjectId) -> CommitObject:
        obj = self.objects.load(commit_id)
        if not isinstance(obj, CommitObject):
            raise CorruptObject(to_hex(commit_id), f"expected a commit, found {type(obj).__name__}")
        return obj

    def _resolve(self, rev: str, argument: str = "rev") -> ObjectId:
        checked = _check_str(rev, argument)
        with self._store.operation():  # one consistent read of the refs (one request on S3)
            return resolve_revision(_Context(self), checked)

    def resolve(self, rev: str) -> str:
        """Return the full hex id of the commit ``rev`` names."""
        return to_hex(self._resolve(rev))

    def _commit_at(self, commit_id: ObjectId) -> Commit:
        return _commit_from(commit_id, self._load_commit(commit_id))

    def get_commit(self, rev: str) -> Commit:
        """Return the commit ``rev`` names (a revision or a full id)."""
        commit_id = self._resolve(rev)
        return _commit_from(commit_id, self._load_commit(commit_id))

    def show(self, rev: str = HEAD) -> Snapshot:
        """Return the snapshot stored at ``rev``."""
        commit_object = self._load_commit(self._resolve(rev))
        return read_snapshot(self.objects, commit_object.snapshot, self.serializer).snapshot

    def log(
        self, rev: str = HEAD, *, limit: int | None = None, all_parents: bool = False
    ) -> Iterator[Commit]:
        """Yield commits newest first: first parents only unless ``all_parents=True``.

        ``HEAD`` on a branch with no commits yet yields nothing.
        """
        _check_str(rev, "rev")
        _check_limit(limit)
        # One consistent read of the refs and the commit graph's chain (one request on S3).
        with self._store.operation():
            if rev in (HEAD, "@") and self._head_value() is None:
                return iter(())
            start = self._resolve(rev)
            graph = CommitGraph(self.objects)
        return self._walk([start], limit=limit, all_parents=all_parents, graph=graph)

    def log_all(self, *, limit: int | None = None, all_parents: bool = True) -> Iterator[Commit]:
        """Yield every commit reachable from any branch, tag or ``HEAD``, newest first.

        Ties in time are broken by ref order (branches, then tags, by name; then ``HEAD``), so
        the order is the same on every run. ``all_parents=False`` follows first parents only.
        """
        _check_limit(limit)
        _check_bool(all_parents, "all_parents")
        refs = self._store.list_refs("refs/")
        ordered = sorted(refs, key=lambda name: (not name.startswith(BRANCH_PREFIX), name))
        starts = [refs[name] for name in ordered]
        head = self._head_value()
        if head is not None:
            starts.append(head)
        yield from self._walk(list(dict.fromkeys(starts)), limit=limit, all_parents=all_parents)

    def _walk(
        self,
        starts: Sequence[ObjectId],
        *,
        limit: int | None,
        all_parents: bool,
        graph: CommitGraph | None = None,
    ) -> Iterator[Commit]:
        if graph is None:
            with self._store.operation():  # the graph's chain read with the refs (S3: one read)
                graph = CommitGraph(self.objects)
        for commit_id, obj in walk(graph, starts, first_parent=not all_parents, limit=limit):
            yield _commit_from(commit_id, obj)

    def _head_value(self) -> ObjectId | None:
        """The commit this handle's ``HEAD`` names (``None`` on an unborn branch)."""
        if self._head_ref is not None:
            return self._store.get_ref(self._head_ref)
        return self._head_commit

    # --- refs -------------------------------------------------------------------

    def branch(self, name: str, rev: str = HEAD, *, force: bool = False) -> Commit:
        """Create branch ``name`` at revision ``rev`` (``force=True`` moves an existing one)."""
        ref = branch_ref(_check_str(name, "name"))
        commit_id = self._resolve(rev)
        _check_bool(force, "force")
        current = self._store.get_ref(ref)
        if current is not None and not force:
            raise RefExists(
                f"branch {name!r} already exists at {to_hex(current)[:12]}; pass force=True to "
                "move it or pick another name"
            )
        self._move_ref(ref, commit_id, current, f"branch: created from {rev}")
        return _commit_from(commit_id, self._load_commit(commit_id))

    def branches(self) -> dict[str, str]:
        """Return ``{branch name: commit id}``."""
        return {short_name(k): to_hex(v) for k, v in self._store.list_refs(BRANCH_PREFIX).items()}

    def delete_branch(self, name: str) -> None:
        """Delete branch ``name`` (not the branch ``HEAD`` is on)."""
        ref = branch_ref(_check_str(name, "name"))
        current = self._store.get_ref(ref)
        if current is None:
            raise RefNotFound(f"no branch named {name!r}; list branches with repo.branches()")
        if self._store.get_symbolic(HEAD) == ref:
            raise RepositoryError(
                f"cannot delete branch {name!r}: it is the repository's default branch; "
                "switch to another branch first (repo.switch / `statevcs switch`)"
            )
        self._move_ref(ref, None, current, "branch: deleted")
        self._store.delete_reflog(ref)

    def tag(self, name: str, rev: str = HEAD, *, force: bool = False) -> Commit:
        """Create tag ``name`` at ``rev``."""
        ref = tag_ref(_check_str(name, "name"))
        _check_bool(force, "force")
        commit_id = self._resolve(rev)
        current = self._store.get_ref(ref)
        if current is not None and not force:
            raise RefExists(f"tag {name!r} already exists; pass force=True to move it")
        self._move_ref(ref, commit_id, current, f"tag: {rev}")
        return _commit_from(commit_id, self._load_commit(commit_id))

    def tags(self) -> dict[str, str]:
        """Return ``{tag name: commit id}``."""
        return {short_name(k): to_hex(v) for k, v in self._store.list_refs(TAG_PREFIX).items()}

    def delete_tag(self, name: str) -> None:
        """Delete tag ``name``."""
        ref = tag_ref(_check_str(name, "name"))
        current = self._store.get_ref(ref)
        if current is None:
            raise RefNotFound(f"no tag named {name!r}; list tags with repo.tags()")
        self._move_ref(ref, None, current, "tag: deleted")
        self._store.delete_reflog(ref)

    def reset(self, branch: str, rev: str) -> Commit:
        """Move ``branch`` to ``rev`` (history after it stays reachable through the reflog)."""
        ref = full_branch_ref(_check_str(branch, "branch"))
        current = self._store.get_ref(ref)
        if current is None:
            raise RefNotFound(f"no branch named {branch!r}; create it with repo.branch(...)")
        commit_id = self._resolve(rev)
        self._move_ref(ref, commit_id, current, f"reset: moving to {rev}")
        return _commit_from(commit_id, self._load_commit(commit_id))

    def _move_ref(self, ref: str, new: ObjectId | None, expected: Expected, note: str) -> None:
        """Move one ref with compare-and-swap, safe against another process's gc."""
        self.refs.move(ref, new, expected, note)

    def reflog(self, ref: str = HEAD) -> list[ReflogEntry]:
        """Return how ``ref`` (``HEAD``, a branch or a tag name) moved, newest first."""
        _check_str(ref, "ref")
        full = ref
        if ref != HEAD and not ref.startswith("refs/"):
            try:
                # The ref ``name@{n}`` reads: git's lookup order, so both always agree.
                full = reflog_ref(_Context(self), ref)
            except UnknownRevision:
                full = branch_ref(ref)
        return [
            ReflogEntry(
                to_hex(e.old) if e.old else None,
                to_hex(e.new) if e.new else None,
                datetime.fromtimestamp(e.timestamp, tz=UTC),
                e.message,
            )
            for e in self._store.reflog(full)
        ]

    # --- diff, merge, mirror ----------------------------------------------------

    def diff(self, a: str, b: str) -> SnapshotDiff:
        """Compare the snapshots at revisions ``a`` and ``b`` structurally."""
        from .diff import diff_snapshots

        old = self._load_commit(self._resolve(a, "a"))
        new = self._load_commit(self._resolve(b, "b"))
        return diff_snapshots(
            self.objects, old.snapshot, new.snapshot, self.serializer, old_label=a, new_label=b
        )

    def search(
        self,
        pattern: str,
        *,
        rev: str = HEAD,
        all_refs: bool = False,
        regex: bool = False,
        ignore_case: bool = False,
        limit: int | None = None,
    ) -> SearchResult:
        """Find the messages containing ``pattern`` (a regex with ``regex=True``) in a history.

        Searches every commit reachable from ``rev`` (all parents), or from every branch, tag
        and ``HEAD`` with ``all_refs=True``. Returns each matching message once (messages are
        content-addressed), the commits that added it, and those commits. A regex that is not
        valid raises ``InvalidPattern``, one that could take exponential time ``UnsafePattern``
        (see :mod:`statevcs.search`); ``limit`` keeps the newest matches.
        """
        from .search import search_history

        _check_str(pattern, "pattern")
        _check_str(rev, "rev")
        _check_bool(all_refs, "all_refs")
        _check_bool(regex, "regex")
        _check_bool(ignore_case, "ignore_case")
        _check_limit(limit)
        starts: list[ObjectId]
        if all_refs:
            refs = self._store.list_refs("refs/")
            starts = [refs[name] for name in sorted(refs)]
            head = self._head_value()
            if head is not None:
                starts.append(head)
        elif rev in (HEAD, "@") and self._head_value() is None:
            starts = []
        else:
            starts = [self._resolve(rev)]
        return search_history(
            self.objects,
            list(dict.fromkeys(starts)),
            pattern,
            regex=regex,
            ignore_case=ignore_case,
            limit=limit,
        )

    def merge_base(self, a: str, b: str) -> str | None:
        """Return the best common ancestor of two revisions, or ``None``.

        When several are equally good (criss-cross merges), the newest is returned.
        """
        bases = self.merge_bases(a, b)
        return bases[0] if bases else None

    def merge_bases(self, a: str, b: str) -> list[str]:
        """Return every best common ancestor of two revisions, newest first."""
        graph = CommitGraph(self.objects)
        a_id, b_id = self._resolve(a, "a"), self._resolve(b, "b")
        return [to_hex(c) for c in merge_bases(graph, a_id, b_id)]

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Return whether revision ``ancestor`` is in the history of ``descendant``."""
        graph = CommitGraph(self.objects)
        return is_ancestor(
            graph, self._resolve(ancestor, "ancestor"), self._resolve(descendant, "descendant")
        )

    def merge(
        self,
        branch: str,
        rev: str,
        *,
        strategy: Strategy | None = None,
        message: str | None = None,
        author: str | None = None,
        fallback: Side | None = None,
        fast_forward: bool = True,
        timestamp: datetime | None = None,
    ) -> Commit:
        """Merge revision ``rev`` into ``branch`` and return the branch's new head.

        - ``rev`` already in the branch's history: nothing to do, the head is returned.
        - the branch head is an ancestor of ``rev``: the branch fast-forwards to it (no new
          commit) unless ``fast_forward=False``.
        - otherwise a two-parent commit (branch head, ``rev``) holding the structural merge
          of both snapshots against their merge base (see
          :func:`statevcs.merge.merge_snapshots`).

        The branch moves with a compare-and-swap, so a concurrent writer raises
        ``RefConflict``; a :class:`MergeConflict` writes nothing.
        """
        ref = full_branch_ref(_check_str(branch, "branch"))
        _check_str(rev, "rev")
        _check_bool(fast_forward, "fast_forward")
        if strategy is not None and not callable(strategy) and strategy not in ("ours", "theirs"):
            raise TypeError(f"strategy must be 'ours', 'theirs' or a callable, got {strategy!r}")
        if fallback is not None and fallback not in ("ours", "theirs"):
            raise TypeError(f"fallback must be 'ours' or 'theirs', got {fallback!r}")
        fields = _CommitFields.check(
            self, "" if message is None else message, author, timestamp, None
        )
        with self._lock:
            head = self._store.get_ref(ref)
            if head is None:
                raise RefNotFound(
                    f"branch {short_name(ref)!r} does not exist; create it first (repo.branch)"
                )
            source = self._resolve(rev)
            graph = CommitGraph(self.objects)
            if is_ancestor(graph, source, head):
                return self._commit_at(head)
            bases = merge_bases(graph, head, source)
            base_id = bases[0] if bases else None
            if base_id == head and fast_forward:
                self._move_ref(ref, source, head, f"merge {rev}: fast-forward")
                return self._commit_at(source)
            ours_commit, theirs_commit = graph.commit(head), graph.commit(source)
            result = merge_snapshots(
                self._read(graph.commit(base_id).snapshot).snapshot if base_id else None,
                self._read(ours_commit.snapshot).snapshot,
                self._read(theirs_commit.snapshot).snapshot,
                strategy=strategy,
                fallback=fallback,
            )
            info: dict[str, Any] = {
                "source": rev,
                "base": to_hex(base_id) if base_id else None,
            }
            if result.resolved:
                info["resolved"] = dict(sorted(result.resolved.items()))
            if isinstance(strategy, str):
                info["strategy"] = strategy
            elif strategy is not None:
                info["strategy"] = "resolver"
            fields = _CommitFields(
                self.objects,
                message if message is not None else f"Merge {rev} into {short_name(ref)}",
                fields.author,
                fields.timestamp_us,
                canonical_metadata({"merge": info}),
            )
            # State values were decoded with the target's codec; write them back with it.
            codec = self.objects.load_snapshot(ours_commit.snapshot).state_codec
            for _attempt in range(_MAX_ATTEMPTS):
                written = self.objects.encode_snapshot(result.snapshot, state_codec=codec)
                commit_id, encoded = fields.encode(written.snapshot_id, (head, source))
                update = _ref_update(ref, commit_id, head, f"merge {rev}")
                try:
                    self._apply([update], {**written.objects, commit_id: encoded})
                except StaleCache:
                    continue  # caches dropped: the next attempt writes every object
                return self._commit_at(commit_id)
            raise StaleCache(self.objects.generation, self._store.generation())

    # --- maintenance ----------------------------------------------------------------

    def gc(
        self,
        grace: timedelta | str = timedelta(weeks=2),
        *,
        dry_run: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
        expire_reflog: timedelta | str | None = None,
    ) -> GCReport:
        """Delete objects unreachable from every ref and reflog, older than ``grace``.

        ``grace`` and ``expire_reflog`` take a ``timedelta`` or a string like ``"2w"``,
        ``"3d12h"`` or ``"0"``. ``expire_reflog`` first drops reflog entries older than that,
        so history abandoned by ``reset`` or a deleted branch can be collected (git expires
        unreachable reflog entries after 30 days). ``progress(phase, done, total)`` is called
        while marking and while sweeping. Writers in other processes stay safe: see
        docs/concepts.md.
        """
        from .durations import as_duration
        from .gc import collect_garbage

        grace = as_duration(grace, "grace")
        _check_bool(dry_run, "dry_run")
        expire = None if expire_reflog is None else as_duration(expire_reflog, "expire_reflog")
        if progress is not None and not callable(progress):
            raise TypeError("progress must be callable")
        with self._lock:
            report = collect_garbage(
                self.store, grace, dry_run=dry_run, progress=progress, expire_reflog=expire
            )
            if report.deleted and not dry_run:
                self.objects.forget()
            return report

    def write_commit_graph(self, *, rebuild: bool = False) -> GraphWriteReport:
        """Cover every commit reachable from a ref in the persisted commit graph.

        Walks (``~n``, ``log``, ``merge_base``, ``is_ancestor``) and lookups by a framework's
        id (a LangGraph ``checkpoint_id``) in any handle then read the graph instead of one
        commit at a time. Written by itself after every :data:`~statevcs.commitgraph.
        AUTO_WRITE_AFTER` commits of a handle (S3: 8) and by :meth:`gc`; ``rebuild=True`` writes it
        from scratch. See docs/commit-graph.md.
        """
        from .commitgraph import write_graph

        _check_bool(rebuild, "rebuild")
        with self._lock:
            return write_graph(self.store, rebuild=rebuild)

    def fsck(self) -> FsckReport:
        """Re-hash every object and check every ref and reachable link; never raises early."""
        from .gc import check_repository

        return check_repository(self.store, self.objects)

    def stats(self) -> StatsReport:
        """Count objects and bytes, and estimate what a full copy per commit would cost."""
        from .gc import measure_repository

        return measure_repository(self.store, self.objects)

    @property
    def storage_format(self) -> int:
        """The storage format new objects are written in (1, or 2 since statevcs 0.2)."""
        return self.objects.format

    def upgrade(self, *, progress: Callable[[int, int], None] | None = None) -> UpgradeReport:
        """Move the repository to storage format 2 in place (crash-safe; see docs/storage.md).

        Every commit whose snapshot is in format 1 (and every commit above one) is written
        again with equal content; every ref then moves in one compare-and-swap, and old commit
        ids keep resolving (to the commit that replaced them). Safe to run again, and to kill:
        either format reads the same history. ``progress(done, total)`` is called per commit.
        Raises ``RefConflict`` (nothing moved) when another process moved a ref meanwhile.
        """
        from .upgrade import upgrade as upgrade_repository

        if progress is not None and not callable(progress):
            raise TypeError("progress must be callable")
        with self._lock:
            report = upgrade_repository(self.objects, progress)
            self._upgrade_map = None
            return report

    def _upgraded(self, low: ObjectId, high: ObjectId) -> list[ObjectId]:
        """Commits that replaced upgraded commits whose old ids lie in [low, high]."""
        from .upgrade import read_upgrade_map

        if self._upgrade_map is None:
            self._upgrade_map = read_upgrade_map(self.objects)
        return [new for old, new in self._upgrade_map.items() if low <= old <= high]


OnConflict = Literal["raise", "merge"]
"""What :meth:`Repo.commit` does when the branch moved past the object's synced commit."""

_MAX_ATTEMPTS = 16


DICT_MEMORY = 256
"""How many plain dicts still in use a repository remembers the sync of, in this process
(dicts nobody else holds any more are forgotten first; objects that can be weakly referenced,
such as a ``statevcs.Snapshot`` or a Strands ``Agent``, are tracked without a limit)."""

_REGISTRY_REFERENCES = 4  # see _unreferenced

_Tracked = dict[int, tuple[weakref.ref[Any], _Sync]]


class _Dicts(OrderedDict[int, tuple[Any, _Sync]]):
    """Plain dicts a repository knows the sync of (held strongly: dicts have no weak refs)."""

    held_after_pruning = 0
    """How many were left the last time the unreferenced ones were forgotten."""


_REGISTRIES: dict[str, tuple[_Tracked, _Dicts]] = {}
_REGISTRIES_LOCK = threading.Lock()


def _registries(store: Store) -> tuple[_Tracked, _Dicts]:
    """What every handle on the store's repository knows of live objects (shared)."""
    key = store.identity
    with _REGISTRIES_LOCK:
        found = _REGISTRIES.get(key)
        if found is None:
            found = _REGISTRIES[key] = ({}, _Dicts())
            if isinstance(store, MemoryStore):
                # A memory repository dies with its store: so does what was known of it.
                weakref.finalize(store, _REGISTRIES.pop, key, None)
        return found


def _remember_dict(dicts: _Dicts, obj: Any, sync: _Sync) -> None:
    """Remember a plain dict's sync; forget first the dicts nobody else holds any more.

    Those are forgotten whenever the registry has doubled since they last were, so a dict the
    program dropped is not kept alive (with every message it holds) by more than as many
    others as are still in use: amortized, one look per remembered dict.
    """
    with _REGISTRIES_LOCK:
        dicts[id(obj)] = (obj, sync)
        dicts.move_to_end(id(obj))
        if len(dicts) <= max(2, 2 * dicts.held_after_pruning) and len(dicts) <= DICT_MEMORY:
            return
        for key in [k for k, (held, _) in dicts.items() if _unreferenced(held)]:
            del dicts[key]
        while len(dicts) > DICT_MEMORY:
            dicts.popitem(last=False)
        dicts.held_after_pruning = len(dicts)


def _unreferenced(obj: Any) -> bool:
    # Held only by the registry's tuple (plus this call's argument and the caller's loop):
    # no program can commit that dict again, so forgetting it loses nothing. On Pythons
    # without reference counts nothing is pruned early.
    counter = getattr(sys, "getrefcount", None)
    return counter is not None and counter(obj) <= _REGISTRY_REFERENCES


def _weakrefable(obj: Any) -> bool:
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    return True


def _check_bool(value: object, argument: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{argument} must be True or False, got {type(value).__name__}")
    return value


def _check_str(value: object, argument: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, got {type(value).__name__}")
    return value


def _check_durability(durability: object) -> None:
    if durability not in ("normal", "full"):
        raise TypeError(f"durability must be 'normal' or 'full', got {durability!r}")


def _location(path: object) -> str:
    """Return a repository location as text (a folder path or a URL the registry knows)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError("path must be a text path, not bytes")
    backend_for(text)  # an unknown scheme is refused before anything is created
    if "\x00" in text:
        raise RepositoryError("a repository location cannot contain a NUL character")
    return text


def _check_storage_format(value: object) -> str:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"storage_format must be an int (1 or 2), got {type(value).__name__}")
    if str(value) not in READABLE_FORMATS:
        raise ValueError(f"storage_format must be 1 or 2, got {value}")
    return str(value)


def _check_format(found: str | None, where: str) -> None:
    if found is None:
        # Repo.init writes the format after the tables, in a later transaction.
        raise RepositoryError(
            f"{where} holds a statevcs repository whose creation has not finished (it records "
            "no format yet): if another process is creating it, try again in a moment; else "
            "its creation was interrupted: remove it and run `statevcs init` again"
        )
    if found not in READABLE_FORMATS:
        raise RepositoryError(
            f"{where} holds a statevcs repository in format {found!r}, but this version "
            f"reads formats {', '.join(READABLE_FORMATS)}; use a newer statevcs version"
        )


def _ref_update(ref: str, new: ObjectId | None, expected: Expected, note: str) -> RefUpdate:
    # The store also logs the move in HEAD's reflog when ``ref`` is the default branch.
    return RefUpdate(ref, new, expected, note)


class _CommitOutcome:
    """Where :meth:`Repo.commit` is; a ``StoreError`` out of it then says whether the commit
    landed (``landed``) and names it (``commit_id``)."""

    def __init__(self) -> None:
        self.ref: str | None = None
        self.commit_id: ObjectId | None = None
        self.phase: Literal["before", "writing", "merging", "written"] = "before"

    def __enter__(self) -> _CommitOutcome:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if not isinstance(exc, StoreError) or self.phase == "merging" or self.ref is None:
            return
        # Before the write nothing was sent; during it the store knows (or says it does not).
        landed = {"before": False, "written": True}.get(self.phase, exc.landed)
        raise _commit_failure(self.ref, self.commit_id, exc, landed) from exc


def _commit_failure(
    ref: str, commit_id: ObjectId | None, exc: StoreError, landed: bool | None
) -> StoreError:
    branch = short_name(ref)
    name = to_hex(commit_id) if commit_id is not None else None
    what = f"commit {name}" if name is not None else "the commit"
    if landed is False:
        text = f"{what} on branch {branch!r} did not land (nothing was written): {exc}"
        text += "; commit again"
    elif landed:
        text = f"{what} landed on branch {branch!r}, but reading it back failed: {exc}"
        text += f"; check {branch!r} out again to continue from it"
    else:
        text = (
            f"whether {what} landed on branch {branch!r} is unknown: {exc}; once the store "
            f"answers again, call repo.has_landed({name!r}, branch={branch!r}) and commit again "
            "only if it returns False"
        )
    # The same class as ``exc`` (ForkedProcessError, RequestFailed, ...), so callers can still
    # tell what failed; built like an unpickled error, since subclasses take other arguments.
    error = type(exc).__new__(type(exc))
    error.args = (text,)
    error.__dict__.update(exc.__dict__)
    error.landed = landed
    error.commit_id = name
    return error


def _stale_writer(ref: str, synced: ObjectId | None, conflict: RefConflict) -> RefConflict:
    branch = short_name(ref)
    seen = to_hex(synced) if synced is not None else conflict.expected
    if conflict.actual is None:
        hint = (
            f"branch {branch!r} was deleted since this object synced with it; nothing was "
            "written: commit with branch='another-name' to keep this state"
        )
    elif synced is None:
        hint = (
            f"branch {branch!r} moved to {conflict.actual[:12]} while this commit (of an object "
            f"this handle never checked out) was written. Nothing was written. Check out "
            f"{branch!r} and redo the change, or commit with on_conflict='merge'"
        )
    else:
        hint = (
            f"branch {branch!r} is at {conflict.actual[:12]}, but this object was last synced "
            f"with {to_hex(synced)[:12]}: another handle or process committed since. Nothing "
            f"was written. Check out {branch!r} again and redo the change, or commit with "
            "on_conflict='merge'"
        )
    return RefConflict(ref, seen, conflict.actual, hint)


def _check_serializer(serializer: object) -> None:
    if serializer is None:
        return
    if not isinstance(serializer, StateSerializer):
        raise TypeError(f"serializer must be a StateSerializer, got {type(serializer).__name__}")
    check_codec_name(serializer)


def _other_branches_hint(repo: Repo) -> str:
    others = repo.branches()
    if not others:
        return ""
    return "; branches with commits: " + ", ".join(sorted(others))


def _doc_roundtrip(value: Any) -> Any:
    data = encode_doc(value)
    doc = decode(hash_bytes(data), data, check_hash=False)
    assert isinstance(doc, Doc)
    return doc.value


def _as_stored(snapshot: Snapshot, serializer: StateSerializer, skip: frozenset[str]) -> Snapshot:
    """Return ``snapshot`` as it reads back from storage (for comparing it in a merge)."""
    state = {
        key: serializer.deserialize(serializer.serialize(value, key), key)
        for key, value in snapshot.state.items()
        if key not in skip
    }
    from .model import Snapshot

    return Snapshot.model_construct(
        kind=snapshot.kind,
        messages=[_doc_roundtrip(m) for m in snapshot.messages],
        state=state,
        extras={str(k): _doc_roundtrip(v) for k, v in snapshot.extras.items()},
    )


@dataclass(frozen=True, slots=True)
class _CommitFields:
    """A commit's checked message, author, timestamp and metadata, ready to encode."""

    db: ObjectDB
    message: str
    author: str
    timestamp_us: int
    metadata: dict[str, Any]

    @classmethod
    def check(
        cls,
        repo: Repo,
        message: object,
        author: object,
        timestamp: object,
        metadata: object,
    ) -> _CommitFields:
        return cls(
            repo.objects,
            check_text(message, "message"),
            repo.author if author is None else check_text(author, "author"),
            timestamp_us(datetime.now(UTC) if timestamp is None else timestamp),
            canonical_metadata(metadata),
        )

    def encode(self, snapshot_id: ObjectId, parents: Sequence[ObjectId]) -> tuple[ObjectId, bytes]:
        commit_object = CommitObject(
            snapshot=snapshot_id,
            parents=tuple(parents),
            author=self.author,
            timestamp_us=self.timestamp_us,
            message=self.message,
            metadata=self.metadata,
        )
        commit_id, encoded = encode_with_id(commit_object)
        self.db.remember(commit_id, commit_object)
        return commit_id, encoded

    def reflog_note(self, parents: Sequence[ObjectId]) -> str:
        first_line = self.message.splitlines()[0] if self.message else ""
        return f"commit{' (initial)' if not parents else ''}: {first_line}"

    def for_merge(self, ref: str, theirs: ObjectId, ours: ObjectId) -> _CommitFields:
        info = {"source": to_hex(ours), "target": to_hex(theirs), "on_conflict": "merge"}
        return _CommitFields(
            self.db,
            f"Merge {to_hex(ours)[:12]} into {short_name(ref)}",
            self.author,
            self.timestamp_us,
            canonical_metadata({"merge": info}),
        )


def _check_limit(limit: object) -> None:
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise TypeError(f"limit must be an int or None, got {type(limit).__name__}")


def _branch_named(context: _Context, rev: str) -> str | None:
    """Return the full ref if ``rev`` is exactly an existing branch's name.

    Read with every ref ``rev`` could mean in one store read, so resolving ``rev`` next finds
    them read (one query instead of two for a checkout of a commit id or a branch).
    """
    try:
        # No branch has an invalid name; resolving ``rev`` says what is wrong with it (a store
        # handed a lone surrogate would fail with a UnicodeEncodeError instead).
        candidate = check_ref_name(rev) if rev.startswith(BRANCH_PREFIX) else branch_ref(rev)
    except StateVCSError:
        return None
    # As ``git checkout name``: an existing branch wins even over a tag of the same name.
    found = context.ref_values(list(dict.fromkeys([*ref_candidates(rev), candidate])))
    return candidate if candidate in found else None


class _Context:
    """Adapts a :class:`Repo` to :class:`~statevcs.revisions.RevisionContext`."""

    def __init__(self, repo: Repo, *, head: str | None = None) -> None:
        self.repo = repo
        self.head = head  # a live object's own branch, standing in for the handle's HEAD
        self._graph: CommitGraph | None = None  # read on the first ~n or ^n
        # Refs read so far (None: absent). A context lives inside one store operation, one
        # consistent read of the refs, so a name is never read twice.
        self._refs: dict[str, ObjectId | None] = {}

    def ref_value(self, full_name: str) -> ObjectId | None:
        if full_name == HEAD:
            if self.head is not None:
                return self.ref_value(self.head)
            head_ref = self.repo._head_ref
            return self.repo._head_commit if head_ref is None else self.ref_value(head_ref)
        if full_name not in self._refs:
            self._refs[full_name] = self.repo.store.get_ref(full_name)
        return self._refs[full_name]

    def ref_values(self, full_names: Sequence[str]) -> dict[str, ObjectId]:
        known = self._refs
        unread = [name for name in full_names if name != HEAD and name not in known]
        if unread:
            found = self.repo.store.get_refs(unread)
            for name in unread:
                known[name] = found.get(name)
        values = {name: known[name] for name in full_names if name != HEAD}
        if HEAD in full_names:
            values[HEAD] = self.ref_value(HEAD)
        return {name: value for name, value in values.items() if value is not None}

    def head_target(self) -> str | None:
        return self.head if self.head is not None else self.repo._head_ref

    def reflog_values(self, full_name: str) -> list[ObjectId | None]:
        entries = self.repo.store.reflog(full_name)
        current = self.ref_value(full_name)
        if not entries or current is None:
            return [e.new for e in entries]
        # Index 0 is the current value, index k the value before the k-th newest logged move.
        # Git logs every move, so there these are its values; a move made without a reflog
        # entry (RefUpdate(log=False)) only leaves no index of its own.
        return [current, *(e.old for e in entries[:-1])]

    def commits_with_prefix(self, low: ObjectId, high: ObjectId) -> list[ObjectId]:
        damaged: CorruptObject | None = None
        if low == high:  # a full id: read it, no range scan (the usual case, a logged id)
            # From the store, never from the handle's caches: another handle's gc may have
            # collected it since (an upgraded id then stands for its replacement), and a
            # commit whose write failed is cached but not stored.
            store = self.repo.store
            data = store.get_many([low]).get(low)
            try:
                obj = None if data is None else decode_stored(store, low, data)
            except CorruptObject as exc:
                damaged = exc  # said below, unless an upgraded id stands for a commit
            else:
                if isinstance(obj, CommitObject):
                    self.repo.objects.remember(low, obj)  # what resolves it reads it next
                    self.repo.objects.mark_stored([low])
                    return [low]
            # Absent or not a commit: an upgraded id may still stand for one.
        start = low
        found: list[ObjectId] = []
        page = 256
        while len(found) < 2:  # two commits already make the prefix ambiguous
            batch = self.repo.store.ids_in_range(low, high, limit=page)
            for object_id in batch:
                try:
                    if isinstance(self.repo.objects.load(object_id), CommitObject):
                        found.append(object_id)
                except StateVCSError:
                    continue
            if len(batch) < page:
                break
            low = (int.from_bytes(batch[-1], "big") + 1).to_bytes(len(batch[-1]), "big")
        if not found:
            # An id from before `statevcs upgrade` whose commit gc has since removed.
            found = [i for i in self.repo._upgraded(start, high) if self.repo.store.has_many([i])]
        if not found and damaged is not None:
            # The object is there but damaged: say so, not that no commit has the id.
            raise UnknownRevision(f"cannot read {to_hex(low)}: {damaged}") from damaged
        return found

    def parents(self, commit_id: ObjectId) -> tuple[ObjectId, ...]:
        try:
            if self._graph is None:
                self._graph = CommitGraph(self.repo.objects)
            return self._graph.parents(commit_id)
        except (MissingObject, CorruptObject) as exc:
            raise UnknownRevision(
                f"cannot walk history from {to_hex(commit_id)[:12]}: {exc}"
            ) from exc


__all__ = ["Commit", "FsckReport", "GCReport", "ReflogEntry", "Repo", "StatsReport"]
