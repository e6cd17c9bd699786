"""The Strands adapters -- ``Agent``/``BidiAgent``, ``Swarm``/``Graph`` and ``strands.Snapshot`` --
and their registration.

Importing this module registers the adapters, so ``repo.commit(agent)`` and
``repo.checkout(agent, "main~1")`` work on a live :class:`strands.Agent`.

What a commit holds is exactly what ``agent.take_snapshot()`` captures -- messages, state,
conversation-manager state, interrupt state, system prompt and model state -- plus ``agent_id``
and ``name``. Fields are read through Strands' public ``take_snapshot``/``load_snapshot``;
messages are read from the public ``agent.messages`` list instead, because ``take_snapshot``
deep-copies the whole conversation on every call.

**Incremental commits** (``unchanged_prefix``/``mark_synced``). After a commit or checkout the
messages the repository just stored are swapped, inside ``agent.messages``, for equal copies
built from :class:`~statevcs.tracking.TrackedDict`/:class:`~statevcs.tracking.TrackedList`, whose
mutating methods record "message *i* changed" for that repository (nested dicts and lists
included). The next commit vouches for ``min(first position where agent.messages no longer holds
the very same objects, lowest edited position)`` messages -- a pointer comparison per message --
and the repository re-encodes the rest. Appends, deletions, replacements, conversation-manager
trimming, redaction and in-place edits of old messages are all seen; anything the adapter did
not capture itself makes it vouch for nothing. See ``docs/strands.md`` for the full rule and its
caveats.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from strands import Agent
from strands import Snapshot as StrandsSnapshot
from strands.bidi import BidiAgent
from strands.multiagent import MultiAgentBase
from strands.multiagent.graph import Graph
from strands.multiagent.swarm import Swarm

from ... import tracking
from ...adapters import current_repo, current_sync, register_adapter, transient_keys
from ...errors import StateVCSError, UnsupportedObject
from ...snapshot import Snapshot
from ._common import (
    BIDI_SNAPSHOT_FIELDS,
    FIELDS_KEY,
    KIND_AGENT,
    KIND_GRAPH,
    KIND_MULTIAGENT,
    KIND_SWARM,
    NODES_KEY,
    ORCHESTRATORS_KEY,
    SCHEMA_VERSION,
    SNAPSHOT_FIELDS,
)
from .conversion import from_strands_snapshot, to_strands_snapshot

if TYPE_CHECKING:
    from strands.types._snapshot import SnapshotField

    from ...repo import Repo


# --- the agent adapter ----------------------------------------------------------------------


def _fields_of(agent: Any) -> tuple[str, ...]:
    return BIDI_SNAPSHOT_FIELDS if isinstance(agent, BidiAgent) else SNAPSHOT_FIELDS


def _take_fields(agent: Any, fields: Sequence[str]) -> StrandsSnapshot:
    include = cast("list[SnapshotField]", [f for f in fields if f != "messages"])
    return agent.take_snapshot(include=include)  # type: ignore[no-any-return]


def _restore_state(agent: Any, stored: Mapping[str, Any]) -> dict[str, Any]:
    """The state to load: the stored values plus the agent's live transient values."""
    state = dict(stored)
    keep = transient_keys(agent)
    if keep:
        live = agent.state.get()
        for key in keep:
            if key in live:
                state[key] = live[key]
    return state


def _load_into(agent: Any, data: dict[str, Any]) -> None:
    manager_state = data.get("conversation_manager_state")
    manager = getattr(agent, "conversation_manager", None)
    if isinstance(manager_state, Mapping) and manager is not None:
        stored, live = manager_state.get("__name__"), type(manager).__name__
        if stored != live:
            raise StateVCSError(
                f"this commit was made by an agent with a {stored}, but this agent uses a "
                f"{live}; create the agent with conversation_manager={stored}(...) to check it out"
            )
    snapshot = StrandsSnapshot(scope="agent", schema_version=SCHEMA_VERSION, data=data, app_data={})
    try:
        agent.load_snapshot(snapshot)
    except (ValueError, TypeError) as exc:
        raise StateVCSError(
            f"Strands refused to load this commit into the agent: {exc}. (Strands keeps "
            "agent.state JSON-only, so values a rich serializer restored, such as datetimes, "
            "cannot go back into an Agent.)"
        ) from exc


class StrandsAgentAdapter:
    """Adapter for ``strands.Agent`` and ``strands.bidi.BidiAgent`` (kind ``strands.agent``).

    Capture takes every snapshot field the agent supports; restore loads them in place through
    ``agent.load_snapshot`` and sets ``agent.messages``. ``unchanged_prefix``/``mark_synced``
    implement incremental commits (see the module documentation for the rule).
    """

    kind = KIND_AGENT

    # parts shared with the orchestrator adapter
    def capture_parts(
        self, agent: Any
    ) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
        """Return ``(messages, state, extras)`` of a live agent (messages not yet tracked)."""
        fields = _fields_of(agent)
        strands_snapshot = _take_fields(agent, fields)
        data = dict(strands_snapshot.data)
        state = data.pop("state", {})
        skip = transient_keys(agent)
        if skip:
            state = {key: value for key, value in state.items() if key not in skip}
        extras: dict[str, Any] = {
            "agent_id": agent.agent_id,
            "name": agent.name,
            "schema_version": strands_snapshot.schema_version,
            FIELDS_KEY: list(fields),
        }
        extras.update(data)
        return agent.messages, state, extras

    def capture(self, obj: Any) -> Snapshot:
        """Capture a live agent (its message objects themselves; nothing is copied)."""
        live, state, extras = self.capture_parts(obj)
        tracking.begin(obj, current_repo(), [live], fields=(state, extras))
        return Snapshot.model_construct(kind=KIND_AGENT, messages=live, state=state, extras=extras)

    def message_decoder(self, obj: Any) -> tracking.TrackedDecoder:
        """The restored messages go into a tracked list: decode them tracked."""
        return tracking.TrackedDecoder()

    def restore(self, obj: Any, snapshot: Snapshot) -> None:
        """Load ``snapshot`` into the live agent in place, keeping its transient state keys."""
        fields = self.fields_to_restore(obj, snapshot.kind, snapshot.extras)
        messages = tracking.new_tracked(snapshot.messages) if "messages" in fields else None
        self.restore_parts(obj, fields, messages, snapshot.state, snapshot.extras)
        # Recorded so that is_clean is exact right after a checkout (close() relies on it).
        live, state, extras = self.capture_parts(obj)
        if messages is None or live is not messages:
            # The live messages are not what the repository holds: vouch for nothing.
            tracking.discard(obj, current_repo(), [live])
            return
        tracking.restored(obj, current_repo(), [live], fields=(state, extras))

    def fields_to_restore(self, agent: Any, kind: str, extras: Mapping[str, Any]) -> list[str]:
        """The snapshot fields a checkout of a ``kind`` snapshot sets on ``agent``."""
        if kind == KIND_AGENT:
            stored = extras.get(FIELDS_KEY, SNAPSHOT_FIELDS)
            return [f for f in stored if f in _fields_of(agent)]
        if kind in ("dict", "snapshot"):
            return ["messages", "state"]
        raise UnsupportedObject(
            f"this commit holds a {kind!r} snapshot, which cannot be checked out into a "
            f"{type(agent).__name__}; check it out into the matching object "
            "(a Swarm or Graph for strands.swarm / strands.graph)"
        )

    def restore_parts(
        self,
        agent: Any,
        fields: Sequence[str],
        messages: list[Any] | None,
        state: Mapping[str, Any],
        extras: Mapping[str, Any],
    ) -> None:
        """Set ``fields`` on ``agent``: ``messages`` as given, the rest via ``load_snapshot``."""
        data: dict[str, Any] = {f: extras[f] for f in fields if f in extras}
        data.pop("messages", None)
        if "state" in fields:
            data["state"] = _restore_state(agent, state)
        if data:
            _load_into(agent, data)
        if messages is not None:
            agent.messages = messages

    def unchanged_prefix(self, obj: Any) -> int | None:
        """Leading messages unchanged since the last commit or checkout (``None``: all new)."""
        return tracking.unchanged_prefix(obj, current_repo(), current_sync())

    def mark_synced(self, obj: Any) -> None:
        """Remember what the repository just stored (or loaded); start tracking new messages."""
        tracking.finish(
            obj,
            current_repo(),
            [obj.messages],
            lambda _index, tracked: setattr(obj, "messages", tracked),
            commit=current_sync(),
        )

    def is_clean(self, obj: Any, repo: Repo) -> bool:
        """Whether the agent equals its last commit to (or checkout from) ``repo``; cheap."""
        live, state, extras = self.capture_parts(obj)
        return tracking.is_clean([live], repo, fields=(state, extras))


# --- Strands Snapshot objects ---------------------------------------------------------------


class StrandsSnapshotAdapter:
    """Adapter for ``strands.Snapshot``, so ``repo.commit(agent.take_snapshot(...))`` works."""

    kind = KIND_AGENT

    def capture(self, obj: StrandsSnapshot) -> Snapshot:
        """Split the Strands snapshot into messages, state and extras (keeps ``app_data``)."""
        snapshot = from_strands_snapshot(obj)
        skip = transient_keys(obj)
        if skip:
            snapshot.state = {k: v for k, v in snapshot.state.items() if k not in skip}
        return snapshot

    def restore(self, obj: StrandsSnapshot, snapshot: Snapshot) -> None:
        """Overwrite the Strands snapshot's fields in place, keeping transient state keys."""
        keep = {}
        old_state = obj.data.get("state")
        if isinstance(old_state, dict):
            keep = {k: old_state[k] for k in transient_keys(obj) if k in old_state}
        fresh = to_strands_snapshot(snapshot)
        if keep and "state" in fresh.data:
            fresh.data["state"] = {**fresh.data["state"], **keep}
        obj.scope = fresh.scope
        obj.schema_version = fresh.schema_version
        obj.data = fresh.data
        obj.app_data = fresh.app_data
        obj.created_at = fresh.created_at


# --- orchestrators (Swarm, Graph) -------------------------------------------------------------


def _walk(orchestrator: Any, prefix: str = "") -> Iterator[tuple[str, str, Any]]:
    """Yield ``("orchestrator" | "agent", path, object)`` for an orchestrator and its nodes."""
    yield "orchestrator", prefix, orchestrator
    nodes = getattr(orchestrator, "nodes", None)
    if not isinstance(nodes, Mapping):
        return
    for node_id, node in nodes.items():
        executor = getattr(node, "executor", None)
        path = f"{prefix}{node_id}"
        if isinstance(executor, MultiAgentBase):
            yield from _walk(executor, f"{path}/")
        elif callable(getattr(executor, "take_snapshot", None)) and hasattr(executor, "messages"):
            yield "agent", path, executor


def _node_messages(orchestrator: Any) -> list[list[Any]]:
    return [item.messages for what, _path, item in _walk(orchestrator) if what == "agent"]


def _orchestrator_kind(orchestrator: Any) -> str:
    if isinstance(orchestrator, Swarm):
        return KIND_SWARM
    if isinstance(orchestrator, Graph):
        return KIND_GRAPH
    return KIND_MULTIAGENT


class StrandsOrchestratorAdapter:
    """Adapter for Strands ``Swarm`` and ``Graph``: the orchestrator and all node agents at once.

    The node agents' conversations are stored back to back in one message list (so each node's
    history is shared between commits exactly like a single agent's); ``extras["nodes"]`` says
    which slice belongs to which node, and node state keys are stored as ``"<node>/<key>"``.
    """

    def __init__(self, kind: str, agents: StrandsAgentAdapter) -> None:
        """Create the adapter for orchestrators of ``kind``."""
        self.kind = kind
        self._agents = agents

    def capture(self, obj: Any) -> Snapshot:
        """Capture the orchestrator's execution state and every node agent."""
        live, state, extras = self.capture_parts(obj)
        lists = _node_messages(obj)
        tracking.begin(obj, current_repo(), lists, key=id(obj), fields=(state, extras))
        return Snapshot.model_construct(
            kind=_orchestrator_kind(obj), messages=live, state=state, extras=extras
        )

    def capture_parts(self, obj: Any) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
        """Return ``(messages of all nodes back to back, state, extras)`` of an orchestrator."""
        live: list[Any] = []
        state: dict[str, Any] = {}
        nodes: dict[str, Any] = {}
        orchestrators: dict[str, Any] = {}
        for what, path, item in _walk(obj):
            if what == "orchestrator":
                try:
                    orchestrators[path] = {"id": item.id, "state": item.serialize_state()}
                except NotImplementedError:
                    raise UnsupportedObject(
                        f"{type(item).__name__} does not implement serialize_state(), so statevcs "
                        "cannot capture it; commit its agents one by one instead"
                    ) from None
                continue
            messages, agent_state, extras = self._agents.capture_parts(item)
            nodes[path] = {
                "start": len(live),
                "count": len(messages),
                "state_keys": list(agent_state),
                "extras": extras,
            }
            live.extend(messages)
            for key, value in agent_state.items():
                state[f"{path}/{key}"] = value
        return live, state, {ORCHESTRATORS_KEY: orchestrators, NODES_KEY: nodes}

    def restore(self, obj: Any, snapshot: Snapshot) -> None:
        """Restore the orchestrator's execution state, then every node agent, in place."""
        if snapshot.kind not in (KIND_SWARM, KIND_GRAPH, KIND_MULTIAGENT) or (
            ORCHESTRATORS_KEY not in snapshot.extras
        ):
            raise UnsupportedObject(
                f"this commit holds a {snapshot.kind!r} snapshot, which cannot be checked out into "
                f"a {type(obj).__name__}; check out a commit made from a {type(obj).__name__}"
            )
        stored_orchestrators: Mapping[str, Any] = snapshot.extras[ORCHESTRATORS_KEY]
        stored_nodes: Mapping[str, Any] = snapshot.extras.get(NODES_KEY, {})
        walked = list(_walk(obj))
        for what, path, item in walked:
            if what != "orchestrator" or path not in stored_orchestrators:
                continue
            stored = stored_orchestrators[path]
            if stored.get("id") != item.id:
                raise StateVCSError(
                    f"this commit was made from orchestrator {stored.get('id')!r}, not "
                    f"{item.id!r}; check it out into an orchestrator with that id"
                )
            item.deserialize_state(stored["state"])
        held: list[list[Any]] = []
        for what, path, item in walked:
            if what != "agent":
                continue
            node = stored_nodes.get(path)
            if node is not None:
                start, count = int(node["start"]), int(node["count"])
                prefix = f"{path}/"
                node_state = {key: snapshot.state[prefix + key] for key in node["state_keys"]}
                fields = self._agents.fields_to_restore(item, KIND_AGENT, node["extras"])
                messages = None
                if "messages" in fields:
                    messages = tracking.new_tracked(snapshot.messages[start : start + count])
                self._agents.restore_parts(item, fields, messages, node_state, node["extras"])
            held.append(item.messages)
        _live, state, extras = self.capture_parts(obj)
        # Lists not restored here are plain or watched for another sync: mark_synced adopts
        # them as they are now, which is what the repository just loaded or merged.
        tracking.begin(obj, current_repo(), held, key=id(obj), fields=(state, extras))

    def unchanged_prefix(self, obj: Any) -> int | None:
        """Leading messages (all nodes, back to back) unchanged since the last sync."""
        return tracking.unchanged_prefix(obj, current_repo(), current_sync())

    def mark_synced(self, obj: Any) -> None:
        """Remember what the repository just stored (or loaded); start tracking new messages."""
        agents = [item for what, _path, item in _walk(obj) if what == "agent"]
        tracking.finish(
            obj,
            current_repo(),
            [agent.messages for agent in agents],
            lambda index, tracked: setattr(agents[index], "messages", tracked),
            commit=current_sync(),
            key=id(obj),
        )

    def is_clean(self, obj: Any, repo: Repo) -> bool:
        """Whether the orchestrator and its nodes equal their last sync with ``repo``."""
        _live, state, extras = self.capture_parts(obj)
        return tracking.is_clean(_node_messages(obj), repo, key=id(obj), fields=(state, extras))


# --- registration -----------------------------------------------------------------------------

_AGENTS = StrandsAgentAdapter()
_SWARMS = StrandsOrchestratorAdapter(KIND_SWARM, _AGENTS)
_GRAPHS = StrandsOrchestratorAdapter(KIND_GRAPH, _AGENTS)
_ORCHESTRATORS = StrandsOrchestratorAdapter(KIND_MULTIAGENT, _AGENTS)

register_adapter(Agent, _AGENTS)
register_adapter(BidiAgent, _AGENTS)
register_adapter(StrandsSnapshot, StrandsSnapshotAdapter())
register_adapter(Swarm, _SWARMS)
register_adapter(Graph, _GRAPHS)
register_adapter(MultiAgentBase, _ORCHESTRATORS)


def agent_adapter() -> StrandsAgentAdapter:
    """The registered adapter for Strands agents (for ``is_clean`` and advanced use)."""
    return _AGENTS


__all__ = [
    "StrandsAgentAdapter",
    "StrandsOrchestratorAdapter",
    "StrandsSnapshotAdapter",
    "agent_adapter",
]
