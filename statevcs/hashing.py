"""Object ids: blake3-256 digests of an object's encoded bytes, and their hex forms."""

from __future__ import annotations

from blake3 import blake3

ObjectId = bytes
"""A 32-byte blake3 digest naming one stored object."""

ID_SIZE = 32
HEX_SIZE = 2 * ID_SIZE
MIN_PREFIX = 4


def hash_bytes(data: bytes) -> ObjectId:
    """Return the object id (blake3-256 digest) of ``data``."""
    return blake3(data).digest()


def to_hex(object_id: ObjectId) -> str:
    """Return the 64-character lowercase hex form of an object id."""
    return object_id.hex()


def from_hex(text: str) -> ObjectId:
    """Parse a full 64-character hex id; raise ``ValueError`` if it is not one."""
    if len(text) != HEX_SIZE:
        raise ValueError(f"object ids have {HEX_SIZE} hex characters, got {len(text)}: {text!r}")
    return bytes.fromhex(text)


def prefix_range(prefix: str) -> tuple[ObjectId, ObjectId]:
    """Return the inclusive (low, high) id range matching a hex ``prefix``."""
    prefix = prefix.lower()
    return bytes.fromhex(prefix.ljust(HEX_SIZE, "0")), bytes.fromhex(prefix.ljust(HEX_SIZE, "f"))
