""":class:`StateVCSSession`: an OpenAI Agents SDK session whose every change is a statevcs commit.

The session's items are the ``messages`` list of the snapshot on the session's branch (one stored
object per item, shared by every commit and branch that holds it). ``add_items``, ``pop_item``
and ``clear_session`` each make one commit, so nothing is ever lost: what was popped or cleared
is still in the history (``repo.log``, ``restore("~1")``).

Branches use the verbs of the SDK's ``AdvancedSQLiteSession``. The session's own branch is the
SDK branch ``"main"``; another SDK branch ``name`` is the statevcs branch ``<branch>.<name>``.
Creating one points a new ref at an existing commit (or adds one small commit): nothing is
copied.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agents.memory.session_settings import SessionSettings, resolve_session_limit

from ...adapters import tracked_messages
from ...errors import RefConflict, StateVCSError
from ...hashing import from_hex, to_hex
from ...refs import HEAD, branch_ref, check_short_name
from ...snapshot import Snapshot
from ..history import relative
from ..stored import branch_tip, commit_messages, fork_branch, paused_gc

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

    from ...repo import Commit, Repo

KIND = "openai_agents.session"
"""The snapshot kind of a session's commits."""
MAIN = "main"
"""The SDK name of the session's own branch."""
BRANCH_SEPARATOR = "."
"""Joins the session's branch and an SDK branch name into a statevcs branch name."""

_ATTEMPTS = 8
# As AdvancedSQLiteSession, whose SQLite LIKE folds ASCII case only.
_SEARCH_FLAGS = re.IGNORECASE | re.ASCII


class SessionBranchError(StateVCSError, ValueError):
    """A branch verb was refused (unknown branch, name taken, no such turn, ``main``).

    A :class:`ValueError` too, as the SDK's ``AdvancedSQLiteSession`` raises.
    """


def _check_str(value: object, argument: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, got {type(value).__name__}")
    return value


def _user_turns(items: list[Any]) -> list[int]:
    """Positions of the user messages (turn ``n`` starts at position ``[n - 1]``)."""
    return [i for i, item in enumerate(items) if _is_user(item)]


def _is_user(item: object) -> bool:
    return isinstance(item, Mapping) and item.get("role") == "user"


def _texts(content: Any) -> list[str]:
    """The text of a user message's content: a string, or its parts' ``text``."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        ]
    return []


def _plain(item: Any) -> Any:
    # Tracked copies report edits to the list; callers get plain, independent values.
    return copy.deepcopy(item)


class StateVCSSession:
    """An OpenAI Agents SDK ``Session`` kept on a statevcs branch, one commit per change.

    ``branch`` (default: ``session_id``) is the statevcs branch of the SDK branch ``"main"``.
    Opening a session on an existing branch resumes it; the methods always act on the branch tip,
    so several handles (or processes) can share a session.

        session = StateVCSSession(repo, "user-42")
        await Runner.run(agent, "Hello", session=session)
    """

    def __init__(
        self,
        repo: Repo,
        session_id: str,
        *,
        branch: str | None = None,
        session_settings: SessionSettings | None = None,
        author: str | None = None,
    ) -> None:
        """Keep session ``session_id`` on ``branch`` of ``repo``."""
        self.session_id = _check_str(session_id, "session_id")
        self.branch = check_short_name(_check_str(branch or session_id, "branch"))
        if session_settings is not None and not isinstance(session_settings, SessionSettings):
            raise TypeError(
                f"session_settings must be a SessionSettings, got {type(session_settings).__name__}"
            )
        self.session_settings = session_settings
        self.author = author
        self.repo = repo
        self._current = MAIN
        self._snapshot = self._fresh()

    # --- names --------------------------------------------------------------

    @property
    def current_branch(self) -> str:
        """The SDK branch this session reads and writes (``"main"`` at first)."""
        return self._current

    def branch_name(self, branch_id: str | None = None) -> str:
        """The statevcs branch of SDK branch ``branch_id`` (default: the current one)."""
        branch_id = self._current if branch_id is None else _check_str(branch_id, "branch_id")
        if branch_id == MAIN:
            return self.branch
        return check_short_name(f"{self.branch}{BRANCH_SEPARATOR}{branch_id}")

    @property
    def head(self) -> str | None:
        """The commit at the tip of the current branch (``None`` before the first change)."""
        tip = self.repo.store.get_ref(branch_ref(self.branch_name()))
        return to_hex(tip) if tip is not None else None

    # --- keeping up with the branch -------------------------------------------

    def _fresh(self) -> Snapshot:
        # model_construct: validating would copy the tracked list into a plain one, and every
        # commit would then encode every item again.
        return Snapshot.model_construct(
            kind=KIND,
            messages=tracked_messages(),
            state={"session_id": self.session_id},
            extras={},
        )

    def _sync(self) -> Snapshot:
        """The live snapshot, reloaded when another writer moved the branch since."""
        name = self.branch_name()
        tip = self.repo.store.get_ref(branch_ref(name))
        repo = self.repo
        if tip is None:
            if repo.synced_commit(self._snapshot) is not None or self._snapshot.messages:
                self._snapshot = self._fresh()
        elif (
            repo.synced_commit(self._snapshot) != to_hex(tip)
            or repo.attached_branch(self._snapshot) != name
        ):
            snapshot = self._fresh()
            repo.checkout(snapshot, name)
            self._snapshot = snapshot
        return self._snapshot

    def _items(self, branch_id: str | None = None, last: int | None = None) -> list[Any]:
        """Fresh copies of the tip's items (``last``: only the last ``last``), read straight
        from the store: no live snapshot to build, nothing shared with one."""
        if branch_id is None or branch_id == self._current:
            name = self.branch_name()
        else:
            name = self._existing(branch_id)
        with self.repo.store.operation(), paused_gc():  # one consistent read of ref and tree
            tip = branch_tip(self.repo, name)
            return [] if tip is None else commit_messages(self.repo, tip, last=last)

    def _prior_turns(self, snapshot: Snapshot) -> int | None:
        """The user turns of the commit ``snapshot`` was synced with (``None``: unknown)."""
        synced = self.repo.synced_commit(snapshot)
        if synced is None:
            return 0 if not snapshot.messages else None
        before = self.repo.get_commit(synced).metadata.get("user_turns")
        return before if isinstance(before, int) and not isinstance(before, bool) else None

    def _commit(
        self,
        op: str,
        message: str,
        edit: Callable[[list[Any]], Any],
        added: list[Any] | None = None,
    ) -> Any:
        """Apply ``edit`` to the tip's items and commit it; redo it on a moved tip.

        ``added``: the items an append adds (its user turns are counted without a scan).
        """
        for _attempt in range(_ATTEMPTS):
            snapshot = self._sync()
            messages = snapshot.messages
            prior = self._prior_turns(snapshot) if added is not None else None
            result = edit(messages)
            if result is _UNCHANGED:
                return None
            try:
                self.repo.commit(
                    snapshot,
                    message,
                    branch=self.branch_name(),
                    author=self.author,
                    metadata={
                        "op": op,
                        "session_id": self.session_id,
                        "items": len(messages),
                        "user_turns": (
                            prior + sum(1 for item in added if _is_user(item))
                            if prior is not None and added is not None
                            else len(_user_turns(list(messages)))
                        ),
                    },
                )
            except RefConflict:
                self._snapshot = self._fresh()  # another writer moved the tip: redo on it
                continue
            except BaseException:
                self._snapshot = self._fresh()  # drop the edit: the next call reloads the tip
                raise
            return result
        raise RefConflict(
            branch_ref(self.branch_name()),
            None,
            None,
            f"gave up after {_ATTEMPTS} attempts: other writers keep moving the session's branch",
        )

    # --- the SDK's Session protocol -------------------------------------------

    async def get_items(
        self, limit: int | None = None, branch_id: str | None = None
    ) -> list[TResponseInputItem]:
        """The items of the current branch (or ``branch_id``), the latest ``limit`` if given."""
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
            raise TypeError(f"limit must be an int or None, got {type(limit).__name__}")
        effective = resolve_session_limit(limit, self.session_settings)
        # SQLiteSession's semantics: LIMIT 0 is empty, a negative LIMIT is no limit. The items
        # are decoded afresh for each call, so a caller's edits reach nothing stored or cached.
        return self._items(branch_id, None if effective is None or effective < 0 else effective)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` in one commit (none for an empty list)."""
        if not isinstance(items, list):
            raise TypeError(f"items must be a list, got {type(items).__name__}")
        for item in items:
            if not isinstance(item, dict):
                raise TypeError(f"items must hold dicts, got a {type(item).__name__}")
        if not items:
            return
        added = [_plain(item) for item in items]
        count = len(added)
        message = f"add {count} item{'s' if count != 1 else ''}"

        def edit(messages: list[Any]) -> None:
            messages.extend(added)

        self._commit("add", message, edit, added)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item, in a commit (``None``, no commit, when empty)."""

        def edit(messages: list[Any]) -> Any:
            if not messages:
                return _UNCHANGED
            return _plain(messages.pop())

        popped: TResponseInputItem | None = self._commit("pop", "pop item", edit)
        return popped

    async def clear_session(self) -> None:
        """Empty the current branch in a commit; the history keeps every cleared item."""

        def edit(messages: list[Any]) -> Any:
            if not messages:
                return _UNCHANGED
            messages.clear()
            return None

        self._commit("clear", "clear session", edit)

    # --- history ----------------------------------------------------------------

    def _revision(self, rev: str) -> str:
        rev = _check_str(rev, "rev")
        ref = branch_ref(self.branch_name())
        if rev.startswith(("~", "^")):
            return ref + rev
        return relative(rev, ref) if rev == HEAD or rev.startswith((HEAD, "@")) else rev

    def restore(self, rev: str) -> Commit:
        """Make ``rev``'s items the current branch's, in a new commit; return it.

        ``rev`` is any revision; ``~n`` and ``HEAD~n`` count back on the current branch. The
        commits after ``rev`` stay in the history.
        """
        target = self.repo.get_commit(self._revision(rev))
        items = commit_messages(self.repo, from_hex(target.id))

        def edit(messages: list[Any]) -> None:
            common = 0
            for old, new in zip(messages, items):
                if old != new:
                    break
                common += 1
            # Only the diverging suffix is replaced, so the shared prefix is not re-encoded.
            del messages[common:]
            messages.extend(items[common:])  # fresh values: nothing else holds them

        self._commit("restore", f"restore {target.short_id}", edit)
        return self.repo.get_commit(branch_ref(self.branch_name()))

    def fork(
        self, rev: str = HEAD, *, branch: str | None = None, session_id: str | None = None
    ) -> StateVCSSession:
        """A new session on a new branch starting at ``rev`` (shares every object; O(1)).

        ``branch`` defaults to ``<branch>-fork-<n>``; ``session_id`` to the new branch's name.
        """
        commit = self.repo.get_commit(self._revision(rev))
        if branch is None:
            branch = fork_branch(self.repo, self.branch, commit.id)
        else:
            self.repo.branch(_check_str(branch, "branch"), commit.id)
        return StateVCSSession(
            self.repo,
            session_id if session_id is not None else branch,
            branch=branch,
            session_settings=self.session_settings,
            author=self.author,
        )

    # --- AdvancedSQLiteSession's branch verbs -------------------------------------

    def _existing(self, branch_id: str) -> str:
        name = self.branch_name(branch_id)
        if self.repo.store.get_ref(branch_ref(name)) is None and branch_id != MAIN:
            raise SessionBranchError(f"Branch '{branch_id}' does not exist")
        return name

    async def create_branch_from_turn(
        self, turn_number: int, branch_name: str | None = None
    ) -> str:
        """Branch off before user turn ``turn_number`` (1-based) and switch to it; return its id.

        The new branch holds the items before that user message. It points at the commit that
        held exactly them when there is one, else at one new commit on top of the current tip.
        """
        if not isinstance(turn_number, int) or isinstance(turn_number, bool):
            raise TypeError(f"turn_number must be an int, got {type(turn_number).__name__}")
        if branch_name is not None and not _check_str(branch_name, "branch_name").strip():
            raise SessionBranchError("Branch name cannot be empty")
        items = list(self._sync().messages)
        turns = _user_turns(items)
        if not 1 <= turn_number <= len(turns):
            raise SessionBranchError(
                f"Turn {turn_number} does not contain a user message in branch "
                f"'{self._current}'; it has {len(turns)} user turns"
            )
        cut = turns[turn_number - 1]
        if branch_name is None:
            n = 1
            while self.repo.store.get_ref(
                branch_ref(self.branch_name(branch_id := f"branch_from_turn_{turn_number}_{n}"))
            ):
                n += 1
            branch_name = branch_id
        name = self.branch_name(branch_name)
        if self.repo.store.get_ref(branch_ref(name)) is not None:
            raise SessionBranchError(
                f"Branch ID '{branch_name}' has already been used. Choose a new branch ID."
            )
        tip = self.head
        assert tip is not None  # it has a user turn, so a commit
        base = self._commit_holding(tip, cut)
        self.repo.branch(name, base or tip)
        self._current = branch_name
        if base is None:

            def edit(messages: list[Any]) -> None:
                del messages[cut:]

            self._commit("branch", f"branch from turn {turn_number}", edit)
        return branch_name

    def _commit_holding(self, tip: str, length: int) -> str | None:
        """The newest commit whose items are exactly the first ``length`` items of ``tip``."""
        commit = self.repo.get_commit(tip)
        while True:
            if commit.metadata.get("items") == length:
                return commit.id
            # Only appends keep an older commit's items a prefix of the newer ones.
            if commit.metadata.get("op") != "add" or not commit.parents:
                return None
            commit = self.repo.get_commit(commit.parents[0])

    async def switch_to_branch(self, branch_id: str) -> None:
        """Read and write SDK branch ``branch_id`` from now on."""
        self._existing(_check_str(branch_id, "branch_id"))
        self._current = branch_id

    async def list_branches(self) -> list[dict[str, Any]]:
        """The session's branches: ``branch_id``, ``message_count``, ``user_turns``,
        ``is_current``, ``commit`` (the tip) and ``branch`` (the statevcs name)."""
        prefix = f"{self.branch}{BRANCH_SEPARATOR}"
        found: list[dict[str, Any]] = []
        for name, commit_id in sorted(self.repo.branches().items()):
            if name == self.branch:
                branch_id = MAIN
            elif name.startswith(prefix):
                branch_id = name[len(prefix) :]
            else:
                continue
            metadata = self.repo.get_commit(commit_id).metadata
            count, turns = metadata.get("items"), metadata.get("user_turns")
            if not isinstance(count, int) or not isinstance(turns, int):
                items = list(self.repo.show(commit_id).messages)
                count, turns = len(items), len(_user_turns(items))
            entry = {
                "branch_id": branch_id,
                "message_count": count,
                "user_turns": turns,
                "is_current": branch_id == self._current,
                "commit": commit_id,
                "branch": name,
            }
            found.append(entry)
        found.sort(key=lambda entry: entry["branch_id"] != MAIN)
        return found

    async def delete_branch(self, branch_id: str, force: bool = False) -> None:
        """Delete SDK branch ``branch_id`` (its commits stay until ``repo.gc``).

        ``main`` cannot be deleted; the current branch only with ``force=True`` (the session
        then switches to ``main``).
        """
        if not _check_str(branch_id, "branch_id").strip():
            raise SessionBranchError("Branch ID cannot be empty")
        if branch_id == MAIN:
            raise SessionBranchError("Cannot delete the 'main' branch")
        name = self._existing(branch_id)
        if branch_id == self._current:
            if not force:
                raise SessionBranchError(
                    f"Cannot delete current branch '{branch_id}'. Use force=True or switch "
                    "branches first"
                )
            self._current = MAIN
        self.repo.delete_branch(name)

    async def get_conversation_turns(self, branch_id: str | None = None) -> list[dict[str, Any]]:
        """The user turns (``turn``, ``content`` preview, ``full_content``) to branch from."""
        return self._turns(self._items(branch_id), None)

    async def find_turns_by_content(
        self, search_term: str, branch_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The user turns whose text contains ``search_term`` (ASCII case-insensitive)."""
        pattern = re.compile(re.escape(_check_str(search_term, "search_term")), _SEARCH_FLAGS)
        return self._turns(self._items(branch_id), pattern)

    async def create_branch_from_content(
        self, search_term: str, branch_name: str | None = None
    ) -> str:
        """Branch off before the first user turn containing ``search_term``; return its id."""
        found = await self.find_turns_by_content(search_term)
        if not found:
            raise SessionBranchError(f"No user turns found containing '{search_term}'")
        return await self.create_branch_from_turn(found[0]["turn"], branch_name)

    @staticmethod
    def _turns(items: list[Any], pattern: re.Pattern[str] | None) -> list[dict[str, Any]]:
        turns = []
        for turn, position in enumerate(_user_turns(items), start=1):
            content = items[position].get("content", "")
            if pattern is not None and not any(pattern.search(t) for t in _texts(content)):
                continue
            preview = content if isinstance(content, str) else json.dumps(content)
            turns.append(
                {
                    "turn": turn,
                    "content": preview[:100] + "..." if len(preview) > 100 else preview,
                    "full_content": content,  # the items are fresh copies
                    "can_branch": True,
                }
            )
        return turns


class _Unchanged:
    """Returned by an edit that leaves the items alone: no commit."""


_UNCHANGED = _Unchanged()

__all__ = ["BRANCH_SEPARATOR", "KIND", "MAIN", "SessionBranchError", "StateVCSSession"]
