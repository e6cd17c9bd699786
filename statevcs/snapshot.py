"""The framework-neutral :class:`Snapshot` and its mapping to and from stored objects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import msgpack
from blake3 import blake3

from .documents import MAX_DOCUMENT_DEPTH, check_depth, may_be_too_deep, refusal, short_repr
from .errors import CorruptObject, MissingObject, SerializationError
from .hashing import ObjectId, hash_bytes, to_hex
from .objectdb import ObjectDB
from .objects import (
    DOC_PREFIX,
    ORDERED_SNAPSHOT_FORMAT,
    PACKED_SNAPSHOT_FORMAT,
    SNAPSHOT_FORMAT,
    Blob,
    Doc,
    Inline,
    MapRef,
    MapValue,
    SnapshotObject,
    encode_doc,
    encode_with_id,
)
from .objects import decode as decode_object
from .serializers import StateSerializer, serializer_for
from .structures import chunking, prolly
from .structures.maps import INLINE_LIMIT, build_map, read_map

if TYPE_CHECKING:
    from .model import Snapshot


@dataclass(frozen=True, slots=True)
class StoredMessages:
    """A stored conversation: a prolly tree of closed leaves plus the open tail's ids.

    ``known_ids`` holds every message id when it is at hand; an incremental append does not
    build it (that would be O(n) per commit), and :meth:`ids` reads it back when needed.
    """

    root: ObjectId
    tree_length: int
    tail: tuple[ObjectId, ...]
    known_ids: list[ObjectId] | None = None

    @property
    def length(self) -> int:
        """Number of messages."""
        return self.tree_length + len(self.tail)

    def ids(self, db: ObjectDB) -> list[ObjectId]:
        """Return every message id in order."""
        if self.known_ids is not None:
            return self.known_ids
        return [*prolly.items(db, self.root), *self.tail]


@dataclass(frozen=True, slots=True)
class MessageBase:
    """A stored conversation whose first ``keep`` messages the new snapshot shares unchanged."""

    previous: StoredMessages
    keep: int


@dataclass(frozen=True, slots=True)
class WrittenSnapshot:
    """What :func:`write_snapshot` produced: ids plus the encoded objects to store."""

    snapshot_id: ObjectId
    messages: StoredMessages
    objects: dict[ObjectId, bytes]


def doc_values(
    db: ObjectDB, out: Mapping[ObjectId, bytes], ids: Sequence[ObjectId]
) -> list[bytes | None]:
    """Return what a packed leaf holds for each message id: its msgpack, or ``None`` when the
    message is stored out of line (a large, chunked document)."""
    missing = [i for i in ids if i not in out]
    found = db.canonical_many(missing) if missing else {}
    values: list[bytes | None] = []
    for item_id in ids:
        data = out.get(item_id)
        if data is None:
            data = found[item_id]
        values.append(data[5:] if data[:5] == DOC_PREFIX else None)
    return values


class _Packer:
    """Gives the prolly tree the values of the messages it packs into leaves (format 2)."""

    def __init__(self, db: ObjectDB, out: Mapping[ObjectId, bytes]) -> None:
        self.db = db
        self.out = out

    def __call__(self, ids: Sequence[ObjectId]) -> list[bytes | None]:
        return doc_values(self.db, self.out, ids)


def _splice(
    db: ObjectDB,
    out: dict[ObjectId, bytes],
    root: ObjectId,
    keep: int,
    new_ids: Sequence[ObjectId],
) -> ObjectId:
    if db.format < 2:
        return prolly.splice(db, root, keep, new_ids, out)
    packer = _Packer(db, out)
    return prolly.splice(db, root, keep, new_ids, out, packer(new_ids), packer)


def _extend_tree(
    db: ObjectDB,
    out: dict[ObjectId, bytes],
    root: ObjectId,
    tree_length: int,
    pending: Sequence[ObjectId],
) -> StoredMessages:
    """Move the closed leaves of ``pending`` (everything after the tree) into the tree."""
    closed = prolly.closed_length(pending)
    if closed:
        root = _splice(db, out, root, tree_length, pending[:closed])
    return StoredMessages(root, tree_length + closed, tuple(pending[closed:]))


def _arrange(
    db: ObjectDB,
    out: dict[ObjectId, bytes],
    previous: StoredMessages,
    keep: int,
    ids: list[ObjectId],
) -> StoredMessages:
    """Arrange ``ids`` (whose first ``keep`` equal ``previous``'s) as tree + open tail."""
    if keep >= previous.tree_length:
        extended = _extend_tree(
            db, out, previous.root, previous.tree_length, ids[previous.tree_length :]
        )
        return StoredMessages(extended.root, extended.tree_length, extended.tail, ids)
    closed = prolly.closed_length(ids)
    if keep <= closed:
        root = _splice(db, out, previous.root, keep, ids[keep:closed])
    else:
        root = _splice(db, out, previous.root, closed, ())
    return StoredMessages(root, closed, tuple(ids[closed:]), ids)


def store_messages(
    db: ObjectDB,
    ids: list[ObjectId],
    out: dict[ObjectId, bytes],
    previous: StoredMessages | None = None,
) -> StoredMessages:
    """Arrange every message id as (tree of closed leaves, open tail), reusing ``previous``.

    The tree is spliced onto ``previous`` after the longest common prefix, so appends touch it
    only when a leaf closes and rewrites only the paths after the first changed message.
    """
    if previous is None:
        closed = prolly.closed_length(ids)
        values = doc_values(db, out, ids[:closed]) if db.format >= 2 else None
        root = prolly.build(ids[:closed], out, db, values)
        return StoredMessages(root, closed, tuple(ids[closed:]), ids)
    return _arrange(db, out, previous, prolly.prefix_length(previous.ids(db), ids), ids)


def append_messages(
    db: ObjectDB,
    new_ids: list[ObjectId],
    out: dict[ObjectId, bytes],
    previous: StoredMessages,
    keep: int,
) -> StoredMessages:
    """Arrange ``previous``'s first ``keep`` messages plus ``new_ids`` in O(k + log n)."""
    tree_length = previous.tree_length
    if keep >= tree_length:
        # Only the open tail and the new ids matter: no O(n) id list is built.
        pending = [*previous.tail[: keep - tree_length], *new_ids]
        return _extend_tree(db, out, previous.root, tree_length, pending)
    return _arrange(db, out, previous, keep, [*previous.ids(db)[:keep], *new_ids])


def _drop_packed_docs(
    out: dict[ObjectId, bytes], new_ids: Sequence[ObjectId], tail: Sequence[ObjectId]
) -> None:
    """Keep a new message as a ``doc`` object only while it is in the open tail (format 2).

    A message that went straight into a closed leaf is stored there, inline; large ones stay
    out of line (their ``chunked`` objects are not ``doc`` encodings and are kept).
    """
    in_tail = set(tail)
    for item_id in new_ids:
        if item_id not in in_tail:
            data = out.get(item_id)
            if data is not None and data[:5] == DOC_PREFIX:
                del out[item_id]


def _keep_tail_docs(db: ObjectDB, out: dict[ObjectId, bytes], tail: Sequence[ObjectId]) -> None:
    """Store again as ``doc`` objects the tail's messages that only a packed leaf held.

    A message leaves a closed leaf for the open tail when the list is cut or changed before it
    (the leaf no longer closes where it did). The snapshot names tail messages by id only, so
    each must be an object of its own; one that never was (it went straight into a leaf) is
    written now, from the leaf or the cache.
    """
    known = db.known
    missing = [i for i in dict.fromkeys(tail) if i not in out and i not in known]
    if missing:
        for object_id, data in db.canonical_many(missing).items():
            if data[:5] == DOC_PREFIX:
                out[object_id] = data


def _doc_id(
    value: Any, path: str, db: ObjectDB, out: dict[ObjectId, bytes], *, message: bool = False
) -> ObjectId:
    try:
        data = _encode_document(value, path)
    except (TypeError, ValueError, OverflowError) as exc:
        raise refusal(value, path, exc) from None
    if message and len(data) > chunking.CHUNK_THRESHOLD:
        return _large_id(data, db, out)
    if not message and len(data) > db.chunker.value_threshold:
        return _large_id(data, db, out, value=True)
    object_id = hash_bytes(data)
    if object_id not in db.known:
        out[object_id] = data
    return object_id


def _large_id(
    data: bytes, db: ObjectDB, out: dict[ObjectId, bytes], *, value: bool = False
) -> ObjectId:
    """The id of ``data`` chunked (``value``: a state or extras value, cut as its chunker cuts
    values, which may differ from how it cuts a message of the same bytes)."""
    # Chunking is the slow part of a large value; a stored value seen before is found by the
    # (fast) hash of its whole encoding instead of being chunked again.
    digest = blake3(data).digest() + (b"v" if value else b"")
    cached = db.large_values.get(digest)
    if cached is not None and cached in db.known:
        return cached
    chunker = db.chunker
    object_id = chunker.chunk_value(data, out) if value else chunker.chunk(data, out)
    if len(db.large_values) > 10_000:
        db.large_values.clear()
    db.large_values[digest] = object_id
    return object_id


def _encode_document(value: Any, path: str) -> bytes:
    """Encode a message or extras value, refusing what could not be read back."""
    data = encode_doc(value)
    if may_be_too_deep(data):
        check_depth(value, path)
    return data


def fresh_copy(value: Any) -> Any:
    """Return an unshared copy of a decoded document (no Python recursion, unlike deepcopy)."""
    data = encode_doc(value)
    doc = decode_object(hash_bytes(data), data, check_hash=False)
    assert isinstance(doc, Doc)
    return doc.value


def encode_messages(
    messages: Sequence[Any], start: int, db: ObjectDB, out: dict[ObjectId, bytes]
) -> list[ObjectId]:
    """Encode ``messages[start:]`` into ``out``; return their ids (the commit hot path)."""
    ids: list[ObjectId] = []
    append = ids.append
    known = db.known
    threshold = chunking.CHUNK_THRESHOLD
    for index in range(start, len(messages)):
        message = messages[index]
        try:
            data = encode_doc(message)
        except (TypeError, ValueError, OverflowError):
            append(_doc_id(message, f"messages[{index}]", db, out, message=True))
            continue
        if len(data) > MAX_DOCUMENT_DEPTH and may_be_too_deep(data):
            check_depth(message, f"messages[{index}]")
        if len(data) > threshold:
            append(_large_id(data, db, out))
            continue
        object_id = blake3(data).digest()
        if object_id not in known:
            out[object_id] = data
        append(object_id)
    return ids


def _check_shape(snapshot: Snapshot) -> None:
    """Refuse a snapshot whose fields could not be stored as they are (``model_construct``)."""
    if not isinstance(snapshot.kind, str):
        raise SerializationError(
            f"the snapshot's kind is {_a_type(snapshot.kind)}; it must be a string naming the "
            "adapter (such as 'dict')",
            "kind",
        )
    _check_text(snapshot.kind, "the snapshot's kind", "kind")
    messages = snapshot.messages
    # Integrations pass their own sequences (LangGraph's log of new messages); text and
    # tuples would read back as something else (a list of characters, a list). A plain list
    # or dict is checked by its type alone: an ABC check costs microseconds on every commit.
    if type(messages) is not list and (
        not isinstance(messages, Sequence) or isinstance(messages, (str, bytes, tuple))
    ):
        raise SerializationError(
            f"the snapshot's messages are {_a_type(messages)}; they must be a list",
            "messages",
        )
    for field in ("state", "extras"):
        value = getattr(snapshot, field)
        if type(value) is not dict and not isinstance(value, Mapping):
            raise SerializationError(
                f"the snapshot's {field} is {_a_type(value)}; it must be a dict", field
            )


def check_codec_name(serializer: StateSerializer) -> None:
    """Refuse a serializer whose ``name`` a snapshot could not record (and be read back with)."""
    name = serializer.name
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"serializer.name must be a non-empty str (it is recorded in every snapshot), got "
            f"{short_repr(name)}"
        )
    _check_text(name, "serializer.name", "serializer.name")


def _check_key(key: object, field: str) -> None:
    """Refuse a state or extras key that is not a string, or not valid Unicode."""
    if not isinstance(key, str):
        shown = short_repr(key)
        raise SerializationError(
            f"{field} key {shown} is {_a_type(key)}; {field} keys must be strings",
            f"{field}[{shown}]",
        )
    if not key.isascii():  # the message is only built for a key that may need it
        _check_text(key, f"{field} key {short_repr(key)}", f"{field}[{short_repr(key)}]")


def _check_text(text: str, what: str, path: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise SerializationError(
                f"{what} contains a lone surrogate, which is not valid Unicode; remove it or "
                "decode the original bytes with errors='replace'",
                path,
            ) from None


def _a_type(value: object) -> str:
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


_EMPTY_MAP: MapRef = build_map({}, {})
"""The map of no entries (kept inline in its snapshot): built once, not on every commit."""


def write_snapshot(
    db: ObjectDB,
    snapshot: Snapshot,
    serializer: StateSerializer,
    *,
    base: MessageBase | None = None,
    previous: StoredMessages | None = None,
    exclude_state: frozenset[str] = frozenset(),
) -> WrittenSnapshot:
    """Encode ``snapshot`` into objects, re-encoding only messages ``base`` cannot vouch for.

    Without ``base`` every message is encoded; the tree is then spliced onto ``previous`` (a
    stored conversation) after their common prefix, or built from scratch.
    Raises ``SerializationError`` (naming the key or message) before anything is written.
    """
    _check_shape(snapshot)
    check_codec_name(serializer)
    out: dict[ObjectId, bytes] = {}
    messages = snapshot.messages
    if base is not None and 0 <= base.keep <= min(base.previous.length, len(messages)):
        new_ids = encode_messages(messages, base.keep, db, out)
        stored = append_messages(db, new_ids, out, base.previous, base.keep)
    else:
        new_ids = encode_messages(messages, 0, db, out)
        stored = store_messages(db, new_ids, out, previous)
    packed = db.format >= 2
    if packed:
        _drop_packed_docs(out, new_ids, stored.tail)
        _keep_tail_docs(db, out, stored.tail)
    state_values: dict[str, MapValue] = {}
    for key, value in snapshot.state.items():
        if key in exclude_state:
            continue
        _check_key(key, "state")
        data = serializer.serialize(value, f"state[{key!r}]")
        if len(data) <= INLINE_LIMIT:
            state_values[key] = Inline(data)
            continue
        object_id, encoded = encode_with_id(Blob(data))
        if len(encoded) > db.chunker.value_threshold:
            object_id = _large_id(encoded, db, out, value=True)
        elif object_id not in db.known:
            out[object_id] = encoded
        state_values[key] = object_id
    extras_values: dict[str, MapValue] = {}
    for key, value in snapshot.extras.items():
        _check_key(key, "extras")
        path = f"extras[{key!r}]"
        # Whether a value is inlined depends on its encoding alone, never on what this process
        # has cached, so the same content always gets the same snapshot id.
        encoded_doc: bytes | None
        try:
            encoded_doc = _encode_document(value, path)
        except (TypeError, ValueError, OverflowError):
            encoded_doc = None  # _doc_id raises the SerializationError that names the value
        if encoded_doc is not None and len(encoded_doc) <= INLINE_LIMIT:
            extras_values[key] = Inline(value)
        else:
            extras_values[key] = _doc_id(value, path, db, out)
    # Format 2 keeps a dict's key order (format 1 reads keys back sorted).
    state_order = key_order(list(state_values)) if packed else ()
    extras_order = key_order(list(extras_values)) if packed else ()
    if state_order or extras_order:
        version = ORDERED_SNAPSHOT_FORMAT
    else:
        version = PACKED_SNAPSHOT_FORMAT if packed else SNAPSHOT_FORMAT
    snapshot_object = SnapshotObject(
        kind=snapshot.kind,
        messages=stored.root,
        tail=stored.tail,
        state=build_map(state_values, out) if state_values else _EMPTY_MAP,
        extras=build_map(extras_values, out) if extras_values else _EMPTY_MAP,
        state_codec=serializer.name,
        version=version,
        state_order=state_order,
        extras_order=extras_order,
    )
    snapshot_id, encoded = encode_with_id(snapshot_object)
    out[snapshot_id] = encoded
    return WrittenSnapshot(snapshot_id, stored, out)


def key_order(keys: Sequence[str]) -> tuple[int, ...]:
    """Where each of ``keys`` (in committed order) sits among them sorted; ``()`` if sorted."""
    ranked = sorted(keys)
    if ranked == list(keys):
        return ()
    position = {key: index for index, key in enumerate(ranked)}
    return tuple(position[key] for key in keys)


def in_committed_order(
    entries: dict[str, MapValue], order: Sequence[int], what: str, where: str = "(snapshot)"
) -> dict[str, MapValue]:
    """``entries`` (a map read back, sorted by key) in the order ``order`` recorded.

    ``where`` names the snapshot in the ``CorruptObject`` raised for an order that does not
    cover the map.
    """
    if not order:
        return entries
    keys = list(entries)
    if len(order) != len(keys):
        raise CorruptObject(
            where,
            f"its {what} key order names {len(order)} keys where its {what} map holds {len(keys)}",
        )
    return {keys[index]: entries[keys[index]] for index in order}


def state_entries(
    db: ObjectDB, obj: SnapshotObject, where: str = "(snapshot)"
) -> dict[str, MapValue]:
    """A snapshot's state map, its keys in the order they were committed (``where``: the
    snapshot's name in errors)."""
    return in_committed_order(read_map(db, obj.state), obj.state_order, "state", where)


def extras_entries(
    db: ObjectDB, obj: SnapshotObject, where: str = "(snapshot)"
) -> dict[str, MapValue]:
    """A snapshot's extras map, its keys in the order they were committed (``where``: the
    snapshot's name in errors)."""
    return in_committed_order(read_map(db, obj.extras), obj.extras_order, "extras", where)


@dataclass(frozen=True, slots=True)
class ReadSnapshot:
    """A snapshot read back from storage, with the ids needed for incremental commits."""

    snapshot: Snapshot
    snapshot_id: ObjectId
    messages: StoredMessages
    state_codec: str


def load_snapshot_object(db: ObjectDB, snapshot_id: ObjectId) -> SnapshotObject:
    """Load a snapshot object, raising ``CorruptObject`` if the id names something else."""
    obj = db.load(snapshot_id)
    if not isinstance(obj, SnapshotObject):
        raise CorruptObject(to_hex(snapshot_id), f"expected a snapshot, found {type(obj).__name__}")
    return obj


def read_values(
    db: ObjectDB, entries: Mapping[str, MapValue], serializer: StateSerializer | None
) -> dict[str, Any]:
    """Decode a map's values: documents as-is, serialized state through ``serializer``."""
    values = db.load_values(v for v in entries.values() if isinstance(v, bytes))
    result: dict[str, Any] = {}
    for key, entry in entries.items():
        if isinstance(entry, Inline):
            if serializer is None:
                # Inline documents live in a cached node: hand out a private copy.
                result[key] = fresh_copy(entry.value)
            elif isinstance(entry.value, bytes):
                result[key] = serializer.deserialize(entry.value, f"state[{key!r}]")
            else:
                raise CorruptObject("(inline)", f"state[{key!r}] should hold serialized bytes")
            continue
        value = values[entry]
        if isinstance(value, Doc):
            result[key] = value.value
        elif serializer is None:
            raise CorruptObject(to_hex(entry), f"extras[{key!r}] should be a document")
        else:
            result[key] = serializer.deserialize(value.data, f"state[{key!r}]")
    return result


class MessageDecoder(Protocol):
    """Builds the messages of a checkout as they are decoded (for example change-tracked
    copies, see :class:`statevcs.tracking.TrackedDecoder`), instead of a copy made afterwards."""

    def decode(self, data: bytes, index: int) -> Any:
        """The message at position ``index`` from its msgpack (errors: any ``Exception``)."""
        ...

    def adopt(self, value: Any, index: int) -> Any:
        """The message at position ``index`` from its value decoded elsewhere."""
        ...

    def collect(self, messages: list[Any]) -> list[Any]:
        """The conversation list to hand out, holding ``messages`` in order."""
        ...


def read_snapshot(
    db: ObjectDB,
    snapshot_id: ObjectId,
    serializer: StateSerializer,
    decoder: MessageDecoder | None = None,
) -> ReadSnapshot:
    """Read a snapshot back into fresh Python objects (messages built by ``decoder``, if any)."""
    obj = load_snapshot_object(db, snapshot_id)
    _prefetch_named(db, obj)
    where = to_hex(snapshot_id)
    state_map, extras_map = state_entries(db, obj, where), extras_entries(db, obj, where)
    # The next level in one read too: the maps' values and the tree root's children.
    db.prefetch(
        [
            *(v for v in state_map.values() if type(v) is bytes),
            *(v for v in extras_map.values() if type(v) is bytes),
            *prolly.child_ids(db, obj.messages),
        ]
    )
    messages, tree_ids, tail = read_conversation(db, obj, decoder)
    if decoder is None:
        messages.extend(tail)
    else:
        start = len(messages)
        adopt = decoder.adopt
        messages.extend(adopt(value, index) for index, value in enumerate(tail, start))
        messages = decoder.collect(messages)
    stored = StoredMessages(obj.messages, len(tree_ids), obj.tail, [*tree_ids, *obj.tail])
    codec = serializer_for(obj.state_codec, serializer)
    state = read_values(db, state_map, codec)
    extras = read_values(db, extras_map, None)
    from .model import Snapshot  # pydantic loads with the first snapshot read

    snapshot = Snapshot.model_construct(
        kind=obj.kind, messages=messages, state=state, extras=extras
    )
    return ReadSnapshot(snapshot, snapshot_id, stored, obj.state_codec)


_unpackb = msgpack.unpackb
_UNSET: Any = object()


def read_messages(
    db: ObjectDB, root: ObjectId, decoder: MessageDecoder | None = None
) -> tuple[list[Any], list[ObjectId]]:
    """Return the messages of a message tree (fresh, unshared values) and their ids.

    A packed leaf (format 2) is hash-checked once and its messages decoded straight from it;
    messages held elsewhere (format 1 leaves, large documents) are read in one batch.
    ``decoder`` (optional) builds each message instead of a plain decode.
    """
    messages: list[Any] = []
    ids: list[ObjectId] = []
    elsewhere: list[int] = []
    decode = None if decoder is None else decoder.decode
    chunked: list[ObjectId] = []  # out of line in a packed leaf: large, chunked messages
    for leaf in prolly.leaves(db, root):
        ids.extend(leaf.ids)
        if leaf.values is None:
            elsewhere.extend(range(len(messages), len(messages) + len(leaf.ids)))
            messages.extend([_UNSET] * len(leaf.ids))
            continue
        for value in leaf.values:
            if value is None:
                elsewhere.append(len(messages))
                chunked.append(ids[len(messages)])
                messages.append(_UNSET)
                continue
            try:
                messages.append(
                    _unpackb(value, raw=False, strict_map_key=False, use_list=True)
                    if decode is None
                    else decode(value, len(messages))
                )
            except Exception as exc:  # msgpack raises several unrelated exception types
                raise CorruptObject(
                    to_hex(root), f"a packed leaf holds a message that is not valid msgpack ({exc})"
                ) from None
    if chunked:
        db.prefetch(chunked)  # all of them and their chunks in two reads, not two each
    if elsewhere:
        values = db.iter_docs([ids[i] for i in elsewhere])
        for index, value in zip(elsewhere, values):
            messages[index] = value if decoder is None else decoder.adopt(value, index)
    return messages, ids


def _prefetch_named(db: ObjectDB, obj: SnapshotObject) -> None:
    """Read everything a snapshot names directly in one batch: tail, tree root, state, extras."""
    db.prefetch(
        [*obj.tail, obj.messages, *(ref for ref in (obj.state, obj.extras) if type(ref) is bytes)]
    )


def read_conversation(
    db: ObjectDB, obj: SnapshotObject, decoder: MessageDecoder | None = None
) -> tuple[list[Any], list[ObjectId], list[Any]]:
    """Return a stored snapshot's tree messages (see :func:`read_messages`), their ids, and
    its open tail's messages (plain values: ``decoder`` builds only the tree's).

    The tail is read first: every tail message is an object of its own, and looking them up
    after the tree would make the object database name every packed leaf's messages first,
    for nothing. A tail message only a packed leaf holds (written by early 0.2 development
    builds) is still found, through the tree's leaves.
    """
    _prefetch_named(db, obj)
    try:
        tail: list[Any] | None = db.load_docs(obj.tail)
    except MissingObject:
        tail = None
    messages, ids = read_messages(db, obj.messages, decoder)
    if tail is None:
        tail = db.load_docs(obj.tail)
    return messages, ids, tail


def stored_messages(db: ObjectDB, obj: SnapshotObject) -> StoredMessages:
    """Return the stored conversation of a snapshot object, with every message id."""
    tree_ids = prolly.items(db, obj.messages)
    return StoredMessages(obj.messages, len(tree_ids), obj.tail, [*tree_ids, *obj.tail])


def message_ids_from(db: ObjectDB, obj: SnapshotObject, start: int) -> list[ObjectId]:
    """Return a snapshot's message ids from position ``start`` on."""
    tree_length = prolly.length(db, obj.messages)
    if start >= tree_length:
        return list(obj.tail[start - tree_length :])
    return [*prolly.items_from(db, obj.messages, start), *obj.tail]


__all__ = [
    "MessageBase",
    "MessageDecoder",
    "StoredMessages",
    "message_ids_from",
    "stored_messages",
    "ReadSnapshot",
    "Snapshot",
    "WrittenSnapshot",
    "check_codec_name",
    "encode_messages",
    "read_conversation",
    "read_snapshot",
    "read_values",
    "write_snapshot",
]


def __getattr__(name: str) -> Any:
    """``Snapshot`` loads on first use (PEP 562): reading logs and refs never needs pydantic."""
    if name == "Snapshot":
        from .model import Snapshot

        return Snapshot
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
