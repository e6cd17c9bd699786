"""A stored snapshot's state and extras, each read on its own, for reads without a live snapshot.

:mod:`statevcs.integrations.stored` reads a snapshot's messages; a session also needs its state
and extras (names, update time). These read one map each, as ``repo.show`` does, into fresh
values a caller may mutate. Nothing here imports ADK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...serializers import serializer_for
from ...snapshot import read_values
from ...structures.maps import read_map

if TYPE_CHECKING:
    from ...objects import SnapshotObject
    from ...repo import Repo


def snapshot_state(repo: Repo, obj: SnapshotObject) -> dict[str, Any]:
    """The state of stored snapshot ``obj`` as fresh values, decoded with the codec it was
    written with (as ``repo.show(...).state`` holds it); messages and extras are not read."""
    db = repo.objects
    codec = serializer_for(obj.state_codec, repo.serializer)
    return read_values(db, read_map(db, obj.state), codec)


def snapshot_extras(repo: Repo, obj: SnapshotObject) -> dict[str, Any]:
    """The extras of stored snapshot ``obj`` (as ``repo.show(...).extras`` holds them)."""
    db = repo.objects
    return read_values(db, read_map(db, obj.extras), None)


__all__ = ["snapshot_extras", "snapshot_state"]
