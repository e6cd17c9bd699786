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

from ..errors import CorruptObject, MissingObject, RefConflict, RefExists
from ..hashing import to_hex
from ..objects import CommitObject, SnapshotObject
from ..refs import branch_ref
from ..serializers import serializer_for
from ..snapshot import (
    extras_entries,
    load_snapshot_object,
    message_ids_from,
    read_conversation,
    read_values,
    state_entries,
)
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
            try:
                return list(db.iter_docs(message_ids_from(db, obj, total - last)))
            except MissingObject:
                # A tail message only a packed leaf holds (early 0.2 builds): read it all.
                return snapshot_messages(repo, obj)[-last:]
    messages, _ids, tail = read_conversation(db, obj)
    messages.extend(tail)
    return messages


def snapshot_state(repo: Repo, obj: SnapshotObject) -> dict[str, Any]:
    """The state of stored snapshot ``obj`` as fresh values, decoded with the codec it was
    written with (as ``repo.show(...).state`` holds it); messages and extras are not read."""
    db = repo.objects
    codec = serializer_for(obj.state_codec, repo.serializer)
    return read_values(db, state_entries(db, obj), codec)


def snapshot_extras(repo: Repo, obj: SnapshotObject) -> dict[str, Any]:
    """The extras of stored snapshot ``obj`` (as ``repo.show(...).extras`` holds them)."""
    db = repo.objects
    return read_values(db, extras_entries(db, obj), None)


def commit_messages(repo: Repo, commit_id: ObjectId, *, last: int | None = None) -> list[Any]:
    """The messages of commit ``commit_id`` (see :func:`snapshot_messages`)."""
    return snapshot_messages(repo, commit_snapshot(repo, commit_id), last=last)


def fork_branch(repo: Repo, base: str, commit_id: str) -> str:
    """Create branch ``<base>-fork-<n>`` at ``commit_id`` with the first free ``n``; return it.

    Two handles forking at once get two names: one taken between the look and the creation
    is skipped, never moved.
    """
    existing = repo.branches()
    n = 0
    while True:
        n += 1
        name = f"{base}-fork-{n}"
        if name in existing:
            continue
        try:
            repo.branch(name, commit_id)
        except (RefExists, RefConflict):  # created by another handle since the look
            continue
        return name


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


__all__ = [
    "branch_tip",
    "commit_messages",
    "commit_snapshot",
    "fork_branch",
    "paused_gc",
    "snapshot_extras",
    "snapshot_messages",
    "snapshot_state",
]
