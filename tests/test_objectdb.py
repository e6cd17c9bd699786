"""The object database: verified reads, caches, the known-stored set and its gc generation."""

from __future__ import annotations

import pytest
from support import CountingStore

from statevcs.errors import CorruptObject, MissingObject
from statevcs.objectdb import ObjectDB
from statevcs.objects import Blob, Doc, encode_with_id
from statevcs.stores.memory import MemoryStore


def _stored(store: MemoryStore, obj: Blob | Doc) -> bytes:
    object_id, data = encode_with_id(obj)
    store.put_many({object_id: data})
    return object_id


def test_reads_are_hash_checked() -> None:
    store = MemoryStore()
    good_id, _ = encode_with_id(Doc({"a": 1}))
    _, other = encode_with_id(Doc({"a": 2}))
    store.put_many({good_id: other})  # the wrong bytes under an id
    with pytest.raises(CorruptObject, match="hash"):
        ObjectDB(store).load(good_id)


def test_a_missing_object_is_named() -> None:
    object_id, _ = encode_with_id(Blob(b"never stored"))
    with pytest.raises(MissingObject, match=object_id.hex()[:12]):
        ObjectDB(MemoryStore()).load(object_id)


def test_documents_are_decoded_fresh_on_every_read() -> None:
    store = MemoryStore()
    object_id = _stored(store, Doc({"list": [1, 2]}))
    db = ObjectDB(store)
    first = db.load_values([object_id])[object_id]
    assert isinstance(first, Doc)
    first.value["list"].append(3)  # a caller changing what it read ...
    again = db.load_values([object_id])[object_id]
    assert isinstance(again, Doc) and again.value == {"list": [1, 2]}  # ... changes nothing


def test_unknown_filters_what_is_known_to_be_stored() -> None:
    store = MemoryStore()
    stored_id = _stored(store, Blob(b"stored"))
    new_id, new_data = encode_with_id(Blob(b"new"))
    db = ObjectDB(store)
    db.load(stored_id)  # reading an object proves it is stored
    assert db.unknown({stored_id: b"x", new_id: new_data}) == {new_id: new_data}
    db.mark_stored([new_id])
    assert db.unknown({new_id: new_data}) == {}


def test_forget_drops_the_caches_and_adopts_the_new_generation() -> None:
    store = MemoryStore()
    stored_id = _stored(store, Blob(b"stored"))
    db = ObjectDB(store)
    db.load(stored_id)
    assert db.generation == 0
    store.delete_many([stored_id])
    assert store.generation() == 1
    db.forget()
    assert db.generation == 1 and stored_id not in db.known
    with pytest.raises(MissingObject):
        db.load(stored_id)


def test_prefetch_reads_in_one_batch_what_the_loads_after_it_find_cached() -> None:
    store = CountingStore()
    doc_id = _stored(store, Doc({"role": "user", "content": "hi"}))
    blob_id = _stored(store, Blob(b"state bytes"))
    absent_id, _ = encode_with_id(Doc("never stored"))
    db = ObjectDB(store)
    db.prefetch([doc_id, blob_id, absent_id, doc_id])
    assert store.reads == 1
    assert db.load_docs([doc_id, doc_id]) == [{"role": "user", "content": "hi"}] * 2
    value = db.load_values([blob_id])[blob_id]
    assert isinstance(value, Blob) and value.data == b"state bytes"
    assert store.reads == 1  # both came from the prefetch
    db.prefetch([doc_id, blob_id])  # all cached: no read at all
    assert store.reads == 1
    with pytest.raises(MissingObject):  # an absent id is left to the load that names it
        db.load(absent_id)


@pytest.mark.parametrize("obj", [Doc({"a": 1}), Blob(b"a blob")])
def test_prefetch_refuses_bytes_that_do_not_hash_to_their_id(obj: Doc | Blob) -> None:
    store = MemoryStore()
    good_id, _ = encode_with_id(obj)
    other = Doc({"a": 2}) if isinstance(obj, Doc) else Blob(b"another blob")
    store.put_many({good_id: encode_with_id(other)[1]})
    db = ObjectDB(store)
    with pytest.raises(CorruptObject, match="hash"):
        db.prefetch([good_id])
    with pytest.raises(CorruptObject, match="hash"):  # and nothing was cached meanwhile
        db.load(good_id)
