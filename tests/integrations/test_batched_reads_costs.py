"""The cost shape of a fresh read of a real framework's snapshot: the store reads a level of
objects a query, however many of the snapshot's messages are large (stored out of line,
chunked). Counted deterministically (SQLite statements), not timed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

import statevcs
from statevcs.hashing import from_hex
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.strands.testing import ScriptedModel
from statevcs.objects import ListNode

from .conftest import AgentFactory
from .langgraph_support import chat_graph

BIG = 200_000  # a message this long is stored out of line, in chunks
TURNS = 24
BIG_TURNS = (2, 5, 9, 14, 20, 22)
EXTRA = 4
"""Queries a conversation holding large messages may add, however many: the zstd dictionary
(trained on their bytes), the chunks of those in the open tail (read with the tail), those in
the tree and their chunks (two). Before they were read in batches it was a query a message
or more: 5 or 6 more for Strands, 13 more for LangGraph."""


def _prompt(turn: int, big: bool) -> str:
    return f"question {turn} " + ("x" * BIG if big and turn in BIG_TURNS else "y" * 40)


def _object_reads(folder: Path, commit_id: str, read: Callable[[statevcs.Repo], Any]) -> int:
    """The object queries ``read`` makes through a fresh handle on the repository, less the
    height of commit ``commit_id``'s message tree (where a prolly tree cuts depends on the
    messages' hashes, which hold times and ids that differ from run to run)."""
    statements: list[str] = []
    with statevcs.Repo.open(folder) as fresh:
        fresh.store._db.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        read(fresh)
        fresh.store._db.set_trace_callback(None)  # type: ignore[attr-defined]
        height = _tree_height(fresh, commit_id)
    return sum(1 for s in statements if s.startswith("SELECT id, data FROM objects")) - height


def _tree_height(repo: statevcs.Repo, commit_id: str) -> int:
    objects = repo.objects
    snapshot = objects.load_snapshot(objects.load_commit(from_hex(commit_id)).snapshot)
    root = objects.load(snapshot.messages)
    assert isinstance(root, ListNode)
    return root.level + 1


def _strands_reads(make_agent: AgentFactory, folder: Path, big: bool) -> int:
    repo = statevcs.Repo.init(folder)
    agent = make_agent(model=ScriptedModel(default="noted"))
    for turn in range(TURNS):
        agent(_prompt(turn, big))
        repo.commit(agent, f"turn {turn}")
    commit_id = repo.resolve("main")
    want = [m["content"] for m in agent.messages]
    repo.commit({"messages": []}, branch="other", message="elsewhere")
    repo.close()

    def read(fresh: statevcs.Repo) -> None:
        restored = make_agent()
        fresh.checkout(restored, commit_id)
        assert [m["content"] for m in restored.messages] == want

    return _object_reads(folder, commit_id, read)


def test_a_strands_checkout_reads_large_messages_in_two_queries_not_two_each(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    small = _strands_reads(make_agent, tmp_path / "small", big=False)
    large = _strands_reads(make_agent, tmp_path / "large", big=True)
    assert large - small <= EXTRA, (small, large)


def _langgraph_reads(folder: Path, big: bool) -> int:
    repo = statevcs.Repo.init(folder)
    app = chat_graph(StateVCSSaver(repo))
    config = {"configurable": {"thread_id": "t"}}
    for turn in range(TURNS):
        text = _prompt(turn, big)
        app.invoke({"messages": [HumanMessage(content=text, id=f"u{turn}")]}, config)
    want = [m.content for m in app.get_state(config).values["messages"]]
    commit_id = repo.resolve("threads/t")  # the thread's latest checkpoint
    repo.close()

    def read(fresh: statevcs.Repo) -> None:
        state = chat_graph(StateVCSSaver(fresh)).get_state(config)
        assert [m.content for m in state.values["messages"]] == want

    return _object_reads(folder, commit_id, read)


def test_a_langgraph_state_read_does_not_grow_with_its_large_messages(tmp_path: Path) -> None:
    small = _langgraph_reads(tmp_path / "small", big=False)
    large = _langgraph_reads(tmp_path / "large", big=True)
    assert large - small <= EXTRA, (small, large)
