"""Attacks on the saver's lookup index, its "latest" and the put-again fixes: another process
moving the thread under a long-lived saver, hostile id orders, stale ``max_id`` bounds and
async calls interleaved on one saver (the index in use after every deep walk)."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph import store as lg_store

from .langgraph_support import checkpoint

_NAMESPACES = ("", "sub:1")


def _cid(n: int) -> str:
    return f"1ef{n:05d}-0000-6000-8000-000000000000"


def _config(thread: str, ns: str = "", cid: str | None = None) -> Any:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if cid is not None:
        configurable["checkpoint_id"] = cid
    return {"configurable": configurable}


def _shape(result: Any) -> Any:
    if result is None:
        return None
    return (
        result.config,
        result.checkpoint["id"],
        result.checkpoint["channel_values"],
        result.metadata,
        result.parent_config,
        result.pending_writes,
    )


def _memory_copy(memory: InMemorySaver, source: str, target: str) -> None:
    """``copy_thread`` for InMemorySaver (it does not implement it): every row, re-keyed."""
    if source in memory.storage:
        memory.storage[target] = copy.deepcopy(memory.storage[source])
    for key in [k for k in memory.writes if k[0] == source]:
        memory.writes[(target, *key[1:])] = copy.deepcopy(memory.writes[key])
    for key in [k for k in memory.blobs if k[0] == source]:
        memory.blobs[(target, *key[1:])] = copy.deepcopy(memory.blobs[key])


def _memory_has(memory: InMemorySaver, thread: str) -> bool:
    return any(memory.storage.get(thread, {}).values())


# --- 2. hostile ordering with the index in use -----------------------------------------------

_THREADS = ("a", "b", "c")
_CALLS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "put", "fork", "again", "move", "writes", "copy", "delete"]),
        st.sampled_from(_THREADS),
        st.sampled_from(_NAMESPACES),
        st.integers(min_value=0, max_value=40),
    ),
    min_size=4,
    max_size=40,
)


@settings(
    max_examples=70,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(calls=_CALLS)
def test_hostile_ids_namespaces_and_copies_answer_as_in_memory_saver(
    monkeypatch: pytest.MonkeyPatch, calls: list[tuple[str, str, str, int]]
) -> None:
    monkeypatch.setattr(lg_store, "INDEX_AFTER", 1)
    repo = statevcs.Repo.init("memory://")
    ours, memory = StateVCSSaver(repo), InMemorySaver()
    # Per (thread, ns): checkpoint id -> its parent id (as both savers were told).
    known: dict[tuple[str, str], dict[str, str | None]] = {}
    version = 0
    for op, thread, ns, arg in calls:
        ids = known.setdefault((thread, ns), {})
        names = sorted(ids)
        if op == "delete":
            ours.delete_thread(thread)
            memory.delete_thread(thread)
            for k in [k for k in known if k[0] == thread]:
                known[k] = {}
        elif op == "copy":
            target = _THREADS[(_THREADS.index(thread) + 1 + arg % 2) % len(_THREADS)]
            # The target must be empty: delete it first in both.
            ours.delete_thread(target)
            memory.delete_thread(target)
            ours.copy_thread(thread, target)
            _memory_copy(memory, thread, target)
            for k in [k for k in known if k[0] == target]:
                known[k] = {}
            for (t, n), entries in list(known.items()):
                if t == thread:
                    known[(target, n)] = dict(entries)
        elif op in ("put", "fork", "again", "move"):
            if op in ("again", "move") and names:
                cid = names[arg % len(names)]
                if op == "again":
                    parent = ids[cid]
                else:
                    # Put again under another parent (never itself nor one of its descendants).
                    below = {cid}
                    grew = True
                    while grew:
                        grew = False
                        for c, p in ids.items():
                            if p in below and c not in below:
                                below.add(c)
                                grew = True
                    choices = [n for n in names if n not in below]
                    parent = choices[arg % len(choices)] if choices else None
            else:
                # Ids from a small shared pool: duplicates across namespaces and threads,
                # children smaller than their parents.
                cid = _cid(arg)
                if cid in ids:
                    continue
                if op == "fork" and names:
                    parent = names[(arg * 7) % len(names)]
                else:
                    latest = memory.get_tuple(_config(thread, ns))
                    parent = latest.checkpoint["id"] if latest is not None else None
            version += 1
            values = {"messages": [f"{thread}{ns}{i}" for i in range(arg % 5)], "n": arg}
            for saver in (ours, memory):
                saver.put(
                    _config(thread, ns, parent),
                    checkpoint(cid, values, version),
                    {"source": "loop", "step": arg % 4, "run_id": f"r{arg % 3}"},
                    {"messages": version, "n": version},
                )
            ids[cid] = parent
        elif op == "writes" and names:
            target_id = names[arg % len(names)]
            channel = ("messages", "__error__", "n")[arg % 3]
            for saver in (ours, memory):
                saver.put_writes(
                    _config(thread, ns, target_id), [(channel, f"w{arg}")], f"task-{arg % 2}"
                )
        # Every lookup of this namespace, the latest and an unknown id.
        for cid in [*sorted(known.get((thread, ns), {})), None, _cid(99)]:
            want = _shape(memory.get_tuple(_config(thread, ns, cid)))
            assert _shape(ours.get_tuple(_config(thread, ns, cid))) == want, (op, cid)
    fresh = StateVCSSaver(repo)
    for (thread, ns), ids in known.items():
        for cid in [*sorted(ids), None]:
            want = _shape(memory.get_tuple(_config(thread, ns, cid)))
            assert _shape(ours.get_tuple(_config(thread, ns, cid))) == want
            assert _shape(fresh.get_tuple(_config(thread, ns, cid))) == want
        got = [_shape(t) for t in ours.list(_config(thread, ns))]
        assert got == [_shape(t) for t in memory.list(_config(thread, ns))]


# --- 3. the latest checkpoint with stale max_id bounds -----------------------------------------


def _put(
    saver: StateVCSSaver,
    thread: str,
    cid: str,
    parent: str | None,
    n: int,
    run: str = "r0",
    ns: str = "",
) -> None:
    saver.put(
        _config(thread, ns, parent),
        checkpoint(cid, {"messages": [f"m{i}" for i in range(n)], "n": n}, n),
        {"source": "loop", "step": n, "run_id": run},
        {"messages": n, "n": n},
    )


@pytest.mark.parametrize("index_after", [1, 256])
def test_latest_after_the_greatest_id_is_dropped_by_delete_for_runs(
    monkeypatch: pytest.MonkeyPatch, index_after: int
) -> None:
    monkeypatch.setattr(lg_store, "INDEX_AFTER", index_after)
    repo = statevcs.Repo.init("memory://")
    saver, other = StateVCSSaver(repo), StateVCSSaver(repo)
    # 50 -> 10 -> 20 (a writer's clock behind): the latest is 50, an inner checkpoint.
    _put(saver, "t", _cid(50), None, 1, run="big")
    _put(saver, "t", _cid(10), _cid(50), 2)
    _put(saver, "t", _cid(20), _cid(10), 3)
    latest = saver.get_tuple(_config("t"))
    assert latest is not None and latest.checkpoint["id"] == _cid(50)
    saver.get_tuple(_config("t", cid=_cid(10)))  # an index, if any
    other.delete_for_runs(["big"])
    for reader in (saver, StateVCSSaver(repo)):
        found = reader.get_tuple(_config("t"))
        assert found is not None and found.checkpoint["id"] == _cid(20)
        assert found.checkpoint["channel_values"]["n"] == 3
    # Then a new step under the stale bound: the latest is the new greatest id.
    _put(saver, "t", _cid(30), _cid(20), 4)
    for reader in (saver, StateVCSSaver(repo)):
        found = reader.get_tuple(_config("t"))
        assert found is not None and found.checkpoint["id"] == _cid(30)
    other.delete_thread("t")
    assert saver.get_tuple(_config("t")) is None
    assert saver.get_tuple(_config("t", cid=_cid(10))) is None
    assert list(saver.list(_config("t"))) == []
    assert saver.get_delta_channel_history(config=_config("t"), channels=["n"]) == {
        "n": {"writes": []}
    }


@pytest.mark.xfail(
    strict=True,
    reason="prune keep_latest keeps the branch tip, not the greatest id get_tuple calls latest",
)
def test_prune_keep_latest_keeps_the_checkpoint_get_tuple_calls_latest() -> None:
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)
    _put(saver, "t", _cid(50), None, 1)
    saver.put_writes(_config("t", cid=_cid(50)), [("n", "folded")], "task-1")
    _put(saver, "t", _cid(10), _cid(50), 2)  # a clock behind: folds 50's writes
    saver.put_writes(_config("t", cid=_cid(50)), [("n", "side")], "task-2")
    latest = saver.get_tuple(_config("t"))
    assert latest is not None and latest.checkpoint["id"] == _cid(50)
    saver.prune(["t"], strategy="keep_latest")
    kept = saver.get_tuple(_config("t"))
    assert kept is not None
    assert kept.checkpoint["id"] == latest.checkpoint["id"]
    assert kept.checkpoint["channel_values"] == latest.checkpoint["channel_values"]
    assert kept.pending_writes == latest.pending_writes
    assert [w[2] for w in kept.pending_writes] == ["folded", "side"]
    assert [t.checkpoint["id"] for t in saver.list(_config("t"))] == [_cid(50)]


def test_latest_of_an_empty_or_missing_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lg_store, "INDEX_AFTER", 1)
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)
    assert saver.get_tuple(_config("t")) is None
    assert saver.get_tuple(_config("t", "sub:1")) is None
    _put(saver, "t", _cid(5), None, 1, ns="sub:1")
    assert saver.get_tuple(_config("t")) is None
    found = saver.get_tuple(_config("t", "sub:1"))
    assert found is not None and found.checkpoint["id"] == _cid(5)
    saver.prune(["t"], strategy="delete")
    assert saver.get_tuple(_config("t", "sub:1")) is None
    assert saver.get_tuple(_config("t", "sub:1", _cid(5))) is None
