"""Content-defined chunking of large values.

A message whose encoding exceeds :data:`CHUNK_THRESHOLD` is stored as a ``chunked`` object
whose chunks are ``blob`` objects; so is a state or extras value longer than its chunker's
:attr:`Chunker.value_threshold`. Cut points depend only on nearby bytes, so a small edit inside
a 5 MB document changes one or two chunks and leaves the rest shared.

Cut points decide object ids, so every writer of one repository must cut the same way: a
repository records its chunker in its config (:data:`CHUNKER_KEY`), fixed when it is created.

- ``fastcdc-2020-small-values`` (new repositories): ``fastcdc-2020`` for messages; state and
  extras values are chunked from 8 KiB on, and up to 128 KiB in ~2 KiB chunks (512 B minimum,
  8 KiB maximum), so a value an agent edits a little each turn (a to-do list, a scratchpad)
  stores about the edit, not the value again. Larger values are cut as by ``fastcdc-2020``.
- ``fastcdc-2020``: FastCDC 2020 as specified by fastcdc-rs's ``v2020`` module, run natively by
  pyfastcdc (hundreds of MB/s); 4 KiB minimum, 16 KiB average, 64 KiB maximum, normalization
  level 2, the reference gear table (seed 0). State values are chunked above 64 KiB only.
- ``gear-1``: statevcs's first chunker, a gear hash looped in Python (a few MB/s). Repositories
  that record no chunker were created before chunkers were recorded; they keep it, so the ids
  they get are the ids older statevcs versions write there.

Reading never needs a chunker: a chunked object lists its chunks, which are concatenated.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..errors import RepositoryError
from ..hashing import ObjectId, hash_bytes
from ..objects import Blob, Chunked, encode_with_id

if TYPE_CHECKING:
    from pyfastcdc import FastCDC

CHUNK_THRESHOLD = 64 * 1024
"""Messages whose encoding is longer are chunked (and values, with the older chunkers)."""
MIN_CHUNK = 4 * 1024
AVG_CHUNK = 16 * 1024
MAX_CHUNK = 64 * 1024

SMALL_VALUE_THRESHOLD = 8 * 1024
"""``fastcdc-2020-small-values`` chunks state and extras values whose encoding is longer."""
SMALL_MIN_CHUNK = 512
SMALL_AVG_CHUNK = 2 * 1024
SMALL_MAX_CHUNK = 8 * 1024
SMALL_CHUNKS_UP_TO = 128 * 1024
"""Values up to this size get small chunks (at most ~64); longer ones the usual ~16 KiB chunks.
Each chunk is an object to read (one request each on S3: 2 KiB chunks made a 1 MB value's
cold read 434 requests instead of 67, ``benchmarks/bench_small_values_s3.py``), and a chunked
object lists its chunks' ids, which an edit rewrites."""

CHUNKER_KEY = "core.chunker"
"""The config key naming the chunker a repository writes large values with."""


class Chunker:
    """One way of cutting large values; its :attr:`name` is what a repository records."""

    name: str
    value_threshold: int = CHUNK_THRESHOLD
    """State and extras values whose encoding is longer than this are chunked."""

    def cut_points(self, data: bytes) -> list[int]:
        """Return the end offsets of the chunks of ``data`` (the last one is ``len(data)``)."""
        raise NotImplementedError

    def value_cut_points(self, data: bytes) -> list[int]:
        """:meth:`cut_points` of a state or extras value (the same unless a chunker says)."""
        return self.cut_points(data)

    def chunk(self, data: bytes, out: dict[ObjectId, bytes]) -> ObjectId:
        """Store ``data`` as a ``chunked`` object of blob chunks into ``out``; return its id."""
        return _chunked(data, self.cut_points(data), out)

    def chunk_value(self, data: bytes, out: dict[ObjectId, bytes]) -> ObjectId:
        """:meth:`chunk` of a state or extras value, cut by :meth:`value_cut_points`."""
        return _chunked(data, self.value_cut_points(data), out)

    def __repr__(self) -> str:
        return f"<chunker {self.name}>"


def _chunked(data: bytes, points: list[int], out: dict[ObjectId, bytes]) -> ObjectId:
    """Store ``data`` cut at ``points`` as blobs and a ``chunked`` object; return its id."""
    chunk_ids: list[ObjectId] = []
    start = 0
    for end in points:
        chunk_id, encoded = encode_with_id(Blob(data[start:end]))
        out[chunk_id] = encoded
        chunk_ids.append(chunk_id)
        start = end
    object_id, encoded = encode_with_id(Chunked(len(data), tuple(chunk_ids)))
    out[object_id] = encoded
    return object_id


class FastCDC2020(Chunker):
    """FastCDC 2020 through pyfastcdc's native loop (the same cut points on every platform)."""

    name = "fastcdc-2020"

    def __init__(self) -> None:
        self._cdc: dict[int, FastCDC] = {}
        self._lock = threading.Lock()

    def _native(self, average: int = AVG_CHUNK) -> FastCDC:
        # Imported on first use, so ``import statevcs`` stays fast.
        with self._lock:
            found = self._cdc.get(average)
            if found is None:
                from pyfastcdc import FastCDC

                minimum, maximum = _SIZES[average]
                found = self._cdc[average] = FastCDC(
                    average,
                    min_size=minimum,
                    max_size=maximum,
                    normalized_chunking=2,
                    seed=0,
                )
            return found

    def cut_points(self, data: bytes) -> list[int]:
        """Return the end offsets of the chunks of ``data`` (the last one is ``len(data)``)."""
        return self._cut(data, AVG_CHUNK)

    def _cut(self, data: bytes, average: int) -> list[int]:
        points: list[int] = []
        end = 0
        for piece in self._native(average).cut_buf(data):
            end += piece.length
            points.append(end)
        return points


_SIZES = {AVG_CHUNK: (MIN_CHUNK, MAX_CHUNK), SMALL_AVG_CHUNK: (SMALL_MIN_CHUNK, SMALL_MAX_CHUNK)}
"""Minimum and maximum chunk size for each average FastCDC is run with."""


class FastCDC2020SmallValues(FastCDC2020):
    """``fastcdc-2020`` for messages and large values; ~2 KiB chunks for state and extras
    values from 8 KiB to 128 KiB, so an agent's small edit to one stores about the edit."""

    name = "fastcdc-2020-small-values"
    value_threshold = SMALL_VALUE_THRESHOLD

    def value_cut_points(self, data: bytes) -> list[int]:
        """Return the end offsets of a state or extras value's chunks."""
        if len(data) > SMALL_CHUNKS_UP_TO:
            return self._cut(data, AVG_CHUNK)
        return self._cut(data, SMALL_AVG_CHUNK)


_M64 = (1 << 64) - 1


class Gear1(Chunker):
    """statevcs's first chunker: a FastCDC-style gear hash looped in Python (slow)."""

    name = "gear-1"
    # 256 pseudo-random 64-bit values derived from a fixed seed: stable across versions.
    GEAR = tuple(
        int.from_bytes(hash_bytes(b"statevcs-gear-%d" % i)[:8], "little") for i in range(256)
    )
    # Normalized chunking: a stricter mask before the average size, a looser one after it.
    MASK_SMALL = 0x0000D9F003530000  # 15 one-bits
    MASK_LARGE = 0x0000D90003530000  # 11 one-bits

    def cut_points(self, data: bytes) -> list[int]:
        """Return the end offsets of the chunks of ``data`` (the last one is ``len(data)``)."""
        gear = self.GEAR
        mask_small, mask_large = self.MASK_SMALL, self.MASK_LARGE
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
                if not h & mask_small:
                    cut = i + 1
                    break
                i += 1
            else:
                while i < end:
                    h = ((h << 1) + gear[data[i]]) & _M64
                    if not h & mask_large:
                        cut = i + 1
                        break
                    i += 1
            points.append(cut)
            start = cut
        if start < size:
            points.append(size)
        return points


FASTCDC_2020_SMALL_VALUES: Chunker = FastCDC2020SmallValues()
FASTCDC_2020: Chunker = FastCDC2020()
GEAR_1: Chunker = Gear1()

CHUNKERS: Mapping[str, Chunker] = MappingProxyType(
    {c.name: c for c in (FASTCDC_2020_SMALL_VALUES, FASTCDC_2020, GEAR_1)}
)
"""Every chunker this version can write with, by the name a repository records."""

DEFAULT_CHUNKER = FASTCDC_2020_SMALL_VALUES
"""What a new repository writes with."""

UNRECORDED_CHUNKER = GEAR_1
"""What a repository that records no chunker writes with (it was created before they were)."""


def chunker_for(name: str | None) -> Chunker:
    """Return the chunker a repository's :data:`CHUNKER_KEY` value names.

    ``None`` (no value recorded) is :data:`UNRECORDED_CHUNKER`; an unknown name raises
    ``RepositoryError``: writing with any other chunker would give the same value other ids.
    """
    if name is None:
        return UNRECORDED_CHUNKER
    found = CHUNKERS.get(name)
    if found is None:
        raise RepositoryError(
            f"this repository cuts large values with chunker {name[:100]!r}, which this statevcs "
            f"version does not know (it knows {', '.join(sorted(CHUNKERS))}); writing with "
            "another chunker would give equal values other ids, so use a newer statevcs"
        )
    return found


def cut_points(data: bytes, chunker: Chunker = DEFAULT_CHUNKER) -> list[int]:
    """Return the end offsets of the chunks ``chunker`` cuts ``data`` into as a message (a state
    or extras value: :meth:`Chunker.value_cut_points`)."""
    return chunker.cut_points(data)


def chunk(data: bytes, out: dict[ObjectId, bytes], chunker: Chunker = DEFAULT_CHUNKER) -> ObjectId:
    """Store ``data`` as a ``chunked`` object into ``out``, cut by ``chunker`` as a message is
    (a value: :meth:`Chunker.chunk_value`); return its id."""
    return chunker.chunk(data, out)
