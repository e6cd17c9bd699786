"""A caching, verifying view of a store's objects, used by the snapshot and repo layers.

It decodes and hash-checks what it reads, keeps recently used structural nodes decoded, keeps
recent small documents as bytes (so every restore decodes fresh, unshared dicts), and remembers
which ids are known to be stored, so a commit sends only objects the store does not have yet.

The set of known ids is only true until a garbage collection (in any process) deletes objects.
It is therefore tied to the store's gc generation: writers pass :attr:`ObjectDB.generation` to
``update_refs``, which refuses the write when a collection happened since, and the writer then
calls :meth:`ObjectDB.forget` and writes every object it needs again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from .compression import (
    COMMIT_DICTIONARY_SIZE,
    DICTIONARY_PREFIX,
    DICTIONARY_SIZE,
    ZSTD_MAGIC,
    DictionaryConflict,
    MissingDictionary,
    dict_id_of,
    has_dictionary,
    pack_many,
    register_dictionary,
    train_dictionary,
    unpack,
)
from .errors import CorruptObject, MissingObject
from .hashing import ObjectId, from_hex, hash_bytes, to_hex
from .objects import (
    DOC_PREFIX,
    NOT_A_DOC,
    Blob,
    Chunked,
    Doc,
    ListNode,
    StoredObject,
    ZstdDictionary,
    decode,
    decode_plain,
    doc_value,
    encode_with_id,
    kind_of,
)
from .stores.base import Store
from .structures.chunking import CHUNKER_KEY, Chunker, chunker_for

_NODE_CACHE = 200_000
_BYTES_CACHE = 64 * 1024 * 1024
_LARGE = 1024 * 1024
"""Documents and blobs larger than this are not kept as bytes."""
_KNOWN_LIMIT = 4_000_000
_UNHOMED_LIMIT = 4096
"""Packed leaves a handle holds on to before it names their messages (see ``_unhomed``)."""
FORMAT_KEY = "core.format"
"""The config key naming a repository's storage format ("1": a leaf names messages by id;
"2": a leaf holds the messages, objects compressed)."""
CURRENT_FORMAT = 2
DICTIONARY_KEY = "core.zstd-dictionary"
"""Config key: hex id of the ``zdict`` object writers compress with (format 2; a gc root)."""
TRAIN_AFTER = 128 * 1024
"""Bytes of new messages a handle collects before it trains the repository's dictionary."""
COMMIT_DICTIONARY_KEY = "core.zstd-commit-dictionary"
"""Config key: hex id of the ``zdict`` object writers compress commits with (a gc root)."""
COMMIT_TRAIN_AFTER = 32 * 1024
"""Bytes of new commits a handle collects before it trains the repository's commit dictionary
(about 50 LangGraph checkpoints; a dictionary trained on 50 of them compresses the next ones as
well as one trained on 200)."""
_COMMIT_MIN_SIZE = 160
"""Commits from this size on are sampled and compressed. A chat turn's commit (~126 bytes, two
hashes and little else) would take 99 with the dictionary, but compressing it cost ~8 % of a
100-message commit's CPU (`benchmarks/bench_commit_ab.py`): a repository whose commits are
all smaller trains no commit dictionary. A framework's commits carry more metadata."""
_ID_TRIES = 16
"""Ids a dictionary is trained with, at most, to find one no other dictionary holds."""
_COMMIT_PREFIX = b"\x97\xa6commit"
"""How every plain commit's bytes begin: ``["commit", ...]``, an array of seven."""
UPGRADE_MAP_KEY = "core.upgrade-map"
"""Config key: hex id of the map from format-1 commit ids to the commits that replaced them
(written by ``statevcs upgrade``; a gc root)."""


def load_dictionary(store: Store, dict_id: int) -> None:
    """Register the repository's zstd dictionary ``dict_id`` in this process (from the store)."""
    key = f"{DICTIONARY_PREFIX}{dict_id:08x}"
    found = store.config_get(key) or store.config_get(DICTIONARY_KEY)
    if not found:
        raise CorruptObject(
            "(dictionary)",
            f"objects name zstd dictionary {dict_id:08x}, but the config has no {key}; "
            "restore the repository's config from a backup",
        )
    object_id = named_object(found, key)
    data = store.get_many([object_id]).get(object_id)
    if data is None:
        raise MissingObject(found)
    obj = decode(object_id, data)
    if not isinstance(obj, ZstdDictionary):
        raise CorruptObject(found, f"expected a zstd dictionary, found {kind_of(obj)}")
    try:
        registered = register_dictionary(obj.data, store.identity)
    except ValueError as exc:
        raise CorruptObject(found, str(exc)) from None
    if registered != dict_id:
        raise CorruptObject(found, f"it holds dictionary {registered:08x}, not {dict_id:08x}")


def named_object(found: str, key: str) -> ObjectId:
    """The object id config key ``key`` holds (``found``); ``CorruptObject`` if it holds none."""
    try:
        return from_hex(found)
    except ValueError:
        raise CorruptObject(
            "(config)",
            f"config key {key} holds {found[:80]!r}, not an object id; restore the repository's "
            "config from a backup",
        ) from None


def unpack_stored(store: Store, object_id: ObjectId, data: bytes) -> bytes:
    """The plain bytes of an object read from ``store`` (loading its dictionary if needed)."""
    if data[:4] != ZSTD_MAGIC:
        return data
    scope = store.identity  # the repository's dictionaries, never another's with the same id
    try:
        return unpack(object_id, data, scope)
    except MissingDictionary as exc:
        load_dictionary(store, exc.dict_id)
        return unpack(object_id, data, scope)


def decode_stored(store: Store, object_id: ObjectId, data: bytes) -> StoredObject:
    """:func:`~statevcs.objects.decode` of bytes read from ``store`` (hash checked)."""
    return decode(object_id, unpack_stored(store, object_id, data))


class ObjectDB:
    """Reads and writes objects of one store with caching and integrity checks."""

    def __init__(self, store: Store, *, chunker: Chunker | None = None) -> None:
        self.store = store
        self._nodes: OrderedDict[ObjectId, StoredObject] = OrderedDict()
        self._bytes: OrderedDict[ObjectId, bytes] = OrderedDict()
        self._bytes_size = 0
        self.known: set[ObjectId] = set()
        self.large_values: dict[bytes, ObjectId] = {}
        self.generation = store.generation()
        """The gc generation :attr:`known` is valid for."""
        self._chunker = chunker
        self._homes: dict[ObjectId, ObjectId] = {}
        """Message id -> the packed leaf holding it (messages of format 2 are not objects)."""
        self._unhomed: dict[ObjectId, ListNode] = {}
        """Packed leaves read or written whose messages :attr:`_homes` does not name yet: the
        map is filled on its first use, so a read that never looks a message up by id (a
        checkout, a session's items) does not pay for it."""
        self._dictionary: int | None = None
        """The zstd dictionary writes use (0: none yet; None: not looked up)."""
        self._samples: list[bytes] = []
        self._sampled = 0
        self._train_after = TRAIN_AFTER
        self._commit_dictionary: int | None = None
        """The zstd dictionary commits are written with (0: none yet; None: not looked up)."""
        self._commit_samples: list[bytes] = []
        self._commit_sampled = 0
        self._commit_train_after = COMMIT_TRAIN_AFTER
        self._format: int | None = None

    @property
    def format(self) -> int:
        """The storage format this repository writes (1 or 2; see :data:`FORMAT_KEY`)."""
        if self._format is None:
            found = self.store.config_get(FORMAT_KEY)
            self._format = int(found) if found in ("1", "2") else CURRENT_FORMAT
        return self._format

    @format.setter
    def format(self, value: int) -> None:
        self._format = value

    @property
    def chunker(self) -> Chunker:
        """The chunker large values are cut with: the one given, else the repository's own."""
        # Read on first use: it is fixed when the repository is created, and most handles
        # never write a large value.
        if self._chunker is None:
            self._chunker = chunker_for(self.store.config_get(CHUNKER_KEY))
        return self._chunker

    # --- reading --------------------------------------------------------------

    def load(self, object_id: ObjectId) -> StoredObject:
        """Return the decoded object ``object_id`` (``MissingObject`` if absent)."""
        cached = self._nodes.get(object_id)
        if cached is not None:
            self._nodes.move_to_end(object_id)
            if type(cached) is ListNode and cached.values is not None:
                self._rehome(object_id, cached)
            return cached
        return self.load_many([object_id])[object_id]

    def load_many(self, ids: Iterable[ObjectId]) -> dict[ObjectId, StoredObject]:
        """Return every named object, reading the uncached ones in one batch."""
        result: dict[ObjectId, StoredObject] = {}
        wanted: list[ObjectId] = []
        for object_id in ids:
            cached = self._nodes.get(object_id)
            if cached is not None:
                result[object_id] = cached
                if type(cached) is ListNode and cached.values is not None:
                    self._rehome(object_id, cached)
            elif object_id in self._bytes:
                result[object_id] = decode(object_id, self._bytes[object_id], check_hash=False)
            else:
                wanted.append(object_id)
        if wanted and self._has_homes():
            homes = self._homes
            for object_id in [i for i in wanted if i in homes]:
                data = self._packed_bytes(object_id)
                if data is not None:
                    result[object_id] = decode(object_id, data, check_hash=False)
            wanted = [i for i in wanted if i not in result]
        if wanted:
            self._read(wanted, result)
        return result

    def _read(self, wanted: list[ObjectId], result: dict[ObjectId, StoredObject]) -> None:
        """Read ``wanted`` from the store into ``result``, each checked against its id, and
        remember them (list nodes as :meth:`_remember` does, its bookkeeping paid per batch:
        a checkout reads a conversation's nodes by the hundred)."""
        store = self.store
        found = store.get_many(wanted)
        scope = store.identity
        known, nodes = self.known, self._nodes
        leaves: dict[ObjectId, ListNode] = {}
        try:
            for object_id in wanted:
                data = found.get(object_id)
                if data is None:
                    result[object_id] = self._packed_doc(object_id)
                    continue
                if data[:4] == ZSTD_MAGIC:
                    try:
                        data = unpack(object_id, data, scope)
                    except MissingDictionary:  # loaded from the store, then read again
                        data = unpack_stored(store, object_id, data)
                obj = decode_plain(object_id, data)
                result[object_id] = obj
                if type(obj) is ListNode:
                    known.add(object_id)
                    nodes[object_id] = obj
                    if obj.values is not None:
                        leaves[object_id] = obj
                else:
                    self._remember(object_id, obj, data)
        finally:
            # Also when one of them fails: those read before it are cached, as one by one.
            while len(nodes) > _NODE_CACHE:
                nodes.popitem(last=False)
            if leaves:
                self._home_many(leaves)

    def prefetch(self, ids: Iterable[ObjectId]) -> None:
        """Read the uncached objects among ``ids`` in one batch, so that the loads which follow
        find them cached: one store query for objects that no one of them names another.

        Each is checked against its id as every read is (``CorruptObject``); absent ones are
        left to the load that names them, which raises or finds a message in a packed leaf.
        The chunks of the chunked values among them are read too, all in one more batch.
        """
        chunks = self._prefetch(ids)
        if chunks:
            self._prefetch(chunks)

    def _prefetch(self, ids: Iterable[ObjectId]) -> list[ObjectId]:
        """:meth:`prefetch` of ``ids`` alone; return the chunks of the chunked values read."""
        nodes, cache = self._nodes, self._bytes
        wanted = [i for i in dict.fromkeys(ids) if i not in nodes and i not in cache]
        chunks: list[ObjectId] = []
        if not wanted:
            return chunks
        store = self.store
        for object_id, data in store.get_many(wanted).items():
            if data[:4] == ZSTD_MAGIC:
                data = unpack_stored(store, object_id, data)
            if data[:5] != DOC_PREFIX:
                obj = decode_plain(object_id, data)
                self._remember(object_id, obj, data)
                if type(obj) is Chunked:
                    chunks.extend(obj.chunks)
            elif len(data) <= _LARGE:  # a document: checked now, decoded by its reader
                if hash_bytes(data) != object_id:
                    raise CorruptObject(to_hex(object_id), "its bytes do not hash to its id")
                self.known.add(object_id)
                if object_id not in cache:  # a thread sharing the handle may have read it
                    cache[object_id] = data
                    self._bytes_size += len(data)
        self._trim_bytes()
        return chunks

    def _packed_doc(self, object_id: ObjectId) -> Doc:
        """The document of a message a known packed leaf holds (``MissingObject`` if none)."""
        data = self._packed_bytes(object_id)
        if data is None:
            raise MissingObject(to_hex(object_id))
        doc = decode(object_id, data, check_hash=False)
        assert isinstance(doc, Doc)
        return doc

    def _packed_bytes(self, object_id: ObjectId) -> bytes | None:
        """The ``doc`` bytes of a message from the packed leaf known to hold it, else ``None``.

        Homes are only a hint: a leaf another process collected since (the message may still
        be an object of its own) drops the hint instead of failing the read.
        """
        leaf_id = self._homes.get(object_id) if self._has_homes() else None
        if leaf_id is None:
            leaf_id = self._cached_home(object_id)
            if leaf_id is None:
                return None
        try:
            leaf = self.load(leaf_id)
        except MissingObject:
            leaf = None
        if type(leaf) is ListNode and leaf.values is not None and object_id in leaf.ids:
            value = leaf.values[leaf.ids.index(object_id)]
            if value is not None:
                return DOC_PREFIX + value
        self._homes.pop(object_id, None)
        return None

    def _cached_home(self, object_id: ObjectId) -> ObjectId | None:
        """The cached packed leaf holding ``object_id`` when :attr:`_homes` forgot it (past
        ``_KNOWN_LIMIT`` names, the map drops its oldest half; a leaf still cached is not read
        again, so nothing names it again). A scan of the node cache, paid only by a lookup
        that would otherwise fail."""
        for leaf_id, node in list(self._nodes.items()):
            if type(node) is ListNode and node.values is not None and object_id in node.ids:
                self._rehome(leaf_id, node)
                return leaf_id
        return None

    def read_ahead(self, starts: Sequence[ObjectId], limit: int) -> dict[ObjectId, StoredObject]:
        """Return ``starts`` and up to ``limit`` objects the store offers below them (history).

        Each object is checked against its id like every read; every start must exist
        (``MissingObject``), the others are whatever the store's index had at hand.
        """
        found = self.store.ancestry(starts, limit)
        for start in starts:
            if start not in found:
                raise MissingObject(to_hex(start))
        result: dict[ObjectId, StoredObject] = {}
        for object_id, data in found.items():
            cached = self._nodes.get(object_id)
            if cached is None:
                data = unpack_stored(self.store, object_id, data)
                cached = decode(object_id, data)
                self._remember(object_id, cached, data)
            result[object_id] = cached
        return result

    def load_values(self, ids: Iterable[ObjectId]) -> dict[ObjectId, Doc | Blob]:
        """Return documents or blobs, reassembling chunked ones."""
        loaded = self.load_many(ids)
        values: dict[ObjectId, Doc | Blob] = {}
        for object_id, obj in loaded.items():
            if isinstance(obj, Chunked):
                obj = self._reassemble(object_id, obj)
            if not isinstance(obj, (Doc, Blob)):
                raise CorruptObject(
                    to_hex(object_id), f"expected a document or blob, found {type(obj).__name__}"
                )
            values[object_id] = obj
        return values

    def load_docs(self, ids: Sequence[ObjectId]) -> list[Any]:
        """Return the value of each document ``ids`` names, in order (see :meth:`iter_docs`)."""
        return list(self.iter_docs(ids))

    def iter_docs(self, ids: Sequence[ObjectId]) -> Iterator[Any]:
        """Yield the value of each document ``ids`` names, in order, read in one batch.

        Each occurrence is decoded afresh (an id named twice gives two equal, unshared
        values); chunked documents are reassembled; an id naming another kind of object
        raises ``CorruptObject``, an absent one ``MissingObject``. Bytes read from the store
        are checked against their ids, as by :meth:`load_many`. Values come one at a time so
        that the caller can use each while it is still in the CPU's cache.
        """
        cache = self._bytes
        nodes = self._nodes
        wanted = [i for i in dict.fromkeys(ids) if i not in cache and i not in nodes]
        if wanted and self._has_homes():
            wanted = self._from_leaves(wanted)
        fetched = self.store.get_many(wanted) if wanted else {}
        known = self.known
        try:
            for object_id in ids:
                data = fetched.pop(object_id, None)
                if data is not None:
                    data = unpack_stored(self.store, object_id, data)
                    value = doc_value(object_id, data)
                    # _remember inlined: this runs once per message of a restored thread.
                    known.add(object_id)
                    if len(data) <= _LARGE and object_id not in cache:
                        cache[object_id] = data
                        self._bytes_size += len(data)
                else:
                    data = cache.get(object_id)
                    if data is None:
                        yield self._other_doc(object_id)
                        continue
                    value = doc_value(object_id, data, check_hash=False)
                if value is NOT_A_DOC:
                    value = self._other_doc(object_id, data)
                yield value
        finally:
            self._trim_bytes()

    def _from_leaves(self, wanted: list[ObjectId]) -> list[ObjectId]:
        """Put the bytes of wanted messages held by known packed leaves into the bytes cache.

        Returns the ids still to be read from the store.
        """
        homes = self._homes
        leaf_ids = {homes[i] for i in wanted if i in homes}
        if not leaf_ids:
            return wanted
        try:
            leaves = self.load_many(leaf_ids)
        except MissingObject:  # collected by another process: read each that is left
            leaves = {}
            for leaf_id in leaf_ids:
                try:
                    leaves[leaf_id] = self.load(leaf_id)
                except MissingObject:
                    for item_id in wanted:
                        if homes.get(item_id) == leaf_id:
                            homes.pop(item_id, None)
        for leaf in leaves.values():
            if isinstance(leaf, ListNode):
                self._cache_leaf(leaf)
        return [i for i in wanted if i not in self._bytes]

    def _cache_leaf(self, leaf: ListNode) -> None:
        """Keep the ``doc`` bytes of a packed leaf's messages, so they read like objects."""
        if leaf.values is None:
            return
        cache = self._bytes
        for item_id, value in zip(leaf.ids, leaf.values):
            if value is not None and item_id not in cache:
                cache[item_id] = DOC_PREFIX + value
                self._bytes_size += len(value) + 5
        self._trim_bytes()

    def canonical_many(self, ids: Sequence[ObjectId]) -> dict[ObjectId, bytes]:
        """Return the plain (uncompressed, hash-checked) bytes of objects and packed messages."""
        result: dict[ObjectId, bytes] = {}
        wanted: list[ObjectId] = []
        for object_id in dict.fromkeys(ids):
            data = self._bytes.get(object_id)
            if data is None:
                wanted.append(object_id)
            else:
                result[object_id] = data
        if wanted and self._has_homes():
            remaining = self._from_leaves(wanted)
            for object_id in wanted:
                data = self._bytes.get(object_id)
                if data is not None:
                    result[object_id] = data
            wanted = remaining
        if wanted:
            found = self.store.get_many(wanted)
            for object_id in wanted:
                if object_id in result:
                    continue
                data = found.get(object_id)
                if data is None:
                    # A packed message whose bytes the (bounded) cache let go already.
                    data = self._packed_bytes(object_id)
                    if data is None:
                        raise MissingObject(to_hex(object_id))
                    result[object_id] = data
                    continue
                data = unpack_stored(self.store, object_id, data)
                obj = decode(object_id, data)
                self._remember(object_id, obj, data)
                result[object_id] = data
        return result

    def _other_doc(self, object_id: ObjectId, data: bytes | None = None) -> Any:
        """The value of a document that is not a plain ``doc`` object (chunked), else raise."""
        if data is None:
            obj = self.load(object_id)
        else:
            # Already checked against its id by doc_value.
            obj = decode(object_id, data, check_hash=False)
            if self._nodes.get(object_id) is None and object_id not in self._bytes:
                self._remember(object_id, obj, data)
        if isinstance(obj, Chunked):
            obj = self._reassemble(object_id, obj)
        if not isinstance(obj, Doc):
            raise CorruptObject(to_hex(object_id), f"expected a document, found {kind_of(obj)}")
        return obj.value

    def _reassemble(self, object_id: ObjectId, chunked: Chunked) -> StoredObject:
        parts = self.load_many(chunked.chunks)
        data = b"".join(
            part.data if isinstance(part, Blob) else b""
            for part in (parts[c] for c in chunked.chunks)
        )
        if len(data) != chunked.size:
            raise CorruptObject(to_hex(object_id), "its chunks do not add up to its size")
        # Integrity is transitive: the chunked id covers chunk ids, which cover chunk bytes.
        return decode(object_id, data, check_hash=False)

    def _remember(self, object_id: ObjectId, obj: StoredObject, data: bytes) -> None:
        self.known.add(object_id)
        if type(obj) is ListNode:  # the commonest case first: a read walks trees
            if obj.values is not None:
                self._home(object_id, obj)
            nodes = self._nodes
            nodes[object_id] = obj
            if len(nodes) > _NODE_CACHE:
                nodes.popitem(last=False)
            return
        if isinstance(obj, (Doc, Blob)):
            if len(data) > _LARGE or object_id in self._bytes:
                return
            self._bytes[object_id] = data
            self._bytes_size += len(data)
            self._trim_bytes()
        else:
            self._nodes[object_id] = obj
            if len(self._nodes) > _NODE_CACHE:
                self._nodes.popitem(last=False)

    def _trim_bytes(self) -> None:
        while self._bytes_size > _BYTES_CACHE:
            try:
                _, old = self._bytes.popitem(last=False)
            except KeyError:
                # Empty, yet counted over the limit: threads sharing this handle raced on the
                # count (an unlocked +=). Start it again from what the cache holds: nothing.
                self._bytes_size = 0
                return
            self._bytes_size -= len(old)

    def _rehome(self, leaf_id: ObjectId, leaf: ListNode) -> None:
        """Name a cached packed leaf as its messages' home again if the map forgot it."""
        ids = leaf.ids
        if ids and leaf_id not in self._unhomed and self._homes.get(ids[-1]) != leaf_id:
            self._home(leaf_id, leaf)

    def _home(self, leaf_id: ObjectId, leaf: ListNode) -> None:
        self._home_many({leaf_id: leaf})

    def _home_many(self, leaves: Mapping[ObjectId, ListNode]) -> None:
        """Note packed ``leaves`` as holding their messages (named in :attr:`_homes` lazily)."""
        if self._format != CURRENT_FORMAT:
            # Only an upgrade puts packed leaves in a repository (another process's, or one
            # killed before it set core.format): writing format 1 onto them would name
            # messages that only a packed leaf holds, so this handle writes format 2 now,
            # also when it has not read core.format yet (None: it would read "1" later).
            self._format = CURRENT_FORMAT
        homes = self._homes
        if len(homes) > _KNOWN_LIMIT:
            # Forget the oldest half now, as the leaf is read, never while pending leaves are
            # named: the leaves a lookup has just read must all name their messages (a leaf
            # read again after this is named again, see _rehome). The map may pass the limit
            # by one batch of pending leaves.
            for key in list(islice(homes, len(homes) // 2)):
                homes.pop(key, None)
        unhomed = self._unhomed
        unhomed.update(leaves)
        if len(unhomed) > _UNHOMED_LIMIT:
            self._has_homes()

    def _has_homes(self) -> bool:
        """Name the messages of every packed leaf seen since the last call in :attr:`_homes`;
        return whether it names any."""
        homes = self._homes
        unhomed = self._unhomed
        if unhomed:
            # Threads may read through one handle at once: iterate over a copy (another may
            # add a leaf meanwhile), and drop each leaf only once it is named, so a thread
            # finding the pending map empty finds every leaf it read named.
            for leaf_id, leaf in list(unhomed.items()):
                values = leaf.values
                if values is not None and None in values:  # large messages stay objects
                    homes.update({i: leaf_id for i, v in zip(leaf.ids, values) if v is not None})
                else:
                    homes.update(dict.fromkeys(leaf.ids, leaf_id))
                unhomed.pop(leaf_id, None)
        return bool(homes)

    def remember(self, object_id: ObjectId, obj: StoredObject) -> None:
        """Cache a freshly built structural object (it need not be stored yet)."""
        if type(obj) is ListNode and obj.values is not None:
            self._home(object_id, obj)
        self._nodes[object_id] = obj
        if len(self._nodes) > _NODE_CACHE:
            self._nodes.popitem(last=False)

    # --- writing --------------------------------------------------------------

    def unknown(self, objects: Mapping[ObjectId, bytes]) -> dict[ObjectId, bytes]:
        """Return the subset of ``objects`` not known to be stored, as they are to be stored.

        ``objects`` holds plain encodings; what is returned is compressed where it pays
        (format 2). Documents among them stay in the bytes cache, so the leaf that packs them
        when it closes needs no read.
        """
        known = self.known
        fresh = {k: v for k, v in objects.items() if k not in known}
        cache = self._bytes
        added = 0
        for object_id, data in fresh.items():
            if data[:5] == DOC_PREFIX and len(data) <= _LARGE and object_id not in cache:
                cache[object_id] = data
                added += len(data)
        if added:
            self._bytes_size += added
            self._trim_bytes()
        if (self._format if self._format is not None else self.format) < 2:
            return fresh
        dictionary = self._dictionary
        if not dictionary:  # none looked up yet (None), or none trained yet (0)
            dictionary = self._write_dictionary() or self._sample(fresh)
        return pack_many(fresh, dictionary, scope=self.store.identity)

    def _write_dictionary(self) -> int:
        """The dictionary this repository compresses with (0: none trained yet)."""
        if self._dictionary is None:
            found = self.store.config_get(DICTIONARY_KEY)
            self._dictionary = (
                0 if not found else self._register(named_object(found, DICTIONARY_KEY))
            )
        return self._dictionary

    def _register(self, object_id: ObjectId) -> int:
        data = self.store.get_many([object_id]).get(object_id)
        if data is None:
            raise MissingObject(to_hex(object_id))
        obj = decode(object_id, data)
        if not isinstance(obj, ZstdDictionary):
            raise CorruptObject(
                to_hex(object_id), f"expected a zstd dictionary, found {kind_of(obj)}"
            )
        try:
            return register_dictionary(obj.data, self.store.identity)
        except ValueError as exc:
            raise CorruptObject(to_hex(object_id), str(exc)) from None

    def _sample(self, fresh: Mapping[ObjectId, bytes]) -> int:
        """Collect new messages; once there are enough, train the repository's dictionary."""
        for data in fresh.values():
            if data[:5] == DOC_PREFIX:
                self._samples.append(data)
                self._sampled += len(data)
        if self._sampled < self._train_after:
            return 0
        samples, self._samples, self._sampled = self._samples, [], 0
        self._dictionary = self._train(samples, DICTIONARY_KEY, DICTIONARY_SIZE)
        if not self._dictionary:
            self._train_after *= 2  # too little to learn from yet: try again later
        return self._dictionary

    def _train(self, samples: list[bytes], key: str, size: int, for_commits: bool = False) -> int:
        """Train a dictionary on ``samples``, store it and name it under ``key``; its id.

        The dictionary is stored and named in the config before any object uses it, so every
        reader can find it; two handles training at once leave two dictionaries, both kept
        readable, and both then use the one named first. 0 when zstd finds too little to learn.
        """
        trained = train_dictionary(samples, size, for_commits=for_commits)
        for salt in range(1, _ID_TRIES):
            # Ids are drawn from a hash of the samples: one another dictionary of this
            # repository holds (another handle trained it) is not taken.
            if trained is None or not self._id_taken(trained):
                break
            trained = train_dictionary(samples, size, for_commits=for_commits, salt=salt)
        if trained is None:
            return 0
        dictionary_id, encoded = encode_with_id(ZstdDictionary(trained))
        self.store.put_many({dictionary_id: encoded})
        dict_id = register_dictionary(trained, self.store.identity)
        self.store.config_set(f"{DICTIONARY_PREFIX}{dict_id:08x}", to_hex(dictionary_id))
        found = self.store.config_get(key)
        if found:  # another handle trained one first: use theirs, keep ours readable
            return self._register(named_object(found, key))
        self.store.config_set(key, to_hex(dictionary_id))
        return dict_id

    def _id_taken(self, trained: bytes) -> bool:
        """Whether another dictionary of this repository holds ``trained``'s id (registered
        here, or named in its config)."""
        dict_id = dict_id_of(trained)
        scope = self.store.identity
        if has_dictionary(dict_id, scope=scope) and not has_dictionary(dict_id, trained, scope):
            return True
        named = self.store.config_get(f"{DICTIONARY_PREFIX}{dict_id:08x}")
        return named is not None and named != to_hex(encode_with_id(ZstdDictionary(trained))[0])

    def pack_commits(self, objects: Mapping[ObjectId, bytes]) -> Mapping[ObjectId, bytes]:
        """``objects`` with their plain commits compressed with the commit dictionary.

        Format 2 only, and once the repository has one: a handle trains it on the first
        :data:`COMMIT_TRAIN_AFTER` bytes of commits it writes (until then commits stay plain).
        Commits compress poorly alone (their metadata repeats from one commit to the next, not
        within one), so they get a dictionary of their own, with an id that tells stores the
        frames hold commits (:func:`~statevcs.compression.is_commit_dictionary`).
        """
        commits = {k: v for k, v in objects.items() if v[:8] == _COMMIT_PREFIX}
        if not commits or (self._format if self._format is not None else self.format) < 2:
            return objects
        dictionary = self._commit_dictionary
        try:
            if dictionary is None:
                found = self.store.config_get(COMMIT_DICTIONARY_KEY)
                dictionary = self._commit_dictionary = (
                    0 if not found else self._register(named_object(found, COMMIT_DICTIONARY_KEY))
                )
            if not dictionary:
                dictionary = self._sample_commits(commits)
        except DictionaryConflict:
            # The repository names two dictionaries under this id: compressing with either
            # could make the commits unreadable elsewhere, so this handle writes them plain.
            dictionary = self._commit_dictionary = -1
        if dictionary <= 0:
            return objects
        packed = pack_many(
            commits, dictionary, min_size=_COMMIT_MIN_SIZE, scope=self.store.identity
        )
        return {**objects, **packed}

    def _sample_commits(self, commits: Mapping[ObjectId, bytes]) -> int:
        """Collect new commits; once there are enough, train the commit dictionary."""
        for data in commits.values():
            if len(data) >= _COMMIT_MIN_SIZE:  # only what it would compress
                self._commit_samples.append(data)
                self._commit_sampled += len(data)
        if self._commit_sampled < self._commit_train_after:
            return 0
        samples, self._commit_samples, self._commit_sampled = self._commit_samples, [], 0
        dict_id = self._train(samples, COMMIT_DICTIONARY_KEY, COMMIT_DICTIONARY_SIZE, True)
        if not dict_id:
            self._commit_train_after *= 2
        self._commit_dictionary = dict_id
        return dict_id

    def mark_stored(self, ids: Iterable[ObjectId]) -> None:
        """Record that ``ids`` are now in the store."""
        if len(self.known) > _KNOWN_LIMIT:
            self.known.clear()
        self.known.update(ids)

    def forget(self, generation: int | None = None) -> None:
        """Drop every cache (after garbage collection deleted objects).

        The caches become valid for ``generation`` (read from the store when not given).
        """
        self.generation = self.store.generation() if generation is None else generation
        self._nodes.clear()
        self._bytes.clear()
        self._bytes_size = 0
        self.known.clear()
        self.large_values.clear()
        self._homes.clear()
        self._unhomed.clear()
