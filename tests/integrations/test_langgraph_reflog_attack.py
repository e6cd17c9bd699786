"""Attacks on the saver's quiet ref moves (``RefUpdate(log=False)``) against ``gc``.

The saver logs a ref move only when it leaves a commit reachable from no head. These tests
run saver operations, then ``repo.gc(grace="0")``, and check that every checkpoint the saver
lists comes back exactly, ``fsck`` is clean, and every commit that was a head before a
replacing or rewriting move is still readable in full (its reflog entry keeps it).
"""

from __future__ import annotations

import multiprocessing
import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.types import Command

import statevcs
from statevcs.hashing import ObjectId
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph import store as lg_store
from statevcs.integrations.langgraph.names import ThreadKey, parse_branch

from .langgraph_support import (
    approval_graph,
    chat_graph,
    checkpoint,
    exact,
    history_shape,
    nested_graph,
    thread,
)


def _repo(kind: str, tmp_path: Path, request: pytest.FixtureRequest | None = None) -> statevcs.Repo:
    if kind == "s3":
        assert request is not None
        return statevcs.Repo.init(request.getfixturevalue("s3_url"))
    return statevcs.Repo.init("memory://" if kind == "memory" else tmp_path / "repo")


def _cfg(thread_id: str, checkpoint_id: str | None = None, ns: str = "") -> Any:
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _everything(saver: StateVCSSaver) -> list[Any]:
    """Every checkpoint tuple the saver lists (all threads and namespaces), in order."""
    return [
        (t.config, t.checkpoint, t.metadata, t.parent_config, t.pending_writes)
        for t in saver.list(None)
    ]


def _heads(repo: statevcs.Repo, key: ThreadKey) -> list[ObjectId]:
    return lg_store.read_heads(repo, key).commits()


def _readable(repo: statevcs.Repo, saver: StateVCSSaver, commit_id: ObjectId) -> Any:
    """Read a checkpoint commit in full (commit, snapshot, every value); raises if lost."""
    found = lg_store.load(repo.objects, commit_id)
    values, _ = lg_store.channel_values(repo, found, saver.serde)
    return found.checkpoint_id, values


def _gc_keeps_everything(repo: statevcs.Repo, saver: StateVCSSaver, kept: dict[bytes, Any]) -> None:
    before = _everything(saver)
    repo.gc(grace="0")
    fresh = StateVCSSaver(repo)
    assert exact(_everything(fresh), before)
    assert exact(_everything(saver), before)
    assert repo.fsck().problems == ()
    for commit_id, content in kept.items():
        assert exact(_readable(repo, fresh, commit_id), content)


# --- deterministic cases -------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_replaced_tip_checkpoint_survives_gc(kind: str, tmp_path: Path) -> None:
    repo = _repo(kind, tmp_path)
    saver = StateVCSSaver(repo)
    one = saver.put(thread(), checkpoint("1", {"a": 1}, 1), {"step": 0}, {"a": 1})
    saver.put(one, checkpoint("2", {"a": 2}, 2), {"step": 1}, {"a": 2})
    old = _heads(repo, ThreadKey.of("t", ""))
    kept = {c: _readable(repo, saver, c) for c in old}
    saver.put(one, checkpoint("2", {"a": 20}, 2), {"step": 1}, {"a": 2})
    _gc_keeps_everything(repo, saver, kept)
    got = saver.get_tuple(thread())
    assert got is not None and got.checkpoint["channel_values"] == {"a": 20}


@pytest.mark.parametrize("kind", ["memory", "sqlite", "s3"])
def test_a_replaced_leaf_checkpoint_survives_gc(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A fork moves the tip away from "2" quietly (it stays a head); then "2" is put again.

    Before the quiet moves the branch's reflog held every tip; now only the leaf ref's own
    reflog records the replacement, and that ref (and its reflog) is deleted in the same move.
    """
    repo = _repo(kind, tmp_path, request)
    saver = StateVCSSaver(repo)
    one = saver.put(thread(), checkpoint("1", {"a": 1}, 1), {"step": 0}, {"a": 1})
    saver.put(one, checkpoint("2", {"a": 2}, 2), {"step": 1}, {"a": 2})
    saver.put(one, checkpoint("3", {"a": 3}, 3), {"step": 1}, {"a": 3})  # a fork: "3" is tip
    old = _heads(repo, ThreadKey.of("t", ""))
    assert len(old) == 2
    kept = {c: _readable(repo, saver, c) for c in old}
    saver.put(one, checkpoint("2", {"a": 22}, 2), {"step": 1}, {"a": 2})
    _gc_keeps_everything(repo, saver, kept)
    got = saver.get_tuple(_cfg("t", "2"))
    assert got is not None and got.checkpoint["channel_values"] == {"a": 22}


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("how", ["prune", "delete_for_runs", "replace_inner"])
def test_rewritten_forked_heads_survive_gc(kind: str, how: str, tmp_path: Path) -> None:
    """A thread with two forks is rewritten: both old heads stay readable after gc."""
    repo = _repo(kind, tmp_path)
    saver = StateVCSSaver(repo)
    one = saver.put(thread(), checkpoint("1", {"a": 1}, 1), {"run_id": "r0"}, {"a": 1})
    two = saver.put(one, checkpoint("2", {"a": 2}, 2), {"run_id": "r1"}, {"a": 2})
    saver.put(two, checkpoint("3", {"a": 3}, 3), {"run_id": "r2"}, {"a": 3})
    saver.put(two, checkpoint("4", {"a": 4}, 4), {"run_id": "r2"}, {"a": 4})  # a fork of "2"
    saver.put_writes(_cfg("t", "3"), [("a", 33)], "task")
    old = _heads(repo, ThreadKey.of("t", ""))
    assert len(old) == 2
    kept = {c: _readable(repo, saver, c) for c in old}
    if how == "prune":
        saver.prune(["t"])
    elif how == "delete_for_runs":
        saver.delete_for_runs(["r1"])
    else:
        saver.put(one, checkpoint("2", {"a": 222}, 2), {"run_id": "r1"}, {"a": 2})
    _gc_keeps_everything(repo, saver, kept)
    assert old[0] not in _heads(repo, ThreadKey.of("t", "")) or how == "prune"


# --- sequences of saver operations (hypothesis) ---------------------------------------------

_THREADS = ("t", "u")

# Mostly thread "t": forks, replacements and rewrites must meet on one thread.
_busy = st.sampled_from(("t", "t", "t", "u"))
_op = st.one_of(
    st.tuples(st.just("put"), _busy, st.integers(0, 30), st.integers(0, 2)),
    st.tuples(st.just("put"), _busy, st.integers(0, 30), st.integers(0, 2)),
    st.tuples(st.just("again"), _busy, st.integers(0, 30), st.integers(0, 9)),
    st.tuples(st.just("writes"), _busy, st.integers(0, 30), st.integers(0, 2)),
    st.tuples(st.just("prune"), _busy),
    st.tuples(st.just("runs"), st.integers(0, 2)),
    st.tuples(st.just("copy"), st.sampled_from(_THREADS), st.sampled_from(_THREADS)),
    st.tuples(st.just("delete"), st.sampled_from(_THREADS)),
    st.tuples(st.just("gc")),
)


class _Model:
    """What each listed checkpoint must hold: the values last put for its id."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, dict[str, Any]]] = {t: {} for t in _THREADS}
        self.counter = 0

    def next_id(self) -> str:
        self.counter += 1
        return f"{self.counter:05d}"


def _same_values(got: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Equal channel values, type for type (the order of channels is not kept)."""
    return exact(dict(sorted(got.items())), dict(sorted(wanted.items())))


def _listed(saver: StateVCSSaver, thread_id: str) -> list[Any]:
    return list(saver.list(_cfg(thread_id)))


def _run_ops(repo: statevcs.Repo, ops: list[Any]) -> None:
    saver = StateVCSSaver(repo)
    model = _Model()
    kept: dict[str, dict[bytes, Any]] = {t: {} for t in _THREADS}

    def remember_heads(thread_id: str) -> None:
        for commit_id in _heads(repo, ThreadKey.of(thread_id, "")):
            kept[thread_id][commit_id] = _readable(repo, saver, commit_id)

    for op in ops:
        name = op[0]
        if name == "put":
            _, tid, pick, run = op
            ids = [t.checkpoint["id"] for t in _listed(saver, tid)]
            parent = sorted(ids)[pick % len(ids)] if ids and pick % 5 else None
            new_id = model.next_id()
            values = {"a": pick, "l": [f"{new_id}-{i}" for i in range(pick % 3)], "id": new_id}
            saver.put(
                _cfg(tid, parent),
                checkpoint(new_id, values, model.counter),
                {"run_id": f"r{run}"},
                dict.fromkeys(values, model.counter),
            )
            model.values[tid][new_id] = values
        elif name == "again":
            _, tid, pick, value = op
            listed = _listed(saver, tid)
            if not listed:
                continue
            target = sorted(listed, key=lambda t: t.checkpoint["id"])[pick % len(listed)]
            cid = target.checkpoint["id"]
            parent = target.parent_config
            parent_id = parent["configurable"]["checkpoint_id"] if parent else None
            values = {"a": value, "l": [f"again-{value}"], "id": cid}
            version = target.checkpoint["channel_versions"].get("a", 1)
            remember_heads(tid)
            saver.put(
                _cfg(tid, parent_id),
                checkpoint(cid, values, version),
                dict(target.metadata),
                dict.fromkeys(values, version),
            )
            model.values[tid][cid] = values
        elif name == "writes":
            _, tid, pick, task = op
            ids = sorted(t.checkpoint["id"] for t in _listed(saver, tid))
            if ids:
                saver.put_writes(_cfg(tid, ids[pick % len(ids)]), [("a", pick)], f"task{task}")
        elif name == "prune":
            remember_heads(op[1])
            saver.prune([op[1]])
        elif name == "runs":
            for tid in _THREADS:
                remember_heads(tid)
            saver.delete_for_runs([f"r{op[1]}"])
        elif name == "copy":
            _, source, target_id = op
            if source == target_id or _listed(saver, target_id):
                continue
            saver.copy_thread(source, target_id)
            model.values[target_id] = dict(model.values[source])
        elif name == "delete":
            saver.delete_thread(op[1])
            kept[op[1]] = {}  # deleted on purpose: gc may reclaim it
            model.values[op[1]] = {}
        else:
            repo.gc(grace="0")
        for tid in _THREADS:
            if not _heads(repo, ThreadKey.of(tid, "")):
                # Emptied (delete_thread, or delete_for_runs of its every checkpoint): its
                # branch and reflog are gone, as deleted threads' are; gc may reclaim it.
                kept[tid] = {}
            for item in _listed(saver, tid):
                cid = item.checkpoint["id"]
                assert _same_values(item.checkpoint["channel_values"], model.values[tid][cid])
    _gc_keeps_everything(repo, saver, {c: v for k in kept.values() for c, v in k.items()})
    for tid in _THREADS:
        for item in _listed(StateVCSSaver(repo), tid):
            wanted = model.values[tid][item.checkpoint["id"]]
            assert _same_values(item.checkpoint["channel_values"], wanted)


_one_thread = st.one_of(
    st.tuples(st.just("put"), st.just("t"), st.integers(0, 30), st.integers(0, 2)),
    st.tuples(st.just("again"), st.just("t"), st.integers(0, 30), st.integers(0, 9)),
    st.tuples(st.just("writes"), st.just("t"), st.integers(0, 30), st.integers(0, 2)),
    st.tuples(st.just("runs"), st.integers(0, 2)),
    st.tuples(st.just("prune"), st.just("t")),
)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(_one_thread, min_size=3, max_size=12))
def test_one_thread_forks_and_replacements_then_gc_lose_nothing(ops: list[Any]) -> None:
    with statevcs.Repo.init("memory://") as repo:
        _run_ops(repo, ops)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(_op, min_size=1, max_size=14))
def test_saver_operations_then_gc_lose_nothing_memory(ops: list[Any]) -> None:
    with statevcs.Repo.init("memory://") as repo:
        _run_ops(repo, ops)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(_op, min_size=1, max_size=10))
def test_saver_operations_then_gc_lose_nothing_sqlite(ops: list[Any], tmp_path: Path) -> None:
    folder = tmp_path / f"repo-{len(list(tmp_path.iterdir()))}"
    with statevcs.Repo.init(folder) as repo:
        _run_ops(repo, ops)


# --- real graphs -----------------------------------------------------------------------------


def _states(app: Any, config: Any) -> Any:
    return history_shape(app, config)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_chat_graph_forks_replays_and_prune_survive_gc(kind: str, tmp_path: Path) -> None:
    repo = _repo(kind, tmp_path)
    saver = StateVCSSaver(repo)
    app = chat_graph(saver)
    config: Any = {"configurable": {"thread_id": "chat"}}
    app.invoke({"messages": [HumanMessage(content="weather in Oslo?", id="u0")]}, config)
    app.invoke({"messages": [HumanMessage(content="hello", id="u1")]}, config)
    history = list(app.get_state_history(config))
    # Fork an old checkpoint twice (two leaves), then run one fork on.
    app.update_state(history[3].config, {"turns": 42})
    forked = app.update_state(history[5].config, {"turns": 7})
    app.invoke({"messages": [HumanMessage(content="more", id="u2")]}, forked)
    key = ThreadKey.of("chat", "")
    kept = {c: _readable(repo, saver, c) for c in _heads(repo, key)}
    assert len(kept) >= 2
    # Put an inner checkpoint again (a rewrite of its descendants), as a replay would.
    inner = saver.get_tuple(history[4].config)
    assert inner is not None and inner.parent_config is not None
    saver.put(
        inner.parent_config,
        inner.checkpoint,
        inner.metadata,
        dict(inner.checkpoint["channel_versions"]),
    )
    kept.update({c: _readable(repo, saver, c) for c in _heads(repo, key)})
    state = _states(app, config)
    latest = app.get_state(config)
    _gc_keeps_everything(repo, saver, kept)
    assert _states(app, config) == state
    assert exact(app.get_state(config).values, latest.values)
    saver.prune(["chat"])
    _gc_keeps_everything(repo, saver, kept)
    assert exact(app.get_state(config).values, latest.values)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_interrupt_and_subgraph_threads_survive_gc(kind: str, tmp_path: Path) -> None:
    repo = _repo(kind, tmp_path)
    saver = StateVCSSaver(repo)
    approval = approval_graph(saver)
    nested = nested_graph(saver)
    a: Any = {"configurable": {"thread_id": "approve"}}
    n: Any = {"configurable": {"thread_id": "nested"}}
    approval.invoke({"request": "lunch"}, a)
    nested.invoke({"request": "x"}, n)
    waiting_a, waiting_n = approval.get_state(a), nested.get_state(n, subgraphs=True)
    repo.gc(grace="0")
    assert exact(approval.get_state(a).values, waiting_a.values)
    assert approval.get_state(a).next == waiting_a.next == ("ask",)
    assert nested.get_state(n, subgraphs=True).tasks[0].state is not None
    assert waiting_n.tasks[0].interrupts
    approval.invoke(Command(resume="yes"), a)
    nested.invoke(Command(resume="fine"), n)
    done_a, done_n = _states(approval, a), _states(nested, n)
    assert approval.get_state(a).values["answer"] == "yes"
    assert nested.get_state(n).values["answer"] == "fine"
    # Fork the nested thread at its interrupt (a second head), then prune it: both old heads
    # of every namespace stay readable after gc, and the latest state is unchanged.
    paused = next(s for s in nested.get_state_history(n) if s.next == ("review",))
    nested.update_state(paused.config, {"request": "edited"})
    latest_n = nested.get_state(n)
    kept: dict[bytes, Any] = {}
    for ref in repo.refs.as_dict("refs/heads/threads/nested"):
        parsed = parse_branch(ref)
        if parsed is not None and parsed[0] == "nested":
            key = ThreadKey.of(*parsed)
            kept.update({c: _readable(repo, saver, c) for c in _heads(repo, key)})
    assert len(kept) >= 2
    saver.prune(["nested"])
    _gc_keeps_everything(repo, saver, kept)
    assert exact(nested.get_state(n).values, latest_n.values)
    saver.copy_thread("approve", "approve-copy")
    saver.delete_thread("approve")
    _gc_keeps_everything(repo, saver, {})
    c: Any = {"configurable": {"thread_id": "approve-copy"}}
    assert _states(approval, c) == done_a
    assert len(_states(nested, n)) == 1 != len(done_n)
    assert _states(approval, a) == []


# --- several processes ----------------------------------------------------------------------


def _reported(job: Callable[..., None], folder: str, *args: Any) -> None:
    """Run ``job``; a failure's traceback goes to a file the test shows."""
    try:
        job(folder, *args)
    except BaseException:
        Path(folder, f"failed-{os.getpid()}.txt").write_text(traceback.format_exc())
        raise


def _read(saver: StateVCSSaver, config: Any) -> Any:
    """``get_tuple`` (which reads again itself when a racing fold + gc bit the read)."""
    return saver.get_tuple(config)


def _writer(folder: str, thread_id: str, name: str, count: int) -> None:
    with statevcs.Repo.open(folder) as repo:
        saver = StateVCSSaver(repo)
        for i in range(count):
            # Each step: the latest checkpoint's list plus one item, written on as a child.
            latest = _read(saver, _cfg(thread_id))
            if name == "b" and i % 3 == 2 and latest is not None and latest.parent_config:
                # A fork: a child of the latest checkpoint's parent (the latest stays a leaf).
                latest = _read(saver, latest.parent_config)
            items = list(latest.checkpoint["channel_values"]["l"]) if latest else []
            version = (latest.checkpoint["channel_versions"]["l"] + 1) if latest else 1
            cid = f"{i:04d}-{name}"
            cfg = latest.config if latest else _cfg(thread_id)
            saver.put(cfg, checkpoint(cid, {"l": [*items, cid]}, version), {}, {"l": version})
            saver.put_writes(_cfg(thread_id, cid), [("l", [f"w{cid}"])], f"task-{name}")


def _collector(folder: str, rounds: int) -> None:
    with statevcs.Repo.open(folder) as repo:
        for _ in range(rounds):
            repo.gc(grace="0")


def test_writers_and_gc_in_processes_lose_no_checkpoint(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    with statevcs.Repo.init(folder) as repo:
        saver = StateVCSSaver(repo)
        saver.put(_cfg("t"), checkpoint("0000-root", {"l": []}, 1), {}, {"l": 1})
        saver.copy_thread("t", "f")
    context = multiprocessing.get_context("spawn")
    jobs = [
        context.Process(target=_reported, args=(_writer, str(folder), "t", "a", 12)),
        context.Process(target=_reported, args=(_writer, str(folder), "t", "b", 12)),
        context.Process(target=_reported, args=(_writer, str(folder), "f", "c", 12)),
        context.Process(target=_reported, args=(_collector, str(folder), 25)),
    ]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(timeout=120)
    failures = [p.read_text() for p in sorted(folder.glob("failed-*.txt"))]
    assert failures == []
    assert [job.exitcode for job in jobs] == [0, 0, 0, 0]
    with statevcs.Repo.open(folder) as repo:
        saver = StateVCSSaver(repo)
        repo.gc(grace="0")
        assert repo.fsck().problems == ()
        for tid, names in (("t", "ab"), ("f", "c")):
            listed = {t.checkpoint["id"]: t for t in saver.list(_cfg(tid))}
            wanted = {f"{i:04d}-{n}" for i in range(12) for n in names}
            assert wanted <= set(listed)
            parents = [
                t.parent_config["configurable"]["checkpoint_id"]
                for t in listed.values()
                if t.parent_config
            ]
            if tid == "t":
                assert len(set(parents)) < len(parents)  # forks were written
            for cid in wanted:
                item = listed[cid]
                # The content of each checkpoint: its parent's list plus its own id.
                assert item.checkpoint["channel_values"]["l"][-1] == cid
                parent = item.parent_config
                assert parent is not None
                above = listed[parent["configurable"]["checkpoint_id"]]
                assert (
                    item.checkpoint["channel_values"]["l"][:-1]
                    == (above.checkpoint["channel_values"]["l"])
                )
                assert [(w[1], w[2]) for w in item.pending_writes or []] == [("l", [f"w{cid}"])]


def test_a_read_racing_a_fold_and_gc_zero_reads_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader_repo = statevcs.Repo.init(tmp_path / "repo")
    writer_repo = statevcs.Repo.open(tmp_path / "repo")
    reader, writer = StateVCSSaver(reader_repo), StateVCSSaver(writer_repo)
    one = writer.put(thread(), checkpoint("1", {"l": ["x"]}, 1), {}, {"l": 1})
    writer.put_writes(one, [("l", ["w"])], "task")
    real = lg_store.side_writes

    def racing(repo: statevcs.Repo, commit_id: ObjectId | None) -> Any:
        if commit_id is not None and repo is reader_repo:
            # Between the reader's read of the side ref and its load of the side commit.
            writer.put(one, checkpoint("2", {"l": ["x", "y"]}, 2), {}, {"l": 2})
            writer_repo.gc(grace="0")
        return real(repo, commit_id)

    monkeypatch.setattr(lg_store, "side_writes", racing)
    got = reader.get_tuple(thread())
    assert got is not None
    assert got.checkpoint["channel_values"] in ({"l": ["x"]}, {"l": ["x", "y"]})
