"""Attacks on the saver's step cache (get_tuple reuses decoded items) and whole-list prints.

Every read is compared, type for type and key order for key order, with a fresh saver on the
same repository (no cache) and with LangGraph's ``InMemorySaver`` driven the same way.
"""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pydantic
import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver, UnsafeValue
from statevcs.integrations.langgraph import codec as codec_module
from statevcs.integrations.langgraph.codec import Fingerprinter, safe_serializer

from .langgraph_support import checkpoint as _checkpoint
from .langgraph_support import exact as _exact
from .langgraph_support import thread as _thread


class _Memo(AIMessage):
    """A message subclass an application defines (module level: importable by the serde)."""


def _values(saver: BaseCheckpointSaver[Any], config: Any) -> dict[str, Any]:
    got = saver.get_tuple(config)
    assert got is not None
    return dict(got.checkpoint["channel_values"])


def _fresh(path: Path, config: Any) -> dict[str, Any]:
    repo = statevcs.Repo.open(path)
    try:
        return _values(StateVCSSaver(repo), config)
    finally:
        repo.close()


# --- results handed out earlier ------------------------------------------------------------


def test_a_result_already_returned_is_not_changed_through_a_later_one(tmp_path: Path) -> None:
    messages = [HumanMessage(content="hi", id="h1"), AIMessage(content="hello", id="a1")]
    for saver in (InMemorySaver(), StateVCSSaver(statevcs.Repo.init(tmp_path / "repo"))):
        saver.put(_thread(), _checkpoint("1", {"messages": messages}, 1), {}, {"messages": 1})
        first = _values(saver, _thread())["messages"]
        second = _values(saver, _thread())["messages"]
        second[1].content = "edited by whoever holds the second result"
        assert first[1].content == "hello", type(saver).__name__


class _ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _redacting_reply(state: dict[str, Any]) -> dict[str, Any]:
    messages = state["messages"]
    if len(messages) > 3:
        messages[0].content = "REDACTED"  # a node editing old state in place (a shortcut)
    return {"messages": [AIMessage(content=f"reply {len(messages)}", id=f"a{len(messages)}")]}


def _snapshot_after_next_run(saver: BaseCheckpointSaver[Any]) -> tuple[str, str]:
    builder: StateGraph[Any] = StateGraph(_ChatState)
    builder.add_node("agent", _redacting_reply)  # type: ignore[type-var]
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    app = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    app.invoke({"messages": [HumanMessage(content="secret", id="u0")]}, config)
    app.invoke({"messages": [HumanMessage(content="q1", id="u1")]}, config)
    snapshot = app.get_state(config)
    before = snapshot.values["messages"][0].content
    app.invoke({"messages": [HumanMessage(content="q2", id="u2")]}, config)
    return before, snapshot.values["messages"][0].content


def test_a_state_snapshot_is_not_rewritten_by_the_next_run(tmp_path: Path) -> None:
    assert _snapshot_after_next_run(InMemorySaver()) == ("secret", "secret")
    saver = StateVCSSaver(statevcs.Repo.init(tmp_path / "repo"))
    assert _snapshot_after_next_run(saver) == ("secret", "secret")


# --- with_allowlist clones ----------------------------------------------------------------


def test_a_strict_saver_refuses_what_its_allowlisted_clone_decoded(tmp_path: Path) -> None:
    strict = StateVCSSaver(statevcs.Repo.init(tmp_path / "repo"))
    wide = strict.with_allowlist([(_Memo.__module__, "_Memo")])
    messages = [HumanMessage(content="hi", id="h1"), _Memo(content="note", id="m1")]
    wide.put(_thread(), _checkpoint("1", {"messages": messages}, 1), {}, {"messages": 1})
    assert type(_values(wide, _thread())["messages"][1]) is _Memo
    with pytest.raises(UnsafeValue):
        _fresh(tmp_path / "repo", _thread())
    # The clone's decoded items must not reach the strict saver through a shared cache.
    with pytest.raises(UnsafeValue):
        strict.get_tuple(_thread())


# --- memory ------------------------------------------------------------------------------


def _codec_bytes(snapshot: tracemalloc.Snapshot) -> int:
    traces = snapshot.filter_traces([tracemalloc.Filter(True, codec_module.__file__)])
    return sum(stat.size for stat in traces.statistics("filename"))


def test_fingerprints_kept_do_not_grow_with_the_steps_of_one_thread() -> None:
    saver = StateVCSSaver(statevcs.Repo.init("memory://"))
    config: Any = _thread()
    messages: list[Any] = []
    tracemalloc.start()
    try:
        for step in range(200):
            messages = [*messages, HumanMessage(content="x" * 1000, id=f"m{step}")]
            config = saver.put(
                config,
                _checkpoint(f"{step:05d}", {"messages": messages}, step + 1),
                {},
                {"messages": step + 1},
            )
            if step % 40 == 0:
                messages = _values(saver, _thread())["messages"]
        _values(saver, _thread())
        gc.collect()
        held = _codec_bytes(tracemalloc.take_snapshot())
    finally:
        tracemalloc.stop()
    one, _ = Fingerprinter(safe_serializer()).of_list(messages)
    assert one is not None
    # The tip's print (for the next put), the view's, and the view's decoded messages: a
    # few copies of the list (~4), not one per recent step (32).
    assert held <= 8 * (len(one.body) + len(one.extras))


def test_a_class_made_at_run_time_is_freed_after_its_values_are_put() -> None:
    # LangGraph's permissive serde stores it (the default one refuses a class it could not
    # import back: test_langgraph_serde.py).
    saver = StateVCSSaver(statevcs.Repo.init("memory://"), serde=JsonPlusSerializer())
    made = pydantic.create_model("Answer", text=(str, ...))
    alive = weakref.ref(made)
    saver.put(
        _thread(), _checkpoint("1", {"rows": [{"answer": made(text="x")}]}, 1), {}, {"rows": 1}
    )
    del made
    gc.collect()
    assert alive() is None


# --- repeated items ------------------------------------------------------------------------


@pytest.mark.parametrize("incremental", [False, True], ids=["full decode", "appended"])
def test_an_item_repeated_in_a_list_comes_back_as_independent_objects(
    tmp_path: Path, incremental: bool
) -> None:
    def block() -> AIMessage:
        return AIMessage(content=[{"type": "text", "text": "a"}], id="x")

    def rows() -> list[Any]:
        return [{"a": [1]}, {"a": [1]}]

    saver = StateVCSSaver(statevcs.Repo.init(tmp_path / "repo"))
    first: dict[str, Any] = (
        {"messages": [], "rows": []}
        if incremental
        else {
            "messages": [block(), block()],
            "rows": rows(),
        }
    )
    config = saver.put(_thread(), _checkpoint("1", first, 1), {}, {"messages": 1, "rows": 1})
    if incremental:
        _values(saver, _thread())  # the view the next get_tuple extends
        second = {"messages": [block(), block()], "rows": rows()}
        saver.put(config, _checkpoint("2", second, 2), {}, {"messages": 2, "rows": 2})
    got = _values(saver, _thread())
    got["messages"][0].content[0]["text"] = "edited"
    got["rows"][0]["a"].append(2)
    assert got["messages"][1].content == [{"type": "text", "text": "a"}]
    assert got["rows"][1] == {"a": [1]}


# --- what held -----------------------------------------------------------------------------


def test_a_failed_put_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    class _Unstorable:
        pass

    saver = StateVCSSaver(statevcs.Repo.init(tmp_path / "repo"))
    messages = [HumanMessage(content="hi", id="h1")]
    config = saver.put(_thread(), _checkpoint("1", {"messages": messages}, 1), {}, {"messages": 1})
    got = _values(saver, _thread())["messages"]
    got[0].content = "edited, then the put fails"
    with pytest.raises(statevcs.errors.SerializationError):
        saver.put(
            config, _checkpoint("2", {"messages": [*got, _Unstorable()]}, 2), {}, {"messages": 2}
        )
    assert _exact(_values(saver, _thread()), _fresh(tmp_path / "repo", _thread()))
    assert _values(saver, _thread())["messages"][0].content == "hi"


def test_two_handles_time_travel_and_forks_read_as_a_fresh_saver(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    mine = StateVCSSaver(statevcs.Repo.init(path))
    other = StateVCSSaver(statevcs.Repo.open(path))

    def at(cid: str | None) -> Any:
        config = _thread()
        if cid is not None:
            config["configurable"]["checkpoint_id"] = cid
        return config

    def check(*ids: str | None) -> None:
        for cid in ids:
            assert _exact(_values(mine, at(cid)), _fresh(path, at(cid))), cid
            assert _exact(_values(other, at(cid)), _fresh(path, at(cid))), cid

    rows = [{"n": 1, "flag": True, "x": -0.0}, [1, True, 1.0], (1, 2), b"raw"]
    first = [HumanMessage(content="a", id="1")]
    mine.put(
        at(None),
        _checkpoint("1", {"messages": first, "rows": rows}, 1),
        {},
        {"messages": 1, "rows": 1},
    )
    check(None)
    got = _values(other, at(None))
    # Another handle replaces a list by one of equal length with a changed item.
    other.put(
        at("1"),
        _checkpoint(
            "2",
            {
                "messages": [HumanMessage(content="b", id="1")],
                "rows": [*got["rows"][:3], bytearray(b"raw")],
            },
            2,
        ),
        {},
        {"messages": 2, "rows": 2},
    )
    check(None, "1")
    got = _values(mine, at(None))
    mine.put(
        at("2"),
        _checkpoint(
            "3",
            {"messages": [*got["messages"], AIMessage(content="c", id="2")], "rows": "not a list"},
            3,
        ),
        {},
        {"messages": 3, "rows": 3},
    )
    check(None, "2", "1")
    # A fork from the first checkpoint, then the list back as a list, shrunk.
    back = _values(mine, at("1"))
    mine.put(
        at("1"),
        _checkpoint("4", {"messages": back["messages"][:0], "rows": [1, True]}, 4),
        {},
        {"messages": 4, "rows": 4},
    )
    check(None, "3", "2", "1")
    mine.copy_thread("t", "u")
    mine.prune(["t"])
    check(None)
    assert _exact(_values(mine, _thread("u")), _fresh(path, _thread("u")))
    other.repo.close()
    mine.repo.close()
