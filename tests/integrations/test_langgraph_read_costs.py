"""What a fresh saver's ``get_tuple`` asks the store for: a fixed number of reads, one per
dependent step (finding the commit, then one batch per level of the checkpoint's objects),
no object twice, and not the writes of its parent the checkpoint folds."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

import statevcs
from statevcs import idindex
from statevcs.hashing import ObjectId
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph import store as lg_store
from statevcs.objects import ListNode
from statevcs.structures.maps import read_map

from .langgraph_support import (
    Differential,
    chat_graph,
    checkpoint_uuid,
    config_of,
    exact,
    tuple_shape,
)

ERROR = "__error__"
"""LangGraph's error channel: a special write (the newest of a task replaces the others)."""
TURNS = 80
"""Enough turns that an early checkpoint is in an older index segment than the head's own."""


@contextmanager
def counted(repo: statevcs.Repo) -> Iterator[dict[str, list[Any]]]:
    """Record every store read of ``repo`` (object batches, ref reads) while inside."""
    calls: dict[str, list[Any]] = {"get_many": [], "get_ref": [], "get_refs": [], "list_refs": []}
    store: Any = repo.store
    real_get_many, real_get_ref, real_list_refs = store.get_many, store.get_ref, store.list_refs
    real_get_refs = store.get_refs

    def get_many(ids: Any) -> Any:
        wanted = list(ids)
        calls["get_many"].append(wanted)
        return real_get_many(wanted)

    def get_ref(name: str) -> Any:
        calls["get_ref"].append(name)
        return real_get_ref(name)

    def get_refs(names: Any) -> Any:
        wanted = list(names)
        calls["get_refs"].append(wanted)
        return real_get_refs(wanted)

    def list_refs(prefix: str = "refs/") -> Any:
        calls["list_refs"].append(prefix)
        return real_list_refs(prefix)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store, "get_many", get_many)
        patch.setattr(store, "get_ref", get_ref)
        patch.setattr(store, "get_refs", get_refs)
        patch.setattr(store, "list_refs", list_refs)
        yield calls


@pytest.fixture(scope="module")
def thread(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A repository holding one chat thread of TURNS turns (a real graph); each turn's
    checkpoint id."""
    path = tmp_path_factory.mktemp("costs") / "repo"
    ids: list[str] = []
    with statevcs.Repo.init(path) as repo:
        app = chat_graph(StateVCSSaver(repo))
        config = {"configurable": {"thread_id": "t"}}
        for turn in range(TURNS):
            app.invoke({"messages": [HumanMessage(content=f"hello {turn}", id=f"u{turn}")]}, config)
            ids.append(app.get_state(config).config["configurable"]["checkpoint_id"])
    return path, ids


def _tree_levels(repo: statevcs.Repo, found: lg_store.Stored) -> int:
    """Levels of the checkpoint's message tree below its root."""
    root = repo.objects.load(found.snapshot(repo.objects).messages)
    assert isinstance(root, ListNode)
    return root.level


def test_a_fresh_get_tuple_by_id_reads_once_per_dependent_step(
    thread: tuple[Path, list[str]],
) -> None:
    path, _ids = thread
    with statevcs.Repo.open(path) as repo:
        saver = StateVCSSaver(repo)
        # An early step that folds its parent's writes (a stored object) and whose child
        # folds its own.
        key = saver._key(config_of("t"))
        line = list(reversed(list(lg_store.all_commits(repo, lg_store.read_heads(repo, key)))))

        def folds(found: lg_store.Stored) -> bool:
            entry = read_map(repo.objects, found.snapshot(repo.objects).extras).get(lg_store.FOLDED)
            return found.info.get(lg_store.FOLDED) == 1 and isinstance(entry, bytes)

        target = next(
            c.checkpoint_id
            for c, child in pairwise(line[30:])
            if folds(c) and child.info.get(lg_store.FOLDED) == 1
        )
        heads = lg_store.read_heads(repo, saver._key(config_of("t")))
        assert heads.tip is not None and not heads.leaves
        head = lg_store.load(repo.objects, heads.tip)
        fields = idindex.fields_of(head.commit.metadata, lg_store.INFO)
        assert fields is not None and fields[0] is not None
        top = idindex.read_segment(repo.objects, fields[0])
        assert top is not None and target not in top.keys  # an older segment holds it
        found, folders = lg_store.find_by_index(repo, heads, target) or (None, [])
        assert found is not None and folders  # its child folds its pending writes
        levels = _tree_levels(repo, found)
        own = read_map(repo.objects, found.snapshot(repo.objects).extras)
        folded = own.get(lg_store.FOLDED)
        assert isinstance(folded, bytes)  # a stored object: reading it would show below
        expected = tuple_shape(saver.get_tuple(config_of("t", "", target)))
    with statevcs.Repo.open(path) as fresh:
        saver = StateVCSSaver(fresh)
        with counted(fresh) as calls:
            got = saver.get_tuple(config_of("t", "", target))
    assert exact(tuple_shape(got), expected)
    assert saver._counts["lineage index hits"] == 1
    # The branch and the checkpoint's side ref of pending writes (named by the config) in one
    # query; the namespace's other leaves.
    key = saver._key(config_of("t"))
    assert calls["get_refs"] == [[key.branch, key.writes_ref(target)]]
    assert not calls["get_ref"] and len(calls["list_refs"]) == 1
    # Find: the head, its newest segment, the older one holding the id, the commit with its
    # child. Read: both snapshots; the maps, values, open tail and tree root with the child's
    # extras; then one batch per level of the message tree.
    assert len(calls["get_many"]) == 4 + 2 + levels, calls["get_many"]
    read: list[ObjectId] = [i for batch in calls["get_many"] for i in batch]
    assert len(read) == len(set(read))  # no object twice
    assert folded not in read  # the parent's writes it folds are not its own


def test_a_fresh_get_tuple_of_the_latest_reads_once_per_dependent_step(
    thread: tuple[Path, list[str]],
) -> None:
    path, ids = thread
    with statevcs.Repo.open(path) as repo:
        saver = StateVCSSaver(repo)
        tip = repo.refs.get(saver._key(config_of("t")).branch)
        assert tip is not None
        levels = _tree_levels(repo, lg_store.load(repo.objects, tip))
        expected = tuple_shape(saver.get_tuple(config_of("t")))
    with statevcs.Repo.open(path) as fresh:
        saver = StateVCSSaver(fresh)
        with counted(fresh) as calls:
            got = saver.get_tuple(config_of("t"))
    assert exact(tuple_shape(got), expected) and got is not None
    assert got.checkpoint["id"] == ids[-1]
    # The branch, then the side ref its checkpoint id names; the namespace's other leaves.
    assert len(calls["get_ref"]) == 2 and not calls["get_refs"] and len(calls["list_refs"]) == 1
    # The tip; its snapshot; maps, values, tail and root; each level of the tree below.
    assert len(calls["get_many"]) == 1 + 2 + levels, calls["get_many"]
    read = [i for batch in calls["get_many"] for i in batch]
    assert len(read) == len(set(read))


def test_a_side_ref_read_with_the_branch_is_read_again_once_a_fork_folded_it(
    tmp_path: Path,
) -> None:
    # get_tuple by id reads the side ref of pending writes with the branch, before the other
    # leaves. Checkpoint 2 is a leaf of a fork (the tip, 9, is its sibling's). Between the
    # two reads another writer replaces a special write of 2 (ERROR: the newest one wins) and
    # puts 2's child 3, a leaf below the tip, which folds the writes and drops the side ref:
    # the side ref as first read is older than 3's copy and must not win over it.
    with statevcs.Repo.init(tmp_path / "repo") as repo:
        savers = Differential(repo)
        place = ("t", "")
        root, fork, tip, child = (checkpoint_uuid(n) for n in (1, 2, 9, 3))
        savers.put(place, None, root, 1)
        savers.put(place, root, fork, 2)
        savers.put(place, root, tip, 3)
        savers.put_writes(place, fork, [(ERROR, "old"), ("n", 5)], "task")
        reader = StateVCSSaver(repo)
        key = reader._key(config_of("t"))
        assert repo.refs.get(key.writes_ref(fork)) is not None
        store: Any = repo.store
        real_get_refs = store.get_refs
        raced: list[Any] = []

        def get_refs(names: Any) -> Any:
            found = real_get_refs(names)
            if not raced:
                raced.append(found)
                savers.put_writes(place, fork, [(ERROR, "new")], "task")
                savers.put(place, fork, child, 4)
            return found

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(store, "get_refs", get_refs)
            got = reader.get_tuple(config_of("t", "", fork))
        assert key.writes_ref(fork) in raced[0]  # read before the child folded it
        assert repo.refs.get(key.writes_ref(fork)) is None  # the child folded them
        assert repo.refs.get(key.branch) == raced[0][key.branch]  # the tip stayed
        expected = savers.memory.get_tuple(config_of("t", "", fork))
        assert got is not None and expected is not None
        assert ("task", ERROR, "new") in got.pending_writes
        assert tuple_shape(got) == tuple_shape(expected)
