"""Attacks on ``StateVCSSaver``: what was checkpointed must come back exactly, as with
LangGraph's own savers (``InMemorySaver``, ``SqliteSaver``), under hostile ids, odd values,
concurrent writers, time travel and the command line.

Claims that hold are plain tests; the defects found (once strict xfails) are fixed.
"""

from __future__ import annotations

import asyncio
import copy
import operator
import sqlite3
from pathlib import Path
from typing import Annotated, Any, TypedDict

import ormsgpack
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_SINGLE_ARG
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command
from support import langgraph_checkpoint

import statevcs
from statevcs.cli.app import cli
from statevcs.errors import SerializationError
from statevcs.integrations.langgraph import StateVCSSaver, UnsafeValue
from statevcs.integrations.langgraph.names import ThreadKey

from .langgraph_support import approval_graph, chat_graph, nested_graph, plain

ERROR_CHANNEL = "__error__"
INTERRUPT_CHANNEL = "__interrupt__"


def _config(thread: Any, cid: str | None = None, ns: str = "") -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if cid is not None:
        configurable["checkpoint_id"] = cid
    return {"configurable": configurable}


def _memory_saver() -> StateVCSSaver:
    return StateVCSSaver(statevcs.Repo.init("memory://"))


def _sqlite_saver() -> SqliteSaver:
    return SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))


def _repo_state(saver: StateVCSSaver) -> tuple[dict[str, str], int]:
    return saver.repo.refs.as_hex(), sum(1 for _ in saver.repo.store.iter_objects())


# --- exact read-back, side by side with LangGraph's savers ----------------------------------


def _pare(config: Any) -> dict[str, Any]:
    """A config without LangGraph's runtime objects (locks, callbacks): what a saver reads."""
    configurable = config["configurable"]
    keys = ("thread_id", "checkpoint_ns", "checkpoint_id")
    return {"configurable": {k: configurable[k] for k in keys if k in configurable}}


class _Recorder(InMemorySaver):
    """An ``InMemorySaver`` that also records every put and put_writes it gets (deep copies)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        args = copy.deepcopy((_pare(config), checkpoint, metadata, new_versions))
        self.calls.append(("put", args))
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.calls.append(
            ("put_writes", copy.deepcopy((_pare(config), writes, task_id, task_path)))
        )
        super().put_writes(config, writes, task_id, task_path)


def _recorded_calls() -> list[tuple[str, tuple[Any, ...]]]:
    """Every saver call of real graphs: tools, time travel, a fork, interrupts, a subgraph."""
    recorder = _Recorder()
    app = chat_graph(recorder)
    config: Any = {"configurable": {"thread_id": "chat"}}
    app.invoke({"messages": [HumanMessage(content="weather in Paris", id="u1")]}, config)
    app.invoke({"messages": [HumanMessage(content="thanks", id="u2")]}, config)
    history = list(app.get_state_history(config))
    app.invoke(None, history[3].config)  # time travel: replay from an old checkpoint
    app.update_state(history[5].config, {"turns": 42})  # fork an older checkpoint
    app = approval_graph(recorder)
    config = {"configurable": {"thread_id": "approval"}}
    app.invoke({"request": "a refund"}, config)
    app.invoke(Command(resume="yes"), config)
    app = nested_graph(recorder)
    config = {"configurable": {"thread_id": "nested"}}
    app.invoke({"request": "x"}, config)
    app.invoke(Command(resume="ok"), config)
    return recorder.calls


def _replayed(saver: BaseCheckpointSaver[Any], calls: list[tuple[str, tuple[Any, ...]]]) -> Any:
    """Replay ``calls`` into ``saver``; return its checkpoints by (thread, id), in list order."""
    for kind, args in calls:
        getattr(saver, kind)(*copy.deepcopy(args))
    return {
        (t.config["configurable"]["thread_id"], t.checkpoint["id"]): t for t in saver.list(None)
    }


def test_replayed_graph_calls_read_back_exactly_as_in_memory_and_sqlite_savers() -> None:
    calls = _recorded_calls()
    expected = _replayed(InMemorySaver(), calls)
    assert len(expected) > 20
    for other in (_sqlite_saver(), _memory_saver()):
        found = _replayed(other, calls)
        assert set(found) == set(expected), type(other).__name__
        for key, want in expected.items():
            got = found[key]
            for field in ("config", "checkpoint", "metadata", "parent_config", "pending_writes"):
                assert getattr(got, field) == getattr(want, field), (type(other), key, field)
        # each namespace lists newest first, as LangGraph's savers do (list(None) interleaves
        # threads differently in each of them)
        for thread, ns in {
            (t, c.config["configurable"]["checkpoint_ns"]) for (t, _), c in expected.items()
        }:
            config = _config(thread, ns=ns)
            assert [t.checkpoint["id"] for t in other.list(config)] == [
                key[1]
                for key, t in expected.items()
                if key[0] == thread and t.config["configurable"]["checkpoint_ns"] == ns
            ], (type(other), thread, ns)


def test_pending_writes_are_idempotent_as_in_langgraph_savers() -> None:
    results = []
    for saver in (InMemorySaver(), _sqlite_saver(), _memory_saver()):
        seen = []
        saver.put_writes(_config("t", "1"), [("a", 1)], "early")  # before its checkpoint
        first = saver.put(_config("t"), langgraph_checkpoint("1", {"v": 1}), {}, {"v": 1})
        saver.put_writes(first, [("a", 2), ("b", 3)], "t1")
        saver.put_writes(first, [("a", 20), ("b", 30), ("c", 40)], "t1")  # (task, idx) once
        saver.put_writes(first, [(ERROR_CHANNEL, "e1")], "t2")
        saver.put_writes(first, [(ERROR_CHANNEL, "e2")], "t2")  # special writes replaced
        saver.put_writes(first, [(INTERRUPT_CHANNEL, "i1")], "t3")
        seen.append(saver.get_tuple(first).pending_writes)  # type: ignore[union-attr]
        second = saver.put(first, langgraph_checkpoint("2", {"v": 2}, 2), {}, {"v": 2})
        saver.put_writes(first, [(ERROR_CHANNEL, "e3")], "t2")  # first now has a child
        saver.put_writes(first, [("a", 99)], "t1")
        saver.put_writes(first, [("z", 5)], "t4")
        seen.append(saver.get_tuple(first).pending_writes)  # type: ignore[union-attr]
        seen.append(saver.get_tuple(second).pending_writes)  # type: ignore[union-attr]
        results.append(seen)
    assert results[2] == results[0] == results[1]


@pytest.mark.parametrize("durability", ["exit", "async"])
def test_graphs_under_every_durability_read_back_as_in_memory(durability: str) -> None:
    def run(saver: BaseCheckpointSaver[Any]) -> list[Any]:
        rows: list[Any] = []
        for graph, thread, first, second in (
            (
                chat_graph,
                "c",
                {"messages": [HumanMessage(content="weather in Oslo", id="u")]},
                None,
            ),
            (approval_graph, "a", {"request": "x"}, Command(resume="yes")),
            (nested_graph, "n", {"request": "x"}, Command(resume="ok")),
        ):
            app = graph(saver)
            config: Any = {"configurable": {"thread_id": thread}}
            app.invoke(first, config, durability=durability)  # type: ignore[arg-type]
            if second is not None:
                app.invoke(second, config, durability=durability)  # type: ignore[arg-type]
            for t in saver.list({"configurable": {"thread_id": thread}}):
                rows.append(
                    (
                        t.config["configurable"]["checkpoint_ns"].split(":")[0],
                        plain(t.checkpoint["channel_values"]),
                        t.metadata.get("source"),
                        t.metadata.get("step"),
                        t.parent_config is not None,
                        sorted((c, repr(plain(v))) for _, c, v in t.pending_writes or []),
                    )
                )
        return rows

    ours = run(_memory_saver())
    # Newest first by id across a thread's namespaces, as SqliteSaver lists them;
    # InMemorySaver lists one namespace after another.
    assert ours == run(_sqlite_saver())
    by_namespace = sorted(ours, key=lambda row: row[0])
    assert by_namespace == sorted(run(InMemorySaver()), key=lambda row: row[0])


def test_many_threads_under_asyncio_gather_read_back_as_in_memory() -> None:
    async def run(saver: BaseCheckpointSaver[Any]) -> dict[int, list[Any]]:
        app = chat_graph(saver)

        async def one(i: int) -> None:
            config: Any = {"configurable": {"thread_id": f"t{i}"}}
            question = HumanMessage(content=f"weather in City{i}", id=f"u{i}")
            await app.ainvoke({"messages": [question]}, config)
            await app.ainvoke({"messages": [HumanMessage(content=f"ok {i}", id=f"v{i}")]}, config)

        await asyncio.gather(*(one(i) for i in range(12)))
        out = {}
        for i in range(12):
            config: Any = {"configurable": {"thread_id": f"t{i}"}}
            out[i] = [
                (plain(s.values), s.metadata["step"] if s.metadata else None, s.parent_config)
                async for s in app.aget_state_history(config)
            ]
        return out

    mine, theirs = asyncio.run(run(_memory_saver())), asyncio.run(run(InMemorySaver()))
    strip = {
        i: [(v, step, parent is not None) for v, step, parent in rows] for i, rows in mine.items()
    }
    assert strip == {
        i: [(v, step, parent is not None) for v, step, parent in rows] for i, rows in theirs.items()
    }


def test_copy_thread_then_writing_both_keeps_them_apart() -> None:
    saver = _memory_saver()
    app = chat_graph(saver)
    source: Any = {"configurable": {"thread_id": "src"}}
    target: Any = {"configurable": {"thread_id": "dst"}}
    app.invoke({"messages": [HumanMessage(content="hello", id="u1")]}, source)
    saver.copy_thread("src", "dst")
    app.invoke({"messages": [HumanMessage(content="to src", id="u2")]}, source)
    app.invoke({"messages": [HumanMessage(content="to dst", id="u3")]}, target)
    assert [m.content for m in app.get_state(source).values["messages"]][2:] == [
        "to src",
        "echo: to src",
    ]
    assert [m.content for m in app.get_state(target).values["messages"]][2:] == [
        "to dst",
        "echo: to dst",
    ]
    saver.delete_thread("src")
    assert app.get_state(source).values == {}
    listed = list(saver.list(target))
    assert len(listed) == 6
    assert {t.config["configurable"]["thread_id"] for t in listed} == {"dst"}


class _DeltaState(TypedDict, total=False):
    items: Annotated[list[str], DeltaChannel(operator.add, snapshot_frequency=3)]
    messages: Annotated[list[AnyMessage], add_messages]


def _delta_run(saver: BaseCheckpointSaver[Any]) -> list[Any]:
    def add(state: _DeltaState) -> dict[str, Any]:
        n = len(state.get("items", []))
        out: dict[str, Any] = {"items": [f"item {n}"], "messages": [AIMessage(f"r{n}", id=f"r{n}")]}
        if n == 5:
            out["messages"].append(RemoveMessage(id=state["messages"][0].id or ""))
        return out

    graph = StateGraph(_DeltaState)
    graph.add_node("add", add)
    graph.add_edge(START, "add")
    graph.add_edge("add", END)
    app = graph.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "d"}}
    for turn in range(6):
        message = HumanMessage(content=f"u{turn}", id=f"u{turn}")
        app.invoke({"items": [f"u{turn}"], "messages": [message]}, config)
    history = list(app.get_state_history(config))
    app.invoke(None, history[5].config)  # replay from the past
    edit = {"items": ["forked"], "messages": [HumanMessage(content="edit", id="u1")]}
    app.invoke(None, app.update_state(history[7].config, edit))
    app.invoke({"items": ["after"]}, config)
    return [
        (plain(s.values), s.next, s.metadata and s.metadata.get("step"))
        for s in app.get_state_history(config)
    ]


def test_delta_channel_history_matches_in_memory_and_langgraphs_own_walk() -> None:
    saver = _memory_saver()
    assert _delta_run(saver) == _delta_run(InMemorySaver())
    channels = ["items", "messages", "absent"]
    for t in saver.list({"configurable": {"thread_id": "d"}}):
        mine = saver.get_delta_channel_history(config=t.config, channels=channels)
        walked = BaseCheckpointSaver.get_delta_channel_history(
            saver, config=t.config, channels=channels
        )
        assert plain(dict(mine)) == plain(dict(walked))


def test_failed_puts_and_writes_leave_the_repository_unchanged(tmp_path: Path) -> None:
    saver = StateVCSSaver(statevcs.Repo.init(tmp_path / "repo"))
    first = saver.put(
        _config("t"),
        langgraph_checkpoint("1", {"messages": [HumanMessage(content="a", id="1")], "x": 1}),
        {},
        {"messages": 1, "x": 1},
    )

    def fn() -> int:
        return 1

    grown = [HumanMessage(content="a", id="1"), HumanMessage(content="b", id="2")]
    cases = [
        lambda: saver.put(
            first,
            langgraph_checkpoint("2", {"messages": grown, "other": [1, fn]}, 2),
            {},
            {"other": 2},
        ),
        lambda: saver.put(first, langgraph_checkpoint("2", {"x": fn}, 2), {}, {"x": 2}),
        lambda: saver.put(first, langgraph_checkpoint("2", {"x": 2**80}, 2), {}, {"x": 2}),
        lambda: saver.put(first, langgraph_checkpoint("2", {"x": 2}, 2), {"m": fn}, {"x": 2}),
        lambda: saver.put_writes(first, [("a", 1), ("b", fn)], "task"),
        lambda: saver.put_writes(_config("t", "later"), [("a", 1), ("b", fn)], "task"),
    ]
    for call in cases:
        before = _repo_state(saver)
        with pytest.raises(SerializationError):
            call()
        assert _repo_state(saver) == before


# --- hostile ids -----------------------------------------------------------------------------

_HOSTILE = st.one_of(
    st.text(max_size=10),
    st.sampled_from(["", ".", "..", "/", "a/../b", "@{", "%", "%25", ".ns-x", "refs/heads/x"]),
    st.sampled_from(["A", "a", "é", "e\u0301", "\x00", "\x1b[31m", "x.lock", "-"]),
)


@settings(max_examples=30, deadline=None)
@given(_HOSTILE, _HOSTILE, _HOSTILE, _HOSTILE)
@example("A", "", "a", "")
@example("é", "", "e\u0301", "")
@example("t", "x", "t.ns-x", "")
@example("t", "a|b", "t", "a%7Cb")
def test_hostile_threads_and_namespaces_never_meet(t1: str, n1: str, t2: str, n2: str) -> None:
    if (t1, n1) == (t2, n2):
        return
    saver = _memory_saver()
    for thread, ns, who in ((t1, n1, "one"), (t2, n2, "two")):
        saver.put(
            _config(thread, ns=ns), langgraph_checkpoint(f"1-{who}", {"who": who}), {}, {"who": 1}
        )
    for thread, ns, who in ((t1, n1, "one"), (t2, n2, "two")):
        got = saver.get_tuple(_config(thread, ns=ns))
        assert got is not None and got.checkpoint["channel_values"] == {"who": who}
        assert got.config["configurable"]["checkpoint_ns"] == ns
        listed = list(saver.list(_config(thread, ns=ns)))
        assert [t.checkpoint["channel_values"]["who"] for t in listed] == [who]
    assert all(
        name.startswith(("refs/heads/threads/", "refs/langgraph/")) or name == "HEAD"
        for name in saver.repo.refs.as_hex()
    )
    saver.delete_thread(t1)
    assert saver.get_tuple(_config(t1, ns=n1)) is None
    if t2 != t1:
        kept = saver.get_tuple(_config(t2, ns=n2))
        assert kept is not None and kept.checkpoint["channel_values"] == {"who": "two"}


# --- the command line on a saver's repository ------------------------------------------------

_EVIL_THREAD = "evil\x1b[31m\n\x00/../@{x}"


def _cli_repo(tmp_path: Path) -> str:
    path = str(tmp_path / "repo")
    with StateVCSSaver.from_path(path) as saver:
        app = chat_graph(saver)
        config: Any = {
            "configurable": {"thread_id": _EVIL_THREAD},
            "metadata": {"n": "\x1b[2J\x07"},
        }
        question = HumanMessage(content="weather in \x1b[31mParis\x07", id="u1")
        app.invoke({"messages": [question]}, config)
        app.update_state(config, {"turns": 5}, as_node="agent")
    return path


def _statevcs(path: str, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--repo", path, *args], prog_name="statevcs")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_reads_a_saver_repository_with_control_characters_escaped(tmp_path: Path) -> None:
    path = _cli_repo(tmp_path)
    branch = ThreadKey.of(_EVIL_THREAD, "").branch.removeprefix("refs/heads/")
    for args in (("log", "--graph", "--all"), ("log", "--all"), ("branch",), ("show", branch)):
        out = _statevcs(path, *args)
        assert not any(c in out for c in "\x1b\x00\x07"), (args, out)
    assert "update step 4" in _statevcs(path, "log", "--graph", "--all")


def test_cli_show_displays_the_text_of_langgraph_messages(tmp_path: Path) -> None:
    path = _cli_repo(tmp_path)
    branch = ThreadKey.of(_EVIL_THREAD, "").branch.removeprefix("refs/heads/")
    out = _statevcs(path, "show", branch)
    assert "Summary: sunny in" in out
    assert "(empty)" not in out
    assert "weather(" in out  # the tool call, in LangChain's form


# --- defects -----------------------------------------------------------------------------------


class _EditState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    todos: list[dict[str, Any]]


def _edit_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    def plan(state: _EditState) -> dict[str, Any]:
        todos = list(state.get("todos") or [])
        todos.append({"task": len(todos), "done": False})
        n = len(state["messages"])
        return {"messages": [AIMessage(content=f"plan {n}", id=f"p{n}")], "todos": todos}

    def work(state: _EditState) -> dict[str, Any]:
        todos = state["todos"]
        todos[0]["done"] = True  # common LangGraph code: update an item, return the list
        return {"todos": todos}

    graph = StateGraph(_EditState)
    graph.add_node("plan", plan)
    graph.add_node("work", work)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "work")
    graph.add_edge("work", END)
    return graph.compile(checkpointer=saver)


def test_list_items_updated_in_place_are_stored_as_in_memory_saver_stores_them() -> None:
    histories = []
    for saver in (InMemorySaver(), _memory_saver()):
        app = _edit_graph(saver)
        config: Any = {"configurable": {"thread_id": "t"}}
        app.invoke({"messages": [HumanMessage(content="go", id="h")]}, config, durability="sync")
        histories.append([plain(s.values.get("todos")) for s in app.get_state_history(config)])
    assert histories[0][0] == [{"task": 0, "done": True}]
    assert histories[1] == histories[0]


def test_list_items_replaced_by_equal_values_of_another_type_read_back_exactly() -> None:
    saver = _memory_saver()
    first = saver.put(
        _config("t"), langgraph_checkpoint("1", {"items": [1, {"a": 1}, 0]}), {}, {"items": 1}
    )
    after = [True, {"a": 1.0}, False, "new"]
    second = saver.put(first, langgraph_checkpoint("2", {"items": after}, 2), {}, {"items": 2})
    got = saver.get_tuple(second)
    assert got is not None
    values = got.checkpoint["channel_values"]["items"]
    assert [type(v) for v in values] == [bool, dict, bool, str]
    assert type(values[1]["a"]) is float


class _Note(AIMessage):
    """A message subclass an application defines (importable: module level)."""


def test_message_subclasses_come_back_as_their_own_class() -> None:
    results = []
    # The saver's strict serde builds an application's class only once it is allowed.
    allowed = _memory_saver().with_allowlist([(_Note.__module__, _Note.__name__)])
    for saver in (InMemorySaver(), allowed):
        messages = [_Note(content="x", id="1"), HumanMessage(content="y", id="2")]
        config = saver.put(
            _config("t"), langgraph_checkpoint("1", {"messages": messages}), {}, {"messages": 1}
        )
        got = saver.get_tuple(config)
        assert got is not None
        results.append([type(m) for m in got.checkpoint["channel_values"]["messages"]])
    assert results[0] == [_Note, HumanMessage]
    assert results[1] == results[0]


def test_a_message_subclass_not_allowed_raises_instead_of_changing_class() -> None:
    saver = _memory_saver()
    messages = [_Note(content="x", id="1")]
    # Refused when put (what is stored always loads back), and when read if another saver
    # allowed it.
    with pytest.raises(UnsafeValue, match="with_allowlist"):
        saver.put(
            _config("t"), langgraph_checkpoint("1", {"messages": messages}), {}, {"messages": 1}
        )
    assert saver.get_tuple(_config("t")) is None
    allowed = saver.with_allowlist([(_Note.__module__, _Note.__name__)])
    config = allowed.put(
        _config("t"), langgraph_checkpoint("1", {"messages": messages}), {}, {"messages": 1}
    )
    with pytest.raises(UnsafeValue, match="with_allowlist"):
        saver.get_tuple(config)


def test_putting_an_existing_checkpoint_id_again_replaces_it_in_list() -> None:
    results = []
    for saver in (InMemorySaver(), _sqlite_saver(), _memory_saver()):
        first = saver.put(_config("t"), langgraph_checkpoint("1", {"a": 1}), {"step": 1}, {"a": 1})
        saver.put(first, langgraph_checkpoint("2", {"a": 2}, 2), {"step": 2}, {"a": 2})
        saver.put(_config("t"), langgraph_checkpoint("1", {"a": 10}), {"step": 3}, {"a": 1})
        results.append(
            [(t.checkpoint["id"], t.checkpoint["channel_values"]) for t in saver.list(_config("t"))]
        )
    assert results[0] == results[1] == [("2", {"a": 2}), ("1", {"a": 10})]
    assert results[2] == results[0]


def test_putting_the_latest_checkpoint_again_keeps_its_pending_writes() -> None:
    results = []
    for saver in (InMemorySaver(), _sqlite_saver(), _memory_saver()):
        first = saver.put(_config("w"), langgraph_checkpoint("1", {"a": 1}), {}, {"a": 1})
        saver.put_writes(first, [("a", 5)], "task")
        saver.put(_config("w"), langgraph_checkpoint("1", {"a": 1}), {}, {"a": 1})
        got = saver.get_tuple(_config("w"))
        assert got is not None
        results.append(got.pending_writes)
    assert results[0] == results[1] == [("task", "a", 5)]
    assert results[2] == results[0]


class _PlantedValue:
    """A serde that stores every value as a msgpack constructor call of ``os.mkdir(target)``.

    It plays a repository written by someone else (a shared bucket, a pulled mirror).
    """

    def __init__(self, target: str) -> None:
        self.target = target

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        call = ormsgpack.packb(["os", "mkdir", self.target])
        return "msgpack", ormsgpack.packb(ormsgpack.Ext(EXT_CONSTRUCTOR_SINGLE_ARG, call))

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        raise AssertionError("only used to write")


def test_loading_a_checkpoint_never_executes_code(tmp_path: Path) -> None:
    target = tmp_path / "ran"
    repo = statevcs.Repo.init(tmp_path / "repo")
    writer = StateVCSSaver(repo, serde=_PlantedValue(str(target)))
    writer.put(_config("t"), langgraph_checkpoint("1", {"x": {1, 2}}), {}, {"x": 1})
    assert not target.exists()
    with pytest.raises(UnsafeValue, match=r"os\.mkdir"):
        StateVCSSaver(repo).get_tuple(_config("t"))
    assert not target.exists()


def test_a_second_handle_writing_during_put_loses_nolanggraph_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two real Repo handles on one SQLite repository; the second one's put() is made to run
    # exactly between the first one's reads of the branch and of the leaf refs (the window
    # that threads hit at random).
    path = tmp_path / "repo"
    statevcs.Repo.init(path).close()
    first = StateVCSSaver(statevcs.Repo.open(path))
    second = StateVCSSaver(statevcs.Repo.open(path))
    second.put(_config("t"), langgraph_checkpoint("5", {"v": 5}), {}, {"v": 1})
    refs = first.repo.refs
    read = refs.as_dict
    fired: list[bool] = []

    def as_dict(prefix: str = "refs/") -> dict[str, bytes]:
        if prefix.startswith("refs/langgraph/heads/") and not fired:
            fired.append(True)
            second.put(_config("t"), langgraph_checkpoint("9", {"v": 9}), {}, {"v": 1})
        return read(prefix)

    monkeypatch.setattr(refs, "as_dict", as_dict)
    first.put(_config("t"), langgraph_checkpoint("3", {"v": 3}), {}, {"v": 1})
    monkeypatch.undo()
    assert fired
    ids = sorted(t.checkpoint["id"] for t in second.list(_config("t")))
    assert ids == ["3", "5", "9"]


def test_wrong_types_of_prune_and_delta_history_arguments_raise_type_error() -> None:
    saver = _memory_saver()
    config = _config("t")
    with pytest.raises(TypeError, match="strategy"):
        saver.prune(["t"], strategy=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="channels"):
        saver.get_delta_channel_history(config=config, channels="items")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="channels"):
        saver.get_delta_channel_history(config=config, channels=None)  # type: ignore[arg-type]


def test_deleted_thread_leaves_no_ref_behind() -> None:
    saver = _memory_saver()
    app = nested_graph(saver)
    config: Any = {"configurable": {"thread_id": "gone"}}
    app.invoke({"request": "x"}, config)
    saver.put_writes(_config("gone", "not-yet"), [("a", 1)], "task")  # a side ref
    keep = dict(saver.repo.refs.as_hex())
    saver.put(_config("other"), langgraph_checkpoint("1", {"v": 1}), {}, {"v": 1})
    saver.delete_thread("gone")
    left = saver.repo.refs.as_hex()
    assert not any("gone" in name for name in left)
    assert set(left) - set(keep) == {"refs/heads/threads/other"}


def test_serde_fast_message_path_builds_what_validation_builds() -> None:
    """Messages the default serde rebuilds without validation equal LangGraph's, field sets too."""
    from langchain_core.messages import SystemMessage, ToolMessage
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    from statevcs.integrations.langgraph.codec import safe_serializer

    messages = [
        HumanMessage("hi", id="1", name="x", additional_kwargs={"a": [1]}),
        AIMessage(
            "yo",
            id="2",
            tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
        AIMessage([{"type": "text", "text": "a"}], response_metadata={"m": 1}),
        ToolMessage("r", tool_call_id="c1", artifact={"z": 1}, status="error"),
        SystemMessage("s"),
    ]
    ours, theirs = safe_serializer(), JsonPlusSerializer()
    for value in (messages, {"m": messages}, _DeltaSnapshot(messages)):
        data = ours.dumps_typed(value)
        fast, slow, again = ours.loads_typed(data), theirs.loads_typed(data), ours.loads_typed(data)
        assert type(fast) is type(slow)
        unpack = {list: lambda v: v, dict: lambda v: v["m"], _DeltaSnapshot: lambda v: v.value}
        get = unpack[type(fast)]
        for a, b, c in zip(get(fast), get(slow), get(again), strict=True):
            assert type(a) is type(b) and a == b and a.__dict__ == b.__dict__
            assert a.model_fields_set == b.model_fields_set
            assert a is not c and a.additional_kwargs is not c.additional_kwargs
