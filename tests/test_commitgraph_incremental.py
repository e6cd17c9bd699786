"""Adding to the commit graph reads the new commits in growing batches (statevcs/commitgraph.py):
however many commits a write finds uncovered, on however many branches, it covers them all, with
the parents and generations a graph written from scratch records."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support import reached_commits

import statevcs
from statevcs import Repo
from statevcs.commitgraph import forget, load_graph, write_graph
from statevcs.hashing import ObjectId

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _grow(repo: Repo, rng: random.Random, count: int, tips: dict[str, ObjectId]) -> None:
    """``count`` commits on a few branches, with merges, moving each branch's ref."""
    snapshot = repo.objects.write_snapshot(statevcs.Snapshot(kind="dict", state={"k": 1}))
    known = list(tips.values())
    for _ in range(count):
        name = f"b{rng.randrange(4)}"
        parents = [tips[name]] if name in tips else []
        if known and rng.random() < 0.1:
            parents.append(rng.choice(known))
        commit_id = repo.objects.write_commit(
            snapshot,
            list(dict.fromkeys(parents)),
            message=f"c{len(known)}",
            author="t",
            timestamp=EPOCH + timedelta(seconds=len(known)),
        )
        repo.refs.set(f"refs/heads/{name}", commit_id)
        tips[name] = commit_id
        known.append(commit_id)


@pytest.mark.parametrize("uncovered", [1, 15, 64, 700])
def test_an_incremental_write_covers_every_new_commit(tmp_path: Path, uncovered: int) -> None:
    """More new commits than the first read asks for (16 or 64) take several reads; fewer
    take one. Either way the graph matches one written from scratch."""
    rng = random.Random(uncovered)
    tips: dict[str, ObjectId] = {}
    with Repo.init(tmp_path / "repo") as repo:
        _grow(repo, rng, 40, tips)
        write_graph(repo.store)
        _grow(repo, rng, uncovered, tips)
        report = write_graph(repo.store)
        reached = reached_commits(repo)
        assert report.added == uncovered
        assert report.commits == len(reached)
        forget(repo.store)
        grown = load_graph(repo.store)
        assert grown is not None and grown.closed
        assert all(commit_id in grown for commit_id in reached)
        answers = {c: (grown.parents(c), grown.generation(c), grown.timestamp(c)) for c in reached}
        write_graph(repo.store, rebuild=True)
        forget(repo.store)
        rebuilt = load_graph(repo.store)
        assert rebuilt is not None
        assert answers == {
            c: (rebuilt.parents(c), rebuilt.generation(c), rebuilt.timestamp(c)) for c in reached
        }
        assert repo.fsck().ok, repo.fsck().problems


def test_a_handle_that_commits_keeps_the_graph_whole(tmp_path: Path) -> None:
    """The automatic writes (every ``commit_graph_every`` commits) of two handles taking turns
    cover every commit of both, read back by a fresh handle."""
    path = tmp_path / "repo"
    with Repo.init(path) as first, Repo.open(path) as second:
        a: dict[str, int] = {}
        b: dict[str, int] = {}
        for i in range(300):
            a["i"] = i
            first.commit(a, f"a{i}", branch="a")
            if i % 3 == 0:
                b["i"] = i
                second.commit(b, f"b{i}", branch="b")
    with Repo.open(path) as fresh:
        fresh.write_commit_graph()
        forget(fresh.store)
        graph = load_graph(fresh.store)
        assert graph is not None and graph.closed
        assert all(commit_id in graph for commit_id in reached_commits(fresh))
        assert len(graph) == 400
        assert fresh.fsck().ok, fresh.fsck().problems
