"""Committing from Strands hooks: :class:`AutoCommit` and the commit policy it shares with
:class:`~statevcs.integrations.strands.session.StateVCSSessionManager`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from strands.bidi import BidiAgent
from strands.hooks import (
    AfterInvocationEvent,
    AfterModelCallEvent,
    AfterMultiAgentInvocationEvent,
    AfterNodeCallEvent,
    BeforeInvocationEvent,
    BeforeMultiAgentInvocationEvent,
    HookProvider,
    HookRegistry,
    MessageAddedEvent,
    MessageUpdatedEvent,
)
from strands.types.content import Message

from ...errors import MergeConflict, RefConflict, StateVCSError
from ...hashing import to_hex
from ...refs import branch_ref, check_short_name, short_name
from .adapters import agent_adapter

if TYPE_CHECKING:
    from ...repo import Commit, OnConflict, Repo

CommitOn = Literal["message", "invocation", "tool_call"]
"""When :class:`StateVCSSessionManager` and :class:`AutoCommit` commit (see their docs)."""
_COMMIT_ON: tuple[str, ...] = ("message", "invocation", "tool_call")
_ON_CONFLICT: tuple[str, ...] = ("raise", "merge")


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


class Committer:
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
        from ...repo import Repo

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
        elif not agent_adapter().is_clean(agent, self.repo):
            # Conversation management and late hooks run after the last message was committed.
            self.commit(agent, f"turn {session.turn}: end", {"event": "end", "turn": session.turn})

    def _on_bidi_stop(self, event: Any) -> None:
        agent = event.agent
        self.flush(agent)
        if self.on != "invocation" and agent_adapter().is_clean(agent, self.repo):
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
        self._committer = Committer(repo, on, branch, author, on_conflict, _autocommit_recovery)

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


__all__ = ["AutoCommit", "CommitOn", "Committer"]
