"""Whatever ``Repo.commit`` accepts, ``show`` and ``checkout`` give back equal, on every store.

Hostile values (dict keys of every type, tuples, sets, bytes and bytearrays, NaN, infinities and
-0.0, ints past 64 bits, lone surrogates and control characters, deep nesting, subclasses) go
into a message, an extras value, commit metadata, and state under each shipped serializer. A
refused value raises ``SerializationError`` naming where it is, and leaves the store as it was
(refs, reflog, objects); an accepted one reads back equal through a second handle, type for
type where the documentation promises it (docs/serializers.md, "Messages, extras and
metadata"). For messages, extras and metadata the test also knows which values must be
accepted, so a refusal of a storable value fails too.

Runs on memory, SQLite and S3 (SeaweedFS, a few examples). For a longer run multiply the
example counts: ``STATEVCS_RELIABILITY_ROUNDTRIP=20``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import uuid
from collections import OrderedDict
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from reliability.harness import count

from statevcs import Repo, Snapshot
from statevcs.commitfields import MAX_METADATA_DEPTH
from statevcs.documents import MAX_DOCUMENT_DEPTH
from statevcs.errors import SerializationError
from statevcs.serializers import JSONSerializer, MsgpackSerializer, PickleSerializer
from statevcs.stores.memory import MemoryStore
from statevcs.stores.sqlite import SQLiteStore

SCALE = count("ROUNDTRIP", 1)
EXAMPLES = {"memory": 150, "sqlite": 50, "s3": 6}
"""Examples per test and store; serializers each get a third of these."""

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1


# --- values (module level, so pickle finds the classes) -------------------------------------


class Color(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass(frozen=True)
class Point:
    x: Any
    y: Any


class Item(BaseModel):
    name: str
    count: int


class Text(str):
    """A str subclass whose __str__ lies: only its text may be stored."""

    def __str__(self) -> str:
        return "lie"


def _nested(depth: int, wrap: Any) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = wrap(value)
    return value


def _too_long_for_text() -> int:
    """An int Python refuses to write as text (over 4,300 digits), built outside any repr."""
    return 10**5000


_TRICKY_TEXT = ["", "\ud800", "a\udfffb", "\x00", "\x1b[31m", "\u202e", "é", "\U0001f600"]
_hashables = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([_INT_MIN, _INT_MIN - 1, _INT_MAX, _INT_MAX + 1]),
    st.builds(_too_long_for_text),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(exclude_categories=()), max_size=5),
    st.sampled_from(_TRICKY_TEXT),
    st.binary(max_size=6),
    st.sampled_from([Color.RED, Level.HIGH, Text("t"), Point(1, "p")]),
)
_keys = st.one_of(
    _hashables,
    st.tuples(_hashables, _hashables),
    st.frozensets(st.integers(0, 3), max_size=2),
)
_scalars = st.one_of(
    _hashables,
    st.binary(max_size=6).map(bytearray),
    st.sampled_from(
        [
            memoryview(b"mv"),
            Item(name="i", count=2),
            datetime(2024, 5, 1, tzinfo=UTC),
            Decimal("1.5"),
            uuid.UUID(int=7),
            object(),
        ]
    ),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(_keys, inner, max_size=3),
        st.dictionaries(st.text(max_size=3), inner, max_size=3).map(OrderedDict),
        st.tuples(inner, inner),
        st.sets(_hashables, max_size=3),
        st.frozensets(_hashables, max_size=2),
        st.builds(Point, inner, inner),
    ),
    max_leaves=10,
)
# Tiers, so that every location sees many accepted values too: plain JSON (accepted
# everywhere), msgpack-native values (messages and extras accept them), then anything.
_json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(_INT_MIN, _INT_MAX)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
_native_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(_INT_MIN, _INT_MAX),
    st.floats(),
    st.text(max_size=5),
    st.binary(max_size=5),
)
_native = st.recursive(
    _native_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_native_scalars, inner, max_size=3),
    max_leaves=8,
)
hostile = st.one_of(
    _json_like,
    _native,
    _values,
    st.sampled_from(
        [
            _nested(300, lambda v: [v]),
            _nested(600, lambda v: [v]),
            _nested(70, lambda v: {"k": v}),
            _nested(70, lambda v: (v,)),
            {"big": "x" * 70_000},  # stored as a chunked object
        ]
    ),
)


# --- what must come back --------------------------------------------------------------------


def shape(value: Any, *, ordered: bool = True) -> Any:
    """A comparable picture of ``value`` with every type exact (NaN equals NaN)."""
    kind = type(value)
    name = f"{kind.__module__}.{kind.__qualname__}"
    if kind is float:
        return (name, "nan" if math.isnan(value) else value.hex())
    if kind is int:
        return (name, hex(value))  # repr() refuses ints over 4,300 digits
    if kind is dict or kind is OrderedDict:
        pairs = [(shape(k, ordered=ordered), shape(v, ordered=ordered)) for k, v in value.items()]
        return (name, pairs if ordered else sorted(pairs, key=repr))
    if kind in (list, tuple):
        return (name, [shape(v, ordered=ordered) for v in value])
    if kind in (set, frozenset):
        return (name, sorted((shape(v) for v in value), key=repr))
    if dataclasses.is_dataclass(value):
        return (name, shape(value.x), shape(value.y))
    if isinstance(value, BaseModel):
        return (name, value.model_dump())
    if kind is object:
        return (name,)  # equal only to itself: pickle gives back another one
    return (name, repr(value))


def _plain_scalar_ok(value: Any, *, finite: bool, allow_bytes: bool) -> bool:
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return _INT_MIN <= int(value) <= _INT_MAX
    if isinstance(value, float):
        return math.isfinite(value) or not finite
    if isinstance(value, str):
        try:
            str.encode(value, "utf-8")
        except UnicodeEncodeError:
            return False
        return True
    return allow_bytes and isinstance(value, (bytes, bytearray, memoryview))


def doc_ok(value: Any, depth: int) -> bool:
    """Whether a message or extras value must be accepted (docs/serializers.md)."""
    if isinstance(value, (dict, list)):
        if depth >= MAX_DOCUMENT_DEPTH:
            return False
        if isinstance(value, list):
            return all(doc_ok(v, depth + 1) for v in value)
        return all(
            not isinstance(k, tuple) and _plain_scalar_ok(k, finite=False, allow_bytes=True)
            for k in value
        ) and all(doc_ok(v, depth + 1) for v in value.values())
    return not isinstance(value, tuple) and _plain_scalar_ok(value, finite=False, allow_bytes=True)


def doc_read_back(value: Any) -> Any:
    """What a message or extras value reads back as: subclasses as their base type."""
    if isinstance(value, dict):
        return {doc_read_back(k): doc_read_back(v) for k, v in value.items()}
    if isinstance(value, list):
        return [doc_read_back(v) for v in value]
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    for base in (bool, str, int, float, bytes):
        if isinstance(value, base):
            return base.__str__(value) if base is str else base(value)
    return value


def metadata_ok(value: Any, depth: int) -> bool:
    """Whether a metadata value must be accepted (docs/concepts.md)."""
    if depth > MAX_METADATA_DEPTH:
        return False
    if isinstance(value, dict):
        return all(
            isinstance(k, str) and _plain_scalar_ok(k, finite=True, allow_bytes=False)
            for k in value
        ) and all(metadata_ok(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return all(metadata_ok(v, depth + 1) for v in value)
    if isinstance(value, (str, int, float)) or value is None:
        return _plain_scalar_ok(value, finite=True, allow_bytes=False)
    return False


# --- the repository under test --------------------------------------------------------------


def _kind(repo: Repo) -> str:
    if isinstance(repo.store, MemoryStore):
        return "memory"
    return "sqlite" if isinstance(repo.store, SQLiteStore) else "s3"


def _store_state(repo: Repo) -> Any:
    store = repo.store
    return (
        store.list_refs(""),
        {name: len(store.reflog(name)) for name in store.reflog_names()},
        {object_id for object_id, _size in store.iter_objects()},
    )


def _check(
    writer: Repo, reader: Repo, obj: Any, where: str, metadata: Any = None
) -> tuple[str, Snapshot, Any] | None:
    """Commit ``obj``; on refusal check the error and the store and return None.

    Otherwise return the commit id, what ``show`` gives and a checked-out copy of ``obj``.
    """
    before = _store_state(writer)
    try:
        commit = writer.commit(obj, metadata=metadata)
    except SerializationError as error:
        event(f"{where}: refused")
        assert error.path is not None and error.path.startswith(where), (error.path, error)
        assert _store_state(writer) == before, "a refused commit changed the store"
        return None
    event(f"{where}: accepted")
    target: Any = Snapshot() if isinstance(obj, Snapshot) else {}
    checked_out = reader.checkout(target, commit.id)
    assert checked_out.metadata == reader.get_commit(commit.id).metadata
    return commit.id, reader.show(commit.id), target


def _settings(repo: Repo, share: int = 1) -> settings:
    return settings(
        max_examples=max(1, EXAMPLES[_kind(repo)] * SCALE // share),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )


def test_messages_extras_and_metadata_read_back_equal_or_are_refused(repo: Repo) -> None:
    writer, reader = Repo(repo.store), Repo(repo.store)

    @_settings(repo)
    @given(value=hostile, where=st.sampled_from(["messages", "extras", "metadata"]))
    def run(value: Any, where: str) -> None:
        if where == "messages":
            message = {"role": "user", "content": "hi", "meta": value}
            done = _check(writer, reader, {"messages": [message]}, "messages[0]")
            assert (done is not None) == doc_ok(value, 1)
            if done is not None:
                expected = shape(doc_read_back(message))
                assert shape(done[1].messages[0]) == expected
                assert shape(done[2]["messages"][0]) == expected
        elif where == "extras":
            snapshot = Snapshot.model_construct(
                kind="snapshot", messages=[], state={}, extras={"v": value}
            )
            done = _check(writer, reader, snapshot, "extras['v']")
            assert (done is not None) == doc_ok(value, 0)
            if done is not None:
                expected = shape(doc_read_back(value))
                assert shape(done[1].extras["v"]) == expected
                assert shape(done[2].extras["v"]) == expected
        else:
            done = _check(writer, reader, {"n": 1}, "metadata", metadata={"v": value})
            assert (done is not None) == metadata_ok(value, 1)
            if done is not None:
                stored = reader.get_commit(done[0]).metadata
                expected = shape(doc_read_back({"v": value}), ordered=False)
                assert shape(stored, ordered=False) == expected

    run()


SERIALIZERS = {
    "json": JSONSerializer,
    "msgpack": lambda: MsgpackSerializer(types=[Color, Level, Point, Item]),
    "pickle": lambda: PickleSerializer(key="roundtrip-test-key"),
}


@pytest.mark.parametrize("codec", sorted(SERIALIZERS))
def test_state_values_read_back_exactly_or_are_refused(repo: Repo, codec: str) -> None:
    make = SERIALIZERS[codec]
    writer, reader = Repo(repo.store, serializer=make()), Repo(repo.store, serializer=make())

    @_settings(repo, share=3)
    @given(value=hostile)
    def run(value: Any) -> None:
        done = _check(writer, reader, {"v": value}, "state['v']")
        if done is not None:
            assert shape(done[1].state["v"]) == shape(value)
            assert shape(done[2]["v"]) == shape(value)

    run()
