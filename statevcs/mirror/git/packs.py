"""Git objects as raw bytes, and writing new ones into the mirror as one indexed pack file.

An export builds thousands of small objects whose layout it knows exactly, so it hashes and
serializes them itself (a tree of a hundred messages is a join of cached entries) and writes
them as one pack whose index comes from the offsets it wrote: dulwich's ``add_objects`` reads
the whole pack back to index it, which was half the cost of an export.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dulwich.object_store import BaseObjectStore

COMMIT, TREE, BLOB = 1, 2, 3
"""Pack type numbers of the objects a mirror holds."""
_TYPE_NAMES = {COMMIT: b"commit", TREE: b"tree", BLOB: b"blob"}
FILE_ENTRY = b"100644"
TREE_ENTRY = b"40000"
_COMPRESSION = 1
"""zlib level: git's own for loose objects (``core.looseCompression``); ``git gc`` repacks."""


@dataclass(frozen=True, slots=True)
class RawObject:
    """A git object: its pack type number, its content and its binary sha."""

    type_num: int
    data: bytes
    binsha: bytes

    @property
    def sha(self) -> bytes:
        """The hex sha, as git and dulwich name objects."""
        return self.binsha.hex().encode("ascii")


def raw_object(type_num: int, data: bytes) -> RawObject:
    """The git object of type ``type_num`` holding ``data``."""
    header = b"%s %d\x00" % (_TYPE_NAMES[type_num], len(data))
    return RawObject(type_num, data, hashlib.sha1(header + data).digest())


def tree_entry(mode: bytes, name: bytes, sha: bytes) -> bytes:
    """One serialized tree entry (``sha`` in hex)."""
    return mode + b" " + name + b"\x00" + bytes.fromhex(sha.decode("ascii"))


def tree_data(entries: Iterable[tuple[bytes, bytes, bytes]]) -> bytes:
    """A tree's content from ``(mode, name, hex sha)`` entries, in git's order."""

    def order(entry: tuple[bytes, bytes, bytes]) -> bytes:
        # git sorts a folder as if its name ended in "/".
        mode, name, _ = entry
        return name + b"/" if mode == TREE_ENTRY else name

    return b"".join(tree_entry(*entry) for entry in sorted(entries, key=order))


def _window_bits(size: int) -> int:
    """The smallest zlib window that holds ``size`` bytes (10 to 15): the same output for
    objects smaller than the window, at a fraction of the set-up cost of git's 32 KiB window
    (an export compresses thousands of objects of a few KiB). Any reader inflates it."""
    return min(15, max(10, size.bit_length()))


def _pack_header(type_num: int, size: int) -> bytes:
    out = bytearray()
    byte = (type_num << 4) | (size & 15)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def write_pack(store: BaseObjectStore, objects: Sequence[RawObject]) -> None:
    """Add ``objects`` (none already in ``store``) to ``store`` as one new pack.

    The pack and its index are written under temporary names git ignores, then renamed: the
    pack first and the index last, as git does, so no reader sees a pack without its index.
    """
    from dulwich.object_store import DiskObjectStore
    from dulwich.pack import write_pack_index

    if not objects:
        return
    if not isinstance(store, DiskObjectStore):
        # Mirrors are opened from a path, so their store is always on disk.
        raise TypeError(f"a mirror's object store is on disk, not a {type(store).__name__}")
    folder = store.pack_dir
    os.makedirs(folder, exist_ok=True)
    pack_fd, pack_tmp = tempfile.mkstemp(dir=folder, prefix="tmp_pack_")
    idx_fd, idx_tmp = tempfile.mkstemp(dir=folder, prefix="tmp_idx_")
    try:
        digest = hashlib.sha1()
        rows: list[tuple[bytes, int, int]] = []
        with os.fdopen(pack_fd, "wb") as handle:
            start = b"PACK" + struct.pack(">II", 2, len(objects))
            handle.write(start)
            digest.update(start)
            offset = len(start)
            for obj in objects:
                packed = zlib.compress(obj.data, _COMPRESSION, _window_bits(len(obj.data)))
                chunk = _pack_header(obj.type_num, len(obj.data)) + packed
                handle.write(chunk)
                digest.update(chunk)
                rows.append((obj.binsha, offset, zlib.crc32(chunk)))
                offset += len(chunk)
            checksum = digest.digest()
            handle.write(checksum)
            handle.flush()
            os.fsync(handle.fileno())
        rows.sort()
        with os.fdopen(idx_fd, "wb") as handle:
            write_pack_index(handle, rows, checksum)
            handle.flush()
            os.fsync(handle.fileno())
        for path in (pack_tmp, idx_tmp):
            os.chmod(path, 0o444)
        name = os.path.join(folder, "pack-" + checksum.hex())
        os.replace(pack_tmp, name + ".pack")
        os.replace(idx_tmp, name + ".idx")
    except BaseException:
        for path in (pack_tmp, idx_tmp):
            if os.path.exists(path):
                os.remove(path)
        raise
