"""How object bytes are stored: zstd-compressed where it pays, always named by their plain bytes.

An object's id is the blake3 hash of its canonical (uncompressed) encoding, so deduplication,
fsck and the git mirror never depend on the compressor. What a store holds is either those
canonical bytes (a msgpack array, first byte ``0x9_`` or ``0xdc``/``0xdd``) or a zstd frame
(first four bytes ``28 b5 2f fd``, which no msgpack array starts with): the frame is the flag.

Reading is bounded: a frame must declare its content size, and a size above
:data:`MAX_EXPANDED` (a compression bomb, or damage) is refused with ``CorruptObject`` before
anything is allocated.

A repository may train a zstd **dictionary** on its own messages (small objects compress about
twice as well with one), and one for its commits. A frame made with it names the dictionary's
id; the dictionary lives in the repository as a ``zdict`` object, and this module keeps a
registry of those it has been given per repository (:func:`register_dictionary`, by a
:data:`Scope`: two repositories may hold different dictionaries under one id, so a frame is
always read with its own repository's). Reading a frame whose dictionary is not registered
raises :class:`MissingDictionary`, which the object database answers by loading it from the
repository (see :mod:`statevcs.objectdb`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

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


Scope = str
"""Whose dictionaries: a repository's identity (``Store.identity``); frames name a dictionary by
id alone, and two repositories may hold different dictionaries under one id. ``""`` is the
process-wide scope, for callers that hold no store."""

_Pair = tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]


class _Codecs(threading.local):
    """One compressor and one decompressor per thread and dictionary (zstandard's are not
    thread-safe)."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(
            level=LEVEL, write_content_size=True, write_checksum=False
        )
        self.decompressor = zstandard.ZstdDecompressor()
        self.with_dictionary: dict[tuple[Scope, int], _Pair] = {}

    def for_dictionary(self, dict_id: int, scope: Scope = "") -> _Pair | None:
        found = self.with_dictionary.get((scope, dict_id))
        if found is None:
            dictionary = _dictionaries.get((scope, dict_id))
            if dictionary is None:
                return None
            found = self.with_dictionary[scope, dict_id] = (
                zstandard.ZstdCompressor(
                    level=LEVEL, dict_data=dictionary, write_content_size=True
                ),
                zstandard.ZstdDecompressor(dict_data=dictionary),
            )
        return found


_codecs = _Codecs()
_dictionaries: dict[tuple[Scope, int], zstandard.ZstdCompressionDict] = {}
_by_content: dict[bytes, zstandard.ZstdCompressionDict] = {}
"""Every dictionary registered, by its bytes' hash: repositories holding the same dictionary
share one (and its precomputed tables)."""
_registry_lock = threading.Lock()

DICTIONARY_SIZE = 32 * 1024
"""The size of a trained dictionary (measured: 16 KiB shrinks messages to 0.49 of their size,
32 KiB to 0.43, 64 KiB to 0.42, on the core benchmark's messages)."""

MIN_DICTIONARY_SIZE = 1024
"""The smallest dictionary statevcs trains. zstd returns 120-240 byte ones for very repetitive
samples; gc tells a stored dictionary from other unreachable objects by its size from this up,
so a smaller one could be collected while objects a racing writer compressed with it remain."""


class MissingDictionary(CorruptObject):
    """A frame was compressed with a dictionary this process has not been given yet."""

    def __init__(self, object_id: ObjectId, dict_id: int) -> None:
        super().__init__(
            to_hex(object_id),
            f"it was compressed with zstd dictionary {dict_id:08x}, which the repository does "
            "not hold",
        )
        self.dict_id = dict_id


class DictionaryConflict(CorruptObject):
    """A repository holds two different dictionaries under one id (frames name only the id)."""

    def __init__(self, dict_id: int) -> None:
        super().__init__(
            f"(dictionary {dict_id:08x})",
            "the repository holds two different zstd dictionaries with this id; restore its "
            "config from a backup",
        )
        self.dict_id = dict_id


def register_dictionary(data: bytes, scope: Scope = "") -> int:
    """Make a dictionary (the bytes of a ``zdict`` object) known to ``scope``; return its id.

    Raises ``ValueError`` for bytes that are not a zstd dictionary with an id, and
    :class:`DictionaryConflict` when another dictionary holds that id in ``scope`` (frames
    compressed or read with the wrong one would be lost).
    """
    dict_id = dict_id_of(data)
    digest = hash_bytes(data)
    with _registry_lock:
        found = _dictionaries.get((scope, dict_id))
        if found is None:
            shared = _by_content.get(digest)
            if shared is None:
                shared = _by_content[digest] = zstandard.ZstdCompressionDict(
                    data, dict_type=zstandard.DICT_TYPE_FULLDICT
                )
            _dictionaries[scope, dict_id] = shared
        elif found.as_bytes() != data:
            raise DictionaryConflict(dict_id)
    return dict_id


def dict_id_of(data: bytes) -> int:
    """The id of a dictionary (the bytes of a ``zdict`` object); ``ValueError`` if none."""
    try:
        dict_id = zstandard.ZstdCompressionDict(
            data, dict_type=zstandard.DICT_TYPE_FULLDICT
        ).dict_id()
    except zstandard.ZstdError as exc:
        raise ValueError(f"not a zstd dictionary: {exc}") from None
    if not dict_id:
        raise ValueError("a zstd dictionary without an id cannot be named by frames")
    return dict_id


def has_dictionary(dict_id: int, data: bytes | None = None, scope: Scope = "") -> bool:
    """Whether the dictionary ``dict_id`` is registered in ``scope`` (holding ``data``, when
    given)."""
    found = _dictionaries.get((scope, dict_id))
    return found is not None and (data is None or found.as_bytes() == data)


def train_dictionary(
    samples: list[bytes], size: int = DICTIONARY_SIZE, *, for_commits: bool = False, salt: int = 0
) -> bytes | None:
    """Train a dictionary on sample objects; ``None`` when zstd finds too little to learn.

    Its id comes from a hash of the samples (and ``salt``: another salt gives another id): a
    commit dictionary's (``for_commits``) in :data:`COMMIT_DICTIONARY_IDS`, which
    :func:`is_commit_dictionary` recognizes, a message dictionary's below them. Ids are drawn
    from 2**28 or more values, and the object database draws again (another ``salt``) an id its
    repository already names: one repository never holds two dictionaries under one id, and
    two repositories that do are told apart by their :data:`Scope`.
    """
    buffers: list[bytes | bytearray | memoryview] = list(samples)
    digest = hash_bytes(b"".join(samples) + (salt.to_bytes(4, "big") if salt else b""))
    drawn = int.from_bytes(digest[:8], "big")
    if for_commits:
        dict_id = COMMIT_DICTIONARY_IDS.start + drawn % len(COMMIT_DICTIONARY_IDS)
    else:
        dict_id = _FIRST_USER_ID + drawn % (COMMIT_DICTIONARY_IDS.start - _FIRST_USER_ID)
    try:
        trained = zstandard.train_dictionary(size, buffers, level=LEVEL, dict_id=dict_id)
    except zstandard.ZstdError:
        return None
    data = trained.as_bytes()
    return data if len(data) >= MIN_DICTIONARY_SIZE else None  # too little to learn, too


DICTIONARY_PREFIX = "core.zstd-dict."
"""Config keys ``core.zstd-dict.<dictionary id, 8 hex digits>``: the ``zdict`` object's hex id,
for readers of frames that name that dictionary."""

COMMIT_DICTIONARY_SIZE = 4 * 1024
"""The size of a dictionary trained on commits (measured on LangGraph checkpoint commits of
~580 bytes: 4 KiB shrinks them to 0.36 of their size, 16 KiB to 0.37; without a dictionary
zstd keeps 0.79, with the messages' dictionary 0.76)."""

COMMIT_DICTIONARY_IDS = range(0x5000_0000, 0x6000_0000)
"""The ids commit dictionaries are given (2**28 of them, below the 2**31 zstd leaves to users)."""
_FIRST_USER_ID = 32_768
"""zstd reserves the ids below this one."""


def is_commit_dictionary(dict_id: int) -> bool:
    """Whether frames naming ``dict_id`` may hold commits (a store indexes their parents).

    A message dictionary trained by statevcs 0.2 development builds before commits had
    dictionaries got an id from zstd, in this range once in eight repositories: a store then
    decompresses its frames to find out, and finds no commit in them.
    """
    return dict_id in COMMIT_DICTIONARY_IDS


def declared_size(data: bytes) -> int:
    """The plain size a stored object's frame declares (-1: not a frame, or none declared)."""
    if data[:4] != ZSTD_MAGIC:
        return -1
    try:
        size = int(zstandard.get_frame_parameters(data).content_size)
    except zstandard.ZstdError:
        return -1
    return size if size < _SIZE_NOT_DECLARED else -1


def frame_dictionary(data: bytes) -> int:
    """The dictionary id a stored object's frame names (0: none, or not a frame)."""
    if data[:4] != ZSTD_MAGIC:
        return 0
    try:
        return int(zstandard.get_frame_parameters(data).dict_id)
    except zstandard.ZstdError:
        return 0


def pack(data: bytes, dictionary: int = 0, scope: Scope = "") -> bytes:
    """Return the bytes to store for canonical ``data``: a zstd frame if it pays, else ``data``.

    ``dictionary`` names a dictionary registered in ``scope`` to compress with (0: none).
    """
    return _pack_with(_compressor(dictionary, scope).compress, data)


def pack_many(
    objects: Mapping[ObjectId, bytes],
    dictionary: int = 0,
    *,
    min_size: int = MIN_SIZE,
    scope: Scope = "",
) -> dict[ObjectId, bytes]:
    """:func:`pack` of every value of ``objects`` (the same bytes), finding the compressor once.

    ``min_size``: objects smaller than this stay as they are.
    """
    if not objects:
        return {}  # as pack would: nothing packed, nothing to refuse
    compress = _compressor(dictionary, scope).compress
    return {object_id: _pack_with(compress, data, min_size) for object_id, data in objects.items()}


def _compressor(dictionary: int, scope: Scope) -> zstandard.ZstdCompressor:
    """This thread's compressor for ``dictionary`` (0: none); ``ValueError`` if unregistered."""
    if not dictionary:
        return _codecs.compressor
    codecs = _codecs.for_dictionary(dictionary, scope)
    if codecs is None:
        raise ValueError(f"zstd dictionary {dictionary:08x} is not registered")
    return codecs[0]


def _pack_with(compress: Callable[[bytes], bytes], data: bytes, min_size: int = MIN_SIZE) -> bytes:
    if data[:4] == ZSTD_MAGIC:
        # Never a canonical object (those are msgpack arrays); framed so it reads back as is.
        return compress(data)
    if len(data) < min_size:
        return data
    packed = compress(data)
    return packed if len(packed) <= len(data) * KEEP_RATIO else data


def is_packed(data: bytes) -> bool:
    """Return whether stored bytes are a zstd frame (rather than a plain object)."""
    return data[:4] == ZSTD_MAGIC


def unpack(object_id: ObjectId, data: bytes, scope: Scope = "") -> bytes:
    """Return the canonical bytes of stored ``data`` (``CorruptObject`` for a bad frame).

    A frame that names a dictionary is read with the one registered under that id in
    ``scope`` (:class:`MissingDictionary` if none). The hash is not checked here: callers
    check the result against ``object_id``.
    """
    if data[:4] != ZSTD_MAGIC:
        return data
    try:
        params = _frame_parameters(data)  # one header parse gives the size and the dictionary
    except zstandard.ZstdError:
        raise CorruptObject(to_hex(object_id), "its zstd frame header is damaged") from None
    size = params.content_size
    if size > MAX_EXPANDED:
        if size >= _SIZE_NOT_DECLARED:
            raise CorruptObject(to_hex(object_id), "its zstd frame does not declare its size")
        raise CorruptObject(
            to_hex(object_id),
            f"its zstd frame would expand to {size} bytes, more than the {MAX_EXPANDED} allowed",
        )
    if size == 0 and zstandard.frame_content_size(data) < 0:
        # Older zstandard releases report an undeclared size as 0.
        raise CorruptObject(to_hex(object_id), "its zstd frame does not declare its size")
    codecs = _codecs
    dict_id = params.dict_id
    if dict_id:
        found = codecs.with_dictionary.get((scope, dict_id)) or codecs.for_dictionary(
            dict_id, scope
        )
        if found is None:
            raise MissingDictionary(object_id, dict_id)
        decompressor = found[1]
    else:
        decompressor = codecs.decompressor
    try:
        # The frame declares its size (checked above): zstandard decodes into a buffer of that
        # size and fails on a frame that would write more, so the size bounds the output.
        plain = decompressor.decompress(data)
    except zstandard.ZstdError as exc:
        raise CorruptObject(to_hex(object_id), f"its zstd frame is damaged ({exc})") from None
    if len(plain) != size:
        raise CorruptObject(to_hex(object_id), "its zstd frame holds another size than it says")
    return plain


_frame_parameters = zstandard.get_frame_parameters
_SIZE_NOT_DECLARED = 2**64 - 2
"""zstd's "unknown" (2**64 - 1) and "error" (2**64 - 2) content sizes, as unsigned numbers."""


def content_id(data: bytes, scope: Scope = "") -> ObjectId:
    """Return the id of stored bytes: the hash of their canonical (uncompressed) form."""
    if data[:4] != ZSTD_MAGIC:
        return hash_bytes(data)
    return hash_bytes(unpack(b"\0" * 32, data, scope))


__all__ = [
    "COMMIT_DICTIONARY_IDS",
    "COMMIT_DICTIONARY_SIZE",
    "DICTIONARY_PREFIX",
    "MAX_EXPANDED",
    "MIN_DICTIONARY_SIZE",
    "ZSTD_MAGIC",
    "DictionaryConflict",
    "MissingDictionary",
    "Scope",
    "content_id",
    "declared_size",
    "dict_id_of",
    "frame_dictionary",
    "has_dictionary",
    "is_commit_dictionary",
    "is_packed",
    "pack",
    "pack_many",
    "register_dictionary",
    "train_dictionary",
    "unpack",
]
