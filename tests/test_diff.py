"""Structural diffs: messages by position, state keys, and a cost that follows the difference."""

from __future__ import annotations

from typing import Any

import pytest
from support import message

from statevcs import Repo
from statevcs.hashing import ObjectId, hash_bytes
from statevcs.objects import (
    CommitObject,
    ListNode,
    MapNode,
    SnapshotObject,
    encode_doc,
    encode_with_id,
)


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


# Store-independent (a cost shape / an iterative walk); on S3 it costs 10-20 s of uploads.
@pytest.mark.parametrize("repo", ["memory", "sqlite"], indirect=True)
def test_diff_cost_follows_the_difference(repo: Repo) -> None:
    state: dict[str, Any] = {"messages": [message(i, 10) for i in range(10_000)]}
    repo.commit(state)
    state["messages"][5_000] = message(-1)
    repo.commit(state)
    diff = repo.diff("main~1", "main")
    assert [c.index for c in diff.messages.changes] == [5_000]
    assert diff.nodes_visited < 20  # 10,000 messages span ~320 leaves


def doc_ids(messages: list[Any], out: dict[ObjectId, bytes]) -> list[ObjectId]:
    """Encode ``messages`` as documents into ``out``; return their ids."""
    ids = []
    for item in messages:
        data = encode_doc(item)
        ids.append(hash_bytes(data))
        out[ids[-1]] = data
    return ids


def commit_crafted_tree(
    repo: Repo, root: ObjectId, out: dict[ObjectId, bytes], branch: str
) -> None:
    """Store ``out`` and commit a snapshot whose messages are the tree ``root`` on ``branch``."""
    empty = MapNode((), ())
    snapshot, data = encode_with_id(SnapshotObject("dict", root, (), empty, empty, "json"))
    out[snapshot] = data
    parent = bytes.fromhex(repo.resolve("main"))
    commit, data = encode_with_id(CommitObject(snapshot, (parent,), "crafted", 0, "tree", {}))
    out[commit] = data
    repo.store.put_many(out)
    repo.store.set_ref(f"refs/heads/{branch}", commit)


def commit_tall_tree(repo: Repo, messages: list[Any], levels: int, branch: str) -> None:
    """Commit ``messages`` on ``branch`` as one leaf under ``levels - 1`` single-entry nodes.

    Valid objects with honest hashes, but a shape no writer produces; readers must cope.
    """
    out: dict[ObjectId, bytes] = {}
    ids = doc_ids(messages, out)
    root, data = encode_with_id(ListNode(0, tuple(ids)))
    out[root] = data
    for level in range(1, levels):
        root, data = encode_with_id(ListNode(level, (root,), (len(ids),)))
        out[root] = data
    commit_crafted_tree(repo, root, out, branch)


# Store-independent (a cost shape / an iterative walk); on S3 it costs 10-20 s of uploads.
@pytest.mark.parametrize("repo", ["memory", "sqlite"], indirect=True)
def test_diff_of_a_3000_level_message_tree_is_answered(repo: Repo) -> None:
    messages = [message(i) for i in range(40)]
    repo.commit({"messages": messages})
    changed = [*messages[:39], message(99)]
    commit_tall_tree(repo, changed, 3000, "tall")
    diff = repo.diff("main", "tall")
    assert [(c.index, c.kind, c.new) for c in diff.messages.changes] == [
        (39, "changed", message(99))
    ]
    assert repo.show("tall").messages == changed


def test_diff_of_the_deepest_message_renders(repo: Repo) -> None:
    deep: Any = "leaf"
    for _ in range(507):  # the deepest a message may nest (statevcs.snapshot.MAX_DOCUMENT_DEPTH)
        deep = [deep]
    repo.commit({"messages": [message(0)]})
    repo.commit({"messages": [message(0), {"role": "user", "content": [{"text": deep}]}]})
    text = str(repo.diff("main~1", "main"))
    assert "+ [1] user: " in text
