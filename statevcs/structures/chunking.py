"""Content-defined chunking of large values (FastCDC-style gear hash, ~16 KiB average).

A value whose encoding exceeds :data:`CHUNK_THRESHOLD` is stored as a ``chunked`` object whose
chunks are ``blob`` objects. Cut points depend only on nearby bytes, so a small edit inside a
5 MB document changes one or two chunks and leaves the rest shared.
"""

from __future__ import annotations

from ..hashing import ObjectId, hash_bytes
from ..objects import Blob, Chunked, encode_with_id

CHUNK_THRESHOLD = 64 * 1024
MIN_CHUNK = 4 * 1024
AVG_CHUNK = 16 * 1024
MAX_CHUNK = 64 * 1024

_M64 = (1 << 64) - 1
# 256 pseudo-random 64-bit values derived from a fixed seed: stable across versions.
_GEAR = tuple(int.from_bytes(hash_bytes(b"statevcs-gear-%d" % i)[:8], "little") for i in range(256))
# Normalized chunking: a stricter mask before the average size, a looser one after it.
_MASK_SMALL = 0x0000D9F003530000  # 15 one-bits
_MASK_LARGE = 0x0000D90003530000  # 11 one-bits


def cut_points(data: bytes) -> list[int]:
    """Return the end offsets of the chunks of ``data`` (the last one is ``len(data)``)."""
    gear = _GEAR
    points: list[int] = []
    start = 0
    size = len(data)
    while size - start > MIN_CHUNK:
        end = min(start + MAX_CHUNK, size)
        middle = min(start + AVG_CHUNK, end)
        h = 0
        i = start + MIN_CHUNK
        cut = end
        while i < middle:
            h = ((h << 1) + gear[data[i]]) & _M64
            if not h & _MASK_SMALL:
                cut = i + 1
                break
            i += 1
        else:
            while i < end:
                h = ((h << 1) + gear[data[i]]) & _M64
                if not h & _MASK_LARGE:
                    cut = i + 1
                    break
                i += 1
        points.append(cut)
        start = cut
    if start < size:
        points.append(size)
    return points


def chunk(data: bytes, out: dict[ObjectId, bytes]) -> ObjectId:
    """Store ``data`` as a ``chunked`` object of blob chunks into ``out``; return its id."""
    chunk_ids: list[ObjectId] = []
    start = 0
    for end in cut_points(data):
        chunk_id, encoded = encode_with_id(Blob(data[start:end]))
        out[chunk_id] = encoded
        chunk_ids.append(chunk_id)
        start = end
    object_id, encoded = encode_with_id(Chunked(len(data), tuple(chunk_ids)))
    out[object_id] = encoded
    return object_id
