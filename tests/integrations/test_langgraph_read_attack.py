"""Attacks on the saver's list channel read (``store.list_items`` decoding packed leaves whole
through ``snapshot.read_messages``): every checkpoint reads back as ``InMemorySaver`` gives it,
with duplicate items, items stored out of line, storage formats 1 and 2, fresh and warm savers.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver

from .langgraph_support import checkpoint, checkpoint_uuid, config_of, exact, tuple_shape

BIG = "z" * 300_000  # stored out of line (chunked)

items = st.sampled_from(
    [
        "a",
        "a",
        "",
        "é✓",
        {"role": "user", "content": "hi"},
        {"role": "user", "content": "hi"},
        {"nested": [[], {}, [1, {"k": b"\x00\xff"}]]},
        [1, 2, [3]],
        2**63 + 5,
        b"raw",
        None,
        BIG,
        {"big": BIG},
    ]
)
steps = st.lists(
    st.tuples(
        st.lists(items, max_size=6),  # items appended to "messages"
        st.booleans(),  # start "messages" again from scratch (not an extension)
        st.lists(items, max_size=3),  # the whole "notes" list
        st.integers(0, 3),  # parent: 0 the latest, else an earlier checkpoint (a fork)
    ),
    min_size=1,
    max_size=6,
)


def _distinct_containers(values: list[Any]) -> bool:
    """No dict or list object appears twice in ``values`` (each occurrence decoded afresh)."""
    seen: set[int] = set()
    stack = list(values)
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list)):
            if id(item) in seen:
                return False
            seen.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)
    return True


def _check(saver: StateVCSSaver, memory: InMemorySaver, ids: list[str]) -> None:
    for checkpoint_id in ids:
        at = config_of("t", "", checkpoint_id)
        got, want = saver.get_tuple(at), memory.get_tuple(at)
        assert tuple_shape(got) == tuple_shape(want)
        assert got is not None and want is not None
        for name in ("messages", "notes"):
            value = got.checkpoint["channel_values"].get(name)
            assert exact(value, want.checkpoint["channel_values"].get(name)), name
            if value is not None:
                assert _distinct_containers(value), name
                # A caller changing what it got changes no later answer.
                value.append({"changed": True})
                for item in value:
                    if isinstance(item, dict):
                        item["changed"] = True
    for checkpoint_id in ids:
        at = config_of("t", "", checkpoint_id)
        assert tuple_shape(saver.get_tuple(at)) == tuple_shape(memory.get_tuple(at))
    listed = [tuple_shape(t) for t in saver.list(config_of("t"))]
    assert listed == [tuple_shape(t) for t in memory.list(config_of("t"))]


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(plan=steps, storage_format=st.sampled_from([1, 2]), sqlite=st.booleans())
def test_list_channels_read_back_as_in_memory_saver_gives_them(
    plan: list[tuple[list[Any], bool, list[Any], int]], storage_format: int, sqlite: bool
) -> None:
    with tempfile.TemporaryDirectory() as where:
        url = str(Path(where) / "repo") if sqlite else "memory://"
        repo = statevcs.Repo.init(url, storage_format=storage_format)
        ours, memory = StateVCSSaver(repo), InMemorySaver()
        ids: list[str] = []
        lists: dict[str, list[Any]] = {}
        for version, (added, restart, notes, back) in enumerate(plan, 1):
            parent = ids[-1 - min(back, len(ids) - 1)] if ids else None
            base = [] if restart or parent is None else lists[parent]
            values = {"messages": [*base, *added], "notes": notes, "n": version}
            checkpoint_id = checkpoint_uuid(version)
            stored = checkpoint(checkpoint_id, values, version)
            metadata = {"source": "loop", "step": version}
            for saver in (ours, memory):
                saver.put(
                    config_of("t", "", parent),
                    copy.deepcopy(stored),
                    metadata,
                    dict.fromkeys(values, version),
                )
            ids.append(checkpoint_id)
            lists[checkpoint_id] = values["messages"]
            # The warm saver reads every checkpoint after every put.
            _check(ours, memory, ids)
        _check(StateVCSSaver(repo), memory, ids)  # a fresh saver on a warm handle
        if sqlite:
            _check(StateVCSSaver(statevcs.Repo.open(url)), memory, ids)  # all cold


@pytest.mark.parametrize("storage_format", [1, 2])
def test_a_thread_of_identical_items_reads_back_item_for_item(storage_format: int) -> None:
    repo = statevcs.Repo.init("memory://", storage_format=storage_format)
    ours, memory = StateVCSSaver(repo), InMemorySaver()
    ids: list[str] = []
    parent: str | None = None
    for version in range(1, 5):
        item = {"same": [1, 2]} if version % 2 else BIG
        values = {"messages": [item] * (50 * version), "n": version}
        checkpoint_id = checkpoint_uuid(version)
        for saver in (ours, memory):
            saver.put(
                config_of("t", "", parent),
                checkpoint(checkpoint_id, copy.deepcopy(values), version),
                {"step": version},
                dict.fromkeys(values, version),
            )
        ids.append(checkpoint_id)
        parent = checkpoint_id
    _check(ours, memory, ids)
    _check(StateVCSSaver(repo), memory, ids)
