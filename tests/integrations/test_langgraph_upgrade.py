"""The LangGraph saver on a format-1 repository, across ``statevcs upgrade``: every checkpoint id
the application kept restores the same state afterwards, even once gc removed the old commits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver

from .langgraph_support import chat_graph


def _history(graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    """checkpoint id -> (messages' contents, next nodes) for every checkpoint of the thread."""
    return {
        snap.config["configurable"]["checkpoint_id"]: (
            [m.content for m in snap.values.get("messages", [])],
            snap.next,
        )
        for snap in graph.get_state_history(config)
    }


def test_checkpoint_ids_kept_before_an_upgrade_restore_the_same_state(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    config = {"configurable": {"thread_id": "t1"}}
    with statevcs.Repo.init(folder, storage_format=1) as repo:
        graph = chat_graph(StateVCSSaver(repo))
        for text in ("hello", "what is the weather in Paris?", "thanks", "and in Oslo?"):
            graph.invoke({"messages": [HumanMessage(content=text)]}, config)
        before = _history(graph, config)
    assert len(before) > 10
    with statevcs.Repo.open(folder) as repo:
        report = repo.upgrade()
        assert report.commits_rewritten > 0
        repo.gc("0", expire_reflog="0")  # the format-1 commits are gone now
        graph = chat_graph(StateVCSSaver(repo))
        assert _history(graph, config) == before
        for checkpoint_id, (contents, following) in before.items():
            at = {"configurable": {"thread_id": "t1", "checkpoint_id": checkpoint_id}}
            state = graph.get_state(at)
            assert [m.content for m in state.values.get("messages", [])] == contents
            assert state.next == following
        graph.invoke({"messages": [HumanMessage(content="one more")]}, config)
        assert repo.storage_format == 2
        assert repo.fsck().ok
