"""The framework-neutral :class:`Snapshot` and its mapping to and from stored objects."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .errors import CorruptObject, SerializationError
from .hashing import ObjectId, hash_bytes, to_hex
from .objectdb import ObjectDB
from .objects import Blob, Doc, SnapshotObject, encode_doc, encode_with_id
from .serializers import StateSerializer, serializer_for
from .structures import chunking, prolly
from .structures.maps import build_map, read_map


class Snapshot(BaseModel):
    """One version of an agent: its conversation, key-value state and other fields."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kind: str = "snapshot"
    """Adapter kind that captured it, e.g. ``"dict"`` or ``"strands.agent"``."""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """The conversation; msgpack-native values (JSON types and bytes)."""
    state: dict[str, Any] = Field(default_factory=dict)
    """Key-value state; each value goes through the repository's serializer."""
    extras: dict[str, Any] = Field(default_factory=dict)
    """Other fields (system prompt, conversation-manager state, ...); msgpack-native."""


@dataclass(frozen=True, slots=True)
class MessageBase:
    """A previously stored conversation the next snapshot may extend without re-encoding.

    ``keep`` leading messages of the new snapshot are known to equal ``ids[:keep]``.
    """

    root: ObjectId
    ids: Sequence[ObjectId]
    keep: int


@dataclass(frozen=True, slots=True)
class WrittenSnapshot:
    """What :func:`write_snapshot` produced: ids plus the encoded objects to store."""

    snapshot_id: ObjectId
    messages_root: ObjectId
    message_ids: list[ObjectId]
    objects: dict[ObjectId, bytes]


def _doc_id(value: Any, path: str, db: ObjectDB, out: dict[ObjectId, bytes]) -> ObjectId:
    try:
        data = encode_doc(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise SerializationError(
            f"{path} cannot be stored: {exc}. Messages and extras may hold only JSON types and "
            "bytes; convert other values before committing",
            path,
        ) from None
    if len(data) > chunking.CHUNK_THRESHOLD:
        return _large_id(data, db, out)
    object_id = hash_bytes(data)
    if object_id not in db.known:
        out[object_id] = data
    return object_id


def _large_id(data: bytes, db: ObjectDB, out: dict[ObjectId, bytes]) -> ObjectId:
    return chunking.chunk(data, out)


def encode_messages(
    messages: Sequence[Any], start: int, db: ObjectDB, out: dict[ObjectId, bytes]
) -> list[ObjectId]:
    """Encode ``messages[start:]`` into ``out``; return their ids."""
    ids: list[ObjectId] = []
    known = db.known
    threshold = chunking.CHUNK_THRESHOLD
    for index in range(start, len(messages)):
        try:
            data = encode_doc(messages[index])
        except (TypeError, ValueError, OverflowError):
            ids.append(_doc_id(messages[index], f"messages[{index}]", db, out))
            continue
        if len(data) > threshold:
            ids.append(_large_id(data, db, out))
            continue
        object_id = hash_bytes(data)
        if object_id not in known:
            out[object_id] = data
        ids.append(object_id)
    return ids


def write_snapshot(
    db: ObjectDB,
    snapshot: Snapshot,
    serializer: StateSerializer,
    *,
    base: MessageBase | None = None,
    previous: tuple[ObjectId, Sequence[ObjectId]] | None = None,
    exclude_state: frozenset[str] = frozenset(),
) -> WrittenSnapshot:
    """Encode ``snapshot`` into objects, re-encoding only messages ``base`` cannot vouch for.

    Without ``base`` every message is encoded; the tree is then spliced onto ``previous`` (a
    stored conversation's root and ids) after their common prefix, or built from scratch.
    Raises ``SerializationError`` (naming the key or message) before anything is written.
    """
    out: dict[ObjectId, bytes] = {}
    messages = snapshot.messages
    if base is not None and 0 <= base.keep <= min(len(base.ids), len(messages)):
        new_ids = encode_messages(messages, base.keep, db, out)
        root = prolly.splice(db, base.root, base.keep, new_ids, out)
        message_ids = [*base.ids[: base.keep], *new_ids]
    else:
        message_ids = encode_messages(messages, 0, db, out)
        if previous is not None:
            keep = prolly.prefix_length(previous[1], message_ids)
            root = prolly.splice(db, previous[0], keep, message_ids[keep:], out)
        else:
            root = prolly.build(message_ids, out)

    state_ids: dict[str, ObjectId] = {}
    for key, value in snapshot.state.items():
        if key in exclude_state:
            continue
        if not isinstance(key, str):
            raise SerializationError(
                f"state key {key!r} is a {type(key).__name__}; state keys must be strings", str(key)
            )
        data = serializer.serialize(value, f"state[{key!r}]")
        object_id, encoded = encode_with_id(Blob(data))
        if len(encoded) > chunking.CHUNK_THRESHOLD:
            object_id = _large_id(encoded, db, out)
        elif object_id not in db.known:
            out[object_id] = encoded
        state_ids[key] = object_id
    extras_ids = {
        str(key): _doc_id(value, f"extras[{key!r}]", db, out)
        for key, value in snapshot.extras.items()
    }
    snapshot_object = SnapshotObject(
        kind=snapshot.kind,
        messages=root,
        state=build_map(state_ids, out),
        extras=build_map(extras_ids, out),
        state_codec=serializer.name,
    )
    snapshot_id, encoded = encode_with_id(snapshot_object)
    out[snapshot_id] = encoded
    return WrittenSnapshot(snapshot_id, root, message_ids, out)


@dataclass(frozen=True, slots=True)
class ReadSnapshot:
    """A snapshot read back from storage, with the ids needed for incremental commits."""

    snapshot: Snapshot
    snapshot_id: ObjectId
    messages_root: ObjectId
    message_ids: list[ObjectId]
    state_codec: str


def load_snapshot_object(db: ObjectDB, snapshot_id: ObjectId) -> SnapshotObject:
    """Load a snapshot object, raising ``CorruptObject`` if the id names something else."""
    obj = db.load(snapshot_id)
    if not isinstance(obj, SnapshotObject):
        raise CorruptObject(to_hex(snapshot_id), f"expected a snapshot, found {type(obj).__name__}")
    return obj


def read_values(
    db: ObjectDB, entries: Mapping[str, ObjectId], serializer: StateSerializer | None
) -> dict[str, Any]:
    """Decode a map's values: documents as-is, blobs through ``serializer``."""
    values = db.load_values(entries.values())
    result: dict[str, Any] = {}
    for key, object_id in entries.items():
        value = values[object_id]
        if isinstance(value, Doc):
            result[key] = value.value
        elif serializer is None:
            raise CorruptObject(to_hex(object_id), f"extras[{key!r}] should be a document")
        else:
            result[key] = serializer.deserialize(value.data, f"state[{key!r}]")
    return result


def read_snapshot(
    db: ObjectDB, snapshot_id: ObjectId, serializer: StateSerializer
) -> ReadSnapshot:
    """Read a snapshot back into fresh Python objects."""
    obj = load_snapshot_object(db, snapshot_id)
    message_ids = prolly.items(db, obj.messages)
    docs = db.load_values(message_ids)
    messages: list[dict[str, Any]] = []
    seen: set[ObjectId] = set()
    for object_id in message_ids:
        doc = docs[object_id]
        if not isinstance(doc, Doc):
            raise CorruptObject(to_hex(object_id), "a message must be a document")
        # A repeated message must not share one mutable dict between two positions.
        messages.append(copy.deepcopy(doc.value) if object_id in seen else doc.value)
        seen.add(object_id)
    codec = serializer_for(obj.state_codec, serializer)
    state = read_values(db, read_map(db, obj.state), codec)
    extras = read_values(db, read_map(db, obj.extras), None)
    snapshot = Snapshot.model_construct(
        kind=obj.kind, messages=messages, state=state, extras=extras
    )
    return ReadSnapshot(snapshot, snapshot_id, obj.messages, message_ids, obj.state_codec)


__all__ = [
    "MessageBase",
    "ReadSnapshot",
    "Snapshot",
    "WrittenSnapshot",
    "encode_messages",
    "read_snapshot",
    "read_values",
    "write_snapshot",
]
