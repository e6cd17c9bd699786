"""A batch of list nodes read by ``ObjectDB.load_many`` is remembered as one read at a time
would be: cached, its packed leaves naming their messages, and a damaged node in the middle of
a batch fails that read while the nodes read before it stay usable."""

from __future__ import annotations

import random
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest
from support import CountingStore, in_child, message

from statevcs import CorruptObject, MissingObject, Repo
from statevcs.compression import frame_dictionary
from statevcs.hashing import ObjectId, to_hex
from statevcs.objectdb import DICTIONARY_KEY, ObjectDB
from statevcs.objects import CommitObject, ListNode, SnapshotObject, encode_with_id
from statevcs.snapshot import read_messages
from statevcs.stores.sqlite import SQLiteStore
from statevcs.structures import prolly


def _committed(count: int) -> tuple[CountingStore, ObjectId, list[dict[str, Any]]]:
    """A store holding ``count`` messages on ``main`` (format 2); its message tree's root."""
    store = CountingStore()
    messages = [message(i) for i in range(count)]
    with Repo(store) as repo:
        commit_id = bytes.fromhex(repo.commit({"messages": messages}).id)
        commit = repo.objects.load(commit_id)
        assert isinstance(commit, CommitObject)
        snapshot = repo.objects.load(commit.snapshot)
        assert isinstance(snapshot, SnapshotObject)
    return store, snapshot.messages, messages


def _leaf_ids(store: CountingStore, root: ObjectId) -> list[ObjectId]:
    """The ids of the tree's leaves, in order (read through a handle of their own)."""
    db = ObjectDB(store)
    nodes = [root]
    while True:
        loaded = db.load_many(nodes)
        if all(type(n) is ListNode and n.level == 0 for n in loaded.values()):
            return nodes
        nodes = [c for n in nodes for c in loaded[n].ids]  # type: ignore[union-attr]


def test_leaves_read_in_one_batch_are_cached_and_name_their_messages() -> None:
    store, root, messages = _committed(300)
    leaf_ids = _leaf_ids(store, root)
    ids = prolly.items(ObjectDB(store), root)
    assert len(leaf_ids) > 10
    db = ObjectDB(store)
    leaves = db.load_many(leaf_ids)
    assert [type(leaves[i]) for i in leaf_ids] == [ListNode] * len(leaf_ids)
    reads = store.reads
    # Every message of the batch is found by its id in the leaf holding it: no store read.
    assert db.load_docs([ids[0], ids[150], ids[-1]]) == [
        messages[0],
        messages[150],
        messages[len(ids) - 1],
    ]
    assert db.load_many(leaf_ids) == leaves  # from the cache
    assert [db.load(i) for i in leaf_ids] == [leaves[i] for i in leaf_ids]
    assert store.reads == reads
    assert ids[150] not in store.get_many([ids[150]])  # it is in its leaf alone


def test_a_damaged_leaf_fails_its_batch_and_the_leaves_before_it_stay_cached() -> None:
    store, root, messages = _committed(300)
    leaf_ids = _leaf_ids(store, root)
    middle = len(leaf_ids) // 2
    damaged = leaf_ids[middle]
    original = store._objects[damaged]
    store._objects[damaged] = (store._objects[leaf_ids[0]][0], 0.0)  # another leaf's bytes
    db = ObjectDB(store)
    with pytest.raises(CorruptObject) as failed:
        db.load_many(leaf_ids)
    assert failed.value.object_id == to_hex(damaged)
    assert "hash" in failed.value.reason
    reads = store.reads
    before = db.load_many(leaf_ids[:middle])  # read before the damaged one: cached
    assert store.reads == reads and len(before) == middle
    with pytest.raises(CorruptObject):  # the damaged one was not cached: it fails again
        db.load(damaged)
    store._objects[damaged] = original  # repaired: the same handle reads it exactly
    assert prolly.leaves(db, root) == [db.load(i) for i in leaf_ids]
    values, _ = read_messages(db, root)
    assert values == messages[: len(values)]


def test_a_missing_node_in_a_batch_is_named_after_the_others_are_cached() -> None:
    store, root, _ = _committed(300)
    leaf_ids = _leaf_ids(store, root)
    gone = leaf_ids[-1]
    del store._objects[gone]
    db = ObjectDB(store)
    with pytest.raises(MissingObject, match=to_hex(gone)):
        db.load_many(leaf_ids)
    reads = store.reads
    assert len(db.load_many(leaf_ids[:-1])) == len(leaf_ids) - 1
    assert store.reads == reads


def _read_leaves(path: str, leaf_ids: list[ObjectId], answers: Connection) -> None:
    """In a new process (no zstd dictionary registered yet): the leaves' values, read in one
    batch before anything else."""
    db = ObjectDB(SQLiteStore(path))
    leaves = db.load_many(leaf_ids)
    answers.send([v for i in leaf_ids for v in leaves[i].values or ()])  # type: ignore[union-attr]


def test_a_new_process_reads_leaves_compressed_with_the_repository_dictionary(
    tmp_path: Path,
) -> None:
    words = [
        w * (1 + i % 3) for i, w in enumerate(["alpha", "beta", "gamma", "delta", "kappa", "sigma"])
    ]
    rng = random.Random(7)
    messages = [  # enough varied text to train the repository's dictionary
        {"role": "user", "content": " ".join(rng.choice(words) for _ in range(80))}
        for _ in range(600)
    ]
    with Repo.init(tmp_path / "repo") as repo:
        for end in range(2, 601, 2):  # a turn a commit: messages are sampled as they come
            repo.commit({"messages": messages[:end]})
        assert repo.store.config_get(DICTIONARY_KEY)
        tip = repo.objects.load(bytes.fromhex(repo.resolve("main")))
        assert isinstance(tip, CommitObject)
        snapshot = repo.objects.load(tip.snapshot)
        assert isinstance(snapshot, SnapshotObject)
        leaves = prolly.leaves(repo.objects, snapshot.messages)
        framed = repo.store.get_many([encode_with_id(leaf)[0] for leaf in leaves])
        assert any(frame_dictionary(data) for data in framed.values())
        store_path = str(repo.store.path)  # type: ignore[attr-defined]
    leaf_ids = [encode_with_id(leaf)[0] for leaf in leaves]
    values = [v for leaf in leaves for v in leaf.values or ()]
    assert in_child("spawn", _read_leaves, store_path, leaf_ids) == values
