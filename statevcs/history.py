"""The commit graph on binary ids: walks, ancestry and merge bases — the one graph walker.

Every algorithm here reads commits through one :class:`CommitGraph`, which loads each commit once
(through the object database's cache) and never resolves a revision string per step.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from .commitgraph import PersistedGraph, load_graph
from .errors import CorruptObject, StateVCSError
from .hashing import ObjectId, to_hex
from .objectdb import ObjectDB
from .objects import CommitObject, decode

_FIRST_READ_AHEAD = 16
_MAX_READ_AHEAD = 1024


class CommitGraph:
    """Parents, timestamps and generations of commits, read once each from an object database.

    Commits the persisted commit graph covers (:mod:`statevcs.commitgraph`) are answered from
    it without reading them; the others are read from the store. With ``persisted=False``
    the persisted graph is not used (the answers are the same, only slower).
    """

    def __init__(self, db: ObjectDB, *, persisted: bool = True) -> None:
        self._db = db
        self._commits: dict[ObjectId, CommitObject] = {}
        self._read_ahead = _FIRST_READ_AHEAD
        self.persisted: PersistedGraph | None = None
        """The persisted graph used (``None``: none written, or not asked for)."""
        if persisted:
            try:
                self.persisted = load_graph(db.store)
            except StateVCSError:
                self.persisted = None  # an unreadable graph only makes walks slower

    def commit(self, commit_id: ObjectId) -> CommitObject:
        """Return the commit object ``commit_id`` (``CorruptObject`` if it is something else)."""
        found = self._commits.get(commit_id)
        if found is None:
            found = self._from_graph(commit_id)
            if found is None:
                self._load([commit_id])
                found = self._commits[commit_id]
        return found

    def _from_graph(self, commit_id: ObjectId) -> CommitObject | None:
        """The commit from the persisted graph's data, checked against its id and the graph."""
        graph = self.persisted
        if graph is None:
            return None
        record = graph.commit_record(commit_id)
        if record is None:
            return None
        data, recorded_time = record
        obj = decode(commit_id, data)
        if not isinstance(obj, CommitObject):
            raise CorruptObject(to_hex(commit_id), f"expected a commit, found {type(obj).__name__}")
        # Once decoded, the commit's own parents are the ones used; its time ordered the walk.
        if obj.timestamp_us != recorded_time:
            raise CorruptObject(
                to_hex(commit_id),
                "the commit graph records another time for it; run "
                "`statevcs fsck`, then `statevcs commit-graph write`",
            )
        self._commits[commit_id] = obj
        return obj

    def has_loaded(self, ids: Iterable[ObjectId]) -> bool:
        """Whether every commit in ``ids`` is already read (a walk's usual case)."""
        commits = self._commits
        return all(i in commits for i in ids)

    def preload(self, ids: Iterable[ObjectId]) -> None:
        """Read the commits in ``ids`` that are not loaded yet in one batch."""
        graph = self.persisted
        wanted = [
            i
            for i in dict.fromkeys(ids)
            if i not in self._commits and (graph is None or i not in graph)
        ]
        if wanted:
            self._load(wanted)

    def _load(self, wanted: Sequence[ObjectId]) -> None:
        # A miss usually means the walk goes on below: read a stretch of history at once (one
        # query on SQLite), a longer one each time, so a short log stays cheap.
        loaded = self._db.read_ahead(wanted, self._read_ahead)
        self._read_ahead = min(self._read_ahead * 2, _MAX_READ_AHEAD)
        for commit_id in wanted:
            obj = loaded[commit_id]
            if not isinstance(obj, CommitObject):
                raise CorruptObject(
                    to_hex(commit_id), f"expected a commit, found {type(obj).__name__}"
                )
            self._commits[commit_id] = obj
        for other_id, other in loaded.items():
            if isinstance(other, CommitObject):
                self._commits.setdefault(other_id, other)
        graph = self.persisted
        if graph is not None:
            for commit_id, obj in loaded.items():
                if isinstance(obj, CommitObject):
                    self._check(graph, commit_id, obj)

    @staticmethod
    def _check(graph: PersistedGraph, commit_id: ObjectId, obj: CommitObject) -> None:
        """Refuse a graph that records another time or other parents for a commit than the
        commit has (a walk may have been ordered or cut by them)."""
        stamp = graph.timestamp(commit_id)
        if stamp is None:
            return
        if stamp != obj.timestamp_us or graph.parents(commit_id) != obj.parents:
            raise CorruptObject(
                to_hex(commit_id),
                "the commit graph records another time or other parents for it; run "
                "`statevcs fsck`, then `statevcs commit-graph write --rebuild`",
            )

    def parents(self, commit_id: ObjectId) -> tuple[ObjectId, ...]:
        """Return the parents of ``commit_id``."""
        found = self._commits.get(commit_id)
        if found is not None:
            return found.parents
        graph = self.persisted
        if graph is not None:
            parents = graph.parents(commit_id)
            if parents is not None:
                return parents
        return self.commit(commit_id).parents

    def timestamp(self, commit_id: ObjectId) -> int:
        """Return the commit's timestamp in microseconds."""
        found = self._commits.get(commit_id)
        if found is not None:
            return found.timestamp_us
        graph = self.persisted
        if graph is not None:
            stamp = graph.timestamp(commit_id)
            if stamp is not None:
                return stamp
        return self.commit(commit_id).timestamp_us

    def generation(self, commit_id: ObjectId) -> int | None:
        """Return the commit's generation when the persisted graph covers it, else ``None``.

        Generations grow strictly from parent to child: a commit can only reach commits of a
        lower generation.
        """
        graph = self.persisted
        return None if graph is None else graph.generation(commit_id)


def walk(
    graph: CommitGraph,
    starts: Sequence[ObjectId],
    *,
    first_parent: bool = False,
    limit: int | None = None,
) -> Iterator[tuple[ObjectId, CommitObject]]:
    """Yield commits reachable from ``starts``, newest first (git log's default order)."""
    seen: set[ObjectId] = set()
    queue: list[tuple[int, int, ObjectId]] = []
    order = 0
    graph.preload(starts)
    for start in starts:
        if start not in seen:
            seen.add(start)
            heapq.heappush(queue, (-graph.timestamp(start), order, start))
            order += 1
    emitted = 0
    while queue and (limit is None or emitted < limit):
        _, _, commit_id = heapq.heappop(queue)
        commit = graph.commit(commit_id)
        yield commit_id, commit
        emitted += 1
        parents = commit.parents[:1] if first_parent else commit.parents
        fresh = [p for p in parents if p not in seen]
        if fresh and not graph.has_loaded(fresh):
            graph.preload(fresh)
        for parent in fresh:
            seen.add(parent)
            heapq.heappush(queue, (-graph.timestamp(parent), order, parent))
            order += 1


def ancestors(
    graph: CommitGraph, start: ObjectId, *, stop: Callable[[ObjectId], bool] | None = None
) -> set[ObjectId]:
    """Return ``start`` and every ancestor (not walking past commits where ``stop`` is true)."""
    seen = {start}
    todo = [start]
    while todo:
        current = todo.pop()
        if stop is not None and current != start and stop(current):
            continue
        for parent in graph.parents(current):
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def is_ancestor(graph: CommitGraph, ancestor: ObjectId, descendant: ObjectId) -> bool:
    """Return whether ``ancestor`` is reachable from ``descendant`` (or equal to it)."""
    if ancestor == descendant:
        return True
    # No pruning by timestamp: the clocks of different writers may disagree. Generations
    # (from the persisted graph) cannot: a commit at or below the ancestor's cannot reach it.
    floor = graph.generation(ancestor)
    if floor is not None:
        level = graph.generation(descendant)
        if level is not None and level <= floor:
            return False
    generation = graph.generation
    persisted = graph.persisted
    seen = {descendant}
    todo = [descendant]
    while todo:
        current = todo.pop()
        if persisted is not None:
            reached = persisted.reaches(current, ancestor)  # the covered part, at C speed
            if reached is not None:
                if reached:
                    return True
                continue
        for parent in graph.parents(current):
            if parent == ancestor:
                return True
            if parent not in seen:
                seen.add(parent)
                if floor is not None:
                    level = generation(parent)
                    if level is not None and level <= floor:
                        continue
                todo.append(parent)
    return False


class ParentGraph(Protocol):
    """Anything that names the parents of a commit: a :class:`CommitGraph`, or a git history."""

    def parents(self, commit_id: ObjectId, /) -> Sequence[ObjectId]:
        """Return the parents of ``commit_id``, in order."""
        ...


def topological_order(
    graph: ParentGraph,
    starts: Iterable[ObjectId],
    *,
    stop: Callable[[ObjectId], bool] | None = None,
) -> list[ObjectId]:
    """Return the commits reachable from ``starts``, every parent before its children.

    A depth-first walk from each start in turn, first parents first, so the order is the
    same on every run. Commits where ``stop`` is true (already copied, say) are neither
    returned nor walked past. Iterative: histories are longer than Python's recursion limit.
    """
    order: list[ObjectId] = []
    seen: set[ObjectId] = set()
    for start in starts:
        if start in seen or (stop is not None and stop(start)):
            continue
        seen.add(start)
        stack: list[tuple[ObjectId, Sequence[ObjectId], int]] = [(start, graph.parents(start), 0)]
        while stack:
            node, parents, index = stack[-1]
            if index < len(parents):
                stack[-1] = (node, parents, index + 1)
                parent = parents[index]
                if parent not in seen and (stop is None or not stop(parent)):
                    seen.add(parent)
                    stack.append((parent, graph.parents(parent), 0))
            else:
                stack.pop()
                order.append(node)
    return order


_ONE, _TWO, _STALE = 1, 2, 4


def merge_bases(graph: CommitGraph, a: ObjectId, b: ObjectId) -> list[ObjectId]:
    """Return every best common ancestor of ``a`` and ``b``, newest first.

    Git's paint walk: commits reachable from ``a`` are painted 1, from ``b`` painted 2, newest
    first; a commit painted both is a candidate and its ancestors become stale. Candidates that
    are ancestors of other candidates are then removed (several remain after criss-cross
    merges).
    """
    if a == b:
        return [a]
    flags: dict[ObjectId, int] = {a: _ONE, b: _TWO}
    queue: list[tuple[int, int, ObjectId]] = []
    order = 0
    for start in (a, b):
        heapq.heappush(queue, (-graph.timestamp(start), order, start))
        order += 1
    candidates: list[ObjectId] = []

    def interesting() -> bool:
        return any(not flags[c] & _STALE for _, _, c in queue)

    while queue and interesting():
        _, _, current = heapq.heappop(queue)
        mark = flags[current]
        if mark & (_ONE | _TWO) == (_ONE | _TWO) and not mark & _STALE:
            candidates.append(current)
            mark |= _STALE
            flags[current] = mark
        parents = graph.parents(current)
        graph.preload(parents)
        for parent in parents:
            old = flags.get(parent, 0)
            new = old | mark
            if new != old:
                flags[parent] = new
                heapq.heappush(queue, (-graph.timestamp(parent), order, parent))
                order += 1
    best = list(dict.fromkeys(candidates))
    if len(best) > 1:
        redundant: set[ObjectId] = set()
        for candidate in best:
            if candidate in redundant:
                continue
            others = set(best) - {candidate} - redundant
            for other in others:
                if is_ancestor(graph, other, candidate):
                    redundant.add(other)
        best = [c for c in best if c not in redundant]
    return sorted(best, key=lambda c: (graph.timestamp(c), c), reverse=True)


__all__ = [
    "CommitGraph",
    "ParentGraph",
    "ancestors",
    "is_ancestor",
    "merge_bases",
    "topological_order",
    "walk",
]
