"""The repository porcelain: commit, checkout, branch, tag, log, diff, reset, gc, fsck, stats."""

from __future__ import annotations

import heapq
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .adapters import acting_for, adapter_for, transient_keys
from .diff import SnapshotDiff, diff_snapshots
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
    StateVCSError,
    UnknownRevision,
)
from .gc import (
    FsckReport,
    GCReport,
    RepoStats,
    check_repository,
    collect_garbage,
    measure_repository,
)
from .hashing import ObjectId, from_hex, to_hex
from .objectdb import ObjectDB
from .objects import (
    CommitObject,
    encode_with_id,
)
from .refs import (
    BRANCH_PREFIX,
    DEFAULT_BRANCH,
    HEAD,
    TAG_PREFIX,
    branch_ref,
    check_ref_name,
    short_name,
    tag_ref,
)
from .revisions import resolve_revision
from .serializers import JSONSerializer, StateSerializer
from .snapshot import (
    MessageBase,
    Snapshot,
    StoredMessages,
    WrittenSnapshot,
    load_snapshot_object,
    read_snapshot,
    write_snapshot,
)
from .stores.base import ANY, Expected, RefUpdate, Store
from .stores.memory import MemoryStore
from .stores.sqlite import DB_FILENAME, SQLiteStore

if TYPE_CHECKING:
    from .git import ExportReport, ImportReport

DEFAULT_AUTHOR = "statevcs <statevcs@localhost>"
MEMORY_URL = "memory://"
REPOSITORY_FORMAT = "1"


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
class ReflogRecord:
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


def _utc(timestamp_us: int) -> datetime:
    return datetime.fromtimestamp(timestamp_us / 1_000_000, tz=timezone.utc)


def _to_us(moment: datetime) -> int:
    if moment.tzinfo is None:
        raise StateVCSError(
            "commit timestamps must be timezone-aware; pass datetime.now(timezone.utc)"
        )
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _commit_from(object_id: ObjectId, obj: CommitObject) -> Commit:
    return Commit(
        id=to_hex(object_id),
        parents=tuple(to_hex(p) for p in obj.parents),
        snapshot_id=to_hex(obj.snapshot),
        message=obj.message,
        author=obj.author,
        timestamp=_utc(obj.timestamp_us),
        metadata=dict(obj.metadata),
    )


class Repo:
    """A versioned store of agent snapshots with git's commands.

    Open one with :meth:`init` or :meth:`open`; use it as a context manager to close it.
    """

    def __init__(
        self,
        store: Store,
        *,
        serializer: StateSerializer | None = None,
        author: str | None = None,
        path: Path | None = None,
    ) -> None:
        self.store = store
        self.path = path
        self.serializer: StateSerializer = serializer or JSONSerializer()
        self.author = author or os.environ.get("STATEVCS_AUTHOR") or DEFAULT_AUTHOR
        self.db = ObjectDB(store)
        self._lock = threading.RLock()
        self._tracked: dict[int, tuple[weakref.ref[Any], _Sync]] = {}
        self._head_sync: _Sync | None = None
        self._heads: dict[str, ObjectId | None] = {}  # branch heads this Repo last wrote

    # --- opening ------------------------------------------------------------

    @classmethod
    def init(
        cls,
        path: str | os.PathLike[str] = MEMORY_URL,
        *,
        serializer: StateSerializer | None = None,
        author: str | None = None,
        default_branch: str = DEFAULT_BRANCH,
    ) -> Repo:
        """Create a repository (a folder holding one SQLite file, or ``memory://``)."""
        ref = branch_ref(default_branch)
        if str(path) == MEMORY_URL:
            repo = cls(MemoryStore(), serializer=serializer, author=author)
        else:
            folder = Path(path)
            if (folder / DB_FILENAME).exists():
                raise RepositoryExists(
                    f"a statevcs repository already exists at {folder}; "
                    "open it with statevcs.Repo.open(path)"
                )
            if folder.exists() and not folder.is_dir():
                raise RepositoryError(f"{folder} exists and is not a folder; choose another path")
            folder.mkdir(parents=True, exist_ok=True)
            repo = cls(
                SQLiteStore(folder / DB_FILENAME), serializer=serializer, author=author, path=folder
            )
        repo.store.set_symbolic(HEAD, ref)
        repo.store.config_set("core.format", REPOSITORY_FORMAT)
        return repo

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        serializer: StateSerializer | None = None,
        author: str | None = None,
    ) -> Repo:
        """Open an existing repository: a folder path (SQLite) or ``memory://`` (a new one)."""
        text = str(path)
        if text == MEMORY_URL:
            return cls.init(MEMORY_URL, serializer=serializer, author=author)
        if "://" in text:
            raise RepositoryError(
                f"unsupported repository URL {text!r}; this release supports folder paths "
                "(SQLite) and memory://"
            )
        folder = Path(path)
        if folder.is_file() and folder.name == DB_FILENAME:
            folder = folder.parent
        if not (folder / DB_FILENAME).is_file():
            raise RepositoryNotFound(
                f"no statevcs repository at {folder}; create one with statevcs.Repo.init({text!r}) "
                "or `statevcs init`"
            )
        store = SQLiteStore(folder / DB_FILENAME)
        found = store.config_get("core.format")
        if found != REPOSITORY_FORMAT:
            store.close()
            raise RepositoryError(
                f"{folder} holds a statevcs repository in format {found!r}, but this version "
                f"reads format {REPOSITORY_FORMAT!r}; use a matching statevcs version"
            )
        return cls(store, serializer=serializer, author=author, path=folder)

    @property
    def url(self) -> str:
        """Where the repository lives (a folder path or ``memory://``)."""
        return str(self.path) if self.path is not None else self.store.url

    def close(self) -> None:
        """Close the underlying store."""
        self.store.close()

    def __enter__(self) -> Repo:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Repo({self.url!r})"

    # --- live-object tracking ---------------------------------------------------

    def _sync_of(self, obj: Any) -> _Sync | None:
        entry = self._tracked.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return None

    def _weakrefable(self, obj: Any) -> bool:
        try:
            weakref.ref(obj)
        except TypeError:
            return False
        return True

    def _set_sync(self, obj: Any, sync: _Sync) -> None:
        if not self._weakrefable(obj):
            self._head_sync = sync
            return
        key = id(obj)

        def forget(_ref: object, key: int = key) -> None:
            self._tracked.pop(key, None)

        self._tracked[key] = (weakref.ref(obj, forget), sync)

    def attached_branch(self, obj: Any) -> str | None:
        """Return the branch ``obj`` commits to (``None`` when it is detached)."""
        sync = self._sync_of(obj)
        if sync is not None:
            return short_name(sync.branch) if sync.branch else None
        return self.head_branch

    def attach(self, obj: Any, branch: str) -> None:
        """Make ``obj``'s next commit land on ``branch`` (which may not exist yet), no restore."""
        ref = branch_ref(branch)
        if self._weakrefable(obj):
            old = self._sync_of(obj)
            self._set_sync(obj, _Sync(ref, old.commit if old else None))
        else:
            self.store.set_symbolic(HEAD, ref)

    @property
    def head_branch(self) -> str | None:
        """The branch the repository's ``HEAD`` is on, or ``None`` if detached."""
        target = self.store.get_symbolic(HEAD)
        return short_name(target) if target else None

    # --- commit and checkout -------------------------------------------------

    def _target(
        self, obj: Any, branch: str | None, head: str | None
    ) -> tuple[str, ObjectId | None]:
        """Return (full branch ref, the commit the object was last synced to)."""
        weak = self._weakrefable(obj)
        sync = self._sync_of(obj) if weak else None
        synced = sync.commit if sync else None
        if not weak and self._head_sync is not None:
            synced = self._head_sync.commit
        if branch is not None:
            return branch_ref(branch), synced
        if sync is not None:
            if sync.branch is None:
                raise DetachedHead(
                    f"this object was checked out at {to_hex(sync.commit or b'')[:12]} (detached); "
                    "pass branch='name' to commit, or create a branch with repo.branch(...) and "
                    "check it out"
                )
            return sync.branch, synced
        target = head
        if target is None:
            detached = self.store.get_ref(HEAD)
            raise DetachedHead(
                f"HEAD is detached at {to_hex(detached or b'')[:12]}; pass branch='name' to "
                "commit, or check out a branch first"
            )
        return target, synced

    def _stored_messages(self, obj: Any) -> StoredMessages | None:
        sync = self._sync_of(obj) if self._weakrefable(obj) else self._head_sync
        return sync.messages if sync is not None else None

    def _message_base(self, obj: Any, adapter: Any, snapshot: Snapshot) -> MessageBase | None:
        previous = self._stored_messages(obj)
        hint = getattr(adapter, "unchanged_prefix", None)
        if previous is None or not callable(hint):
            return None
        keep = hint(obj)
        if keep is None:
            return None
        return MessageBase(previous, min(int(keep), previous.length, len(snapshot.messages)))

    def commit(
        self,
        obj: Any,
        message: str = "",
        *,
        metadata: Mapping[str, Any] | None = None,
        author: str | None = None,
        branch: str | None = None,
        timestamp: datetime | None = None,
    ) -> Commit:
        """Commit the live object's current state to its branch; return the new commit.

        New objects are written first and the branch moves with one compare-and-swap, so a
        failure (a value the serializer rejects, a crash, a concurrent writer) leaves the branch
        where it was.
        """
        adapter = adapter_for(obj)
        with self._lock, acting_for(self):
            snapshot = adapter.capture(obj)
            head = self.store.get_symbolic(HEAD)
            ref, synced = self._target(obj, branch, head)
            written = self._write(obj, adapter, snapshot)
            # The branch head this process last saw is usually still current; if another
            # writer moved it, the compare-and-swap says so and we re-read and retry once.
            parent = self._heads[ref] if ref in self._heads else self.store.get_ref(ref)
            for attempt in (1, 2):
                parents = (parent,) if parent is not None else ((synced,) if synced else ())
                try:
                    commit_id = self._commit_objects(
                        written.snapshot_id,
                        parents,
                        written.objects,
                        message,
                        author=author,
                        timestamp=timestamp,
                        metadata=metadata,
                        ref=ref,
                        expected=parent,
                        head=head,
                    )
                    break
                except RefConflict:
                    self._heads.pop(ref, None)
                    if attempt == 2:
                        raise
                    parent = self.store.get_ref(ref)
            self._heads[ref] = commit_id
            sync = _Sync(ref, commit_id, written.messages)
            self._after_commit(obj, ref, sync, head)
            marker = getattr(adapter, "mark_synced", None)
            if callable(marker):
                marker(obj)
            return _commit_from(commit_id, self._load_commit(commit_id))

    def _write(self, obj: Any, adapter: Any, snapshot: Snapshot) -> WrittenSnapshot:
        # With an adapter's hint only new messages are encoded; without one everything is
        # encoded and then spliced onto the last conversation this object synced with, so the
        # tree work stays O(changed + log n) either way.
        return write_snapshot(
            self.db,
            snapshot,
            self.serializer,
            base=self._message_base(obj, adapter, snapshot),
            previous=self._stored_messages(obj),
            exclude_state=transient_keys(obj),
        )

    def _after_commit(self, obj: Any, ref: str, sync: _Sync, head: str | None) -> None:
        # The object now follows the branch it committed to (``branch=`` re-attaches it).
        if self._weakrefable(obj):
            self._set_sync(obj, sync)
        else:
            self._head_sync = sync
            if head != ref:
                self.store.set_symbolic(HEAD, ref)

    def _commit_objects(
        self,
        snapshot_id: ObjectId,
        parents: Sequence[ObjectId],
        objects: dict[ObjectId, bytes],
        message: str,
        *,
        author: str | None,
        timestamp: datetime | None,
        metadata: Mapping[str, Any] | None,
        ref: str | None,
        expected: Expected = ANY,
        reflog_message: str | None = None,
        head: str | object | None = ANY,
    ) -> ObjectId:
        moment = timestamp or datetime.now(timezone.utc)
        commit_object = CommitObject(
            snapshot=snapshot_id,
            parents=tuple(parents),
            author=author or self.author,
            timestamp_us=_to_us(moment),
            message=message,
            metadata=_check_metadata(metadata),
        )
        commit_id, encoded = encode_with_id(commit_object)
        self.db.remember(commit_id, commit_object)
        pending = self.db.unknown(objects)
        pending[commit_id] = encoded
        if ref is None:
            self.store.put_many(pending)
        else:
            if head is ANY:
                head = self.store.get_symbolic(HEAD)
            log_also = [HEAD] if head == ref else []
            first_line = message.splitlines()[0] if message else ""
            note = reflog_message or (f"commit{' (initial)' if not parents else ''}: {first_line}")
            self.store.update_refs([RefUpdate(ref, commit_id, expected, note, log_also)], pending)
        self.db.mark_stored(pending)
        return commit_id

    def checkout(self, obj: Any, rev: str) -> Commit:
        """Restore the revision into the live object; a branch name attaches it to that branch."""
        adapter = adapter_for(obj)
        with self._lock, acting_for(self):
            branch = self._branch_named(rev)
            commit_id = self._resolve(rev)
            commit_object = self._load_commit(commit_id)
            read = read_snapshot(self.db, commit_object.snapshot, self.serializer)
            adapter.restore(obj, read.snapshot)
            sync = _Sync(branch, commit_id, read.messages)
            if self._weakrefable(obj):
                self._set_sync(obj, sync)
            else:
                self._head_sync = sync
                self._move_head(branch, commit_id, rev)
            marker = getattr(adapter, "mark_synced", None)
            if callable(marker):
                marker(obj)
            return _commit_from(commit_id, commit_object)

    def _move_head(self, branch: str | None, commit_id: ObjectId, rev: str) -> None:
        current = self.store.get_symbolic(HEAD)
        before = short_name(current) if current else to_hex(self.store.get_ref(HEAD) or b"")[:12]
        if branch is not None:
            self.store.set_symbolic(
                HEAD, branch, message=f"checkout: moving from {before} to {rev}"
            )
        else:
            self.store.set_ref(HEAD, commit_id, message=f"checkout: moving from {before} to {rev}")

    def _branch_named(self, rev: str) -> str | None:
        """Return the full branch ref if ``rev`` is exactly an existing branch's name."""
        if rev.startswith(BRANCH_PREFIX):
            candidate = rev
        else:
            try:
                candidate = branch_ref(rev)
            except StateVCSError:
                return None
        if self.store.get_ref(candidate) is None:
            return None
        if not rev.startswith(BRANCH_PREFIX) and self.store.get_ref(TAG_PREFIX + rev) is not None:
            return None  # ambiguous: let resolve() raise AmbiguousRevision
        return candidate

    # --- reading ------------------------------------------------------------------

    def _load_commit(self, commit_id: ObjectId) -> CommitObject:
        obj = self.db.load(commit_id)
        if not isinstance(obj, CommitObject):
            raise CorruptObject(to_hex(commit_id), f"expected a commit, found {type(obj).__name__}")
        return obj

    def _resolve(self, rev: str) -> ObjectId:
        if not isinstance(rev, str):
            raise InvalidRevision(f"a revision must be a string, got {type(rev).__name__}")
        return resolve_revision(_Context(self), rev)

    def resolve(self, rev: str) -> str:
        """Return the full hex id of the commit ``rev`` names."""
        return to_hex(self._resolve(rev))

    def get_commit(self, rev: str) -> Commit:
        """Return the commit ``rev`` names (a revision or a full id)."""
        commit_id = self._resolve(rev)
        return _commit_from(commit_id, self._load_commit(commit_id))

    def show(self, rev: str = HEAD) -> Snapshot:
        """Return the snapshot stored at ``rev``."""
        commit_object = self._load_commit(self._resolve(rev))
        return read_snapshot(self.db, commit_object.snapshot, self.serializer).snapshot

    def log(
        self, rev: str = HEAD, *, limit: int | None = None, all_parents: bool = False
    ) -> Iterator[Commit]:
        """Yield commits newest first: first parents only unless ``all_parents=True``."""
        if rev == HEAD and self._head_value() is None:
            return
        start = self._resolve(rev)
        yield from self._walk([start], limit=limit, all_parents=all_parents)

    def log_all(self, *, limit: int | None = None) -> Iterator[Commit]:
        """Yield every commit reachable from any branch or tag, newest first."""
        starts = list(set(self.store.list_refs("refs/").values()))
        head = self._head_value()
        if head is not None:
            starts.append(head)
        yield from self._walk(starts, limit=limit, all_parents=True)

    def _walk(
        self, starts: Sequence[ObjectId], *, limit: int | None, all_parents: bool
    ) -> Iterator[Commit]:
        seen: set[ObjectId] = set()
        queue: list[tuple[int, int, ObjectId, CommitObject]] = []
        order = 0
        for start in starts:
            if start in seen:
                continue
            seen.add(start)
            obj = self._load_commit(start)
            heapq.heappush(queue, (-obj.timestamp_us, order, start, obj))
            order += 1
        emitted = 0
        while queue and (limit is None or emitted < limit):
            _, _, commit_id, obj = heapq.heappop(queue)
            yield _commit_from(commit_id, obj)
            emitted += 1
            parents = obj.parents if all_parents else obj.parents[:1]
            for parent in parents:
                if parent not in seen:
                    seen.add(parent)
                    parent_obj = self._load_commit(parent)
                    heapq.heappush(queue, (-parent_obj.timestamp_us, order, parent, parent_obj))
                    order += 1

    def _head_value(self) -> ObjectId | None:
        target = self.store.get_symbolic(HEAD)
        return self.store.get_ref(target) if target else self.store.get_ref(HEAD)

    # --- refs -------------------------------------------------------------------

    def branch(self, name: str, start: str = HEAD, *, force: bool = False) -> Commit:
        """Create branch ``name`` at ``start`` (``force=True`` moves an existing one)."""
        ref = branch_ref(name)
        commit_id = self._resolve(start)
        current = self.store.get_ref(ref)
        if current is not None and not force:
            raise RefExists(
                f"branch {name!r} already exists at {to_hex(current)[:12]}; pass force=True to "
                "move it or pick another name"
            )
        self.store.set_ref(
            ref, commit_id, expected=current, message=f"branch: created from {start}"
        )
        self._heads.clear()
        return _commit_from(commit_id, self._load_commit(commit_id))

    def branches(self) -> dict[str, str]:
        """Return ``{branch name: commit id}``."""
        return {short_name(k): to_hex(v) for k, v in self.store.list_refs(BRANCH_PREFIX).items()}

    def delete_branch(self, name: str) -> None:
        """Delete branch ``name`` (not the branch ``HEAD`` is on)."""
        ref = branch_ref(name)
        current = self.store.get_ref(ref)
        if current is None:
            raise RefNotFound(f"no branch named {name!r}; list branches with repo.branches()")
        if self.store.get_symbolic(HEAD) == ref:
            raise RepositoryError(
                f"cannot delete branch {name!r}: HEAD is on it; check out another branch first"
            )
        self.store.set_ref(ref, None, expected=current, message="branch: deleted")
        self._heads.clear()
        self.store.delete_reflog(ref)

    def tag(self, name: str, rev: str = HEAD, *, force: bool = False) -> Commit:
        """Create tag ``name`` at ``rev``."""
        ref = tag_ref(name)
        commit_id = self._resolve(rev)
        current = self.store.get_ref(ref)
        if current is not None and not force:
            raise RefExists(f"tag {name!r} already exists; pass force=True to move it")
        self.store.set_ref(ref, commit_id, expected=current, message=f"tag: {rev}")
        return _commit_from(commit_id, self._load_commit(commit_id))

    def tags(self) -> dict[str, str]:
        """Return ``{tag name: commit id}``."""
        return {short_name(k): to_hex(v) for k, v in self.store.list_refs(TAG_PREFIX).items()}

    def delete_tag(self, name: str) -> None:
        """Delete tag ``name``."""
        ref = tag_ref(name)
        current = self.store.get_ref(ref)
        if current is None:
            raise RefNotFound(f"no tag named {name!r}; list tags with repo.tags()")
        self.store.set_ref(ref, None, expected=current, message="tag: deleted")
        self.store.delete_reflog(ref)

    def reset(self, branch: str, rev: str) -> Commit:
        """Move ``branch`` to ``rev`` (history after it stays reachable through the reflog)."""
        ref = branch_ref(branch)
        current = self.store.get_ref(ref)
        if current is None:
            raise RefNotFound(f"no branch named {branch!r}; create it with repo.branch(...)")
        commit_id = self._resolve(rev)
        log_also = [HEAD] if self.store.get_symbolic(HEAD) == ref else []
        self.store.set_ref(
            ref, commit_id, expected=current, message=f"reset: moving to {rev}", log_also=log_also
        )
        self._heads.clear()
        return _commit_from(commit_id, self._load_commit(commit_id))

    def refs(self) -> dict[str, str]:
        """Return every ref: ``{"refs/heads/main": commit id, ...}``."""
        return {k: to_hex(v) for k, v in self.store.list_refs("refs/").items()}

    def set_ref(
        self,
        name: str,
        commit_id: str,
        *,
        expected: str | object | None = ANY,
        reflog_message: str = "",
    ) -> None:
        """Point full ref ``name`` at ``commit_id`` with compare-and-swap against ``expected``."""
        if not name.startswith("refs/"):
            raise RepositoryError(f"set_ref needs a full ref name such as refs/heads/{name}")
        check_ref_name(name)
        target = from_hex(commit_id)
        self._load_commit(target)
        want: Expected = (
            ANY if expected is ANY else (from_hex(expected) if isinstance(expected, str) else None)
        )
        log_also = [HEAD] if self.store.get_symbolic(HEAD) == name else []
        self.store.set_ref(name, target, expected=want, message=reflog_message, log_also=log_also)
        self._heads.clear()

    def reflog(self, ref: str = HEAD) -> list[ReflogRecord]:
        """Return how ``ref`` (``HEAD``, a branch or a tag name) moved, newest first."""
        full = ref
        if ref != HEAD and not ref.startswith("refs/"):
            full = branch_ref(ref)
            if (
                self.store.get_ref(full) is None
                and self.store.get_ref(TAG_PREFIX + ref) is not None
            ):
                full = TAG_PREFIX + ref
        return [
            ReflogRecord(
                to_hex(e.old) if e.old else None,
                to_hex(e.new) if e.new else None,
                datetime.fromtimestamp(e.timestamp, tz=timezone.utc),
                e.message,
            )
            for e in self.store.reflog(full)
        ]

    # --- low-level building blocks (git mirror, merges, imports) --------------------

    def write_snapshot(self, snapshot: Snapshot, *, state_codec: str | None = None) -> str:
        """Store a snapshot's objects (no commit, no ref) and return its id."""
        serializer = self.serializer
        if state_codec is not None and state_codec != serializer.name:
            from .serializers import serializer_for

            serializer = serializer_for(state_codec, serializer)
        written = write_snapshot(self.db, snapshot, serializer)
        pending = self.db.unknown(written.objects)
        self.store.put_many(pending)
        self.db.mark_stored(pending)
        return to_hex(written.snapshot_id)

    def read_snapshot(self, snapshot_id: str) -> Snapshot:
        """Read the snapshot with id ``snapshot_id``."""
        return read_snapshot(self.db, from_hex(snapshot_id), self.serializer).snapshot

    def snapshot_codec(self, snapshot_id: str) -> str:
        """Return the name of the serializer a snapshot's state was written with."""
        return load_snapshot_object(self.db, from_hex(snapshot_id)).state_codec

    def write_commit(
        self,
        snapshot_id: str,
        parents: Sequence[str],
        message: str = "",
        *,
        author: str | None = None,
        timestamp: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Commit:
        """Store a commit object for an existing snapshot (no ref moves)."""
        snap = from_hex(snapshot_id)
        load_snapshot_object(self.db, snap)
        parent_ids = [from_hex(p) for p in parents]
        for parent in parent_ids:
            self._load_commit(parent)
        commit_id = self._commit_objects(
            snap,
            parent_ids,
            {},
            message,
            author=author,
            timestamp=timestamp,
            metadata=metadata,
            ref=None,
        )
        return _commit_from(commit_id, self._load_commit(commit_id))

    def config_get(self, key: str) -> str | None:
        """Return a repository config value."""
        return self.store.config_get(key)

    def config_set(self, key: str, value: str | None) -> None:
        """Set (``None`` deletes) a repository config value."""
        self.store.config_set(key, value)

    # --- diff, merge, mirror ----------------------------------------------------

    def diff(self, a: str, b: str) -> SnapshotDiff:
        """Compare the snapshots at revisions ``a`` and ``b`` structurally."""
        old = self._load_commit(self._resolve(a))
        new = self._load_commit(self._resolve(b))
        return diff_snapshots(
            self.db, old.snapshot, new.snapshot, self.serializer, old_label=a, new_label=b
        )

    def merge_base(self, a: str, b: str) -> str | None:
        """Return the best common ancestor of two revisions, or ``None``."""
        from .merge import merge_base

        return merge_base(self, a, b)

    def merge(
        self,
        target_branch: str,
        source_rev: str,
        *,
        strategy: Literal["ours", "theirs"] | Callable[[str, Any, Any, Any], Any] | None = None,
        message: str | None = None,
        author: str | None = None,
        fallback: Literal["ours", "theirs"] | None = None,
        fast_forward: bool = True,
        timestamp: datetime | None = None,
    ) -> Commit:
        """Merge ``source_rev`` into ``target_branch`` (three-way on state keys).

        See :func:`statevcs.merge.merge` for the rules; a ``MergeConflict`` writes nothing.
        """
        from .merge import merge

        return merge(
            self,
            target_branch,
            source_rev,
            strategy=strategy,
            message=message,
            author=author,
            fallback=fallback,
            fast_forward=fast_forward,
            timestamp=timestamp,
        )

    def export_git(
        self,
        target: str | os.PathLike[str],
        *,
        branch: str | None = None,
        push: str | None = None,
        force: bool = False,
    ) -> ExportReport:
        """Mirror history into a git repository at ``target`` (optionally push it)."""
        from .git import export_git

        return export_git(self, target, branch=branch, push=push, force=force)

    def import_git(self, source: str | os.PathLike[str]) -> ImportReport:
        """Read a git mirror written by :meth:`export_git` back into this repository."""
        from .git import import_git

        return import_git(self, source)

    # --- maintenance ----------------------------------------------------------------

    def gc(
        self,
        grace: timedelta = timedelta(weeks=2),
        *,
        dry_run: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> GCReport:
        """Delete objects unreachable from every ref and reflog, older than ``grace``.

        ``progress(phase, done, total)`` is called while marking and while sweeping.
        """
        with self._lock:
            report = collect_garbage(self.store, grace, dry_run=dry_run, progress=progress)
            if report.deleted and not dry_run:
                self.db.forget()
            return report

    def fsck(self) -> FsckReport:
        """Re-hash every object and check every ref and reachable link; never raises early."""
        return check_repository(self.store, self.db)

    def stats(self) -> RepoStats:
        """Count objects and bytes, and estimate what a full copy per commit would cost."""
        return measure_repository(self.store, self.db)


def _check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise StateVCSError("commit metadata must be a dict of JSON-compatible values")
    import json

    try:
        json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError) as exc:
        from .errors import SerializationError

        raise SerializationError(
            f"commit metadata must be JSON-compatible ({exc}); convert values to str/int/float/"
            "bool/list/dict",
            "metadata",
        ) from None
    return dict(metadata)


class _Context:
    """Adapts a :class:`Repo` to :class:`~statevcs.revisions.RevisionContext`."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo

    def ref_value(self, full_name: str) -> ObjectId | None:
        if full_name == HEAD:
            return self.repo._head_value()
        return self.repo.store.get_ref(full_name)

    def head_target(self) -> str | None:
        return self.repo.store.get_symbolic(HEAD)

    def reflog_values(self, full_name: str) -> list[ObjectId | None]:
        return [e.new for e in self.repo.store.reflog(full_name)]

    def commits_with_prefix(self, low: ObjectId, high: ObjectId) -> list[ObjectId]:
        found: list[ObjectId] = []
        page = 256
        while len(found) < 2:  # two commits already make the prefix ambiguous
            batch = self.repo.store.ids_in_range(low, high, limit=page)
            for object_id in batch:
                try:
                    if isinstance(self.repo.db.load(object_id), CommitObject):
                        found.append(object_id)
                except StateVCSError:
                    continue
            if len(batch) < page:
                break
            low = (int.from_bytes(batch[-1], "big") + 1).to_bytes(len(batch[-1]), "big")
        return found

    def parents(self, commit_id: ObjectId) -> tuple[ObjectId, ...]:
        try:
            return self.repo._load_commit(commit_id).parents
        except (MissingObject, CorruptObject) as exc:
            raise UnknownRevision(
                f"cannot walk history from {to_hex(commit_id)[:12]}: {exc}"
            ) from exc


__all__ = ["Commit", "FsckReport", "GCReport", "ReflogRecord", "Repo", "RepoStats"]
