"""Maintenance: garbage collection, integrity checks and storage statistics."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from .commitgraph import AUTO_WRITE_AFTER, chain_objects, check_graph, write_graph
from .compression import MIN_DICTIONARY_SIZE, register_dictionary
from .errors import CorruptObject, MissingObject, RefsChanged, StateVCSError, StoreError
from .hashing import ObjectId, from_hex, to_hex
from .objectdb import (
    COMMIT_DICTIONARY_KEY,
    DICTIONARY_KEY,
    UPGRADE_MAP_KEY,
    ObjectDB,
    decode_stored,
    named_object,
)
from .objects import (
    DOC_PREFIX,
    ORDERED_SNAPSHOT_FORMAT,
    ZDICT_PREFIX,
    Chunked,
    CommitObject,
    Inline,
    ListNode,
    MapNode,
    SnapshotObject,
    ZstdDictionary,
    children,
    encode_doc,
    kind_of,
    leaf_problems,
)
from .refs import BRANCH_PREFIX, HEAD, short_name
from .snapshot import load_snapshot_object
from .stores.base import Store
from .structures.maps import read_map
from .structures.prolly import load_node


class GCWarning(UserWarning):
    """``gc`` deleted what it should but could not shrink the repository file (the message says
    why); the report's ``reclaimed_bytes`` is then 0."""


@dataclass(frozen=True, slots=True)
class GCReport:
    """What garbage collection found and removed."""

    reachable: int
    unreachable: int
    deleted: int
    deleted_bytes: int
    kept_recent: int
    dry_run: bool
    reclaimed_bytes: int = 0
    """How much smaller the repository got on disk (SQLite: the file after a VACUUM)."""


@dataclass(frozen=True, slots=True)
class FsckReport:
    """The result of checking every object, ref and reachable link."""

    objects_checked: int
    reachable: int
    dangling: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Whether no problem was found (dangling objects are not problems)."""
        return not self.problems


@dataclass(frozen=True, slots=True)
class StatsReport:
    """Storage use, and what a full copy per commit would have cost."""

    objects: int
    bytes_stored: int
    commits: int
    naive_bytes: int
    branches: dict[str, str]

    @property
    def dedup_ratio(self) -> float:
        """``naive_bytes / bytes_stored``: how many times smaller than a copy per commit."""
        return self.naive_bytes / self.bytes_stored if self.bytes_stored else 1.0


def _head_value(store: Store) -> ObjectId | None:
    target = store.get_symbolic(HEAD)
    return store.get_ref(target) if target else store.get_ref(HEAD)


def _load_commit(db: ObjectDB, commit_id: ObjectId) -> CommitObject:
    obj = db.load(commit_id)
    if not isinstance(obj, CommitObject):
        raise CorruptObject(to_hex(commit_id), f"expected a commit, found {type(obj).__name__}")
    return obj


def reachability_roots(store: Store) -> set[ObjectId]:
    """Return every commit a ref, ``HEAD`` or a reflog entry names.

    Reflogs of deleted refs count too: a ref deleted without its reflog would otherwise come
    back, if created again, with entries naming collected commits.
    """
    roots: set[ObjectId] = set()
    names = [HEAD, *store.list_refs("refs/")]
    for name in names:
        value = store.get_ref(name)
        if value is not None:
            roots.add(value)
    for name in sorted({*names, *store.reflog_names()}):
        for entry in store.reflog(name):
            roots.update(i for i in (entry.old, entry.new) if i is not None)
    upgrade_map = store.config_get(UPGRADE_MAP_KEY)
    if upgrade_map:  # old ids resolve through it (its entries keep no commit alive)
        roots.add(from_hex(upgrade_map))
    for key in (DICTIONARY_KEY, COMMIT_DICTIONARY_KEY):
        dictionary = store.config_get(key)
        if dictionary:  # compressed objects name it
            roots.add(named_object(dictionary, key))
    return roots


class _OrderCheck:
    """fsck's check that each recorded key order covers its map, made as the walk reads the
    maps (a snapshot's map is its child), so it costs no read of its own. A map that cannot be
    read is the walk's to report."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        self.sizes: dict[ObjectId, int] = {}
        """How many keys each map read so far holds (a map is read once, however shared)."""
        self.waiting: dict[ObjectId, list[tuple[ObjectId, str, int]]] = {}
        """Map id -> (snapshot id, "state" or "extras", keys its order names), until read."""

    def snapshot_read(self, snapshot_id: ObjectId, obj: SnapshotObject) -> None:
        for what, ref, order in (
            ("state", obj.state, obj.state_order),
            ("extras", obj.extras, obj.extras_order),
        ):
            if not order:
                continue
            if isinstance(ref, MapNode):
                self._check(snapshot_id, what, len(order), len(ref.keys))
            elif ref in self.sizes:
                self._check(snapshot_id, what, len(order), self.sizes[ref])
            else:
                self.waiting.setdefault(ref, []).append((snapshot_id, what, len(order)))

    def map_read(self, map_id: ObjectId, node: MapNode) -> None:
        self.sizes[map_id] = len(node.keys)
        for snapshot_id, what, named in self.waiting.pop(map_id, ()):
            self._check(snapshot_id, what, named, len(node.keys))

    def _check(self, snapshot_id: ObjectId, what: str, named: int, held: int) -> None:
        if named != held:
            self.problems.append(
                f"object {to_hex(snapshot_id)} is corrupt: its {what} key order names {named} "
                f"keys where its {what} map holds {held}"
            )


def mark_reachable(
    store: Store,
    roots: set[ObjectId],
    problems: list[str] | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> set[ObjectId]:
    """Return every object reachable from ``roots``, reading one batch per generation.

    With ``problems`` given, missing or corrupt objects are recorded there instead of raised.
    ``on_batch`` is called with the number of objects marked so far after each batch.
    """
    reachable: set[ObjectId] = set()
    frontier = list(roots)
    orders = _OrderCheck(problems) if problems is not None else None
    while frontier:
        batch = [i for i in dict.fromkeys(frontier) if i not in reachable]
        frontier = []
        if not batch:
            break
        found = store.get_many(batch)
        for object_id in batch:
            data = found.get(object_id)
            if data is None:
                if problems is None:
                    raise MissingObject(to_hex(object_id))
                problems.append(f"missing object {to_hex(object_id)} (referenced)")
                continue
            reachable.add(object_id)
            try:
                obj = decode_stored(store, object_id, data)
            except CorruptObject as exc:
                if problems is None:
                    raise
                problems.append(str(exc))
                continue
            if problems is not None and type(obj) is ListNode and obj.values is not None:
                problems.extend(
                    f"object {to_hex(object_id)} is corrupt: a packed leaf whose {problem}"
                    for problem in leaf_problems(obj)
                )
            if orders is not None:
                if type(obj) is MapNode:
                    orders.map_read(object_id, obj)
                elif type(obj) is SnapshotObject and obj.version == ORDERED_SNAPSHOT_FORMAT:
                    orders.snapshot_read(object_id, obj)
            frontier.extend(children(obj))
        if on_batch is not None:
            on_batch(len(reachable))
    return reachable


Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)`` with phase ``"marking"`` or ``"sweeping"``."""


def collect_garbage(
    store: Store,
    grace: timedelta,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
    expire_reflog: timedelta | None = None,
) -> GCReport:
    """Delete unreachable objects written more than ``grace`` ago.

    Safe against writers in other processes: each delete batch is refused by the store when a
    ref or reflog moved since marking (gc then marks from the new refs and goes on), and every
    delete bumps the store's gc generation, which makes writers with stale caches rewrite what
    they need instead of referencing deleted objects.
    """
    if expire_reflog is not None and not dry_run:
        store.expire_reflogs(store.now() - expire_reflog.total_seconds())
    cutoff = store.now() - grace.total_seconds()
    all_objects = dict(store.iter_objects())
    total = len(all_objects)
    on_batch = None if progress is None else (lambda done: progress("marking", done, total))
    refs_state = store.refs_state()
    roots = reachability_roots(store)
    # The commit graph's segments are kept through the sweep (they keep no commit alive), then
    # replaced by a graph of the commits that survived, and deleted: a graph is only ever a
    # faster way to the same answers, so a reader or writer still holding the old chain just
    # reads commits instead.
    graph_roots = chain_objects(store)
    reachable = mark_reachable(store, roots, on_batch=on_batch)
    graph_objects = mark_reachable(store, graph_roots - reachable, [])  # damage: fsck's to name
    reachable |= graph_objects
    old = {i for i, _ in store.iter_objects(older_than=cutoff)}
    unreachable = [i for i in all_objects if i not in reachable]
    doomed = _without_dictionaries(store, [i for i in unreachable if i in old], all_objects)
    deleted = 0
    if not dry_run:
        start = 0
        while start < len(doomed):
            batch = doomed[start : start + 1000]
            try:
                deleted += store.delete_many(batch, if_refs=refs_state)
            except RefsChanged:
                # A writer moved a ref: what it now points at may include doomed objects.
                refs_state = store.refs_state()
                fresh = reachability_roots(store) - reachable
                reachable |= _mark_more(store, fresh, reachable)
                doomed = doomed[:start] + [i for i in doomed[start:] if i not in reachable]
                continue
            start += len(batch)
            if progress is not None:
                progress("sweeping", min(start, len(doomed)), len(doomed))
    if not dry_run and _rewrite_graph(store, reachable, bool(graph_roots)):
        kept = mark_reachable(store, chain_objects(store), [])
        replaced = [i for i in graph_objects if i not in kept]
        if replaced:
            deleted += store.delete_many(replaced)
    reclaimed = 0
    if deleted:
        try:
            reclaimed = store.reclaim_space()
        except StoreError as exc:
            # The objects are gone either way; their space is reused by later writes.
            warnings.warn(str(exc), GCWarning, stacklevel=3)
    return GCReport(
        reclaimed_bytes=reclaimed,
        reachable=len(reachable),
        unreachable=len(unreachable),
        deleted=len(doomed) if dry_run else deleted,
        deleted_bytes=sum(all_objects[i] for i in doomed),
        kept_recent=len(unreachable) - len(doomed),
        dry_run=dry_run,
    )


def _without_dictionaries(
    store: Store, doomed: list[ObjectId], sizes: dict[ObjectId, int]
) -> list[ObjectId]:
    """``doomed`` less every zstd dictionary: objects compressed with one (reachable or not,
    in this repository or being written by another process) must stay readable forever."""
    candidates = [
        i for i in doomed if _DICTIONARY_SIZES[0] <= sizes.get(i, 0) <= _DICTIONARY_SIZES[1]
    ]
    kept: set[ObjectId] = set()
    for start in range(0, len(candidates), 500):
        found = store.get_many(candidates[start : start + 500])
        kept.update(i for i, data in found.items() if data[: len(ZDICT_PREFIX)] == ZDICT_PREFIX)
    return [i for i in doomed if i not in kept] if kept else doomed


_DICTIONARY_SIZES = (MIN_DICTIONARY_SIZE, 1024 * 1024)
"""The sizes a stored dictionary can have (trained ones are 4 or 32 KiB, never below
:data:`~statevcs.compression.MIN_DICTIONARY_SIZE`)."""


def _rewrite_graph(store: Store, reachable: set[ObjectId], had_graph: bool) -> bool:
    """Write the commit graph afresh over the commits that survived (when there was one, or
    the history is long enough to want one); whether that worked (a failure only leaves
    walks slower)."""
    try:
        write_graph(
            store,
            rebuild=True,
            keep=reachable.__contains__,
            min_commits=1 if had_graph else AUTO_WRITE_AFTER,
        )
    except StateVCSError as exc:
        warnings.warn(
            f"gc could not rewrite the commit graph ({exc}); walks stay correct but slower "
            "until `statevcs commit-graph write` succeeds",
            GCWarning,
            stacklevel=4,
        )
        return False
    return True


def _mark_more(store: Store, roots: set[ObjectId], marked: set[ObjectId]) -> set[ObjectId]:
    """Mark from ``roots``, not descending into objects already in ``marked``."""
    found: set[ObjectId] = set()
    frontier = [r for r in roots if r not in marked]
    while frontier:
        batch = [i for i in dict.fromkeys(frontier) if i not in found and i not in marked]
        frontier = []
        stored = store.get_many(batch)
        for object_id in batch:
            data = stored.get(object_id)
            if data is None:
                continue
            found.add(object_id)
            frontier.extend(children(decode_stored(store, object_id, data)))
    return found


def check_repository(store: Store, db: ObjectDB) -> FsckReport:
    """Re-hash and decode every object, check refs and reachable links; collect problems.

    Damage that stops a phase (an unreadable table, a damaged ref) is reported as a problem
    too; the check goes on with the next phase instead of raising.
    """
    problems: list[str] = []
    ids: list[ObjectId] = []
    listed = False
    try:
        ids = [i for i, _ in store.iter_objects()]
        listed = True
    except StateVCSError as exc:
        problems.append(f"the object table cannot be listed: {exc}")
    for start in range(0, len(ids), 1000):
        batch = ids[start : start + 1000]
        try:
            found = store.get_many_stored(batch)  # the store's bytes, not a local cache's
        except StateVCSError as exc:
            problems.append(f"objects cannot be read: {exc}")
            continue
        for object_id in batch:
            data = found.get(object_id)
            if data is None:
                problems.append(f"object {to_hex(object_id)} vanished while checking")
                continue
            try:
                decode_stored(store, object_id, data)
            except CorruptObject as exc:
                problems.append(str(exc))
    problems.extend(_dictionary_problems(store))
    reachable: set[ObjectId] = set()
    try:
        if store.get_symbolic(HEAD) is None and store.get_ref(HEAD) is None:
            problems.append("HEAD is neither attached to a branch nor pointing at a commit")
        for name, value in store.list_refs("refs/").items():
            try:
                _load_commit(db, value)
            except (MissingObject, CorruptObject) as exc:
                problems.append(f"ref {name} -> {to_hex(value)}: {exc}")
        reachable = mark_reachable(store, reachability_roots(store), problems)
    except StateVCSError as exc:
        problems.append(f"refs cannot be checked: {exc}")
    try:
        graph_roots = chain_objects(store) - reachable
        reachable |= mark_reachable(store, graph_roots, [])  # its damage is named below
        problems.extend(check_graph(store))
    except StateVCSError as exc:
        problems.append(f"the commit graph cannot be checked: {exc}")
    if listed:
        problems.extend(_unstored(store, reachable - set(ids)))
    return FsckReport(
        objects_checked=len(ids),
        reachable=len(reachable),
        dangling=len(set(ids) - reachable),
        # Each once: the re-hash and the walk from the refs both meet a damaged object.
        problems=tuple(dict.fromkeys(problems)),
    )


def _unstored(store: Store, unlisted: set[ObjectId]) -> list[str]:
    """Problems for reachable objects the store does not hold.

    Marking may read through a local cache (S3's), which can still hold objects deleted from
    the store itself: the listing is the store's word. An object written after the listing is
    asked of the store again before it counts as missing.
    """
    if not unlisted:
        return []
    try:
        present = store.has_many(unlisted)
    except StateVCSError as exc:
        return [f"objects cannot be checked for presence: {exc}"]
    return [
        f"missing object {to_hex(i)} (reachable, but not in the store; restore it from a backup)"
        for i in sorted(unlisted - present)
    ]


def _dictionary_problems(store: Store) -> list[str]:
    """The config keys naming the dictionaries writers compress with that name none (a writer
    refuses to write then); a missing one is named with the missing reachable objects."""
    problems = []
    for key in (DICTIONARY_KEY, COMMIT_DICTIONARY_KEY):
        found = store.config_get(key)
        try:
            object_id = named_object(found, key) if found else None
            data = None if object_id is None else store.get_many([object_id]).get(object_id)
            obj = None if data is None else decode_stored(store, object_id or b"", data)
            if obj is not None and not isinstance(obj, ZstdDictionary):
                raise CorruptObject(str(found), f"expected a zstd dictionary, found {kind_of(obj)}")
            if isinstance(obj, ZstdDictionary):
                register_dictionary(obj.data, store.identity)
        except (CorruptObject, ValueError) as exc:
            problems.append(
                f"config key {key} names no usable dictionary ({exc}); writes are refused "
                "until the config is restored from a backup"
            )
    return problems


def measure_repository(store: Store, db: ObjectDB) -> StatsReport:
    """Count objects and bytes, and what one full copy per commit would have cost."""
    sizes = dict(store.iter_objects())
    commits: list[CommitObject] = []
    seen: set[ObjectId] = set()
    frontier = list(set(store.list_refs("refs/").values()))
    head = _head_value(store)
    if head is not None:
        frontier.append(head)
    while frontier:
        commit_id = frontier.pop()
        if commit_id in seen:
            continue
        seen.add(commit_id)
        obj = _load_commit(db, commit_id)
        commits.append(obj)
        frontier.extend(obj.parents)
    item_sizes: dict[ObjectId, int] = {}
    list_sizes: dict[ObjectId, int] = {}

    def item_size(object_id: ObjectId) -> int:
        size = item_sizes.get(object_id)
        if size is None:
            obj = db.load(object_id)
            size = obj.size if isinstance(obj, Chunked) else sizes.get(object_id, 0)
            item_sizes[object_id] = size
        return size

    def list_size(root: ObjectId) -> int:
        # Children before parents with an explicit stack: a crafted tree can be any height.
        # Each child must sit one level below its parent, so every walk ends.
        stack: list[tuple[ObjectId, ListNode | None, int]] = [(root, None, -1)]
        while stack:
            object_id, node, level = stack.pop()
            if node is None:
                if object_id in list_sizes:
                    continue
                node = load_node(db, object_id)
                if level >= 0 and node.level != level:
                    raise CorruptObject(
                        to_hex(object_id),
                        f"a list node at level {node.level} sits where level {level} belongs",
                    )
                if node.level == 0:
                    if node.values is None:
                        list_sizes[object_id] = sum(item_size(i) for i in node.ids)
                    else:  # a packed leaf holds its messages, apart from large ones
                        list_sizes[object_id] = sum(
                            item_size(i) if v is None else len(v) + len(DOC_PREFIX)
                            for i, v in zip(node.ids, node.values)
                        )
                    continue
                stack.append((object_id, node, level))
                stack.extend((c, None, node.level - 1) for c in node.ids)
            else:
                list_sizes[object_id] = sum(list_sizes[c] for c in node.ids)
        return list_sizes[root]

    naive = 0
    for commit_object in commits:
        snap = load_snapshot_object(db, commit_object.snapshot)
        naive += list_size(snap.messages) + sum(item_size(i) for i in snap.tail)
        for ref in (snap.state, snap.extras):
            for value in read_map(db, ref).values():
                if isinstance(value, Inline):
                    naive += len(encode_doc(value.value))
                else:
                    naive += item_size(value)
    return StatsReport(
        objects=len(sizes),
        bytes_stored=sum(sizes.values()),
        commits=len(commits),
        naive_bytes=naive,
        branches={short_name(k): to_hex(v) for k, v in store.list_refs(BRANCH_PREFIX).items()},
    )


__all__ = [
    "FsckReport",
    "GCReport",
    "GCWarning",
    "StatsReport",
    "check_repository",
    "collect_garbage",
    "mark_reachable",
    "measure_repository",
    "reachability_roots",
]
