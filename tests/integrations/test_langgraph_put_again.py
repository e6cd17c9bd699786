"""Checkpoints put again, forks and pending writes read back as ``InMemorySaver`` reads them.

Putting an existing checkpoint id again rewrites the thread (the old commit goes, its
children move off it); its pending writes, some folded into its lead child, must not go with
them, and a later child must not take an old lead's place.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver

from .langgraph_support import checkpoint, checkpoint_uuid, thread

_MEMORY_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["child", "again", "writes", "other_child"]),
        st.integers(min_value=0, max_value=40),
    ),
    min_size=3,
    max_size=30,
)


@settings(max_examples=100, deadline=None)
@given(steps=_MEMORY_STEPS, backwards=st.integers(min_value=0, max_value=3))
# Found by this test: the writes of a checkpoint put again while it had children were lost
# (its lead child, which carried them, was moved off it); ...
@example(steps=[("writes", 0), ("child", 0), ("child", 1), ("again", 0), ("child", 0)], backwards=0)
# ... a same-slot write came back newest-first instead of first-kept; ...
@example(
    steps=[
        ("child", 0),
        ("child", 0),
        ("again", 0),
        ("writes", 39),
        ("child", 0),
        ("again", 0),
        ("writes", 0),
        ("child", 0),
        ("again", 0),
    ],
    backwards=0,
)
# ... an old lead moved off its parent and put again claimed to be its lead a second time,
# hiding the real lead's writes; ...
@example(
    steps=[
        ("child", 0),
        ("child", 0),
        ("child", 0),
        ("child", 0),
        ("child", 0),
        ("again", 0),
        ("writes", 0),
        ("child", 0),
        ("child", 6),
        ("again", 1),
        ("child", 0),
    ],
    backwards=0,
)
# ... and putting it again next to its leaf parent moved one ref twice in one batch (RefError).
@example(
    steps=[("writes", 0), ("child", 0), ("again", 0), ("writes", 0), ("again", 1)], backwards=0
)
def test_forks_and_checkpoints_put_again_read_back_as_in_memory_saver(
    steps: list[tuple[str, int]], backwards: int
) -> None:
    """The same puts, forks, puts of an existing id and pending writes, on ``InMemorySaver``
    and on two handles of one repository: every checkpoint reads back the same."""
    repo = statevcs.Repo.init("memory://")
    ours, other, memory = StateVCSSaver(repo), StateVCSSaver(repo), InMemorySaver()
    ids: list[str] = []
    parents: dict[str, str | None] = {}
    counter = 100

    def config(cid: str | None) -> Any:
        if cid is None:
            return thread()
        return {"configurable": {**thread()["configurable"], "checkpoint_id": cid}}

    def put(savers: list[Any], parent: str | None, cid: str, n: int) -> None:
        for saver in savers:
            saver.put(
                config(parent),
                checkpoint(cid, {"messages": [f"m{i}" for i in range(n % 7)], "n": n}, n),
                {"source": "loop", "step": n},
                {"messages": n, "n": n},
            )
        parents[cid] = parent
        if cid not in ids:
            ids.append(cid)

    put([ours, memory], None, checkpoint_uuid(counter), 1)
    for op, arg in steps:
        target = ids[arg % len(ids)]
        if op in ("child", "other_child"):
            counter += 1
            n = counter - (backwards * 50 if arg % 5 == 0 else 0)
            put([ours if op == "child" else other, memory], target, checkpoint_uuid(n), counter)
        elif op == "again":
            put([ours, memory], parents[target], target, arg + 1)
        else:
            # Regular writes keep the first value per (task, index); special ones the last.
            channel = ("messages", "messages", "__error__", "__interrupt__")[arg % 4]
            writes = [(channel, f"w{arg}")] if arg % 3 else [(channel, f"w{arg}"), ("n", arg)]
            for saver in (ours, memory):
                saver.put_writes(config(target), writes, f"task-{arg % 3}")
    for saver in (ours, StateVCSSaver(repo)):
        listed = [t.config["configurable"]["checkpoint_id"] for t in saver.list(thread())]
        assert listed == [t.config["configurable"]["checkpoint_id"] for t in memory.list(thread())]
        # With ids that go back, the greatest id is the latest even on an inner checkpoint.
        latest, want_latest = saver.get_tuple(thread()), memory.get_tuple(thread())
        assert latest is not None and want_latest is not None
        assert latest.config == want_latest.config
        assert latest.pending_writes == want_latest.pending_writes
    for cid in ids:
        want = memory.get_tuple(config(cid))
        for saver in (ours, StateVCSSaver(repo)):
            got = saver.get_tuple(config(cid))
            assert got is not None and want is not None
            assert got.checkpoint["channel_values"] == want.checkpoint["channel_values"]
            assert got.parent_config == want.parent_config
            assert got.pending_writes == want.pending_writes, cid
            assert got.metadata == want.metadata
