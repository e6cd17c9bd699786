"""Reading a checkpoint's objects ahead: one store round trip per level of them, not per use.

A checkpoint's tuple reads its snapshot, then its maps and values, its open tail and its
message tree's root, then the tree one level at a time, and the commits that carry its
pending writes the same way: read where each is used, that is a round trip per object kind
and level. Read ahead, each level of all of them is one batch, and the reads that follow
find every object in the object database's caches (where it was checked against its id as
any read is). Best effort: a missing or damaged object ends the read-ahead, and the read
that needs it raises as it would have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from ...errors import StateVCSError
from ...hashing import ObjectId
from ...objects import (
    Chunked,
    CommitObject,
    ListNode,
    MapNode,
    MapRef,
    MapValue,
    SnapshotObject,
    StoredObject,
)
from ...plumbing import ObjectDatabase

_WHOLE = 0
"""Read the object and everything below it."""
_EXTRAS = 1
"""A snapshot: read its extras map and values only (a commit: its snapshot's)."""
_ALONE = 2
"""Read the object, nothing below it."""
_OWN = 3
"""A checkpoint's extras map: read the values its own tuple reads."""
Entries = Callable[[Mapping[str, MapValue]], Mapping[str, MapValue]]
"""Which entries of a checkpoint's extras map its tuple reads."""


def read_ahead(db: ObjectDatabase, ids: Iterable[ObjectId]) -> dict[ObjectId, StoredObject]:
    """Read ``ids`` into ``db``'s caches in one batch; return them (``{}`` if one is missing or
    damaged: the read that needs it raises then)."""
    try:
        return db.load_many(ids)
    except StateVCSError:
        return {}


def read_checkpoint(
    db: ObjectDatabase,
    snapshot: ObjectId,
    *,
    own: Entries,
    folders: Iterable[ObjectId] = (),
    side: ObjectId | None = None,
    tree: bool = True,
) -> None:
    """Read ahead what a checkpoint's tuple reads, one batch per level.

    ``snapshot`` is the checkpoint's snapshot: everything below it is read but the extras
    ``own`` leaves out (with ``tree=False``, of its message tree only the root: a saver that
    holds the thread's items reads only the new ones). ``folders`` are the snapshots of the
    commits that fold its pending writes, ``side`` the side commit holding the others: their
    extras are read.
    """
    level: dict[ObjectId, int] = {snapshot: _WHOLE}
    for folder in folders:
        level.setdefault(folder, _EXTRAS)
    if side is not None:
        level.setdefault(side, _EXTRAS)
    seen: set[ObjectId] = set()
    while level:
        loaded = read_ahead(db, level)
        if len(loaded) < len(level):
            return
        seen.update(level)
        following: dict[ObjectId, int] = {}
        for object_id, how in level.items():
            for child, child_how in _below(loaded[object_id], how, tree, own):
                if child not in seen:
                    following.setdefault(child, child_how)
        level = following


def _below(obj: StoredObject, how: int, tree: bool, own: Entries) -> Iterator[tuple[ObjectId, int]]:
    """The objects below ``obj`` a read of it (as ``how`` says) goes on to read."""
    if how == _ALONE:
        return
    if isinstance(obj, SnapshotObject):
        if how == _EXTRAS:
            yield from _map_children(obj.extras)
            return
        if isinstance(obj.extras, bytes):
            yield obj.extras, _OWN
        else:
            yield from _map_children(obj.extras, own)
        yield obj.messages, _WHOLE if tree else _ALONE
        for item in obj.tail:
            yield item, _WHOLE
        yield from _map_children(obj.state)
    elif isinstance(obj, CommitObject):
        if how == _EXTRAS:
            yield obj.snapshot, _EXTRAS
    elif isinstance(obj, ListNode):
        if obj.values is None:
            for child in obj.ids:
                yield child, _WHOLE
        else:  # a packed leaf: only its large items are objects of their own
            for child, value in zip(obj.ids, obj.values, strict=True):
                if value is None:
                    yield child, _WHOLE
    elif isinstance(obj, MapNode):
        yield from _map_children(obj, own if how == _OWN else None)
    elif isinstance(obj, Chunked):
        for chunk in obj.chunks:
            yield chunk, _WHOLE


def _map_children(ref: MapRef, own: Entries | None = None) -> Iterator[tuple[ObjectId, int]]:
    if isinstance(ref, bytes):
        yield ref, _WHOLE
        return
    values: Iterable[MapValue] = ref.values
    if own is not None:
        values = own(dict(zip(ref.keys, ref.values, strict=True))).values()
    for value in values:
        if isinstance(value, bytes):
            yield value, _WHOLE


__all__ = ["read_ahead", "read_checkpoint"]
