"""Messages and extras values: what commits reads back equal, and refusals that name the path."""

from __future__ import annotations

import enum
import math
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import run_threads

from statevcs import Repo, Snapshot, tracked_messages
from statevcs.documents import MAX_DOCUMENT_DEPTH, pack, refusal
from statevcs.errors import SerializationError


class Mode(str, enum.Enum):  # noqa: UP042 - the mixin whose str() is not its text
    """A str mixin Enum: str() gives 'Mode.FAST', the stored text must be 'fast'."""

    FAST = "fast"


class Level(enum.IntEnum):
    HIGH = 3


class Ratio(float):
    pass


class Blob(bytes):
    pass


def _unchanged(repo: Repo) -> Any:
    store = repo.store
    return store.list_refs(""), {i for i, _ in store.iter_objects()}


def test_a_tuple_dict_key_in_a_message_is_refused_at_commit_not_at_read() -> None:
    # Issue 17: this committed, and then every show() raised CorruptObject (unhashable list).
    repo = Repo.init("memory://")
    before = _unchanged(repo)
    with pytest.raises(SerializationError) as raised:
        repo.commit({"messages": [{"role": "user", "content": "hi", "meta": {(1, 2): "x"}}]})
    assert raised.value.path == "messages[0]['meta']"
    assert "uses the key (1, 2) (a tuple)" in str(raised.value)
    assert "convert the key to a string" in str(raised.value)
    assert _unchanged(repo) == before


@pytest.mark.parametrize(
    ("value", "path", "fragment"),
    [
        ((1, 2), "extras['v']", "is a tuple, which would read back as a list"),
        ([1, {"a": (3,)}], "extras['v'][1]['a']", "is a tuple"),
        ({"k": {((1,), 2): 1}}, "extras['v']['k']", "uses the key ((1,), 2) (a tuple)"),
        ({"n": 2**64}, "extras['v']['n']", "integer of 65 bits"),
        ([-(2**63) - 1], "extras['v'][0]", "integer of 64 bits"),
        ({"n": 10**5000}, "extras['v']['n']", "integer of 16610 bits"),
        ({10**5000: 1}, "extras['v']", "has a key that is an integer of 16610 bits"),
        ({"s": "a\ud800"}, "extras['v']['s']", "lone surrogate"),
        ({"\udfff": 1}, "extras['v']", "has a key that is a string containing a lone surrogate"),
        ({"s": {1, 2}}, "extras['v']['s']", "is a set, which messages and extras cannot store"),
        ({frozenset(): 1}, "extras['v']", "uses the key frozenset() (a frozenset)"),
        ([datetime(2024, 1, 1, tzinfo=UTC)], "extras['v'][0]", "with .isoformat()"),
        ([object()], "extras['v'][0]", "is an object"),
    ],
)
def test_refusals_name_the_value_and_say_what_to_do(value: Any, path: str, fragment: str) -> None:
    repo = Repo.init("memory://")
    before = _unchanged(repo)
    with pytest.raises(SerializationError) as raised:
        repo.commit(
            Snapshot.model_construct(kind="snapshot", messages=[], state={}, extras={"v": value})
        )
    assert raised.value.path == path
    assert str(raised.value).startswith(path + " ")
    assert fragment in str(raised.value)
    assert _unchanged(repo) == before


def test_a_message_too_deep_to_read_is_refused_at_commit() -> None:
    value: Any = "leaf"
    for _ in range(MAX_DOCUMENT_DEPTH):
        value = [value]
    repo = Repo.init("memory://")
    with pytest.raises(SerializationError, match="nests deeper than 512 levels") as raised:
        repo.commit({"messages": [{"deep": value}]})
    assert raised.value.path == "messages[0]"
    assert refusal({"a": [value]}, "x", ValueError("deep")).path == "x"


def test_subclasses_bytearray_and_memoryview_read_back_as_their_base_type() -> None:
    message = {
        "role": Mode.FAST,
        "level": Level.HIGH,
        "ratio": Ratio(0.5),
        "raw": Blob(b"b"),
        "buffer": bytearray(b"ba"),
        "view": memoryview(b"mv"),
        "ordered": OrderedDict(b=1, a=2),
        Mode.FAST: "key",
    }
    repo = Repo.init("memory://")
    commit = repo.commit({"messages": [message]})
    back = Repo(repo.store).show(commit.id).messages[0]
    assert back == message
    assert back["role"] == "fast" and type(back["role"]) is str
    assert type(back["level"]) is int and type(back["ratio"]) is float
    assert type(back["raw"]) is bytes and back["buffer"] == b"ba" and back["view"] == b"mv"
    assert type(back["ordered"]) is dict and list(back["ordered"]) == ["b", "a"]
    assert [type(k) for k in back] == [str] * len(back)


def test_nan_infinities_and_negative_zero_read_back() -> None:
    repo = Repo.init("memory://")
    values = [math.nan, math.inf, -math.inf, -0.0]
    commit = repo.commit({"messages": [{"x": values, math.nan: 1, -0.0: 2}]})
    back = Repo(repo.store).show(commit.id).messages[0]
    assert math.isnan(back["x"][0]) and back["x"][1:3] == [math.inf, -math.inf]
    assert math.copysign(1, back["x"][3]) == -1
    assert [k for k in back if isinstance(k, float) and math.isnan(k)] and back[-0.0] == 2


def test_tracked_messages_still_commit_incrementally() -> None:
    repo = Repo.init("memory://")
    state: dict[str, Any] = {
        "messages": tracked_messages([{"role": "user", "content": [{"t": 1}]}])
    }
    repo.commit(state)
    state["messages"][0]["content"].append({"t": 2})
    state["messages"].append({"role": "assistant", "content": "ok"})
    commit = repo.commit(state)
    assert Repo(repo.store).show(commit.id).messages == [
        {"role": "user", "content": [{"t": 1}, {"t": 2}]},
        {"role": "assistant", "content": "ok"},
    ]


_native = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=5)
    | st.binary(max_size=5)
    | st.sampled_from([Mode.FAST, Level.HIGH, Ratio(2.5), Blob(b"x"), bytearray(b"y")]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3) | st.integers(-5, 5) | st.none(), inner, max_size=3)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(OrderedDict)
    ),
    max_leaves=10,
)


@settings(max_examples=300)
@given(_native)
def test_accepted_values_encode_to_the_same_bytes_as_before(value: Any) -> None:
    # Content ids of everything stored before refusals were added stay the same.
    assert pack(["doc", value]) == msgpack.packb(["doc", value], use_bin_type=True)


def test_the_explanation_skips_what_msgpack_stores_natively() -> None:
    value = {"ext": msgpack.ExtType(1, b"x"), "time": msgpack.Timestamp(1), "bad": (1,)}
    with pytest.raises(TypeError):
        pack(value)
    assert refusal(value, "v", TypeError()).path == "v['bad']"


# --- threads --------------------------------------------------------------------------------


def test_threads_committing_at_once_each_read_back_their_own_messages() -> None:
    # The packer's callback for a subclass (a tracked message, an OrderedDict) is Python code,
    # where another thread may run: one shared msgpack.Packer interleaved two threads' output,
    # storing one thread's message inside another repository's commit (or unreadable bytes).
    failures: list[object] = []
    start = threading.Barrier(4)

    def work(n: int) -> None:
        repo = Repo.init("memory://")
        start.wait()
        for i in range(500):
            message = OrderedDict(role="user", content=f"thread {n} #{i}", meta=OrderedDict(i=i))
            try:
                commit = repo.commit({"messages": [message]})
                back = repo.show(commit.id).messages
                assert pack(["doc", message]) == pack(["doc", dict(message)])
            except Exception as exc:
                failures.append((n, i, exc))
                continue
            if back != [message]:
                failures.append((n, i, back))

    run_threads(work, [(n,) for n in range(4)], switch_often=True)
    assert failures == []


# --- keys that are one key once stored ------------------------------------------------------


class _OwnText(str):
    """A str whose equality is its identity: Python keeps it apart from the plain text."""

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


class _OwnNumber(int):
    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


@pytest.mark.parametrize(
    "meta",
    [
        {_OwnText("a"): 1, "a": 2},
        {_OwnText("a"): 1, _OwnText("a"): 2},
        {_OwnNumber(3): 1, 3.0: 2},
        {"x": [{_OwnNumber(1): "one", True: "true"}]},
    ],
    ids=["subclass-and-text", "two-subclasses", "int-subclass-and-float", "nested-and-bool"],
)
def test_keys_that_are_one_key_once_stored_are_refused(meta: dict[Any, Any]) -> None:
    # msgpack read back one of the two keys: the other's value was silently lost.
    repo = Repo.init("memory://")
    before = _unchanged(repo)
    message = {"role": "user", "content": "hi", "meta": meta}
    with pytest.raises(SerializationError, match="one key once stored") as caught:
        repo.commit({"messages": [message]})
    assert caught.value.path.startswith("messages[0]['meta']")
    assert _unchanged(repo) == before


def test_subclass_keys_that_stay_distinct_are_kept() -> None:
    repo = Repo.init("memory://")
    meta = {_OwnText("a"): 1, "b": 2, Mode.FAST: 3, Level.HIGH: 4}
    commit = repo.commit({"messages": [{"role": "user", "content": "hi", "meta": meta}]})
    assert repo.show(commit.id).messages[0]["meta"] == {"a": 1, "b": 2, "fast": 3, 3: 4}
