"""A step writes only its new items: objects and bytes per turn do not grow with the thread."""

from __future__ import annotations

from statistics import mean

from langchain_core.messages import HumanMessage

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.objects import CommitObject

from .langgraph_support import chat_graph


def _stored(repo: statevcs.Repo) -> tuple[int, int]:
    sizes = [size for _, size in repo.store.iter_objects()]
    return len(sizes), sum(sizes)


def test_objects_written_per_turn_stay_flat_as_the_thread_grows() -> None:
    repo = statevcs.Repo.init("memory://")
    app = chat_graph(StateVCSSaver(repo))
    config = {"configurable": {"thread_id": "long"}}
    per_turn: list[tuple[int, int]] = []
    before = _stored(repo)
    for turn in range(200):
        text = f"question {turn} " + "x" * 200
        app.invoke({"messages": [HumanMessage(content=text, id=f"u{turn}")]}, config)
        after = _stored(repo)
        per_turn.append((after[0] - before[0], after[1] - before[1]))
        before = after
    early, late = per_turn[10:60], per_turn[150:200]
    # Same cost shape at 20 and at 400 messages: a few list nodes more when a leaf closes.
    assert mean(n for n, _ in late) <= mean(n for n, _ in early) + 2
    assert max(n for n, _ in late) <= max(n for n, _ in early) + 8
    # Measured: about 16 objects and 4.7 KB per turn (five checkpoints, four messages, pending
    # writes); it was 20 objects and 7 KB when put_writes rewrote the checkpoint's commit.
    assert mean(n for n, _ in late) <= 18
    assert mean(b for _, b in late) <= 5_500
    # put_writes never rewrites a checkpoint: one commit object per checkpoint, no copies.
    checkpoint_commits = 0
    for object_id, _size in repo.store.iter_objects():
        found = repo.objects.load(object_id)
        if isinstance(found, CommitObject) and "checkpoint_id" in found.metadata.get(
            "langgraph", {}
        ):
            checkpoint_commits += 1
    assert checkpoint_commits == len(list(app.get_state_history(config)))
    # O(log n) tree nodes per closed leaf; a whole-list copy would be 5x here (105 -> 525 items).
    assert mean(b for _, b in late) <= 1.5 * mean(b for _, b in early)
    messages = app.get_state(config).values["messages"]
    assert len(messages) == 400
    # A turn costs a small fraction of one copy of the conversation (what SqliteSaver writes).
    conversation = sum(len(str(m.content)) for m in messages)
    assert conversation > 80_000
    assert mean(b for _, b in late) < conversation / 8


def test_steps_write_no_reflog_entries_but_a_replaced_checkpoint_is_logged() -> None:
    """A step extends its thread (the commits record it): no reflog rows per checkpoint.

    A checkpoint put again replaces its commit, which no head reaches any more: that move is
    logged, so ``gc`` keeps the old commit for the reflog's grace period.
    """
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)
    app = chat_graph(saver)
    config = {"configurable": {"thread_id": "quiet"}}
    for turn in range(5):
        app.invoke({"messages": [HumanMessage(content=f"q{turn}", id=f"u{turn}")]}, config)
    branch = "refs/heads/threads/quiet"
    assert repo.reflog(branch) == []
    assert all(not repo.reflog(name) for name in repo.refs.as_dict("refs/"))
    latest = saver.get_tuple(config)
    assert latest is not None
    before = repo.refs.get(branch)
    saver.put(
        latest.parent_config or config,
        {**latest.checkpoint, "channel_values": {"messages": []}},
        latest.metadata,
        {"messages": latest.checkpoint["channel_versions"]["messages"]},
    )
    log = repo.reflog(branch)
    assert [entry.old for entry in log] == [before.hex()]
    assert repo.refs.get(branch) != before
