"""Change tracking: the incremental path gives exactly the snapshot a fresh write gives."""

from __future__ import annotations

import copy
import gc
import pickle
import sys
import weakref
from collections.abc import Callable
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import plain

import statevcs
from statevcs import Repo, Snapshot, tracked_messages
from statevcs.adapters import DictAdapter, SnapshotAdapter
from statevcs.objectdb import ObjectDB
from statevcs.serializers import JSONSerializer
from statevcs.snapshot import write_snapshot
from statevcs.stores.memory import MemoryStore
from statevcs.tracking import (
    TrackedDecoder,
    TrackedDict,
    TrackedList,
    TrackedMessages,
    new_tracked,
)


def message(i: int) -> dict[str, Any]:
    return {"role": "user" if i % 2 else "assistant", "content": [{"text": f"m{i}"}]}


def fresh_snapshot_id(messages: list[Any], state: dict[str, Any], kind: str = "dict") -> str:
    db = ObjectDB(MemoryStore())
    snapshot = Snapshot.model_construct(kind=kind, messages=plain(messages), state=state, extras={})
    return write_snapshot(db, snapshot, JSONSerializer()).snapshot_id.hex()


Edit = Callable[[list[Any], int], None]


def _nested_text(messages: list[Any], n: int) -> None:
    content = messages[n % len(messages)].setdefault("content", [])
    if content:
        content[0]["text"] = f"edited {n}"
    else:
        content.append({"text": f"edited {n}"})


def _nested_append(messages: list[Any], n: int) -> None:
    messages[n % len(messages)].setdefault("content", []).append({"text": f"more {n}"})


def _nested_pop(messages: list[Any], n: int) -> None:
    messages[n % len(messages)].pop("role", None)


def _nested_update(messages: list[Any], n: int) -> None:
    messages[n % len(messages)].update(extra=n)


def _nested_clear(messages: list[Any], n: int) -> None:
    messages[n % len(messages)].setdefault("content", []).clear()


def _slice_assign(messages: list[Any], n: int) -> None:
    start = n % len(messages)
    messages[start : start + 2] = [message(900 + n)]


def _extended_slice(messages: list[Any], n: int) -> None:
    messages[::-2] = [message(700 + n + i) for i in range(len(messages[::-2]))]


EDITS: dict[str, Edit] = {
    "append": lambda m, n: m.append(message(n)),
    "extend": lambda m, n: m.extend([message(n), message(n + 1)]),
    "iadd": lambda m, n: m.__iadd__([message(n)]),
    "insert": lambda m, n: m.insert(n % (len(m) + 1), message(500 + n)),
    "insert_negative": lambda m, n: m.insert(-1 - n % len(m), message(500 + n)),
    "pop_last": lambda m, n: m.pop(),
    "pop_index": lambda m, n: m.pop(n % len(m)),
    "pop_negative": lambda m, n: m.pop(-1 - n % len(m)),
    "del": lambda m, n: m.__delitem__(n % len(m)),
    "del_slice": lambda m, n: m.__delitem__(slice(n % len(m), None)),
    "replace": lambda m, n: m.__setitem__(n % len(m), message(300 + n)),
    "replace_negative": lambda m, n: m.__setitem__(-1, message(300 + n)),
    "remove": lambda m, n: m.remove(m[n % len(m)]),
    "slice_assign": _slice_assign,
    "extended_slice": _extended_slice,
    "reverse": lambda m, n: m.reverse(),
    "sort": lambda m, n: m.sort(key=lambda x: str(x.get("content"))),
    "clear": lambda m, n: m.clear(),
    "imul": lambda m, n: m.__imul__(2),
    "duplicate": lambda m, n: m.append(m[n % len(m)]),
    "nested_text": _nested_text,
    "nested_append": _nested_append,
    "nested_pop": _nested_pop,
    "nested_update": _nested_update,
    "nested_clear": _nested_clear,
}
NEEDS_MESSAGES = {
    name
    for name in EDITS
    if name not in ("append", "extend", "iadd", "clear", "imul", "insert", "reverse", "sort")
}

operation = st.one_of(
    st.tuples(st.sampled_from(sorted(EDITS)), st.integers(0, 50)),
    st.tuples(st.just("new_list"), st.integers(0, 50)),
    st.tuples(st.just("checkout"), st.integers(1, 3)),
    st.tuples(st.just("other_dict"), st.integers(0, 50)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(operation, min_size=1, max_size=14))
def test_incremental_dict_commits_equal_a_fresh_write(ops: list[tuple[str, int]]) -> None:
    repo = Repo.init("memory://")
    second = Repo.init("memory://")  # a second repository watching the same list
    state: dict[str, Any] = {"messages": tracked_messages(message(i) for i in range(5)), "n": 0}
    repo.commit(state)
    second.commit(state)
    commits = 1
    for step, (name, n) in enumerate(ops):
        messages = state["messages"]
        if name == "new_list":
            fresh = [*copy.deepcopy(list(messages)), message(n)]
            state["messages"] = tracked_messages(fresh) if n % 2 else fresh
        elif name == "checkout":
            if commits > n:
                repo.reset("main", f"main~{n}")
                repo.checkout(state, "main")
                commits -= n
        elif name == "other_dict":
            # Another dict committed through the same handle, to another branch.
            repo.commit({"messages": tracked_messages([message(1000 + n)])}, branch="other")
        elif name not in NEEDS_MESSAGES or messages:
            EDITS[name](messages, n)
        state["n"] = step
        for target in (repo, second):
            commit = target.commit(state, f"step {step}", branch="main")
            assert commit.snapshot_id == fresh_snapshot_id(state["messages"], {"n": step})
        commits += 1
        assert repo.show("main").messages == plain(state["messages"])
    assert repo.fsck().ok


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(EDITS)), st.integers(0, 50)), max_size=10))
def test_incremental_snapshot_commits_equal_a_fresh_write(ops: list[tuple[str, int]]) -> None:
    repo = Repo.init("memory://")
    snapshot = Snapshot(messages=[message(i) for i in range(4)])
    snapshot.messages = tracked_messages(snapshot.messages)
    repo.commit(snapshot)
    for step, (name, n) in enumerate(ops):
        if name not in NEEDS_MESSAGES or snapshot.messages:
            EDITS[name](snapshot.messages, n)
        commit = repo.commit(snapshot, f"step {step}")
        assert commit.snapshot_id == fresh_snapshot_id(snapshot.messages, {}, "snapshot")


class Spy:
    """Records what the built-in adapters vouch for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.prefixes: list[int | None] = []
        for cls in (DictAdapter, SnapshotAdapter):
            original = cls.unchanged_prefix

            def spy(self_: Any, obj: Any, original: Any = original) -> int | None:
                keep: int | None = original(self_, obj)
                self.prefixes.append(keep)
                return keep

            monkeypatch.setattr(cls, "unchanged_prefix", spy)


def test_an_appended_message_is_the_only_one_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = Spy(monkeypatch)
    repo = Repo.init("memory://")
    plain_state: dict[str, Any] = {"messages": [message(i) for i in range(50)]}
    repo.commit(plain_state, branch="plain")
    plain_state["messages"].append(message(50))
    repo.commit(plain_state)
    # A plain list is the caller's: never swapped, never vouched for.
    assert spy.prefixes[-1] is None and type(plain_state["messages"]) is list
    state: dict[str, Any] = {"messages": tracked_messages(message(i) for i in range(51))}
    repo.commit(state)
    state["messages"].append(message(51))
    repo.commit(state)
    assert spy.prefixes[-1] == 51
    state["messages"][3]["content"][0]["text"] = "edited"
    state["messages"].append(message(52))
    repo.commit(state)
    assert spy.prefixes[-1] == 3
    assert repo.show().messages == plain(state["messages"])


def test_a_checked_out_dict_is_incremental_at_its_next_commit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spy = Spy(monkeypatch)
    repo = Repo.init("memory://")
    repo.commit({"messages": [message(i) for i in range(20)]})
    state: dict[str, Any] = {"messages": tracked_messages()}
    repo.checkout(state, "main")  # the dict keeps the kind of list it had
    assert isinstance(state["messages"], TrackedMessages)
    state["messages"].append(message(20))
    repo.commit(state)
    assert spy.prefixes[-1] == 20


def test_another_dict_on_the_same_handle_is_not_vouched_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spy = Spy(monkeypatch)
    repo = Repo.init("memory://")
    first: dict[str, Any] = {"messages": tracked_messages(message(i) for i in range(6))}
    repo.commit(first)
    second: dict[str, Any] = {"messages": tracked_messages(message(100 + i) for i in range(3))}
    repo.commit(second, branch="other")
    # Each dict keeps its own sync: first is still vouched for against its own commit.
    first["messages"].append(message(6))
    commit = repo.commit(first)
    assert spy.prefixes[-1] == 6
    assert commit.snapshot_id == fresh_snapshot_id(first["messages"], {})


def test_an_edit_between_capture_and_sync_is_not_trusted() -> None:
    repo = Repo.init("memory://")
    state: dict[str, Any] = {"messages": [message(i) for i in range(4)]}
    repo.commit(state)
    adapter = DictAdapter()
    with statevcs.adapters.acting_for(repo):
        adapter.capture(state)
        state["messages"][0]["role"] = "changed after capture"
        adapter.mark_synced(state)
        adapter.capture(state)
        assert adapter.unchanged_prefix(state) is None


def test_tracked_containers_copy_and_pickle_as_plain_ones() -> None:
    tracked = new_tracked([message(1), {"nested": [[1, 2], {"a": bytearray(b"x")}]}])
    assert isinstance(tracked[0], TrackedDict)
    assert isinstance(tracked[0]["content"], TrackedList)
    assert tracked[1]["nested"][1]["a"] == b"x"  # a mutable buffer is frozen into bytes
    for twin in (copy.copy(tracked), copy.deepcopy(tracked), pickle.loads(pickle.dumps(tracked))):
        assert type(twin) is list
        assert twin == tracked
    assert type(copy.deepcopy(tracked)[0]) is dict


def test_deeply_nested_messages_are_tracked() -> None:
    deep: Any = "leaf"
    for _ in range(600):
        deep = {"x": [deep]}
    node = new_tracked([deep])[0]
    for _ in range(600):
        assert isinstance(node, TrackedDict) and isinstance(node["x"], TrackedList)
        node = node["x"][0]
    assert node == "leaf"


def test_transient_clear_releases_a_plain_dict() -> None:
    state: dict[str, Any] = {"db": object()}
    before = sys.getrefcount(state)
    statevcs.transient(state, "db")
    assert sys.getrefcount(state) == before + 1
    statevcs.transient_clear(state)
    assert sys.getrefcount(state) == before
    assert statevcs.transient_keys(state) == frozenset()


def test_transient_keys_do_not_keep_a_weakly_referenceable_object_alive() -> None:
    snapshot = Snapshot(state={"db": 1})
    statevcs.transient(snapshot, "db")
    ref = weakref.ref(snapshot)
    del snapshot
    gc.collect()
    assert ref() is None
    assert all(
        not (isinstance(holder, weakref.ref) and holder() is None)
        for holder, _keys in statevcs.adapters._transient.values()
    )


def test_a_new_list_per_commit_is_never_copied() -> None:
    repo = Repo.init("memory://")
    messages = [message(i) for i in range(5)]
    for step in range(3):
        state: dict[str, Any] = {"messages": list(messages)}
        repo.commit(state, f"step {step}")
        assert type(state["messages"]) is list
        messages.append(message(10 + step))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)


def containers(value: Any) -> list[Any]:
    """Every dict and list inside ``value``, itself included."""
    found: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            found.append(item)
            stack.extend(item)
    return found


@settings(max_examples=80, deadline=None)
@given(st.lists(json_values, max_size=6))
def test_the_decoder_builds_what_new_tracked_builds(messages: list[Any]) -> None:
    decoder = TrackedDecoder()
    decoded = decoder.collect([decoder.decode(msgpack.packb(m), i) for i, m in enumerate(messages)])
    expected = new_tracked(messages)
    assert decoded == expected == messages
    for index, (ours, theirs) in enumerate(zip(decoded, expected, strict=True)):
        assert [type(c) for c in containers(ours)] == [type(c) for c in containers(theirs)]
        for container in containers(ours):  # each reports to its own message's position
            assert container._guard.index == index
            assert container._guard.owner() is decoded
    assert new_tracked(decoded) is decoded  # taken as it is, once
    assert new_tracked(decoded) is not decoded


@pytest.mark.parametrize("storage_format", [1, 2])
def test_a_tracked_checkout_sees_nested_edits_of_every_kind_of_stored_message(
    monkeypatch: pytest.MonkeyPatch, storage_format: int
) -> None:
    spy = Spy(monkeypatch)
    repo = Repo.init("memory://", storage_format=storage_format)
    big = {"role": "tool", "content": [{"text": "x" * 300_000}]}  # stored out of line
    messages = [message(i) for i in range(40)] + [big] + [message(i) for i in range(40, 43)]
    repo.commit({"messages": messages})
    for position in (3, 40, 42):  # a packed message, a large one, one of the open tail
        state: dict[str, Any] = {"messages": tracked_messages()}
        repo.checkout(state, "main")
        assert state["messages"] == messages
        assert all(type(m) is TrackedDict for m in state["messages"])
        state["messages"][position]["content"][0]["text"] = "edited"
        repo.commit(state, branch=f"edit-{position}")
        assert spy.prefixes[-1] == position
        assert repo.show(f"edit-{position}").messages == plain(state["messages"])
