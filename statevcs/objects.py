"""Immutable object kinds and their canonical msgpack encoding.

Every stored thing is a msgpack array ``[kind, *fields]`` whose id is the blake3-256 digest of
those bytes. Structural objects (lists, maps, snapshots, commits) are encoded canonically: maps
by sorted keys, no floats in structural fields. ``doc`` objects hold one msgpack-native document
(a message or an extras value) in its own key order, so a restored message is exactly the one
that was committed.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgpack

from . import documents
from .compression import unpack
from .errors import CorruptObject, SerializationError
from .hashing import ID_SIZE, ObjectId, hash_bytes, to_hex

KIND_BLOB = "blob"
KIND_DOC = "doc"
KIND_CHUNKED = "chunked"
KIND_LIST = "list"
KIND_LEAF = "leaf"
KIND_MAP = "map"
KIND_SNAPSHOT = "snapshot"
KIND_COMMIT = "commit"
KIND_ZDICT = "zdict"
ZDICT_PREFIX = b"\x92\xa5zdict"
"""How every ``zdict`` object's encoding starts (such objects are never compressed)."""
KIND_GRAPH = "graph"

SNAPSHOT_FORMAT = 1
"""The snapshot version format-1 repositories write (message leaves hold ids only)."""
PACKED_SNAPSHOT_FORMAT = 2
"""The snapshot version format-2 repositories write (message leaves hold the messages)."""
ORDERED_SNAPSHOT_FORMAT = 3
"""A format-2 snapshot that also records the order of its state or extras keys (written only
when a dict's keys were not in sorted order, so every other snapshot keeps its version and id)."""
SNAPSHOT_FORMATS = (SNAPSHOT_FORMAT, PACKED_SNAPSHOT_FORMAT, ORDERED_SNAPSHOT_FORMAT)

DOC_PREFIX = b"\x92\xa3doc"
"""How every ``doc`` object's encoding starts; the rest is the document's own msgpack."""

MAX_DEPTH = 512
"""How deeply :func:`canonical` nests dicts and lists (msgpack reads about 1,000 levels back)."""


@dataclass(frozen=True, slots=True)
class Blob:
    """Raw bytes of one serialized value (a state value, or one chunk of a large object)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Doc:
    """One msgpack-native document: a conversation message or an extras value."""

    value: Any


@dataclass(frozen=True, slots=True)
class Chunked:
    """A large object cut by content-defined chunking; its chunks concatenate to its encoding."""

    size: int
    chunks: tuple[ObjectId, ...]


@dataclass(frozen=True, slots=True)
class ListNode:
    """A node of a prolly list: leaf entries are item ids, inner entries are child node ids.

    A packed leaf (format 2, kind ``leaf``) also holds its items' values: ``values[i]`` is the
    msgpack of the document ``ids[i]`` names (its ``doc`` encoding minus :data:`DOC_PREFIX`),
    or ``None`` when that item is stored out of line (a large, chunked document).
    """

    level: int
    ids: tuple[ObjectId, ...]
    counts: tuple[int, ...] = ()
    values: tuple[bytes | None, ...] | None = None

    @property
    def total(self) -> int:
        """Number of items (leaf entries) below this node."""
        return len(self.ids) if self.level == 0 else sum(self.counts)


@dataclass(frozen=True, slots=True)
class Inline:
    """A small value kept inside its map instead of as an object of its own.

    For state maps it holds the serializer's bytes; for extras maps the document itself.
    """

    value: Any


MapValue = ObjectId | Inline


@dataclass(frozen=True, slots=True)
class MapNode:
    """Sorted ``key -> value`` pairs (agent state, extras); a value is an object id or inline."""

    keys: tuple[str, ...]
    values: tuple[MapValue, ...]


MapRef = ObjectId | MapNode
"""A snapshot's state or extras: a map object's id, or a small map kept inline."""


@dataclass(frozen=True, slots=True)
class SnapshotObject:
    """A snapshot: its conversation (a prolly list plus an inline open tail), state and extras.

    ``messages`` is the root of a prolly list holding every message up to the last closed leaf;
    ``tail`` holds the ids of the messages after it. Appends then rewrite inner tree nodes only
    when a leaf closes (about every 8 messages), not on every commit. ``state`` and ``extras``
    are map ids, or small maps kept inline. Maps keep their keys sorted; ``state_order`` and
    ``extras_order`` (version :data:`ORDERED_SNAPSHOT_FORMAT` only) give the committed order as
    positions in the sorted keys, and are empty when that order was the sorted one.
    """

    kind: str
    messages: ObjectId
    tail: tuple[ObjectId, ...]
    state: MapRef
    extras: MapRef
    state_codec: str
    version: int = SNAPSHOT_FORMAT
    state_order: tuple[int, ...] = ()
    extras_order: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class CommitObject:
    """A commit: a snapshot, its parents, who, when (UTC microseconds), why, and metadata."""

    snapshot: ObjectId
    parents: tuple[ObjectId, ...]
    author: str
    timestamp_us: int
    message: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ZstdDictionary:
    """A zstd dictionary the repository's compressed objects may name (stored plain)."""

    data: bytes


def packed(kind: str, values: Sequence[int]) -> bytes:
    """``values`` as a little-endian array of ``kind`` (``"I"``: uint32, ``"q"``: int64)."""
    out = array(kind, values)
    if sys.byteorder == "big":
        out.byteswap()
    return out.tobytes()


def unpacked(kind: str, data: bytes) -> array[int]:
    """The array :func:`packed` wrote (``ValueError`` for a length that is no multiple)."""
    out = array(kind)
    out.frombytes(data)
    if sys.byteorder == "big":
        out.byteswap()
    return out


@dataclass(frozen=True, slots=True)
class GraphSegment:
    """A batch of the commit graph (like one git commit-graph file of a split chain).

    ``ids`` holds the commits' ids end to end, parents before children. Commit ``i``'s
    parents are ``parents[parent_ends[i - 1]:parent_ends[i]]``, by number: below
    ``len(segment)`` a commit of this segment, else ``externals[number - len(segment)]`` (a
    commit of an older segment). ``generations`` are git's topological levels (1 for a root,
    else 1 + the highest parent's); ``timestamps`` the commits' own. A framework's id
    (``kind=value``, every kind in ``label_kinds``) is found by its :func:`label_key` in the
    sorted ``label_keys`` (8 bytes each), next to the position of a commit carrying it in
    ``label_positions``. ``data`` is a blob holding the
    commits' encoded bytes end to end, commit ``i`` ending at ``ends[i]``: a cold ``log``
    reads it in one read (``None`` and no ``ends`` where reading commits is cheap anyway).
    Numbers are packed little-endian arrays (uint32; int64 times).
    Every field is derived from the commits themselves, so a segment is true forever.
    """

    ids: bytes
    externals: bytes
    parents: array[int]
    parent_ends: array[int]
    generations: array[int]
    timestamps: array[int]
    label_kinds: tuple[str, ...]
    label_keys: bytes
    label_positions: array[int]
    data: ObjectId | None
    ends: array[int]

    def __len__(self) -> int:
        return len(self.ids) // ID_SIZE

    def id_at(self, position: int) -> ObjectId:
        """The id of the commit at ``position``."""
        return self.ids[position * ID_SIZE : (position + 1) * ID_SIZE]

    def labelled(self, name: str) -> list[int]:
        """The positions of the commits whose label key is ``name``'s (a binary search).

        Keys are 8-byte hashes: a caller checks the commits it gets against the id it wanted.
        """
        key = label_key(name)
        keys = self.label_keys
        low, high = 0, len(keys) // LABEL_KEY_SIZE
        while low < high:
            middle = (low + high) // 2
            if keys[middle * LABEL_KEY_SIZE : (middle + 1) * LABEL_KEY_SIZE] < key:
                low = middle + 1
            else:
                high = middle
        found = []
        while keys[low * LABEL_KEY_SIZE : (low + 1) * LABEL_KEY_SIZE] == key:
            found.append(self.label_positions[low])
            low += 1
        return found


LABEL_KEY_SIZE = 8


def label_key(name: str) -> bytes:
    """The 8-byte key a graph segment finds label ``name`` by."""
    return hash_bytes(name.encode("utf-8", "surrogatepass"))[:LABEL_KEY_SIZE]


StoredObject = (
    Blob
    | Doc
    | Chunked
    | ListNode
    | MapNode
    | SnapshotObject
    | CommitObject
    | GraphSegment
    | ZstdDictionary
)

_packb: Callable[[Any], bytes] = documents.ThreadSafePacker(use_bin_type=True, autoreset=True)


def canonical(value: Any) -> Any:
    """Return ``value`` with every mapping's keys sorted, for canonical encoding.

    Tuples become lists. Raises ``SerializationError`` for nesting deeper than
    :data:`MAX_DEPTH` (or a container that contains itself) instead of exhausting the stack.
    """
    if not isinstance(value, (dict, list, tuple)):
        return value
    root: list[Any] = [None]
    # An explicit stack: each task copies one container into ``parent[slot]``.
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 1)]
    while stack:
        item, parent, slot, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SerializationError(
                f"a value is nested deeper than {MAX_DEPTH} levels (or contains itself); "
                "flatten it before storing it"
            )
        copied: Any
        if isinstance(item, dict):
            copied = {}
            for key in sorted(item, key=_sort_key):
                child = item[key]
                copied[key] = child
                if isinstance(child, (dict, list, tuple)):
                    stack.append((child, copied, key, depth + 1))
        else:
            copied = list(item)
            for index, child in enumerate(copied):
                if isinstance(child, (dict, list, tuple)):
                    stack.append((child, copied, index, depth + 1))
        parent[slot] = copied
    return root[0]


def _sort_key(key: Any) -> tuple[str, str]:
    return (type(key).__name__, str(key))


def encode_doc(value: Any) -> bytes:
    """Encode one document; raises ``TypeError``/``ValueError``/``OverflowError`` if refused.

    :mod:`statevcs.documents` says what a document may hold (what reads back equal) and
    explains a refusal.
    """
    return documents.pack([KIND_DOC, value])


def encode(obj: StoredObject) -> bytes:
    """Return the canonical encoding of ``obj``.

    Raises ``SerializationError`` when a value inside it can't be stored (an int outside
    64 bits, text with a lone surrogate, nesting too deep, a type msgpack lacks) and
    ``TypeError`` when ``obj`` is not a statevcs object.
    """
    try:
        return _encode(obj)
    except (OverflowError, ValueError, TypeError) as exc:
        if type(obj) not in _KIND_NAMES:
            raise
        raise SerializationError(
            f"a {kind_of(obj)} object cannot be stored: {exc}; keep documents and metadata to "
            "JSON types and bytes, with integers in -2**63..2**64-1 and valid Unicode text"
        ) from None


def _encode(obj: StoredObject) -> bytes:
    if isinstance(obj, ListNode):
        if obj.values is not None:
            if obj.level != 0 or len(obj.values) != len(obj.ids):
                raise ValueError("a packed leaf is at level 0 with one value per id")
            return _packb([KIND_LEAF, list(obj.ids), list(obj.values)])
        return _packb([KIND_LIST, obj.level, list(obj.ids), list(obj.counts)])
    if isinstance(obj, Doc):
        return encode_doc(obj.value)
    if isinstance(obj, Blob):
        return _packb([KIND_BLOB, obj.data])
    if isinstance(obj, ZstdDictionary):
        return _packb([KIND_ZDICT, obj.data])
    if isinstance(obj, MapNode):
        return _packb([KIND_MAP, *_map_fields(obj)])
    if isinstance(obj, Chunked):
        return _packb([KIND_CHUNKED, obj.size, list(obj.chunks)])
    if isinstance(obj, SnapshotObject):
        fields = [
            KIND_SNAPSHOT,
            obj.version,
            obj.kind,
            obj.messages,
            list(obj.tail),
            _encode_map_ref(obj.state),
            _encode_map_ref(obj.extras),
            obj.state_codec,
        ]
        ordered = bool(obj.state_order or obj.extras_order)
        if ordered != (obj.version == ORDERED_SNAPSHOT_FORMAT):
            raise ValueError(
                f"a snapshot records a key order exactly when its version is "
                f"{ORDERED_SNAPSHOT_FORMAT}"
            )
        if ordered:
            _key_order(list(obj.state_order), "state")  # one encoding per content
            _key_order(list(obj.extras_order), "extras")
            fields.append([list(obj.state_order), list(obj.extras_order)])
        return _packb(fields)
    if isinstance(obj, CommitObject):
        return _packb(
            [
                KIND_COMMIT,
                obj.snapshot,
                list(obj.parents),
                obj.author,
                obj.timestamp_us,
                obj.message,
                canonical(obj.metadata),
            ]
        )
    if isinstance(obj, GraphSegment):
        return _packb(
            [
                KIND_GRAPH,
                obj.ids,
                obj.externals,
                packed("I", obj.parents),
                packed("I", obj.parent_ends),
                packed("I", obj.generations),
                packed("q", obj.timestamps),
                list(obj.label_kinds),
                obj.label_keys,
                packed("I", obj.label_positions),
                obj.data,
                packed("I", obj.ends),
            ]
        )
    raise TypeError(f"not a statevcs object: {type(obj).__name__}")


def encode_with_id(obj: StoredObject) -> tuple[ObjectId, bytes]:
    """Encode ``obj`` and return ``(id, bytes)``."""
    data = encode(obj)
    return hash_bytes(data), data


def verify(object_id: ObjectId, data: bytes) -> None:
    """Raise ``CorruptObject`` unless ``data`` hashes to ``object_id``."""
    if hash_bytes(data) != object_id:
        raise CorruptObject(to_hex(object_id), "its bytes do not hash to its id")


def decode(object_id: ObjectId, data: bytes, *, check_hash: bool = True) -> StoredObject:
    """Decode stored bytes into an object, validating hash, kind and shape.

    Any bytes give an object or ``CorruptObject``: unpackb bounds every length field by
    ``len(data)`` (msgpack >= 1.0) and nesting by its fixed C stack, without recursion.
    """
    return decode_plain(object_id, unpack(object_id, data), check_hash=check_hash)


def decode_plain(object_id: ObjectId, data: bytes, *, check_hash: bool = True) -> StoredObject:
    """:func:`decode` of canonical bytes (already out of their zstd frame, if they had one)."""
    if check_hash and hash_bytes(data) != object_id:
        raise CorruptObject(to_hex(object_id), "its bytes do not hash to its id")
    try:
        raw = _unpackb(data, raw=False, strict_map_key=False, use_list=True)
    except msgpack.StackError:
        raise CorruptObject(to_hex(object_id), "its msgpack is nested too deeply") from None
    except Exception as exc:  # msgpack raises several unrelated exception types
        raise CorruptObject(to_hex(object_id), f"not valid msgpack ({exc})") from None
    try:
        if data[:6] == _LEAF_PREFIX:  # the commonest object a read decodes
            return _leaf(raw, data)
        return _from_raw(raw, data)
    except (ValueError, TypeError, IndexError) as exc:
        raise CorruptObject(to_hex(object_id), str(exc)) from None


_unpackb = msgpack.unpackb


NOT_A_DOC: Any = object()
"""What :func:`doc_value` returns for bytes holding another kind of object."""


def doc_value(object_id: ObjectId, data: bytes, *, check_hash: bool = True) -> Any:
    """Return the value of a stored document (:data:`NOT_A_DOC`: another kind; :func:`decode` it).

    The fast path of :func:`decode` for the commonest object: the same checks (hash, valid
    msgpack, a ``[kind, value]`` array), no ``Doc`` built around the value.
    """
    data = unpack(object_id, data)
    if check_hash and hash_bytes(data) != object_id:
        raise CorruptObject(to_hex(object_id), "its bytes do not hash to its id")
    try:
        raw = msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)
    except msgpack.StackError:
        raise CorruptObject(to_hex(object_id), "its msgpack is nested too deeply") from None
    except Exception as exc:  # msgpack raises several unrelated exception types
        raise CorruptObject(to_hex(object_id), f"not valid msgpack ({exc})") from None
    if type(raw) is list and len(raw) == 2 and raw[0] == KIND_DOC:
        return raw[1]
    return NOT_A_DOC


_BYTES_ONLY = {bytes}
_ID_SIZE_ONLY = {ID_SIZE}
_LEAF_VALUE_TYPES = {bytes, type(None)}
_INT_ONLY = {int}


def _ids(value: Any, what: str, data: bytes = b"", at: int = -1) -> tuple[ObjectId, ...]:
    # set(map(...)) checks every entry in C: this runs for every node read. A node's own bytes
    # (``data``, the list's header at ``at``) answer it cheaper when they are canonical.
    if type(value) is not list or (
        value
        and not (at >= 0 and _canonical_ids(data, at, len(value)))
        and (set(map(type, value)) != _BYTES_ONLY or set(map(len, value)) != _ID_SIZE_ONLY)
    ):
        raise ValueError(f"{what} must be a list of {ID_SIZE}-byte ids")
    return tuple(value)


_ID_ENTRY = 2 + ID_SIZE
"""The canonical encoding of an id in a list: a bin 8 header (``c4 20``), then its bytes."""
_BIN8 = b"\xc4"
_ID_LENGTH = bytes([ID_SIZE])


def _canonical_ids(data: bytes, at: int, count: int) -> bool:
    """Whether ``data`` holds at ``at`` an array of ``count`` ids in canonical form.

    The bytes a list of ids decoded from: when its header says ``count`` and every entry
    starts with ``c4 20``, each entry is one 32-byte bin value (each ends where the next
    header sits), so the decoded list holds only 32-byte ``bytes``. Two sliced comparisons
    instead of a type and a length per entry; ``False`` leaves the answer to those.
    """
    head = data[at] if at < len(data) else 0
    if head >> 4 == 9:  # fixarray
        found, at = head & 0x0F, at + 1
    elif head == 0xDC:  # array 16
        found, at = int.from_bytes(data[at + 1 : at + 3], "big"), at + 3
    else:
        return False
    end = at + _ID_ENTRY * count
    return (
        found == count
        and data[at:end:_ID_ENTRY] == _BIN8 * count
        and data[at + 1 : end : _ID_ENTRY] == _ID_LENGTH * count
    )


def _id(value: Any, what: str) -> ObjectId:
    if not isinstance(value, bytes) or len(value) != ID_SIZE:
        raise ValueError(f"{what} must be a {ID_SIZE}-byte id")
    return value


def _map_fields(node: MapNode) -> list[Any]:
    return [list(node.keys), [v if isinstance(v, bytes) else [v.value] for v in node.values]]


def _encode_map_ref(ref: MapRef) -> Any:
    return ref if isinstance(ref, bytes) else _map_fields(ref)


def _map_node(keys: Any, values: Any) -> MapNode:
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ValueError("map keys must be strings")
    if not isinstance(values, list) or len(keys) != len(values):
        raise ValueError("map keys do not match its values")
    if keys != sorted(keys) or len(set(keys)) != len(keys):
        raise ValueError("map keys must be unique and sorted")
    return MapNode(tuple(keys), tuple(_map_value(v) for v in values))


def _map_ref(value: Any, what: str) -> MapRef:
    if isinstance(value, list) and len(value) == 2:
        return _map_node(value[0], value[1])
    return _id(value, what)


def _map_ref_children(ref: MapRef) -> list[ObjectId]:
    if isinstance(ref, bytes):
        return [ref]
    return [v for v in ref.values if isinstance(v, bytes)]


def _map_value(value: Any) -> MapValue:
    if isinstance(value, bytes) and len(value) == ID_SIZE:
        return value
    if isinstance(value, list) and len(value) == 1:
        return Inline(value[0])
    raise ValueError("a map value must be an id or a one-element inline array")


def _key_order(value: Any, what: str) -> tuple[int, ...]:
    """Check a recorded key order: positions in the sorted keys, each once, not the identity.

    Whether it covers every key is checked where the map is read
    (``snapshot.in_committed_order``, and fsck as its walk reads the map).
    """
    if type(value) is not list or not all(type(p) is int and p >= 0 for p in value):
        raise ValueError(f"the {what} key order must be a list of non-negative integers")
    if value and sorted(value) != list(range(len(value))):
        raise ValueError(f"the {what} key order must name each position once")
    if value and value == list(range(len(value))):
        raise ValueError(f"the {what} key order is the sorted one: it is recorded as []")
    return tuple(value)


def _expect(raw: list[Any], size: int, kind: str) -> None:
    if len(raw) != size:
        raise ValueError(f"a {kind} object has {size - 1} fields, found {len(raw) - 1}")


_LEAF_PREFIX = b"\x93\xa4leaf"
"""How a canonical packed leaf starts: an array of three whose first item is ``"leaf"``."""
_LIST_PREFIX = b"\x94\xa4list"


def _leaf(raw: list[Any], data: bytes) -> ListNode:
    """The packed leaf ``raw`` decoded from ``data`` (which starts with :data:`_LEAF_PREFIX`,
    so ``raw`` is ``["leaf", ids, values]``): :func:`_from_raw`'s checks, paid per list."""
    ids = _ids(raw[1], "leaf entries", data, len(_LEAF_PREFIX))
    values = raw[2]
    if type(values) is not list or len(values) != len(ids):
        raise ValueError("a leaf holds one value per entry")
    if not set(map(type, values)) <= _LEAF_VALUE_TYPES:
        raise ValueError("a leaf value must be bytes or nil")
    return _list_node(0, ids, (), tuple(values))


def _list_node(
    level: int,
    ids: tuple[ObjectId, ...],
    counts: tuple[int, ...],
    values: tuple[bytes | None, ...] | None,
) -> ListNode:
    """``ListNode(level, ids, counts, values)``, built without the frozen dataclass's
    ``__init__`` (a Python call setting each field through ``object.__setattr__``): its slots
    are set directly, half the cost, for the hundreds of nodes a checkout decodes."""
    node = _new_node(ListNode)
    _set_level(node, level)
    _set_ids(node, ids)
    _set_counts(node, counts)
    _set_values(node, values)
    return node


_new_node = object.__new__
_set_level, _set_ids, _set_counts, _set_values = (
    vars(ListNode)[name].__set__ for name in ("level", "ids", "counts", "values")
)


def _from_raw(raw: Any, data: bytes = b"") -> StoredObject:
    if not isinstance(raw, list) or not raw or not isinstance(raw[0], str):
        raise ValueError("expected an array starting with an object kind")
    kind = raw[0]
    if kind == KIND_LEAF:  # the commonest object a read decodes: checked first
        _expect(raw, 3, kind)
        ids, values = _ids(raw[1], "leaf entries"), raw[2]
        if type(values) is not list or len(values) != len(ids):
            raise ValueError("a leaf holds one value per entry")
        if not set(map(type, values)) <= _LEAF_VALUE_TYPES:
            raise ValueError("a leaf value must be bytes or nil")
        return ListNode(0, ids, (), tuple(values))
    if kind == KIND_DOC:
        _expect(raw, 2, kind)
        return Doc(raw[1])
    if kind == KIND_LIST:
        _expect(raw, 4, kind)
        level, counts = raw[1], raw[3]
        # A canonical inner node's level is one byte (a positive fixint): its ids follow.
        at = 7 if data[:6] == _LIST_PREFIX and len(data) > 6 and data[6] < 0x80 else -1
        ids = _ids(raw[2], "list entries", data, at)
        if type(level) is not int or level < 0:
            raise ValueError("list level must be a non-negative integer")
        if not isinstance(counts, list) or (
            counts and (set(map(type, counts)) != _INT_ONLY or min(counts) <= 0)
        ):
            raise ValueError("list counts must be positive integers")
        if (level == 0 and counts) or (level > 0 and len(counts) != len(ids)):
            raise ValueError("list counts do not match its entries")
        return _list_node(level, ids, tuple(counts), None)
    if kind == KIND_BLOB:
        _expect(raw, 2, kind)
        if not isinstance(raw[1], bytes):
            raise ValueError("blob data must be bytes")
        return Blob(raw[1])
    if kind == KIND_ZDICT:
        _expect(raw, 2, kind)
        if not isinstance(raw[1], bytes):
            raise ValueError("a zstd dictionary must be bytes")
        return ZstdDictionary(raw[1])
    if kind == KIND_MAP:
        _expect(raw, 3, kind)
        return _map_node(raw[1], raw[2])
    if kind == KIND_CHUNKED:
        _expect(raw, 3, kind)
        if type(raw[1]) is not int or raw[1] < 0:
            raise ValueError("chunked size must be a non-negative integer")
        return Chunked(raw[1], _ids(raw[2], "chunks"))
    if kind == KIND_SNAPSHOT:
        if len(raw) > 1 and (type(raw[1]) is not int or raw[1] not in SNAPSHOT_FORMATS):
            # Before the field count: a newer format may have more fields.
            raise ValueError(f"unsupported snapshot format {raw[1]!r}; upgrade statevcs")
        ordered = len(raw) > 1 and raw[1] == ORDERED_SNAPSHOT_FORMAT
        _expect(raw, 9 if ordered else 8, kind)
        version, skind, codec = raw[1], raw[2], raw[7]
        if not isinstance(skind, str) or not isinstance(codec, str):
            raise ValueError("snapshot kind and codec must be strings")
        state_order: tuple[int, ...] = ()
        extras_order: tuple[int, ...] = ()
        if ordered:
            orders = raw[8]
            if type(orders) is not list or len(orders) != 2:
                raise ValueError("a snapshot's key order is a [state, extras] pair")
            state_order = _key_order(orders[0], "state")
            extras_order = _key_order(orders[1], "extras")
            if not state_order and not extras_order:
                raise ValueError(f"a version {version} snapshot records a key order")
        return SnapshotObject(
            skind,
            _id(raw[3], "messages root"),
            _ids(raw[4], "messages tail"),
            _map_ref(raw[5], "state map"),
            _map_ref(raw[6], "extras map"),
            codec,
            version,
            state_order,
            extras_order,
        )
    if kind == KIND_COMMIT:
        _expect(raw, 7, kind)
        author, ts, message, metadata = raw[3], raw[4], raw[5], raw[6]
        if not isinstance(author, str) or not isinstance(message, str):
            raise ValueError("commit author and message must be strings")
        if type(ts) is not int:
            raise ValueError("commit timestamp must be an integer")
        if not isinstance(metadata, dict):
            raise ValueError("commit metadata must be a map")
        return CommitObject(
            _id(raw[1], "commit snapshot"), _ids(raw[2], "parents"), author, ts, message, metadata
        )
    if kind == KIND_GRAPH:
        _expect(raw, 12, kind)
        return _graph_segment(raw)
    raise ValueError(f"unknown object kind {kind!r}")


def _array(value: Any, kind: str, what: str, size: int | None = None) -> array[int]:
    if type(value) is not bytes:
        raise ValueError(f"graph {what} must be bytes")
    out = unpacked(kind, value)
    if size is not None and len(out) != size:
        raise ValueError(f"graph {what} must hold {size} numbers")
    return out


def _graph_segment(raw: list[Any]) -> GraphSegment:
    ids, externals, parents, parent_ends, gens, stamps, kinds, keys, positions, data, ends = raw[1:]
    if type(ids) is not bytes or not ids or len(ids) % ID_SIZE:
        raise ValueError(f"graph ids must be a non-empty multiple of {ID_SIZE} bytes")
    if type(externals) is not bytes or len(externals) % ID_SIZE:
        raise ValueError(f"graph externals must be a multiple of {ID_SIZE} bytes")
    count = len(ids) // ID_SIZE
    flat = _array(parents, "I", "parents")
    bounds = _array(parent_ends, "I", "parent ends", count)
    # Structure only, checked at C speed: any hash-valid segment walks without error.
    # Whether its numbers are true to its commits is fsck's to check (check_graph).
    if list(bounds) != sorted(bounds) or bounds[-1] != len(flat):
        raise ValueError("graph parent ends must grow to the number of parents")
    if flat and max(flat) >= count + len(externals) // ID_SIZE:
        raise ValueError("a graph parent number is out of range")
    generations = _array(gens, "I", "generations", count)
    if min(generations) < 1:
        raise ValueError("graph generations must be positive")
    timestamps = _array(stamps, "q", "timestamps", count)
    if type(kinds) is not list or not all([type(k) is str for k in kinds]):
        raise ValueError("graph label kinds must be a list of strings")
    if type(keys) is not bytes or len(keys) % LABEL_KEY_SIZE:
        raise ValueError(f"graph label keys must be a multiple of {LABEL_KEY_SIZE} bytes")
    label_positions = _array(positions, "I", "label positions", len(keys) // LABEL_KEY_SIZE)
    if label_positions and max(label_positions) >= count:
        raise ValueError("a graph label names a position out of range")
    data_ends = _array(ends, "I", "ends", 0 if data is None else count)
    if list(data_ends) != sorted(data_ends):
        raise ValueError("graph ends must not decrease")
    return GraphSegment(
        ids,
        externals,
        flat,
        bounds,
        generations,
        timestamps,
        tuple(kinds),
        keys,
        label_positions,
        None if data is None else _id(data, "graph data"),
        data_ends,
    )


def children(obj: StoredObject) -> Sequence[ObjectId]:
    """Return the ids ``obj`` refers to (what gc marks and fsck checks)."""
    if isinstance(obj, ListNode):
        if obj.values is not None:
            return [i for i, v in zip(obj.ids, obj.values) if v is None]
        return obj.ids
    if isinstance(obj, MapNode):
        return [v for v in obj.values if isinstance(v, bytes)]
    if isinstance(obj, Chunked):
        return obj.chunks
    if isinstance(obj, SnapshotObject):
        return (
            obj.messages,
            *obj.tail,
            *_map_ref_children(obj.state),
            *_map_ref_children(obj.extras),
        )
    if isinstance(obj, CommitObject):
        return (obj.snapshot, *obj.parents)
    if isinstance(obj, GraphSegment):
        # Not its commits: a graph keeps no commit from garbage collection.
        return () if obj.data is None else (obj.data,)
    return ()


_KIND_NAMES: dict[type, str] = {
    Blob: KIND_BLOB,
    Doc: KIND_DOC,
    Chunked: KIND_CHUNKED,
    ListNode: KIND_LIST,
    MapNode: KIND_MAP,
    SnapshotObject: KIND_SNAPSHOT,
    CommitObject: KIND_COMMIT,
    ZstdDictionary: KIND_ZDICT,
    GraphSegment: KIND_GRAPH,
}


def kind_of(obj: StoredObject) -> str:
    """Return the kind name of ``obj`` (``"commit"``, ``"list"``, ``"leaf"``, ...)."""
    if type(obj) is ListNode and obj.values is not None:
        return KIND_LEAF
    return _KIND_NAMES[type(obj)]


def leaf_problems(leaf: ListNode) -> list[str]:
    """Return what is wrong inside a packed leaf: values that do not hash to their ids (fsck)."""
    problems: list[str] = []
    if leaf.values is None:
        return problems
    for index, (item_id, value) in enumerate(zip(leaf.ids, leaf.values)):
        if value is not None and hash_bytes(DOC_PREFIX + value) != item_id:
            problems.append(f"entry {index} ({to_hex(item_id)}) does not hash to its id")
    return problems
