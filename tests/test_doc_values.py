"""Reading document values in bulk: ``objects.doc_value`` and ``ObjectDB.load_docs``.

The fast path must agree with :func:`statevcs.objects.decode` on every input, hostile ones
included, and keep decode's promises: checked hashes, fresh values, ``CorruptObject`` for bad
bytes.
"""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statevcs.errors import CorruptObject, MissingObject
from statevcs.hashing import hash_bytes
from statevcs.objectdb import ObjectDB
from statevcs.objects import (
    NOT_A_DOC,
    Blob,
    Doc,
    ListNode,
    decode,
    doc_value,
    encode_doc,
    encode_with_id,
)
from statevcs.stores.memory import MemoryStore
from statevcs.structures import chunking

_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=6)
    | st.binary(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.text(max_size=4) | st.integers(-3, 3), inner, max_size=3)
        | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=8))
    ),
    max_leaves=16,
)
_hostile = (
    _values.map(lambda v: bytes(msgpack.packb(["doc", v], use_bin_type=True)))
    | st.builds(
        lambda kind, fields: bytes(msgpack.packb([kind, *fields], use_bin_type=True)),
        st.sampled_from(["doc", "blob", "list", "x", b"doc", 1]),
        st.lists(_values, max_size=3),
    )
    | st.binary(max_size=60).map(lambda b: b"\x92\xa3doc" + b)
    | st.binary(max_size=60)
    | st.builds(lambda depth: b"\x92\xa3doc" + b"\x91" * depth + b"\xc0", st.integers(0, 3000))
)


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (1 is not True, 1.0 is not 1)."""
    return msgpack.packb(a, use_bin_type=True) == msgpack.packb(b, use_bin_type=True) and repr(
        a
    ) == repr(b)


def _decoded(object_id: bytes, data: bytes) -> Any:
    """What decode says: a Doc's value, NOT_A_DOC for another kind, or the CorruptObject."""
    try:
        obj = decode(object_id, data)
    except CorruptObject as exc:
        return exc
    return obj.value if isinstance(obj, Doc) else NOT_A_DOC


@settings(max_examples=400)
@given(_hostile)
def test_doc_value_agrees_with_decode_on_any_bytes(data: bytes) -> None:
    object_id = hash_bytes(data)
    expected = _decoded(object_id, data)
    try:
        got = doc_value(object_id, data)
    except CorruptObject:
        assert isinstance(expected, CorruptObject)
        return
    if got is NOT_A_DOC:
        # Other kinds are left to decode, which builds them or says they are corrupt.
        assert expected is NOT_A_DOC or isinstance(expected, CorruptObject)
    else:
        assert not isinstance(expected, CorruptObject) and _same(got, expected)
    with pytest.raises(CorruptObject, match="hash"):
        doc_value(hash_bytes(b"other" + data), data)


@settings(max_examples=200)
@given(_hostile)
def test_load_docs_gives_what_decode_gives_or_corrupt_object(data: bytes) -> None:
    store = MemoryStore()
    object_id = hash_bytes(data)
    store.put_many({object_id: data})
    expected = _decoded(object_id, data)
    try:
        (got,) = ObjectDB(store).load_docs([object_id])
    except CorruptObject:
        assert expected is NOT_A_DOC or isinstance(expected, CorruptObject)
        return
    assert _same(got, expected)


def _put(store: MemoryStore, value: Any) -> bytes:
    object_id, data = encode_with_id(Doc(value))
    store.put_many({object_id: data})
    return object_id


def test_load_docs_keeps_order_and_gives_each_occurrence_its_own_value() -> None:
    store = MemoryStore()
    a, b = _put(store, {"x": [1]}), _put(store, {"y": {"z": 2}})
    db = ObjectDB(store)
    got = db.load_docs([a, b, a])
    assert got == [{"x": [1]}, {"y": {"z": 2}}, {"x": [1]}]
    assert got[0] is not got[2] and got[0]["x"] is not got[2]["x"]
    got[0]["x"].append(5)  # a caller changing what it read changes no later read
    assert db.load_docs([a]) == [{"x": [1]}]
    assert db.load_docs([]) == []


def test_load_docs_checks_the_hash_of_what_the_store_returns() -> None:
    store = MemoryStore()
    good_id = hash_bytes(encode_doc({"a": 1}))
    store.put_many({good_id: encode_doc({"a": 2})})
    db = ObjectDB(store)
    with pytest.raises(CorruptObject, match="hash"):
        db.load_docs([good_id])
    with pytest.raises(CorruptObject, match="hash"):
        db.load_docs([good_id])  # nothing unverified was cached by the failed read


def test_load_docs_reassembles_chunked_documents_and_refuses_other_kinds() -> None:
    store = MemoryStore()
    big = {"text": "".join(f"{i:08d}" for i in range(40_000))}
    data = encode_doc(big)
    assert len(data) > chunking.CHUNK_THRESHOLD
    out: dict[bytes, bytes] = {}
    chunked_id = chunking.chunk(data, out)
    store.put_many(out)
    small = _put(store, "small")
    blob_id, blob = encode_with_id(Blob(b"raw"))
    node_id, node = encode_with_id(ListNode(0, (small,)))
    store.put_many({blob_id: blob, node_id: node})
    db = ObjectDB(store)
    assert db.load_docs([small, chunked_id, chunked_id]) == ["small", big, big]
    assert ObjectDB(store).load_docs([chunked_id]) == [big]
    for other in (blob_id, node_id):
        with pytest.raises(CorruptObject, match="expected a document"):
            ObjectDB(store).load_docs([small, other])
        db.load(other)  # cached as a decoded object: still not a document
        with pytest.raises(CorruptObject, match="expected a document"):
            db.load_docs([other])


def test_load_docs_names_a_missing_object() -> None:
    store = MemoryStore()
    present = _put(store, 1)
    absent = hash_bytes(encode_doc("never stored"))
    with pytest.raises(MissingObject, match=absent.hex()[:12]):
        ObjectDB(store).load_docs([present, absent])
