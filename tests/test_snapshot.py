"""Snapshot encoding: the same content always gives the same snapshot, however it was reached."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statevcs
from statevcs import Repo
from statevcs.adapters import ADAPTERS, AdapterRegistry
from statevcs.objectdb import ObjectDB
from statevcs.serializers import JSONSerializer
from statevcs.snapshot import Snapshot, write_snapshot
from statevcs.stores.memory import MemoryStore


def message(i: int) -> dict[str, Any]:
    return {"role": "user" if i % 2 else "assistant", "content": [{"text": f"m{i}"}]}


class Log:
    """A conversation whose adapter vouches for the prefix up to the last sync point."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.unchanged = 0

    def set(self, messages: list[dict[str, Any]]) -> None:
        keep = 0
        while (
            keep < min(len(messages), len(self.messages)) and messages[keep] == self.messages[keep]
        ):
            keep += 1
        self.unchanged = min(self.unchanged, keep)
        self.messages = messages


class LogAdapter:
    kind = "test.log"

    def capture(self, obj: Log) -> Snapshot:
        return Snapshot.model_construct(kind=self.kind, messages=obj.messages, state={}, extras={})

    def restore(self, obj: Log, snapshot: Snapshot) -> None:
        obj.messages = snapshot.messages

    def unchanged_prefix(self, obj: Log) -> int:
        return obj.unchanged

    def mark_synced(self, obj: Log) -> None:
        obj.unchanged = len(obj.messages)


# A repository-local registry: the process-wide one stays as it was.
LOG_ADAPTERS = AdapterRegistry(parent=ADAPTERS)
LOG_ADAPTERS.register(Log, LogAdapter())

operation = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 40)),
    st.tuples(st.just("truncate"), st.integers(0, 300)),
    st.tuples(st.just("replace"), st.integers(0, 300)),
)


def fresh_snapshot_id(messages: list[dict[str, Any]], kind: str) -> bytes:
    db = ObjectDB(MemoryStore())
    snapshot = Snapshot.model_construct(kind=kind, messages=messages, state={}, extras={})
    return write_snapshot(db, snapshot, JSONSerializer()).snapshot_id


@settings(max_examples=40, deadline=None)
@given(st.lists(operation, min_size=1, max_size=12))
def test_snapshot_id_is_history_independent(operations: list[tuple[str, int]]) -> None:
    repo = Repo.init("memory://", adapters=LOG_ADAPTERS)
    plain: dict[str, Any] = {"messages": []}
    log = Log()
    counter = 0
    messages: list[dict[str, Any]] = []
    for op, value in operations:
        if op == "append":
            messages = messages + [message(counter + i) for i in range(value)]
            counter += value
        elif op == "truncate":
            messages = messages[: min(value, len(messages))]
        elif messages:
            index = value % len(messages)
            messages = [*messages[:index], message(10_000 + counter), *messages[index + 1 :]]
            counter += 1
        plain["messages"] = list(messages)
        log.set(list(messages))
        dict_commit = repo.commit(plain, branch="dict")
        log_commit = repo.commit(log, branch="log")
        assert dict_commit.snapshot_id == fresh_snapshot_id(messages, "dict").hex()
        assert log_commit.snapshot_id == fresh_snapshot_id(messages, "test.log").hex()
        assert repo.show("dict").messages == messages
    assert repo.fsck().ok


def test_restored_messages_are_private_copies() -> None:
    repo = Repo.init("memory://")
    snapshot = statevcs.Snapshot(messages=[message(1)], extras={"system_prompt": {"a": [1]}})
    repo.commit(snapshot)
    first, second = statevcs.Snapshot(), statevcs.Snapshot()
    repo.checkout(first, "main")
    repo.checkout(second, "main")
    first.messages[0]["role"] = "changed"
    first.extras["system_prompt"]["a"].append(2)
    assert second.messages[0]["role"] == "user"
    assert second.extras["system_prompt"] == {"a": [1]}


@pytest.mark.parametrize(
    ("fields", "path", "fragment"),
    [
        ({"kind": 5}, "kind", "the snapshot's kind is an int"),
        ({"kind": None}, "kind", "it must be a string"),
        ({"kind": "a\ud800"}, "kind", "lone surrogate"),
        ({"messages": "ab"}, "messages", "the snapshot's messages are a str"),
        ({"messages": ({"a": 1},)}, "messages", "the snapshot's messages are a tuple"),
        ({"messages": {0: {"a": 1}}}, "messages", "they must be a list"),
        ({"state": [1]}, "state", "the snapshot's state is a list; it must be a dict"),
        ({"extras": None}, "extras", "it must be a dict"),
        ({"state": {"\ud800": 1}}, "state['\\ud800']", "state key '\\ud800' contains a lone"),
        ({"extras": {5: 1}}, "extras[5]", "extras key 5 is an int"),
        ({"state": {10**5000: 1}}, "state[<int of 16610 bits>]", "state keys must be strings"),
    ],
)
def test_a_snapshot_built_without_validation_is_refused_if_it_would_read_back_otherwise(
    fields: dict[str, Any], path: str, fragment: str
) -> None:
    # Snapshot.model_construct skips pydantic: these committed and then read back changed
    # (a str of messages as a list of characters) or not at all (a kind that is not a string).
    repo = Repo.init("memory://")
    values = {"kind": "snapshot", "messages": [], "state": {}, "extras": {}, **fields}
    with pytest.raises(statevcs.SerializationError) as raised:
        repo.commit(Snapshot.model_construct(**values))
    assert raised.value.path == path
    assert fragment in str(raised.value)
    assert repo.store.list_refs("") == {}
