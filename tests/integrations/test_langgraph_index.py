"""The saver's checkpoint index: a deep lookup reads a namespace once, and every later lookup
answers exactly what a walk of the stored history answers, whoever moved the thread since."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph import store as lg_store

from .langgraph_support import chat_graph, checkpoint, checkpoint_uuid, exact, thread


def _tuple_shape(result: Any) -> Any:
    """Everything a checkpoint tuple says, for an exact comparison."""
    if result is None:
        return None
    return (
        result.config,
        result.checkpoint,
        result.metadata,
        result.parent_config,
        result.pending_writes,
    )


# One step: (operation, argument). Operations: put a child of checkpoint `arg` (a fork when it
# is not the latest), put checkpoint `arg` again (replacing it), pending writes for `arg`,
# prune / delete_for_runs through another handle, look `arg` up.
_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["child", "again", "writes", "other_child", "prune", "drop_run", "get"]),
        st.integers(min_value=0, max_value=40),
    ),
    min_size=5,
    max_size=40,
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=_STEPS, backwards=st.integers(min_value=0, max_value=3))
def test_every_lookup_matches_a_fresh_walk(
    monkeypatch: pytest.MonkeyPatch, steps: list[tuple[str, int]], backwards: int
) -> None:
    monkeypatch.setattr(lg_store, "INDEX_AFTER", 1)  # index after every deep walk
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)  # keeps indexes
    other = StateVCSSaver(repo)  # another process, as far as the index can tell
    ids: list[str] = []
    runs: dict[str, str] = {}
    counter = 100

    def put(by: StateVCSSaver, parent: str | None, cid: str, n: int) -> None:
        config = thread()
        if parent is not None:
            config = {"configurable": {**config["configurable"], "checkpoint_id": parent}}
        run = f"run-{n % 3}"
        by.put(
            config,
            checkpoint(cid, {"messages": [f"m{i}" for i in range(n % 7)], "n": n}, n),
            {"source": "loop", "step": n, "run_id": run},
            {"messages": n, "n": n},
        )
        runs[cid] = run
        if cid not in ids:
            ids.append(cid)

    put(saver, None, checkpoint_uuid(counter), 1)
    for op, arg in steps:
        target = ids[arg % len(ids)] if ids else None
        if op in ("child", "other_child") and target is not None:
            counter += 1
            # Now and then an id smaller than its parent's (LangGraph's ids are time-ordered).
            n = counter - (backwards * 50 if arg % 5 == 0 else 0)
            put(saver if op == "child" else other, target, checkpoint_uuid(n), counter)
        elif op == "again" and target is not None:
            found = other.get_tuple(
                {"configurable": {**thread()["configurable"], "checkpoint_id": target}}
            )
            if found is not None:
                parent = (
                    found.parent_config["configurable"]["checkpoint_id"]
                    if (found.parent_config)
                    else None
                )
                put(saver, parent, target, arg + 1)
        elif op == "writes" and target is not None:
            config = {"configurable": {**thread()["configurable"], "checkpoint_id": target}}
            saver.put_writes(config, [("messages", f"w{arg}")], f"task-{arg}")
        elif op == "prune" and arg % 4 == 0:
            other.prune(["t"], strategy="keep_latest")
        elif op == "drop_run" and arg % 3 == 0:
            other.delete_for_runs([f"run-{arg % 3}"])
        for cid in [target, "1ef99999-0000-6000-8000-000000000000"] if target else []:
            config = {"configurable": {**thread()["configurable"], "checkpoint_id": cid}}
            fresh = StateVCSSaver(repo)  # no index: walks the stored history
            want = _tuple_shape(fresh.get_tuple(config))
            assert exact(_tuple_shape(saver.get_tuple(config)), want)
    fresh = StateVCSSaver(repo)
    for cid in ids:
        config = {"configurable": {**thread()["configurable"], "checkpoint_id": cid}}
        assert exact(_tuple_shape(saver.get_tuple(config)), _tuple_shape(fresh.get_tuple(config)))


def test_a_deep_lookup_walks_once_then_time_travel_is_direct(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)
    app = chat_graph(saver)
    config = {"configurable": {"thread_id": "long"}}
    for turn in range(120):
        app.invoke({"messages": [HumanMessage(content=f"q{turn}", id=f"u{turn}")]}, config)
    history = list(app.get_state_history(config))
    assert len(history) > lg_store.INDEX_AFTER
    walks = 0
    real = lg_store.all_commits

    def counted(*args: Any) -> Any:
        nonlocal walks
        walks += 1
        return real(*args)

    monkeypatch.setattr(lg_store, "all_commits", counted)
    oldest = history[-3].config
    expected = StateVCSSaver(repo).get_tuple(oldest)
    walks = 0
    for _ in range(3):
        assert exact(_tuple_shape(saver.get_tuple(oldest)), _tuple_shape(expected))
    # The heads' lineage indexes, or the persisted commit graph (written every 64 commits),
    # answer without a walk; else the first lookup walks once and leaves an index.
    first = 0 if saver._counts["lineage index hits"] or saver._counts["graph hits"] else 1
    assert walks == first
    # The saver's own steps keep the index; a fork from an old checkpoint finds its parent
    # without a walk, and every checkpoint reads back as a fresh handle reads it.
    forked = app.update_state(oldest, {"messages": [HumanMessage(content="fork", id="f1")]})
    assert walks == first
    configs = [forked, *(state.config for state in history[::17])]
    expected_all = [_tuple_shape(StateVCSSaver(repo).get_tuple(c)) for c in configs]
    walks = 0
    for config_, want in zip(configs, expected_all, strict=True):
        assert exact(_tuple_shape(saver.get_tuple(config_)), want)
    assert walks == 0
    # Another handle moves the thread: the index no longer matches its heads, so the next
    # deep lookup walks again (and sees the other handle's checkpoint), or reads the labels.
    other = chat_graph(StateVCSSaver(repo))
    other.invoke({"messages": [HumanMessage(content="elsewhere", id="e1")]}, config)
    assert exact(_tuple_shape(saver.get_tuple(oldest)), _tuple_shape(expected))
    assert walks == first
    latest = other.get_state(config).config
    assert exact(
        _tuple_shape(saver.get_tuple(latest)), _tuple_shape(StateVCSSaver(repo).get_tuple(latest))
    )
