"""A step writes only its new items: objects and bytes per turn do not grow with the thread."""

from __future__ import annotations

from pathlib import Path
from statistics import mean
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph import saver as lg_saver
from statevcs.integrations.langgraph import store as lg_store
from statevcs.objects import CommitObject

from .langgraph_support import chat_graph, checkpoint, checkpoint_uuid, config_of


def _stored(repo: statevcs.Repo) -> tuple[int, int]:
    """Objects and bytes the saver's checkpoints hold (the commit graph is counted apart)."""
    graph = _graph_objects(repo)
    sizes = [size for object_id, size in repo.store.iter_objects() if object_id not in graph]
    return len(sizes), sum(sizes)


def _graph_objects(repo: statevcs.Repo) -> set[bytes]:
    found = set()
    for object_id, _ in repo.store.iter_objects():
        data = repo.store.get_many([object_id])[object_id]
        if b"\xa5graph" in data[:8]:
            found.add(object_id)
    return found


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
    # The commit graph (about 80 bytes per commit it covers, rewritten O(log n) times until
    # gc drops the old segments) stays a small fraction of what the checkpoints hold.
    graph = _graph_objects(repo)
    graph_bytes = sum(size for i, size in repo.store.iter_objects() if i in graph)
    assert 0 < graph_bytes <= 0.15 * _stored(repo)[1]
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


def _line(saver: StateVCSSaver, thread_id: str, count: int) -> list[str]:
    """Put ``count`` small checkpoints in a line on ``thread_id``; return their ids."""
    config: Any = config_of(thread_id)
    for step in range(count):
        values = {"step": step}
        config = saver.put(
            config, checkpoint(checkpoint_uuid(step), values, step + 1), {"step": step}, values
        )
    return [checkpoint_uuid(step) for step in range(count)]


def _reads(repo: statevcs.Repo, saver: StateVCSSaver, config: Any, limit: int) -> int:
    """How many objects ``saver.list`` reads from the store (batches and read-ahead
    included)."""
    read = 0
    store = repo.store
    get_many, ancestry = store.get_many, store.ancestry

    def counted_get_many(ids: Any) -> Any:
        nonlocal read
        found = get_many(ids)
        read += len(found)
        return found

    def counted_ancestry(starts: Any, limit: int) -> Any:
        nonlocal read
        found = ancestry(starts, limit)
        read += len(found)
        return found

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store, "get_many", counted_get_many)
        patch.setattr(store, "ancestry", counted_ancestry)
        assert len(list(saver.list(config, limit=limit))) == limit
    return read


def test_listing_the_newest_checkpoints_reads_as_much_at_any_thread_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``list(limit=k)`` reads about k commits, not the thread; a page further down
    (``before``, as ``get_state_history`` pages) reads as much once the saver has looked the
    namespace up (its index)."""
    monkeypatch.setattr(lg_saver, "_SKIPS", 4)  # both threads deep enough to index
    with statevcs.Repo.init(tmp_path / "repo") as repo:
        saver = StateVCSSaver(repo)
        ids = {n: _line(saver, f"t{n}", n) for n in (40, 640)}
    newest: dict[int, list[int]] = {}
    for n in ids:
        with statevcs.Repo.open(tmp_path / "repo") as fresh:
            saver = StateVCSSaver(fresh)
            newest[n] = [_reads(fresh, saver, config_of(f"t{n}"), k) for k in (1, 3)]
    assert newest[40] == newest[640]
    commits: dict[int, list[int]] = {}
    real = lg_store.stored
    for n, line in ids.items():
        with statevcs.Repo.open(tmp_path / "repo") as repo:
            saver = StateVCSSaver(repo)
            list(saver.list(config_of(f"t{n}"), before=config_of(f"t{n}", "", line[n // 2])))
            loaded = 0

            def counted(*args: Any) -> Any:
                nonlocal loaded
                loaded += 1
                return real(*args)

            monkeypatch.setattr(lg_store, "stored", counted)
            for position in (n // 4, n // 2 + 3):
                loaded = 0
                page = config_of(f"t{n}", "", line[position])
                got = [
                    t.checkpoint["id"] for t in saver.list(config_of(f"t{n}"), before=page, limit=5)
                ]
                assert got == [line[position - i] for i in range(1, 6)]
                commits.setdefault(n, []).append(loaded)
            monkeypatch.setattr(lg_store, "stored", real)
    assert commits[40] == commits[640]
    assert max(commits[640]) <= 10  # its five checkpoints and their children
