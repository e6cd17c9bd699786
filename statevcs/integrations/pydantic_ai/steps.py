""":class:`StateVCSStepStore`: the ``pydantic-ai-harness`` ``StepStore`` in a statevcs repository.

The harness's own stores keep a full message list per snapshot. Here each run is a branch
(``<prefix>/<run_id>``) and every store write is a commit on it: the run record sits in the
snapshot's state, a saved snapshot's messages are the commit's messages (one stored object per
message, shared with every earlier snapshot and every fork), and events and tool-effect records
are commits whose metadata holds them. ``fork_run`` starts a new run's branch at any saved
snapshot, sharing everything before it.

    store = StateVCSStepStore(repo)
    agent = Agent(model, capabilities=[StepPersistence(store=store)])
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import TypeAdapter
from pydantic_ai.messages import ModelMessage
from pydantic_ai_harness.step_persistence import (
    ContinuableSnapshot,
    RunRecord,
    StepEvent,
    ToolEffectRecord,
)

from ...adapters import tracked_messages
from ...errors import RefConflict, StateVCSError
from ...hashing import from_hex, to_hex
from ...refs import branch_ref, check_short_name
from ...repo import Repo
from ...snapshot import Snapshot
from ..stored import commit_messages
from .messages import from_records, to_records

KIND = "pydantic_ai_harness.run"
"""The snapshot kind of a step-persistence run."""

_ATTEMPTS = 8
_CACHED = 64  # runs whose tip snapshot is kept between calls (least recently used dropped)
_RUN = TypeAdapter(RunRecord)
_EVENT = TypeAdapter(StepEvent)
_EFFECT = TypeAdapter(ToolEffectRecord)
_Op = Literal["register", "event", "snapshot", "tool_effect", "fork"]


@dataclass
class _Run:
    """A run's tip snapshot (attached to its branch) and the idempotency keys applied there."""

    live: Snapshot
    keys: dict[str, set[str]]


class StepStoreError(StateVCSError, ValueError):
    """A step-store call was refused (a run id that cannot name a branch, an unknown run).

    A :class:`ValueError` too, as the harness's own stores raise.
    """


def _check_str(value: object, argument: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, got {type(value).__name__}")
    return value


class StateVCSStepStore:
    """The harness ``StepStore`` protocol on a statevcs repository: runs as branches, each
    write a commit. Snapshots are never pruned (forks and earlier steps share their messages).
    """

    def __init__(self, repo: Repo, *, prefix: str = "runs", author: str | None = None) -> None:
        """Keep runs on branches ``<prefix>/<run_id>`` of ``repo``."""
        if not isinstance(repo, Repo):
            raise TypeError(f"repo must be a statevcs.Repo, got {type(repo).__name__}")
        self.repo = repo
        self.prefix = check_short_name(_check_str(prefix, "prefix"))
        self.author = author
        self._cache: OrderedDict[str, _Run] = OrderedDict()

    # --- names and reads -------------------------------------------------------------------

    def branch_of(self, run_id: str) -> str:
        """The statevcs branch holding run ``run_id``."""
        try:
            if "/" in _check_str(run_id, "run_id"):
                # one level per run: run "a" and run "a/b" would be a file and a folder in git
                raise StateVCSError("the run id contains '/'")
            return check_short_name(f"{self.prefix}/{run_id}")
        except StateVCSError as exc:
            raise StepStoreError(
                f"run id {run_id!r} cannot name a branch ({exc}); use letters, digits, '-', '_' "
                "and '.'"
            ) from exc

    def _tip(self, run_id: str) -> bytes | None:
        tip: bytes | None = self.repo.store.get_ref(branch_ref(self.branch_of(run_id)))
        return tip

    def _log(self, run_id: str) -> Iterator[Any]:
        """The run's commits, newest first (nothing for an unknown run)."""
        if self._tip(run_id) is None:
            return iter(())
        return iter(self.repo.log(self.branch_of(run_id)))

    def _records(self, run_id: str, op: _Op) -> list[Any]:
        """What the run's ``op`` commits recorded, oldest first."""
        found = [c.metadata[op] for c in self._log(run_id) if c.metadata.get("op") == op]
        found.reverse()
        return found

    # --- writes ------------------------------------------------------------------------------

    def _run(self, run_id: str) -> _Run:
        """The run's tip snapshot and applied idempotency keys, kept between calls while no
        other writer moves the run's branch (so a write encodes only what it adds)."""
        name = self.branch_of(run_id)
        tip = self.repo.store.get_ref(branch_ref(name))
        run = self._cache.pop(name, None)
        synced = self.repo.synced_commit(run.live) if run is not None else None
        if run is None or synced != (to_hex(tip) if tip is not None else None):
            live = Snapshot.model_construct(
                kind=KIND, messages=tracked_messages(), state={"run": None}, extras={}
            )
            keys: dict[str, set[str]] = {"event": set(), "snapshot": set()}
            if tip is not None:
                self.repo.checkout(live, name)
                for commit in self.repo.log(name):
                    op = commit.metadata.get("op")
                    if op in keys and commit.metadata[op].get("idempotency_key") is not None:
                        keys[op].add(commit.metadata[op]["idempotency_key"])
            run = _Run(live, keys)
        self._cache[name] = run
        while len(self._cache) > _CACHED:
            self._cache.popitem(last=False)
        return run

    def _write(
        self,
        run_id: str,
        op: _Op,
        record: Any,
        edit: Callable[[Snapshot], bool],
        key: str | None = None,
    ) -> None:
        """Commit ``record`` on the run's branch after ``edit`` (which returns False to skip);
        nothing when ``key`` was applied by an earlier ``op`` of the run."""
        name = self.branch_of(run_id)
        for _attempt in range(_ATTEMPTS):
            run = self._run(run_id)
            if key is not None and key in run.keys.get(op, ()):
                return
            try:
                if not edit(run.live):
                    return
                self.repo.commit(
                    run.live,
                    op,
                    branch=name,
                    author=self.author,
                    metadata={"op": op, op: record},
                )
            except RefConflict:
                self._cache.pop(name, None)  # another writer moved the run's branch: redo
                continue
            except BaseException:
                self._cache.pop(name, None)  # drop the edit: the next call reloads the tip
                raise
            if key is not None:
                run.keys.setdefault(op, set()).add(key)
            return
        raise RefConflict(
            branch_ref(name), None, None, f"gave up after {_ATTEMPTS} attempts on run {run_id!r}"
        )

    async def register_run(self, record: RunRecord) -> None:
        """Start (or re-register) run ``record.run_id``: its branch's state holds the record."""
        data = _RUN.dump_python(record, mode="json")

        def edit(snapshot: Snapshot) -> bool:
            snapshot.state["run"] = data
            return True

        self._write(record.run_id, "register", data, edit)

    async def get_run(self, *, run_id: str) -> RunRecord | None:
        """The run's record (``None`` for an unknown run)."""
        if self._tip(run_id) is None:
            return None
        data = self.repo.show(self.branch_of(run_id)).state.get("run")
        return _RUN.validate_python(data) if data is not None else None

    async def list_runs(
        self, *, parent_run_id: str | None = None, conversation_id: str | None = None
    ) -> list[RunRecord]:
        """The matching runs, oldest ``started_at`` first."""
        prefix = f"{self.prefix}/"
        records = []
        for name in self.repo.branches():
            if not name.startswith(prefix):
                continue
            record = await self.get_run(run_id=name[len(prefix) :])
            if record is None:
                continue
            if parent_run_id is not None and record.parent_run_id != parent_run_id:
                continue
            if conversation_id is not None and record.conversation_id != conversation_id:
                continue
            records.append(record)
        return sorted(records, key=lambda r: r.started_at)

    async def append_event(self, event: StepEvent) -> None:
        """Record ``event`` in a commit (skipped when its idempotency key was applied)."""
        data = _EVENT.dump_python(event, mode="json")
        self._write(event.run_id, "event", data, lambda _snapshot: True, event.idempotency_key)

    async def list_events(self, *, run_id: str) -> list[StepEvent]:
        """The run's events in append order."""
        return [_EVENT.validate_python(e) for e in self._records(run_id, "event")]

    async def save_snapshot(self, snapshot: ContinuableSnapshot) -> None:
        """Make ``snapshot``'s messages the run's, in a commit (skipped when its idempotency key
        was applied); unchanged leading messages are shared with the previous snapshot."""
        data = _snapshot_fields(snapshot)
        messages = to_records(snapshot.messages)

        def edit(stored: Snapshot) -> bool:
            kept = stored.messages
            common = 0
            for old, new in zip(kept, messages):
                if old != new:
                    break
                common += 1
            # Only the changed tail is replaced: the shared prefix is not encoded again.
            del kept[common:]
            kept.extend(messages[common:])
            return True

        self._write(snapshot.run_id, "snapshot", data, edit, snapshot.idempotency_key)

    async def latest_snapshot(
        self, *, run_id: str, include_interrupted: bool = False
    ) -> ContinuableSnapshot | None:
        """The newest ``complete`` snapshot (or the newest of any state, with
        ``include_interrupted=True``); ``None`` when there is none."""
        found = self._latest(run_id, include_interrupted)
        return self._snapshot_at(*found) if found is not None else None

    def _latest(self, run_id: str, include_interrupted: bool) -> tuple[str, dict[str, Any]] | None:
        for commit in self._log(run_id):
            if commit.metadata.get("op") != "snapshot":
                continue
            fields = commit.metadata["snapshot"]
            if include_interrupted or fields["state"] == "complete":
                return commit.id, fields
        return None

    async def list_snapshots(
        self, *, run_id: str, include_interrupted: bool = False
    ) -> list[ContinuableSnapshot]:
        """Every saved snapshot of the run, oldest first (``complete`` ones unless
        ``include_interrupted=True``), as the harness's own stores offer for search."""
        found = [
            self._snapshot_at(c.id, c.metadata["snapshot"])
            for c in self._log(run_id)
            if c.metadata.get("op") == "snapshot"
            and (include_interrupted or c.metadata["snapshot"]["state"] == "complete")
        ]
        found.reverse()
        return found

    def _snapshot_at(self, commit_id: str, fields: dict[str, Any]) -> ContinuableSnapshot:
        messages: list[ModelMessage] = from_records(commit_messages(self.repo, from_hex(commit_id)))
        return _SNAPSHOT_FIELDS.validate_python({**fields, "messages": messages})

    async def record_tool_effect(self, record: ToolEffectRecord) -> None:
        """Record a tool call's effect status in a commit (the newest record wins)."""
        data = _EFFECT.dump_python(record, mode="json")
        self._write(record.run_id, "tool_effect", data, lambda _snapshot: True)

    async def get_tool_effect(self, *, run_id: str, tool_call_id: str) -> ToolEffectRecord | None:
        """The newest effect record of ``tool_call_id`` in the run."""
        for commit in self._log(run_id):
            data = commit.metadata.get("tool_effect")
            if commit.metadata.get("op") == "tool_effect" and data["tool_call_id"] == tool_call_id:
                return _EFFECT.validate_python(data)
        return None

    async def list_unresolved_tool_effects(self, *, run_id: str) -> list[ToolEffectRecord]:
        """The run's tool calls whose newest record is ``started`` (in flight at the last write)."""
        latest: dict[str, Any] = {}
        for data in self._records(run_id, "tool_effect"):
            latest[data["tool_call_id"]] = data
        return [_EFFECT.validate_python(d) for d in latest.values() if d["status"] == "started"]

    # --- forks ---------------------------------------------------------------------------------

    async def fork_run(
        self,
        run_id: str,
        new_run_id: str,
        *,
        include_interrupted: bool = False,
        conversation_id: str | None = None,
    ) -> ContinuableSnapshot:
        """Start run ``new_run_id`` at ``run_id``'s latest snapshot, as a branch sharing every
        stored message (O(1) in the history's length); return that snapshot, re-addressed to the
        new run. Its record names ``run_id`` as its parent run."""
        found = self._latest(run_id, include_interrupted)
        if found is None:
            raise StepStoreError(
                f"run {run_id!r} has no {'' if include_interrupted else 'complete '}snapshot to "
                "fork from"
            )
        if self._tip(new_run_id) is not None:
            raise StepStoreError(f"run {new_run_id!r} exists already; pick a new run id")
        latest = self._snapshot_at(*found)
        self.repo.branch(self.branch_of(new_run_id), found[0])
        old = await self.get_run(run_id=run_id)
        record = RunRecord(
            run_id=new_run_id,
            conversation_id=conversation_id,
            parent_run_id=run_id,
            agent_name=old.agent_name if old is not None else latest.agent_name,
        )
        await self.register_run(record)
        return replace(
            latest,
            run_id=new_run_id,
            conversation_id=conversation_id,
            parent_run_id=run_id,
            idempotency_key=None,
        )


_SNAPSHOT_FIELDS = TypeAdapter(ContinuableSnapshot)


def _snapshot_fields(snapshot: ContinuableSnapshot) -> dict[str, Any]:
    """A snapshot's fields but its messages, in JSON form (they go in commit metadata)."""
    data: dict[str, Any] = _SNAPSHOT_FIELDS.dump_python(replace(snapshot, messages=[]), mode="json")
    del data["messages"]
    return data


__all__ = ["KIND", "StateVCSStepStore", "StepStoreError"]
