"""The saver's per-thread cache of decoded items never hands out data that was not committed.

get_tuple reuses the items it decoded for a thread (decoding only the items appended since)
only while their fingerprints prove them unchanged; put stores any item changed in place.
Every read here is compared, type for type and key order for key order, with a fresh saver
on the same repository (no cache).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph.codec import Fingerprinter, safe_serializer

from .langgraph_support import checkpoint
from .langgraph_support import exact as _exact
from .langgraph_support import thread as _thread


class _Note(AIMessage):
    """A message subclass an application defines (importable: module level)."""


def _checkpoint(cid: str, messages: list[Any], version: int) -> Any:
    return checkpoint(cid, {"messages": messages}, version)


def _messages(saver: StateVCSSaver, config: dict[str, Any]) -> list[Any]:
    got = saver.get_tuple(config)  # type: ignore[arg-type]
    assert got is not None
    messages = got.checkpoint["channel_values"]["messages"]
    assert isinstance(messages, list)
    return messages


def _fresh(path: Path) -> list[Any]:
    repo = statevcs.Repo.open(path)
    try:
        return _messages(
            StateVCSSaver(repo).with_allowlist([(_Note.__module__, "_Note")]), _thread()
        )
    finally:
        repo.close()


def _start(path: Path) -> tuple[StateVCSSaver, dict[str, Any], list[Any]]:
    """A thread of three checkpoints; the saver's view is at the tip (decoded incrementally)."""
    saver = StateVCSSaver(statevcs.Repo.init(path)).with_allowlist([(_Note.__module__, "_Note")])
    first = [
        HumanMessage(content="hi", id="h1"),
        AIMessage(content="hello", id="a1", additional_kwargs={"k": {"x": 1, "flag": True}}),
    ]
    config = saver.put(_thread(), _checkpoint("1", first, 1), {}, {"messages": 1})
    got = _messages(saver, _thread())
    config = saver.put(
        config,
        _checkpoint("2", [*got, HumanMessage(content="more", id="h2")], 2),
        {},
        {"messages": 2},
    )
    assert saver._derived, "the put appended: get_tuple may extend its view"
    return saver, config, _messages(saver, _thread())


def _content(messages: list[Any]) -> None:
    messages[1].content = "changed"


def _nested(messages: list[Any]) -> None:
    messages[1].additional_kwargs["k"]["x"] = 2


def _true_to_one(messages: list[Any]) -> None:
    messages[1].additional_kwargs["k"]["flag"] = 1


def _reorder(messages: list[Any]) -> None:
    inner = messages[1].additional_kwargs["k"]
    pairs = list(inner.items())
    inner.clear()
    inner.update(reversed(pairs))


def _extra(messages: list[Any]) -> None:
    messages[0].__pydantic_extra__["note"] = "x"


def _subclass(messages: list[Any]) -> None:
    messages[1] = _Note(content="hello", id="a1", additional_kwargs={"k": {"x": 1, "flag": True}})


_EDITS: dict[str, Callable[[list[Any]], None]] = {
    "top-level field": _content,
    "nested dict value": _nested,
    "True to 1": _true_to_one,
    "dict reordered": _reorder,
    "pydantic extra": _extra,
}


@pytest.mark.parametrize("edit", sorted(_EDITS))
def test_items_changed_after_get_tuple_are_not_handed_out_again(tmp_path: Path, edit: str) -> None:
    saver, _config, got = _start(tmp_path / "repo")
    kept = _fresh(tmp_path / "repo")
    second = _messages(saver, _thread())
    assert second[1] is not got[1] and _exact(second, got)  # results share no object
    _EDITS[edit](got)
    assert _exact(second, kept)  # an edit through one result leaves the others as committed
    again = _messages(saver, _thread())
    assert _exact(again, kept)
    assert not _exact(got, kept)  # the edit did change what was handed out
    assert _exact(again, _fresh(tmp_path / "repo"))


@pytest.mark.parametrize("edit", sorted(_EDITS))
def test_items_changed_after_put_come_back_as_committed(tmp_path: Path, edit: str) -> None:
    saver, config, got = _start(tmp_path / "repo")
    # The tip's own items, put again with one more: the view's objects are now put's too.
    saver.put(
        config, _checkpoint("3", [*got, AIMessage(content="ok", id="a2")], 3), {}, {"messages": 3}
    )
    committed = _fresh(tmp_path / "repo")
    _EDITS[edit](got)
    assert _exact(_messages(saver, _thread()), committed)


@pytest.mark.parametrize("edit", sorted([*_EDITS, "subclass"]))
def test_items_changed_between_get_tuple_and_put_are_stored(tmp_path: Path, edit: str) -> None:
    saver, config, got = _start(tmp_path / "repo")
    (_subclass if edit == "subclass" else _EDITS[edit])(got)
    expected = [*got, AIMessage(content="ok", id="a2")]
    saver.put(config, _checkpoint("3", expected, 3), {}, {"messages": 3})
    stored = _fresh(tmp_path / "repo")
    assert _exact(stored, expected)
    assert _exact(_messages(saver, _thread()), stored)


def test_a_put_through_another_handle_is_never_hidden_by_the_cache(tmp_path: Path) -> None:
    saver, config, _got = _start(tmp_path / "repo")
    other = StateVCSSaver(statevcs.Repo.open(tmp_path / "repo"))
    # Handle B rewrites the first message and appends: A's view is of B's parent.
    edited = [HumanMessage(content="rewritten", id="h1"), *_messages(other, _thread())[1:]]
    other.put(
        config, _checkpoint("3", [*edited, AIMessage(content="b", id="b")], 3), {}, {"messages": 3}
    )
    assert _exact(_messages(saver, _thread()), _fresh(tmp_path / "repo"))
    assert _messages(saver, _thread())[0].content == "rewritten"
    # And back: A appends to B's tip, B reads it.
    tip = saver.get_tuple(_thread())
    assert tip is not None
    mine = [*tip.checkpoint["channel_values"]["messages"], HumanMessage(content="a", id="x")]
    saver.put(tip.config, _checkpoint("4", mine, 4), {}, {"messages": 4})
    assert _exact(_messages(other, _thread()), mine)
    other.repo.close()


def test_a_put_from_another_process_is_never_hidden_by_the_cache(tmp_path: Path) -> None:
    saver, _config, _got = _start(tmp_path / "repo")
    script = (
        "import sys, statevcs\n"
        "from langchain_core.messages import HumanMessage\n"
        "from statevcs.integrations.langgraph import StateVCSSaver\n"
        "repo = statevcs.Repo.open(sys.argv[1])\n"
        "saver = StateVCSSaver(repo)\n"
        "cfg = {'configurable': {'thread_id': 't', 'checkpoint_ns': ''}}\n"
        "tip = saver.get_tuple(cfg)\n"
        "msgs = tip.checkpoint['channel_values']['messages']\n"
        "msgs[0].content = 'from another process'\n"
        "cp = {'v': 1, 'id': '3', 'ts': '2025-01-01T00:00:00+00:00', 'channel_values': "
        "{'messages': [*msgs, HumanMessage(content='p', id='p')]}, 'channel_versions': "
        "{'messages': 3}, 'versions_seen': {}, 'updated_channels': None}\n"
        "saver.put(tip.config, cp, {}, {'messages': 3})\n"
        "repo.close()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "repo")], check=True, env=env)
    mine = _messages(saver, _thread())
    assert mine[0].content == "from another process"
    assert len(mine) == 4
    assert _exact(mine, _fresh(tmp_path / "repo"))


def test_raw_bytes_replaced_by_a_bytearray_count_as_a_change() -> None:
    fingerprint = Fingerprinter(safe_serializer())
    message = AIMessage(content="x", id="1", additional_kwargs={"blob": b"ab"})
    before, _ = fingerprint.of_list([message])
    assert before is not None
    message.additional_kwargs["blob"] = bytearray(b"ab")
    after, extends = fingerprint.of_list([message], before)
    assert after is None or not extends
    message.additional_kwargs["blob"] = b"ab"
    same, extends = fingerprint.of_list([message, HumanMessage(content="y")], before)
    assert same is not None and extends


class _State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _reply(state: dict[str, Any]) -> dict[str, Any]:
    turn = len(state["messages"])
    return {"messages": [AIMessage(content=f"reply {turn} " + "y" * 100, id=f"a{turn}")]}


def test_items_decoded_and_walked_per_turn_do_not_grow_with_the_thread() -> None:
    saver = StateVCSSaver(statevcs.Repo.init("memory://"))
    builder: StateGraph[Any] = StateGraph(_State)
    builder.add_node("agent", _reply)  # type: ignore[type-var]
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    app = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "long"}}
    per_turn: list[tuple[int, int]] = []
    for turn in range(150):
        before = dict(saver._counts)
        message = HumanMessage(content=f"question {turn} " + "x" * 100, id=f"u{turn}")
        app.invoke({"messages": [message]}, config, durability="sync")
        per_turn.append(
            (
                saver._counts["decoded"] - before.get("decoded", 0),
                saver._counts["scanned"] - before.get("scanned", 0),
            )
        )
    # From the fourth turn on (the second read keeps the thread's view): the two new messages
    # are decoded, and only new items are walked in Python (the rest is one C pass per list),
    # at 6 messages as at 300.
    assert per_turn[3:] == [per_turn[3]] * (len(per_turn) - 3)
    decoded, scanned = per_turn[-1]
    assert decoded == 2
    assert scanned <= 4
    assert len(app.get_state(config).values["messages"]) == 300


def test_delete_thread_drops_the_threads_cached_items(tmp_path: Path) -> None:
    saver, _config, _got = _start(tmp_path / "repo")
    assert saver._views
    saver.delete_thread("t")
    assert not saver._views
    assert saver.get_tuple(_thread()) is None
