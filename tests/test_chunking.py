"""Tests for content-defined chunking of large values."""

from __future__ import annotations

import random

import pytest

from statevcs.errors import CorruptObject, MissingObject
from statevcs.hashing import ObjectId
from statevcs.objectdb import ObjectDB
from statevcs.objects import Blob, Chunked, Doc, decode, encode
from statevcs.stores.memory import MemoryStore
from statevcs.structures.chunking import (
    AVG_CHUNK,
    CHUNK_THRESHOLD,
    MAX_CHUNK,
    MIN_CHUNK,
    chunk,
    cut_points,
)

MB = 1024 * 1024


def random_bytes(size: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(size)


def pieces(data: bytes) -> list[bytes]:
    result, start = [], 0
    for end in cut_points(data):
        result.append(data[start:end])
        start = end
    return result


@pytest.fixture(scope="module")
def megabyte() -> bytes:
    return random_bytes(MB)


def test_cut_points_cover_the_data_in_order(megabyte: bytes) -> None:
    points = cut_points(megabyte)
    assert points == sorted(set(points))
    assert points[-1] == len(megabyte)
    assert b"".join(pieces(megabyte)) == megabyte
    assert cut_points(megabyte) == points  # deterministic


def test_chunk_sizes_respect_min_and_max(megabyte: bytes) -> None:
    sizes = [len(p) for p in pieces(megabyte)]
    assert all(MIN_CHUNK < s <= MAX_CHUNK for s in sizes[:-1])
    assert 0 < sizes[-1] <= MAX_CHUNK
    average = sum(sizes) / len(sizes)
    assert AVG_CHUNK / 2 <= average <= 2 * AVG_CHUNK


def test_data_without_cut_points_is_cut_at_the_maximum() -> None:
    data = bytes(5 * MAX_CHUNK + 10)
    assert [len(p) for p in pieces(data)] == [MAX_CHUNK] * 5 + [10]


@pytest.mark.parametrize("size", [0, 1, MIN_CHUNK - 1, MIN_CHUNK])
def test_small_data_is_one_chunk(size: int) -> None:
    assert cut_points(random_bytes(size)) == ([size] if size else [])


def test_an_insertion_near_the_start_keeps_most_chunks(megabyte: bytes) -> None:
    edited = megabyte[:100] + b"a few new bytes" + megabyte[100:]
    before, after = pieces(megabyte), pieces(edited)
    shared = set(before) & set(after)
    # The cut points resynchronise after the edit: only the first chunk or two differ.
    assert len(shared) >= len(before) - 3
    assert len(shared) >= 0.9 * len(after)


def test_an_edit_in_the_middle_changes_only_nearby_chunks(megabyte: bytes) -> None:
    middle = len(megabyte) // 2
    edited = megabyte[:middle] + b"X" + megabyte[middle + 1 :]
    before, after = pieces(megabyte), pieces(edited)
    assert len(set(after) - set(before)) <= 2
    # A deletion shifts every later byte, yet the later chunks are still shared.
    deleted = megabyte[:middle] + megabyte[middle + 5_000 :]
    assert len(set(pieces(deleted)) - set(before)) <= 2


def load_through_db(out: dict[ObjectId, bytes], object_id: ObjectId) -> Blob | Doc:
    store = MemoryStore()
    store.put_many(out)
    return ObjectDB(store).load_values([object_id])[object_id]


@pytest.mark.parametrize("size", [CHUNK_THRESHOLD + 1, MB, 3 * MB + 17])
def test_chunked_blobs_reassemble_exactly_through_object_db(size: int) -> None:
    value = random_bytes(size, seed=size)
    encoded = encode(Blob(value))
    out: dict[ObjectId, bytes] = {}
    object_id = chunk(encoded, out)
    head = decode(object_id, out[object_id])
    assert isinstance(head, Chunked)
    assert head.size == len(encoded)
    assert len(head.chunks) == len(cut_points(encoded))
    assert load_through_db(out, object_id) == Blob(value)


def test_chunked_documents_reassemble_with_key_order() -> None:
    text = random_bytes(400_000, seed=3).hex()
    value = {"role": "tool", "content": [{"text": text}], "a": 1}
    encoded = encode(Doc(value))
    out: dict[ObjectId, bytes] = {}
    object_id = chunk(encoded, out)
    loaded = load_through_db(out, object_id)
    assert isinstance(loaded, Doc)
    assert loaded.value == value
    assert list(loaded.value) == ["role", "content", "a"]


def test_similar_values_share_chunk_objects(megabyte: bytes) -> None:
    first: dict[ObjectId, bytes] = {}
    second: dict[ObjectId, bytes] = {}
    chunk(encode(Blob(megabyte)), first)
    chunk(encode(Blob(megabyte[:200_000] + b"edit" + megabyte[200_000:])), second)
    new_bytes = sum(len(v) for k, v in second.items() if k not in first)
    assert new_bytes < 0.15 * sum(len(v) for v in second.values())


def test_a_missing_chunk_is_reported() -> None:
    out: dict[ObjectId, bytes] = {}
    object_id = chunk(encode(Blob(random_bytes(300_000, seed=4))), out)
    head = decode(object_id, out[object_id])
    assert isinstance(head, Chunked)
    del out[head.chunks[1]]
    with pytest.raises(MissingObject, match=head.chunks[1].hex()):
        load_through_db(out, object_id)


def test_a_tampered_chunk_is_reported() -> None:
    out: dict[ObjectId, bytes] = {}
    object_id = chunk(encode(Blob(random_bytes(300_000, seed=5))), out)
    head = decode(object_id, out[object_id])
    assert isinstance(head, Chunked)
    victim = head.chunks[0]
    out[victim] = out[victim][:-1] + bytes([out[victim][-1] ^ 1])
    with pytest.raises(CorruptObject, match=victim.hex()):
        load_through_db(out, object_id)
