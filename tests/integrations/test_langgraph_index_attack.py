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
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph import store as lg_store
from statevcs.integrations.langgraph.errors import UnsafeValue

from .langgraph_support import checkpoint, checkpoint_uuid, config_of, tuple_shape

_NAMESPACES = ("", "sub:1")


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


# --- 1. the index across processes ---------------------------------------------------------------

_READER = textwrap.dedent(
    """
    import json, sys
    import statevcs
    from statevcs.integrations.langgraph import StateVCSSaver
    from statevcs.integrations.langgraph import store as lg_store

    lg_store.INDEX_AFTER = 1  # index after every deep walk
    repo = statevcs.Repo.open(sys.argv[1])
    saver = StateVCSSaver(repo)  # long-lived: keeps its indexes between requests
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "put":
            configurable = {"thread_id": request["thread"], "checkpoint_ns": request["ns"]}
            if request["parent"] is not None:
                configurable["checkpoint_id"] = request["parent"]
            n = request["n"]
            saver.put(
                {"configurable": configurable},
                {"v": 1, "id": request["cid"], "ts": "2025-01-01T00:00:00+00:00",
                 "channel_values": {"messages": ["m%d" % i for i in range(n % 5)], "n": n},
                 "channel_versions": {"messages": n, "n": n}, "versions_seen": {},
                 "updated_channels": None},
                {"source": "loop", "step": n, "run_id": request["run"]},
                {"messages": n, "n": n},
            )
            print(json.dumps(None), flush=True)
            continue
        if request["op"] == "hits":
            print(json.dumps(saver._counts["index hits"]), flush=True)
            continue
        out = []
        for cid in request["ids"]:
            configurable = {"thread_id": request["thread"], "checkpoint_ns": request["ns"]}
            if cid is not None:
                configurable["checkpoint_id"] = cid
            found = saver.get_tuple({"configurable": configurable})
            out.append(None if found is None else [
                found.config, found.checkpoint["id"], found.checkpoint["channel_values"],
                found.metadata, found.parent_config, found.pending_writes,
            ])
        print(json.dumps(out), flush=True)
    """
)


def _json_shape(result: Any) -> Any:
    return json.loads(json.dumps(None if result is None else list(tuple_shape(result))))


@pytest.mark.parametrize("seed", [1, 2])
def test_a_long_lived_saver_in_another_process_answers_as_a_fresh_one(
    tmp_path: Path, seed: int
) -> None:
    import random

    path = tmp_path / "repo"
    statevcs.Repo.init(path).close()
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdin is not None and reader.stdout is not None

    def ask(request: dict[str, Any]) -> Any:
        assert reader.stdin is not None and reader.stdout is not None
        reader.stdin.write(json.dumps(request) + "\n")
        reader.stdin.flush()
        line = reader.stdout.readline()
        assert line, "the reader process died"
        return json.loads(line)

    rng = random.Random(seed)
    repo = statevcs.Repo.open(path)
    writer = StateVCSSaver(repo)
    known: dict[tuple[str, str], dict[str, str | None]] = {}
    counter = 100
    try:
        for _step in range(70):
            thread, ns = "t", rng.choice(_NAMESPACES)
            ids = known.setdefault((thread, ns), {})
            names = sorted(ids)
            op = rng.choice(
                [
                    "put",
                    "put",
                    "fork",
                    "again",
                    "reader_put",
                    "writes",
                    "prune",
                    "runs",
                    "delete",
                    "copy",
                ]
            )
            counter += 1
            # Some ids behind their parent's.
            n = counter - (40 if rng.random() < 0.2 else 0)
            cid = checkpoint_uuid(n)
            if op in ("put", "fork", "reader_put") and cid not in ids:
                if op == "fork" and names:
                    parent: str | None = rng.choice(names)
                else:
                    latest = writer.get_tuple(config_of(thread, ns))
                    parent = latest.checkpoint["id"] if latest is not None else None
                run = f"r{rng.randrange(4)}"
                if op == "reader_put":
                    ask(
                        {
                            "op": "put",
                            "thread": thread,
                            "ns": ns,
                            "parent": parent,
                            "cid": cid,
                            "n": n,
                            "run": run,
                        }
                    )
                else:
                    _put(writer, thread, cid, parent, n, run=run, ns=ns)
                ids[cid] = parent
            elif op == "again" and names:
                again = rng.choice(names)
                _put(writer, thread, again, ids[again], counter, ns=ns)
            elif op == "writes" and names:
                target = rng.choice(names)
                writer.put_writes(
                    config_of(thread, ns, target), [("n", f"w{counter}")], f"task-{counter % 3}"
                )
            elif op == "prune" and rng.random() < 0.3:
                writer.prune([thread])
            elif op == "runs":
                writer.delete_for_runs([f"r{rng.randrange(4)}"])
            elif op == "delete" and rng.random() < 0.2:
                writer.delete_thread(thread)
            elif op == "copy" and rng.random() < 0.4:
                # Another thread copied into this one (deleted first).
                _put(writer, "src", checkpoint_uuid(counter), None, counter, ns=ns)
                writer.delete_thread(thread)
                writer.copy_thread("src", thread)
                writer.delete_thread("src")
            # The writer pauses: the reader answers every lookup as a fresh saver does now.
            fresh = StateVCSSaver(repo)
            for key_ns in _NAMESPACES:
                lookups = [*sorted(known.get((thread, key_ns), {})), None, checkpoint_uuid(99999)]
                got = ask({"op": "get", "thread": thread, "ns": key_ns, "ids": lookups})
                want = [_json_shape(fresh.get_tuple(config_of(thread, key_ns, c))) for c in lookups]
                assert got == want, (op, key_ns)
        assert ask({"op": "hits"}) > 50  # the reader's lookups did use its indexes
    finally:
        assert reader.stdin is not None
        reader.stdin.close()
        reader.wait(timeout=30)
        repo.close()
    assert reader.returncode == 0


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
                    # Put again under another parent: any but itself, even a descendant.
                    choices = [n for n in names if n != cid]
                    parent = choices[arg % len(choices)] if choices else None
            else:
                # Ids from a small shared pool: duplicates across namespaces and threads,
                # children smaller than their parents.
                cid = checkpoint_uuid(arg)
                if cid in ids:
                    continue
                if op == "fork" and names:
                    parent = names[(arg * 7) % len(names)]
                else:
                    latest = memory.get_tuple(config_of(thread, ns))
                    parent = latest.checkpoint["id"] if latest is not None else None
            version += 1
            values = {"messages": [f"{thread}{ns}{i}" for i in range(arg % 5)], "n": arg}
            for saver in (ours, memory):
                saver.put(
                    config_of(thread, ns, parent),
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
                    config_of(thread, ns, target_id), [(channel, f"w{arg}")], f"task-{arg % 2}"
                )
        # Every lookup of this namespace, the latest and an unknown id.
        for cid in [*sorted(known.get((thread, ns), {})), None, checkpoint_uuid(99)]:
            want = tuple_shape(memory.get_tuple(config_of(thread, ns, cid)))
            assert tuple_shape(ours.get_tuple(config_of(thread, ns, cid))) == want, (op, cid)
    fresh = StateVCSSaver(repo)
    for (thread, ns), ids in known.items():
        for cid in [*sorted(ids), None]:
            want = tuple_shape(memory.get_tuple(config_of(thread, ns, cid)))
            assert tuple_shape(ours.get_tuple(config_of(thread, ns, cid))) == want
            assert tuple_shape(fresh.get_tuple(config_of(thread, ns, cid))) == want
        got = [tuple_shape(t) for t in ours.list(config_of(thread, ns))]
        assert got == [tuple_shape(t) for t in memory.list(config_of(thread, ns))]


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
        config_of(thread, ns, parent),
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
    _put(saver, "t", checkpoint_uuid(50), None, 1, run="big")
    _put(saver, "t", checkpoint_uuid(10), checkpoint_uuid(50), 2)
    _put(saver, "t", checkpoint_uuid(20), checkpoint_uuid(10), 3)
    latest = saver.get_tuple(config_of("t"))
    assert latest is not None and latest.checkpoint["id"] == checkpoint_uuid(50)
    saver.get_tuple(config_of("t", checkpoint_id=checkpoint_uuid(10)))  # an index, if any
    other.delete_for_runs(["big"])
    for reader in (saver, StateVCSSaver(repo)):
        found = reader.get_tuple(config_of("t"))
        assert found is not None and found.checkpoint["id"] == checkpoint_uuid(20)
        assert found.checkpoint["channel_values"]["n"] == 3
    # Then a new step under the stale bound: the latest is the new greatest id.
    _put(saver, "t", checkpoint_uuid(30), checkpoint_uuid(20), 4)
    for reader in (saver, StateVCSSaver(repo)):
        found = reader.get_tuple(config_of("t"))
        assert found is not None and found.checkpoint["id"] == checkpoint_uuid(30)
    other.delete_thread("t")
    assert saver.get_tuple(config_of("t")) is None
    assert saver.get_tuple(config_of("t", checkpoint_id=checkpoint_uuid(10))) is None
    assert list(saver.list(config_of("t"))) == []
    assert saver.get_delta_channel_history(config=config_of("t"), channels=["n"]) == {
        "n": {"writes": []}
    }


def test_prune_keep_latest_keeps_the_checkpoint_get_tuple_calls_latest() -> None:
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)
    _put(saver, "t", checkpoint_uuid(50), None, 1)
    saver.put_writes(config_of("t", checkpoint_id=checkpoint_uuid(50)), [("n", "folded")], "task-1")
    _put(
        saver, "t", checkpoint_uuid(10), checkpoint_uuid(50), 2
    )  # a clock behind: folds 50's writes
    saver.put_writes(config_of("t", checkpoint_id=checkpoint_uuid(50)), [("n", "side")], "task-2")
    latest = saver.get_tuple(config_of("t"))
    assert latest is not None and latest.checkpoint["id"] == checkpoint_uuid(50)
    saver.prune(["t"], strategy="keep_latest")
    kept = saver.get_tuple(config_of("t"))
    assert kept is not None
    assert kept.checkpoint["id"] == latest.checkpoint["id"]
    assert kept.checkpoint["channel_values"] == latest.checkpoint["channel_values"]
    assert kept.pending_writes == latest.pending_writes
    assert [w[2] for w in kept.pending_writes] == ["folded", "side"]
    assert [t.checkpoint["id"] for t in saver.list(config_of("t"))] == [checkpoint_uuid(50)]


def test_latest_of_an_empty_or_missing_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lg_store, "INDEX_AFTER", 1)
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)
    assert saver.get_tuple(config_of("t")) is None
    assert saver.get_tuple(config_of("t", "sub:1")) is None
    _put(saver, "t", checkpoint_uuid(5), None, 1, ns="sub:1")
    assert saver.get_tuple(config_of("t")) is None
    found = saver.get_tuple(config_of("t", "sub:1"))
    assert found is not None and found.checkpoint["id"] == checkpoint_uuid(5)
    saver.prune(["t"], strategy="delete")
    assert saver.get_tuple(config_of("t", "sub:1")) is None
    assert saver.get_tuple(config_of("t", "sub:1", checkpoint_uuid(5))) is None


# --- 4. async twins interleaved on one saver ----------------------------------------------------


def test_async_twins_interleaved_on_one_saver_with_the_index_in_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lg_store, "INDEX_AFTER", 1)
    repo = statevcs.Repo.init("memory://")
    saver, memory = StateVCSSaver(repo), InMemorySaver()
    chain: list[str] = []
    for n in range(40):
        # Every fifth id behind its parent (a clock stepping back).
        cid = checkpoint_uuid(1000 + n * 10 - (15 if n % 5 == 4 else 0))
        for s in (saver, memory):
            _put(s, "t", cid, chain[-1] if chain else None, n + 1, run=f"r{n % 3}")
        chain.append(cid)
    readable, written = chain[:20], chain[20:]
    expected = {c: tuple_shape(memory.get_tuple(config_of("t", checkpoint_id=c))) for c in readable}
    saver.get_tuple(config_of("t", checkpoint_id=chain[0]))  # index the namespace

    async def run() -> list[Any]:
        calls: list[Any] = []
        for i in range(30):
            calls.append(
                saver.aget_tuple(config_of("t", checkpoint_id=readable[i % len(readable)]))
            )
            if i % 3 == 0:
                fork = checkpoint_uuid(5000 + i)
                parent = chain[(i * 7) % len(chain)]
                calls.append(
                    saver.aput(
                        config_of("t", checkpoint_id=parent),
                        checkpoint(fork, {"messages": ["f"], "n": i}, 100 + i),
                        {"source": "fork", "step": i},
                        {"messages": 100 + i, "n": 100 + i},
                    )
                )
            if i % 2 == 0:
                target = written[i % len(written)]
                calls.append(
                    saver.aput_writes(
                        config_of("t", checkpoint_id=target), [("n", f"w{i}")], f"task-{i}"
                    )
                )
            if i % 5 == 0:

                async def listed() -> list[Any]:
                    return [t async for t in saver.alist(config_of("t"), limit=3)]

                calls.append(listed())
        return await asyncio.gather(*calls)

    results = asyncio.run(run())
    reads = [r for r in results if r is not None and hasattr(r, "checkpoint")]
    assert len(reads) == 30
    for found in reads:
        assert tuple_shape(found) == expected[found.checkpoint["id"]]
    # The same calls, one by one, on InMemorySaver.
    for i in range(30):
        if i % 3 == 0:
            memory.put(
                config_of("t", checkpoint_id=chain[(i * 7) % len(chain)]),
                checkpoint(checkpoint_uuid(5000 + i), {"messages": ["f"], "n": i}, 100 + i),
                {"source": "fork", "step": i},
                {"messages": 100 + i, "n": 100 + i},
            )
        if i % 2 == 0:
            memory.put_writes(
                config_of("t", checkpoint_id=written[i % len(written)]),
                [("n", f"w{i}")],
                f"task-{i}",
            )
    fresh = StateVCSSaver(repo)
    everything = [*chain, *(checkpoint_uuid(5000 + i) for i in range(0, 30, 3)), None]
    for cid in everything:
        want = tuple_shape(memory.get_tuple(config_of("t", checkpoint_id=cid)))
        assert tuple_shape(saver.get_tuple(config_of("t", checkpoint_id=cid))) == want, cid
        assert tuple_shape(fresh.get_tuple(config_of("t", checkpoint_id=cid))) == want, cid
    got = [tuple_shape(t) for t in saver.list(config_of("t"))]
    assert got == [tuple_shape(t) for t in memory.list(config_of("t"))]


# --- 5. list() batches decode only what they may yield ---------------------------------------


class _Memo(AIMessage):
    """A message class only an allow-listed saver may build (module level: importable)."""


def test_list_with_limit_or_filter_never_decodes_a_checkpoint_it_does_not_yield() -> None:
    repo = statevcs.Repo.init("memory://")
    strict = StateVCSSaver(repo)
    wide = strict.with_allowlist([(_Memo.__module__, "_Memo")])
    # An old checkpoint holds a message the strict saver may not build; the latest no longer.
    old = [HumanMessage(content="hi", id="h1"), _Memo(content="note", id="m1")]
    first = wide.put(
        config_of("t"),
        checkpoint(checkpoint_uuid(1), {"messages": old}, 1),
        {"step": 1},
        {"messages": 1},
    )
    new = [HumanMessage(content="hi", id="h1")]
    wide.put(
        first, checkpoint(checkpoint_uuid(2), {"messages": new}, 2), {"step": 2}, {"messages": 2}
    )
    latest = strict.get_tuple(config_of("t"))
    assert latest is not None and latest.checkpoint["channel_values"]["messages"] == new
    for kwargs in ({"limit": 1}, {"filter": {"step": 2}}):
        got = list(strict.list(config_of("t"), **kwargs))  # type: ignore[arg-type]
        assert [t.checkpoint["id"] for t in got] == [checkpoint_uuid(2)]
        assert got[0].checkpoint["channel_values"]["messages"] == new
    with pytest.raises(UnsafeValue):
        list(strict.list(config_of("t")))
