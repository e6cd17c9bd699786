"""Maps of string keys to values (agent state, snapshot extras).

A value is the id of an object, or for small values (at most :data:`INLINE_LIMIT` encoded
bytes) the value itself, kept inline: one object fewer per changed key and commit. A small map
(at most :data:`INLINE_MAP_LIMIT` encoded bytes) is itself kept inline in its snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import CorruptObject
from ..hashing import ObjectId, to_hex
from ..objects import MapNode, MapRef, MapValue, encode_with_id
from .reader import ObjectReader

INLINE_LIMIT = 64
INLINE_MAP_LIMIT = 128


def build_map(entries: Mapping[str, MapValue], out: dict[ObjectId, bytes]) -> MapRef:
    """Return ``entries`` as a map: inline if small, else encoded into ``out`` and named by id."""
    keys = tuple(sorted(entries))
    node = MapNode(keys, tuple(entries[k] for k in keys))
    object_id, data = encode_with_id(node)
    if len(data) <= INLINE_MAP_LIMIT:
        return node
    out[object_id] = data
    return object_id


def read_map(reader: ObjectReader, ref: MapRef) -> dict[str, MapValue]:
    """Return the ``key -> value`` entries of a map (inline or stored), in key order."""
    node = ref if isinstance(ref, MapNode) else reader.load(ref)
    if not isinstance(node, MapNode):
        assert isinstance(ref, bytes)
        raise CorruptObject(to_hex(ref), f"expected a map, found {type(node).__name__}")
    return dict(zip(node.keys, node.values))
