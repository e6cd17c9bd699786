""":class:`HistoryTools`: the agent's own history as tools its model calls.

A Strands plugin: ``Agent(..., plugins=[HistoryTools(repo)])`` gives the model ``checkpoint``,
``list_checkpoints``, ``rollback``, ``start_branch`` and ``diff``. Reads answer at once; writes
(a checkpoint, a branch, a rollback) are queued and applied when the invocation ends, after the
session manager's or ``AutoCommit``'s own end-of-invocation commit, never in the middle of the
agent loop. See ``docs/history-tools.md``.
"""

from __future__ import annotations

import logging
import threading
import weakref
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from strands import tool
from strands.hooks import AfterInvocationEvent, HookOrder
from strands.plugins import Plugin
from strands.types.tools import ToolContext

from ...errors import StateVCSError
from ...hashing import from_hex
from ...refs import branch_ref, short_name, tag_ref
from ...stores.base import RefUpdate
from .. import history
from ..history import HistoryToolError, Pending, Request
from ._common import KIND_AGENT
from .adapters import agent_adapter

if TYPE_CHECKING:
    from ...repo import Repo

logger = logging.getLogger(__name__)


class HistoryTools(Plugin):
    """A Strands plugin giving the model tools over its own history in ``repo``.

    ``HEAD`` in a tool's revision is the tip of the branch the agent is attached to (the
    session's branch). When an invocation that asked for writes ends: its state is committed if
    it is not already; each ``checkpoint`` becomes a commit labelled as asked, tagged
    ``checkpoints/<branch>/<n>``; each ``start_branch`` a branch at that state; a ``rollback``
    tags the tip ``abandoned/<branch>/<n>``, moves the branch to a new commit holding the target's
    state (parent: the target; metadata: who asked, why, from where), and loads that state into
    the agent. An invocation that fails drops its requests (nothing is written).

        agent = Agent(model=..., plugins=[HistoryTools(repo)],
                      session_manager=StateVCSSessionManager(repo, branch="main"))
    """

    name = "statevcs-history"

    def __init__(self, repo: Repo, *, max_output: int = history.MAX_OUTPUT) -> None:
        """Serve the history in ``repo``; each answer is at most ``max_output`` characters."""
        from ...repo import Repo

        if not isinstance(repo, Repo):
            raise TypeError(f"repo must be a statevcs.Repo, got {type(repo).__name__}")
        if not isinstance(max_output, int) or isinstance(max_output, bool) or max_output < 200:
            raise TypeError("max_output must be an int of at least 200")
        self.repo = repo
        self.max_output = max_output
        self._pending: dict[int, tuple[weakref.ref[Any], Pending]] = {}
        self._lock = threading.Lock()
        super().__init__()

    def init_agent(self, agent: Any) -> None:
        """Apply queued writes after every other end-of-invocation hook (commits included)."""
        agent.add_hook(self._on_after_invocation, AfterInvocationEvent, order=HookOrder.SDK_LAST)

    # --- the tools ------------------------------------------------------------------

    @tool(context=True, description=history.TOOL_DOCS["checkpoint"])
    def checkpoint(self, message: str, tool_context: ToolContext) -> str:
        """Save the conversation's state under a label.

        Args:
            message: A short label saying what this state is.
        """

        def body() -> str:
            label = history.check_text(message, "message")
            self._branch_of(tool_context.agent)
            request = Request("checkpoint", label, _who(tool_context, "checkpoint"))
            self._queue(tool_context.agent, request)
            return history.scheduled(request, "turn")

        return history.answer(body, self.max_output)

    @tool(context=True, description=history.TOOL_DOCS["list_checkpoints"])
    def list_checkpoints(self, tool_context: ToolContext, limit: int = 10) -> str:
        """List the newest saved states.

        Args:
            limit: How many to list (1 to 50).
        """
        return history.answer(
            lambda: history.list_text(self.repo, self._branch_of(tool_context.agent), limit),
            self.max_output,
        )

    @tool(context=True, description=history.TOOL_DOCS["rollback"])
    def rollback(self, revision: str, reason: str, tool_context: ToolContext) -> str:
        """Go back to an earlier state.

        Args:
            revision: The state to go back to: HEAD~n, a commit id or a tag.
            reason: Why, in a few words (recorded with the rollback).
        """

        def body() -> str:
            why = history.check_text(reason, "reason")
            target = history.resolve(self.repo, self._branch_of(tool_context.agent), revision)
            kind = self.repo.objects.load_snapshot(from_hex(target.snapshot_id)).kind
            if kind != KIND_AGENT:
                raise HistoryToolError(
                    f"{target.short_id} holds a {kind!r} snapshot, not an agent's; "
                    "list_checkpoints shows this conversation's own states"
                )
            request = Request(
                "rollback",
                why,
                _who(tool_context, "rollback"),
                revision=str(revision),
                target=target.id,
            )
            self._queue(tool_context.agent, request)
            return history.scheduled(request, "turn")

        return history.answer(body, self.max_output)

    @tool(context=True, description=history.TOOL_DOCS["start_branch"])
    def start_branch(self, name: str, tool_context: ToolContext) -> str:
        """Save this turn's final state as a new branch.

        Args:
            name: The new branch's name (letters, digits, '-', '_', '/').
        """

        def body() -> str:
            checked = history.check_branch_name(name)
            self._branch_of(tool_context.agent)
            if self.repo.refs.get(branch_ref(checked)) is not None:
                raise HistoryToolError(f"branch {checked!r} already exists; pick another name")
            request = Request("branch", checked, _who(tool_context, "start_branch"))
            self._queue(tool_context.agent, request)
            return history.scheduled(request, "turn")

        return history.answer(body, self.max_output)

    @tool(context=True, description=history.TOOL_DOCS["diff"])
    def diff(self, a: str, b: str, tool_context: ToolContext) -> str:
        """Show how two saved states differ.

        Args:
            a: The older state (e.g. HEAD~2).
            b: The newer state (e.g. HEAD).
        """
        return history.answer(
            lambda: history.diff_text(self.repo, self._branch_of(tool_context.agent), a, b),
            self.max_output,
        )

    # --- requests -------------------------------------------------------------------

    def _branch_of(self, agent: Any) -> str:
        branch = self.repo.attached_branch(agent)
        if branch is None:
            raise HistoryToolError(
                "this agent is detached (checked out at a commit, not a branch): its history "
                "tools need a branch"
            )
        return branch_ref(branch)

    def _queue(self, agent: Any, request: Request) -> None:
        with self._lock:
            key = id(agent)
            entry = self._pending.get(key)
            if entry is None or entry[0]() is not agent:

                def forget(_ref: object, key: int = key) -> None:
                    self._pending.pop(key, None)

                entry = (weakref.ref(agent, forget), Pending())
                self._pending[key] = entry
            entry[1].add(request)

    def pending(self, agent: Any) -> list[Request]:
        """The writes queued for ``agent``'s current invocation."""
        with self._lock:
            entry = self._pending.get(id(agent))
            return list(entry[1].requests) if entry is not None and entry[0]() is agent else []

    def _take(self, agent: Any) -> list[Request]:
        with self._lock:
            entry = self._pending.pop(id(agent), None)
        return list(entry[1].requests) if entry is not None and entry[0]() is agent else []

    def _on_after_invocation(self, event: AfterInvocationEvent) -> None:
        requests = self._take(event.agent)
        if not requests:
            return
        if event.result is None:
            logger.warning(
                "the invocation failed: %d history request(s) dropped, nothing written",
                len(requests),
            )
            return
        self.apply(event.agent, requests)

    # --- applying -------------------------------------------------------------------

    def apply(self, agent: Any, requests: list[Request]) -> None:
        """Apply ``requests`` to ``agent``'s branch now (the end-of-invocation hook calls this)."""
        repo = self.repo
        ref = self._branch_of(agent)
        branch = short_name(ref)
        if not agent_adapter().is_clean(agent, repo):
            # Nothing of the invocation may be lost: its end state is the timeline's tip.
            repo.commit(agent, "end of turn", metadata={"event": "end"})
        for request in requests:
            if request.kind == "checkpoint":
                commit = repo.commit(
                    agent,
                    request.text,
                    metadata={
                        "event": "checkpoint",
                        "label": request.text,
                        "requested_by": dict(request.requested_by),
                    },
                )
                name = history.next_tag(repo, history.CHECKPOINTS_PREFIX, branch)
                repo.refs.set(
                    tag_ref(name), from_hex(commit.id), expected=None, message="checkpoint"
                )
            elif request.kind == "branch":
                tip = repo.refs.get(ref)
                try:
                    repo.refs.set(
                        branch_ref(request.text),
                        tip,
                        expected=None,
                        message=f"branch: started from {branch} by the model",
                    )
                except StateVCSError as exc:  # created by someone else since the request
                    logger.warning("start_branch %r not applied: %s", request.text, exc)
        rollback = next((r for r in requests if r.kind == "rollback"), None)
        if rollback is not None:
            self._rollback(agent, ref, rollback)

    def _rollback(self, agent: Any, ref: str, request: Request) -> None:
        repo = self.repo
        branch = short_name(ref)
        tip = repo.refs.get(ref)
        if tip is None:
            raise HistoryToolError(f"branch {branch!r} was deleted; the rollback was not applied")
        target = repo.get_commit(request.target)
        abandoned = history.next_tag(repo, history.ABANDONED_PREFIX, branch)
        metadata = history.record(request, abandoned=abandoned, abandoned_commit=tip.hex())
        commit_id = repo.objects.write_commit(
            from_hex(target.snapshot_id),
            [from_hex(target.id)],
            message=history.commit_message(request),
            author=repo.author,
            timestamp=datetime.now(UTC),
            metadata=metadata,
        )
        # One atomic step: the branch moves only if the abandoned tip is tagged too.
        repo.refs.update(
            [
                RefUpdate(ref, commit_id, tip, f"rollback: to {target.short_id}"),
                RefUpdate(tag_ref(abandoned), tip, None, f"rollback: abandoned {branch}"),
            ],
            verify=[commit_id, tip],
        )
        repo.checkout(agent, branch)


def _who(context: ToolContext, tool_name: str) -> dict[str, Any]:
    agent = context.agent
    who: dict[str, Any] = {
        "by": "model",
        "tool": tool_name,
        "tool_call_id": str(context.tool_use.get("toolUseId", "")),
    }
    for attribute in ("name", "agent_id"):
        value = getattr(agent, attribute, None)
        if isinstance(value, str):
            who[f"agent_{attribute}" if attribute == "name" else attribute] = value
    return who


__all__ = ["HistoryTools"]
