"""StateVCSSaver lookups by checkpoint id through the persisted commit graph's labels: the
same tuples as the walk gives, whatever the history (forks, re-puts, prunes, copies, other
threads), with the graph stale or fresh."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import statevcs
from statevcs.commitgraph import CHAIN_KEY, forget
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph import store as lg_store

from .langgraph_support import checkpoint, checkpoint_uuid, exact, thread
from .test_langgraph_index import _tuple_shape

_STEPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["child", "child", "again", "writes", "prune", "copy", "graph", "delete_copy"]
        ),
        st.integers(min_value=0, max_value=60),
    ),
    min_size=5,
    max_size=50,
)


def _lookups(repo: statevcs.Repo, ids: list[str], graph: bool) -> tuple[list[Any], int]:
    """Every id looked up in each thread by a fresh saver, with or without the graph (never
    through lineage indexes: test_langgraph_lineage checks those)."""
    chain = repo.store.config_get(CHAIN_KEY)
    if not graph:
        repo.store.config_set(CHAIN_KEY, None)
    forget(repo.store)
    saver = StateVCSSaver(repo)
    patch = pytest.MonkeyPatch()
    patch.setattr(lg_store, "find_by_index", lambda *_: None)
    try:
        shapes = [
            _tuple_shape(
                saver.get_tuple(
                    {"configurable": {**thread(name)["configurable"], "checkpoint_id": cid}}
                )
            )
            for name in ("t", "t2")
            for cid in [*ids, "1ef99999-0000-6000-8000-000000000000"]
        ]
    finally:
        patch.undo()
        repo.store.config_set(CHAIN_KEY, chain)
        forget(repo.store)
    return shapes, saver._counts["graph hits"]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=_STEPS)
def test_lookups_by_label_match_the_walk(steps: list[tuple[str, int]]) -> None:
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)
    ids: list[str] = []
    counter = 100

    def put(parent: str | None, cid: str, n: int) -> None:
        config = thread()
        if parent is not None:
            config = {"configurable": {**config["configurable"], "checkpoint_id": parent}}
        saver.put(
            config,
            checkpoint(cid, {"messages": [f"m{i}" for i in range(n % 5)], "n": n}, n),
            {"source": "loop", "step": n, "run_id": f"run-{n % 3}"},
            {"messages": n, "n": n},
        )
        if cid not in ids:
            ids.append(cid)

    put(None, checkpoint_uuid(counter), 1)
    for op, arg in steps:
        target = ids[arg % len(ids)]
        config = {"configurable": {**thread()["configurable"], "checkpoint_id": target}}
        if op == "child":
            counter += 1
            put(target, checkpoint_uuid(counter), counter)
        elif op == "again":
            found = saver.get_tuple(config)
            if found is not None:
                parent = found.parent_config
                put(parent["configurable"]["checkpoint_id"] if parent else None, target, arg + 1)
        elif op == "writes":
            saver.put_writes(config, [("messages", f"w{arg}")], f"task-{arg}")
        elif op == "prune" and arg % 5 == 0:
            saver.prune(["t"], strategy="keep_latest")
        elif op == "copy":
            saver.delete_thread("t2")
            saver.copy_thread("t", "t2")
        elif op == "delete_copy":
            saver.delete_thread("t2")
        elif op == "graph":
            repo.write_commit_graph(rebuild=arg % 3 == 0)
    repo.write_commit_graph()
    without, _ = _lookups(repo, ids, graph=False)
    with_graph, hits = _lookups(repo, ids, graph=True)
    assert hits > 0
    assert len(with_graph) == len(without)
    for a, b in zip(with_graph, without, strict=True):
        assert exact(a, b)


@pytest.mark.parametrize("stale", [False, True])
def test_a_fresh_saver_finds_an_old_checkpoint_without_a_walk(
    monkeypatch: pytest.MonkeyPatch, stale: bool
) -> None:
    monkeypatch.setattr(lg_store, "find_by_index", lambda *_: None)  # the labels alone
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)
    previous = None
    ids = []
    for n in range(150):
        cid = checkpoint_uuid(1000 + n)
        config = thread()
        if previous is not None:
            config = {"configurable": {**config["configurable"], "checkpoint_id": previous}}
        saver.put(config, checkpoint(cid, {"n": n}, n), {"step": n}, {"n": n})
        previous = cid
        ids.append(cid)
        if n == 100 and not stale:
            repo.write_commit_graph()
    walks = 0
    real = lg_store.all_commits

    def counted(*args: Any) -> Any:
        nonlocal walks
        walks += 1
        return real(*args)

    monkeypatch.setattr(lg_store, "all_commits", counted)
    fresh = StateVCSSaver(repo)
    found = fresh.get_tuple({"configurable": {**thread()["configurable"], "checkpoint_id": ids[9]}})
    assert found is not None and found.checkpoint["id"] == ids[9]
    assert walks == 0 and fresh._counts["graph hits"] == 1


def test_labels_sharing_a_key_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every label under one 8-byte key: lookups still find exactly their checkpoint."""
    from statevcs import commitgraph, objects

    monkeypatch.setattr(objects, "label_key", lambda name: b"\0" * 8)
    monkeypatch.setattr(commitgraph, "label_key", lambda name: b"\0" * 8)
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)
    previous = None
    ids = []
    for n in range(40):
        cid = checkpoint_uuid(2000 + n)
        config = thread()
        if previous is not None and n % 9:  # now and then a new root: several lines
            config = {"configurable": {**config["configurable"], "checkpoint_id": previous}}
        saver.put(config, checkpoint(cid, {"n": n}, n), {"step": n}, {"n": n})
        previous = cid
        ids.append(cid)
    repo.write_commit_graph()
    without, _ = _lookups(repo, ids, graph=False)
    with_graph, hits = _lookups(repo, ids, graph=True)
    assert hits > 0
    for a, b in zip(with_graph, without, strict=True):
        assert exact(a, b)
    assert repo.fsck().ok
