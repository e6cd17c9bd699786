"""The saver's own contract: hostile inputs, atomic puts, copies, pruning, delta channels."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

import statevcs
from statevcs.errors import SerializationError, StateVCSError
from statevcs.integrations.langgraph import (
    InvalidCheckpointConfig,
    StateVCSSaver,
    ThreadExists,
    UnknownStrategy,
)

from .langgraph_support import plain


def _checkpoint(cid: str, values: dict[str, Any]) -> dict[str, Any]:
    return {
        "v": 1,
        "id": cid,
        "ts": "2025-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": {k: 1 for k in values},
        "versions_seen": {},
        "updated_channels": None,
    }


def _config(thread: Any, cid: str | None = None, ns: str = "") -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if cid is not None:
        configurable["checkpoint_id"] = cid
    return {"configurable": configurable}


@pytest.fixture
def saver() -> StateVCSSaver:
    return StateVCSSaver(statevcs.Repo.init("memory://"))


def _state(saver: StateVCSSaver) -> tuple[dict[str, str], int]:
    return saver.repo.refs.as_hex(), sum(1 for _ in saver.repo.store.iter_objects())


def test_wrong_types_raise_type_error_naming_the_argument(saver: StateVCSSaver) -> None:
    cases: list[tuple[Any, str]] = [
        (lambda: StateVCSSaver("repo"), "repo"),  # type: ignore[arg-type]
        (lambda: StateVCSSaver(saver.repo, serde=object()), "serde"),  # type: ignore[arg-type]
        (lambda: saver.get_tuple("thread"), "config"),  # type: ignore[arg-type]
        (lambda: saver.get_tuple(_config(3.5)), "thread_id"),
        (lambda: saver.get_tuple(_config("t", ns=7)), "checkpoint_ns"),  # type: ignore[arg-type]
        (
            lambda: saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_id": 1}}),
            "checkpoint_id",
        ),
        (lambda: saver.put(_config("t"), "cp", {}, {}), "checkpoint"),  # type: ignore[arg-type]
        (lambda: saver.put(_config("t"), _checkpoint("1", {}), [], {}), "metadata"),  # type: ignore[arg-type]
        (lambda: saver.put(_config("t"), _checkpoint("1", {}), {}, None), "new_versions"),  # type: ignore[arg-type]
        (lambda: saver.put_writes(_config("t", "1"), [("ch", 1)], 5), "task_id"),  # type: ignore[arg-type]
        (lambda: saver.put_writes(_config("t", "1"), "ch", "task"), "writes"),
        (lambda: saver.put_writes(_config("t", "1"), [(1, 2)], "task"), "channel"),
        (lambda: saver.delete_thread(None), "thread_id"),  # type: ignore[arg-type]
        (lambda: saver.delete_for_runs("run"), "run_ids"),
        (lambda: saver.prune("thread"), "thread_ids"),
        (lambda: list(saver.list(None, limit="3")), "limit"),  # type: ignore[arg-type]
    ]
    for call, argument in cases:
        with pytest.raises(TypeError, match=argument):
            call()


def test_bad_configs_raise_clear_errors(saver: StateVCSSaver) -> None:
    with pytest.raises(InvalidCheckpointConfig, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(InvalidCheckpointConfig, match="configurable"):
        saver.get_tuple({})
    with pytest.raises(ValueError, match="checkpoint_id"):
        saver.put_writes(_config("t"), [("ch", 1)], "task")
    with pytest.raises(InvalidCheckpointConfig, match="too long"):
        saver.get_tuple(_config("é" * 400))
    with pytest.raises(UnknownStrategy):
        saver.prune(["t"], strategy="keep_some")


def test_a_failed_put_leaves_the_repository_unchanged(saver: StateVCSSaver) -> None:
    saver.put(_config("t"), _checkpoint("1", {"a": 1}), {"source": "input", "step": -1}, {"a": 1})
    before = _state(saver)
    bad = _checkpoint("2", {"a": 2, "b": object()})
    with pytest.raises(StateVCSError):
        saver.put(_config("t", "1"), bad, {"source": "loop", "step": 0}, {"a": 2, "b": 1})
    with pytest.raises(SerializationError, match="writes"):
        saver.put_writes(_config("t", "1"), [("ch", object())], "task")
    assert _state(saver) == before
    latest = saver.get_tuple(_config("t"))
    assert latest is not None and latest.checkpoint["channel_values"] == {"a": 1}


def test_values_read_back_as_langgraphs_own_saver_reads_them(saver: StateVCSSaver) -> None:
    values = {
        "text": "é\u2028",
        "tuple": (1, 2),
        "bytes": b"\x00\xff",
        "nested": {"a": [1, 2.5, None, True]},
        "set": {1, 2},
        "none": None,
        "items": [{"k": 1}, (1, 2), b"x"],
    }
    read = []
    for checkpointer in (InMemorySaver(), saver):
        checkpointer.put(_config("t"), _checkpoint("1", values), {}, {k: 1 for k in values})
        found = checkpointer.get_tuple(_config("t"))
        assert found is not None
        read.append(found.checkpoint["channel_values"])
    assert read[1] == read[0]
    assert {k: type(v) for k, v in read[1].items()} == {k: type(v) for k, v in read[0].items()}
    assert read[1]["set"] == {1, 2} and read[1]["bytes"] == b"\x00\xff"


def test_copy_thread_is_a_branch_sharing_every_object(saver: StateVCSSaver) -> None:
    parent = None
    for step in range(3):
        config = _config("src", parent)
        saver.put(config, _checkpoint(f"{step}", {"step": step}), {"step": step}, {"step": 1})
        parent = f"{step}"
    objects_before = sum(1 for _ in saver.repo.store.iter_objects())
    saver.copy_thread("src", "dst")
    assert sum(1 for _ in saver.repo.store.iter_objects()) == objects_before
    branches = saver.repo.branches()
    assert branches["threads/dst"] == branches["threads/src"]
    with pytest.raises(ThreadExists):
        saver.copy_thread("src", "dst")


def test_prune_keep_latest_leaves_one_root_commit(saver: StateVCSSaver) -> None:
    parent = None
    for step in range(4):
        saver.put(_config("t", parent), _checkpoint(f"{step}", {"s": step}), {}, {"s": 1})
        parent = f"{step}"
    saver.prune(["t"])
    log = list(saver.repo.log("threads/t"))
    assert len(log) == 1 and log[0].parents == ()
    found = saver.get_tuple(_config("t"))
    assert found is not None and found.checkpoint["channel_values"] == {"s": 3}


class DeltaState(TypedDict):
    items: Annotated[list[str], DeltaChannel(operator.add, snapshot_frequency=3)]


def _delta_graph(checkpointer: Any) -> Any:
    def add(state: DeltaState) -> dict[str, Any]:
        return {"items": [f"item {len(state['items'])}"]}

    graph = StateGraph(DeltaState)
    graph.add_node("add", add)
    graph.add_edge(START, "add")
    graph.add_edge("add", END)
    return graph.compile(checkpointer=checkpointer)


def test_delta_channel_graphs_rebuild_the_same_state(saver: StateVCSSaver) -> None:
    results: list[Sequence[Any]] = []
    for checkpointer in (InMemorySaver(), saver):
        app = _delta_graph(checkpointer)
        config = {"configurable": {"thread_id": "delta"}}
        for turn in range(8):
            app.invoke({"items": [f"user {turn}"]}, config)
        history = [plain(s.values) for s in app.get_state_history(config)]
        results.append(history)
    assert results[0] == results[1]
    assert len(results[1][0]["items"]) == 16
    history = saver.get_delta_channel_history(config=_config("delta"), channels=["items"])
    assert set(history) == {"items"}


def test_messages_in_writes_and_values_are_the_list_items_objects(tmp_path: Any) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from statevcs.integrations.langgraph import store

    human = HumanMessage(content="hello " * 30, id="h1")
    ai = AIMessage(content="world " * 30, id="a1", tool_calls=[])
    values = {"messages": [human, ai], "__start__": {"messages": [human]}, "last": ai}
    with StateVCSSaver.from_path(tmp_path / "repo") as saver:
        config = saver.put(_config("t"), _checkpoint("1", values), {}, {k: 1 for k in values})
        saver.put_writes(config, [("messages", ai), ("messages", [human, ai]), ("x", 1)], "task")
        got = saver.get_tuple(config)
        assert got is not None
        for name, value in values.items():
            assert got.checkpoint["channel_values"][name] == value
        assert type(got.checkpoint["channel_values"]["last"]) is AIMessage
        assert [(c, v) for _t, c, v in got.pending_writes] == [
            ("messages", ai),
            ("messages", [human, ai]),
            ("x", 1),
        ]
        # Each message is one stored object: the list item's, named from values and writes
        # (the channel ``last`` names itself in its document: that one is its own object).
        repo = saver.repo
        tip = repo.refs.get("refs/heads/threads/t")
        assert tip is not None
        found = store.load(repo.objects, tip)
        snap = found.snapshot(repo.objects)
        items = set(store.prolly.items(repo.objects, snap.messages)) | set(snap.tail)

        def named(snapshot: Any) -> set[bytes]:
            extras = store.read_map(repo.objects, snapshot.extras)
            return {v for k, v in extras.items() if k.startswith(store.ITEM_PREFIX)}

        # The checkpoint names the input's message (a list item) and ``last`` (its own).
        assert len(named(snap) & items) == 1 and len(named(snap) - items) == 1
        # The pending writes (a side commit until a child checkpoint folds them) name both
        # list items and nothing else.
        side = repo.refs.get(next(iter(repo.refs.as_dict("refs/langgraph/writes/"))))
        assert side is not None
        side_snap = repo.objects.load_snapshot(repo.objects.load_commit(side).snapshot)
        assert named(side_snap) == items


def test_writes_folded_into_a_child_survive_its_deletion_and_forks(saver: StateVCSSaver) -> None:
    first = saver.put(_config("t"), _checkpoint("1", {"x": 1}), {"run_id": "a"}, {"x": 1})
    saver.put_writes(first, [("x", 2), ("y", "w")], "task")
    # The child folds the parent's writes into its commit; the side ref goes.
    child = saver.put(first, _checkpoint("2", {"x": 2}), {"run_id": "b"}, {"x": 1})
    assert not saver.repo.refs.as_dict("refs/langgraph/writes/")
    saver.put_writes(first, [("z", 3)], "late")  # after its child: on a side ref again
    fork = saver.put(first, _checkpoint("3", {"x": 3}), {"run_id": "c"}, {"x": 1})
    expected = [("task", "x", 2), ("task", "y", "w"), ("late", "z", 3)]

    def writes_of(config: dict[str, Any]) -> list[Any]:
        got = saver.get_tuple(config)
        assert got is not None
        return sorted(got.pending_writes)

    assert writes_of(first) == sorted(expected)
    listed = {t.config["configurable"]["checkpoint_id"]: t for t in saver.list(_config("t"))}
    assert sorted(listed["1"].pending_writes) == sorted(expected)
    assert listed["2"].pending_writes == [] and listed["3"].pending_writes == []
    # Deleting the child that carries them moves them back to a side ref: nothing is lost.
    saver.delete_for_runs(["b"])
    assert writes_of(first) == sorted(expected)
    assert saver.get_tuple(child) is None and saver.get_tuple(fork) is not None
    # A new lead child folds them all again.
    saver.delete_for_runs(["c"])
    saver.put(first, _checkpoint("4", {"x": 4}), {}, {"x": 1})
    assert not saver.repo.refs.as_dict("refs/langgraph/writes/")
    assert writes_of(first) == sorted(expected)


def test_a_string_with_a_lone_surrogate_reads_back_exactly(saver: StateVCSSaver) -> None:
    values = {"who": "a\ud800b", "items": ["x\udfff"]}
    config = saver.put(_config("t"), _checkpoint("1", values), {}, {k: 1 for k in values})
    got = saver.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"]["who"] == "a\ud800b"
    assert got.checkpoint["channel_values"]["items"] == ["x\udfff"]
