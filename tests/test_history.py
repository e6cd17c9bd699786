"""The one graph walker: merge bases and ancestry against a brute-force definition."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from statevcs import Repo, Snapshot
from statevcs.hashing import ObjectId, from_hex
from statevcs.history import CommitGraph, ancestors, is_ancestor, merge_bases, walk

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def _build(shape: list[tuple[int, ...]], skew: list[int]) -> tuple[Repo, list[ObjectId]]:
    """Commit a DAG: commit i has the parents listed in ``shape[i]`` (indexes below i)."""
    repo = Repo.init()
    ids: list[ObjectId] = []
    for index, parents in enumerate(shape):
        snapshot = repo.write_snapshot(Snapshot(state={"i": index}))
        commit = repo.write_commit(
            snapshot,
            [ids[p].hex() for p in parents],
            message=str(index),
            timestamp=T0 + timedelta(seconds=index + skew[index]),
        )
        ids.append(from_hex(commit.id))
    return repo, ids


def _brute_bases(graph: CommitGraph, a: ObjectId, b: ObjectId) -> set[ObjectId]:
    common = ancestors(graph, a) & ancestors(graph, b)
    return {c for c in common if not any(c != o and is_ancestor(graph, c, o) for o in common)}


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[tuple[int, ...]], list[int]]:
    size = draw(st.integers(2, 18))
    shape: list[tuple[int, ...]] = []
    for index in range(size):
        if index == 0 or draw(st.integers(0, 9)) == 0:
            shape.append(())  # another root now and then
            continue
        parents = draw(st.lists(st.integers(0, index - 1), min_size=1, max_size=3, unique=True))
        shape.append(tuple(parents))
    # Clock skew: timestamps need not follow the graph (writers on different machines).
    skew = draw(st.lists(st.integers(-5, 5), min_size=size, max_size=size))
    return shape, skew


@settings(max_examples=60, deadline=None)
@given(dags(), st.data())
def test_merge_bases_are_the_best_common_ancestors(
    dag: tuple[list[tuple[int, ...]], list[int]], data: st.DataObject
) -> None:
    shape, skew = dag
    repo, ids = _build(shape, skew)
    graph = CommitGraph(repo.objects)
    a = ids[data.draw(st.integers(0, len(ids) - 1))]
    b = ids[data.draw(st.integers(0, len(ids) - 1))]
    assert set(merge_bases(graph, a, b)) == _brute_bases(graph, a, b)


def test_criss_cross_has_two_merge_bases() -> None:
    #   0 - 1 - 3 - 5
    #     \   X
    #       2 - 4 - 6
    repo, ids = _build([(), (0,), (0,), (1, 2), (2, 1), (3,), (4,)], [0] * 7)
    graph = CommitGraph(repo.objects)
    assert set(merge_bases(graph, ids[5], ids[6])) == {ids[1], ids[2]}
    assert is_ancestor(graph, ids[0], ids[6]) and not is_ancestor(graph, ids[5], ids[6])


def test_walk_is_newest_first_and_each_commit_once() -> None:
    repo, ids = _build([(), (0,), (0,), (1, 2), (3,)], [0] * 5)
    graph = CommitGraph(repo.objects)
    order = [commit_id for commit_id, _ in walk(graph, [ids[4], ids[2]])]
    assert order == [ids[4], ids[3], ids[2], ids[1], ids[0]]
    assert [c for c, _ in walk(graph, [ids[4]], first_parent=True)] == [
        ids[4],
        ids[3],
        ids[1],
        ids[0],
    ]
    assert len(list(walk(graph, [ids[4]], limit=2))) == 2
