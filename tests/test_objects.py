"""Tests for statevcs.objects: canonical encoding, round trips, and corrupt-object detection."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statevcs.errors import CorruptObject, SerializationError
from statevcs.hashing import ID_SIZE, hash_bytes, to_hex
from statevcs.objects import (
    MAX_DEPTH,
    SNAPSHOT_FORMAT,
    Blob,
    Chunked,
    CommitObject,
    Doc,
    ListNode,
    MapNode,
    SnapshotObject,
    StoredObject,
    canonical,
    children,
    decode,
    encode,
    encode_doc,
    encode_with_id,
    kind_of,
)

ids = st.binary(min_size=ID_SIZE, max_size=ID_SIZE)
small_ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)
json_scalars = st.none() | st.booleans() | small_ints | st.text(max_size=20)
json_scalars |= st.floats(allow_nan=False)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def fake(n: int) -> bytes:
    return hash_bytes(b"id-%d" % n)


SNAPSHOT = SnapshotObject(
    kind="strands.agent",
    messages=fake(1),
    tail=(fake(4), fake(5)),
    state=fake(2),
    extras=fake(3),
    state_codec="json",
)
COMMIT = CommitObject(fake(1), (fake(2),), "a", 0, "m", {"k": 1})


def raw_of(obj: StoredObject, **changes: Any) -> list[Any]:
    """Return the msgpack array of a valid object with some positions replaced."""
    raw: list[Any] = msgpack.unpackb(encode(obj), raw=False)
    for position, value in changes.items():
        raw[int(position[1:])] = value
    return raw


def round_trip(obj: StoredObject) -> StoredObject:
    object_id, data = encode_with_id(obj)
    assert object_id == hash_bytes(data)
    return decode(object_id, data)


# --- round trips -------------------------------------------------------------------

EXAMPLES: list[StoredObject] = [
    Blob(b""),
    Blob(bytes(range(256)) * 4),
    Doc({"role": "user", "content": [{"text": "hi"}]}),
    Doc([1, "two", None, True, b"\x00bytes"]),
    Doc("just a string"),
    Chunked(0, ()),
    Chunked(123_456, (fake(1), fake(2), fake(3))),
    ListNode(0, ()),
    ListNode(0, (fake(1), fake(2))),
    ListNode(2, (fake(3), fake(4)), (40, 7)),
    MapNode((), ()),
    MapNode(("a", "b", "é"), (fake(1), fake(2), fake(3))),
    SNAPSHOT,
    SnapshotObject(
        kind="dict", messages=fake(1), tail=(), state=fake(2), extras=fake(3), state_codec="json"
    ),
    CommitObject(fake(1), (), "ada", 1_700_000_000_000_000, "initial", {}),
    CommitObject(fake(1), (fake(2), fake(3)), "bob", -5, "merge\n\nbody", {"k": [1, {"z": None}]}),
]


@pytest.mark.parametrize("obj", EXAMPLES, ids=lambda o: f"{kind_of(o)}")
def test_every_kind_round_trips(obj: StoredObject) -> None:
    assert round_trip(obj) == obj


def test_kind_names_and_children() -> None:
    kinds = {type(o).__name__: kind_of(o) for o in EXAMPLES}
    assert kinds == {
        "Blob": "blob",
        "Doc": "doc",
        "Chunked": "chunked",
        "ListNode": "list",
        "MapNode": "map",
        "SnapshotObject": "snapshot",
        "CommitObject": "commit",
    }
    assert children(Blob(b"x")) == ()
    assert children(Doc({"a": 1})) == ()
    assert tuple(children(Chunked(9, (fake(1), fake(2))))) == (fake(1), fake(2))
    assert tuple(children(ListNode(1, (fake(1),), (3,)))) == (fake(1),)
    assert tuple(children(MapNode(("a",), (fake(5),)))) == (fake(5),)
    assert tuple(children(SNAPSHOT)) == (fake(1), fake(4), fake(5), fake(2), fake(3))
    commit = CommitObject(fake(7), (fake(8), fake(9)), "a", 0, "m")
    assert tuple(children(commit)) == (fake(7), fake(8), fake(9))


@settings(max_examples=60, deadline=None)
@given(
    level=st.integers(min_value=0, max_value=6),
    entries=st.lists(st.tuples(ids, st.integers(min_value=1, max_value=2**40)), max_size=40),
)
def test_list_nodes_round_trip(level: int, entries: list[tuple[bytes, int]]) -> None:
    node_ids = tuple(e[0] for e in entries)
    counts = tuple(e[1] for e in entries) if level > 0 else ()
    node = ListNode(level, node_ids, counts)
    decoded = round_trip(node)
    assert decoded == node
    assert isinstance(decoded, ListNode)
    assert decoded.total == (len(node_ids) if level == 0 else sum(counts))


@settings(max_examples=60, deadline=None)
@given(
    snapshot=ids,
    parents=st.lists(ids, max_size=3),
    author=st.text(max_size=30),
    timestamp=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    message=st.text(max_size=200),
    metadata=st.dictionaries(st.text(max_size=10), json_values, max_size=5),
)
def test_commits_round_trip(
    snapshot: bytes,
    parents: list[bytes],
    author: str,
    timestamp: int,
    message: str,
    metadata: dict[str, Any],
) -> None:
    commit = CommitObject(snapshot, tuple(parents), author, timestamp, message, metadata)
    decoded = round_trip(commit)
    assert decoded == commit
    # Re-encoding the decoded commit is byte-identical: the encoding is canonical.
    assert encode(decoded) == encode(commit)


@settings(max_examples=40, deadline=None)
@given(value=json_values)
def test_docs_round_trip_and_keep_key_order(value: Any) -> None:
    data = encode_doc(value)
    assert data == encode(Doc(value))
    decoded = decode(hash_bytes(data), data)
    assert decoded == Doc(value)
    assert isinstance(decoded, Doc)
    if isinstance(value, dict):
        assert list(decoded.value) == list(value)


def test_metadata_key_order_does_not_change_the_commit_id() -> None:
    a = CommitObject(fake(1), (), "a", 0, "m", {"b": 1, "a": {"y": 2, "x": [{"q": 1, "p": 2}]}})
    b = CommitObject(fake(1), (), "a", 0, "m", {"a": {"x": [{"p": 2, "q": 1}], "y": 2}, "b": 1})
    assert encode_with_id(a)[0] == encode_with_id(b)[0]
    assert list(canonical({"b": 1, "a": {"d": 0, "c": 0}})) == ["a", "b"]
    assert list(canonical({"b": 1, "a": {"d": 0, "c": 0}})["a"]) == ["c", "d"]


def test_documents_are_not_canonicalised() -> None:
    # A message is restored exactly as committed, so its key order is part of its identity.
    assert encode(Doc({"b": 1, "a": 2})) != encode(Doc({"a": 2, "b": 1}))


def test_map_node_fields_and_ids_are_stable() -> None:
    node = MapNode(("a", "b"), (fake(1), fake(2)))
    assert encode_with_id(node) == encode_with_id(MapNode(("a", "b"), (fake(1), fake(2))))
    assert encode_with_id(node)[0] != encode_with_id(MapNode(("a", "b"), (fake(2), fake(1))))[0]


def test_encode_rejects_other_types() -> None:
    with pytest.raises(TypeError, match="not a statevcs object"):
        encode({"kind": "blob"})  # type: ignore[arg-type]


# --- corrupt objects ---------------------------------------------------------------


def corrupt_reason(raw: Any) -> str:
    """Decode a correctly hashed but malformed object; return the CorruptObject reason."""
    data = msgpack.packb(raw, use_bin_type=True)
    object_id = hash_bytes(data)
    with pytest.raises(CorruptObject) as info:
        decode(object_id, data)
    assert info.value.object_id == to_hex(object_id)
    assert to_hex(object_id) in str(info.value)
    assert "fsck" in str(info.value)
    return info.value.reason


def test_hash_mismatch_is_corrupt_and_names_the_id() -> None:
    object_id, data = encode_with_id(Blob(b"payload"))
    tampered = data[:-1] + b"X"
    with pytest.raises(CorruptObject, match=to_hex(object_id)) as info:
        decode(object_id, tampered)
    assert "hash" in info.value.reason
    # Without the hash check the tampered bytes decode (to different content).
    assert decode(object_id, tampered, check_hash=False) == Blob(b"payloaX")


@pytest.mark.parametrize("garbage", [b"", b"\xc1", b"\x92\xa3doc", b"\xff\xff\xff\x00"])
def test_garbage_bytes_are_corrupt(garbage: bytes) -> None:
    object_id = hash_bytes(garbage)
    with pytest.raises(CorruptObject) as info:
        decode(object_id, garbage)
    assert info.value.object_id == to_hex(object_id)


def test_trailing_bytes_are_corrupt() -> None:
    data = encode(Blob(b"x")) + b"\x00"
    with pytest.raises(CorruptObject):
        decode(hash_bytes(data), data)


@pytest.mark.parametrize(
    "raw",
    [
        ["tree", [], []],
        ["BLOB", b"x"],
        [42, b"x"],
        "blob",
        [],
        {"kind": "blob"},
    ],
)
def test_unknown_kinds_and_shapes_are_corrupt(raw: Any) -> None:
    reason = corrupt_reason(raw)
    assert "kind" in reason


@pytest.mark.parametrize(
    "raw",
    [
        ["blob"],
        ["blob", b"x", b"y"],
        ["doc"],
        ["doc", 1, 2],
        ["chunked", 3],
        ["list", 0, []],
        ["map", [], [], []],
        raw_of(SNAPSHOT)[:-1],
        [*raw_of(SNAPSHOT), "extra"],
        raw_of(COMMIT)[:-1],
        [*raw_of(COMMIT), "extra"],
    ],
)
def test_wrong_field_counts_are_corrupt(raw: list[Any]) -> None:
    reason = corrupt_reason(raw)
    assert "fields" in reason
    assert raw[0] in reason


@pytest.mark.parametrize(
    "raw",
    [
        ["list", 0, [b"\x01" * 31], []],
        ["list", 0, [fake(1), b"\x01" * 33], []],
        ["list", 1, ["not bytes"], [1]],
        ["map", ["a"], [b"short"]],
        ["chunked", 5, [fake(1)[:16]]],
        raw_of(SNAPSHOT, p3=fake(1)[:-1]),
        raw_of(SNAPSHOT, p4=[fake(4), b"short"]),
        raw_of(SNAPSHOT, p5=fake(2) + b"\x00"),
        raw_of(SNAPSHOT, p6="not an id"),
        raw_of(COMMIT, p1=b"\x00" * 31),
        raw_of(COMMIT, p2=[fake(2) + b"\x00"]),
    ],
)
def test_bad_id_lengths_are_corrupt(raw: list[Any]) -> None:
    assert "id" in corrupt_reason(raw)


@pytest.mark.parametrize(
    "keys",
    [["b", "a"], ["a", "a"], ["a", "c", "b"]],
)
def test_unsorted_or_duplicate_map_keys_are_corrupt(keys: list[str]) -> None:
    reason = corrupt_reason(["map", keys, [fake(i) for i in range(len(keys))]])
    assert "sorted" in reason


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (["map", ["a", "b"], [fake(1)]], "match"),
        (["map", [1], [fake(1)]], "strings"),
        (["list", -1, [], []], "level"),
        (["list", 0, [fake(1)], [1]], "counts"),
        (["list", 1, [fake(1), fake(2)], [3]], "counts"),
        (["list", 1, [fake(1)], [0]], "positive"),
        (["blob", "text, not bytes"], "bytes"),
        (["chunked", -1, []], "size"),
        (raw_of(SNAPSHOT, p1=SNAPSHOT_FORMAT + 98), "format"),
        (raw_of(SNAPSHOT, p2=5), "strings"),
        (raw_of(SNAPSHOT, p7=None), "strings"),
        (raw_of(COMMIT, p3=5), "strings"),
        (raw_of(COMMIT, p5=b"bytes"), "strings"),
        (raw_of(COMMIT, p4="noon"), "timestamp"),
        (raw_of(COMMIT, p6=[]), "map"),
    ],
)
def test_invalid_field_values_are_corrupt(raw: list[Any], fragment: str) -> None:
    assert fragment in corrupt_reason(raw)


# --- bounded encoding and decoding -------------------------------------------------------


def nested_lists(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def commit_with(metadata: dict[str, Any]) -> CommitObject:
    return CommitObject(fake(1), (), "a", 0, "m", metadata)


def test_metadata_nested_10000_deep_is_a_serialization_error() -> None:
    with pytest.raises(SerializationError, match="nested deeper than 512 levels"):
        encode(commit_with({"deep": nested_lists(10_000)}))


def test_metadata_containing_itself_is_a_serialization_error() -> None:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    with pytest.raises(SerializationError, match="contains itself"):
        encode(commit_with(looped))


def test_metadata_at_the_depth_limit_round_trips() -> None:
    commit = commit_with({"deep": nested_lists(MAX_DEPTH - 2)})
    assert round_trip(commit) == commit


@pytest.mark.parametrize("number", [2**64, -(2**63) - 1, 10**100])
def test_ints_outside_64_bits_are_a_serialization_error(number: int) -> None:
    for obj in (commit_with({"n": [number]}), Doc({"n": number})):
        with pytest.raises(SerializationError, match="cannot be stored"):
            encode(obj)


def test_lone_surrogates_and_unknown_types_are_a_serialization_error() -> None:
    for obj in (commit_with({"k": "\ud800"}), Doc({"v": {1, 2}}), Doc(object())):
        with pytest.raises(SerializationError, match="cannot be stored"):
            encode(obj)


def test_a_failed_encode_does_not_spoil_the_next_one() -> None:
    with pytest.raises(SerializationError):
        encode(Doc([1, 2, 2**64]))
    assert encode(Doc([1])) == msgpack.packb(["doc", [1]])


def recursive_canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: recursive_canonical(value[k])
            for k in sorted(value, key=lambda k: (type(k).__name__, str(k)))
        }
    if isinstance(value, (list, tuple)):
        return [recursive_canonical(v) for v in value]
    return value


@settings(max_examples=200)
@given(
    st.recursive(
        json_scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.lists(inner, max_size=3).map(tuple)
            | st.dictionaries(st.text(max_size=4) | st.integers(-3, 3), inner, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_canonical_sorts_every_mapping_and_keeps_everything_else(value: Any) -> None:
    got = canonical(value)
    assert got == recursive_canonical(value)
    assert repr(got) == repr(recursive_canonical(value))  # key order too


@pytest.mark.parametrize(
    "raw",
    [
        ["list", True, [fake(1)], [1]],
        ["list", 1, [fake(1)], [True]],
        ["chunked", False, []],
        raw_of(COMMIT, p4=True),
    ],
)
def test_booleans_are_not_integers_in_structural_fields(raw: list[Any]) -> None:
    corrupt_reason(raw)


def test_payloads_nested_past_msgpacks_stack_are_corrupt() -> None:
    data = b"\x92\xa3doc" + b"\x91" * 5000 + b"\xc0"
    assert "nested too deeply" in corrupt_reason_of_bytes(data)


def corrupt_reason_of_bytes(data: bytes) -> str:
    with pytest.raises(CorruptObject) as info:
        decode(hash_bytes(data), data)
    return info.value.reason


_kinds = st.sampled_from(["blob", "doc", "chunked", "list", "map", "snapshot", "commit", "x"])
_hostile_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=6)
    | st.binary(max_size=40)
    | ids,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.text(max_size=4) | st.integers(-3, 3), inner, max_size=3)
        | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=8))
    ),
    max_leaves=16,
)
_hostile_objects = (
    st.builds(
        lambda kind, fields: [kind, *fields], _kinds, st.lists(_hostile_values, max_size=8)
    ).map(lambda raw: bytes(msgpack.packb(raw, use_bin_type=True)))
    | _hostile_values.map(lambda raw: bytes(msgpack.packb(raw, use_bin_type=True)))
    | st.binary(max_size=80)
    | st.builds(lambda depth: b"\x92\xa3doc" + b"\x91" * depth + b"\xc0", st.integers(0, 3000))
)


@settings(max_examples=500)
@given(_hostile_objects)
def test_hostile_bytes_decode_to_an_object_or_raise_corrupt_object(data: bytes) -> None:
    object_id = hash_bytes(data)
    try:
        obj = decode(object_id, data)
    except CorruptObject as exc:
        assert exc.object_id == to_hex(object_id)
        return
    assert kind_of(obj) in {"blob", "doc", "chunked", "list", "map", "snapshot", "commit"}
    children(obj)
    with pytest.raises(CorruptObject):
        decode(hash_bytes(b"other" + data), data)
