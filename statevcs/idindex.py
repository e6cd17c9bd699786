"""Lineage indexes: a framework's ids (a LangGraph ``checkpoint_id``) to commits, per history.

A commit whose history is a single line (every commit one parent, as a LangGraph thread's
checkpoints are) names, in its metadata, an index of the framework ids of its own ancestors:

* ``metadata[ns]["ix"]``: the hex id of the index's newest **segment** (a ``blob`` holding a
  msgpack map), which lists the older segments; together they hold, oldest first, the id and
  the commit of every ancestor from the root up to the index's *base*;
* ``metadata[ns]["ixn"]``: how many commits (this one included) are above the base, the
  *gap*; every id in the gap is greater than every id in the index (a writer that cannot
  say so writes no ``ix``).

So a fresh handle finds an old checkpoint from a head in three or four reads (the head, the
newest segment, the segment whose id range holds it, the commit), and being in the head's
index *is* the proof that the commit is in the head's history: no walk. A commit's index
never changes (it is part of what the commit's id hashes); a commit moved onto another
parent by a rewrite is a new commit, written without one. Segments merge by size class as
the commit graph's do (eight of one class become one of the next), so an index of n commits
has O(log n) segments and each entry is rewritten about log8(n / 64) times.

The index is an accelerator: a missing, damaged or malformed segment makes a lookup return
``None`` (the caller walks instead); ``gc`` keeps the segments the refs' commits name;
``fsck`` checks them against the history (:func:`check_lineage_indexes`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from .errors import CorruptObject, StateVCSError
from .hashing import ID_SIZE, ObjectId, from_hex, to_hex
from .objectdb import ObjectDB, decode_stored
from .objects import Blob, CommitObject, encode_with_id
from .stores.base import Store

NAMESPACES: tuple[str, ...] = ("langgraph",)
"""The commit metadata namespaces whose ``ix`` names a lineage index (gc keeps them)."""
INDEX_FIELD = "ix"
"""Metadata field: the hex id of the newest segment of the commit's lineage index."""
GAP_FIELD = "ixn"
"""Metadata field: commits above the index's base, this one included."""
SEGMENT_SIZE = 64
"""A writer cuts a new segment when a gap reaches this many commits."""
_FORMAT = "statevcs.lineage-index"
_MERGE_WIDTH = 8
_MAX_SEGMENTS = 256
_MAX_KEY = 1024


@dataclass(frozen=True, slots=True)
class Older:
    """An older segment as the newest one lists it."""

    segment: ObjectId
    count: int
    low: str
    """Its smallest key."""
    high: str
    """Its greatest key."""
    first: ObjectId
    """Its first (oldest) commit."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One decoded segment: its commits' keys and ids, oldest first, and the older segments."""

    keys: list[str]
    commits: bytes
    older: tuple[Older, ...]
    high: str
    """The greatest key of the whole index (this segment and the older ones)."""

    def __len__(self) -> int:
        return len(self.keys)

    def commit_at(self, position: int) -> ObjectId:
        """The commit at ``position``."""
        return self.commits[position * ID_SIZE : (position + 1) * ID_SIZE]


@dataclass(frozen=True, slots=True)
class Hit:
    """A commit of the index carrying the key, and the commit above it in the lineage
    (``None``: the lowest commit of the head's gap, found by a walk)."""

    commit: ObjectId
    above: ObjectId | None


def encode_segment(
    keys: Sequence[str], commits: Sequence[ObjectId], older: Sequence[Older], high: str
) -> tuple[ObjectId, bytes]:
    """Encode one segment: ``(id, stored bytes)`` of its blob."""
    payload = msgpack.packb(
        {
            "f": _FORMAT,
            "keys": list(keys),
            "commits": b"".join(commits),
            "older": [[o.segment, o.count, o.low, o.high, o.first] for o in older],
            "high": high,
        },
        use_bin_type=True,
    )
    return encode_with_id(Blob(payload))


def parse_segment(data: bytes) -> Segment | None:
    """A segment from its blob's payload (``None``: not a well-formed segment)."""
    try:
        # No text longer than a key (checked in C as it is read): keys, bounds and high are
        # all keys; a segment a writer made holds no other text but its format name.
        raw = msgpack.unpackb(
            data, raw=False, use_list=True, strict_map_key=True, max_str_len=_MAX_KEY
        )
    except (ValueError, msgpack.ExtraData, msgpack.StackError, TypeError):
        return None
    if not isinstance(raw, dict) or raw.get("f") != _FORMAT:
        return None
    keys, commits, older, high = (
        raw.get("keys"),
        raw.get("commits"),
        raw.get("older"),
        raw.get("high"),
    )
    if not (
        isinstance(keys, list)
        and keys
        and isinstance(commits, bytes)
        and len(commits) == len(keys) * ID_SIZE
        and isinstance(older, list)
        and len(older) <= _MAX_SEGMENTS
        and isinstance(high, str)
    ):
        return None
    try:
        # Every key a str, in one pass in C: msgpack gives no other type that compares with
        # a str, so a mix raises and keys of one other type have a greatest that is no str.
        greatest = max(keys)
    except TypeError:
        return None
    if type(greatest) is not str:
        return None
    listed: list[Older] = []
    for item in older:
        if not (
            isinstance(item, list)
            and len(item) == 5
            and isinstance(item[0], bytes)
            and len(item[0]) == ID_SIZE
            and type(item[1]) is int
            and item[1] > 0
            and isinstance(item[2], str)
            and isinstance(item[3], str)
            and isinstance(item[4], bytes)
            and len(item[4]) == ID_SIZE
        ):
            return None
        listed.append(Older(item[0], item[1], item[2], item[3], item[4]))
    if greatest > high or any(o.high > high for o in listed):
        return None
    return Segment(keys, commits, tuple(listed), high)


_PARSED: weakref.WeakKeyDictionary[ObjectDB, dict[ObjectId, Segment]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_CACHED_ENTRIES = 100_000
"""Entries of decoded segments one object database keeps (about 10 MB)."""


def read_segment(db: ObjectDB, segment_id: ObjectId) -> Segment | None:
    """Segment ``segment_id``, hash-checked (``None``: missing, damaged or malformed)."""
    with _LOCK:
        known = _PARSED.setdefault(db, {})
        found = known.get(segment_id)
    if found is not None:
        return found
    try:
        obj = db.load(segment_id)
    except StateVCSError:
        return None
    return _parsed(known, segment_id, obj)


def read_segments(db: ObjectDB, segment_ids: Iterable[ObjectId]) -> dict[ObjectId, Segment | None]:
    """:func:`read_segment` of each of ``segment_ids``, the ones not read yet in one batch."""
    named = list(dict.fromkeys(segment_ids))
    with _LOCK:
        known = _PARSED.setdefault(db, {})
        result: dict[ObjectId, Segment | None] = {i: known[i] for i in named if i in known}
    wanted = [i for i in named if i not in result]
    loaded: dict[ObjectId, object] = {}
    if len(wanted) > 1:
        try:
            loaded = dict(db.load_many(wanted))
        except StateVCSError:
            loaded = {}  # one is missing or damaged: each is read alone, below
    for segment_id in wanted:
        obj = loaded.get(segment_id)
        result[segment_id] = (
            read_segment(db, segment_id) if obj is None else _parsed(known, segment_id, obj)
        )
    return result


def _parsed(known: dict[ObjectId, Segment], segment_id: ObjectId, obj: object) -> Segment | None:
    """The segment ``obj`` (loaded as ``segment_id``) holds, kept in ``known`` for next time."""
    segment = parse_segment(obj.data) if isinstance(obj, Blob) else None
    if segment is not None:
        with _LOCK:
            if sum(map(len, known.values())) + len(segment) > _CACHED_ENTRIES:
                known.clear()  # a few MB at most; the next lookups read their segments again
            known[segment_id] = segment
    return segment


def fields_of(metadata: Mapping[str, Any], namespace: str) -> tuple[ObjectId | None, int] | None:
    """A commit's ``(index segment id or None, gap)`` (``None``: it records none, or damaged)."""
    info = metadata.get(namespace)
    if not isinstance(info, dict):
        return None
    gap = info.get(GAP_FIELD)
    if type(gap) is not int or not 1 <= gap <= SEGMENT_SIZE:
        return None
    value = info.get(INDEX_FIELD)
    if value is None:
        return None, gap
    if not isinstance(value, str) or len(value) != 2 * ID_SIZE:
        return None
    try:
        return from_hex(value), gap
    except (ValueError, StateVCSError):
        return None


def without_index(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` without lineage-index fields: what a commit copied onto other parents
    (a rewrite, an upgrade) must carry, since its index described the history it had."""
    out = dict(metadata)
    for namespace in NAMESPACES:
        info = out.get(namespace)
        if isinstance(info, dict) and (INDEX_FIELD in info or GAP_FIELD in info):
            out[namespace] = {k: v for k, v in info.items() if k not in (INDEX_FIELD, GAP_FIELD)}
    return out


def lookup(db: ObjectDB, segment_id: ObjectId, key: str) -> list[Hit] | None:
    """Every commit of the index carrying ``key``, with the commit above each (``None``: a
    segment cannot be read; ``[]``: no commit of the index carries it)."""
    top = read_segment(db, segment_id)
    if top is None:
        return None
    if key > top.high:
        return []
    chain: list[tuple[Older | None, Segment | None]] = [(o, None) for o in top.older]
    chain.append((None, top))
    # The older segments whose range holds the key, read in one batch.
    ranged = read_segments(db, [o.segment for o in top.older if o.low <= key <= o.high])
    hits: list[Hit] = []
    for number, (listed, segment) in enumerate(chain):
        if listed is not None:
            if not listed.low <= key <= listed.high:
                continue
            segment = ranged[listed.segment]
            if segment is None or len(segment) != listed.count:
                return None
        assert segment is not None
        for position in _positions(segment.keys, key):
            if position + 1 < len(segment):
                above: ObjectId | None = segment.commit_at(position + 1)
            elif number + 1 < len(chain):
                following = chain[number + 1]
                above = following[0].first if following[0] is not None else top.commit_at(0)
            else:
                above = None
            hits.append(Hit(segment.commit_at(position), above))
    return hits


def _positions(keys: list[str], key: str) -> list[int]:
    """Where ``key`` is in ``keys`` (one pass in C, however many times it is there)."""
    found: list[int] = []
    start = 0
    while True:
        try:
            position = keys.index(key, start)
        except ValueError:
            return found
        found.append(position)
        start = position + 1


def _tier(size: int) -> int:
    tier, size = 0, size // SEGMENT_SIZE
    while size >= _MERGE_WIDTH:
        size //= _MERGE_WIDTH
        tier += 1
    return tier


def extend(
    db: ObjectDB,
    segment_id: ObjectId | None,
    keys: Sequence[str],
    commits: Sequence[ObjectId],
) -> tuple[ObjectId, dict[ObjectId, bytes], str] | None:
    """An index of the lineage ``segment_id`` indexes followed by ``keys``/``commits`` (oldest
    first): ``(new segment id, objects to store, its greatest key)``; ``None`` when an older
    segment cannot be read (the caller writes no index)."""
    older: list[Older] = []
    high = max(keys)
    if segment_id is not None:
        top = read_segment(db, segment_id)
        if top is None:
            return None
        older = [
            *top.older,
            Older(segment_id, len(top), min(top.keys), max(top.keys), top.commit_at(0)),
        ]
        high = max(high, top.high)
    pending_keys, pending_commits = list(keys), list(commits)
    objects: dict[ObjectId, bytes] = {}
    while older:
        tier = _tier(len(pending_keys))
        same = 0
        while same < len(older) and _tier(older[-1 - same].count) == tier:
            same += 1
        if same < _MERGE_WIDTH - 1:
            break
        merged_keys: list[str] = []
        merged_commits: list[ObjectId] = []
        for listed in older[-(_MERGE_WIDTH - 1) :]:
            segment = read_segment(db, listed.segment)
            if segment is None:
                return None
            merged_keys.extend(segment.keys)
            merged_commits.extend(segment.commit_at(p) for p in range(len(segment)))
        pending_keys = merged_keys + pending_keys
        pending_commits = merged_commits + pending_commits
        del older[-(_MERGE_WIDTH - 1) :]
    if len(older) >= _MAX_SEGMENTS:
        return None
    new_id, data = encode_segment(pending_keys, pending_commits, older, high)
    objects[new_id] = data
    return new_id, objects, high


# --- gc and fsck -------------------------------------------------------------------------


def _decode_commits(store: Store, ids: Iterable[ObjectId]) -> dict[ObjectId, CommitObject]:
    wanted = list(dict.fromkeys(ids))
    found: dict[ObjectId, CommitObject] = {}
    for start in range(0, len(wanted), 1000):
        batch = wanted[start : start + 1000]
        try:
            raw = store.get_many(batch)
        except StateVCSError:
            continue
        for commit_id, data in raw.items():
            try:
                obj = decode_stored(store, commit_id, data)
            except CorruptObject:
                continue
            if isinstance(obj, CommitObject):
                found[commit_id] = obj
    return found


def _tips(store: Store) -> list[ObjectId]:
    return list(dict.fromkeys(store.list_refs("refs/").values()))


def index_objects(store: Store) -> set[ObjectId]:
    """The segments of the lineage indexes the refs' commits name (gc keeps them)."""
    tops: set[ObjectId] = set()
    for commit in _decode_commits(store, _tips(store)).values():
        for namespace in NAMESPACES:
            fields = fields_of(commit.metadata, namespace)
            if fields is not None and fields[0] is not None:
                tops.add(fields[0])
    kept = set(tops)
    wanted = list(tops)
    for start in range(0, len(wanted), 1000):
        try:
            raw = store.get_many(wanted[start : start + 1000])
        except StateVCSError:
            continue
        for segment_id, data in raw.items():
            try:
                obj = decode_stored(store, segment_id, data)  # compressed with its dictionary
            except CorruptObject:
                continue
            segment = parse_segment(obj.data) if isinstance(obj, Blob) else None
            if segment is not None:
                kept.update(o.segment for o in segment.older)
    return kept


def check_lineage_indexes(store: Store, db: ObjectDB) -> list[str]:
    """Problems in the lineage indexes the refs' commits name: a segment missing, damaged or
    malformed, or an index that differs from the history it describes."""
    problems: list[str] = []
    advice = (
        "; lookups by a framework's id walk instead (correct, slower) until a new commit "
        "on that history writes a fresh index"
    )
    checked: set[tuple[ObjectId, str]] = set()
    for tip, commit in _decode_commits(store, _tips(store)).items():
        for namespace in NAMESPACES:
            fields = fields_of(commit.metadata, namespace)
            if fields is None or (tip, namespace) in checked:
                continue
            checked.add((tip, namespace))
            problem = _check_one(db, tip, commit, namespace, fields)
            if problem is not None:
                problems.append(f"commit {to_hex(tip)[:12]}: its lineage index {problem}{advice}")
    return problems


def key_of(metadata: Mapping[str, Any], namespace: str) -> str | None:
    """The framework id a commit carries (``metadata[ns]["checkpoint_id"]``)."""
    info = metadata.get(namespace)
    value = info.get("checkpoint_id") if isinstance(info, dict) else None
    return value if isinstance(value, str) else None


def _check_one(
    db: ObjectDB,
    tip: ObjectId,
    commit: CommitObject,
    namespace: str,
    fields: tuple[ObjectId | None, int],
) -> str | None:
    segment_id, gap = fields
    line: list[tuple[ObjectId, CommitObject]] = []  # the history, newest first
    current: ObjectId | None = tip
    current_commit: CommitObject | None = commit
    while current is not None:
        if current_commit is None:
            try:
                current_commit = load_commit(db, current)
            except StateVCSError as exc:
                return f"cannot be checked: {exc}"
        line.append((current, current_commit))
        if len(current_commit.parents) > 1:
            return "names a history with a merge"
        current = current_commit.parents[0] if current_commit.parents else None
        current_commit = None
    if gap > len(line):
        return f"counts {gap} commits above its base, but the history holds {len(line)}"
    keys = [key_of(c.metadata, namespace) for _, c in line]
    if any(k is None for k in keys):
        return "covers a commit that carries no id"
    expected = [
        (c, k) for (c, _), k in zip(reversed(line[gap:]), reversed(keys[gap:]), strict=True)
    ]
    if segment_id is None:
        return None if not expected else "is missing: the commit names none below its gap"
    top = _present_segment(db, segment_id)
    if isinstance(top, str):
        return top
    if top is None:
        return None  # absent (a repository imported from a git mirror): never used
    recorded: list[tuple[ObjectId, str]] = []
    for listed in top.older:
        segment = _present_segment(db, listed.segment)
        if isinstance(segment, str):
            return segment
        if segment is None:
            return None
        if (
            len(segment) != listed.count
            or min(segment.keys) != listed.low
            or max(segment.keys) != listed.high
            or segment.commit_at(0) != listed.first
        ):
            return f"lists segment {to_hex(listed.segment)} with wrong bounds"
        recorded.extend((segment.commit_at(p), segment.keys[p]) for p in range(len(segment)))
    recorded.extend((top.commit_at(p), top.keys[p]) for p in range(len(top)))
    if recorded != [(c, str(k)) for c, k in expected]:
        return "differs from the history below its gap"
    if max(k for _, k in recorded) != top.high:
        return "records a wrong greatest id"
    if any(str(k) <= top.high for k in keys[:gap]):
        return "has an id in its gap no greater than every indexed id"
    return None


def load_commit(db: ObjectDB, commit_id: ObjectId) -> CommitObject:
    """Commit ``commit_id`` (``CorruptObject`` if it names another kind of object)."""
    obj = db.load(commit_id)
    if not isinstance(obj, CommitObject):
        raise CorruptObject(to_hex(commit_id), f"expected a commit, found {type(obj).__name__}")
    return obj


def _present_segment(db: ObjectDB, segment_id: ObjectId) -> Segment | str | None:
    """A segment, ``None`` when the store does not hold it, or what is wrong with it."""
    if not db.store.has_many([segment_id]):
        return None
    segment = read_segment(db, segment_id)
    return segment if segment is not None else f"segment {to_hex(segment_id)} is damaged"


def walk_line(
    load: Callable[[ObjectId], CommitObject], start: ObjectId, count: int
) -> list[tuple[ObjectId, CommitObject]] | None:
    """``count`` commits of a single-parent history from ``start`` down (``None``: it ends
    sooner, or merges)."""
    found: list[tuple[ObjectId, CommitObject]] = []
    current: ObjectId | None = start
    while current is not None and len(found) < count:
        commit = load(current)
        if len(commit.parents) > 1:
            return None
        found.append((current, commit))
        current = commit.parents[0] if commit.parents else None
    return found if len(found) == count else None


__all__ = [
    "GAP_FIELD",
    "INDEX_FIELD",
    "NAMESPACES",
    "SEGMENT_SIZE",
    "Hit",
    "Older",
    "Segment",
    "check_lineage_indexes",
    "encode_segment",
    "extend",
    "fields_of",
    "index_objects",
    "key_of",
    "load_commit",
    "lookup",
    "parse_segment",
    "read_segment",
    "read_segments",
    "walk_line",
    "without_index",
]
