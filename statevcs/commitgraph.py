"""The persisted commit graph: parents, generations, timestamps and framework ids of commits.

Like git's split commit-graph chain: immutable, content-addressed ``graph`` segments
(:class:`~statevcs.objects.GraphSegment`), each covering a batch of commits, newest first in
a chain named by the config key :data:`CHAIN_KEY`. A segment's externals are covered by the
segments after it, so the chain is closed under ancestry; eight segments of one size class
merge into one of the next, so a chain holds O(log n) segments and each commit is rewritten
O(log n) times.

Every field of a segment is derived from its commits' own bytes (a commit's parents, its
time, its generation, which depends only on its ancestors), so a segment, once hash-checked,
is true forever. The graph is only ever an accelerator: a commit it does not cover is read
from the store, a missing or damaged segment is skipped (with its coverage), and a chain that
is no longer closed is not used for label lookups (they fall back to a walk). ``fsck`` checks
every segment against the commits it names (:func:`check_graph`).
"""

from __future__ import annotations

import threading
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import CorruptObject, StateVCSError
from .hashing import ID_SIZE, ObjectId, from_hex, to_hex
from .idindex import check_lineage_indexes, index_objects
from .objectdb import ObjectDB, decode_stored, unpack_stored
from .objects import (
    Blob,
    CommitObject,
    GraphSegment,
    decode,
    encode_with_id,
    label_key,
    verify,
)
from .stores.base import Store

CHAIN_KEY = "graph.chain"
"""Config key: the hex ids of the commit graph's segments, newest first, space-separated."""

AUTO_WRITE_AFTER = 64
"""A handle that committed this many commits since it last wrote the graph writes it."""

LABEL_KINDS: tuple[str, ...] = ("langgraph.checkpoint_id", "langgraph.parent_checkpoint_id")
"""The framework ids a segment indexes (``metadata["langgraph"][...]`` of a commit)."""

_MERGE_WIDTH = 8
"""Segments of one size class that merge into one: each commit is rewritten about
log8(n / 64) times, and a chain holds at most 7 segments per size class."""
_MAX_CHAIN = 64
_READ_AHEAD = 1024


def label(kind: str, value: str) -> str:
    """The label under which commits carrying framework id ``value`` of ``kind`` are found."""
    return f"{kind}={value}"


def commit_labels(metadata: Mapping[str, Any]) -> list[str]:
    """The labels of a commit, from its metadata (every kind of :data:`LABEL_KINDS`)."""
    found: list[str] = []
    info = metadata.get("langgraph")
    if isinstance(info, dict):
        for kind in LABEL_KINDS:
            value = info.get(kind.partition(".")[2])
            if isinstance(value, str):
                found.append(label(kind, value))
    return found


def read_chain(store: Store) -> list[ObjectId]:
    """The segment ids the store's config names, newest first (``[]``: none, or damaged)."""
    return parse_chain(store.config_get(CHAIN_KEY))


def parse_chain(value: str | None) -> list[ObjectId]:
    """The segment ids of a :data:`CHAIN_KEY` value (``[]`` for a damaged value)."""
    if not value:
        return []
    try:
        ids = [from_hex(part) for part in value.split()]
    except (ValueError, StateVCSError):
        return []
    if len(ids) > _MAX_CHAIN or any(len(i) != ID_SIZE for i in ids):
        return []
    return list(dict.fromkeys(ids))


class _Entry:
    """A loaded segment, its ids' positions, and its labels once decoded."""

    __slots__ = ("count", "index", "labels", "segment")

    def __init__(self, segment: GraphSegment) -> None:
        self.segment = segment
        ids = segment.ids
        self.index = {ids[p : p + ID_SIZE]: p // ID_SIZE for p in range(0, len(ids), ID_SIZE)}
        self.count = len(ids) // ID_SIZE


class PersistedGraph:
    """A loaded chain of graph segments: answers for every commit it covers.

    ``closed`` says whether every external parent is covered too (label lookups are only
    complete then); ``problems`` names the segments that could not be used.
    """

    def __init__(
        self,
        store: Store,
        entries: Sequence[tuple[ObjectId, _Entry]],
        problems: Sequence[str] = (),
    ) -> None:
        self._store = store
        self.store = store
        """The store the segments were read from."""
        self.segment_ids: tuple[ObjectId, ...] = tuple(i for i, _ in entries)
        self._entries = [e for _, e in entries]
        self.problems = tuple(problems)
        self._last = self._entries[0] if self._entries else None
        self._data: dict[ObjectId, bytes | None] = {}
        self._lock = threading.Lock()
        self.closed = not problems and all(
            self._covers_externals(position) for position in range(len(self._entries))
        )

    def _covers_externals(self, position: int) -> bool:
        externals = self._entries[position].segment.externals
        older = self._entries[position + 1 :]
        for start in range(0, len(externals), ID_SIZE):
            commit_id = externals[start : start + ID_SIZE]
            if not any(commit_id in e.index for e in older):
                return False
        return True

    def __len__(self) -> int:
        return sum(len(e.segment) for e in self._entries)

    def _find(self, commit_id: ObjectId) -> tuple[_Entry, int] | None:
        last = self._last
        if last is not None:
            position = last.index.get(commit_id)
            if position is not None:
                return last, position
        for entry in self._entries:
            position = entry.index.get(commit_id)
            if position is not None:
                self._last = entry
                return entry, position
        return None

    def __contains__(self, commit_id: object) -> bool:
        return isinstance(commit_id, bytes) and self._find(commit_id) is not None

    def parents(self, commit_id: ObjectId) -> tuple[ObjectId, ...] | None:
        """The parents of a covered commit (``None``: not covered)."""
        found = self._find(commit_id)
        if found is None:
            return None
        entry, position = found
        segment = entry.segment
        count = entry.count
        ids = segment.ids
        externals = segment.externals
        start = segment.parent_ends[position - 1] if position else 0
        result = []
        for number in segment.parents[start : segment.parent_ends[position]]:
            if number < count:
                result.append(ids[number * ID_SIZE : (number + 1) * ID_SIZE])
            else:
                offset = (number - count) * ID_SIZE
                result.append(externals[offset : offset + ID_SIZE])
        return tuple(result)

    def reaches(self, descendant: ObjectId, ancestor: ObjectId) -> bool | None:
        """Whether ``ancestor`` is ``descendant`` or below it, walking the segments alone
        (cut by generation); ``None`` when the graph cannot say (``descendant`` not covered,
        or the chain not closed)."""
        start = self._find(descendant) if self.closed else None
        if start is None:
            return None
        target = self._find(ancestor)
        if target is None:
            return False  # a closed graph covers every ancestor of a covered commit
        entries = self._entries
        numbers = {id(e): n for n, e in enumerate(entries)}
        goal_number, goal = numbers[id(target[0])], target[1]
        floor = target[0].segment.generations[goal]
        seen: list[set[int]] = [set() for _ in entries]
        stack = [(numbers[id(start[0])], start[1])]
        while stack:
            number, position = stack.pop()
            entry = entries[number]
            segment = entry.segment
            count = entry.count
            ends = segment.parent_ends
            parents = segment.parents
            levels = segment.generations
            visited = seen[number]
            while True:  # along one segment's single-parent stretches without the stack
                if number == goal_number and position == goal:
                    return True
                low = ends[position - 1] if position else 0
                high = ends[position]
                if high - low == 1 and parents[low] < count:
                    position = parents[low]
                    if levels[position] < floor or position in visited:
                        break
                    visited.add(position)
                    continue
                for parent in parents[low:high]:
                    if parent < count:
                        node = (number, parent)
                        level = levels[parent]
                    else:
                        offset = (parent - count) * ID_SIZE
                        found = self._find(segment.externals[offset : offset + ID_SIZE])
                        if found is None:
                            return None
                        node = (numbers[id(found[0])], found[1])
                        level = found[0].segment.generations[found[1]]
                    if level >= floor and node[1] not in seen[node[0]]:
                        seen[node[0]].add(node[1])
                        stack.append(node)
                break
        return False

    def generation(self, commit_id: ObjectId) -> int | None:
        """The generation of a covered commit (``None``: not covered)."""
        found = self._find(commit_id)
        return None if found is None else found[0].segment.generations[found[1]]

    def timestamp(self, commit_id: ObjectId) -> int | None:
        """The timestamp (UTC microseconds) of a covered commit (``None``: not covered)."""
        found = self._find(commit_id)
        return None if found is None else found[0].segment.timestamps[found[1]]

    def labelled(self, name: str) -> list[ObjectId] | None:
        """Every covered commit carrying label ``name`` (see :func:`label`), newest segment
        first, and now and then one whose label only shares its 8-byte key (check them);
        ``None`` when the chain is not closed or a segment does not index its kind."""
        if not self.closed:
            return None
        kind = name.partition("=")[0]
        found: list[ObjectId] = []
        for entry in self._entries:
            segment = entry.segment
            if kind not in segment.label_kinds:
                return None
            found.extend(segment.id_at(p) for p in segment.labelled(name))
        return found

    def commit_bytes(self, commit_id: ObjectId) -> bytes | None:
        """The encoded commit from its segment's data (``None``: not covered, or unreadable)."""
        record = self.commit_record(commit_id)
        return None if record is None else record[0]

    def commit_record(self, commit_id: ObjectId) -> tuple[bytes, int] | None:
        """The encoded commit and the time the graph records for it (``None``: not covered,
        or its data unreadable)."""
        found = self._find(commit_id)
        if found is None:
            return None
        entry, position = found
        segment = entry.segment
        if segment.data is None:
            return None
        data = self._data.get(segment.data)
        if data is None:
            data = self._load_data(segment.data)
            if data is None:
                return None
        ends = segment.ends
        return data[ends[position - 1] if position else 0 : ends[position]], segment.timestamps[
            position
        ]

    def _load_data(self, data_id: ObjectId) -> bytes | None:
        with self._lock:
            if data_id in self._data:
                return self._data[data_id]
        # Every data blob of the chain in one read: a cold log needs them all soon.
        wanted = [
            e.segment.data
            for e in self._entries
            if e.segment.data is not None and e.segment.data not in self._data
        ]
        try:
            found = self._store.get_many(wanted)
        except StateVCSError:
            found = {}
        loaded: dict[ObjectId, bytes | None] = {}
        for blob_id in wanted:
            raw = found.get(blob_id)
            try:
                obj = decode_stored(self._store, blob_id, raw) if raw is not None else None
            except CorruptObject:
                obj = None
            loaded[blob_id] = obj.data if isinstance(obj, Blob) else None
        with self._lock:
            self._data.update(loaded)
            return self._data.get(data_id)

    def segments(self) -> list[tuple[ObjectId, GraphSegment]]:
        """The loaded segments with their ids, newest first."""
        return [(i, e.segment) for i, e in zip(self.segment_ids, self._entries, strict=True)]


_SEGMENTS: weakref.WeakKeyDictionary[Store, dict[ObjectId, _Entry]] = weakref.WeakKeyDictionary()
_LOADED: weakref.WeakKeyDictionary[Store, tuple[str, PersistedGraph]] = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()


def load_graph(store: Store) -> PersistedGraph | None:
    """The store's commit graph (``None``: none written). Segments read once per store handle.

    Segments are immutable and true forever, so a handle keeps those it read; only the chain
    (one config read) is read each time.
    """
    value = store.config_get(CHAIN_KEY) or ""
    with _CACHE_LOCK:
        cached = _LOADED.get(store)
        if cached is not None and cached[0] == value:
            return cached[1]
        known = _SEGMENTS.setdefault(store, {})
    chain = parse_chain(value)
    if not chain:
        return None
    graph = _load(store, chain, known)
    with _CACHE_LOCK:
        _LOADED[store] = (value, graph)
        for segment_id in list(known):
            if segment_id not in graph.segment_ids:
                del known[segment_id]
    return graph


def _load(store: Store, chain: list[ObjectId], known: dict[ObjectId, _Entry]) -> PersistedGraph:
    problems: list[str] = []
    wanted = [i for i in chain if i not in known]
    try:
        found = store.get_many(wanted) if wanted else {}
    except StateVCSError as exc:
        found = {}
        problems.append(f"the commit graph cannot be read: {exc}")
    for segment_id in wanted:
        raw = found.get(segment_id)
        if raw is None:
            problems.append(f"commit graph segment {to_hex(segment_id)} is missing")
            continue
        try:
            obj = decode_stored(store, segment_id, raw)
        except CorruptObject as exc:
            problems.append(f"commit graph segment: {exc}")
            continue
        if not isinstance(obj, GraphSegment):
            problems.append(f"commit graph segment {to_hex(segment_id)} is not a graph segment")
            continue
        known[segment_id] = _Entry(obj)
    entries = [(i, known[i]) for i in chain if i in known]
    return PersistedGraph(store, entries, problems)


def forget(store: Store) -> None:
    """Drop what was loaded for ``store`` (tests; a graph rewritten by hand)."""
    with _CACHE_LOCK:
        _LOADED.pop(store, None)
        _SEGMENTS.pop(store, None)


# --- writing -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GraphWriteReport:
    """What :func:`write_graph` did."""

    added: int
    """Commits newly covered."""
    commits: int
    """Commits the graph covers now."""
    segments: int
    """Segments in the chain now."""


@dataclass(frozen=True, slots=True)
class _Row:
    commit_id: ObjectId
    commit: CommitObject
    data: bytes


def _tips(store: Store) -> list[ObjectId]:
    tips = list(store.list_refs("refs/").values())
    head = store.get_ref("HEAD")
    if head is not None:
        tips.append(head)
    return list(dict.fromkeys(tips))


def _read_commits(
    store: Store,
    starts: Iterable[ObjectId],
    covered: Callable[[ObjectId], bool],
    read_ahead: int = _READ_AHEAD,
) -> dict[ObjectId, _Row]:
    """Every commit reachable from ``starts`` not below a covered one (unreadable ones
    left out).

    ``read_ahead`` is how many commits the first read asks for below the starts; it doubles
    each round up to :data:`_READ_AHEAD`. Adding to a graph, the writer expects about the
    commits written since the last write: a read of 1,024 ancestors to find 64 new ones cost
    most of the write (measured: ~10 ms of ~12 ms at 64 commits a write).
    """
    rows: dict[ObjectId, _Row] = {}
    refused: set[ObjectId] = set()
    frontier = [s for s in dict.fromkeys(starts) if not covered(s)]
    while frontier:
        try:
            found = store.ancestry(frontier, read_ahead)
        except StateVCSError:
            found = {}
        read_ahead = min(read_ahead * 2, _READ_AHEAD)
        following: list[ObjectId] = []
        added: list[_Row] = []
        for commit_id, data in found.items():
            if commit_id in rows or commit_id in refused or covered(commit_id):
                continue
            try:
                data = unpack_stored(store, commit_id, data)  # the graph holds plain commits
                obj = decode(commit_id, data)
            except CorruptObject:
                refused.add(commit_id)
                continue
            if not isinstance(obj, CommitObject):
                refused.add(commit_id)
                continue
            rows[commit_id] = row = _Row(commit_id, obj, data)
            added.append(row)
        for commit_id in frontier:
            if commit_id not in rows:
                refused.add(commit_id)  # missing or not a commit: left uncovered
        for row in added:
            for parent in row.commit.parents:
                if parent not in rows and parent not in refused and not covered(parent):
                    following.append(parent)
        frontier = list(dict.fromkeys(following))
    return rows


def _ordered(
    rows: Mapping[ObjectId, _Row], generation: Callable[[ObjectId], int | None]
) -> list[tuple[_Row, int]]:
    """``rows`` parents first, with generations; commits above an unreadable one left out."""
    gens: dict[ObjectId, int] = {}
    ordered: list[tuple[_Row, int]] = []
    dropped: set[ObjectId] = set()
    for start in rows:
        if start in gens or start in dropped:
            continue
        stack: list[tuple[ObjectId, int]] = [(start, 0)]
        while stack:
            node, index = stack[-1]
            parents = rows[node].commit.parents
            if index < len(parents):
                stack[-1] = (node, index + 1)
                parent = parents[index]
                if parent in rows and parent not in gens and parent not in dropped:
                    stack.append((parent, 0))
                continue
            stack.pop()
            best = 0
            for parent in parents:
                level = gens.get(parent)
                if level is None and parent not in rows:
                    level = generation(parent)
                if level is None:
                    best = -1
                    break
                best = max(best, level)
            if best < 0:
                dropped.add(node)
            else:
                gens[node] = best + 1
                ordered.append((rows[node], best + 1))
    return ordered


def build_segment(
    ordered: Sequence[tuple[_Row, int]], *, with_data: bool = True
) -> tuple[tuple[ObjectId, GraphSegment], dict[ObjectId, bytes]]:
    """Encode one segment of ``ordered`` commits (parents first): ``(segment id, segment)``
    and every object to store (the segment, and with ``with_data`` its commits' bytes)."""
    position = {row.commit_id: p for p, (row, _) in enumerate(ordered)}
    count = len(ordered)
    externals: dict[ObjectId, int] = {}
    parents: list[int] = []
    parent_ends: list[int] = []
    labels: list[tuple[bytes, int]] = []
    ends: list[int] = []
    end = 0
    chunks: list[bytes] = []
    for p, (row, _) in enumerate(ordered):
        for parent in row.commit.parents:
            local = position.get(parent)
            if local is None:
                local = count + externals.setdefault(parent, len(externals))
            parents.append(local)
        parent_ends.append(len(parents))
        labels.extend((label_key(name), p) for name in commit_labels(row.commit.metadata))
        end += len(row.data)
        ends.append(end)
        chunks.append(row.data)
    objects: dict[ObjectId, bytes] = {}
    blob_id: ObjectId | None = None
    if with_data:
        blob_id, blob_bytes = encode_with_id(Blob(b"".join(chunks)))
        objects[blob_id] = blob_bytes
    segment = GraphSegment(
        ids=b"".join(row.commit_id for row, _ in ordered),
        externals=b"".join(externals),
        parents=array("I", parents),
        parent_ends=array("I", parent_ends),
        generations=array("I", [g for _, g in ordered]),
        timestamps=array("q", [row.commit.timestamp_us for row, _ in ordered]),
        label_kinds=LABEL_KINDS,
        label_keys=b"".join(k for k, _ in sorted(labels)),
        label_positions=array("I", [p for _, p in sorted(labels)]),
        data=blob_id,
        ends=array("I", ends if with_data else []),
    )
    segment_id, segment_bytes = encode_with_id(segment)
    objects[segment_id] = segment_bytes
    return (segment_id, segment), objects


def _first_read_ahead(store: Store) -> int:
    """How many ancestors the first read of an incremental write asks for: the commits a
    handle writes between two writes (:attr:`Store.commit_graph_every`), within bounds."""
    every = store.commit_graph_every
    if not isinstance(every, int) or isinstance(every, bool):
        return _READ_AHEAD
    return max(16, min(every, _READ_AHEAD))


def _tier(size: int) -> int:
    """A segment's size class: 0 below 512 commits, then one more per factor of 8."""
    tier, size = 0, size // 64
    while size >= _MERGE_WIDTH:
        size //= _MERGE_WIDTH
        tier += 1
    return tier


def _rows_of(graph: PersistedGraph, segment: GraphSegment) -> list[tuple[_Row, int]] | None:
    """A segment's commits as rows (``None`` when its data cannot be read or checked)."""
    rows: list[tuple[_Row, int]] = []
    fetched: dict[ObjectId, bytes] = {}
    if segment.data is None:  # the commits from the store, in batches
        for start in range(0, len(segment), 1000):
            batch = [segment.id_at(p) for p in range(start, min(start + 1000, len(segment)))]
            try:
                fetched.update(graph.store.get_many(batch))
            except StateVCSError:
                return None
    for position in range(len(segment)):
        commit_id = segment.id_at(position)
        data = graph.commit_bytes(commit_id) if segment.data is not None else fetched.get(commit_id)
        if data is None:
            return None
        try:
            data = unpack_stored(graph.store, commit_id, data)
            obj = decode(commit_id, data)
        except CorruptObject:
            return None
        if not isinstance(obj, CommitObject):
            return None
        rows.append((_Row(commit_id, obj, data), segment.generations[position]))
    return rows


def write_graph(
    store: Store,
    *,
    rebuild: bool = False,
    keep: Callable[[ObjectId], bool] | None = None,
    min_commits: int = 1,
) -> GraphWriteReport:
    """Cover every commit reachable from a ref or ``HEAD``: one new segment, merged with the
    newest ones when eight share its size class; then point the chain at it.

    ``rebuild`` writes one segment from scratch (what gc does, with ``keep`` saying which
    commits survived its sweep). A chain that is damaged or no longer closed is rebuilt.
    Nothing is written when fewer than ``min_commits`` commits would be covered anew.
    Two writers racing both leave a true graph; the last one's chain is the one kept.
    """
    graph = None if rebuild else load_graph(store)
    if graph is not None and not graph.closed:
        graph, rebuild = None, True  # repair: a segment is gone or damaged
    covered: Callable[[ObjectId], bool] = (lambda _: False) if graph is None else graph.__contains__
    # Adding to a graph, the commits to cover are about those written since the last write.
    read_ahead = _READ_AHEAD if graph is None else _first_read_ahead(store)
    rows = _read_commits(store, _tips(store), covered, read_ahead)
    if keep is not None:
        rows = {k: v for k, v in rows.items() if keep(k)}
    known = (lambda _: None) if graph is None else graph.generation
    ordered = _ordered(rows, known)
    chain: list[tuple[ObjectId, GraphSegment]] = [] if graph is None else graph.segments()
    if rebuild and not ordered and store.config_get(CHAIN_KEY):
        store.config_set(CHAIN_KEY, None)  # nothing left to cover: no graph names gone commits
    if len(ordered) < max(1, min_commits):
        return GraphWriteReport(0, 0 if graph is None else len(graph), len(chain))
    # Tiered merging (as LSM trees do): when the newest segments of one size class number
    # _MERGE_WIDTH, they become one of the next class. Fewer rewrites than git's "merge while
    # the next is less than twice as large", for a few more segments in a chain.
    pending = list(ordered)
    while graph is not None:
        tier = _tier(len(pending))
        same = 0
        while same < len(chain) and _tier(len(chain[same][1])) == tier:
            same += 1
        if same < _MERGE_WIDTH - 1:
            break
        older: list[tuple[_Row, int]] = []
        for _, segment in reversed(chain[: _MERGE_WIDTH - 1]):  # oldest first
            its_rows = _rows_of(graph, segment)
            if its_rows is None:
                break
            older.extend(its_rows)
        else:
            pending = older + pending
            del chain[: _MERGE_WIDTH - 1]
            continue
        break
    new, objects = build_segment(pending, with_data=store.commit_graph_data)
    chain.insert(0, new)
    if rebuild:
        _replace_damaged(store, objects)
    store.put_many(objects)
    store.config_set(CHAIN_KEY, " ".join(to_hex(i) for i, _ in chain))
    return GraphWriteReport(
        added=len(ordered), commits=sum(len(s) for _, s in chain), segments=len(chain)
    )


def _replace_damaged(store: Store, objects: Mapping[ObjectId, bytes]) -> None:
    """Delete stored copies of ``objects`` whose bytes are damaged, so the put writes them
    again (a rebuild gives the same segment the same id: without this it could not repair)."""
    stored = store.get_many_stored(objects)
    damaged = [i for i, data in stored.items() if data != objects[i]]
    if damaged:
        store.delete_many(damaged)


def chain_objects(store: Store) -> set[ObjectId]:
    """The derived objects gc keeps without letting them keep commits alive: the segments the
    chain names (and, through them, their data) and the lineage-index segments the refs'
    commits name (:func:`statevcs.idindex.index_objects`)."""
    return set(read_chain(store)) | index_objects(store)


# --- checking ----------------------------------------------------------------------------


def check_graph(store: Store) -> list[str]:
    """Problems in the commit graph: a segment missing or damaged, a commit it names gone from
    the store, or any recorded field that differs from the commit's own bytes; and in the
    lineage indexes the refs' commits name."""
    problems = check_lineage_indexes(store, ObjectDB(store))
    return problems + _check_chain(store)


def _check_chain(store: Store) -> list[str]:
    value = store.config_get(CHAIN_KEY)
    if not value:
        return []
    chain = parse_chain(value)
    advice = "; rewrite the graph with `statevcs commit-graph write` (or Repo.write_commit_graph)"
    if not chain:
        return [f"the commit graph chain ({CHAIN_KEY}) is damaged{advice}"]
    graph = _load(store, chain, {})
    problems = [p + advice for p in graph.problems]
    if not graph.problems and not graph.closed:
        problems.append("the commit graph names parents no segment covers" + advice)
    generations: dict[ObjectId, int] = {}
    segments = graph.segments()
    for segment_id, segment in reversed(segments):  # oldest first: parents' generations known
        where = f"commit graph segment {to_hex(segment_id)[:12]}"
        problems.extend(
            f"{where}: {p}{advice}" for p in _check_segment(graph, segment, generations)
        )
    named = set(generations)
    present = store.has_many(named) if named else set()
    problems.extend(
        f"the commit graph names commit {to_hex(c)}, which is not in the store{advice}"
        for c in sorted(named - present)
    )
    return problems


def _check_segment(
    graph: PersistedGraph, segment: GraphSegment, generations: dict[ObjectId, int]
) -> Iterator[str]:
    count = len(segment)
    expected_labels: dict[str, list[int]] = {}
    for position in range(count):
        commit_id = segment.id_at(position)
        if segment.data is None:
            data = graph.store.get_many([commit_id]).get(commit_id)
            if data is None:
                continue  # named below as gone from the store
            try:
                data = unpack_stored(graph.store, commit_id, data)
            except CorruptObject as exc:
                yield f"the bytes it holds for commit {to_hex(commit_id)} are damaged ({exc})"
                continue
        else:
            data = graph.commit_bytes(commit_id)
            if data is None:
                yield f"its data blob {to_hex(segment.data)} is missing or damaged"
                return
        try:
            verify(commit_id, data)
            obj = decode(commit_id, data, check_hash=False)
        except CorruptObject as exc:
            yield f"the bytes it holds for commit {to_hex(commit_id)} are damaged ({exc})"
            continue
        if not isinstance(obj, CommitObject):
            yield f"it names {to_hex(commit_id)}, which is not a commit"
            continue
        parents = graph.parents(commit_id)
        if parents != obj.parents:
            yield f"it records other parents for commit {to_hex(commit_id)} than it has"
        if segment.timestamps[position] != obj.timestamp_us:
            yield f"it records another time for commit {to_hex(commit_id)} than it has"
        levels = [generations.get(p) for p in obj.parents]
        expected = 1 + max([lv for lv in levels if lv is not None], default=0)
        if None not in levels and segment.generations[position] != expected:
            yield f"it records a wrong generation for commit {to_hex(commit_id)}"
        generations[commit_id] = segment.generations[position]
        if all(kind in segment.label_kinds for kind in LABEL_KINDS):
            for name in commit_labels(obj.metadata):
                expected_labels.setdefault(name, []).append(position)
    recorded = sorted(
        zip(
            [segment.label_keys[i : i + 8] for i in range(0, len(segment.label_keys), 8)],
            segment.label_positions,
            strict=True,
        )
    )
    if segment.label_keys != b"".join(k for k, _ in recorded):
        yield "its framework-id labels are not sorted"
    kinds = segment.label_kinds
    wanted = [
        (label_key(name), p)
        for name, ps in expected_labels.items()
        if name.partition("=")[0] in kinds
        for p in ps
    ]
    if recorded != sorted(wanted):
        yield "its framework-id labels differ from its commits' metadata"


__all__ = [
    "AUTO_WRITE_AFTER",
    "CHAIN_KEY",
    "LABEL_KINDS",
    "GraphWriteReport",
    "PersistedGraph",
    "build_segment",
    "chain_objects",
    "check_graph",
    "commit_labels",
    "forget",
    "label",
    "load_graph",
    "parse_chain",
    "read_chain",
    "write_graph",
]
