"""Checkpoints as commits: reading and writing one thread namespace's objects and refs.

One checkpoint is one commit (its parent: the parent checkpoint's commit) of a snapshot of kind
``langgraph.checkpoint``:

* list-valued channels share the snapshot's prolly list, one message document per item, in
  the order the items arrived, each naming its channel: a step that appends k items writes k
  documents and O(log n) tree nodes, whatever the thread's length;
* other plain channel values are state values (the repository's serializer); the rest go
  through LangGraph's ``serde`` into extras (``value:<channel>``);
* the commit's ``langgraph`` metadata holds the checkpoint id, the parent checkpoint id and
  the checkpoint minus its values as JSON text (``cp``: ts is the commit's timestamp; ``cpt``:
  with its ts; extras ``checkpoint`` if not plain JSON); ``metadata`` holds LangGraph's
  checkpoint metadata when it is JSON (else it is in extras);
* extras ``lists`` holds the list channels' lengths; ``pw`` the parent checkpoint's pending
  writes, folded in when this checkpoint was put as the parent's lead child (flag ``pw`` in
  the commit: 1 with writes, 0 without); writes not folded yet live in side commits
  (``writes``, kind ``langgraph.writes``) on ``refs/langgraph/writes/...``.

Nothing here writes: functions return objects and ref updates for one atomic ``refs.update``.
"""

from __future__ import annotations

import json
from bisect import bisect_left, insort
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, overload

from langgraph.checkpoint.serde.base import SerializerProtocol

from ... import idindex
from ...commitfields import canonical_metadata, check_text, timestamp_us
from ...commitgraph import label
from ...errors import CorruptObject, MissingObject, SerializationError, StateVCSError
from ...hashing import ObjectId, hash_bytes, to_hex
from ...history import CommitGraph, is_ancestor, walk
from ...idindex import (
    GAP_FIELD,
    INDEX_FIELD,
    Hit,
    Segment,
    extend,
    fields_of,
    key_of,
    lookup,
    read_segment,
    read_segments,
    walk_line,
)
from ...objects import CommitObject, MapValue, SnapshotObject, encode_doc
from ...plumbing import ObjectDatabase
from ...repo import Repo
from ...serializers import serializer_for
from ...snapshot import MessageBase, Snapshot, StoredMessages, read_conversation, read_values
from ...stores.base import RefUpdate
from ...structures import prolly
from ...structures.maps import read_map
from ..stored import paused_gc
from .codec import (
    fresh_copy,
    is_plain,
    item_channel,
    item_doc,
    item_value,
    read_writes,
    unwrap,
    wrap,
    wrap_messages,
    wrap_writes,
)
from .errors import NotACheckpoint
from .names import ThreadKey, decode
from .readahead import read_ahead

KIND_CHECKPOINT = "langgraph.checkpoint"
"""The snapshot kind of a checkpoint commit."""
KIND_WRITES = "langgraph.writes"
"""The snapshot kind of a side commit holding pending writes."""
INFO = "langgraph"
VALUE_PREFIX = "value:"
ITEM_PREFIX = "i:"
"""Extras keys of message documents that values and pending writes name (by content hash)."""
_MESSAGE_FORMS = ("m", "ml", "md")
_WRITES_KEYS = ("writes", "pw")
Writes = dict[tuple[str, int], tuple[str, str, Any, str]]


class Log(Sequence[Any]):
    """A message list whose first ``keep`` entries are already stored (never read here)."""

    def __init__(self, keep: int, new: list[dict[str, Any]]) -> None:
        self._keep = keep
        self._new = new

    def __len__(self) -> int:
        return self._keep + len(self._new)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not self._keep <= index < len(self):
            raise IndexError("only the new entries of a log can be read")
        return self._new[index - self._keep]


@dataclass
class Stored:
    """One checkpoint commit, read lazily."""

    commit_id: ObjectId
    commit: CommitObject
    checkpoint_id: str
    info: dict[str, Any]
    _snapshot: SnapshotObject | None = None
    _extras: dict[str, Any] | None = None
    _own_extras: dict[str, Any] | None = None

    def snapshot(self, db: ObjectDatabase) -> SnapshotObject:
        """The commit's snapshot object."""
        if self._snapshot is None:
            self._snapshot = db.load_snapshot(self.commit.snapshot)
        return self._snapshot

    def extras(self, db: ObjectDatabase) -> dict[str, Any]:
        """The snapshot's extras documents (values still wrapped)."""
        if self._extras is None:
            snap = self.snapshot(db)
            self._extras = join_extras(read_values(db, read_map(db, snap.extras), None))
        return self._extras

    def own_extras(self, db: ObjectDatabase) -> dict[str, Any]:
        """The extras documents of this checkpoint's own tuple: all but the pending writes of
        its parent it folds (read only by :func:`folded_writes`), see :func:`own_entries`."""
        if self._own_extras is None:
            if self._extras is not None:
                self._own_extras = {k: v for k, v in self._extras.items() if k != FOLDED}
            else:
                entries = read_map(db, self.snapshot(db).extras)
                own = join_extras(read_values(db, own_entries(entries), None))
                if FOLDED not in entries:
                    self._extras = own  # the same documents: not read twice
                self._own_extras = own
        return self._own_extras

    @property
    def parent_checkpoint_id(self) -> str | None:
        """The parent checkpoint id LangGraph gave (it may have been deleted since)."""
        parent = self.info.get("parent_checkpoint_id")
        return parent if isinstance(parent, str) else None

    @property
    def run_id(self) -> str | None:
        """The run that wrote this checkpoint, if LangGraph said."""
        run = self.info.get("run_id")
        if run is None:
            meta = self.commit.metadata.get("metadata")
            run = meta.get("run_id") if isinstance(meta, dict) else None
        return run if isinstance(run, str) else None


def own_entries(entries: Mapping[str, MapValue]) -> dict[str, MapValue]:
    """The extras map entries a checkpoint's own tuple reads: not the pending writes of its
    parent it folds (``pw``), nor the message items only those name."""
    if FOLDED not in entries:
        return dict(entries)
    kept = {k: v for k, v in entries.items() if k != FOLDED}
    if any(k.startswith(VALUE_PREFIX) or k in _WRITES_KEYS for k in kept):
        return kept  # a value or its own writes may name any item
    return {k: v for k, v in kept.items() if not k.startswith(ITEM_PREFIX)}


def stored(commit_id: ObjectId, commit: CommitObject) -> Stored:
    """Wrap a commit object as a checkpoint (``NotACheckpoint`` for other commits)."""
    info = commit.metadata.get(INFO)
    if not isinstance(info, dict) or not isinstance(info.get("checkpoint_id"), str):
        raise NotACheckpoint(
            f"commit {to_hex(commit_id)[:12]} is on a LangGraph thread's branch but is not a "
            "checkpoint; move other work off the threads/ branches (statevcs branch -m)"
        )
    return Stored(commit_id, commit, info["checkpoint_id"], info)


def load(db: ObjectDatabase, commit_id: ObjectId) -> Stored:
    """Read checkpoint commit ``commit_id``."""
    return stored(commit_id, db.load_commit(commit_id))


@dataclass
class Heads:
    """A namespace's leaf checkpoints: the branch tip (the latest) and the other leaves."""

    tip: ObjectId | None
    leaves: dict[str, ObjectId]
    """Leaf ref name -> commit."""

    def commits(self) -> list[ObjectId]:
        """Every head commit, the tip first."""
        found = [] if self.tip is None else [self.tip]
        found.extend(c for c in self.leaves.values() if c not in found)
        return found


def read_heads(repo: Repo, key: ThreadKey) -> Heads:
    """Return the heads of ``key``'s namespace."""
    return Heads(repo.refs.get(key.branch), repo.refs.as_dict(key.leaf_prefix))


def heads_after(key: ThreadKey, heads: Heads, updates: Sequence[RefUpdate]) -> Heads:
    """The heads of ``key``'s namespace once ``updates`` (a batch that moved them) applied."""
    tip, leaves = heads.tip, dict(heads.leaves)
    for update in updates:
        if update.name == key.branch:
            tip = update.new
        elif update.name.startswith(key.leaf_prefix):
            if update.new is None:
                leaves.pop(update.name, None)
            else:
                leaves[update.name] = update.new
    return Heads(tip, leaves)


def all_commits(repo: Repo, heads: Heads) -> Iterator[Stored]:
    """Yield every checkpoint of a namespace, newest commit first."""
    starts = heads.commits()
    if not starts:
        return
    for commit_id, commit in walk(CommitGraph(repo.objects), starts):
        yield stored(commit_id, commit)


def preload(repo: Repo, found: Sequence[Stored]) -> None:
    """Read the snapshots of ``found`` and their extras maps in a few batches, not one by one."""
    db = repo.objects
    step = 512
    for start in range(0, len(found), step):
        chunk = [s for s in found[start : start + step] if s._snapshot is None]
        loaded = db.load_many([s.commit.snapshot for s in chunk])
        for s in chunk:
            snap = loaded.get(s.commit.snapshot)
            if isinstance(snap, SnapshotObject):
                s._snapshot = snap
        nodes = [s._snapshot.extras for s in chunk if s._snapshot is not None]
        db.load_many([n for n in nodes if isinstance(n, bytes)])


def head_updates(
    key: ThreadKey,
    heads: Heads,
    head_ids: Mapping[ObjectId, str],
    add: Mapping[ObjectId, str],
    drop: set[ObjectId],
    note: str,
    below: Container[ObjectId] = (),
) -> list[RefUpdate]:
    """Ref moves that make the heads ``heads - drop + add`` (the latest id on the branch).

    ``below`` names commits the added ones descend from. A move is logged only when it
    leaves its ref's old commit reachable from no head (a checkpoint replaced or pruned):
    a step that extends a thread is already recorded by the commits themselves.
    """
    wanted: dict[ObjectId, str] = {c: i for c, i in head_ids.items() if c not in drop}
    wanted.update(add)

    def logged(old: ObjectId | None) -> bool:
        return old is not None and old not in wanted and old not in below

    updates: list[RefUpdate] = []
    tip: ObjectId | None = None
    if wanted:
        # The latest checkpoint is the greatest id (uuid6: time-ordered), as LangGraph reads it.
        tip = max(wanted, key=lambda c: (wanted[c], c in add))
    # Always a compare-and-swap on the branch, even when the tip stays: the heads were read
    # in two steps, and a writer that moved the branch in between makes this batch retry.
    updates.append(RefUpdate(key.branch, tip, heads.tip, note, log=logged(heads.tip)))
    kept = set(wanted) - {tip}
    present: set[ObjectId] = set()
    for name, commit_id in heads.leaves.items():
        if (
            commit_id in kept
            and commit_id not in present
            and name == key.leaf_ref(to_hex(commit_id))
        ):
            present.add(commit_id)
        else:
            # A leaf ref's reflog is deleted with the ref (the saver's _apply): a leaf commit
            # left reachable from no head is logged on the branch too, which keeps it for
            # the reflog's life as the branch's own old tips are kept.
            lost = logged(commit_id)
            also = (key.branch,) if lost else ()
            updates.append(RefUpdate(name, None, commit_id, note, log_also=also, log=lost))
    for commit_id in sorted(kept - present):
        updates.append(RefUpdate(key.leaf_ref(to_hex(commit_id)), commit_id, None, note, log=False))
    return updates


# --- reading values ----------------------------------------------------------------------


def _state_codec(repo: Repo, snap: SnapshotObject) -> Any:
    return serializer_for(snap.state_codec, repo.serializer)


@dataclass
class Channels:
    """A checkpoint's stored channels, by where each lives."""

    state: dict[str, bytes] = field(default_factory=dict)
    """Plain values: serialized bytes in the snapshot's state codec."""
    extras: dict[str, Any] = field(default_factory=dict)
    """Other values: wrapped documents."""
    lists: dict[str, int] = field(default_factory=dict)
    """List channels and their lengths."""


def channels_of(repo: Repo, found: Stored) -> Channels:
    """Return where each of a checkpoint's channels is stored (values not decoded)."""
    snap = found.snapshot(repo.objects)
    extras = found.own_extras(repo.objects)
    lists = extras.get("lists") or {}
    if not isinstance(lists, dict):
        raise CorruptObject(to_hex(found.commit_id), "its list channels are not a map")
    return Channels(
        state=repo.objects.read_state_bytes(found.commit.snapshot)
        if read_map(repo.objects, snap.state)
        else {},
        extras={k[len(VALUE_PREFIX) :]: v for k, v in extras.items() if k.startswith(VALUE_PREFIX)},
        lists={str(k): int(v) for k, v in lists.items()},
    )


def checkpoint_doc(repo: Repo, found: Stored, serde: SerializerProtocol) -> dict[str, Any]:
    """The stored checkpoint without its values (id, ts, versions, versions seen, ...)."""
    for field_name in ("cp", "cpt"):
        text = found.info.get(field_name)
        if isinstance(text, str):
            # Kept in the commit (no object of its own) without the id; under "cp" also
            # without ts, which is then the commit's own timestamp. JSON text, not a map:
            # commit metadata sorts keys, and LangGraph's version maps keep their order.
            try:
                inline = json.loads(text)
            except ValueError:
                inline = None
            if not isinstance(inline, dict):
                raise CorruptObject(to_hex(found.commit_id), "its checkpoint is not a map")
            value: dict[str, Any] = {"v": inline.pop("v")} if "v" in inline else {}
            if field_name == "cp":
                value["ts"] = iso_timestamp(found.commit.timestamp_us)
            elif "ts" in inline:
                value["ts"] = inline.pop("ts")
            value["id"] = found.checkpoint_id
            value.update(inline)
            return value
    value = unwrap(found.own_extras(repo.objects).get("checkpoint"), serde, "the checkpoint")
    if not isinstance(value, dict):
        raise CorruptObject(to_hex(found.commit_id), "its checkpoint is not a map")
    return value


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_timestamp(us: int) -> str:
    """The ISO text LangGraph gives a UTC time (``datetime.isoformat``) of ``us`` microseconds."""
    return (_EPOCH + timedelta(microseconds=us)).isoformat()


def inline_checkpoint(checkpoint: Mapping[str, Any], us: int) -> dict[str, Any] | None:
    """The commit info fields holding the checkpoint (minus values and id), if plain JSON.

    ``{"cp": doc}`` when its ts is the commit's timestamp (then left out), else
    ``{"cpt": doc}``; ``None`` when the checkpoint is not plain JSON (it goes to extras).
    """
    doc = {k: v for k, v in checkpoint.items() if k not in ("channel_values", "id")}
    name = "cpt"
    if isinstance(doc.get("ts"), str) and doc["ts"] == iso_timestamp(us):
        del doc["ts"]
        name = "cp"
    if not is_plain(doc, allow_bytes=False):
        return None
    return {name: json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False)}


def checkpoint_us(ts: object) -> int:
    """The commit timestamp (UTC microseconds) of a checkpoint whose ``ts`` is ``ts``."""
    return timestamp_us(_timestamp(ts))


def metadata_of(repo: Repo, found: Stored, serde: SerializerProtocol) -> dict[str, Any]:
    """LangGraph's metadata of a checkpoint."""
    # A copy that shares nothing: the nested values belong to the cached commit (and its
    # extras), which a later rewrite of the thread encodes again.
    meta = found.commit.metadata.get("metadata")
    if isinstance(meta, dict):
        return dict(fresh_copy(meta))
    value = unwrap(found.own_extras(repo.objects).get("metadata"), serde, "the metadata")
    return dict(fresh_copy(value)) if isinstance(value, dict) else {}


class Decoded:
    """Items decoded during one ``list`` call, shared by the checkpoints it yields.

    Each distinct item is decoded once; the items below a prolly root (shared by every
    checkpoint until the next leaf closes) are split into channels once per root, so a
    checkpoint's lists are its root's lists plus its few tail items, copied in C.
    """

    _ROOTS = 8

    def __init__(self) -> None:
        self.items: dict[ObjectId, tuple[str, Any]] = {}
        self.roots: dict[ObjectId, tuple[dict[str, list[Any]], set[ObjectId]]] = {}

    def decode(
        self,
        repo: Repo,
        ids: Sequence[ObjectId],
        serde: SerializerProtocol,
        taken: Container[ObjectId] = (),
    ) -> list[tuple[str, Any]]:
        """The ``(channel, value)`` of each item id (decoding those not seen yet).

        An id met again in ``ids``, or already in ``taken`` (the other items of the same
        checkpoint), gets its own copy: one checkpoint never holds one object twice.
        """
        items = self.items
        unique = dict.fromkeys(ids)
        wanted = [i for i in unique if i not in items]
        if wanted:
            for object_id, doc in zip(wanted, repo.objects.load_docs(wanted)):
                items[object_id] = (item_channel(doc), item_value(doc, serde))
        if len(unique) == len(ids) and not (taken and any(i in taken for i in unique)):
            # No id twice: every item is the memo's own object (the common case, in C).
            return [items[object_id] for object_id in ids]
        out: list[tuple[str, Any]] = []
        seen: set[ObjectId] = set()
        for object_id in ids:
            channel, value = items[object_id]
            if object_id in seen or object_id in taken:
                value = fresh_copy(value)
            seen.add(object_id)
            out.append((channel, value))
        return out

    def prefetch(self, repo: Repo, found: Sequence[Stored], serde: SerializerProtocol) -> None:
        """Decode the tail items of ``found`` not seen yet, in one batch."""
        ids: list[ObjectId] = []
        for item in found:
            if item._snapshot is not None:
                ids.extend(item._snapshot.tail)
        wanted = [i for i in dict.fromkeys(ids) if i not in self.items]
        for object_id, doc in zip(wanted, repo.objects.load_docs(wanted)):
            try:
                self.items[object_id] = (item_channel(doc), item_value(doc, serde))
            except Exception:
                # Not every checkpoint read ahead is yielded (limit, filter, before): an item
                # that cannot be decoded fails only the call that yields a checkpoint with it.
                continue

    def below(
        self, repo: Repo, root: ObjectId, serde: SerializerProtocol
    ) -> tuple[dict[str, list[Any]], set[ObjectId]]:
        """The items under prolly root ``root`` by channel, and their ids (do not mutate)."""
        cached = self.roots.get(root)
        if cached is None:
            ids = prolly.items(repo.objects, root)
            decoded = self.decode(repo, ids, serde)
            channels = {channel for channel, _ in decoded}
            lists: dict[str, list[Any]]
            if len(channels) == 1:
                lists = {channels.pop(): [value for _, value in decoded]}
            else:
                lists = {}
                for channel, value in decoded:
                    lists.setdefault(channel, []).append(value)
            if len(self.roots) >= self._ROOTS:
                del self.roots[next(iter(self.roots))]
            cached = self.roots[root] = (lists, set(ids))
        return cached


def _shared_lists(
    repo: Repo, found: Stored, serde: SerializerProtocol, memo: Decoded, lists: dict[str, int]
) -> dict[str, list[Any]]:
    snap = found.snapshot(repo.objects)
    below, below_ids = memo.below(repo, snap.messages, serde)
    tail: dict[str, list[Any]] = {}
    for channel, value in memo.decode(repo, snap.tail, serde, below_ids):
        tail.setdefault(channel, []).append(value)
    unknown = (set(below) | set(tail)) - set(lists)
    if unknown:
        raise CorruptObject(
            to_hex(found.commit_id), f"list item of unknown channel {sorted(unknown)[0]!r}"
        )
    result = {name: below.get(name, []) + tail.get(name, []) for name in lists}
    for name, count in lists.items():
        if len(result[name]) != count:
            raise CorruptObject(
                to_hex(found.commit_id), f"list channel {name!r} should hold {count} items"
            )
    return result


def list_items(
    repo: Repo,
    found: Stored,
    serde: SerializerProtocol,
    memo: Decoded | None,
    ids_out: dict[str, list[ObjectId]] | None = None,
) -> dict[str, list[Any]]:
    """Decode a checkpoint's list channels (``memo`` shares decoded items between calls).

    ``ids_out`` receives each channel's item document ids, in order.
    """
    lists = channels_of_lists(repo, found)
    if not lists:
        return {}
    if memo is not None:
        return _shared_lists(repo, found, serde, memo, lists)
    result: dict[str, list[Any]] = {name: [] for name in lists}
    snap = found.snapshot(repo.objects)
    # Decoded per occurrence: an item that appears twice must be two objects. Packed leaves
    # (storage format 2) are decoded whole, without a document lookup per item.
    with paused_gc():
        docs, ids, tail = read_conversation(repo.objects, snap)
        docs.extend(tail)
        ids.extend(snap.tail)
        for object_id, doc in zip(ids, docs):
            channel: Any = doc.get("channel") if type(doc) is dict else None
            into = result.get(channel) if type(channel) is str else None
            if into is None:
                # item_channel raises its own error for an item naming no channel at all.
                unknown = item_channel(doc)
                raise CorruptObject(to_hex(object_id), f"list item of unknown channel {unknown!r}")
            into.append(item_value(doc, serde))
            if ids_out is not None:
                ids_out.setdefault(channel, []).append(object_id)
    for name, count in lists.items():
        if len(result[name]) != count:
            raise CorruptObject(
                to_hex(found.commit_id), f"list channel {name!r} should hold {count} items"
            )
    return result


def channels_of_lists(repo: Repo, found: Stored) -> dict[str, int]:
    """The list channels of a checkpoint and their lengths."""
    lists = found.own_extras(repo.objects).get("lists") or {}
    if not isinstance(lists, dict):
        raise CorruptObject(to_hex(found.commit_id), "its list channels are not a map")
    return {str(k): int(v) for k, v in lists.items()}


def channel_values(
    repo: Repo,
    found: Stored,
    serde: SerializerProtocol,
    memo: Decoded | None = None,
    ids_out: dict[str, list[ObjectId]] | None = None,
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Decode every channel value of a checkpoint; also return the list channels alone."""
    snap = found.snapshot(repo.objects)
    values: dict[str, Any] = {}
    state_entries = read_map(repo.objects, snap.state)
    if state_entries:
        values.update(read_values(repo.objects, state_entries, _state_codec(repo, snap)))
    for key, doc in found.own_extras(repo.objects).items():
        if key.startswith(VALUE_PREFIX):
            name = key[len(VALUE_PREFIX) :]
            values[name] = unwrap(doc, serde, f"channel {name!r}")
    lists = list_items(repo, found, serde, memo, ids_out)
    values.update(lists)
    return values, lists


def own_writes(repo: Repo, found: Stored) -> Writes:
    """The pending writes stored in a checkpoint's own commit (older repositories)."""
    extras = found.own_extras(repo.objects)
    return read_writes(extras.get("writes")) if "writes" in extras else {}


FOLDED = "pw"
"""Extras key (and commit info flag) of the parent checkpoint's writes folded into a child."""


def folded_writes(repo: Repo, child: Stored) -> Writes:
    """The writes of ``child``'s parent checkpoint that ``child``'s commit carries."""
    if child.info.get(FOLDED) != 1:
        return {}
    return read_writes(child.extras(repo.objects).get(FOLDED))


def is_lead(child: Stored, parent_checkpoint_id: str) -> bool:
    """Whether ``child`` was put while its parent ``parent_checkpoint_id`` was a leaf.

    Only such a child (the parent's lead; at most one is reachable) folds the parent's
    writes, so when the lead is known no other commit needs to be looked at.
    """
    return FOLDED in child.info and child.parent_checkpoint_id == parent_checkpoint_id


def leads(children: Iterable[Stored], parent: Stored) -> list[Stored]:
    """Those of ``children`` that are ``parent``'s lead and still on top of its commit.

    A rewrite that put the parent again (or dropped it) moved its old children off its
    commit; what they carried went with the rewrite, so they no longer count.
    """
    return [
        c
        for c in children
        if is_lead(c, parent.checkpoint_id) and c.commit.parents[:1] == (parent.commit_id,)
    ]


def folders_of(found: Iterable[Stored]) -> dict[str, list[Stored]]:
    """``{checkpoint id: the commits carrying its folded writes}`` among ``found`` (the
    lead children with writes, each on top of the commit of the checkpoint it names)."""
    items = list(found)
    by_commit = {s.commit_id: s for s in items}
    result: dict[str, list[Stored]] = {}
    for item in items:
        if item.info.get(FOLDED) != 1 or not item.commit.parents:
            continue
        parent = by_commit.get(item.commit.parents[0])
        if parent is not None and leads([item], parent):
            result.setdefault(parent.checkpoint_id, []).append(item)
    return result


def folding(children: Iterable[Stored], parent: Stored) -> list[Stored]:
    """The commits among ``children`` that carry ``parent``'s folded writes."""
    return [c for c in leads(children, parent) if c.info.get(FOLDED) == 1]


INDEX_AFTER = 256
"""A walk that passes this many commits before it finds its checkpoint reads the rest of
the namespace too and returns an :class:`Index` of it."""


@dataclass
class Index:
    """Where each checkpoint of a namespace is, valid for exactly the heads it was read from.

    Commit ids are content hashes over the whole history below them, so equal heads mean the
    same commits: the index is used only while a namespace's heads are the ones it names.
    """

    heads: Heads
    commits: dict[str, ObjectId] = field(default_factory=dict)
    """Checkpoint id -> its commit (the first met, heads first, as :func:`find_or_index` meets
    them)."""
    children: dict[str, list[ObjectId]] = field(default_factory=dict)
    """Checkpoint id -> the commits whose parent checkpoint it is."""

    _order: list[str] | None = None
    """The checkpoint ids, sorted once ``list`` asks (then kept sorted)."""

    def add(self, found: Stored) -> None:
        """Record one more commit of the namespace (in :func:`find_or_index`'s order)."""
        if found.checkpoint_id not in self.commits:
            self.commits[found.checkpoint_id] = found.commit_id
            order = self._order
            if order is not None:
                if not order or found.checkpoint_id > order[-1]:
                    order.append(found.checkpoint_id)  # ids are time-ordered: the usual case
                else:
                    # A new list, so a list() call reading the old one sees its positions stay.
                    order = order.copy()
                    insort(order, found.checkpoint_id)
                    self._order = order
        parent = found.info.get("parent_checkpoint_id")
        if type(parent) is str:
            self.children.setdefault(parent, []).append(found.commit_id)

    def valid_for(self, heads: Heads) -> bool:
        """Whether ``heads`` are the heads this index was read from."""
        return heads.tip == self.heads.tip and heads.leaves == self.heads.leaves

    def newest_first(self, before: str | None = None) -> Iterator[str]:
        """The ids below ``before`` (all if ``None``), greatest first: O(log n) to the first.

        Later additions (the saver's own puts) do not show: they append past the ids read
        or replace the list.
        """
        if self._order is None:
            self._order = sorted(self.commits)
        order = self._order
        end = len(order) if before is None else bisect_left(order, before)
        return (order[position] for position in range(end - 1, -1, -1))

    def find(self, repo: Repo, checkpoint_id: str) -> tuple[Stored | None, list[Stored]]:
        """:func:`find_or_index`'s checkpoint and folding commits, from the index."""
        commit_id = self.commits.get(checkpoint_id)
        if commit_id is None:
            return None, []
        children = [load(repo.objects, c) for c in self.children.get(checkpoint_id, ())]
        found = load(repo.objects, commit_id)
        return found, folding(children, found)


def find_or_index(
    repo: Repo, heads: Heads, checkpoint_id: str
) -> tuple[Stored | None, list[Stored], Index | None]:
    """The commit of ``checkpoint_id`` in a namespace (heads first, then history), the commits
    that fold its writes, and an :class:`Index` of the namespace when the walk went past
    :data:`INDEX_AFTER` commits (it then reads the rest of the namespace: a thread whose old
    checkpoints are looked up once tends to be looked up again).

    A head is a leaf (no child folds anything); otherwise the walk stops as soon as the
    checkpoint and its lead child have both been seen, else it reads the whole namespace.
    """
    index = Index(heads)
    head_ids = heads.commits()
    for head in head_ids:
        found = load(repo.objects, head)
        if found.checkpoint_id == checkpoint_id:
            return found, [], None
        index.add(found)
    target: Stored | None = None
    seen: list[Stored] = []
    walked = 0
    commits = all_commits(repo, heads)
    for candidate in commits:
        walked += 1
        if candidate.commit_id not in head_ids:
            index.add(candidate)
        if candidate.checkpoint_id == checkpoint_id:
            if target is None:
                target = candidate
        elif candidate.parent_checkpoint_id == checkpoint_id:
            seen.append(candidate)
        if target is not None and leads(seen, target):
            break
    else:
        return target, folding(seen, target) if target is not None else [], index
    assert target is not None
    folders = folding(seen, target)
    if walked < INDEX_AFTER:
        return target, folders, None
    for candidate in commits:
        if candidate.commit_id not in head_ids:
            index.add(candidate)
    return target, folders, index


def find_by_label(
    repo: Repo, heads: Heads, checkpoint_id: str
) -> tuple[Stored | None, list[Stored]] | None:
    """:func:`find_or_index`'s checkpoint and folding commits from the persisted commit graph's
    labels, without a walk of the namespace: ``None`` when the graph cannot decide (none
    written, not closed, or the id on more than one reachable commit), then walk instead.

    Covered commits are found by their labels, the few newer ones by a walk that stops at
    covered commits; a candidate counts only if a head of the namespace reaches it.
    """
    head_ids = heads.commits()
    for head in head_ids:
        found = load(repo.objects, head)
        if found.checkpoint_id == checkpoint_id:
            return found, []
    graph = CommitGraph(repo.objects)
    persisted = graph.persisted
    if persisted is None or not head_ids:
        return None
    targets = persisted.labelled(label("langgraph.checkpoint_id", checkpoint_id))
    children = persisted.labelled(label("langgraph.parent_checkpoint_id", checkpoint_id))
    if targets is None or children is None:
        return None
    seen = set(head_ids)
    todo = [h for h in head_ids if h not in persisted]
    while todo:  # the commits the graph does not cover yet: below them, it covers everything
        commit_id = todo.pop()
        commit = graph.commit(commit_id)
        info = commit.metadata.get(INFO)
        if not isinstance(info, dict):
            return None  # not a checkpoint: the walk says so
        if info.get("checkpoint_id") == checkpoint_id:
            targets.append(commit_id)
        if info.get("parent_checkpoint_id") == checkpoint_id:
            children.append(commit_id)
        for parent in commit.parents:
            if parent not in seen and parent not in persisted:
                seen.add(parent)
                todo.append(parent)

    def reached(commit_id: ObjectId) -> bool:
        return any(is_ancestor(graph, commit_id, head) for head in head_ids)

    # Labels are found by 8-byte keys: keep only the commits that carry the id itself.
    candidates = [
        c for c in dict.fromkeys(targets) if _info(graph, c).get("checkpoint_id") == checkpoint_id
    ]
    kids = [
        stored(c, graph.commit(c))
        for c in dict.fromkeys(children)
        if _info(graph, c).get("parent_checkpoint_id") == checkpoint_id
    ]
    # A above child on top of a reachable candidate makes that candidate reachable too.
    above = [
        k
        for k in kids
        if k.commit.parents[:1] and k.commit.parents[0] in candidates and reached(k.commit_id)
    ]
    if above:
        reachable = list(dict.fromkeys(k.commit.parents[0] for k in above))
        others = [c for c in candidates if c not in reachable]
        reachable += [c for c in others if reached(c)]
    else:
        reachable = [c for c in candidates if reached(c)]
    if len(reachable) != 1:
        return (None, []) if not reachable else None
    target = stored(reachable[0], graph.commit(reachable[0]))
    return target, folding([k for k in above if k.commit.parents[0] == target.commit_id], target)


def find_by_index(
    repo: Repo, heads: Heads, checkpoint_id: str
) -> tuple[Stored | None, list[Stored]] | None:
    """:func:`find_or_index`'s checkpoint and folding commits from the heads' lineage indexes
    (:mod:`statevcs.idindex`): a few reads, no walk. ``None`` when they cannot decide (a head
    without an index, a segment unreadable, the id on two commits), then look elsewhere.

    A commit found in a head's index is in that head's history: the index is part of the
    head's own bytes, written from that history. The commit above it (its child in that
    history) is the only one that can fold its writes there.
    """
    head_ids = heads.commits()
    if not head_ids:
        return None
    db = repo.objects
    if len(head_ids) > 1:
        read_ahead(db, head_ids)  # every head in one read
    try:
        found_heads = [load(db, h) for h in head_ids]
    except NotACheckpoint:
        return None
    for found in found_heads:
        if found.checkpoint_id == checkpoint_id:
            return found, []
    heads_fields = [fields_of(found.commit.metadata, INFO) for found in found_heads]
    if None in heads_fields:
        return None
    # Every head's newest segment in one read.
    tops = read_segments(db, [f[0] for f in heads_fields if f is not None and f[0] is not None])
    targets: dict[ObjectId, None] = {}
    above: dict[ObjectId, None] = {}
    for found, fields in zip(found_heads, heads_fields, strict=True):
        assert fields is not None
        segment_id, gap = fields
        hits: list[Hit] = []
        top = tops[segment_id] if segment_id is not None else None
        if segment_id is not None:
            looked = lookup(db, segment_id, checkpoint_id) if top is not None else None
            if looked is None:
                return None
            hits = looked
        line: list[tuple[ObjectId, CommitObject]] | None = None
        if top is None or checkpoint_id > top.high:
            # Greater than every indexed id: only the gap (the newest commits) can hold it,
            # and its ids grow upwards, so the walk down stops below the id.
            walked = _gap_walk(db, found, gap, checkpoint_id)
            if walked is None:
                return None
            if walked:
                targets[walked[0]] = None
                above[walked[1]] = None
            continue
        for hit in hits:
            targets[hit.commit] = None
            if hit.above is not None:
                above[hit.above] = None
                continue
            line = line or _gap(db, found.commit_id, gap, top)
            if line is None:
                return None
            above[line[-1][0]] = None
    if len(targets) > 1:
        return None
    if not targets:
        return None, []
    try:
        db.load_many([*targets, *above])  # one read for the checkpoint and its children
        target = load(db, next(iter(targets)))
        children = [load(db, c) for c in above]
    except (NotACheckpoint, MissingObject, CorruptObject):
        return None
    if target.checkpoint_id != checkpoint_id:
        return None  # an index that does not match its commits: fsck names it
    return target, folding(children, target)


def _gap_walk(
    db: ObjectDatabase, head: Stored, gap: int, checkpoint_id: str
) -> tuple[ObjectId, ObjectId] | tuple[()] | None:
    """``(commit, the commit above it)`` carrying ``checkpoint_id`` in ``head``'s gap, ``()``
    when none does (``None``: the history is not what the head's fields say)."""
    child, commit = head.commit_id, head.commit
    for _ in range(gap - 1):
        if len(commit.parents) != 1:
            return None
        parent_id = commit.parents[0]
        try:
            commit = db.load_commit(parent_id)
        except (MissingObject, CorruptObject):
            return None
        key = key_of(commit.metadata, INFO)
        if key is None:
            return None
        if key == checkpoint_id:
            return parent_id, child
        if key < checkpoint_id:
            break
        child = parent_id
    return ()


def _gap(
    db: ObjectDatabase, head: ObjectId, gap: int, top: Segment | None
) -> list[tuple[ObjectId, CommitObject]] | None:
    """The ``gap`` commits of ``head``'s history above its index's base, newest first
    (``None``: the history does not end on the base as the index says)."""
    try:
        line = walk_line(db.load_commit, head, gap)
    except (MissingObject, CorruptObject):
        return None
    if line is None:
        return None
    below = line[-1][1].parents
    if top is None:
        return line if not below else None
    return line if below == (top.commit_at(len(top) - 1),) else None


def index_fields(
    repo: Repo, parent: Stored | None, checkpoint_id: str
) -> tuple[dict[str, Any], dict[ObjectId, bytes]]:
    """The lineage-index fields of a new checkpoint commit on ``parent`` (its info's ``ix``
    and ``ixn``) and the segment objects to store with it (see :mod:`statevcs.idindex`).

    The parent's index is carried over while its gap is short and ids keep growing;
    otherwise a new segment covers everything up to the parent. Empty fields: no index (an
    id not greater than those indexed, or a history that cannot be read).
    """
    if parent is None:
        return {GAP_FIELD: 1}, {}
    fields = fields_of(parent.commit.metadata, INFO)
    if (
        fields is not None
        and fields[1] < idindex.SEGMENT_SIZE
        and checkpoint_id > parent.checkpoint_id
    ):
        segment_id, gap = fields
        carried: dict[str, Any] = {GAP_FIELD: gap + 1}
        if segment_id is not None:
            carried[INDEX_FIELD] = to_hex(segment_id)
        return carried, {}
    try:
        gathered = _gather(repo.objects, parent)
    except (MissingObject, CorruptObject):
        return {}, {}
    if gathered is None:
        return {}, {}
    segment_id, keys, commits = gathered
    extended = extend(repo.objects, segment_id, keys, commits)
    if extended is None:
        return {}, {}
    new_id, objects, high = extended
    if checkpoint_id <= high:
        return {}, {}
    return {INDEX_FIELD: to_hex(new_id), GAP_FIELD: 1}, objects


def _gather(
    db: ObjectDatabase, parent: Stored
) -> tuple[ObjectId | None, list[str], list[ObjectId]] | None:
    """The index below ``parent``'s history's nearest usable index and the keys and commits
    above it up to ``parent``, oldest first (``None``: the history cannot be indexed).

    A history with no usable index (written before indexes, rewritten, or its segments
    collected) is read down to its root once, in batches; the index then covers it all.
    """
    walked: list[tuple[ObjectId, CommitObject]] = []
    current: ObjectId | None = parent.commit_id
    commit: CommitObject = parent.commit
    segment_id: ObjectId | None = None
    graph: CommitGraph | None = None
    while current is not None:
        fields = fields_of(commit.metadata, INFO)
        if fields is not None:
            top = read_segment(db, fields[0]) if fields[0] is not None else None
            line = _gap(db, current, fields[1], top) if fields[0] is None or top else None
            if line is not None:
                segment_id = fields[0]
                walked.extend(line)
                break
        if len(commit.parents) > 1:
            return None
        walked.append((current, commit))
        current = commit.parents[0] if commit.parents else None
        if current is not None:
            graph = graph or CommitGraph(db)
            commit = graph.commit(current)
    keys: list[str] = []
    for _, commit in walked:
        key = key_of(commit.metadata, INFO)
        if key is None:
            return None
        keys.append(key)
    keys.reverse()
    return segment_id, keys, [c for c, _ in reversed(walked)]


def _info(graph: CommitGraph, commit_id: ObjectId) -> dict[str, Any]:
    info = graph.commit(commit_id).metadata.get(INFO)
    return info if isinstance(info, dict) else {}


def index_of(repo: Repo, heads: Heads) -> Index:
    """An :class:`Index` of every checkpoint of a namespace (met as :func:`find_or_index`
    meets them: heads first)."""
    index = Index(heads)
    head_ids = heads.commits()
    for head in head_ids:
        index.add(load(repo.objects, head))
    for candidate in all_commits(repo, heads):
        if candidate.commit_id not in head_ids:
            index.add(candidate)
    return index


def id_bound(found: Stored) -> str:
    """An upper bound of the checkpoint ids in ``found``'s history (itself included).

    A commit whose history holds a greater id than its own (a writer's clock was behind)
    records it as ``max_id``; LangGraph's ids are time-ordered, so most commits do not.
    """
    bound = found.info.get("max_id")
    if isinstance(bound, str) and bound > found.checkpoint_id:
        return bound
    return found.checkpoint_id


def writes_of(
    repo: Repo, found: Stored, folders: Sequence[Stored], side: ObjectId | None
) -> Writes:
    """All pending writes of checkpoint ``found``, oldest first: its own (carried over when it
    was put again), those folded into its lead child, the side ref's."""
    writes = own_writes(repo, found)
    for child in sorted(folders, key=lambda c: c.checkpoint_id):
        writes = merge_writes(writes, folded_writes(repo, child))
    return merge_writes(writes, side_writes(repo, side))


def side_writes(repo: Repo, commit_id: ObjectId | None) -> Writes:
    """The pending writes held by a side commit (``None``: none)."""
    if commit_id is None:
        return {}
    commit = repo.objects.load_commit(commit_id)
    snap = repo.objects.load_snapshot(commit.snapshot)
    extras = join_extras(read_values(repo.objects, read_map(repo.objects, snap.extras), None))
    return read_writes(extras.get("writes"))


def merge_writes(old: Writes, new: Writes) -> Writes:
    """Add ``new`` writes to ``old``: regular ones only once, special ones (idx < 0) replaced."""
    merged = dict(old)
    for slot, write in new.items():
        if slot[1] >= 0 and slot in merged:
            continue
        merged[slot] = write
    return merged


def side_checkpoint_ids(repo: Repo, key: ThreadKey) -> dict[str, ObjectId]:
    """``{checkpoint id: side commit}`` of every side ref of pending writes in a namespace."""
    result: dict[str, ObjectId] = {}
    for name, commit_id in repo.refs.as_dict(key.writes_prefix).items():
        try:
            result[decode(name[len(key.writes_prefix) :])] = commit_id
        except ValueError:
            continue
    return result


# --- message documents shared by values, writes and list channels -------------------------


def _split_doc(doc: Any, items: dict[str, Any], names: dict[ObjectId, str]) -> Any:
    """``doc`` with each message document of a message form replaced by its extras key."""
    if not isinstance(doc, dict) or not any(f in doc for f in _MESSAGE_FORMS):
        return doc

    def key(item: Any) -> str:
        # Short per-snapshot names: the entry's value is the shared object, not its name.
        digest = hash_bytes(encode_doc(item))
        name = names.get(digest)
        if name is None:
            name = names[digest] = f"{ITEM_PREFIX}{len(names)}"
            items[name] = item
        return name

    if "m" in doc:
        return {"m": key(doc["m"])}
    if "ml" in doc:
        return {"ml": [key(d) for d in doc["ml"]]}
    return {"md": {k: [key(d) for d in v] for k, v in doc["md"].items()}}


def _join_doc(doc: Any, extras: Mapping[str, Any]) -> Any:
    if not isinstance(doc, dict) or not any(f in doc for f in _MESSAGE_FORMS):
        return doc

    def item(name: Any) -> Any:
        if isinstance(name, str) and name.startswith(ITEM_PREFIX) and name in extras:
            return extras[name]
        if isinstance(name, dict):
            return name
        raise CorruptObject("(checkpoint)", f"a stored value names a missing message {name!r}")

    if "m" in doc:
        return {"m": item(doc["m"])}
    if "ml" in doc and isinstance(doc["ml"], list):
        return {"ml": [item(d) for d in doc["ml"]]}
    if "md" in doc and isinstance(doc["md"], dict):
        return {
            "md": {
                k: [item(d) for d in v] if isinstance(v, list) else v for k, v in doc["md"].items()
            }
        }
    return doc


def split_extras(extras: Mapping[str, Any]) -> dict[str, Any]:
    """Extras as stored: each message of a value or a pending write as its own entry.

    The entry is keyed by the content hash of the message's document, the same document
    (hence the same object) a list channel stores for it, so a message costs one object
    whether it is in the list, a pending write or the graph's input.
    """
    items: dict[str, Any] = {}
    names: dict[ObjectId, str] = {}
    out: dict[str, Any] = {}
    # Writes first: their document then equals the side commit's, so both are one object.
    order = sorted(extras, key=lambda n: n not in _WRITES_KEYS)
    for name in order:
        doc = extras[name]
        if name.startswith(VALUE_PREFIX):
            out[name] = _split_doc(doc, items, names)
        elif name in _WRITES_KEYS and isinstance(doc, list):
            out[name] = [
                [*entry[:3], _split_doc(entry[3], items, names), *entry[4:]]
                if isinstance(entry, list) and len(entry) == 5
                else entry
                for entry in doc
            ]
        else:
            out[name] = doc
    out.update(items)
    # Stored sorted: the order of the saver's own entries means nothing, and a snapshot whose
    # extras are sorted records no key order (snapshot version 2, a few bytes less each).
    return {name: out[name] for name in sorted(out)}


def join_extras(extras: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`split_extras`: values and writes with their messages inside."""
    if not any(name.startswith(ITEM_PREFIX) for name in extras):
        return dict(extras)
    out: dict[str, Any] = {}
    for name, doc in extras.items():
        if name.startswith(ITEM_PREFIX):
            continue
        if name.startswith(VALUE_PREFIX):
            out[name] = _join_doc(doc, extras)
        elif name in _WRITES_KEYS and isinstance(doc, list):
            out[name] = [
                [*entry[:3], _join_doc(entry[3], extras), *entry[4:]]
                if isinstance(entry, list) and len(entry) == 5
                else entry
                for entry in doc
            ]
        else:
            out[name] = doc
    return out


# --- writing -------------------------------------------------------------------------------


@dataclass
class Built:
    """Objects of one new commit, not written yet."""

    commit_id: ObjectId
    objects: dict[ObjectId, bytes]


def _timestamp(text: object) -> datetime:
    if isinstance(text, str):
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None:
            return moment
    return datetime.now(UTC)


def _commit_message(metadata: Mapping[str, Any]) -> str:
    source, step = metadata.get("source"), metadata.get("step")
    if isinstance(source, str) and isinstance(step, int):
        return f"{source} step {step}"
    return "checkpoint"


def stored_messages_of(repo: Repo, snap: SnapshotObject) -> StoredMessages:
    """A snapshot's stored list log (no item ids read: O(1))."""
    return StoredMessages(snap.messages, prolly.length(repo.objects, snap.messages), snap.tail)


def encode_commit(
    repo: Repo,
    snapshot: Snapshot,
    *,
    state_codec: str,
    base: MessageBase | None,
    previous: StoredMessages | None,
    commit: CommitObject,
) -> Built:
    """Encode a snapshot (state values already serialized) and its commit."""
    written = repo.objects.encode_snapshot(
        snapshot, state_codec=state_codec, base=base, previous=previous, raw_state=True
    )
    commit = CommitObject(
        snapshot=written.snapshot_id,
        parents=commit.parents,
        author=commit.author,
        timestamp_us=commit.timestamp_us,
        message=commit.message,
        metadata=commit.metadata,
    )
    commit_id, encoded = repo.objects.encode_commit(commit)
    return Built(commit_id, {**written.objects, commit_id: encoded})


def serialize_state(repo: Repo, name: str, value: Any) -> bytes | None:
    """Serialize a plain channel value with the repository's serializer (``None``: cannot)."""
    try:
        return repo.serializer.serialize(value, f"channel {name!r}")
    except SerializationError:
        return None


def serde_wrap(
    serde: SerializerProtocol, name: str, value: Any, channel: str | None = None
) -> dict[str, Any]:
    """:func:`wrap` with serde failures reported as ``SerializationError`` naming the channel.

    With ``channel``, LangChain's own messages (alone, in a list, or in a dict of lists) are
    kept as the item documents a list channel stores (see :func:`split_extras`).
    """
    if channel is not None and not is_plain(value, allow_bytes=True):
        messages = wrap_messages(value, channel)
        if messages is not None:
            return messages
    try:
        return wrap(value, serde)
    except StateVCSError:
        raise
    except Exception as exc:
        raise SerializationError(
            f"{name} cannot be serialized by {type(serde).__name__}: {exc}; make it a value the "
            "saver's serde accepts (or pass a serde that does)",
            name,
        ) from None


def checkpoint_commit(
    repo: Repo,
    *,
    parents: tuple[ObjectId, ...],
    info: dict[str, Any],
    metadata: Mapping[str, Any],
    us: int,
) -> tuple[CommitObject, bool]:
    """The commit fields of a checkpoint; the flag says whether ``metadata`` fit in the commit."""
    try:
        fields = canonical_metadata({INFO: info, "metadata": dict(metadata)})
        in_commit = True
    except (SerializationError, TypeError):
        fields = canonical_metadata({INFO: info})
        in_commit = False
    commit = CommitObject(
        snapshot=b"\0" * 32,
        parents=parents,
        author=repo.author,
        timestamp_us=us,
        message=check_text(_commit_message(metadata), "message"),
        metadata=fields,
    )
    return commit, in_commit


def items_doc(serde: SerializerProtocol, name: str, items: Sequence[Any]) -> list[dict[str, Any]]:
    """Documents of list items of channel ``name``."""
    try:
        return [item_doc(name, item, serde) for item in items]
    except StateVCSError:
        raise
    except Exception as exc:
        raise SerializationError(
            f"an item of list channel {name!r} cannot be serialized by {type(serde).__name__}: "
            f"{exc}",
            name,
        ) from None


def plain_doc(value: Any) -> bool:
    """Whether ``value`` can be stored as a document as it is."""
    return is_plain(value, allow_bytes=True)


__all__ = [
    "KIND_CHECKPOINT",
    "KIND_WRITES",
    "Built",
    "Channels",
    "Decoded",
    "Heads",
    "Log",
    "Stored",
    "all_commits",
    "channel_values",
    "channels_of",
    "checkpoint_commit",
    "checkpoint_doc",
    "encode_commit",
    "head_updates",
    "heads_after",
    "id_bound",
    "index_of",
    "load",
    "merge_writes",
    "metadata_of",
    "own_entries",
    "folded_writes",
    "find_or_index",
    "Index",
    "INDEX_AFTER",
    "folders_of",
    "folding",
    "is_lead",
    "leads",
    "checkpoint_us",
    "inline_checkpoint",
    "iso_timestamp",
    "own_writes",
    "writes_of",
    "read_heads",
    "serialize_state",
    "side_checkpoint_ids",
    "side_writes",
    "stored",
    "stored_messages_of",
    "wrap_writes",
]
