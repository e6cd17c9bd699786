"""Tests for statevcs.structures.maps: inline and stored maps, and corrupt map references."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from statevcs.errors import CorruptObject, MissingObject
from statevcs.hashing import ObjectId, hash_bytes, to_hex
from statevcs.objects import Blob, Inline, MapNode, StoredObject, decode, encode_with_id
from statevcs.structures.maps import INLINE_MAP_LIMIT, build_map, read_map


class DictReader:
    """An object reader over ``id -> bytes``."""

    def __init__(self, data: dict[ObjectId, bytes]) -> None:
        self.data = data

    def load(self, object_id: ObjectId) -> StoredObject:
        if object_id not in self.data:
            raise MissingObject(to_hex(object_id))
        return decode(object_id, self.data[object_id])

    def load_many(self, ids: Iterable[ObjectId]) -> dict[ObjectId, StoredObject]:
        return {i: self.load(i) for i in ids}

    def remember(self, object_id: ObjectId, obj: StoredObject) -> None:
        """Nothing to cache."""


def test_a_small_map_stays_inline_and_writes_nothing() -> None:
    out: dict[ObjectId, bytes] = {}
    ref = build_map({"b": Inline(b"2"), "a": Inline(b"1")}, out)
    assert out == {}
    assert isinstance(ref, MapNode)
    assert ref.keys == ("a", "b")
    assert read_map(DictReader({}), ref) == {"a": Inline(b"1"), "b": Inline(b"2")}


def test_a_large_map_is_stored_once_by_id_in_key_order() -> None:
    entries = {f"key-{i:03d}": hash_bytes(b"%d" % i) for i in range(20, 0, -1)}
    out: dict[ObjectId, bytes] = {}
    ref = build_map(entries, out)
    assert isinstance(ref, bytes)
    assert list(out) == [ref]
    assert len(out[ref]) > INLINE_MAP_LIMIT
    read = read_map(DictReader(out), ref)
    assert read == entries
    assert list(read) == sorted(entries)
    assert build_map(dict(reversed(list(entries.items()))), {}) == ref


def test_a_map_id_naming_another_kind_is_corrupt() -> None:
    blob_id, data = encode_with_id(Blob(b"not a map"))
    with pytest.raises(CorruptObject, match="expected a map, found Blob"):
        read_map(DictReader({blob_id: data}), blob_id)
    with pytest.raises(MissingObject):
        read_map(DictReader({}), hash_bytes(b"absent"))
