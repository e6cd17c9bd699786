"""``StateVCSSaver``: a LangGraph checkpointer whose threads are statevcs branches."""

from __future__ import annotations

import asyncio
import builtins
import heapq
import os
import threading
import uuid
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ...errors import (
    CorruptObject,
    MissingObject,
    RefConflict,
    RepositoryNotFound,
    StaleCache,
)
from ...hashing import ObjectId, to_hex
from ...objects import CommitObject, Doc
from ...refs import MAX_REF_NAME_LENGTH
from ...repo import MEMORY_URL, Repo
from ...serializers import serializer_for
from ...snapshot import MessageBase, Snapshot, message_ids_from, read_values
from ...stores.base import RefUpdate
from ...structures.maps import read_map
from ..stored import paused_gc
from . import order, readahead, rewrite, store
from .codec import (
    EMPTY_PRINT,
    Fingerprinter,
    ListPrint,
    fresh_copy,
    is_plain,
    item_channel,
    item_value,
    safe_serializer,
    unwrap,
    wrap_writes,
)
from .errors import InvalidCheckpointConfig, LangGraphError, ThreadExists
from .names import (
    BRANCH_ROOT,
    HEADS_ROOT,
    WRITES_ROOT,
    ThreadKey,
    belongs_to,
    encode,
    parse_branch,
    thread_folders,
)

_ATTEMPTS = 16
_GAVE_UP = (
    f"other writers moved it first {_ATTEMPTS} times in a row while this call retried; "
    "retry the call (and spread writes to one thread over fewer processes)"
)
_CACHE = 32
_VIEWS = 32
_READ_ATTEMPTS = 3
"""How many times get_tuple reads a checkpoint whose objects went missing under it."""
_WINDOW = 256
"""The most checkpoints whose snapshots and tail items list() reads in one batch."""
_SKIPS = 32
"""Checkpoints at or after ``before`` that list() walks past before it indexes the namespace."""
_FIRST_WINDOW = 16
"""The first batch (doubled up to ``_WINDOW``): a caller may want only the newest few."""
_DERIVED = 4096
_CHAIN = 16
_T = TypeVar("_T")
Prints = ListPrint | None
"""The fingerprint of a list channel's stored items (``None``: unknown, counts as changed)."""


class UnknownStrategy(LangGraphError, ValueError):
    """``prune`` was given a strategy other than ``"keep_latest"`` or ``"delete"``."""


class StateVCSSaver(BaseCheckpointSaver[int]):
    """A LangGraph checkpointer storing threads as branches and checkpoints as commits.

    ``StateVCSSaver(repo)`` works on any statevcs repository (SQLite, memory, ...). Each
    ``(thread_id, checkpoint_ns)`` is the branch ``threads/<thread>`` (``threads/<thread>.ns-<ns>``
    for a subgraph); each checkpoint a commit whose parent is its parent checkpoint's commit.
    List-valued channels (``messages``) are stored as one prolly list, so a step writes only
    its new items. ``serde`` stores values that are not plain JSON; the default is LangGraph's
    ``JsonPlusSerializer`` in strict mode (loading never runs code the data names; widen it
    with ``saver.with_allowlist([(module, name)])``).
    """

    def __init__(self, repo: Repo, *, serde: SerializerProtocol | None = None) -> None:
        if not isinstance(repo, Repo):
            raise TypeError(f"repo must be a statevcs.Repo, got {type(repo).__name__}")
        if serde is not None and not (
            callable(getattr(serde, "dumps_typed", None))
            and callable(getattr(serde, "loads_typed", None))
        ):
            raise TypeError(
                f"serde must implement LangGraph's SerializerProtocol, got {type(serde).__name__}"
            )
        super().__init__(serde=serde if serde is not None else safe_serializer())
        self.repo: Repo = repo
        """The repository the checkpoints live in."""
        self._lock = threading.RLock()
        # commit -> list channel -> fingerprint of its stored items (bytes: what was stored,
        # whatever the caller does to the objects it passed or got back).
        self._prints: OrderedDict[ObjectId, dict[str, Prints]] = OrderedDict()
        # branch -> the list items get_tuple last decoded for it, with their fingerprints then.
        self._views: OrderedDict[str, _View | None] = OrderedDict()
        # commit -> (parent commit, items appended to the parent's list log): what put built.
        # Commits are content-addressed, so this stays true whoever moves the refs.
        self._derived: OrderedDict[ObjectId, tuple[ObjectId, int]] = OrderedDict()
        # branch -> where each checkpoint of the namespace is, for the heads it was read from
        # (a deep lookup reads the whole namespace once; later ones are O(1) until the heads
        # move other than by this saver's own steps).
        self._indexes: OrderedDict[str, store.Index] = OrderedDict()
        # Items decoded from storage / walked in Python (cost counters, for tests).
        self._counts: Counter[str] = Counter()

    def __copy__(self) -> StateVCSSaver:
        """A shallow copy (``with_allowlist`` makes one) with caches of its own.

        Decoded items and prints depend on the serde: a clone with another allow-list must
        neither hand out items its serde would refuse nor be handed the other's.
        """
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._prints = OrderedDict()
        clone._views = OrderedDict()
        clone._indexes = OrderedDict()
        clone._counts = Counter()
        return clone

    @classmethod
    @contextmanager
    def from_path(
        cls, path: str | os.PathLike[str], *, serde: SerializerProtocol | None = None
    ) -> Iterator[StateVCSSaver]:
        """Open (or create) the repository at ``path`` and yield a saver; close it afterwards.

        ``path`` is a folder (created with a new repository if it holds none) or
        ``"memory://"``.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or a path, got {type(path).__name__}")
        if os.fspath(path) == MEMORY_URL:
            repo = Repo.init(MEMORY_URL)
        else:
            try:
                repo = Repo.open(path)
            except RepositoryNotFound:
                repo = Repo.init(path)
        try:
            yield cls(repo, serde=serde)
        finally:
            repo.close()

    # --- config parsing ---------------------------------------------------------------

    def _key(self, config: object, argument: str = "config") -> ThreadKey:
        configurable = _configurable(config, argument)
        if "thread_id" not in configurable:
            raise InvalidCheckpointConfig(
                f"{argument} names no thread: pass "
                '{"configurable": {"thread_id": "..."}} (any string)'
            )
        thread_id = _thread_id(
            configurable["thread_id"], f"{argument}['configurable']['thread_id']"
        )
        ns = configurable.get("checkpoint_ns", "")
        if ns is None:
            ns = ""
        if not isinstance(ns, str):
            raise TypeError(
                f"{argument}['configurable']['checkpoint_ns'] must be a str, got "
                f"{type(ns).__name__}"
            )
        return ThreadKey.of(thread_id, ns)

    # --- reading ----------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Return the checkpoint ``config`` names (its ``checkpoint_id``, else the latest)."""
        key = self._key(config)
        checkpoint_id = _checkpoint_id(config, "config")
        with self._lock:
            for _attempt in range(_READ_ATTEMPTS - 1):
                try:
                    # Its refs from one consistent read where the store offers one (S3: one
                    # request for the branch, the leaves and the side ref).
                    with self.repo.store.operation():
                        return self._get_tuple(key, checkpoint_id)
                except MissingObject:
                    # A read is not a snapshot: between reading a ref and loading what it
                    # named, another process may fold those writes into a new checkpoint and
                    # collect the old commit (gc with no grace period). Read the refs again.
                    continue
            with self.repo.store.operation():
                return self._get_tuple(key, checkpoint_id)  # missing every time: missing

    def _get_tuple(self, key: ThreadKey, checkpoint_id: str | None) -> CheckpointTuple | None:
        """One read of :meth:`get_tuple` (the caller holds the lock)."""
        folders: builtins.list[store.Stored] = []
        side_name: str | None = None
        refs: dict[str, ObjectId] = {}
        if checkpoint_id is None:
            tip = self.repo.refs.get(key.branch)
            if tip is None:
                return None
            # The tip is a leaf: no child folded its writes.
            found: store.Stored | None = store.load(self.repo.objects, tip)
            assert found is not None
            elsewhere = self._greater_than_tip(key, found)
            if elsewhere is not None:
                found, folders = elsewhere
        else:
            # The config names the side ref of the checkpoint's pending writes: read it with
            # the branch, in one query.
            side_name = _side_name(key, checkpoint_id)
            names = [key.branch] if side_name is None else [key.branch, side_name]
            refs = self.repo.store.get_refs(names)
            heads = store.Heads(refs.get(key.branch), self.repo.refs.as_dict(key.leaf_prefix))
            found, folders = self._find(key, heads, checkpoint_id)
        if found is None:
            return None
        if side_name is None:
            side = self.repo.refs.get(key.writes_ref(found.checkpoint_id))
        else:
            side = refs.get(side_name)
            if side is not None and folders:
                # Read before the heads: a child put since may have folded these writes (a
                # special write there newer than the side's) and dropped the ref. Read it
                # after the heads, as the order of the steps that write them requires.
                side = self.repo.refs.get(side_name)
        readahead.read_checkpoint(
            self.repo.objects,
            found.commit.snapshot,
            own=store.own_entries,
            folders=[f.commit.snapshot for f in folders],
            side=side,
            tree=self._views.get(key.branch) is None,  # else only its new items are read
        )
        lists = self._view_lists(key, found)
        result, _lists = self._tuple(key, found, side, None, folders=folders, lists=lists)
        return result

    def _greater_than_tip(
        self, key: ThreadKey, tip: store.Stored
    ) -> tuple[store.Stored | None, builtins.list[store.Stored]] | None:
        """The latest checkpoint when it is not the tip's (``None``: it is).

        LangGraph's savers call the greatest id the latest. Ids are time-ordered, so that is
        the newest leaf's, the tip, unless a writer's clock was behind: then an inner
        checkpoint or another leaf's history may hold a greater id (the commits' ``max_id``
        says so without a walk).
        """
        bound = store.id_bound(tip)
        leaves = self.repo.refs.as_dict(key.leaf_prefix)
        heads = store.Heads(tip.commit_id, leaves)
        if len(leaves) > 1:
            readahead.read_ahead(self.repo.objects, leaves.values())  # every leaf in one read
        for commit_id in leaves.values():
            bound = max(bound, store.id_bound(store.load(self.repo.objects, commit_id)))
        if bound == tip.checkpoint_id:
            return None
        found, folders = self._find(key, heads, bound)
        if found is None:
            # A bound left behind by a rewrite that dropped that checkpoint: walk once.
            everything = store.all_commits(self.repo, heads)
            greatest = max(everything, key=lambda s: s.checkpoint_id)
            found, folders = self._find(key, heads, greatest.checkpoint_id)
        return found, folders

    def _find(
        self, key: ThreadKey, heads: store.Heads, checkpoint_id: str
    ) -> tuple[store.Stored | None, builtins.list[store.Stored]]:
        """The commit of ``checkpoint_id`` in ``key``'s namespace and the commits folding its
        writes: from the namespace's index while its heads are the ones it was read from."""
        index = self._index(key, heads)
        if index is not None:
            self._counts["index hits"] += 1
            return index.find(self.repo, checkpoint_id)
        indexed = store.find_by_index(self.repo, heads, checkpoint_id)
        if indexed is not None:
            self._counts["lineage index hits"] += 1
            return indexed
        labelled = store.find_by_label(self.repo, heads, checkpoint_id)
        if labelled is not None:
            self._counts["graph hits"] += 1
            return labelled
        found, folders, index = store.find_or_index(self.repo, heads, checkpoint_id)
        if index is not None:
            self._keep_index(key, index)
        return found, folders

    def _keep_index(self, key: ThreadKey, index: store.Index) -> None:
        self._indexes[key.branch] = index
        self._indexes.move_to_end(key.branch)
        while len(self._indexes) > _VIEWS:
            self._indexes.popitem(last=False)

    def _index(self, key: ThreadKey, heads: store.Heads) -> store.Index | None:
        """The saver's index of ``key``'s namespace if it was read from exactly ``heads``."""
        index = self._indexes.get(key.branch)
        if index is None or not index.valid_for(heads):
            return None
        self._indexes.move_to_end(key.branch)
        return index

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Yield checkpoints newest first (by id), as LangGraph's own savers do.

        ``config`` picks a thread (and a namespace, if it names one; ``None``: every thread);
        ``filter`` matches metadata keys; ``before`` keeps ids older than its checkpoint's;
        ``limit`` caps the count. Decoded items are shared between the yielded checkpoints.
        """
        if filter is not None and not isinstance(filter, Mapping):
            raise TypeError(f"filter must be a dict, got {type(filter).__name__}")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
            raise TypeError(f"limit must be an int, got {type(limit).__name__}")
        before_id = _checkpoint_id(before, "before") if before is not None else None
        keys = self._keys_for(config)
        wanted_id = _checkpoint_id(config, "config") if config is not None else None
        return self._list(keys, config, filter, before_id, wanted_id, limit)

    def _keys_for(self, config: RunnableConfig | None) -> builtins.list[tuple[ThreadKey, Any]]:
        if config is None:
            found: builtins.list[tuple[ThreadKey, Any]] = []
            for ref in self.repo.refs.as_dict(BRANCH_ROOT):
                parsed = parse_branch(ref)
                if parsed is not None:
                    found.append((ThreadKey.of(*parsed), parsed[0]))
            return found
        configurable = _configurable(config, "config")
        key = self._key(config)
        if "checkpoint_ns" in configurable and configurable["checkpoint_ns"] is not None:
            return [(key, configurable["thread_id"])]
        branch_prefix, _, _ = thread_folders(key.thread)
        keys = []
        for ref in self.repo.refs.as_dict(branch_prefix):
            parsed = parse_branch(ref)
            if parsed is not None and belongs_to(ref, key.thread):
                keys.append((ThreadKey.of(key.thread_id, parsed[1]), configurable["thread_id"]))
        return keys

    def _list(
        self,
        keys: Sequence[tuple[ThreadKey, Any]],
        config: RunnableConfig | None,
        filter: Mapping[str, Any] | None,
        before_id: str | None,
        wanted_id: str | None,
        limit: int | None,
    ) -> Iterator[CheckpointTuple]:
        if limit is not None and limit <= 0:
            return
        with self._lock:
            streams = [self._rows(key, thread, before_id, wanted_id) for key, thread in keys]
        # Each namespace yields newest first; several merge by id, as SqliteSaver orders them.
        rows: Iterator[_Row] = (
            iter(streams[0])
            if len(streams) == 1
            else heapq.merge(*streams, key=_row_order, reverse=True)
        )
        memo = store.Decoded()
        remaining = limit
        size = _FIRST_WINDOW
        while True:
            wanted = size if remaining is None else min(size, remaining)
            batch: builtins.list[_Row] = []
            with self._lock:
                for row in rows:
                    if filter:
                        meta = store.metadata_of(self.repo, row.found, self.serde)
                        if not all(meta.get(k) == v for k, v in filter.items()):
                            continue
                    batch.append(row)
                    if len(batch) >= wanted:
                        break
                # The next checkpoints' snapshots and tail items in a few reads, not one each.
                found = [row.found for row in batch]
                store.preload(self.repo, found)
                memo.prefetch(self.repo, found, self.serde)
            for row in batch:
                with self._lock:
                    result, _ = self._tuple(
                        row.key, row.found, row.side, memo, row.thread, folders=row.folders
                    )
                yield result
            if len(batch) < wanted:
                return
            if remaining is not None:
                remaining -= len(batch)
                if remaining <= 0:
                    return
            size = min(size * 2, _WINDOW)

    def _rows(
        self, key: ThreadKey, thread: Any, before_id: str | None, wanted_id: str | None
    ) -> Iterator[_Row]:
        """One namespace's checkpoints for :meth:`list`, newest first (advance it holding the
        lock): from its index when the saver has one for its heads, else by a walk that reads
        about one commit per checkpoint yielded."""
        repo = self.repo
        heads = store.read_heads(repo, key)
        sides = store.side_checkpoint_ids(repo, key)
        if wanted_id is not None:
            if before_id is None or wanted_id < before_id:
                found, folders = self._find(key, heads, wanted_id)
                if found is not None:
                    yield _Row(key, thread, found, folders, sides.get(wanted_id))
            return
        index = self._index(key, heads)
        if index is None:
            skipped = 0
            for found, folders in order.newest_first(repo, heads):
                if before_id is None or found.checkpoint_id < before_id:
                    yield _Row(key, thread, found, folders, sides.get(found.checkpoint_id))
                    continue
                skipped += 1
                if skipped == _SKIPS:
                    # A page deep in the thread (get_state_history's before=): read the
                    # namespace once into an index; this page and later ones start in O(log n).
                    index = store.index_of(repo, heads)
                    self._keep_index(key, index)
                    break
            else:
                return
        for checkpoint_id in index.newest_first(before_id):
            found, folders = index.find(repo, checkpoint_id)
            if found is not None:
                yield _Row(key, thread, found, folders, sides.get(checkpoint_id))

    def _tuple(
        self,
        key: ThreadKey,
        found: store.Stored,
        side: ObjectId | None,
        memo: store.Decoded | None,
        thread_id: Any = None,
        *,
        folders: Sequence[store.Stored] = (),
        lists: dict[str, builtins.list[Any]] | None = None,
    ) -> tuple[CheckpointTuple, dict[str, builtins.list[Any]]]:
        repo = self.repo
        if lists is None:
            values, lists = store.channel_values(repo, found, self.serde, memo)
        else:
            values = self._other_values(found)
            values.update(lists)
        checkpoint = store.checkpoint_doc(repo, found, self.serde)
        writes = store.writes_of(repo, found, folders, side)
        thread = key.thread_id if thread_id is None else thread_id
        pending: list[PendingWrite] = [
            (task_id, channel, unwrap(doc, self.serde, f"a pending write to {channel!r}"))
            for task_id, _idx, channel, doc, _path in wrap_writes(writes)
        ]
        parent = found.parent_checkpoint_id
        result = CheckpointTuple(
            config=_config(thread, key.checkpoint_ns, found.checkpoint_id),
            checkpoint={**checkpoint, "channel_values": values},  # type: ignore[typeddict-item]
            metadata=store.metadata_of(repo, found, self.serde),  # type: ignore[arg-type]
            parent_config=_config(thread, key.checkpoint_ns, parent) if parent else None,
            pending_writes=pending,
        )
        return result, lists

    def _remember(self, commit_id: ObjectId, prints: dict[str, Prints]) -> None:
        self._prints[commit_id] = prints
        self._prints.move_to_end(commit_id)
        while len(self._prints) > _CACHE:
            self._prints.popitem(last=False)

    def _parent_prints(self, parent: store.Stored) -> dict[str, Prints]:
        """Fingerprints of a checkpoint's stored lists (decoded from storage if not cached)."""
        cached = self._prints.get(parent.commit_id)
        if cached is None:
            fingerprint = Fingerprinter(self.serde)
            # The thread's private view holds exactly the stored items (nobody else can change
            # them): fingerprint those rather than decode the lists again.
            views = (v for v in self._views.values() if v and v.commit_id == parent.commit_id)
            view = next(views, None)
            if view is not None:
                lists = view.lists
            else:
                lists = store.list_items(self.repo, parent, self.serde, None)
                self._counts["decoded"] += sum(map(len, lists.values()))
            cached = {name: fingerprint.of_list(items)[0] for name, items in lists.items()}
            self._counts["scanned"] += fingerprint.items_scanned
            self._remember(parent.commit_id, cached)
        return cached

    def _other_values(self, found: store.Stored) -> dict[str, Any]:
        """A checkpoint's channel values other than its lists (as ``store.channel_values``)."""
        db = self.repo.objects
        snap = found.snapshot(db)
        values: dict[str, Any] = {}
        state_entries = read_map(db, snap.state)
        if state_entries:
            codec = serializer_for(snap.state_codec, self.repo.serializer)
            values.update(read_values(db, state_entries, codec))
        for key, doc in found.own_extras(db).items():
            if key.startswith(store.VALUE_PREFIX):
                name = key[len(store.VALUE_PREFIX) :]
                values[name] = unwrap(doc, self.serde, f"channel {name!r}")
        return values

    def _view_lists(self, key: ThreadKey, found: store.Stored) -> dict[str, builtins.list[Any]]:
        """A checkpoint's list channels, decoding only the items the thread's view lacks.

        The view holds the thread's items as last decoded from storage; it is private (never
        handed out), so what get_tuple returns is a fresh copy of it: a caller or a node that
        changes a returned item changes neither the view nor an earlier result. The view is
        extended only for a commit whose list log is the view's plus appended items (known
        from what put built); else the lists are decoded from storage. A thread's first read
        hands out what it decoded and keeps no copy (a one-off restore pays for no view);
        its second read on that thread keeps one.
        """
        counts = store.channels_of_lists(self.repo, found)
        view = self._views.get(key.branch)
        lists = self._extend_view(found, counts, view) if view is not None else None
        if lists is None or view is None:
            lists = store.list_items(self.repo, found, self.serde, None)
            self._counts["decoded"] += sum(map(len, lists.values()))
            if key.branch not in self._views:
                self._views[key.branch] = None
                self._trim_views(key.branch)
                return lists
            view = _View(found.commit_id, lists, sum(counts.values()))
        self._views[key.branch] = view
        self._trim_views(key.branch)
        self._counts["copied"] += sum(map(len, lists.values()))
        with paused_gc():
            return {name: [fresh_copy(item) for item in items] for name, items in lists.items()}

    def _trim_views(self, branch: str) -> None:
        self._views.move_to_end(branch)
        while len(self._views) > _VIEWS:
            self._views.popitem(last=False)

    def _extend_view(
        self, found: store.Stored, counts: Mapping[str, int], view: _View
    ) -> dict[str, builtins.list[Any]] | None:
        """``found``'s lists from ``view`` plus its appended items (``None``: cannot)."""
        appended = 0
        current = found.commit_id
        for _step in range(_CHAIN):
            if current == view.commit_id:
                break
            step = self._derived.get(current)
            if step is None:
                return None
            current, added = step
            appended += added
        else:
            return None
        if current != view.commit_id or not view.lists.keys() <= counts.keys():
            return None
        new: dict[str, builtins.list[Any]] = {}
        if appended:
            db = self.repo.objects
            ids = message_ids_from(db, found.snapshot(db), view.length)
            if len(ids) != appended:
                return None
            docs = self.repo.objects.load_values(dict.fromkeys(ids))
            for object_id in ids:
                # Decoded per occurrence: an item that appears twice must be two objects.
                doc = docs[object_id]
                if not isinstance(doc, Doc):
                    raise CorruptObject(to_hex(object_id), "a list item must be a document")
                new.setdefault(item_channel(doc.value), []).append(
                    item_value(doc.value, self.serde)
                )
            self._counts["decoded"] += len(ids)
        if not new.keys() <= counts.keys():
            return None
        lists: dict[str, builtins.list[Any]] = {}
        for name, count in counts.items():
            items = [*view.lists.get(name, ()), *new.get(name, ())]
            if len(items) != count:
                return None
            lists[name] = items
        view.commit_id, view.lists = found.commit_id, lists
        view.length += appended
        return lists

    def _parent_items(self, parent: store.Stored, name: str) -> tuple[Any, ...]:
        lists = store.list_items(self.repo, parent, self.serde, None)
        return tuple(lists.get(name, ()))

    # --- writing ----------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` as a commit on its thread's branch; return its config.

        Its parent is the checkpoint ``config`` names. Only channels in ``new_versions`` are
        serialized again; list channels that grew write only their new items. Putting an id
        again replaces that checkpoint (keeping its pending writes), as LangGraph's savers do.
        Nothing is written if any value cannot be stored.
        """
        key = self._key(config)
        parent_id = _checkpoint_id(config, "config")
        _check_checkpoint(checkpoint)
        if not isinstance(metadata, Mapping):
            raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
        if not isinstance(new_versions, Mapping):
            raise TypeError(f"new_versions must be a dict, got {type(new_versions).__name__}")
        meta = dict(get_serializable_checkpoint_metadata(config, metadata))
        checkpoint_id = checkpoint["id"]
        with self._lock:
            for _attempt in range(_ATTEMPTS):
                if self._put_once(key, checkpoint, meta, new_versions, parent_id):
                    return _config(
                        _configurable(config, "config")["thread_id"],
                        key.checkpoint_ns,
                        checkpoint_id,
                    )
        raise RefConflict(key.branch, None, None, _GAVE_UP)

    def _put_once(
        self,
        key: ThreadKey,
        checkpoint: Checkpoint,
        meta: dict[str, Any],
        new_versions: Mapping[str, Any],
        parent_id: str | None,
    ) -> bool:
        """One attempt of :meth:`put`; ``False`` when a concurrent writer moved a ref first."""
        repo = self.repo
        checkpoint_id = checkpoint["id"]
        heads = store.read_heads(repo, key)
        head_stored = {c: store.load(repo.objects, c) for c in heads.commits()}
        head_ids = {c: s.checkpoint_id for c, s in head_stored.items()}
        olds = [s for s in head_stored.values() if s.checkpoint_id == checkpoint_id]
        hidden: store.Stored | None = None
        if not olds and not _newer_than_all(head_stored.values(), checkpoint_id):
            # The id may be on an inner commit (a checkpoint with children).
            hidden = self._find(key, heads, checkpoint_id)[0]
        parent = self._find(key, heads, parent_id)[0] if parent_id is not None else None
        old = olds[0] if olds else hidden
        base = parent
        while base is not None and base.checkpoint_id == checkpoint_id:
            # Put again under itself: a commit cannot be its own parent, so the new one takes
            # the old one's place (its parent_config still names itself, as given).
            above = base.commit.parents
            base = store.load(repo.objects, above[0]) if above else None
        replacement: rewrite.Replacement | None = None
        if old is not None and not (
            len(olds) == 1
            and old.parent_checkpoint_id == parent_id
            and old.commit.parents[:1] == _commits_of(base)
        ):
            # Not a leaf put again on the same parent: a rewrite moves its descendants onto
            # the new commit (and every commit onto the checkpoint its parent_config names);
            # the old parent stays, a head if nothing else is on it.
            replacement = rewrite.Replacement.prepare(
                repo, heads, checkpoint_id, base.commit_id if base is not None else None
            )
            olds = replacement.olds
        # Only a child whose parent_config names its parent commit's checkpoint is its lead.
        leading = base is not None and parent_id == base.checkpoint_id
        note = "langgraph: put"
        own: store.Writes = {}
        fold: store.Writes | None = None
        extra_objects: dict[ObjectId, bytes] = {}
        extra_updates: builtins.list[RefUpdate] = []
        orphans: dict[str, store.Writes] = {}
        for replaced in olds:
            # Its pending writes stay the checkpoint's: its own, and those a child that does
            # not move onto the new commit carried (the others still carry theirs).
            own = store.merge_writes(own, store.own_writes(repo, replaced))
            carried = store.folded_writes(repo, replaced)
            if leading and base is not None and store.leads([replaced], base):
                # Its parent's lead, put again on that parent: the new one is.
                fold = store.merge_writes(fold or {}, carried)
            elif carried and replaced.parent_checkpoint_id is not None:
                # Writes of a checkpoint the old commit no longer leads go back to its side ref.
                earlier = orphans.get(replaced.parent_checkpoint_id, {})
                orphans[replaced.parent_checkpoint_id] = store.merge_writes(earlier, carried)
        if replacement is not None:
            own = store.merge_writes(own, replacement.cut_folded(repo))
        if leading and base is not None and base.commit_id in head_ids:
            # The parent is a leaf: this checkpoint is its lead child and takes its pending
            # writes (any going back, then the side ref's) into its own commit (the side ref
            # goes).
            parent_ref = key.writes_ref(base.checkpoint_id)
            parent_side = repo.refs.get(parent_ref)
            fold = store.merge_writes(fold or {}, orphans.pop(base.checkpoint_id, {}))
            if parent_side is not None:
                fold = store.merge_writes(fold, store.side_writes(repo, parent_side))
                extra_updates.append(RefUpdate(parent_ref, None, parent_side, note, log=False))
        for cid, writes in orphans.items():
            objects_, update = self._side_update(key, cid, writes, note, older=True)
            extra_objects.update(objects_)
            extra_updates.append(update)
        built, prints, appended = self._build(
            key, checkpoint, meta, new_versions, base, parent_id, own, fold
        )
        if replacement is None:
            drop = {s.commit_id for s in olds}
            if base is not None:
                drop.add(base.commit_id)
            updates = store.head_updates(
                key,
                heads,
                head_ids,
                {built.commit_id: checkpoint_id},
                drop,
                note,
                below=_commits_of(base),
            )
            objects = built.objects
        else:
            plan = replacement.finish(repo, built)
            objects = plan.objects
            updates = store.head_updates(key, heads, head_ids, plan.heads, set(head_ids), note)
        updates.extend(extra_updates)
        if not self._apply(updates, {**objects, **extra_objects}):
            return False
        self._follow_index(key, heads, updates, built.commit_id if replacement is None else None)
        if prints is not None and replacement is None:
            if base is not None:
                # Each print copies its whole lists: keep the thread's latest, not its steps.
                self._prints.pop(base.commit_id, None)
            self._remember(built.commit_id, prints)
        if appended is not None and base is not None and replacement is None:
            self._derived[built.commit_id] = (base.commit_id, appended)
            self._derived.move_to_end(built.commit_id)
            while len(self._derived) > _DERIVED:
                self._derived.popitem(last=False)
        return True

    def _follow_index(
        self,
        key: ThreadKey,
        heads: store.Heads,
        updates: Sequence[RefUpdate],
        added: ObjectId | None,
    ) -> None:
        """Keep ``key``'s index true after a put that moved ``heads`` by ``updates``.

        A put that only adds ``added`` on top of the namespace (its parent stays reachable
        through it) adds one entry; anything else (a rewrite) drops the index.
        """
        index = self._indexes.get(key.branch)
        if index is None:
            return
        if added is None or not index.valid_for(heads):
            del self._indexes[key.branch]
            return
        new = store.load(self.repo.objects, added)
        if new.checkpoint_id in index.commits:
            del self._indexes[key.branch]  # a checkpoint put again: its old commit went
            return
        index.add(new)
        index.heads = store.heads_after(key, heads, updates)

    def _apply(self, updates: Sequence[RefUpdate], objects: Mapping[ObjectId, bytes]) -> bool:
        """Apply ref moves with their objects; ``False`` when a concurrent writer got there."""
        try:
            self.repo.refs.update(updates, objects)
        except (RefConflict, StaleCache):
            return False
        for update in updates:
            if update.new is None:
                self.repo.refs.delete_reflog(update.name)
        return True

    def _build(
        self,
        key: ThreadKey,
        checkpoint: Checkpoint,
        meta: dict[str, Any],
        new_versions: Mapping[str, Any],
        parent: store.Stored | None,
        parent_id: str | None,
        own_writes: store.Writes,
        fold: store.Writes | None,
    ) -> tuple[store.Built, dict[str, Prints] | None, int | None]:
        """Encode a checkpoint's commit; also return its lists' fingerprints (if known) and
        how many items it appended to its parent's list log (``None``: written again)."""
        repo, serde = self.repo, self.serde
        values = checkpoint["channel_values"]
        versions = checkpoint["channel_versions"]
        codec = repo.serializer.name
        old = store.channels_of(repo, parent) if parent is not None else store.Channels()
        old_versions: Mapping[str, Any] = (
            store.checkpoint_doc(repo, parent, serde).get("channel_versions") or {}
            if parent is not None
            else {}
        )
        old_codec = parent.snapshot(repo.objects).state_codec if parent is not None else codec
        state: dict[str, bytes] = {}
        extras: dict[str, Any] = {}
        lists: dict[str, Sequence[Any]] = {}
        reused_lists: set[str] = set()
        for name in versions:
            if not isinstance(name, str):
                raise TypeError(f"checkpoint['channel_versions'] keys must be str, got {name!r}")
            same = (
                parent is not None
                and name not in new_versions
                and old_versions.get(name) == versions[name]
            )
            if same and name in old.state and old_codec == codec:
                state[name] = old.state[name]
                continue
            if same and name in old.extras:
                extras[store.VALUE_PREFIX + name] = old.extras[name]
                continue
            if same and name in old.lists:
                assert parent is not None
                reused_lists.add(name)
                lists[name] = _LazyItems(partial(self._parent_items, parent, name), old.lists[name])
                continue
            if name not in values:
                continue  # "empty": the channel has no value at this version
            value = values[name]
            if type(value) is list:
                lists[name] = value
                continue
            data = (
                store.serialize_state(repo, name, value)
                if is_plain(value, allow_bytes=False)
                else None
            )
            if data is not None:
                state[name] = data
            else:
                extras[store.VALUE_PREFIX + name] = store.serde_wrap(
                    serde, f"channel {name!r}", value, name
                )
        # Fingerprints of the lists as given, taken now (before the caller can change them).
        fingerprint = Fingerprinter(serde)
        before: dict[str, Prints] = (
            self._parent_prints(parent) if parent is not None and old.lists else {}
        )
        found: dict[str, Prints] = {}
        kept: dict[str, int] = {}
        for name in lists:
            if name in reused_lists:
                if name in before:
                    found[name] = before[name]
                continue
            parent_print = before.get(name) if name in old.lists else EMPTY_PRINT
            found[name], extends = fingerprint.of_list(lists[name], parent_print)
            if parent_print is not None and found[name] is None:
                # Some new item has no fingerprint: the kept ones may still match.
                head = fingerprint.of_list(lists[name][: parent_print.count], parent_print)
                extends = head[0] is not None and head[0].count == parent_print.count and head[1]
            if extends and parent_print is not None:
                kept[name] = parent_print.count
        self._counts["scanned"] += fingerprint.items_scanned
        prints = found if len(found) == len(lists) else None
        # The list log: new items appended when every list only grew, else written again.
        new_docs: builtins.list[dict[str, Any]] | None = None
        if parent is not None and set(old.lists) <= set(lists) and prints is not None:
            new_docs = self._appended(lists, kept, reused_lists)
        previous = store.stored_messages_of(repo, parent.snapshot(repo.objects)) if parent else None
        base: MessageBase | None = None
        log: Sequence[Any]
        if new_docs is not None and previous is not None:
            base = MessageBase(previous, previous.length)
            log = store.Log(previous.length, new_docs)
        else:
            log = [
                doc
                for name in sorted(lists)
                for doc in store.items_doc(serde, name, list(lists[name]))
            ]
        if lists:
            extras["lists"] = {name: len(items) for name, items in sorted(lists.items())}
        info: dict[str, Any] = {"checkpoint_id": checkpoint["id"]}
        if parent_id is not None:
            info["parent_checkpoint_id"] = parent_id
        us = store.checkpoint_us(checkpoint.get("ts"))
        inline = store.inline_checkpoint(checkpoint, us)
        if inline is not None:
            info.update(inline)
        else:
            extras["checkpoint"] = store.serde_wrap(
                serde,
                "the checkpoint",
                {k: v for k, v in checkpoint.items() if k != "channel_values"},
            )
        if own_writes:
            extras["writes"] = wrap_writes(own_writes)
        if fold is not None:
            info[store.FOLDED] = 1 if fold else 0
            if fold:
                extras[store.FOLDED] = wrap_writes(fold)
        if parent is not None:
            bound = store.id_bound(parent)
            if bound > checkpoint["id"]:
                info["max_id"] = bound
        index_fields, index_objects = store.index_fields(repo, parent, checkpoint["id"])
        info.update(index_fields)
        commit, in_commit = store.checkpoint_commit(
            repo,
            parents=(parent.commit_id,) if parent is not None else (),
            info=info,
            metadata=meta,
            us=us,
        )
        if not in_commit:
            run_id = meta.get("run_id")
            if isinstance(run_id, str):
                info["run_id"] = run_id
                commit, in_commit = store.checkpoint_commit(
                    repo,
                    parents=commit.parents,
                    info=info,
                    metadata=meta,
                    us=us,
                )
            extras["metadata"] = store.serde_wrap(serde, "metadata", meta)
        snapshot = Snapshot.model_construct(
            kind=store.KIND_CHECKPOINT,
            messages=log,
            state=state,
            extras=store.split_extras(extras),
        )
        built = store.encode_commit(
            repo, snapshot, state_codec=codec, base=base, previous=previous, commit=commit
        )
        built.objects.update(index_objects)
        return built, prints, len(new_docs) if base is not None and new_docs is not None else None

    def _appended(
        self,
        lists: Mapping[str, Sequence[Any]],
        kept: Mapping[str, int],
        reused: set[str],
    ) -> builtins.list[dict[str, Any]] | None:
        """Documents of the items appended to each list since the parent (``None``: not appends).

        Exact: ``kept`` names the lists whose parent's items are all still there, unchanged
        (their fingerprint now equals the one taken when they were stored), so an item
        changed in place, or replaced by an equal value of another type, makes the list be
        written again.
        """
        docs: builtins.list[dict[str, Any]] = []
        for name in sorted(lists):
            if name in reused:
                continue
            if name not in kept:
                return None
            docs.extend(store.items_doc(self.serde, name, lists[name][kept[name] :]))
        return docs

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store pending writes of task ``task_id`` for the checkpoint ``config`` names.

        They go to the checkpoint's side ref (one small commit, one ref move); the
        checkpoint's commit is never rewritten. Its next child put while it is a leaf (its
        lead) carries them in its own commit and the side ref goes. A repeated
        ``(task_id, index)`` keeps its first value (special writes, index < 0, their last), as
        LangGraph's savers do.
        """
        key = self._key(config)
        checkpoint_id = _checkpoint_id(config, "config")
        if checkpoint_id is None:
            raise InvalidCheckpointConfig(
                "config names no checkpoint_id: pending writes belong to a checkpoint; pass the "
                "config put() returned"
            )
        if not isinstance(task_id, str):
            raise TypeError(f"task_id must be a str, got {type(task_id).__name__}")
        if not isinstance(task_path, str):
            raise TypeError(f"task_path must be a str, got {type(task_path).__name__}")
        if isinstance(writes, (str, bytes)) or not isinstance(writes, Sequence):
            raise TypeError(
                f"writes must be a list of (channel, value), got {type(writes).__name__}"
            )
        new: store.Writes = {}
        for idx, pair in enumerate(writes):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(f"writes[{idx}] must be a (channel, value) pair, got {pair!r}")
            channel, value = pair
            if not isinstance(channel, str):
                raise TypeError(
                    f"writes[{idx}] channel must be a str, got {type(channel).__name__}"
                )
            slot = (task_id, WRITES_IDX_MAP.get(channel, idx))
            doc = store.serde_wrap(self.serde, f"writes[{idx}] to {channel!r}", value, channel)
            new[slot] = (task_id, channel, doc, task_path)
        if not new:
            return
        with self._lock:
            for _attempt in range(_ATTEMPTS):
                if self._put_writes_once(key, checkpoint_id, new):
                    return
        raise RefConflict(key.branch, None, None, _GAVE_UP)

    def _put_writes_once(self, key: ThreadKey, checkpoint_id: str, new: store.Writes) -> bool:
        # Always the side ref (one small commit, one ref move): the checkpoint's own commit is
        # never rewritten; its lead child folds these writes in when it is put.
        side = self.repo.refs.get(key.writes_ref(checkpoint_id))
        if store.merge_writes(store.side_writes(self.repo, side), new) == store.side_writes(
            self.repo, side
        ):
            return True
        objects, update = self._side_update(key, checkpoint_id, new, "langgraph: writes", side=side)
        return self._apply([update], objects)

    def _side_update(
        self,
        key: ThreadKey,
        checkpoint_id: str,
        new: store.Writes,
        note: str,
        *,
        side: ObjectId | bool | None = False,
        older: bool = False,
    ) -> tuple[dict[ObjectId, bytes], RefUpdate]:
        """A side commit holding ``checkpoint_id``'s side writes plus ``new``, and its ref move.

        ``side`` is the side ref's current value when the caller read it already; ``older``
        says ``new`` was written before the side ref's writes (writes a child carried, going
        back): then the side ref's special writes replace theirs, not the other way round.
        """
        repo = self.repo
        ref = key.writes_ref(checkpoint_id)
        current = repo.refs.get(ref) if side is False else side
        assert current is None or isinstance(current, bytes)
        there = store.side_writes(repo, current)
        merged = store.merge_writes(new, there) if older else store.merge_writes(there, new)
        snapshot = Snapshot.model_construct(
            kind=store.KIND_WRITES,
            messages=[],
            state={},
            extras=store.split_extras({"writes": wrap_writes(merged)}),
        )
        commit = CommitObject(
            snapshot=b"\0" * 32,
            parents=(),
            author=repo.author,
            timestamp_us=0,
            message="pending writes",
            metadata={"langgraph": {"writes_for": checkpoint_id}},
        )
        built = store.encode_commit(
            repo,
            snapshot,
            state_codec=repo.serializer.name,
            base=None,
            previous=None,
            commit=commit,
        )
        # Side refs are bookkeeping: their writes end up in a checkpoint's commit, unlogged.
        return built.objects, RefUpdate(ref, built.commit_id, current, note, log=False)

    # --- threads ----------------------------------------------------------------------

    def _thread_refs(self, thread: str) -> dict[str, ObjectId]:
        branch_prefix, heads_prefix, writes_prefix = thread_folders(thread)
        refs = {
            name: value
            for name, value in self.repo.refs.as_dict(branch_prefix).items()
            if belongs_to(name, thread)
        }
        refs.update(self.repo.refs.as_dict(heads_prefix))
        refs.update(self.repo.refs.as_dict(writes_prefix))
        return refs

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and pending write of ``thread_id`` (all its refs).

        Objects no other thread shares become unreachable; ``repo.gc()`` reclaims them.
        """
        thread = encode(_thread_id(thread_id, "thread_id"))
        with self._lock:
            for _attempt in range(_ATTEMPTS):
                # Read again after each batch: a writer may have added a ref between the reads
                # of the thread's folders; done only when none is left.
                refs = self._thread_refs(thread)
                for name in [n for n in self._views if n in refs]:
                    del self._views[name]  # its messages need not stay in memory
                for name in [n for n in self._indexes if n in refs]:
                    del self._indexes[name]
                if not refs:
                    return
                note = "langgraph: delete thread"
                self._apply([RefUpdate(n, None, v, note) for n, v in sorted(refs.items())], {})
        raise RefConflict(BRANCH_ROOT + thread, None, None, _GAVE_UP)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Make ``target_thread_id`` a copy of ``source_thread_id``: new refs, shared objects.

        O(number of namespaces): no checkpoint is read or written. Raises ``ThreadExists`` if
        the target already has checkpoints.
        """
        source = encode(_thread_id(source_thread_id, "source_thread_id"))
        target_id = _thread_id(target_thread_id, "target_thread_id")
        ThreadKey.of(target_id, "")  # refuses an id too long to name a branch
        target = encode(target_id)
        with self._lock:
            for _attempt in range(_ATTEMPTS):
                if self._thread_refs(target):
                    raise ThreadExists(
                        f"thread {target_thread_id!r} already has checkpoints; delete_thread it "
                        "first or copy to a new thread id"
                    )
                refs = self._thread_refs(source)
                updates = [
                    RefUpdate(
                        _retarget(name, source, target), value, None, "langgraph: copy thread"
                    )
                    for name, value in sorted(refs.items())
                ]
                # The source's branches must not have moved since their folders were read.
                guards = [
                    RefUpdate(name, value, value, "langgraph: copy thread")
                    for name, value in sorted(refs.items())
                    if name.startswith(BRANCH_ROOT)
                ]
                for update in updates:
                    if len(update.name) > MAX_REF_NAME_LENGTH:
                        raise InvalidCheckpointConfig(
                            "target_thread_id is too long to name its branches; use a shorter id"
                        )
                if not updates or self._apply(updates + guards, {}):
                    return
        raise RefConflict(BRANCH_ROOT + target, None, None, _GAVE_UP)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint (and its writes) written by one of ``run_ids``.

        Their children are rewritten onto the nearest kept ancestor (new commits sharing
        every snapshot); their ``parent_config`` still names the deleted id, as in LangGraph's
        own savers.
        """
        runs = _str_list(run_ids, "run_ids")
        if not runs:
            return
        with self._lock:
            for ref in sorted(self.repo.refs.as_dict(BRANCH_ROOT)):
                parsed = parse_branch(ref)
                if parsed is None:
                    continue
                key = ThreadKey.of(*parsed)
                self._rewrite(key, lambda s: s.run_id in runs)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Drop history: ``"keep_latest"`` keeps each namespace's latest checkpoint (with its
        writes) as a new root commit; ``"delete"`` deletes the threads."""
        threads = _str_list(thread_ids, "thread_ids")
        if not isinstance(strategy, str):
            raise TypeError(f"strategy must be a str, got {type(strategy).__name__}")
        if strategy not in ("keep_latest", "delete"):
            raise UnknownStrategy(
                f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'"
            )
        for thread_id in threads:
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            with self._lock:
                thread = encode(thread_id)
                for ref in sorted(self.repo.refs.as_dict(BRANCH_ROOT + thread)):
                    parsed = parse_branch(ref)
                    if parsed is None or not belongs_to(ref, thread):
                        continue
                    key = ThreadKey.of(*parsed)
                    tip = self.repo.refs.get(key.branch)
                    if tip is None:
                        continue
                    # The latest is the greatest id (as get_tuple reads it), not always the tip.
                    latest = store.load(self.repo.objects, tip)
                    elsewhere = self._greater_than_tip(key, latest)
                    if elsewhere is not None and elsewhere[0] is not None:
                        latest = elsewhere[0]
                    self._rewrite(key, partial(_not_checkpoint, latest.checkpoint_id))

    def _rewrite(self, key: ThreadKey, dropped: Callable[[store.Stored], bool]) -> None:
        """Rewrite a namespace without the checkpoints ``dropped`` selects (one transaction)."""
        repo = self.repo
        note = "langgraph: rewrite without deleted checkpoints"
        for _attempt in range(_ATTEMPTS):
            heads = store.read_heads(repo, key)
            plan = rewrite.without(repo, heads, dropped)
            if not plan.drop:
                return
            dropped_ids = {plan.commits[c].checkpoint_id for c in plan.drop}
            side_updates = [
                RefUpdate(key.writes_ref(cid), None, value, note)
                for cid, value in store.side_checkpoint_ids(repo, key).items()
                if cid in dropped_ids
            ]
            # A dropped lead child carries its kept parent's writes: they go to a side ref.
            kept_ids = {f.checkpoint_id for c, f in plan.commits.items() if c not in plan.drop}
            orphans: dict[str, store.Writes] = {}
            for commit_id in plan.drop:
                child = plan.commits[commit_id]
                parent_id = child.parent_checkpoint_id
                if parent_id in kept_ids and child.info.get(store.FOLDED) == 1:
                    assert parent_id is not None
                    orphans[parent_id] = store.merge_writes(
                        orphans.get(parent_id, {}), store.folded_writes(repo, child)
                    )
            objects = dict(plan.objects)
            for parent_id, writes in sorted(orphans.items()):
                # Folded writes are older than any on the side ref (which win when replaced).
                side = repo.refs.get(key.writes_ref(parent_id))
                made, update = self._side_update(
                    key, parent_id, writes, note, side=side, older=True
                )
                objects.update(made)
                side_updates.append(update)
            head_ids = {c: plan.commits[c].checkpoint_id for c in heads.commits()}
            updates = (
                store.head_updates(key, heads, head_ids, plan.heads, set(head_ids), note)
                + side_updates
            )
            if self._apply(updates, objects):
                return
        raise RefConflict(key.branch, None, None, _GAVE_UP)

    # --- delta channels ------------------------------------------------------------------

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Return each channel's writes since its nearest stored value, from the commit chain.

        Walks the target checkpoint's first-parent history once (commits only, values
        decoded only for the channels asked for), as LangGraph's ``DeltaChannel`` needs.
        """
        if isinstance(channels, (str, bytes)) or not isinstance(
            channels, (Sequence, set, frozenset)
        ):
            raise TypeError(f"channels must be a list of str, got {type(channels).__name__}")
        names = list(channels)
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"channels must hold str, got {type(name).__name__}")
        if not names:
            return {}
        key = self._key(config)
        checkpoint_id = _checkpoint_id(config, "config")
        with self._lock:
            heads = store.read_heads(self.repo, key)
            target: store.Stored | None = None
            if checkpoint_id is None:
                if heads.tip is not None:
                    target = store.load(self.repo.objects, heads.tip)
                    elsewhere = self._greater_than_tip(key, target)
                    if elsewhere is not None:
                        target = elsewhere[0]
            else:
                target = self._find(key, heads, checkpoint_id)[0]
            collected: dict[str, list[PendingWrite]] = {n: [] for n in names}
            seeds: dict[str, Any] = {}
            if target is None:
                return {n: {"writes": []} for n in names}
            sides = store.side_checkpoint_ids(self.repo, key)
            remaining = set(names)
            parents = target.commit.parents
            child = target
            everything: dict[str, builtins.list[store.Stored]] | None = None
            while parents and remaining:
                current = store.load(self.repo.objects, parents[0])
                if store.is_lead(child, current.checkpoint_id):
                    folders = [child]
                else:
                    # Another line's commit may fold this checkpoint's writes: read them all once.
                    if everything is None:
                        everything = store.folders_of(store.all_commits(self.repo, heads))
                    folders = everything.get(current.checkpoint_id, [])
                writes = store.writes_of(
                    self.repo, current, folders, sides.get(current.checkpoint_id)
                )
                child = current
                for task_id, _idx, channel, doc, _path in reversed(wrap_writes(writes)):
                    if channel in remaining:
                        value = unwrap(doc, self.serde, f"a pending write to {channel!r}")
                        collected[channel].append((task_id, channel, value))
                where = store.channels_of(self.repo, current)
                present = [
                    n
                    for n in remaining
                    if n in where.state or n in where.extras or n in where.lists
                ]
                if present:
                    values, _ = store.channel_values(self.repo, current, self.serde)
                    for name in present:
                        seeds[name] = values[name]
                        remaining.discard(name)
                parents = current.commit.parents
        result: dict[str, DeltaChannelHistory] = {}
        for name in names:
            entry: DeltaChannelHistory = {"writes": list(reversed(collected[name]))}
            if name in seeds:
                entry["seed"] = seeds[name]
            result[name] = entry
        return result

    # --- async twins ------------------------------------------------------------------

    async def _run(self, call: Callable[[], _T]) -> _T:
        return await asyncio.get_running_loop().run_in_executor(None, call)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple` (runs in a worker thread)."""
        return await self._run(partial(self.get_tuple, config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list` (read in a worker thread)."""
        found = await self._run(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put` (runs in a worker thread)."""
        return await self._run(partial(self.put, config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes` (runs in a worker thread)."""
        await self._run(partial(self.put_writes, config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await self._run(partial(self.delete_thread, thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await self._run(partial(self.copy_thread, source_thread_id, target_thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await self._run(partial(self.delete_for_runs, run_ids))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        await self._run(partial(self.prune, thread_ids, strategy=strategy))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async :meth:`get_delta_channel_history`."""
        return await self._run(
            partial(self.get_delta_channel_history, config=config, channels=channels)
        )

    def __repr__(self) -> str:
        return f"StateVCSSaver({self.repo!r})"


@dataclass(frozen=True, slots=True)
class _Row:
    """A checkpoint :meth:`StateVCSSaver.list` yields, with what its tuple needs."""

    key: ThreadKey
    thread: Any
    """The thread id as the caller spelled it."""
    found: store.Stored
    folders: builtins.list[store.Stored]
    side: ObjectId | None


def _row_order(row: _Row) -> str:
    return row.found.checkpoint_id


@dataclass
class _View:
    """A thread's list items as last decoded from storage (private: only copies go out)."""

    commit_id: ObjectId
    lists: dict[str, list[Any]]
    """Its list channels' items, decoded from storage."""
    length: int
    """Items in the commit's list log (every list channel)."""


class _LazyItems(Sequence[Any]):
    """A parent's list channel, read only if the log has to be written again."""

    def __init__(self, read: Callable[[], tuple[Any, ...]], length: int) -> None:
        self._read = read
        self._length = length
        self._items: tuple[Any, ...] | None = None

    def _get(self) -> tuple[Any, ...]:
        if self._items is None:
            self._items = self._read()
        return self._items

    def __len__(self) -> int:
        return self._length  # the stored count: no item is read for it

    def __getitem__(self, index: Any) -> Any:
        return self._get()[index]


def _commits_of(found: store.Stored | None) -> tuple[ObjectId, ...]:
    """The parents a commit on ``found`` has."""
    return () if found is None else (found.commit_id,)


def _newer_than_all(heads: Iterable[store.Stored], checkpoint_id: str) -> bool:
    """Whether ``checkpoint_id`` is greater than every id of a namespace (so it is not in it).

    LangGraph's ids are time-ordered, so a new checkpoint's id almost always is: then no
    history walk is needed to learn that the id is new.
    """
    return all(checkpoint_id > store.id_bound(found) for found in heads)


def _not_checkpoint(checkpoint_id: str, found: store.Stored) -> bool:
    return found.checkpoint_id != checkpoint_id


def _retarget(name: str, source: str, target: str) -> str:
    if name.startswith(BRANCH_ROOT):
        return BRANCH_ROOT + target + name[len(BRANCH_ROOT) + len(source) :]
    for root in (HEADS_ROOT, WRITES_ROOT):
        if name.startswith(root):
            return root + target + name[len(root) + len(source) :]
    raise AssertionError(name)


def _side_name(key: ThreadKey, checkpoint_id: str) -> str | None:
    """The side ref of ``checkpoint_id``'s pending writes (``None``: an id too long to name
    one; reading such a checkpoint, if any, raises where it did)."""
    try:
        return key.writes_ref(checkpoint_id)
    except InvalidCheckpointConfig:
        return None


def _configurable(config: object, argument: str) -> Mapping[str, Any]:
    if not isinstance(config, Mapping):
        raise TypeError(
            f"{argument} must be a dict (a RunnableConfig), got {type(config).__name__}"
        )
    configurable = config.get("configurable")
    if configurable is None:
        raise InvalidCheckpointConfig(
            f"{argument} has no 'configurable' section; pass "
            '{"configurable": {"thread_id": "..."}}'
        )
    if not isinstance(configurable, Mapping):
        raise TypeError(
            f"{argument}['configurable'] must be a dict, got {type(configurable).__name__}"
        )
    return configurable


def _thread_id(value: object, argument: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, uuid.UUID) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value)
    raise TypeError(f"{argument} must be a str, got {type(value).__name__}")


def _checkpoint_id(config: object, argument: str) -> str | None:
    configurable = _configurable(config, argument)
    value = configurable.get("checkpoint_id")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise TypeError(
            f"{argument}['configurable']['checkpoint_id'] must be a str, got {type(value).__name__}"
        )
    return value


def _check_checkpoint(checkpoint: object) -> None:
    if not isinstance(checkpoint, Mapping):
        raise TypeError(f"checkpoint must be a dict, got {type(checkpoint).__name__}")
    if not isinstance(checkpoint.get("id"), str) or not checkpoint["id"]:
        raise TypeError("checkpoint['id'] must be a non-empty str")
    for field in ("channel_values", "channel_versions"):
        if not isinstance(checkpoint.get(field), Mapping):
            raise TypeError(
                f"checkpoint[{field!r}] must be a dict, got {type(checkpoint.get(field)).__name__}"
            )


def _str_list(values: object, argument: str) -> list[str]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, set, frozenset)):
        raise TypeError(f"{argument} must be a list of str, got {type(values).__name__}")
    result = []
    for value in values:
        result.append(_thread_id(value, f"{argument} items"))
    return result


def _config(thread_id: Any, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


__all__ = ["StateVCSSaver", "UnknownStrategy"]
