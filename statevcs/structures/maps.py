"""Maps of string keys to values (agent state, snapshot extras).

A value is the id of an object, or for small values (at most :data:`INLINE_LIMIT` encoded
bytes) the value itself, kept inline: one object fewer per changed key and commit.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import CorruptObject
from ..hashing import ObjectId, to_hex
from ..objects import MapNode, MapValue, encode_with_id
from .reader import ObjectReader

INLINE_LIMIT = 64


def build_map(entries: Mapping[str, MapValue], out: dict[ObjectId, bytes]) -> ObjectId:
    """Encode ``entries`` as one map node (keys sorted) into ``out``; return its id."""
    keys = tuple(sorted(entries))
    object_id, data = encode_with_id(MapNode(keys, tuple(entries[k] for k in keys)))
    out[object_id] = data
    return object_id


def read_map(reader: ObjectReader, object_id: ObjectId) -> dict[str, MapValue]:
    """Return the ``key -> value`` entries of a map node, in key order."""
    node = reader.load(object_id)
    if not isinstance(node, MapNode):
        raise CorruptObject(to_hex(object_id), f"expected a map, found {type(node).__name__}")
    return dict(zip(node.keys, node.values))
