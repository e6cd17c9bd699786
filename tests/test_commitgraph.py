"""The persisted commit graph (statevcs/commitgraph.py): the same answers with and without it,
stale, damaged, collected and raced graphs, on memory, SQLite and S3."""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import random
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import reached_commits

import statevcs
from statevcs import Repo
from statevcs.commitgraph import (
    CHAIN_KEY,
    commit_labels,
    forget,
    label,
    load_graph,
    read_chain,
    write_graph,
)
from statevcs.errors import CorruptObject
from statevcs.hashing import ObjectId, from_hex, hash_bytes, to_hex
from statevcs.history import CommitGraph, ancestors, is_ancestor, merge_bases, walk
from statevcs.objects import GraphSegment, decode, encode

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _snapshot(repo: Repo) -> ObjectId:
    return repo.objects.write_snapshot(statevcs.Snapshot(kind="dict", state={"k": 1}))


def random_dag(repo: Repo, rng: random.Random, size: int) -> list[ObjectId]:
    """``size`` commits with 0-3 parents, clashing and skewed times, framework ids; branches
    on a few tips. Returns the commits in the order written."""
    snapshot = _snapshot(repo)
    commits: list[ObjectId] = []
    for n in range(size):
        count = 0 if not commits or rng.random() < 0.05 else rng.choice([1, 1, 1, 2, 2, 3])
        parents = rng.sample(commits, min(count, len(commits)))
        seconds = rng.choice([n, n, 5, -n])  # equal and backwards clocks
        metadata: dict[str, Any] = {"n": n}
        if rng.random() < 0.5:
            info: dict[str, Any] = {"checkpoint_id": f"cp-{rng.randrange(size)}"}
            if rng.random() < 0.5:
                info["parent_checkpoint_id"] = f"cp-{rng.randrange(size)}"
            metadata["langgraph"] = info
        commit_id = repo.objects.write_commit(
            snapshot,
            parents,
            message=f"commit {n}",
            author="t",
            timestamp=EPOCH + timedelta(seconds=seconds),
            metadata=metadata,
        )
        commits.append(commit_id)
        if rng.random() < 0.15 or n == size - 1:
            repo.refs.set(f"refs/heads/b{n % 5}", commit_id)
    return commits


def answers(repo: Repo, commits: list[ObjectId], rng: random.Random, persisted: bool) -> Any:
    """Every graph answer statevcs gives, computed with or without the persisted graph."""
    graph = CommitGraph(repo.objects, persisted=persisted)
    tips = list(repo.refs.as_dict("refs/heads/").values())
    pairs = [(rng.choice(commits), rng.choice(commits)) for _ in range(40)]
    return {
        "walk": [c for c, _ in walk(graph, tips)],
        "first": [c for c, _ in walk(graph, tips, first_parent=True)],
        "limited": [c for c, _ in walk(graph, tips[:1], limit=7)],
        "ancestors": [sorted(ancestors(graph, t)) for t in tips],
        "is_ancestor": [is_ancestor(graph, a, b) for a, b in pairs],
        "merge_bases": [merge_bases(graph, a, b) for a, b in pairs[:15]],
        "parents": [graph.parents(c) for c in commits],
        "times": [graph.timestamp(c) for c in commits],
    }


def check_same(repo: Repo, commits: list[ObjectId], seed: int) -> None:
    forget(repo.store)
    with_graph = answers(repo, commits, random.Random(seed), True)
    without = answers(repo, commits, random.Random(seed), False)
    assert with_graph == without


def graph_of(repo: Repo) -> Any:
    forget(repo.store)
    return load_graph(repo.store)


# --- the same answers -------------------------------------------------------------------


@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), size=st.integers(1, 60), cut=st.floats(0, 1))
def test_walks_are_identical_with_and_without_a_graph(seed: int, size: int, cut: float) -> None:
    """Random DAGs with merges: a graph written part way (then stale), then again."""
    rng = random.Random(seed)
    with Repo.init("memory://") as repo:
        first = random_dag(repo, rng, max(1, int(size * cut)))
        write_graph(repo.store)
        more = random_dag(repo, rng, size)
        commits = first + more
        check_same(repo, commits, seed)  # stale: the newer commits are read from the store
        report = write_graph(repo.store)
        assert report.commits == len(graph_of(repo))
        check_same(repo, commits, seed)
        assert repo.fsck().ok


def test_every_store_gives_the_same_answers(repo: Repo) -> None:
    rng = random.Random(3)
    commits = random_dag(repo, rng, 40)
    for step in range(3):
        write_graph(repo.store)
        commits += random_dag(repo, rng, 25)
        check_same(repo, commits, step)
    write_graph(repo.store)
    graph = graph_of(repo)
    assert graph is not None and graph.closed
    assert all(c in graph for c in reached_commits(repo))  # and what earlier refs reached, too
    check_same(repo, commits, 9)
    assert repo.fsck().ok, repo.fsck().problems


def test_labels_name_every_covered_commit_with_a_framework_id() -> None:
    with Repo.init("memory://") as repo:
        commits = random_dag(repo, random.Random(5), 80)
        write_graph(repo.store)
        graph = graph_of(repo)
        expected: dict[str, set[ObjectId]] = {}
        for commit_id in commits:
            if commit_id in graph:
                for name in commit_labels(repo.objects.load_commit(commit_id).metadata):
                    expected.setdefault(name, set()).add(commit_id)
        assert expected
        for name, found in expected.items():
            assert set(graph.labelled(name)) == found
        assert graph.labelled(label("langgraph.checkpoint_id", "no such id")) == []


def test_porcelain_walks_read_the_graph(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    with Repo.init(path) as repo:
        state: dict[str, Any] = {}
        for i in range(150):
            state["i"] = i
            repo.commit(state, f"c{i}")
        chain = read_chain(repo.store)
        assert chain  # written by itself every 64 commits
    with Repo.open(path) as fresh:
        assert fresh.get_commit("main~140").message == "c9"
        assert [c.message for c in fresh.log("main", limit=3)] == ["c149", "c148", "c147"]
        assert len(list(fresh.log("main"))) == 150
        assert fresh.is_ancestor("main~140", "main")
        assert not fresh.is_ancestor("main", "main~140")
        assert fresh.merge_base("main~3", "main~100") == fresh.resolve("main~100")
        report = fresh.write_commit_graph()
        assert report.commits == 150 and report.added == 150 - 128


def test_a_chain_stays_short() -> None:
    with Repo.init("memory://") as repo:
        state: dict[str, Any] = {}
        for i in range(700):
            state["i"] = i
            repo.commit(state, f"c{i}")
            if i % 7 == 0:
                repo.write_commit_graph()
        repo.write_commit_graph()
        graph = graph_of(repo)
        assert len(graph) == 700
        # Tiered merges: at most 7 segments per size class (here two classes).
        assert len(graph.segment_ids) <= 14
        sizes = [len(s) for _, s in graph.segments()]
        assert sizes[-1] >= 512


# --- damaged, missing, collected --------------------------------------------------------


def _history(repo: Repo, count: int = 100) -> list[ObjectId]:
    state: dict[str, Any] = {}
    ids = []
    for i in range(count):
        state["i"] = i
        ids.append(from_hex(repo.commit(state, f"c{i}").id))
    return ids


def _damage(repo: Repo, object_id: ObjectId, data: bytes | None) -> None:
    """Replace (or with ``None`` delete) an object's stored bytes, past the store's checks."""
    store: Any = repo.store
    if isinstance(store, statevcs.stores.sqlite.SQLiteStore):
        db = sqlite3.connect(store.path)
        if data is None:
            db.execute("DELETE FROM objects WHERE id = ?", (object_id,))
        else:
            db.execute("UPDATE objects SET data = ? WHERE id = ?", (data, object_id))
        db.commit()
        db.close()
    elif data is None:
        store.delete_many([object_id])
    else:
        store._objects[object_id] = (data, store._objects[object_id][1])


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("damage", ["flipped", "missing", "data", "chain", "lying"])
def test_a_damaged_graph_is_slower_never_wrong_and_fsck_names_it(
    tmp_path: Path, kind: str, damage: str
) -> None:
    repo = Repo.init("memory://" if kind == "memory" else tmp_path / "repo")
    ids = _history(repo)
    if damage == "data":
        repo.store.commit_graph_data = True  # as on S3: the segment carries its commits' bytes
    repo.write_commit_graph(rebuild=True)
    forget(repo.store)
    want = answers(repo, ids, random.Random(1), False)
    (segment_id,) = read_chain(repo.store)
    segment = decode(segment_id, repo.store.get_many([segment_id])[segment_id])
    assert isinstance(segment, GraphSegment)
    if damage == "flipped":
        data = bytearray(repo.store.get_many([segment_id])[segment_id])
        data[len(data) // 2] ^= 0xFF
        _damage(repo, segment_id, bytes(data))
    elif damage == "missing":
        _damage(repo, segment_id, None)
    elif damage == "data":
        assert segment.data is not None
        _damage(repo, segment.data, None)
    elif damage == "chain":
        repo.store.config_set(CHAIN_KEY, "not a chain")
    else:
        # A well-formed segment that lies (swapped times): hash-valid, so only fsck and the
        # commit bytes it carries can tell; log refuses rather than answer from it.
        times = segment.timestamps
        lie = dataclasses.replace(segment, timestamps=type(times)("q", [t + 1 for t in times]))
        encoded = encode(lie)
        repo.store.put_many({hash_bytes(encoded): encoded})
        repo.store.config_set(CHAIN_KEY, to_hex(hash_bytes(encoded)))
    forget(repo.store)
    problems = repo.fsck().problems
    assert any("commit graph" in p and "commit-graph write" in p for p in problems), problems
    if damage == "lying":
        with pytest.raises(CorruptObject, match="commit graph"):
            list(repo.log("main"))
    else:
        assert answers(repo, ids, random.Random(1), True) == want
        assert [c.message for c in repo.log("main")][-1] == "c0"
        assert repo.get_commit("main~99").message == "c0"
    repo.write_commit_graph(rebuild=True)
    forget(repo.store)
    assert not any("commit graph" in p for p in repo.fsck().problems)
    repo.gc(grace="0")  # the damaged segment, no longer named, goes
    assert repo.fsck().ok, repo.fsck().problems
    assert answers(repo, ids, random.Random(1), True) == want
    repo.close()


def test_gc_drops_swept_commits_from_the_graph(repo: Repo) -> None:
    ids = _history(repo, 70)
    repo.branch("doomed", "main")
    other: dict[str, Any] = {}
    repo.checkout(other, "doomed")
    doomed = []
    for i in range(10):
        other["d"] = i
        doomed.append(from_hex(repo.commit(other, f"d{i}").id))
    repo.write_commit_graph()
    assert all(d in graph_of(repo) for d in doomed)
    repo.delete_branch("doomed")
    repo.gc(grace="0", expire_reflog="0")
    assert not repo.store.has_many(doomed)
    graph = graph_of(repo)
    assert graph is not None and len(graph) == 70
    assert not any(d in graph for d in doomed)
    report = repo.fsck()
    assert report.ok, report.problems
    assert report.dangling == 0  # the old chain went once the new one was written
    assert set(read_chain(repo.store)) <= {i for i, _ in repo.store.iter_objects()}
    assert answers(repo, ids, random.Random(2), True) == answers(repo, ids, random.Random(2), False)


def test_gc_keeps_the_chain_a_writer_just_named(tmp_path: Path) -> None:
    with Repo.init(tmp_path / "repo") as repo:
        ids = _history(repo, 20)
        repo.write_commit_graph()
        chain = read_chain(repo.store)
        repo.gc(grace="0")
        assert repo.store.has_many(chain) == set(chain) or read_chain(repo.store) != chain
        assert repo.fsck().ok
        assert graph_of(repo).closed
        assert answers(repo, ids, random.Random(4), True) == answers(
            repo, ids, random.Random(4), False
        )


# --- writers in several processes ---------------------------------------------------------


def _writer(url: str, name: str, count: int) -> None:
    with Repo.open(url) as repo:
        state: dict[str, Any] = {}
        if name != "main":
            with contextlib.suppress(statevcs.RefExists):
                repo.branch(name, "main")
        repo.checkout(state, name)
        for i in range(count):
            state[name] = i
            repo.commit(state, f"{name} {i}", branch=name)
            if i % 5 == 0:
                repo.write_commit_graph()


@pytest.mark.parametrize(
    ("kind", "method"),
    # A process forked after S3 was used cannot use it (ForkedProcessError): S3 spawns.
    [("sqlite", "fork"), ("sqlite", "spawn"), ("s3", "spawn"), ("s3", "forkserver")],
)
def test_writers_racing_in_processes_leave_a_true_graph(
    request: pytest.FixtureRequest, tmp_path: Path, method: str, kind: str
) -> None:
    url = str(tmp_path / "repo") if kind == "sqlite" else request.getfixturevalue("s3_url")
    with Repo.init(url) as repo:
        repo.commit({"start": 1}, "start")
    context = multiprocessing.get_context(method)
    workers = [context.Process(target=_writer, args=(url, f"w{n}", 20)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    with Repo.open(url) as repo:
        assert repo.fsck().ok, repo.fsck().problems
        graph = graph_of(repo)
        assert graph is not None and graph.closed
        tips = repo.refs.as_dict("refs/heads/")
        assert len(tips) == 5
        for name, _tip in tips.items():
            if name != "refs/heads/main":
                messages = [c.message for c in repo.log(name)]
                short = name.rsplit("/", 1)[1]
                assert messages == [f"{short} {i}" for i in reversed(range(20))] + ["start"]
        commits = [
            c for c, _ in walk(CommitGraph(repo.objects, persisted=False), list(tips.values()))
        ]
        check_same(repo, commits, 11)
        repo.write_commit_graph()
        assert len(graph_of(repo)) == 81


# --- hostile input ------------------------------------------------------------------------


_VALUES = st.one_of(
    st.binary(max_size=80),
    st.integers(-(2**63), 2**64 - 1),
    st.text(max_size=10),
    st.none(),
    st.lists(st.integers(0, 5), max_size=4),
)


@given(fields=st.lists(_VALUES, max_size=12))
def test_hostile_graph_segments_are_refused_cleanly(fields: list[Any]) -> None:
    data = msgpack.packb(["graph", *fields], use_bin_type=True)
    with pytest.raises(CorruptObject):
        decode(hash_bytes(data), data)


def _valid_fields() -> list[Any]:
    with Repo.init("memory://") as repo:
        _history(repo, 6)
        repo.write_commit_graph()
        (segment_id,) = read_chain(repo.store)
        raw = msgpack.unpackb(repo.store.get_many([segment_id])[segment_id], raw=False)
    return list(raw)


_VALID = _valid_fields()


@given(position=st.integers(1, len(_VALID) - 1), value=_VALUES, cut=st.integers(0, 40))
def test_a_segment_with_one_field_changed_decodes_or_is_refused(
    position: int, value: Any, cut: int
) -> None:
    """Any bytes give a segment whose every commit walks without error, or CorruptObject."""
    fields = list(_VALID)
    fields[position] = value if cut % 2 else (fields[position] or b"")[: cut // 2]
    data = msgpack.packb(fields, use_bin_type=True)
    try:
        segment = decode(hash_bytes(data), data)
    except CorruptObject:
        return
    assert isinstance(segment, GraphSegment)
    with Repo.init("memory://") as repo:
        repo.store.put_many({hash_bytes(data): data})
        repo.store.config_set(CHAIN_KEY, to_hex(hash_bytes(data)))
        graph = graph_of(repo)
        for p in range(len(segment)):
            commit_id = segment.id_at(p)
            graph.parents(commit_id)
            graph.generation(commit_id)
            graph.timestamp(commit_id)
            graph.commit_bytes(commit_id)
            graph.reaches(commit_id, segment.id_at(0))
        graph.labelled(label("langgraph.checkpoint_id", "x"))


@given(value=st.text(max_size=300))
def test_a_hostile_chain_value_never_breaks_a_walk(value: str) -> None:
    with Repo.init("memory://") as repo:
        ids = _history(repo, 5)
        repo.store.config_set(CHAIN_KEY, value)
        forget(repo.store)
        assert [c.id for c in repo.log("main")] == [to_hex(i) for i in reversed(ids)]


def test_write_commit_graph_checks_its_argument() -> None:
    with Repo.init("memory://") as repo, pytest.raises(TypeError, match="rebuild"):
        repo.write_commit_graph(rebuild="yes")  # type: ignore[arg-type]


def test_cli_writes_the_graph(tmp_path: Path) -> None:
    import json

    from test_cli import invoke

    with Repo.init(tmp_path / "repo") as repo:
        _history(repo, 12)
    out = invoke("-C", tmp_path / "repo", "commit-graph", "write").stdout
    assert "covers 12 commits (12 new) in 1 segment" in out
    again = json.loads(invoke("-C", tmp_path / "repo", "commit-graph", "write", "--json").stdout)
    assert again == {"added": 0, "commits": 12, "segments": 1}
    invoke("-C", tmp_path / "repo", "fsck")  # exit status 0: no problem
