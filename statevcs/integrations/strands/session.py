""":class:`StateVCSSessionManager`: a Strands session manager that keeps one agent's (or
orchestrator's) whole history on a statevcs branch.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from strands.hooks import AgentInitializedEvent, HookRegistry, MultiAgentInitializedEvent
from strands.multiagent import MultiAgentBase
from strands.session import SessionManager
from strands.types.content import Message

from ...errors import RefConflict, RefExists, RefNotFound, StateVCSError
from ...refs import branch_ref
from .hooks import CommitOn, Committer

if TYPE_CHECKING:
    from ...repo import Commit, OnConflict, Repo

logger = logging.getLogger(__name__)


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
        self._committer = Committer(repo, commit_on, branch, author, on_conflict, _session_recovery)
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
            timestamp=datetime.now(UTC),
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


__all__ = ["StateVCSSessionManager"]
