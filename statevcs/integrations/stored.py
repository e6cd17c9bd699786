"""Reading a commit's messages straight from the object database, for the integrations.

A session that only needs the items of a branch tip (``get_items``, ``messages()``) does not
need a live, change-tracked snapshot: :func:`commit_messages` decodes the message tree (and
nothing else: no state, no extras) into fresh values that share nothing with any cache, so a
caller may mutate them freely. With ``last`` it reads only the leaves holding the last
``last`` messages. Nothing here imports a framework.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CorruptObject
from ..hashing import to_hex
from ..objects import CommitObject
from ..refs import branch_ref
from ..snapshot import load_snapshot_object, message_ids_from, read_messages
from ..structures import prolly

if TYPE_CHECKING:
    from ..hashing import ObjectId
    from ..repo import Repo


def branch_tip(repo: Repo, branch: str) -> ObjectId | None:
    """The commit id at the tip of ``branch`` (a short name; ``None`` before its first commit)."""
    return repo.store.get_ref(branch_ref(branch))


def commit_messages(repo: Repo, commit_id: ObjectId, *, last: int | None = None) -> list[Any]:
    """The messages of commit ``commit_id`` as fresh, unshared values (``last``: only the last
    ``last`` of them, read from the leaves that hold them; ``0`` gives an empty list)."""
    db = repo.objects
    commit = db.load(commit_id)
    if not isinstance(commit, CommitObject):
        raise CorruptObject(to_hex(commit_id), f"expected a commit, found {type(commit).__name__}")
    obj = load_snapshot_object(db, commit.snapshot)
    if last is None:
        messages, _ids = read_messages(db, obj.messages)
        messages.extend(db.iter_docs(obj.tail))
        return messages
    if last <= 0:
        return []
    total = prolly.length(db, obj.messages) + len(obj.tail)
    if last >= total:
        return commit_messages(repo, commit_id)
    return list(db.iter_docs(message_ids_from(db, obj, total - last)))


__all__ = ["branch_tip", "commit_messages"]
