"""A namespace's checkpoints newest first by id, read lazily from its heads.

LangGraph's savers list checkpoints by descending id. The ids are time-ordered, so the
newest commit usually holds the greatest id; when a writer's clock was behind, a commit
records the greatest id in its history as ``max_id`` (:func:`store.id_bound`). A best-first
walk from the heads, always expanding the commit whose history may hold the greatest id,
therefore yields ids in order after reading about one commit per id yielded (plus the
heads), not the whole thread: ``list(limit=k)`` costs O(k).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from itertools import count

from ...hashing import ObjectId
from ...history import CommitGraph
from ...repo import Repo
from . import store


class _Entry:
    """A heap entry: a commit to expand (its history) or to yield (itself), greatest key first."""

    __slots__ = ("found", "key", "point", "seq")

    def __init__(self, key: str, point: bool, seq: int, found: store.Stored) -> None:
        self.key = key
        self.point = point
        self.seq = seq
        self.found = found

    def __lt__(self, other: _Entry) -> bool:
        if self.key != other.key:
            return self.key > other.key
        if self.point != other.point:
            # A history that may hold this id is expanded before a commit with the id is
            # yielded: every child of a yielded commit has been seen by then.
            return other.point
        return self.seq < other.seq


def newest_first(
    repo: Repo, heads: store.Heads
) -> Iterator[tuple[store.Stored, list[store.Stored]]]:
    """Yield every checkpoint of a namespace by descending id, with the commits folding its
    writes (its lead children, as :func:`store.find_or_index` returns them).

    Each commit's key is an upper bound of the ids in its history, so when a commit is
    yielded no unread commit holds a greater id, and each of its children (whose history
    holds it) has been read.
    """
    graph = CommitGraph(repo.objects)
    starts = heads.commits()
    graph.preload(starts)
    heap: list[_Entry] = []
    order = count()
    seen = set(starts)
    children: dict[ObjectId, list[store.Stored]] = {}
    for commit_id in starts:
        found = store.stored(commit_id, graph.commit(commit_id))
        heapq.heappush(heap, _Entry(store.id_bound(found), False, next(order), found))
    while heap:
        entry = heapq.heappop(heap)
        found = entry.found
        if entry.point:
            below = children.pop(found.commit_id, [])
            yield found, store.folding(below, found)
            continue
        heapq.heappush(heap, _Entry(found.checkpoint_id, True, next(order), found))
        for parent in found.commit.parents:
            children.setdefault(parent, []).append(found)
            if parent not in seen:
                seen.add(parent)
                above = store.stored(parent, graph.commit(parent))
                heapq.heappush(heap, _Entry(store.id_bound(above), False, next(order), above))


__all__ = ["newest_first"]
