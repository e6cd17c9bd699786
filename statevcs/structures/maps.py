"""Maps of string keys to object ids (agent state, snapshot extras)."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import CorruptObject
from ..hashing import ObjectId, to_hex
from ..objects import MapNode, encode_with_id
from .reader import ObjectReader


def build_map(entries: Mapping[str, ObjectId], out: dict[ObjectId, bytes]) -> ObjectId:
    """Encode ``entries`` as one map node (keys sorted) into ``out``; return its id."""
    keys = tuple(sorted(entries))
    object_id, data = encode_with_id(MapNode(keys, tuple(entries[k] for k in keys)))
    out[object_id] = data
    return object_id


def read_map(reader: ObjectReader, object_id: ObjectId) -> dict[str, ObjectId]:
    """Return the ``key -> id`` entries of a map node, in key order."""
    node = reader.load(object_id)
    if not isinstance(node, MapNode):
        raise CorruptObject(to_hex(object_id), f"expected a map, found {type(node).__name__}")
    return dict(zip(node.keys, node.ids))
