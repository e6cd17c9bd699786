""":class:`StateVCSSessionService`: Google ADK sessions on statevcs branches, one commit per event.

Layout (``prefix`` defaults to ``adk``):

* a session is branch ``<prefix>/<app>/sessions/<user>/<session id>``: its snapshot's messages
  are the session's events (one stored object per event, in the JSON form ADK's own SQLite
  service writes), its state the session-scoped state; every ``append_event`` is one commit;
* ``app:`` state is a dict on branch ``<prefix>/<app>/app``, ``user:`` state one on
  ``<prefix>/<app>/users/<user>``, each changed by a commit when an event's delta touches it;
* ``temp:`` state is never stored (as in ADK's own services).

``Runner.rewind_async`` appends a rewind event like any other; ``fork_session`` starts a new
session at any event as a new branch pointing at that event's commit (O(1), shared prefix).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

from ...adapters import tracked_messages
from ...errors import RefConflict, StateVCSError
from ...hashing import ObjectId, from_hex, to_hex
from ...refs import branch_ref, check_short_name
from ...repo import Repo
from ...snapshot import Snapshot
from ..stored import (
    branch_tip,
    commit_snapshot,
    paused_gc,
    snapshot_extras,
    snapshot_messages,
    snapshot_state,
)
from .events import event_from_record, event_record, events_from_records

KIND = "google_adk.session"
"""The snapshot kind of a session's commits."""
_SCOPE_KIND = "google_adk.scoped_state"
_ATTEMPTS = 8
_CACHED = 64  # live session snapshots kept between calls (least recently used dropped)


class SessionNameError(StateVCSError, ValueError):
    """An app name, user id or session id cannot be part of a branch name.

    A :class:`ValueError` too, as ADK's services raise for bad arguments.
    """


def _check_str(value: object, argument: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, got {type(value).__name__}")
    return value


def _split(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(app, user, session)`` state from prefixed keys; ``temp:`` keys are dropped."""
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    session: dict[str, Any] = {}
    for key, value in state.items():
        if key.startswith(State.APP_PREFIX):
            app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            user[key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            session[key] = value
    return app, user, session


def _at_or_after(record: Any, after: float) -> bool:
    """Whether stored event ``record`` may be at or after ``after``: ``False`` only when its
    stored timestamp says it is earlier (a record without a plain one is kept, and decided once
    validated)."""
    stamp = record.get("timestamp") if isinstance(record, dict) else None
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return stamp >= after
    return True


class StateVCSSessionService(BaseSessionService):
    """An ADK ``BaseSessionService`` on a statevcs repository: every event a commit, every
    session a branch, forks O(1)."""

    def __init__(self, repo: Repo, *, prefix: str = "adk", author: str | None = None) -> None:
        """Keep sessions on branches under ``prefix`` in ``repo``."""
        if not isinstance(repo, Repo):
            raise TypeError(f"repo must be a statevcs.Repo, got {type(repo).__name__}")
        self.repo = repo
        self.prefix = check_short_name(_check_str(prefix, "prefix"))
        self.author = author
        self._cache: OrderedDict[str, Snapshot] = OrderedDict()

    # --- names -----------------------------------------------------------------------------

    def _name(self, *parts: str) -> str:
        name = "/".join((self.prefix, *parts))
        try:
            if any("/" in part for part in parts):
                # one name per level: "u/s" would read as user "u", session "s"
                raise StateVCSError("an id contains '/'")
            return check_short_name(name)
        except StateVCSError as exc:
            raise SessionNameError(
                f"{'/'.join(parts)!r} cannot be part of a branch name ({exc}); use ids of "
                "letters, digits, '-', '_' and '.'"
            ) from exc

    def session_branch(self, app_name: str, user_id: str, session_id: str) -> str:
        """The statevcs branch of one session."""
        for value, argument in ((app_name, "app_name"), (user_id, "user_id")):
            _check_str(value, argument)
        return self._name(app_name, "sessions", user_id, _check_str(session_id, "session_id"))

    def _exists(self, branch: str) -> bool:
        return self.repo.store.get_ref(branch_ref(branch)) is not None

    # --- scoped state ----------------------------------------------------------------------

    def _scoped(self, branch: str) -> dict[str, Any]:
        """The state at ``branch``'s tip (``{}`` for none), read without a live snapshot."""
        with self.repo.store.operation():
            tip = branch_tip(self.repo, branch)
            return {} if tip is None else snapshot_state(self.repo, commit_snapshot(self.repo, tip))

    def _update_scoped(self, branch: str, delta: dict[str, Any], what: str) -> None:
        if not delta:
            return
        self._retry(
            branch, lambda s: s.state.update(delta) is None, what, {"op": "state"}, _SCOPE_KIND
        )

    def _merged(self, session: Session) -> Session:
        app = self._scoped(self._name(session.app_name, "app"))
        user = self._scoped(self._name(session.app_name, "users", session.user_id))
        session.state.update({State.APP_PREFIX + k: v for k, v in app.items()})
        session.state.update({State.USER_PREFIX + k: v for k, v in user.items()})
        return session

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The ``user:`` state of ``user_id`` in ``app_name``, without the prefix."""
        return self._scoped(self._name(app_name, "users", _check_str(user_id, "user_id")))

    # --- writes ------------------------------------------------------------------------------

    def _live(self, branch: str, kind: str) -> Snapshot:
        """The branch tip's snapshot, kept between calls while no other writer moves the tip
        (so an append encodes only the new event)."""
        tip = self.repo.store.get_ref(branch_ref(branch))
        live = self._cache.pop(branch, None)
        if live is None or (
            tip is not None
            and (
                self.repo.synced_commit(live) != to_hex(tip)
                or self.repo.attached_branch(live) != branch
            )
        ):
            live = Snapshot.model_construct(
                kind=kind, messages=tracked_messages(), state={}, extras={}
            )
            if tip is not None:
                self.repo.checkout(live, branch)
        elif tip is None and (live.messages or live.extras):
            live = Snapshot.model_construct(
                kind=kind, messages=tracked_messages(), state={}, extras={}
            )
        self._cache[branch] = live
        while len(self._cache) > _CACHED:
            self._cache.popitem(last=False)
        return live

    def _retry(
        self,
        branch: str,
        edit: Callable[[Snapshot], bool],
        message: str,
        metadata: dict[str, Any],
        kind: str = KIND,
    ) -> None:
        """Apply ``edit`` to the branch tip's snapshot and commit it; redo it on a moved tip."""
        for _attempt in range(_ATTEMPTS):
            snapshot = self._live(branch, kind)
            try:
                if not edit(snapshot):
                    return
                self.repo.commit(
                    snapshot, message, branch=branch, author=self.author, metadata=metadata
                )
            except RefConflict:
                self._cache.pop(branch, None)  # another writer moved the tip: redo on it
                continue
            except BaseException:
                self._cache.pop(branch, None)  # drop the edit: the next call reloads the tip
                raise
            return
        raise RefConflict(
            branch_ref(branch), None, None, f"gave up after {_ATTEMPTS} attempts on {branch!r}"
        )

    # --- BaseSessionService ------------------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Start a session (its first commit); ``app:`` / ``user:`` keys of ``state`` go to the
        app's and user's state. Raises ADK's ``AlreadyExistsError`` for a taken id."""
        session_id = (session_id.strip() if session_id else None) or platform_uuid.new_uuid()
        branch = self.session_branch(app_name, user_id, session_id)
        if self._exists(branch):
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        app, user, own = _split(dict(state or {}))
        now = platform_time.get_time()
        session = Session(
            app_name=app_name, user_id=user_id, id=session_id, state=own, last_update_time=now
        )

        def edit(snapshot: Snapshot) -> bool:
            if snapshot.messages or snapshot.extras:
                raise AlreadyExistsError(f"Session with id {session_id} already exists.")
            snapshot.state.update(own)
            snapshot.extras.update(
                {"app_name": app_name, "user_id": user_id, "id": session_id, "updated": now}
            )
            return True

        self._update_scoped(self._name(app_name, "app"), app, "app state")
        self._update_scoped(self._name(app_name, "users", user_id), user, "user state")
        self._retry(branch, edit, f"create session {session_id}", {"op": "create"})
        return self._merged(session)

    def _load(self, at: str | ObjectId, config: GetSessionConfig | None) -> Session | None:
        """The session at branch ``at``'s tip (``None`` if it has none) or at commit ``at``,
        with app and user state merged in.

        Read straight from the store in one consistent read (no live snapshot): the session's
        extras and state, the app's and user's state, and its events' stored forms (only the
        last ``num_recent_events``, from the leaves that hold them); then validated at once.
        Everything returned is fresh: a caller's edits reach nothing stored.
        """
        repo = self.repo
        last = None if config is None else config.num_recent_events
        after = None if config is None else config.after_timestamp
        with paused_gc():  # thousands of events allocate many objects, none in a cycle
            with repo.store.operation():
                tip = branch_tip(repo, at) if isinstance(at, str) else at
                if tip is None:
                    return None
                obj = commit_snapshot(repo, tip)
                extras = snapshot_extras(repo, obj)
                state = snapshot_state(repo, obj)
                records = snapshot_messages(repo, obj, last=last)
                app_name, user_id = extras["app_name"], extras["user_id"]
                app = self._scoped(self._name(app_name, "app"))
                user = self._scoped(self._name(app_name, "users", user_id))
            if after is not None:
                records = [r for r in records if _at_or_after(r, after)]
            events = events_from_records(records)
        if after is not None:  # the records without a plain timestamp, now validated
            events = [e for e in events if e.timestamp >= after]
        state.update({State.APP_PREFIX + k: v for k, v in app.items()})
        state.update({State.USER_PREFIX + k: v for k, v in user.items()})
        return Session(
            app_name=app_name,
            user_id=user_id,
            id=extras["id"],
            state=state,
            events=events,
            last_update_time=extras["updated"],
        )

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session at its branch tip, with app and user state merged in (``None`` if none)."""
        if config is not None and not isinstance(config, GetSessionConfig):
            raise TypeError(f"config must be a GetSessionConfig, got {type(config).__name__}")
        session_id = _check_str(session_id, "session_id").strip()
        return self._load(self.session_branch(app_name, user_id, session_id), config)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The app's sessions (of ``user_id``, if given) without events, oldest update first."""
        prefix = self._name(_check_str(app_name, "app_name"), "sessions") + "/"
        if user_id is not None:
            prefix += f"{_check_str(user_id, 'user_id')}/"
        sessions = []
        for name in self.repo.branches():
            if name.startswith(prefix):
                session = self._load(name, GetSessionConfig(num_recent_events=0))
                if session is not None:  # deleted since the listing
                    sessions.append(session)
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session's branch (its commits stay until ``repo.gc``)."""
        branch = self.session_branch(
            app_name, user_id, _check_str(session_id, "session_id").strip()
        )
        if self._exists(branch):
            self.repo.delete_branch(branch)

    async def append_event(self, session: Session, event: Event) -> Event:
        """Append ``event`` to ``session`` (in memory, as ADK does) and commit it with its
        session-state delta; ``app:`` / ``user:`` deltas are committed to their branches."""
        if event.partial:
            return event
        branch = self.session_branch(session.app_name, session.user_id, session.id)
        if not self._exists(branch):
            raise SessionNotFoundError(f"Session {session.id} not found.")
        stored = self._live(branch, KIND).messages
        if stored and stored[-1].get("id") == event.id and stored[-1] == event_record(event):
            return event  # just appended (a retried call): as ADK's services, nothing changes
        event = await super().append_event(session=session, event=event)
        session.last_update_time = event.timestamp
        delta = dict(event.actions.state_delta) if event.actions else {}
        app, user, own = _split(delta)
        record = event_record(event)

        def edit(snapshot: Snapshot) -> bool:
            snapshot.messages.append(record)
            snapshot.state.update(own)
            snapshot.extras["updated"] = event.timestamp
            return True

        self._retry(
            branch,
            edit,
            f"{event.author}: event {event.id}",
            {"op": "event", "event_id": event.id, "invocation_id": event.invocation_id},
        )
        self._update_scoped(self._name(session.app_name, "app"), app, "app state")
        self._update_scoped(
            self._name(session.app_name, "users", session.user_id), user, "user state"
        )
        return event

    # --- beyond ADK ----------------------------------------------------------------------------

    async def get_session_at(
        self, *, app_name: str, user_id: str, session_id: str, rev: str
    ) -> Session:
        """The session as it was at revision ``rev`` (``~n``: n events back on its branch; or
        any commit id), with today's app and user state merged in."""
        branch = self.session_branch(
            app_name, user_id, _check_str(session_id, "session_id").strip()
        )
        if not self._exists(branch):
            raise SessionNotFoundError(f"Session {session_id} not found.")
        rev = _check_str(rev, "rev")
        target = branch_ref(branch) + rev if rev.startswith(("~", "^")) else rev
        session = self._load(from_hex(self.repo.resolve(target)), None)
        assert session is not None  # a commit always holds a session
        return session

    async def fork_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        new_session_id: str | None = None,
        at_event_id: str | None = None,
    ) -> Session:
        """A new session holding ``session_id``'s events up to and including ``at_event_id``
        (default: all), as a branch at that event's commit: O(1), every event shared."""
        branch = self.session_branch(app_name, user_id, session_id)
        if not self._exists(branch):
            raise SessionNotFoundError(f"Session {session_id} not found.")
        new_session_id = new_session_id or platform_uuid.new_uuid()
        target = self.session_branch(app_name, user_id, new_session_id)
        if self._exists(target):
            raise AlreadyExistsError(f"Session with id {new_session_id} already exists.")
        at = self.repo.resolve(branch)
        if at_event_id is not None:
            found = next(
                (c.id for c in self.repo.log(branch) if c.metadata.get("event_id") == at_event_id),
                None,
            )
            if found is None:
                raise SessionNotFoundError(
                    f"Event {at_event_id} not found in session {session_id}."
                )
            at = found
        self.repo.branch(target, at)

        def rename(snapshot: Snapshot) -> bool:
            snapshot.extras["id"] = new_session_id
            return True

        self._retry(target, rename, f"fork of {session_id}", {"op": "fork", "from": session_id})
        forked = await self.get_session(
            app_name=app_name, user_id=user_id, session_id=new_session_id
        )
        assert forked is not None
        return forked


__all__ = [
    "KIND",
    "SessionNameError",
    "StateVCSSessionService",
    "event_from_record",
    "event_record",
]
