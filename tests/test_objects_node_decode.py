"""List nodes decode the same through the fast path (canonical bytes) as through the general
checks: hostile and non-canonical encodings of leaves and inner nodes, built byte by byte."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statevcs.errors import CorruptObject
from statevcs.hashing import ID_SIZE, hash_bytes
from statevcs.objects import ListNode, decode, decode_plain, encode, encode_with_id


def _array(count: int, form: str) -> bytes:
    """A msgpack array header for ``count`` items: ``fix`` (if it fits), ``16`` or ``32``."""
    if form == "fix" and count < 16:
        return bytes([0x90 | count])
    if form in ("fix", "16"):
        return b"\xdc" + count.to_bytes(2, "big")
    return b"\xdd" + count.to_bytes(4, "big")


def _bin(data: bytes, form: str) -> bytes:
    """``data`` as msgpack bin 8, 16 or 32 (all decode to the same ``bytes``)."""
    if form == "8" and len(data) < 256:
        return b"\xc4" + bytes([len(data)]) + data
    if form in ("8", "16"):
        return b"\xc5" + len(data).to_bytes(2, "big") + data
    return b"\xc6" + len(data).to_bytes(4, "big") + data


# An entry of a node's id list, as (its msgpack bytes, the value it decodes to).
_ids = st.binary(min_size=ID_SIZE, max_size=ID_SIZE)
_entries = st.one_of(
    st.tuples(_ids, st.sampled_from(["8", "8", "8", "16", "32"])).map(
        lambda pair: (_bin(pair[0], pair[1]), pair[0])
    ),
    st.binary(max_size=40).map(lambda data: (_bin(data, "8"), data)),
    st.sampled_from([None, 7, "text", True, [], {}]).map(lambda v: (msgpack.packb(v), v)),
)
_values = st.one_of(
    st.binary(max_size=40).map(lambda data: (_bin(data, "8"), data)),
    st.just((b"\xc0", None)),
    st.sampled_from([1, "s", [b"x"]]).map(lambda v: (msgpack.packb(v), v)),
)


def _expected_leaf(ids: list[Any], values: list[Any]) -> ListNode | str:
    """What a leaf of these decoded fields reads as: a node, or the reason it is corrupt."""
    if not all(type(i) is bytes and len(i) == ID_SIZE for i in ids):
        return f"leaf entries must be a list of {ID_SIZE}-byte ids"
    if len(values) != len(ids):
        return "a leaf holds one value per entry"
    if not all(v is None or type(v) is bytes for v in values):
        return "a leaf value must be bytes or nil"
    return ListNode(0, tuple(ids), (), tuple(values))


def _read(data: bytes) -> ListNode | str:
    try:
        node = decode_plain(hash_bytes(data), data)
    except CorruptObject as exc:
        return exc.reason
    assert isinstance(node, ListNode)
    return node


@settings(max_examples=400)
@given(
    st.lists(_entries, max_size=20),
    st.lists(_values, max_size=20),
    st.sampled_from(["fix", "16", "32"]),
)
def test_a_leaf_reads_as_its_fields_say_however_it_is_encoded(
    entries: list[tuple[bytes, Any]], values: list[tuple[bytes, Any]], form: str
) -> None:
    data = b"".join(
        [
            b"\x93\xa4leaf",
            _array(len(entries), form),
            *(e for e, _ in entries),
            _array(len(values), "fix"),
            *(v for v, _ in values),
        ]
    )
    expected = _expected_leaf([i for _, i in entries], [v for _, v in values])
    found = _read(data)
    assert found == expected
    if isinstance(found, ListNode):
        assert type(found.ids) is tuple and type(found.values) is tuple


@settings(max_examples=300)
@given(
    st.lists(_entries, max_size=12),
    st.integers(1, 300),
    st.sampled_from(["fixint", "uint8"]),
    st.sampled_from(["fix", "16"]),
)
def test_an_inner_node_reads_as_its_fields_say_however_it_is_encoded(
    entries: list[tuple[bytes, Any]], level: int, level_form: str, form: str
) -> None:
    level_bytes = msgpack.packb(level) if level_form == "fixint" else b"\xcc" + bytes([level % 256])
    level = level if level_form == "fixint" else level % 256
    data = b"".join(
        [
            b"\x94\xa4list",
            level_bytes,
            _array(len(entries), form),
            *(e for e, _ in entries),
            msgpack.packb([1] * len(entries)),
        ]
    )
    ids = [i for _, i in entries]
    expected: ListNode | str
    if not all(type(i) is bytes and len(i) == ID_SIZE for i in ids):
        expected = f"list entries must be a list of {ID_SIZE}-byte ids"
    elif level == 0 and ids:
        expected = "list counts do not match its entries"
    else:
        expected = ListNode(level, tuple(ids), (1,) * len(ids))
    assert _read(data) == expected


def test_a_leaf_whose_id_header_says_more_entries_than_it_holds_is_corrupt() -> None:
    item = hash_bytes(b"m")
    good = encode(ListNode(0, (item,), (), (b"\xa1x",)))
    for damaged in (good.replace(b"\x91\xc4", b"\x92\xc4", 1), good[:-3]):
        with pytest.raises(CorruptObject):
            decode(hash_bytes(damaged), damaged)


def test_a_decoded_node_is_a_frozen_list_node_equal_to_one_built() -> None:
    items = tuple(hash_bytes(b"%d" % i) for i in range(3))
    for node in (
        ListNode(0, items, (), (b"\xa1a", None, b"\xa1c")),
        ListNode(2, items, (4, 5, 6)),
        ListNode(0, items),
    ):
        node_id, data = encode_with_id(node)
        read = decode(node_id, data)
        assert read == node and hash(read) == hash(node) and repr(read) == repr(node)
        assert read.total == node.total
        with pytest.raises(dataclasses.FrozenInstanceError):
            read.level = 1  # type: ignore[misc]
