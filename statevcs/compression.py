"""How object bytes are stored: zstd-compressed where it pays, always named by their plain bytes.

An object's id is the blake3 hash of its canonical (uncompressed) encoding, so deduplication,
fsck and the git mirror never depend on the compressor. What a store holds is either those
canonical bytes (a msgpack array, first byte ``0x9_`` or ``0xdc``/``0xdd``) or a zstd frame
(first four bytes ``28 b5 2f fd``, which no msgpack array starts with): the frame is the flag.

Reading is bounded: a frame must declare its content size, and a size above
:data:`MAX_EXPANDED` (a compression bomb, or damage) is refused with ``CorruptObject`` before
anything is allocated.
"""

from __future__ import annotations

import threading

import zstandard

from .errors import CorruptObject
from .hashing import ObjectId, hash_bytes, to_hex

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
"""The first bytes of a zstd frame; no canonical object starts with them."""

MIN_SIZE = 160
"""Objects smaller than this are stored as they are (zstd's frame costs more than it saves)."""

KEEP_RATIO = 0.9
"""A compressed form is kept only when at most this fraction of the plain bytes."""

MAX_EXPANDED = 256 * 1024 * 1024
"""The largest object a frame may expand to (the largest legal object is far smaller)."""

LEVEL = 3


class _Codecs(threading.local):
    """One compressor and one decompressor per thread (zstandard's are not thread-safe)."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(
            level=LEVEL, write_content_size=True, write_checksum=False
        )
        self.decompressor = zstandard.ZstdDecompressor()


_codecs = _Codecs()


def pack(data: bytes) -> bytes:
    """Return the bytes to store for canonical ``data``: a zstd frame if it pays, else ``data``."""
    if data[:4] == ZSTD_MAGIC:
        # Never a canonical object (those are msgpack arrays); framed so it reads back as is.
        return _codecs.compressor.compress(data)
    if len(data) < MIN_SIZE:
        return data
    packed = _codecs.compressor.compress(data)
    return packed if len(packed) <= len(data) * KEEP_RATIO else data


def is_packed(data: bytes) -> bool:
    """Return whether stored bytes are a zstd frame (rather than a plain object)."""
    return data[:4] == ZSTD_MAGIC


def unpack(object_id: ObjectId, data: bytes) -> bytes:
    """Return the canonical bytes of stored ``data`` (``CorruptObject`` for a bad frame).

    The hash is not checked here: callers check the result against ``object_id``.
    """
    if data[:4] != ZSTD_MAGIC:
        return data
    try:
        size = zstandard.frame_content_size(data)
    except zstandard.ZstdError:
        raise CorruptObject(to_hex(object_id), "its zstd frame header is damaged") from None
    if size < 0:
        raise CorruptObject(to_hex(object_id), "its zstd frame does not declare its size")
    if size > MAX_EXPANDED:
        raise CorruptObject(
            to_hex(object_id),
            f"its zstd frame would expand to {size} bytes, more than the {MAX_EXPANDED} allowed",
        )
    try:
        plain = _codecs.decompressor.decompress(data, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise CorruptObject(to_hex(object_id), f"its zstd frame is damaged ({exc})") from None
    if len(plain) != size:
        raise CorruptObject(to_hex(object_id), "its zstd frame holds another size than it says")
    return plain


def content_id(data: bytes) -> ObjectId:
    """Return the id of stored bytes: the hash of their canonical (uncompressed) form."""
    if data[:4] != ZSTD_MAGIC:
        return hash_bytes(data)
    return hash_bytes(unpack(b"\0" * 32, data))


__all__ = ["MAX_EXPANDED", "ZSTD_MAGIC", "content_id", "is_packed", "pack", "unpack"]
