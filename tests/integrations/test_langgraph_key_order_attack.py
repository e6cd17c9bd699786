"""The LangGraph saver and the committed key order, against LangGraph's own InMemorySaver on
the same calls. Values inside a channel keep their order; the order of the channels in
``channel_values`` does not (found by the key-order attack, not fixed: see the xfail)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver

from .langgraph_support import checkpoint, checkpoint_uuid, exact, thread

VALUES: dict[str, Any] = {
    "zeta": {"b": 1, "a": 2},
    "messages": [HumanMessage("hi", id="1")],
    "alpha": 1,
    "notes": "x" * 300,
    "Mid": [{"y": 1, "x": 2}],
}


def _read_back(saver: BaseCheckpointSaver[Any]) -> dict[str, Any]:
    config = saver.put(
        thread(), checkpoint(checkpoint_uuid(1), VALUES, 1), {}, dict.fromkeys(VALUES, 1)
    )
    found = saver.get_tuple(config)
    assert found is not None
    values: dict[str, Any] = found.checkpoint["channel_values"]
    return values


def test_values_inside_channels_keep_their_order(tmp_path: Any) -> None:
    ours = _read_back(StateVCSSaver(statevcs.Repo.init(tmp_path / "r")))
    theirs = _read_back(InMemorySaver())
    assert ours == theirs
    for name in theirs:
        assert exact(ours[name], theirs[name]), name


@pytest.mark.xfail(
    strict=True,
    reason="channel_values come back as plain state (sorted), then serde values, then lists; "
    "InMemorySaver keeps the order they were put in",
)
def test_channels_come_back_in_the_order_they_were_put(tmp_path: Any) -> None:
    ours = _read_back(StateVCSSaver(statevcs.Repo.init(tmp_path / "r")))
    assert list(ours) == list(_read_back(InMemorySaver()))
