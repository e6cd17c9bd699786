"""The one graph walker: merge bases and ancestry against a brute-force definition."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from statevcs import Repo, Snapshot
from statevcs.hashing import ObjectId
from statevcs.history import (
    CommitGraph,
    ancestors,
    is_ancestor,
    merge_bases,
    topological_order,
    walk,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _build(shape: list[tuple[int, ...]], skew: list[int]) -> tuple[Repo, list[ObjectId]]:
    """Commit a DAG: commit i has the parents listed in ``shape[i]`` (indexes below i)."""
    repo = Repo.init()
    ids: list[ObjectId] = []
    for index, parents in enumerate(shape):
        snapshot = repo.objects.write_snapshot(Snapshot(state={"i": index}))
        commit = repo.objects.write_commit(
            snapshot,
            [ids[p] for p in parents],
            message=str(index),
            author=repo.author,
            timestamp=T0 + timedelta(seconds=index + skew[index]),
        )
        ids.append(commit)
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


@settings(max_examples=60, deadline=None)
@given(dags(), st.data())
def test_topological_order_puts_parents_first_and_stops_where_told(
    dag: tuple[list[tuple[int, ...]], list[int]], data: st.DataObject
) -> None:
    shape, skew = dag
    repo, ids = _build(shape, skew)
    graph = CommitGraph(repo.objects)
    starts = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=4))
    order = topological_order(graph, starts)
    reachable = set().union(*(ancestors(graph, s) for s in starts))
    assert len(order) == len(set(order)) and set(order) == reachable
    position = {c: i for i, c in enumerate(order)}
    assert all(position[p] < position[c] for c in order for p in graph.parents(c))
    # Commits already handled (an ancestor-closed set, as in an incremental copy) are left
    # out, and the rest still come parents first.
    done = ancestors(graph, data.draw(st.sampled_from(ids)))
    rest = topological_order(graph, starts, stop=done.__contains__)
    assert len(rest) == len(set(rest)) and set(rest) == reachable - done
    position = {c: i for i, c in enumerate(rest)}
    assert all(position[p] < position[c] for c in rest for p in graph.parents(c) if p in position)


class _Chain:
    """A parents table standing in for a commit graph (the git mirror walks git's commits)."""

    def __init__(self, table: dict[bytes, list[bytes]]) -> None:
        self.table = table

    def parents(self, commit_id: bytes, /) -> Sequence[bytes]:
        return self.table[commit_id]


def test_topological_order_walks_histories_longer_than_the_recursion_limit() -> None:
    def key(n: int) -> bytes:
        return n.to_bytes(4, "big")

    chain = _Chain({key(n): [key(n - 1)] if n else [] for n in range(200_000)})
    assert topological_order(chain, [key(199_999)]) == [key(n) for n in range(200_000)]
    merges = _Chain(
        {b"a": [], b"b": [b"a"], b"c": [b"a"], b"d": [b"b", b"c"], b"e": [b"d", b"c"], b"x": []}
    )
    # Depth first, first parents first, each start in turn: the same order on every run.
    assert topological_order(merges, [b"e", b"x", b"d"]) == [b"a", b"b", b"c", b"d", b"e", b"x"]
    asked: list[bytes] = []

    def stop(commit_id: bytes) -> bool:
        asked.append(commit_id)
        return commit_id in (b"b", b"c")

    assert topological_order(merges, [b"e"], stop=stop) == [b"d", b"e"]
    assert b"a" not in asked  # nothing is walked past a stopped commit


# --- reading history in stretches (the SQLite parents index) ---------------------------------


def _linear_sqlite_repo(path: str, commits: int) -> list[str]:
    with Repo.init(path) as repo:
        state: dict[str, list[str]] = {"messages": []}
        for index in range(commits):
            state["messages"].append(f"m{index}")
            repo.commit(state, message=f"c{index}")
        return [c.id for c in repo.log()]


def _count_statements(repo: Repo) -> list[str]:
    statements: list[str] = []
    repo.store._db.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    return statements


def test_log_of_a_long_history_reads_commits_in_a_few_queries(tmp_path: Path) -> None:
    expected = _linear_sqlite_repo(str(tmp_path / "r"), 1000)
    with Repo.open(tmp_path / "r") as repo:
        statements = _count_statements(repo)
        assert [c.id for c in repo.log()] == expected
        # One statement per commit before the index (about 1,000); a few read-aheads now.
        assert len(statements) <= 20


def test_a_short_log_does_not_read_the_whole_history(tmp_path: Path) -> None:
    _linear_sqlite_repo(str(tmp_path / "r"), 300)
    with Repo.open(tmp_path / "r") as repo:
        graph = CommitGraph(repo.objects)
        head = repo.refs.get("refs/heads/main")
        assert head is not None
        list(walk(graph, [head], limit=3))
        assert len(graph._commits) < 60


def test_a_repository_from_before_the_index_is_indexed_when_opened(tmp_path: Path) -> None:
    expected = _linear_sqlite_repo(str(tmp_path / "r"), 200)
    db = sqlite3.connect(tmp_path / "r" / "statevcs.sqlite3")
    db.execute("ALTER TABLE objects DROP COLUMN parents")  # as written by statevcs 0.1
    db.commit()
    db.close()
    with Repo.open(tmp_path / "r") as repo:
        statements = _count_statements(repo)
        assert [c.id for c in repo.log()] == expected
        assert len(statements) <= 20


def test_a_wrong_parents_index_costs_queries_never_a_wrong_history(tmp_path: Path) -> None:
    expected = _linear_sqlite_repo(str(tmp_path / "r"), 100)
    db = sqlite3.connect(tmp_path / "r" / "statevcs.sqlite3")
    # Drop about half of the true values, and point the rest at unrelated objects.
    ids = [row[0] for row in db.execute("SELECT id FROM objects")]
    db.execute("UPDATE objects SET parents = NULL WHERE substr(id, 1, 1) < x'80'")
    db.execute(
        "UPDATE objects SET parents = ? WHERE parents IS NOT NULL AND substr(id, 1, 1) < x'c0'",
        (ids[0] + ids[1],),
    )
    db.commit()
    db.close()
    with Repo.open(tmp_path / "r") as repo:
        assert [c.id for c in repo.log()] == expected
        assert [c.message for c in repo.log(limit=3)] == ["c99", "c98", "c97"]
        assert repo.merge_base("main", "main~40") == expected[40]
