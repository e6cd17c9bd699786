"""The commit graph on binary ids: walks, ancestry and merge bases — the one graph walker.

Every algorithm here reads commits through one :class:`CommitGraph`, which loads each commit once
(through the object database's cache) and never resolves a revision string per step.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from .errors import CorruptObject
from .hashing import ObjectId, to_hex
from .objectdb import ObjectDB
from .objects import CommitObject

_FIRST_READ_AHEAD = 16
_MAX_READ_AHEAD = 1024


class CommitGraph:
    """Parents and timestamps of commits, read once each from an object database."""

    def __init__(self, db: ObjectDB) -> None:
        self._db = db
        self._commits: dict[ObjectId, CommitObject] = {}
        self._read_ahead = _FIRST_READ_AHEAD

    def commit(self, commit_id: ObjectId) -> CommitObject:
        """Return the commit object ``commit_id`` (``CorruptObject`` if it is something else)."""
        found = self._commits.get(commit_id)
        if found is None:
            self._load([commit_id])
            found = self._commits[commit_id]
        return found

    def preload(self, ids: Iterable[ObjectId]) -> None:
        """Read the commits in ``ids`` that are not loaded yet in one batch."""
        wanted = [i for i in dict.fromkeys(ids) if i not in self._commits]
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

    def parents(self, commit_id: ObjectId) -> tuple[ObjectId, ...]:
        """Return the parents of ``commit_id``."""
        return self.commit(commit_id).parents

    def timestamp(self, commit_id: ObjectId) -> int:
        """Return the commit's timestamp in microseconds."""
        return self.commit(commit_id).timestamp_us


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
    seen = {descendant}
    todo = [descendant]
    while todo:
        current = todo.pop()
        for parent in graph.parents(current):
            if parent == ancestor:
                return True
            if parent not in seen:
                seen.add(parent)
                # No pruning by timestamp: the clocks of different writers may disagree.
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
