"""Upgrade a repository in place to storage format 2, crash-safe, keeping every old id valid.

Format 2 changes object ids (a packed leaf is not a format-1 leaf), so every commit whose
snapshot is in format 1, and every commit above one, is written again: same messages, state
bytes, extras, author, time, message and metadata, with its parents' new ids. Then:

1. an **upgrade map** (old commit id -> new commit id, a ``map`` object whose values are kept
   inline, so it holds no commit alive) is stored and named by the config key
   :data:`UPGRADE_MAP_KEY` (merged with an earlier map); gc keeps it;
2. every ref moves in **one** compare-and-swap (:meth:`Store.update_refs`): a process that
   committed meanwhile makes the upgrade stop with ``RefConflict`` and change nothing;
3. ``core.format`` becomes ``2``.

Killed at any point, the repository reads exactly the same history: before step 2 the new
objects are unreachable (gc removes them; running the upgrade again rewrites them, cheaply, as
they are already stored), after it the refs name equal commits. Reflog entries keep their old
ids (they keep the old commits alive until they expire), and an old id that gc has since
removed resolves through the upgrade map, so a hex id in a log, a tag, ``main@{3}`` or a
framework's own record of a commit still names the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import CorruptObject
from .hashing import ObjectId, from_hex, to_hex
from .history import CommitGraph, topological_order
from .idindex import without_index
from .objectdb import CURRENT_FORMAT, FORMAT_KEY, UPGRADE_MAP_KEY
from .objects import (
    PACKED_SNAPSHOT_FORMAT,
    CommitObject,
    Inline,
    MapNode,
    SnapshotObject,
    encode_with_id,
)
from .plumbing import ObjectDatabase
from .refs import HEAD
from .snapshot import MessageBase, StoredMessages, extras_entries, read_values
from .stores.base import RefUpdate
from .structures import prolly

UpgradeProgress = Callable[[int, int], None]
"""Called with (commits rewritten so far, commits to rewrite)."""


@dataclass(frozen=True)
class UpgradeReport:
    """What :meth:`Repo.upgrade` did."""

    format_before: int
    format_after: int
    commits_rewritten: int
    refs_moved: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Ref name -> (old hex id, new hex id)."""
    map_id: str | None = None
    """Hex id of the upgrade map (old commit id -> new), or None when nothing changed."""


def read_upgrade_map(db: ObjectDatabase) -> dict[ObjectId, ObjectId]:
    """Return the repository's upgrade map (empty when it was never upgraded)."""
    found = db.store.config_get(UPGRADE_MAP_KEY)
    if not found:
        return {}
    map_id = from_hex(found)
    node = db.load(map_id)
    if not isinstance(node, MapNode):
        raise CorruptObject(found, "the upgrade map is not a map object")
    result: dict[ObjectId, ObjectId] = {}
    for key, value in zip(node.keys, node.values):
        if not isinstance(value, Inline) or not isinstance(value.value, bytes):
            raise CorruptObject(found, f"the upgrade map's entry {key[:12]} is not an id")
        result[from_hex(key)] = value.value
    return result


def upgrade_map_id(db: ObjectDatabase) -> ObjectId | None:
    """Return the id of the repository's upgrade map object, if any (a gc root)."""
    found = db.store.config_get(UPGRADE_MAP_KEY)
    return from_hex(found) if found else None


class _Upgrader:
    def __init__(self, db: ObjectDatabase) -> None:
        self.db = db
        self.graph = CommitGraph(self.db)
        self.mapped: dict[ObjectId, ObjectId] = {}
        self.lists: dict[ObjectId, tuple[StoredMessages, list[ObjectId]]] = {}
        self.encoder = self._encoder()

    def _encoder(self) -> ObjectDatabase:
        encoder = ObjectDatabase(self.db.store, self.db.serializer, chunker=self.db.chunker)
        encoder.format = CURRENT_FORMAT
        return encoder

    def needs_rewrite(self, commit_id: ObjectId, commit: CommitObject) -> bool:
        if any(p in self.mapped for p in commit.parents):
            return True
        snap = self.db.load_snapshot(commit.snapshot)
        return snap.version < PACKED_SNAPSHOT_FORMAT

    def rewrite(self, commit_id: ObjectId, commit: CommitObject) -> ObjectId:
        db = self.db
        snap: SnapshotObject = db.load_snapshot(commit.snapshot)
        ids = [*prolly.items(db, snap.messages), *snap.tail]
        base: MessageBase | None = None
        keep = 0
        first = commit.parents[0] if commit.parents else None
        if first is not None and first in self.lists:
            previous, previous_ids = self.lists[first]
            keep = prolly.prefix_length(previous_ids, ids)
            base = MessageBase(previous, keep)
        messages: list[Any] = [None] * keep
        messages.extend(db.iter_docs(ids[keep:]))
        from .model import Snapshot

        snapshot = Snapshot.model_construct(
            kind=snap.kind,
            messages=messages,
            state=db.read_state_bytes(commit.snapshot),
            extras=read_values(db, extras_entries(db, snap), None),
        )
        written = self.encoder.encode_snapshot(
            snapshot, state_codec=snap.state_codec, base=base, raw_state=True
        )
        self.lists[commit_id] = (written.messages, ids)
        parents = tuple(self.mapped.get(p, p) for p in commit.parents)
        new_commit = CommitObject(
            snapshot=written.snapshot_id,
            parents=parents,
            author=commit.author,
            timestamp_us=commit.timestamp_us,
            message=commit.message,
            # A lineage index names the old commits: on new parents it would not describe them.
            metadata=commit.metadata
            if parents == commit.parents
            else without_index(commit.metadata),
        )
        new_id, encoded = encode_with_id(new_commit)
        self.encoder.put({**written.objects, new_id: encoded})
        return new_id

    def remember_list(self, commit_id: ObjectId, commit: CommitObject) -> None:
        """Note an unchanged (already format 2) commit's messages, for its children's base."""
        snap = self.db.load_snapshot(commit.snapshot)
        tree = prolly.items(self.db, snap.messages)
        ids = [*tree, *snap.tail]
        self.lists[commit_id] = (StoredMessages(snap.messages, len(tree), snap.tail, ids), ids)


def upgrade(db: ObjectDatabase, progress: UpgradeProgress | None = None) -> UpgradeReport:
    """Rewrite every format-1 commit in format 2 and move the refs; see the module docstring."""
    store = db.store
    before = db.format
    refs = dict(store.list_refs("refs/"))
    head = store.get_ref(HEAD)
    detached_head = head is not None and store.get_symbolic(HEAD) is None
    starts = list(dict.fromkeys([*refs.values(), *([head] if detached_head and head else [])]))
    upgrader = _Upgrader(db)
    order = topological_order(upgrader.graph, starts)
    todo = [c for c in order if upgrader.needs_rewrite(c, upgrader.graph.commit(c))]
    if todo:
        # Checked again in order: a commit needs rewriting when a parent was rewritten.
        done = 0
        for commit_id in order:
            commit = upgrader.graph.commit(commit_id)
            if upgrader.needs_rewrite(commit_id, commit):
                upgrader.mapped[commit_id] = upgrader.rewrite(commit_id, commit)
                done += 1
                if progress is not None:
                    progress(done, len(todo))
            else:
                upgrader.remember_list(commit_id, commit)
    map_hex: str | None = None
    moved: dict[str, tuple[str, str]] = {}
    if upgrader.mapped:
        map_hex = _store_map(db, {**read_upgrade_map(db), **upgrader.mapped})
        updates: list[RefUpdate] = []
        for name, old in refs.items():
            if old in upgrader.mapped:
                new = upgrader.mapped[old]
                updates.append(RefUpdate(name, new, old, "upgrade: storage format 2"))
                moved[name] = (to_hex(old), to_hex(new))
        if detached_head and head is not None and head in upgrader.mapped:
            updates.append(RefUpdate(HEAD, upgrader.mapped[head], head, "upgrade"))
            moved[HEAD] = (to_hex(head), to_hex(upgrader.mapped[head]))
        store.update_refs(updates, generation=db.generation)
    if before < CURRENT_FORMAT or store.config_get(FORMAT_KEY) != str(CURRENT_FORMAT):
        store.config_set(FORMAT_KEY, str(CURRENT_FORMAT))
    db.format = CURRENT_FORMAT
    return UpgradeReport(before, CURRENT_FORMAT, len(upgrader.mapped), moved, map_hex)


def _store_map(db: ObjectDatabase, mapping: Mapping[ObjectId, ObjectId]) -> str:
    """Store the upgrade map and name it in the config before any ref moves."""
    keys = sorted(to_hex(k) for k in mapping)
    node = MapNode(tuple(keys), tuple(Inline(mapping[from_hex(k)]) for k in keys))
    map_id, encoded = encode_with_id(node)
    db.put({map_id: encoded})
    db.store.config_set(UPGRADE_MAP_KEY, to_hex(map_id))
    return to_hex(map_id)


__all__ = ["UPGRADE_MAP_KEY", "UpgradeReport", "read_upgrade_map", "upgrade", "upgrade_map_id"]
