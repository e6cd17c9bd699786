"""Strands Agents integration: chunked, deduplicated, branchable homes for Strands snapshots.

Importing this module (statevcs does it for you the first time it meets a Strands object)
registers adapters, so ``repo.commit(agent)`` and ``repo.checkout(agent, "main~1")`` work on a
live :class:`strands.Agent` (and ``BidiAgent``, ``Swarm``, ``Graph`` and ``strands.Snapshot``).

What a commit holds is exactly what ``agent.take_snapshot()`` captures -- messages, state,
conversation-manager state, interrupt state, system prompt and model state -- plus ``agent_id``
and ``name``:

* messages go into :attr:`statevcs.Snapshot.messages` (a prolly list: one object per message,
  shared between commits and branches; bytes such as images stay bytes);
* ``agent.state`` values go into :attr:`statevcs.Snapshot.state`, through the repository's
  serializer, minus the keys marked with :func:`statevcs.transient`;
* everything else goes into :attr:`statevcs.Snapshot.extras`.

Other fields are read through Strands' public ``take_snapshot``/``load_snapshot``; messages are
read from the public ``agent.messages`` list instead, because ``take_snapshot`` deep-copies the
whole conversation on every call.

**Incremental commits** (``unchanged_prefix``/``mark_synced``). After a commit or checkout the
messages the repository just stored are swapped, inside ``agent.messages``, for equal copies
built from :class:`TrackedDict`/:class:`TrackedList`, whose mutating methods record "message *i*
changed" for that repository (nested dicts and lists included). The next commit vouches for
``min(first position where agent.messages no longer holds the very same objects, lowest edited
position)`` messages -- a pointer comparison per message -- and the repository re-encodes the rest.
Appends, deletions, replacements, conversation-manager trimming, redaction and in-place edits of
old messages are all seen; anything the adapter did not capture itself makes it vouch for nothing.
See ``docs/strands.md`` for the full rule and its caveats.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, cast

from strands import Agent
from strands import Snapshot as StrandsSnapshot
from strands.bidi import BidiAgent
from strands.hooks import (
    AfterInvocationEvent,
    AfterModelCallEvent,
    AfterMultiAgentInvocationEvent,
    AfterNodeCallEvent,
    AgentInitializedEvent,
    BeforeInvocationEvent,
    BeforeMultiAgentInvocationEvent,
    HookProvider,
    HookRegistry,
    MessageAddedEvent,
    MessageUpdatedEvent,
    MultiAgentInitializedEvent,
)
from strands.multiagent import MultiAgentBase
from strands.multiagent.graph import Graph
from strands.multiagent.swarm import Swarm
from strands.session import SessionManager
from strands.types.content import Message

from .. import tracking
from ..adapters import current_repo, current_sync, register_adapter, transient_keys
from ..errors import (
    MergeConflict,
    RefConflict,
    RefExists,
    RefNotFound,
    StateVCSError,
    UnsupportedObject,
)
from ..hashing import to_hex
from ..refs import branch_ref, check_short_name, short_name
from ..snapshot import Snapshot
from ..tracking import TrackedDict, TrackedList, TrackedMessages

if TYPE_CHECKING:
    from strands.types._snapshot import SnapshotField

    from ..repo import Commit, OnConflict, Repo

logger = logging.getLogger(__name__)

KIND_AGENT = "strands.agent"
"""Snapshot kind of a Strands ``Agent``/``BidiAgent`` and of an agent-scope ``strands.Snapshot``."""
KIND_SWARM = "strands.swarm"
"""Snapshot kind of a Strands ``Swarm``: orchestrator state plus every node agent."""
KIND_GRAPH = "strands.graph"
"""Snapshot kind of a Strands ``Graph``: orchestrator state plus every node agent."""
KIND_MULTIAGENT = "strands.multiagent"
"""Snapshot kind of another ``MultiAgentBase`` orchestrator, or of a multiAgent-scope snapshot."""

SNAPSHOT_FIELDS: tuple[str, ...] = (
    "messages",
    "state",
    "conversation_manager_state",
    "interrupt_state",
    "system_prompt",
    "model_state",
)
"""The fields ``Agent.take_snapshot`` can capture, all of which a commit keeps."""
BIDI_SNAPSHOT_FIELDS: tuple[str, ...] = ("messages", "state", "system_prompt")
"""The subset a ``BidiAgent`` supports."""

CommitOn = Literal["message", "invocation", "tool_call"]
"""When :class:`StateVCSSessionManager` and :class:`AutoCommit` commit (see their docs)."""
_COMMIT_ON: tuple[str, ...] = ("message", "invocation", "tool_call")
_ON_CONFLICT: tuple[str, ...] = ("raise", "merge")

_SCHEMA_VERSION = "1.0"
_FIELDS_KEY = "fields"
_NODES_KEY = "nodes"
_ORCHESTRATORS_KEY = "orchestrators"


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
    snapshot = StrandsSnapshot(
        scope="agent", schema_version=_SCHEMA_VERSION, data=data, app_data={}
    )
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
            _FIELDS_KEY: list(fields),
        }
        extras.update(data)
        return agent.messages, state, extras

    def capture(self, obj: Any) -> Snapshot:
        """Capture a live agent (its message objects themselves; nothing is copied)."""
        live, state, extras = self.capture_parts(obj)
        tracking.begin(obj, current_repo(), [live], fields=(state, extras))
        return Snapshot.model_construct(kind=KIND_AGENT, messages=live, state=state, extras=extras)

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
            stored = extras.get(_FIELDS_KEY, SNAPSHOT_FIELDS)
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
    extras[_FIELDS_KEY] = [f for f in SNAPSHOT_FIELDS if f in data]
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
    schema = str(extras.get("schema_version", _SCHEMA_VERSION))
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
    for name in extras.get(_FIELDS_KEY, SNAPSHOT_FIELDS):
        if name == "messages":
            data["messages"] = snapshot.messages
        elif name == "state":
            data["state"] = snapshot.state
        elif name in extras:
            data[name] = extras[name]
    return StrandsSnapshot(
        scope="agent", schema_version=schema, data=data, app_data=app_data, created_at=stamp
    )


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
        return live, state, {_ORCHESTRATORS_KEY: orchestrators, _NODES_KEY: nodes}

    def restore(self, obj: Any, snapshot: Snapshot) -> None:
        """Restore the orchestrator's execution state, then every node agent, in place."""
        if snapshot.kind not in (KIND_SWARM, KIND_GRAPH, KIND_MULTIAGENT) or (
            _ORCHESTRATORS_KEY not in snapshot.extras
        ):
            raise UnsupportedObject(
                f"this commit holds a {snapshot.kind!r} snapshot, which cannot be checked out into "
                f"a {type(obj).__name__}; check out a commit made from a {type(obj).__name__}"
            )
        stored_orchestrators: Mapping[str, Any] = snapshot.extras[_ORCHESTRATORS_KEY]
        stored_nodes: Mapping[str, Any] = snapshot.extras.get(_NODES_KEY, {})
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


# --- committing from hooks ----------------------------------------------------------------------


def _tool_names(message: Message, previous: Message | None) -> list[str]:
    ids = [
        block["toolResult"]["toolUseId"]
        for block in message.get("content", [])
        if "toolResult" in block
    ]
    if not ids:
        return []
    names: dict[str, str] = {}
    if previous is not None:
        for block in previous.get("content", []):
            if "toolUse" in block:
                names[block["toolUse"]["toolUseId"]] = block["toolUse"]["name"]
    return [names.get(tool_id, "tool") for tool_id in ids]


def _previous_message(agent: Any, message: Message) -> Message | None:
    messages = agent.messages
    for index in range(len(messages) - 1, max(-1, len(messages) - 8), -1):
        if messages[index] is message:
            return cast(Message, messages[index - 1]) if index > 0 else None
    return None


@dataclass
class _Checkpoint:
    message: str
    metadata: dict[str, Any]


@dataclass
class _AgentSession:
    turn: int = 0
    pending: _Checkpoint | None = None


class _Committer:
    """The commit policy shared by :class:`StateVCSSessionManager` and :class:`AutoCommit`.

    User-role messages (prompts and tool results) are committed only after the next model call
    has streamed, because a guardrail may still redact them during that call; assistant messages
    are committed when added. Every mode also commits at the end of each invocation.
    """

    def __init__(
        self,
        repo: Repo,
        on: str,
        branch: str | None,
        author: str | None,
        on_conflict: str,
        recovery: Callable[[str], str],
    ) -> None:
        from ..repo import Repo

        if not isinstance(repo, Repo):
            raise TypeError(f"repo must be a statevcs.Repo, got {type(repo).__name__}")
        _check_choice(on, "commit_on", _COMMIT_ON)
        _check_choice(on_conflict, "on_conflict", _ON_CONFLICT)
        if author is not None and not isinstance(author, str):
            raise TypeError(f"author must be a str or None, got {type(author).__name__}")
        if branch is not None:
            check_short_name(branch)
        self.repo = repo
        self.on = on
        self.branch = branch
        self.author = author
        self.on_conflict = cast("OnConflict", on_conflict)
        self._recovery = recovery
        self._sessions: dict[int, tuple[weakref.ref[Any], _AgentSession]] = {}
        self._lock = threading.RLock()

    def session(self, agent: Any) -> _AgentSession:
        key = id(agent)
        entry = self._sessions.get(key)
        if entry is not None and entry[0]() is agent:
            return entry[1]

        def forget(_ref: object, key: int = key) -> None:
            self._sessions.pop(key, None)

        created = _AgentSession()
        self._sessions[key] = (weakref.ref(agent, forget), created)
        return created

    def commit(self, obj: Any, message: str, metadata: dict[str, Any]) -> Commit:
        with self._lock:
            try:
                return self.repo.commit(
                    obj,
                    message,
                    metadata=metadata,
                    author=self.author,
                    branch=self.branch,
                    on_conflict=self.on_conflict,
                )
            except RefConflict as conflict:
                if conflict.actual is None:
                    raise  # the branch was deleted: the core's advice (another branch) fits
                branch = self.branch or short_name(conflict.ref)
                raise RefConflict(
                    conflict.ref,
                    conflict.expected,
                    conflict.actual,
                    f"branch {branch!r} is at {conflict.actual[:12]}, but this agent was last "
                    f"synced with {(conflict.expected or '(nothing)')[:12]}: another worker "
                    "committed since. Nothing was written; the agent still holds its unsaved "
                    f"change. {self._recovery(branch)}",
                ) from None
            except MergeConflict as conflict:
                branch = self.branch or self.repo.attached_branch(obj) or "?"
                why = (
                    "Two agents appending to one conversation cannot be merged: give each "
                    "worker its own branch, or let workers on one branch take turns. "
                    if conflict.messages
                    else ""
                )
                raise MergeConflict(
                    f"{conflict}. Nothing was written; the agent still holds its unsaved change. "
                    f"{why}{self._recovery(branch)}",
                    conflict.keys,
                    extras_keys=conflict.extras_keys,
                    messages=conflict.messages,
                    kind=conflict.kind,
                ) from None

    def check_current(self, obj: Any) -> None:
        """Raise ``RefConflict`` before a call starts if the branch moved past ``obj``'s sync.

        With ``on_conflict="raise"`` the call's commits would all fail; failing first saves
        the model calls and leaves the agent unchanged. One ref read.
        """
        if self.on_conflict != "raise":
            return
        repo = self.repo
        synced = repo.synced_commit(obj)
        branch = self.branch or repo.attached_branch(obj)
        if synced is None or branch is None:
            return
        ref = branch_ref(branch)
        tip = repo.refs.get(ref)
        if tip is None or to_hex(tip) == synced:
            return  # a missing branch is created (or reported) by the commit itself
        actual = to_hex(tip)
        raise RefConflict(
            ref,
            synced,
            actual,
            f"branch {branch!r} moved to {actual[:12]} since this agent was last synced with "
            f"{synced[:12]}: another worker committed. The call did not start and nothing was "
            f"written. {self._recovery(branch)}",
        )

    def register(self, registry: HookRegistry) -> None:
        registry.add_callback(BeforeInvocationEvent, self._on_before_invocation)
        registry.add_callback(MessageAddedEvent, self._on_message_added)
        registry.add_callback(MessageUpdatedEvent, self._on_message_updated)
        registry.add_callback(AfterModelCallEvent, self._on_after_model_call)
        registry.add_callback(AfterInvocationEvent, self._on_after_invocation)
        registry.add_callback(BeforeMultiAgentInvocationEvent, self._on_before_multi_agent)
        registry.add_callback(AfterNodeCallEvent, self._on_after_node_call)
        registry.add_callback(AfterMultiAgentInvocationEvent, self._on_after_multi_agent)
        try:
            from strands.bidi.hooks import BidiAgentStopEvent, BidiBeforeConnectionRestartEvent
        except ImportError:  # pragma: no cover - older Strands
            return
        registry.add_callback(
            [BidiAgentStopEvent, BidiBeforeConnectionRestartEvent], self._on_bidi_stop
        )

    # agent events
    def _on_before_invocation(self, event: BeforeInvocationEvent) -> None:
        self.check_current(event.agent)
        self.session(event.agent).turn += 1

    def _on_message_added(self, event: MessageAddedEvent) -> None:
        agent, message = event.agent, event.message
        session = self.session(agent)
        role = message.get("role", "?")
        tools = _tool_names(message, _previous_message(agent, message)) if role == "user" else []
        if self.on == "message":
            label = f"tool {', '.join(tools)}" if tools else str(role)
            checkpoint = _Checkpoint(
                f"turn {session.turn}: {label}",
                {"event": "message", "turn": session.turn, "role": role, **_tools_meta(tools)},
            )
        elif self.on == "tool_call" and tools:
            checkpoint = _Checkpoint(
                f"tool {', '.join(tools)}",
                {"event": "tool_call", "turn": session.turn, "tools": tools},
            )
        else:
            return
        self.flush(agent)
        if role == "user" and not isinstance(agent, BidiAgent):
            # A guardrail may still redact this message during the next model call.
            session.pending = checkpoint
        else:
            self.commit(agent, checkpoint.message, checkpoint.metadata)

    def _on_message_updated(self, event: MessageUpdatedEvent) -> None:
        if self.on != "message":
            return
        session = self.session(event.agent)
        role = event.message.get("role", "?")
        self.commit(
            event.agent,
            f"turn {session.turn}: {role} (updated)",
            {"event": "message", "turn": session.turn, "role": role, "updated": True},
        )

    def _on_after_model_call(self, event: AfterModelCallEvent) -> None:
        # A failed call is usually retried, and the retry may still redact the prompt.
        if event.stop_response is not None:
            self.flush(event.agent)

    def _on_after_invocation(self, event: AfterInvocationEvent) -> None:
        agent = event.agent
        session = self.session(agent)
        self.flush(agent)
        if self.on == "invocation":
            self.commit(
                agent, f"turn {session.turn}", {"event": "invocation", "turn": session.turn}
            )
        elif not _AGENTS.is_clean(agent, self.repo):
            # Conversation management and late hooks run after the last message was committed.
            self.commit(agent, f"turn {session.turn}: end", {"event": "end", "turn": session.turn})

    def _on_bidi_stop(self, event: Any) -> None:
        agent = event.agent
        self.flush(agent)
        if self.on != "invocation" and _AGENTS.is_clean(agent, self.repo):
            return
        self.commit(agent, "stop", {"event": "stop"})

    def flush(self, agent: Any) -> bool:
        session = self.session(agent)
        checkpoint = session.pending
        if checkpoint is None:
            return False
        session.pending = None
        self.commit(agent, checkpoint.message, checkpoint.metadata)
        return True

    def redact(self, agent: Any) -> None:
        """Commit now: the latest message was just redacted (pending checkpoints included)."""
        session = self.session(agent)
        if self.flush(agent):
            return
        self.commit(
            agent,
            f"turn {session.turn}: redact",
            {"event": "redact", "turn": session.turn},
        )

    # orchestrator events
    def _on_before_multi_agent(self, event: BeforeMultiAgentInvocationEvent) -> None:
        self.check_current(event.source)

    def _on_after_node_call(self, event: AfterNodeCallEvent) -> None:
        session = self.session(event.source)
        self.commit(
            event.source,
            f"node {event.node_id}",
            {"event": "node", "node": event.node_id, "invocation": session.turn + 1},
        )

    def _on_after_multi_agent(self, event: AfterMultiAgentInvocationEvent) -> None:
        session = self.session(event.source)
        session.turn += 1
        self.commit(
            event.source,
            f"invocation {session.turn}",
            {"event": "invocation", "invocation": session.turn},
        )


def _tools_meta(tools: list[str]) -> dict[str, Any]:
    return {"tools": tools} if tools else {}


def _check_choice(value: object, argument: str, choices: tuple[str, ...]) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, got {type(value).__name__}")
    if value not in choices:
        raise StateVCSError(
            f"{argument} must be one of {', '.join(map(repr, choices))}, got {value!r}"
        )


class AutoCommit(HookProvider):
    """Hook provider that commits an agent (or Swarm/Graph) as it runs; keep your session manager.

    ``on="tool_call"`` commits after every tool batch (``"tool search"``); ``"message"`` after
    every message (``"turn 3: assistant"``); ``"invocation"`` once per agent call. Every mode also
    commits at the end of each invocation if anything changed, and orchestrators commit after every
    node and every invocation. Commits go to ``branch`` if given, else to the branch the agent
    is attached to (``repo.commit`` rules). Commits run synchronously in the hook, so the agent
    waits exactly as long as one commit takes. ``on_conflict`` is passed to ``repo.commit``
    (see :class:`StateVCSSessionManager` for what a conflict does to a call).

        agent = Agent(model=..., hooks=[AutoCommit(repo, on="tool_call")])
    """

    def __init__(
        self,
        repo: Repo,
        on: CommitOn = "tool_call",
        *,
        branch: str | None = None,
        author: str | None = None,
        on_conflict: OnConflict = "raise",
    ) -> None:
        """Commit to ``repo`` on the chosen events."""
        self._committer = _Committer(repo, on, branch, author, on_conflict, _autocommit_recovery)

    @property
    def repo(self) -> Repo:
        """The repository commits go to."""
        return self._committer.repo

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """Register the commit callbacks."""
        self._committer.register(registry)


def _autocommit_recovery(branch: str) -> str:
    return (
        f"repo.checkout(agent, {branch!r}) loads the branch head into the agent (dropping the "
        "unsaved change); then run the call again. Or use AutoCommit(..., on_conflict='merge')"
    )


def _session_recovery(branch: str) -> str:
    return (
        "Call session_manager.reload() to load the branch head into the agent (dropping the "
        "unsaved change), then run the call again; or keep the change with "
        "repo.commit(agent, branch='another-branch'). See docs/strands.md, 'Several workers "
        "on one session'"
    )


_COUNTER_SEARCH = 256


def _counter_of(repo: Repo, head: Commit, counter: str) -> int:
    """The turn (or invocation) count a resumed session continues from."""

    def count(commit: Commit) -> int | None:
        value = commit.metadata.get(counter)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    value = count(head)
    if value is None:
        # Merge commits (on_conflict="merge", repo.merge) carry no counter: continue from the
        # highest count on the nearest counted commit of each line of history. Bounded, so a
        # long history committed by hand (no counters anywhere) does not slow every resume.
        found: list[int] = []
        seen = {head.id}
        frontier = list(head.parents)
        while frontier and len(seen) < _COUNTER_SEARCH:
            parents: list[str] = []
            for commit_id in frontier:
                if commit_id in seen:
                    continue
                seen.add(commit_id)
                commit = repo.get_commit(commit_id)
                counted = count(commit)
                if counted is None:
                    parents.extend(commit.parents)
                else:
                    found.append(counted)
            frontier = parents
        value = max(found, default=0)
    if head.metadata.get("event") == "node":
        value -= 1  # stopped inside an orchestrator invocation: resuming continues it
    return max(0, value)


class StateVCSSessionManager(SessionManager):
    """A Strands session manager that keeps the whole history of one agent on a statevcs branch.

    On agent (or Swarm/Graph) initialization it restores the branch head -- restarting a process
    with the same branch resumes where it stopped -- or, for a new branch, commits the starting
    state (from ``start`` if given). Then it commits as ``commit_on`` says:

    * ``"invocation"``: once per agent call (``"turn 12"``);
    * ``"message"``: after every message (``"turn 12: user"``, ``"turn 12: assistant"``);
    * ``"tool_call"``: after every tool batch (``"tool search"``) and at the end of each call.

    A prompt or tool result is committed only once the following model call has streamed, so a
    guardrail redaction (``redact_latest_message``) lands before it is stored and pre-redaction
    content never reaches the repository. Orchestrators commit after every node call
    (``"node researcher"``) and every invocation, one commit holding the orchestrator and all its
    node agents. Commits run inline in the hook: the agent waits exactly one commit.

    **Other writers.** If another worker (another ``Repo`` handle or process) committed to the
    branch since this agent last synced, ``on_conflict="raise"`` (default) makes the agent call
    raise :class:`~statevcs.RefConflict` -- before it starts when the move is already visible,
    else from the commit at its end, with the agent still holding the unsaved turn -- and
    nothing is written. :meth:`reload` loads the branch head into the agent; then run the call
    again. ``on_conflict="merge"`` merges three-way instead (see ``docs/strands.md``); two
    conversations that both grew cannot merge and raise :class:`~statevcs.MergeConflict`.

    Strands has no end-of-life hook for session managers: state changed after the last commit
    (``agent.state.set(...)`` after the last call) is committed by :meth:`close`, or by leaving
    a ``with`` block.

        with StateVCSSessionManager(repo, branch="session-42") as session:
            agent = Agent(model=..., session_manager=session)
            agent("Plan a trip to Lisbon")
    """

    def __init__(
        self,
        repo: Repo,
        *,
        branch: str = "main",
        commit_on: CommitOn = "invocation",
        start: str | None = None,
        author: str | None = None,
        session_id: str | None = None,
        on_conflict: OnConflict = "raise",
    ) -> None:
        """Persist one agent or orchestrator on ``branch`` of ``repo``.

        ``start`` is the revision a new branch starts from (default: the agent's initial state);
        ``session_id`` defaults to the branch name (Strands uses it, e.g., for prompt caching);
        ``on_conflict`` is passed to ``repo.commit`` (``"raise"`` or ``"merge"``).
        """
        if not isinstance(branch, str):
            raise TypeError(f"branch must be a str, got {type(branch).__name__}")
        if start is not None and not isinstance(start, str):
            raise TypeError(f"start must be a str or None, got {type(start).__name__}")
        if session_id is not None and not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str or None, got {type(session_id).__name__}")
        self._committer = _Committer(
            repo, commit_on, branch, author, on_conflict, _session_recovery
        )
        self.branch = branch
        self.commit_on = commit_on
        self.on_conflict = on_conflict
        self.start = start
        self.session_id = session_id or branch
        self._bound: weakref.ref[Any] | None = None
        self._counter = "turn"

    @property
    def repo(self) -> Repo:
        """The repository this session lives in."""
        return self._committer.repo

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """Restore on initialization and commit on the chosen lifecycle events."""
        registry.add_callback(AgentInitializedEvent, self._on_agent_initialized)
        registry.add_callback(MultiAgentInitializedEvent, self._on_multi_agent_initialized)
        self._committer.register(registry)

    def _on_agent_initialized(self, event: AgentInitializedEvent) -> None:
        self.initialize(event.agent)

    def _on_multi_agent_initialized(self, event: MultiAgentInitializedEvent) -> None:
        self.initialize_multi_agent(event.source)

    def _bind(self, obj: Any, counter: str) -> None:
        bound = self._bound() if self._bound is not None else None
        if bound is not None and bound is not obj:
            raise StateVCSError(
                f"this StateVCSSessionManager already persists {type(bound).__name__} "
                f"{getattr(bound, 'name', '')!r} on branch {self.branch!r}; give each agent its "
                "own StateVCSSessionManager (and branch)"
            )
        self._bound = weakref.ref(obj)
        self._counter = counter

    def _bound_object(self, obj: Any | None, action: str) -> Any:
        bound = self._bound() if self._bound is not None else None
        if bound is None:
            raise StateVCSError(
                f"this StateVCSSessionManager has no agent to {action} yet; create the agent "
                "with session_manager=... first"
            )
        if obj is not None and obj is not bound:
            raise StateVCSError(
                f"this StateVCSSessionManager persists {type(bound).__name__} "
                f"{getattr(bound, 'name', '')!r}, not the object passed; {action} that one "
                "through its own session manager"
            )
        return bound

    def _resume(self, obj: Any) -> Commit | None:
        """Check out the branch head into ``obj``; ``None`` if the branch does not exist."""
        repo = self.repo
        if repo.refs.get(branch_ref(self.branch)) is None:
            if self.start is None:
                return None
            with contextlib.suppress(RefExists):  # another worker created it: resume that
                repo.branch(self.branch, rev=self.start)
        head = repo.checkout(obj, self.branch)
        self._committer.session(obj).turn = _counter_of(repo, head, self._counter)
        return head

    def _start(self, obj: Any) -> None:
        """Create the branch with ``obj``'s initial state, unless another worker just did."""
        repo = self.repo
        # Plumbing, because the branch must only ever be created here: repo.commit of a fresh
        # object lands on whatever tip it finds, so a worker that lost the race would commit
        # its empty start on top of the winner's turns. Losing now means resuming the winner's.
        snapshot_id = repo.objects.write_snapshot(repo.adapters.lookup(obj).capture(obj))
        first = repo.objects.write_commit(
            snapshot_id,
            [],
            message="start session",
            author=self._committer.author or repo.author,
            timestamp=datetime.now(timezone.utc),
            metadata={"event": "start", self._counter: 0},
        )
        with contextlib.suppress(RefConflict):
            repo.refs.set(
                branch_ref(self.branch),
                first,
                expected=None,
                message="commit (initial): start session",
            )
        self._resume(obj)

    def initialize(self, agent: Any, **kwargs: Any) -> None:
        """Restore ``agent`` from the branch head, or commit its initial state on a new branch."""
        self._bind(agent, "turn")
        had_messages = bool(agent.messages)
        if self._resume(agent) is None:
            self._start(agent)
            return
        if had_messages:
            logger.warning(
                "agent_id=<%s>, branch=<%s> | the agent's initial messages were replaced by "
                "the session's history",
                agent.agent_id,
                self.branch,
            )
        model = getattr(agent, "model", None)
        if getattr(model, "stateful", False) and agent.messages:
            # Stateful models keep history server-side; Strands drops restored messages too.
            agent.messages = []

    def initialize_multi_agent(self, source: MultiAgentBase, **kwargs: Any) -> None:
        """Restore a Swarm/Graph (and its node agents) from the branch head, or start the branch."""
        self._bind(source, "invocation")
        if self._resume(source) is None:
            self._start(source)

    def reload(self, agent: Any | None = None) -> Commit:
        """Load the branch head into the agent, dropping what it has not committed; return the head.

        The recovery after a :class:`~statevcs.RefConflict` (another worker committed to the
        branch): reload, then run the call again on top of the other worker's turns. ``agent``
        defaults to the agent (or orchestrator) this manager persists.
        """
        obj = self._bound_object(agent, "reload")
        head = self._resume(obj)
        if head is None:
            raise RefNotFound(
                f"branch {self.branch!r} no longer exists; keep the agent's state with "
                f"repo.commit(agent, branch={self.branch!r}) or use another session branch"
            )
        self._committer.session(obj).pending = None
        return head

    def close(self) -> Commit | None:
        """Commit whatever changed since the last commit; return it (``None``: nothing changed).

        Strands gives session managers no end-of-life hook, so with ``commit_on="invocation"``
        state set after the last agent call reaches the repository only here (or by leaving a
        ``with`` block). The repository stays open: it is yours to close. Safe to call twice.
        """
        bound = self._bound() if self._bound is not None else None
        if bound is None:
            return None
        committer = self._committer
        committer.flush(bound)
        is_clean = getattr(self.repo.adapters.lookup(bound), "is_clean", None)
        if callable(is_clean) and is_clean(bound, self.repo):
            return None
        count = committer.session(bound).turn
        label = f"turn {count}: close" if self._counter == "turn" else "close"
        return committer.commit(bound, label, {"event": "close", self._counter: count})

    def __enter__(self) -> StateVCSSessionManager:
        return self

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        # After an exception the agent may be mid-turn, and a second error from the commit
        # would hide the first: commit only on a clean exit.
        if exc_type is None:
            self.close()

    def append_message(self, message: Message, agent: Any, **kwargs: Any) -> None:
        """No-op: commits happen on the lifecycle hooks (see ``commit_on``)."""

    def sync_agent(self, agent: Any, **kwargs: Any) -> None:
        """Commit the agent now (Strands calls this after a context reduction)."""
        session = self._committer.session(agent)
        self._committer.commit(
            agent, f"turn {session.turn}: sync", {"event": "sync", "turn": session.turn}
        )

    def sync_multi_agent(self, source: MultiAgentBase, **kwargs: Any) -> None:
        """Commit the orchestrator and its node agents now."""
        self._committer.commit(source, "sync", {"event": "sync"})

    def redact_latest_message(self, redact_message: Message, agent: Any, **kwargs: Any) -> None:
        """Commit right away: the agent has just redacted its latest message."""
        self._committer.redact(agent)


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
    "BIDI_SNAPSHOT_FIELDS",
    "KIND_AGENT",
    "KIND_GRAPH",
    "KIND_MULTIAGENT",
    "KIND_SWARM",
    "SNAPSHOT_FIELDS",
    "AutoCommit",
    "CommitOn",
    "StateVCSSessionManager",
    "StrandsAgentAdapter",
    "StrandsOrchestratorAdapter",
    "StrandsSnapshotAdapter",
    "TrackedDict",
    "TrackedList",
    "TrackedMessages",
    "agent_adapter",
    "from_strands_snapshot",
    "to_strands_snapshot",
]
