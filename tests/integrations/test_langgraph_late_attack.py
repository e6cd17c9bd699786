"""Attacks on the saver's late changes: fresh copies of a private view, surrogate messages.

Every read is compared with a fresh saver on the same repository (no caches), type for type.
"""

from __future__ import annotations

import datetime
import pickle
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.messages import AIMessage, HumanMessage

import statevcs
from statevcs.cli import cli
from statevcs.integrations.langgraph import StateVCSSaver

from .langgraph_support import checkpoint as _checkpoint
from .langgraph_support import exact as _exact

_THREAD: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _meta(tags: list[str]) -> Any:
    return {"tags": tags}


def _fresh(path: Path) -> StateVCSSaver:
    return StateVCSSaver(statevcs.Repo.open(path))


def test_editing_returned_metadata_is_never_stored_by_a_later_rewrite(tmp_path: Path) -> None:
    # metadata_of copied only the top level: its nested values were the cached commit's own.
    saver = StateVCSSaver(statevcs.Repo.init(tmp_path))
    first = _checkpoint("1", {"n": 1}, 1)
    one = saver.put(_THREAD, first, _meta(["a"]), {"n": 1})
    saver.put(one, _checkpoint("2", {"n": 2}, 2), _meta(["b"]), {"n": 2})
    held = saver.get_tuple(_THREAD)
    assert held is not None
    tags: Any = dict(held.metadata)["tags"]
    tags.append("edited by the caller")  # in place, as a node might
    again = saver.get_tuple(_THREAD)
    assert again is not None and dict(again.metadata)["tags"] == ["b"]
    # Putting checkpoint "1" again re-encodes its child "2" (a rewrite of the thread).
    saver.put(_THREAD, first, _meta(["a", "again"]), {"n": 1})
    saver.prune(["t"], strategy="keep_latest")
    got = _fresh(tmp_path).get_tuple(_THREAD)
    assert got is not None and dict(got.metadata)["tags"] == ["b"]


_CUT = "cut \ud83d here"


@pytest.mark.parametrize(
    "value",
    [
        {"text": _CUT},
        [[_CUT]],
        HumanMessage(_CUT, id="m", additional_kwargs={"at": datetime.date(2025, 1, 1)}),
    ],
    ids=["dict", "list-of-lists", "message-with-a-date"],
)
def test_lone_surrogates_are_kept_or_refused_never_replaced(tmp_path: Path, value: Any) -> None:
    saver = StateVCSSaver(statevcs.Repo.init(tmp_path))
    values = {"messages": [value], "other": value}
    try:
        config = saver.put(_THREAD, _checkpoint("1", values, 1), {}, {"messages": 1, "other": 1})
        saver.put_writes(config, [("other", value)], "task")
    except statevcs.StateVCSError:
        return  # refused: nothing stored, the caller told
    got = _fresh(tmp_path).get_tuple(_THREAD)
    assert got is not None
    channels = got.checkpoint["channel_values"]
    assert channels.keys() == values.keys()  # (LangGraph reads channels by name, in no order)
    assert all(_exact(channels[name], values[name]) for name in values)
    assert got.pending_writes is not None and _exact(got.pending_writes[0][2], value)


def test_show_prints_a_surrogate_message_escaped(tmp_path: Path) -> None:
    saver = StateVCSSaver(statevcs.Repo.init(tmp_path))
    messages = [
        HumanMessage(_CUT, id="u"),
        AIMessage("", id="a", tool_calls=[{"name": "look\udc00up", "args": {}, "id": "c"}]),
    ]
    saver.put(_THREAD, _checkpoint("1", {"messages": messages}, 1), {}, {"messages": 1})
    result = CliRunner().invoke(cli, ["--repo", str(tmp_path), "show", "threads/t"])
    assert result.exit_code == 0, result.output
    assert "(empty)" not in result.output
    assert "cut" in result.output and "look" in result.output


@pytest.mark.parametrize(
    "error",
    [
        statevcs.errors.RefConflict("refs/heads/threads/t", None, None, "retry the step"),
        statevcs.errors.RefConflict("refs/heads/main", "ab" * 32, None),
        statevcs.errors.StaleCache(3, 4),
        statevcs.errors.CorruptObject("ab" * 32, "a bad field"),
        statevcs.errors.MissingObject("ab" * 32, "a commit's tree"),
        statevcs.errors.InvalidRefName("a..b", "it holds '..'"),
        statevcs.errors.MergeConflict("diverged", ["k"], messages=True),
        statevcs.errors.SerializationError("cannot store it", "state['x']"),
        statevcs.RepositoryNotFound("no repository here"),
        statevcs.errors.AmbiguousRevision("ab", ["ab12", "ab34"]),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_survive_pickling(error: statevcs.StateVCSError) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert str(back) == str(error)
    assert back.__dict__ == error.__dict__


def test_a_listed_checkpoint_holds_equal_items_as_separate_objects(tmp_path: Path) -> None:
    saver = StateVCSSaver(statevcs.Repo.init(tmp_path))
    items: list[Any] = [{"tool": "search", "args": ["q"]}, {"tool": "search", "args": ["q"]}]
    saver.put(_THREAD, _checkpoint("1", {"messages": items}, 1), {}, {"messages": 1})
    (listed,) = saver.list(_THREAD)
    first, second = listed.checkpoint["channel_values"]["messages"]
    first["args"].append("edited")  # in place, as a node might before putting it back
    assert second == {"tool": "search", "args": ["q"]}
