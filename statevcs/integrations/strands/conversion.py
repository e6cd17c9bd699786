"""Field mapping between ``strands.Snapshot`` and :class:`statevcs.Snapshot`.

An agent-scope Strands snapshot splits into messages (:attr:`statevcs.Snapshot.messages`),
``state`` (:attr:`statevcs.Snapshot.state`) and everything else (``extras``, with ``scope``,
``schema_version``, ``app_data`` and ``created_at``); a multiAgent-scope one keeps its ``data``
whole in ``extras``.
"""

from __future__ import annotations

from typing import Any

from strands import Snapshot as StrandsSnapshot

from ...errors import UnsupportedObject
from ...snapshot import Snapshot
from ._common import FIELDS_KEY, KIND_AGENT, KIND_MULTIAGENT, SCHEMA_VERSION, SNAPSHOT_FIELDS


def from_strands_snapshot(
    snapshot: StrandsSnapshot, *, agent_id: str | None = None, name: str | None = None
) -> Snapshot:
    """Convert a ``strands.Snapshot`` (``agent.take_snapshot(...)``) into a statevcs snapshot.

    ``app_data`` and ``created_at`` are kept in ``extras``; fields the Strands snapshot did not
    capture stay absent, so restoring it leaves them unchanged (as ``load_snapshot`` does).
    """
    data = dict(snapshot.data)
    extras: dict[str, Any] = {
        "scope": snapshot.scope,
        "schema_version": snapshot.schema_version,
        "app_data": snapshot.app_data,
        "created_at": snapshot.created_at,
    }
    if agent_id is not None:
        extras["agent_id"] = agent_id
    if name is not None:
        extras["name"] = name
    if snapshot.scope != "agent":
        extras["data"] = data
        return Snapshot.model_construct(kind=KIND_MULTIAGENT, messages=[], state={}, extras=extras)
    extras[FIELDS_KEY] = [f for f in SNAPSHOT_FIELDS if f in data]
    messages = data.pop("messages", [])
    state = data.pop("state", {})
    extras.update(data)
    return Snapshot.model_construct(kind=KIND_AGENT, messages=messages, state=state, extras=extras)


def to_strands_snapshot(snapshot: Snapshot, *, created_at: str | None = None) -> StrandsSnapshot:
    """Convert a stored ``strands.agent`` snapshot (``repo.show(rev)``) into a ``strands.Snapshot``.

    Pass the result to ``agent.load_snapshot`` or any Strands tool that reads snapshots.
    ``created_at`` defaults to the one stored with a committed ``strands.Snapshot``, else now.
    """
    extras = snapshot.extras
    stamp = created_at if created_at is not None else str(extras.get("created_at", ""))
    app_data = dict(extras.get("app_data") or {})
    schema = str(extras.get("schema_version", SCHEMA_VERSION))
    if snapshot.kind == KIND_MULTIAGENT and "data" in extras:
        return StrandsSnapshot(
            scope="multiAgent",
            schema_version=schema,
            data=dict(extras["data"]),
            app_data=app_data,
            created_at=stamp,
        )
    if snapshot.kind != KIND_AGENT:
        raise UnsupportedObject(
            f"a {snapshot.kind!r} snapshot is not a Strands agent snapshot; only "
            f"{KIND_AGENT!r} snapshots convert to strands.Snapshot"
        )
    data: dict[str, Any] = {}
    for name in extras.get(FIELDS_KEY, SNAPSHOT_FIELDS):
        if name == "messages":
            data["messages"] = snapshot.messages
        elif name == "state":
            data["state"] = snapshot.state
        elif name in extras:
            data[name] = extras[name]
    return StrandsSnapshot(
        scope="agent", schema_version=schema, data=data, app_data=app_data, created_at=stamp
    )


__all__ = ["from_strands_snapshot", "to_strands_snapshot"]
