"""Key order: a dict's keys and a snapshot's state and extras come back in committed order.

Maps are stored sorted (the same content has one id); a format-2 snapshot whose keys were
not in sorted order records that order (snapshot version 3). Sorted ones keep version 2 and
their ids, and format-1 repositories keep reading keys back sorted.
"""

from __future__ import annotations

import json
import multiprocessing.connection
import subprocess
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statevcs
from statevcs.errors import CorruptObject
from statevcs.hashing import from_hex, hash_bytes
from statevcs.objects import (
    ORDERED_SNAPSHOT_FORMAT,
    PACKED_SNAPSHOT_FORMAT,
    SNAPSHOT_FORMAT,
    SnapshotObject,
    decode,
    encode,
)
from statevcs.snapshot import key_order
from tests.support import in_child

# Keys a dict may hold (lone surrogates are refused at capture, tested elsewhere).
keys = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8).filter(
    lambda k: k != "messages"
)


def snapshot_object(repo: statevcs.Repo, revision: str = "main") -> SnapshotObject:
    return repo.objects.load_snapshot(
        repo.objects.load_commit(from_hex(repo.resolve(revision))).snapshot
    )


# --- dicts --------------------------------------------------------------------------------


def test_a_dict_comes_back_in_the_order_it_was_committed(repo: statevcs.Repo) -> None:
    agent: dict[str, Any] = {
        "zeta": 1,
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "alpha": {"y": 1, "x": 2},
        "Mid": [3],
    }
    repo.commit(agent, message="unsorted")
    assert snapshot_object(repo).version == ORDERED_SNAPSHOT_FORMAT
    out: dict[str, Any] = {}
    repo.checkout(out, "main")
    assert list(out) == ["zeta", "messages", "alpha", "Mid"]
    assert list(out["alpha"]) == ["y", "x"]
    assert out == agent


@pytest.mark.parametrize("position", [0, 1, 3])
@pytest.mark.parametrize("messages", ["list", "none", "absent"])
def test_the_messages_key_keeps_its_place(tmp_path: Path, position: int, messages: str) -> None:
    repo = statevcs.Repo.init(tmp_path / "r")
    items: list[tuple[str, Any]] = [("c", 1), ("a", 2), ("b", 3)]
    if messages != "absent":
        items.insert(position, ("messages", [{"role": "user"}] if messages == "list" else None))
    agent = dict(items)
    repo.commit(agent, message="m")
    with statevcs.Repo.open(tmp_path / "r") as fresh:
        out: dict[str, Any] = {"old": True}
        fresh.checkout(out, "main")
    assert list(out.items()) == list(agent.items())


def test_transient_keys_follow_the_committed_ones(repo: statevcs.Repo) -> None:
    agent: dict[str, Any] = {"live": object(), "b": 1, "messages": [], "a": 2}
    statevcs.transient(agent, "live")
    repo.commit(agent, message="m")
    agent["b"] = 5
    repo.checkout(agent, "main")
    assert list(agent) == ["b", "messages", "a", "live"]
    assert agent["b"] == 1


def test_a_reorder_alone_is_a_new_snapshot(repo: statevcs.Repo) -> None:
    agent: dict[str, Any] = {"a": 1, "b": 2, "messages": []}
    first = repo.commit(agent, message="sorted state")
    assert snapshot_object(repo).version == PACKED_SNAPSHOT_FORMAT
    reordered = {"b": 2, "a": 1, "messages": []}
    second = repo.commit(reordered, message="same values, another order")
    assert repo.get_commit(first.id).snapshot_id != repo.get_commit(second.id).snapshot_id
    out: dict[str, Any] = {}
    repo.checkout(out, first.id)
    assert list(out) == ["a", "b", "messages"]
    repo.checkout(out, second.id)
    assert list(out) == ["b", "a", "messages"]


@settings(max_examples=40, deadline=None)
@given(
    names=st.lists(keys, unique=True, max_size=7),
    position=st.integers(min_value=0, max_value=7),
    with_messages=st.booleans(),
)
def test_any_key_order_round_trips(names: list[str], position: int, with_messages: bool) -> None:
    repo = statevcs.Repo.init("memory://")
    items: list[tuple[str, Any]] = [(name, {"v": index}) for index, name in enumerate(names)]
    if with_messages:
        items.insert(min(position, len(items)), ("messages", [{"role": "user", "n": 1}]))
    agent = dict(items)
    repo.commit(agent, message="m")
    out: dict[str, Any] = {}
    repo.checkout(out, "main")
    assert list(out.items()) == list(agent.items())
    state = [k for k in agent if k != "messages"]
    # Where "messages" stood is a value of the dict adapter's extras, not a key order.
    expected = PACKED_SNAPSHOT_FORMAT if state == sorted(state) else ORDERED_SNAPSHOT_FORMAT
    assert snapshot_object(repo).version == expected


# --- snapshots ----------------------------------------------------------------------------


def test_state_and_extras_orders_round_trip(repo: statevcs.Repo) -> None:
    snap = statevcs.Snapshot(
        kind="custom",
        messages=[],
        state={"b": 1, "a": {"z": 1, "y": 2}, "c": 3},
        extras={"q": "1", "p": "2"},
    )
    commit = repo.commit(snap, message="s")
    stored = snapshot_object(repo)
    assert (stored.state_order, stored.extras_order) == ((1, 0, 2), (1, 0))
    back = statevcs.Snapshot(kind="x", messages=[], state={}, extras={})
    repo.checkout(back, "main")
    assert list(back.state) == ["b", "a", "c"] and list(back.extras) == ["q", "p"]
    shown = repo.show(commit.id)
    assert list(shown.state) == ["b", "a", "c"] and list(shown.extras) == ["q", "p"]
    values = repo.objects.read_snapshot_values(from_hex(repo.get_commit(commit.id).snapshot_id))
    assert list(values.state) == ["b", "a", "c"]
    assert list(
        repo.objects.read_state_bytes(from_hex(repo.get_commit(commit.id).snapshot_id))
    ) == [
        "b",
        "a",
        "c",
    ]
    assert repo.fsck().ok


def test_sorted_keys_keep_the_format_2_snapshot_and_its_id(tmp_path: Path) -> None:
    repo = statevcs.Repo.init(tmp_path / "r")
    snap = statevcs.Snapshot(kind="k", messages=[], state={"a": 1, "b": 2}, extras={"p": 1})
    repo.commit(snap, message="s")
    stored = snapshot_object(repo)
    assert stored.version == PACKED_SNAPSHOT_FORMAT
    assert (stored.state_order, stored.extras_order) == ((), ())
    # Exactly the eight fields every earlier format-2 reader knows.
    assert len(msgpack.unpackb(encode(stored))) == 8


def test_format_1_repositories_read_state_keys_back_sorted(tmp_path: Path) -> None:
    repo = statevcs.Repo.init(tmp_path / "r", storage_format=1)
    repo.commit({"b": 1, "a": 2, "messages": []}, message="m")
    assert snapshot_object(repo).version == SNAPSHOT_FORMAT
    out: dict[str, Any] = {}
    repo.checkout(out, "main")
    # The state's keys sorted, as format 1 always did; "messages" keeps its place.
    assert list(out) == ["a", "b", "messages"]


def _read_order_in_child(path: str, answers: multiprocessing.connection.Connection) -> None:
    with statevcs.Repo.open(path) as repo:
        out: dict[str, Any] = {}
        repo.checkout(out, "main")
        answers.send(list(out))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_another_process_reads_the_committed_order(tmp_path: Path, method: str) -> None:
    repo = statevcs.Repo.init(tmp_path / "r")
    repo.commit({"z": 1, "messages": [], "y": 2, "x": 3}, message="m")
    repo.close()
    assert in_child(method, _read_order_in_child, str(tmp_path / "r")) == [
        "z",
        "messages",
        "y",
        "x",
    ]


# --- the stored form, attacked ------------------------------------------------------------


def test_key_order_is_positions_among_the_sorted_keys() -> None:
    assert key_order(["a", "b"]) == ()
    assert key_order([]) == ()
    assert key_order(["b", "a", "c"]) == (1, 0, 2)
    assert key_order(["é", "Z", "a"]) == (2, 0, 1)


def _raw_snapshot(version: Any, orders: Any, extra_field: bool = True) -> bytes:
    empty_map: list[Any] = [[], []]
    fields = ["snapshot", version, "dict", hash_bytes(b"root"), [], empty_map, empty_map, "json"]
    if extra_field:
        fields.append(orders)
    return bytes(msgpack.packb(fields, use_bin_type=True))


@pytest.mark.parametrize(
    ("version", "orders", "extra_field", "reason"),
    [
        (3, [[], []], True, "records a key order"),
        (3, [[0, 1], []], True, "is the sorted one"),
        (3, [[1, 1], []], True, "each position once"),
        (3, [[2, 0], []], True, "each position once"),
        (3, [[-1, 0], []], True, "non-negative integers"),
        (3, [[1.0, 0], []], True, "non-negative integers"),
        (3, [[1, 0]], True, "[state, extras] pair"),
        (3, {"state": [1, 0]}, True, "[state, extras] pair"),
        (3, None, False, "has 8 fields, found 7"),
        (2, [[1, 0], []], True, "has 7 fields, found 8"),
        (4, [[1, 0], []], True, "unsupported snapshot format 4"),
        (True, None, False, "unsupported snapshot format True"),
    ],
)
def test_a_hostile_key_order_is_a_corrupt_object(
    version: Any, orders: Any, extra_field: bool, reason: str
) -> None:
    data = _raw_snapshot(version, orders, extra_field)
    with pytest.raises(CorruptObject, match=reason.replace("[", r"\[").replace("]", r"\]")):
        decode(hash_bytes(data), data)


@settings(max_examples=200, deadline=None)
@given(
    orders=st.lists(
        st.lists(st.integers(-2, 6) | st.none() | st.text(max_size=2), max_size=5)
        | st.none()
        | st.integers(-(2**63), 2**64 - 1),
        max_size=3,
    )
)
def test_any_recorded_order_decodes_to_a_permutation_or_is_refused(orders: Any) -> None:
    data = _raw_snapshot(ORDERED_SNAPSHOT_FORMAT, orders)
    try:
        obj = decode(hash_bytes(data), data)
    except CorruptObject:
        return
    assert isinstance(obj, SnapshotObject)
    for order in (obj.state_order, obj.extras_order):
        if order:  # a permutation of its positions, never the sorted one
            assert sorted(order) == list(range(len(order))) != list(order)
    assert encode(obj) == data  # what decodes is canonical: one encoding per content


# --- the git mirror -------------------------------------------------------------------------


def test_the_git_mirror_keeps_the_order_and_the_ids(tmp_path: Path) -> None:
    from statevcs.mirror.git import export_git, import_git

    repo = statevcs.Repo.init(tmp_path / "r")
    repo.commit({"b": 1, "messages": [{"role": "user"}], "a": {"y": 1, "x": 2}}, message="one")
    repo.commit(
        statevcs.Snapshot(kind="k", messages=[], state={"d": 1, "c": 2}, extras={"f": 1, "e": 2}),
        message="two",
    )
    export_git(repo, tmp_path / "mirror")
    copy = statevcs.Repo.init(tmp_path / "copy")
    import_git(copy, tmp_path / "mirror")
    assert copy.refs.as_hex() == repo.refs.as_hex()
    for commit in repo.log():
        assert copy.show(commit.id) == repo.show(commit.id)
        assert list(copy.show(commit.id).state) == list(repo.show(commit.id).state)
    state = subprocess.run(
        ["git", "-C", str(tmp_path / "mirror"), "show", "main:state.json"],
        check=True,
        capture_output=True,
    ).stdout
    assert list(json.loads(state)) == ["d", "c"]
