"""Structural diffs: messages by position, state keys, and a cost that follows the difference."""

from __future__ import annotations

from typing import Any

from support import message

from statevcs import Repo


def test_diff_reports_messages_and_state(repo: Repo) -> None:
    state: dict[str, Any] = {"messages": [message(i) for i in range(10)], "a": 1, "b": 2}
    repo.commit(state)
    state["messages"][3] = message(99)
    state["messages"].append(message(10))
    state["a"] = 5
    del state["b"]
    state["c"] = [1]
    repo.commit(state)
    diff = repo.diff("main~1", "main")
    assert diff.messages.common_prefix == 3
    assert [(c.index, c.kind) for c in diff.messages.changes] == [(3, "changed"), (10, "added")]
    assert diff.messages.changes[0].new == message(99)
    assert [(c.key, c.kind, c.old, c.new) for c in diff.state] == [
        ("a", "changed", 1, 5),
        ("b", "removed", 2, None),
        ("c", "added", None, [1]),
    ]
    text = str(diff)
    assert "~ a: 1 -> 5" in text and "+ [10]" in text
    assert repo.diff("main", "main").is_empty


def test_diff_cost_follows_the_difference(repo: Repo) -> None:
    state: dict[str, Any] = {"messages": [message(i, 10) for i in range(10_000)]}
    repo.commit(state)
    state["messages"][5_000] = message(-1)
    repo.commit(state)
    diff = repo.diff("main~1", "main")
    assert [c.index for c in diff.messages.changes] == [5_000]
    assert diff.nodes_visited < 20  # 10,000 messages span ~320 leaves
