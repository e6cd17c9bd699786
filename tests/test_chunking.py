"""Tests for content-defined chunking of large values, with each chunker a repository records."""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest
from blake3 import blake3

from statevcs import Repo
from statevcs.errors import CorruptObject, MissingObject, RepositoryError
from statevcs.hashing import ObjectId
from statevcs.objectdb import ObjectDB
from statevcs.objects import Blob, Chunked, Doc, decode, encode, encode_doc
from statevcs.stores.memory import MemoryStore
from statevcs.structures.chunking import (
    AVG_CHUNK,
    CHUNK_THRESHOLD,
    CHUNKER_KEY,
    CHUNKERS,
    DEFAULT_CHUNKER,
    FASTCDC_2020,
    FASTCDC_2020_SMALL_VALUES,
    GEAR_1,
    MAX_CHUNK,
    MIN_CHUNK,
    SMALL_AVG_CHUNK,
    SMALL_CHUNKS_UP_TO,
    SMALL_MAX_CHUNK,
    SMALL_MIN_CHUNK,
    SMALL_VALUE_THRESHOLD,
    Chunker,
    chunk,
    chunker_for,
    cut_points,
)

MB = 1024 * 1024
BOTH = pytest.mark.parametrize("chunker", [FASTCDC_2020, GEAR_1], ids=lambda c: c.name)
EVERY = pytest.mark.parametrize("chunker", list(CHUNKERS.values()), ids=lambda c: c.name)


def random_bytes(size: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(size)


def pieces(data: bytes, chunker: Chunker = DEFAULT_CHUNKER) -> list[bytes]:
    result, start = [], 0
    for end in cut_points(data, chunker):
        result.append(data[start:end])
        start = end
    return result


@pytest.fixture(scope="module")
def megabyte() -> bytes:
    return random_bytes(MB)


# Cut points decide object ids: any change to a chunker changes the ids of every large value
# and must be a new chunker with a new name, never an edit of one (see chunking.py). These
# vectors come from data every machine derives the same way (blake3's extendable output).
VECTOR_BYTES = blake3(b"statevcs chunking vector").digest(length=200_000)
VECTOR_TEXT = base64.b64encode(blake3(b"statevcs chunking text").digest(length=150_000))
_FASTCDC_2020_CUTS = (
    [20273, 51387, 68001, 84390, 92379, 112320, 133112, 165292, 182290, 200000],
    [19308, 40239, 57842, 76673, 96447, 113978, 132228, 164064, 181340, 198016, 200000],
)
KNOWN_CUTS = {
    "fastcdc-2020": _FASTCDC_2020_CUTS,
    # Messages are cut as by fastcdc-2020 (their ids do not depend on which of the two).
    "fastcdc-2020-small-values": _FASTCDC_2020_CUTS,
    # Pinned from the chunker statevcs shipped first (a pure-Python gear hash).
    "gear-1": (
        [16396, 32960, 47511, 64444, 69922, 87359, 104754, 122368, 136482, 154843, 172150,
         191962, 200000],
        [19058, 40697, 54249, 70742, 87253, 98228, 123596, 140659, 157048, 174665, 191624,
         200000],
    ),
}  # fmt: skip


# How fastcdc-2020-small-values cuts the first 40,000 bytes of each vector as a state value.
KNOWN_SMALL_VALUE_CUTS = (
    [2114, 4230, 6503, 7310, 9745, 11970, 15526, 18372, 20273, 22387, 23280, 25522, 28075,
     29440, 31701, 33866, 35165, 38782, 40000],
    [1445, 3809, 5887, 10663, 12784, 15343, 18290, 19308, 21994, 24730, 26933, 29566, 32639,
     35086, 37587, 39849, 40000],
)  # fmt: skip


@EVERY
def test_cut_points_match_the_known_vectors(chunker: Chunker) -> None:
    assert set(KNOWN_CUTS) == set(CHUNKERS)
    on_bytes, on_text = KNOWN_CUTS[chunker.name]
    assert chunker.cut_points(VECTOR_BYTES) == on_bytes
    assert chunker.cut_points(VECTOR_TEXT) == on_text


def test_pyfastcdc_pure_python_fallback_cuts_like_its_native_loop() -> None:
    # pyfastcdc falls back to Python where it has no wheel and no compiler: slower, and the
    # same cut points, so a repository's ids do not depend on the machine that writes them.
    from pyfastcdc.py import FastCDC as PurePythonFastCDC

    reference = PurePythonFastCDC(
        AVG_CHUNK, min_size=MIN_CHUNK, max_size=MAX_CHUNK, normalized_chunking=2, seed=0
    )
    for data in (VECTOR_BYTES, VECTOR_TEXT, bytes(100_000)):
        ends, end = [], 0
        for piece in reference.cut_buf(data):
            end += piece.length
            ends.append(end)
        assert FASTCDC_2020.cut_points(data) == ends


@BOTH
def test_cut_points_cover_the_data_in_order(chunker: Chunker, megabyte: bytes) -> None:
    points = cut_points(megabyte, chunker)
    assert points == sorted(set(points))
    assert points[-1] == len(megabyte)
    assert b"".join(pieces(megabyte, chunker)) == megabyte
    assert cut_points(megabyte, chunker) == points  # deterministic


@BOTH
def test_chunk_sizes_respect_min_and_max(chunker: Chunker, megabyte: bytes) -> None:
    sizes = [len(p) for p in pieces(megabyte, chunker)]
    assert all(MIN_CHUNK <= s <= MAX_CHUNK for s in sizes[:-1])
    assert 0 < sizes[-1] <= MAX_CHUNK
    average = sum(sizes) / len(sizes)
    assert AVG_CHUNK / 2 <= average <= 2 * AVG_CHUNK


@BOTH
def test_data_without_cut_points_is_cut_at_the_maximum(chunker: Chunker) -> None:
    data = bytes(5 * MAX_CHUNK + 10)
    assert [len(p) for p in pieces(data, chunker)] == [MAX_CHUNK] * 5 + [10]


@BOTH
@pytest.mark.parametrize("size", [0, 1, MIN_CHUNK - 1, MIN_CHUNK])
def test_small_data_is_one_chunk(chunker: Chunker, size: int) -> None:
    assert cut_points(random_bytes(size), chunker) == ([size] if size else [])


@BOTH
def test_an_insertion_near_the_start_keeps_most_chunks(chunker: Chunker, megabyte: bytes) -> None:
    edited = megabyte[:100] + b"a few new bytes" + megabyte[100:]
    before, after = pieces(megabyte, chunker), pieces(edited, chunker)
    shared = set(before) & set(after)
    # The cut points resynchronise after the edit: only the first chunk or two differ.
    assert len(shared) >= len(before) - 3
    assert len(shared) >= 0.9 * len(after)


@BOTH
def test_an_edit_in_the_middle_changes_only_nearby_chunks(
    chunker: Chunker, megabyte: bytes
) -> None:
    middle = len(megabyte) // 2
    edited = megabyte[:middle] + b"X" + megabyte[middle + 1 :]
    before, after = pieces(megabyte, chunker), pieces(edited, chunker)
    assert len(set(after) - set(before)) <= 2
    # A deletion shifts every later byte, yet the later chunks are still shared.
    deleted = megabyte[:middle] + megabyte[middle + 5_000 :]
    assert len(set(pieces(deleted, chunker)) - set(before)) <= 2


def test_an_edit_in_base64_text_changes_only_nearby_chunks() -> None:
    # The large values agents hold are mostly text: base64 images, documents.
    text = base64.b64encode(random_bytes(3 * MB, seed=9))
    middle = len(text) // 2
    edited = text[:middle] + b"QUJD" + text[middle:]
    before, after = pieces(text), pieces(edited)
    assert len(set(after) - set(before)) <= 2
    assert len(set(before) - set(after)) <= 2


def load_through_db(out: dict[ObjectId, bytes], object_id: ObjectId) -> Blob | Doc:
    store = MemoryStore()
    store.put_many(out)
    return ObjectDB(store).load_values([object_id])[object_id]


@pytest.mark.parametrize("size", [CHUNK_THRESHOLD + 1, MB, 3 * MB + 17, 40 * MB + 3])
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


# --- which chunker a repository writes with ------------------------------------------------

LARGE_MESSAGE = {"role": "user", "content": [{"text": VECTOR_TEXT.decode() * 2}]}


def chunk_ids(data: bytes, chunker: Chunker) -> set[ObjectId]:
    out: dict[ObjectId, bytes] = {}
    chunker.chunk(data, out)
    return set(out)


def test_chunker_for_names_and_refuses_unknown_chunkers() -> None:
    assert chunker_for("fastcdc-2020") is FASTCDC_2020
    assert chunker_for("gear-1") is GEAR_1
    assert chunker_for(None) is GEAR_1  # repositories created before chunkers were recorded
    with pytest.raises(RepositoryError, match=r"'fastcdc-2031'.*newer statevcs"):
        chunker_for("fastcdc-2031")


@pytest.mark.parametrize("where", ["memory", "sqlite"])
def test_a_new_repository_records_and_writes_with_the_native_chunker(
    where: str, tmp_path: Path
) -> None:
    repo = Repo.init("memory://" if where == "memory" else str(tmp_path))
    assert repo.config.get(CHUNKER_KEY) == "fastcdc-2020-small-values"
    assert repo.objects.chunker is FASTCDC_2020_SMALL_VALUES
    commit = repo.commit({"messages": [LARGE_MESSAGE]})
    data = encode_doc(LARGE_MESSAGE)
    assert len(data) > CHUNK_THRESHOLD
    # A message is cut as by fastcdc-2020: the same ids as in repositories made by 0.2.0.
    stored = repo.store.has_many(chunk_ids(data, FASTCDC_2020))
    assert stored == chunk_ids(data, FASTCDC_2020)
    assert repo.show(commit.id).messages == [LARGE_MESSAGE]
    repo.close()


def test_a_repository_that_records_no_chunker_keeps_writing_the_ids_it_always_had(
    tmp_path: Path,
) -> None:
    repo = Repo.init(str(tmp_path))
    repo.store.config_set(CHUNKER_KEY, None)  # as statevcs wrote repositories before
    repo.close()
    old = Repo.open(str(tmp_path))
    assert old.objects.chunker is GEAR_1
    commit = old.commit({"messages": [LARGE_MESSAGE]})
    data = encode_doc(LARGE_MESSAGE)
    assert old.store.has_many(chunk_ids(data, GEAR_1)) == chunk_ids(data, GEAR_1)
    assert not old.store.has_many(chunk_ids(data, FASTCDC_2020) - chunk_ids(data, GEAR_1))
    assert old.show(commit.id).messages == [LARGE_MESSAGE]
    old.close()


def test_values_cut_by_either_chunker_read_back_exactly_whatever_the_repository_writes() -> None:
    # Reading only concatenates the listed chunks: no chunker is involved.
    value = random_bytes(2 * MB + 5, seed=11)
    store = MemoryStore()
    ids = {}
    for chunker in (FASTCDC_2020, GEAR_1):
        out: dict[ObjectId, bytes] = {}
        ids[chunker.name] = chunker.chunk(encode(Blob(value)), out)
        store.put_many(out)
    assert ids["fastcdc-2020"] != ids["gear-1"]
    for recorded in ("fastcdc-2020", None):
        store.config_set(CHUNKER_KEY, recorded)
        loaded = ObjectDB(store).load_values(list(ids.values()))
        assert loaded == {object_id: Blob(value) for object_id in ids.values()}


@pytest.mark.parametrize("where", ["memory", "sqlite"])
def test_a_repository_written_with_an_unknown_chunker_is_refused(
    where: str, tmp_path: Path
) -> None:
    if where == "sqlite":
        repo = Repo.init(str(tmp_path))
        repo.store.config_set(CHUNKER_KEY, "fastcdc-2031")
        repo.close()
        with pytest.raises(RepositoryError, match="fastcdc-2031"):
            Repo.open(str(tmp_path))
    else:
        store = MemoryStore()
        store.config_set(CHUNKER_KEY, "fastcdc-2031")
        with pytest.raises(RepositoryError, match="fastcdc-2031"):
            ObjectDB(store).chunker  # noqa: B018


def test_the_chunker_cannot_be_changed_through_config() -> None:
    repo = Repo.init("memory://")
    with pytest.raises(RepositoryError, match=r"core\.chunker"):
        repo.config.set(CHUNKER_KEY, "gear-1")
    with pytest.raises(RepositoryError, match=r"core\.chunker"):
        repo.config.set(CHUNKER_KEY, None)
    assert repo.config.get(CHUNKER_KEY) == "fastcdc-2020-small-values"


def test_small_value_cut_points_match_the_known_vectors_and_pyfastcdc() -> None:
    from pyfastcdc.py import FastCDC as PurePythonFastCDC

    reference = PurePythonFastCDC(
        SMALL_AVG_CHUNK,
        min_size=SMALL_MIN_CHUNK,
        max_size=SMALL_MAX_CHUNK,
        normalized_chunking=2,
        seed=0,
    )
    for data, known in zip((VECTOR_BYTES[:40_000], VECTOR_TEXT[:40_000]), KNOWN_SMALL_VALUE_CUTS):
        assert FASTCDC_2020_SMALL_VALUES.value_cut_points(data) == known
        ends, end = [], 0
        for piece in reference.cut_buf(data):
            end += piece.length
            ends.append(end)
        assert ends == known


def test_values_past_the_small_chunk_limit_are_cut_as_messages_are(megabyte: bytes) -> None:
    data = megabyte + megabyte[:1000]
    assert len(data) > SMALL_CHUNKS_UP_TO
    assert FASTCDC_2020_SMALL_VALUES.value_cut_points(data) == FASTCDC_2020.cut_points(data)
    at_limit = megabyte[:SMALL_CHUNKS_UP_TO]
    sizes = [len(p) for p in _value_pieces(at_limit)]
    assert all(SMALL_MIN_CHUNK <= s <= SMALL_MAX_CHUNK for s in sizes[:-1])
    assert SMALL_AVG_CHUNK / 2 <= sum(sizes) / len(sizes) <= 2 * SMALL_AVG_CHUNK


def _value_pieces(data: bytes) -> list[bytes]:
    result, start = [], 0
    for end in FASTCDC_2020_SMALL_VALUES.value_cut_points(data):
        result.append(data[start:end])
        start = end
    return result


def _scratchpad(lines: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{i}: " + "".join(rng.choice("abcdefgh ") for _ in range(70)) for i in range(lines)]


@pytest.mark.parametrize("where", ["memory", "sqlite"])
def test_a_state_value_edited_a_little_each_turn_stores_about_the_edit(
    where: str, tmp_path: Path
) -> None:
    """A 22 KB to-do list with one line rewritten per turn: small chunks store ~3-4 KB a
    turn where a whole value (compressed) is ~11 KB; each version reads back exactly."""
    rng = random.Random(3)
    sizes: dict[str, float] = {}
    for chunker in (FASTCDC_2020_SMALL_VALUES, FASTCDC_2020):
        repo = Repo.init("memory://" if where == "memory" else str(tmp_path / chunker.name))
        repo.store.config_set(CHUNKER_KEY, chunker.name)  # as a repository made by 0.2.0 is
        assert repo.objects.chunker is chunker
        state = {"messages": [], "todo": _scratchpad(250, seed=1)}
        versions = []
        first = repo.commit(state, message="start")
        before = repo.stats().bytes_stored
        for turn in range(20):
            state["todo"][rng.randrange(250)] = f"edited {turn} " + "z" * rng.randrange(60)
            versions.append((repo.commit(state, message=f"turn {turn}").id, list(state["todo"])))
        sizes[chunker.name] = (repo.stats().bytes_stored - before) / 20
        assert repo.show(first.id).state["todo"] == _scratchpad(250, seed=1)
        for commit_id, todo in versions:
            assert repo.show(commit_id).state["todo"] == todo
        repo.close()
    assert sizes["fastcdc-2020-small-values"] < sizes["fastcdc-2020"] / 2, sizes


def test_only_values_past_the_small_threshold_are_chunked_and_messages_as_before() -> None:
    repo = Repo.init("memory://")
    assert repo.objects.chunker is DEFAULT_CHUNKER is FASTCDC_2020_SMALL_VALUES
    just_below = "x" * (SMALL_VALUE_THRESHOLD - 64)
    above = _scratchpad(150, seed=2)  # ~11 KB
    message = {"role": "tool", "content": [{"text": "m" * (CHUNK_THRESHOLD // 2)}]}
    commit = repo.commit({"messages": [message], "small": just_below, "large": above, "x": {}})
    snapshot = repo.show(commit.id)
    assert snapshot.state == {"small": just_below, "large": above, "x": {}}
    assert snapshot.messages == [message]
    kinds: dict[str, int] = {}
    for object_id, _size in repo.store.iter_objects():
        obj = repo.objects.load(object_id)
        kinds[type(obj).__name__] = kinds.get(type(obj).__name__, 0) + 1
    assert kinds.get("Chunked") == 1  # the large state value only: the 32 KB message is packed
    repo.close()
