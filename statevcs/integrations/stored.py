"""Reading a commit's messages straight from the object database, for the integrations.

A session that only needs the items of a branch tip (``get_items``, ``messages()``) does not
need a live, change-tracked snapshot: :func:`commit_messages` decodes the message tree (and
nothing else: no state, no extras) into fresh values that share nothing with any cache, so a
caller may mutate them freely. With ``last`` it reads only the leaves holding the last
``last`` messages. Nothing here imports a framework.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import CorruptObject
from ..hashing import to_hex
from ..objects import CommitObject, SnapshotObject
from ..refs import branch_ref
from ..snapshot import load_snapshot_object, message_ids_from, read_messages
from ..structures import prolly

if TYPE_CHECKING:
    from ..hashing import ObjectId
    from ..repo import Repo


def branch_tip(repo: Repo, branch: str) -> ObjectId | None:
    """The commit id at the tip of ``branch`` (a short name; ``None`` before its first commit)."""
    return repo.store.get_ref(branch_ref(branch))


def commit_snapshot(repo: Repo, commit_id: ObjectId) -> SnapshotObject:
    """The stored snapshot of commit ``commit_id`` (its kind and tree roots, nothing decoded)."""
    db = repo.objects
    commit = db.load(commit_id)
    if not isinstance(commit, CommitObject):
        raise CorruptObject(to_hex(commit_id), f"expected a commit, found {type(commit).__name__}")
    return load_snapshot_object(db, commit.snapshot)


def snapshot_messages(repo: Repo, obj: SnapshotObject, *, last: int | None = None) -> list[Any]:
    """The messages of stored snapshot ``obj`` as fresh, unshared values (``last``: only the
    last ``last`` of them, read from the leaves that hold them; ``0`` gives an empty list)."""
    db = repo.objects
    if last is not None:
        if last <= 0:
            return []
        total = prolly.length(db, obj.messages) + len(obj.tail)
        if last < total:
            return list(db.iter_docs(message_ids_from(db, obj, total - last)))
    messages, _ids = read_messages(db, obj.messages)
    messages.extend(db.iter_docs(obj.tail))
    return messages


def commit_messages(repo: Repo, commit_id: ObjectId, *, last: int | None = None) -> list[Any]:
    """The messages of commit ``commit_id`` (see :func:`snapshot_messages`)."""
    return snapshot_messages(repo, commit_snapshot(repo, commit_id), last=last)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cycle collector while a whole conversation is decoded.

    Decoding thousands of messages allocates tens of thousands of containers, none in a cycle;
    each few hundred allocations would start a collection, and the messages decoded so far get
    promoted until one rescans the whole heap. Left disabled if the program disabled it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


__all__ = ["branch_tip", "commit_messages", "commit_snapshot", "paused_gc", "snapshot_messages"]
