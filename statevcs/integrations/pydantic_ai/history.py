""":class:`AgentHistory`: a Pydantic AI conversation on a statevcs branch, one commit per run.

Pydantic AI leaves persistence to its user: pass ``message_history=`` in, keep
``result.all_messages()`` out. ``AgentHistory`` does both for one branch: each ``run`` /
``run_sync`` / ``run_stream`` continues from the branch tip and commits the run's messages;
``messages(rev)`` returns the history at any revision (``~n`` counts back on the branch) and
``fork(rev)`` starts a new branch there, sharing every stored message with the old one.

    history = AgentHistory(repo, "support-42")
    result = await history.run(agent, "Where is my order?")
    earlier = history.messages("~1")          # the history one run ago
    retry = history.fork("~1")                # a branch from there
    await retry.run(agent, "Where is my parcel?")
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import ModelMessage

from ...hashing import from_hex, to_hex
from ...refs import HEAD, branch_ref, check_short_name
from ...repo import Repo
from ..history import relative
from ..stored import (
    branch_tip,
    commit_snapshot,
    fork_branch,
    paused_gc,
    snapshot_messages,
)
from .messages import MessageHistory, check_kind, from_records

if TYPE_CHECKING:
    from pydantic_ai import Agent, AgentRunResult
    from pydantic_ai.result import StreamedRunResult

    from ...repo import Commit


def _check_str(value: object, argument: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, got {type(value).__name__}")
    return value


class AgentHistory:
    """The message history of a Pydantic AI conversation kept on branch ``branch`` of ``repo``.

    Opening a history on an existing branch resumes it. Every commit's metadata holds ``op``
    (``run``, ``commit``, ``restore``), ``messages`` (how many) and, for runs, ``run_id`` and
    ``new_messages``.
    """

    def __init__(self, repo: Repo, branch: str, *, author: str | None = None) -> None:
        """Keep the conversation on ``branch`` of ``repo``."""
        if not isinstance(repo, Repo):
            raise TypeError(f"repo must be a statevcs.Repo, got {type(repo).__name__}")
        self.repo = repo
        self.branch = check_short_name(_check_str(branch, "branch"))
        if author is not None:
            _check_str(author, "author")
        self.author = author
        self._live = MessageHistory()
        self._live_tip: bytes | None = None

    @property
    def head(self) -> str | None:
        """The commit at the branch tip (``None`` before the first commit)."""
        tip = self.repo.store.get_ref(branch_ref(self.branch))
        return to_hex(tip) if tip is not None else None

    def _sync(self) -> MessageHistory:
        """The live history, reloaded when the branch moved since it was last synced."""
        tip = self.repo.store.get_ref(branch_ref(self.branch))
        if tip != self._live_tip:
            live = MessageHistory()
            if tip is not None:
                self.repo.checkout(live, self.branch)
            self._live, self._live_tip = live, tip
        return self._live

    def _revision(self, rev: str) -> str:
        rev = _check_str(rev, "rev")
        ref = branch_ref(self.branch)
        if rev.startswith(("~", "^")):
            return ref + rev
        return relative(rev, ref) if rev == HEAD or rev.startswith((HEAD, "@")) else rev

    def messages(self, rev: str = HEAD) -> list[ModelMessage]:
        """The history at ``rev`` (default: the branch tip; empty before the first commit), as a
        new list to pass as ``message_history=``. ``~n`` / ``HEAD~n`` count back on the branch.
        """
        head = _check_str(rev, "rev") == HEAD
        with self.repo.store.operation():  # one consistent read of the ref and the tree
            if head:
                tip = branch_tip(self.repo, self.branch)
                if tip == self._live_tip:
                    return list(self._live)
                if tip is None:
                    return []
            else:
                tip = from_hex(self.repo.resolve(self._revision(rev)))
            # Only the message tree is read and validated: no live history is built for a read.
            stored = commit_snapshot(self.repo, tip)
            check_kind(stored.kind)
            with paused_gc():
                return from_records(snapshot_messages(self.repo, stored))

    def commit(
        self,
        messages: Sequence[ModelMessage],
        message: str = "",
        *,
        metadata: dict[str, Any] | None = None,
    ) -> Commit:
        """Make ``messages`` the branch's history, in a commit on the tip; return it."""
        return self._commit(
            self._sync(), list(messages), message, {"op": "commit", **(metadata or {})}
        )

    def _commit(
        self,
        live: MessageHistory,
        messages: list[ModelMessage],
        message: str,
        metadata: dict[str, Any],
    ) -> Commit:
        live[:] = messages
        try:
            commit = self.repo.commit(
                live,
                message or f"{len(live)} messages",
                branch=self.branch,
                author=self.author,
                metadata={**metadata, "messages": len(live)},
            )
        except BaseException:
            self._live_tip = _UNKNOWN  # the next read reloads the tip
            raise
        if live is self._live:
            self._live_tip = self.repo.store.get_ref(branch_ref(self.branch))
        return commit

    def _after_run(
        self, live: MessageHistory, result: AgentRunResult[Any] | StreamedRunResult[Any, Any]
    ) -> Commit:
        """Commit the run's messages on top of the commit the run started from.

        Raises :class:`~statevcs.errors.RefConflict` (nothing written) when another writer
        moved the branch during the run: its messages are never overwritten.
        """
        return self._commit(
            live,
            result.all_messages(),
            f"run {result.run_id}" if result.run_id else "run",
            {"op": "run", "run_id": result.run_id, "new_messages": len(result.new_messages())},
        )

    async def run(self, agent: Agent[Any, Any], user_prompt: Any = None, **kwargs: Any) -> Any:
        """``agent.run(user_prompt, message_history=<tip>, **kwargs)``, then commit its messages;
        return the run's result."""
        live = self._prepare(kwargs)
        result = await agent.run(user_prompt, message_history=list(live), **kwargs)
        self._after_run(live, result)
        return result

    def run_sync(self, agent: Agent[Any, Any], user_prompt: Any = None, **kwargs: Any) -> Any:
        """``agent.run_sync`` continuing from the branch tip, then a commit; return its result."""
        live = self._prepare(kwargs)
        result = agent.run_sync(user_prompt, message_history=list(live), **kwargs)
        self._after_run(live, result)
        return result

    @asynccontextmanager
    async def run_stream(
        self, agent: Agent[Any, Any], user_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterator[StreamedRunResult[Any, Any]]:
        """``agent.run_stream`` continuing from the branch tip; commits when the block ends with
        the stream consumed (a block that raised, or left the stream unfinished, commits nothing).
        """
        live = self._prepare(kwargs)
        async with agent.run_stream(user_prompt, message_history=list(live), **kwargs) as stream:
            yield stream
            complete = stream.is_complete
        if complete:
            self._after_run(live, stream)

    def _prepare(self, kwargs: dict[str, Any]) -> MessageHistory:
        if "message_history" in kwargs:
            raise TypeError(
                "AgentHistory passes message_history itself (the branch tip); to run from another "
                "revision, fork(rev) or restore(rev) first"
            )
        return self._sync()

    def restore(self, rev: str) -> Commit:
        """Make ``rev``'s history the branch's, in a new commit (later commits stay in the log)."""
        target = self.repo.get_commit(self._revision(rev))
        return self.commit(
            self.messages(target.id),
            f"restore {target.short_id}",
            metadata={"op": "restore", "restored": target.id},
        )

    def fork(self, rev: str = HEAD, *, branch: str | None = None) -> AgentHistory:
        """A history on a new branch starting at ``rev`` (O(1): it shares every stored message).

        ``branch`` defaults to ``<branch>-fork-<n>``.
        """
        commit = self.repo.get_commit(self._revision(rev))
        if branch is None:
            branch = fork_branch(self.repo, self.branch, commit.id)
        else:
            self.repo.branch(_check_str(branch, "branch"), commit.id)
        return AgentHistory(self.repo, branch, author=self.author)


_UNKNOWN = b"?"  # a tip no ref holds: forces a reload


__all__ = ["AgentHistory"]
