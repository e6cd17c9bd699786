"""StateVCSSaver lookups by checkpoint id through lineage indexes (statevcs.idindex): the same
tuples as a walk of the stored history gives, whatever the history (forks, re-puts, prunes,
copies, other threads and namespaces, ids out of order, gc), with segments damaged or gone;
a fresh saver reads no thread to find an early checkpoint."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import statevcs
from statevcs import idindex
from statevcs.commitgraph import CHAIN_KEY, forget
from statevcs.hashing import ObjectId, from_hex
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph import store as lg_store
from statevcs.objects import Blob, CommitObject, encode_with_id
from statevcs.stores.base import RefUpdate

from .langgraph_support import checkpoint, checkpoint_uuid, config_of, exact
from .test_langgraph_index import _tuple_shape

UNKNOWN = "1ef99999-0000-6000-8000-000000000000"


def _put(saver: StateVCSSaver, parent: str | None, cid: str, n: int, name: str = "t") -> None:
    config = config_of(name, "", parent)
    saver.put(
        config,
        checkpoint(cid, {"messages": [f"m{i}" for i in range(n % 5)], "n": n}, n),
        {"source": "loop", "step": n, "run_id": f"run-{n % 3}"},
        {"messages": n, "n": n},
    )


def _shapes(
    repo: statevcs.Repo, ids: list[str], *, index: bool, threads: tuple[str, ...] = ("t", "t2")
) -> tuple[list[Any], int]:
    """Every id looked up in each thread by a fresh saver: through the lineage indexes, or
    (``index=False``) by the walk alone (no index, no commit graph)."""
    chain = repo.store.config_get(CHAIN_KEY)
    forget(repo.store)
    with pytest.MonkeyPatch.context() as patch:
        if not index:
            patch.setattr(lg_store, "find_by_index", lambda *_: None)
            repo.store.config_set(CHAIN_KEY, None)
        saver = StateVCSSaver(repo)
        try:
            shapes = [
                _tuple_shape(saver.get_tuple(config_of(name, "", cid)))
                for name in threads
                for cid in [*ids, UNKNOWN]
            ]
        finally:
            repo.store.config_set(CHAIN_KEY, chain)
            forget(repo.store)
    return shapes, saver._counts["lineage index hits"]


@pytest.fixture
def small_segments() -> Iterator[None]:
    """Segments of 3 commits: a short history cuts, merges and carries many of them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(idindex, "SEGMENT_SIZE", 3)
        yield


_STEPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["child", "child", "child", "skew", "again", "writes", "prune", "copy", "other", "gc"]
        ),
        st.integers(min_value=0, max_value=80),
    ),
    min_size=5,
    max_size=60,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=_STEPS)
def test_lookups_through_lineage_indexes_match_the_walk(
    small_segments: None, steps: list[tuple[str, int]]
) -> None:
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)
    ids: list[str] = []
    counter = 100

    def put(parent: str | None, cid: str, n: int, name: str = "t") -> None:
        _put(saver, parent, cid, n, name)
        if cid not in ids:
            ids.append(cid)

    put(None, checkpoint_uuid(counter), 1)
    for op, arg in steps:
        target = ids[arg % len(ids)]
        if op == "child":
            counter += 1
            put(target, checkpoint_uuid(counter), counter)
        elif op == "skew":  # a writer whose clock is behind: an id smaller than its parent's
            put(target, checkpoint_uuid(arg), arg)
        elif op == "again":
            found = saver.get_tuple(config_of("t", "", target))
            if found is not None:
                parent = found.parent_config
                put(parent["configurable"]["checkpoint_id"] if parent else None, target, arg + 1)
        elif op == "writes":
            saver.put_writes(config_of("t", "", target), [("messages", f"w{arg}")], f"task-{arg}")
        elif op == "prune" and arg % 5 == 0:
            saver.prune(["t"], strategy="keep_latest")
        elif op == "copy":
            saver.delete_thread("t2")
            saver.copy_thread("t", "t2")
        elif op == "other":  # another thread, some of its ids the same as this one's
            counter += 1
            put(None if arg % 4 == 0 else target, checkpoint_uuid(counter - arg % 2), arg, "t3")
        elif op == "gc":
            repo.gc(grace="0s")
    walked, _ = _shapes(repo, ids, index=False)
    indexed, hits = _shapes(repo, ids, index=True)
    event(f"answered through an index: {hits > 0}")  # a head written out of order has none
    assert len(indexed) == len(walked)
    for a, b in zip(indexed, walked, strict=True):
        assert exact(a, b)
    assert repo.fsck().ok, repo.fsck().problems


def _line(repo: statevcs.Repo, count: int, name: str = "t", start: int = 1000) -> list[str]:
    saver = StateVCSSaver(repo)
    ids: list[str] = []
    for n in range(count):
        cid = checkpoint_uuid(start + n)
        _put(saver, ids[-1] if ids else None, cid, n, name)
        ids.append(cid)
    return ids


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_fresh_saver_finds_an_early_checkpoint_without_a_walk(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str
) -> None:
    url = "memory://" if kind == "memory" else str(tmp_path / "repo")
    repo = statevcs.Repo.init(url)
    ids = _line(repo, 300)
    walks, label_lookups = 0, 0
    real_walk, real_labels = lg_store.all_commits, lg_store.find_by_label

    def walk(*args: Any) -> Any:
        nonlocal walks
        walks += 1
        return real_walk(*args)

    def labels(*args: Any) -> Any:
        nonlocal label_lookups
        label_lookups += 1
        return real_labels(*args)

    monkeypatch.setattr(lg_store, "all_commits", walk)
    monkeypatch.setattr(lg_store, "find_by_label", labels)
    fresh_repo = repo if kind == "memory" else statevcs.Repo.open(url)
    reads: list[int] = []
    real_get_many = fresh_repo.store.get_many

    def get_many(wanted: Any) -> Any:
        reads.append(len(list(wanted)))
        return real_get_many(wanted)

    monkeypatch.setattr(fresh_repo.store, "get_many", get_many)
    fresh = StateVCSSaver(fresh_repo)
    found = fresh.get_tuple(config_of("t", "", ids[9]))
    assert found is not None and found.checkpoint["id"] == ids[9]
    assert found.parent_config is not None
    assert found.parent_config["configurable"]["checkpoint_id"] == ids[8]
    assert walks == 0 and label_lookups == 0
    assert fresh._counts["lineage index hits"] == 1
    if kind == "sqlite":
        # The head, the newest segment, the one holding the id, its commit and the one above
        # it, then the checkpoint's own objects: a handful, not the 300 commits.
        assert len(reads) <= 16, reads
        fresh_repo.close()
    repo.close()


def test_each_thread_and_namespace_resolves_its_own_ids() -> None:
    """The same checkpoint ids in two threads and two namespaces: each finds its own commit,
    and an id of one thread is not found in another."""
    repo = statevcs.Repo.init("memory://")
    saver = StateVCSSaver(repo)
    shared = [checkpoint_uuid(5000 + n) for n in range(150)]
    for name, ns, offset in (("a", "", 0), ("b", "", 1), ("a", "sub", 2)):
        previous = None
        for n, cid in enumerate(shared):
            config = config_of(name, ns, previous)
            saver.put(config, checkpoint(cid, {"n": n + offset}, n), {"step": n}, {"n": n})
            previous = cid
    only_a = checkpoint_uuid(9000)
    saver.put(config_of("a", "", shared[-1]), checkpoint(only_a, {"n": -1}, 999), {}, {"n": 999})
    fresh = StateVCSSaver(repo)
    for name, ns, offset in (("a", "", 0), ("b", "", 1), ("a", "sub", 2)):
        for n in (0, 9, 70, 149):
            found = fresh.get_tuple(config_of(name, ns, shared[n]))
            assert found is not None and found.checkpoint["channel_values"]["n"] == n + offset
    assert fresh.get_tuple(config_of("b", "", only_a)) is None
    assert fresh.get_tuple(config_of("a", "sub", only_a)) is None
    assert fresh._counts["lineage index hits"] >= 12


def _segments(repo: statevcs.Repo) -> list[ObjectId]:
    return sorted(idindex.index_objects(repo.store))


def _damage(repo: statevcs.Repo, object_id: ObjectId, data: bytes | None) -> None:
    """Replace (or with ``None`` delete) an object's stored bytes, past the store's checks."""
    store: Any = repo.store
    db = sqlite3.connect(store.path)
    if data is None:
        db.execute("DELETE FROM objects WHERE id = ?", (object_id,))
    else:
        db.execute("UPDATE objects SET data = ? WHERE id = ?", (data, object_id))
    db.commit()
    db.close()


@pytest.mark.parametrize("damage", ["flipped", "missing", "malformed"])
def test_a_damaged_index_is_slower_never_wrong(
    small_segments: None, tmp_path: Path, damage: str
) -> None:
    url = str(tmp_path / "repo")
    with statevcs.Repo.init(url) as repo:
        ids = _line(repo, 40)
        saver = StateVCSSaver(repo)
        counter = 3000
        for n in (5, 20, 33):  # forks: several heads, several indexes
            _put(saver, ids[n], checkpoint_uuid(counter + n), n)
            ids.append(checkpoint_uuid(counter + n))
        segments = _segments(repo)
        assert len(segments) >= 4
        expected, _ = _shapes(repo, ids, index=False, threads=("t",))
    with statevcs.Repo.open(url) as repo:
        for segment_id in segments:
            if damage == "missing":
                _damage(repo, segment_id, None)
            else:
                data = bytearray(repo.store.get_many([segment_id])[segment_id])
                if damage == "flipped":
                    data[len(data) // 2] ^= 0x40
                    _damage(repo, segment_id, bytes(data))
                else:  # a blob that hashes right but is no segment
                    forged_id, forged = encode_with_id(Blob(msgpack.packb({"f": "other"})))
                    repo.store.put_many({forged_id: forged})
                    _damage(repo, segment_id, forged)
    with statevcs.Repo.open(url) as repo:
        got, _ = _shapes(repo, ids, index=True, threads=("t",))
        for a, b in zip(got, expected, strict=True):
            assert exact(a, b)
        problems = repo.fsck().problems
        if damage == "missing":
            assert not any("lineage index" in p for p in problems)
        else:
            assert any("lineage index" in p for p in problems), problems


def test_gc_keeps_what_heads_name_and_lookups_stay_right_after_a_prune(
    small_segments: None,
) -> None:
    repo = statevcs.Repo.init("memory://")
    ids = _line(repo, 60)
    saver = StateVCSSaver(repo)
    _put(saver, ids[30], checkpoint_uuid(4000), 1)  # a fork: one more head
    ids.append(checkpoint_uuid(4000))
    repo.gc(grace="0s")
    kept = _segments(repo)
    assert kept and repo.store.has_many(kept) == set(kept)
    got, hits = _shapes(repo, ids, index=True, threads=("t",))
    expected, _ = _shapes(repo, ids, index=False, threads=("t",))
    assert hits > 0 and all(exact(a, b) for a, b in zip(got, expected, strict=True))
    saver.prune(["t"], strategy="keep_latest")
    repo.gc(grace="0s")
    got, _ = _shapes(repo, ids, index=True, threads=("t",))
    expected, _ = _shapes(repo, ids, index=False, threads=("t",))
    assert all(exact(a, b) for a, b in zip(got, expected, strict=True))
    assert sum(shape is not None for shape in got) == 1  # only the latest is left
    # The thread goes on from its pruned head: its new commits index the new history.
    _put(saver, ids[-2], checkpoint_uuid(4100), 2)
    for n in range(10):
        _put(saver, checkpoint_uuid(4100 + n), checkpoint_uuid(4101 + n), 3 + n)
    got, hits = _shapes(repo, [*ids, checkpoint_uuid(4100)], index=True, threads=("t",))
    assert hits > 0 and got[-2] is not None
    assert repo.fsck().ok, repo.fsck().problems


def test_fsck_names_an_index_that_does_not_describe_its_history() -> None:
    """A commit carrying another history's index (metadata copied onto new parents by hand)."""
    repo = statevcs.Repo.init("memory://")
    _line(repo, 80)
    tip = repo.refs.get("refs/heads/threads/t")
    if tip is None:
        tip = next(iter(repo.refs.as_dict("refs/").values()))
    commit = repo.objects.load_commit(tip)
    assert idindex.fields_of(commit.metadata, "langgraph") is not None
    forged = CommitObject(
        snapshot=commit.snapshot,
        parents=(),
        author=commit.author,
        timestamp_us=commit.timestamp_us,
        message=commit.message,
        metadata=commit.metadata,
    )
    forged_id, data = repo.objects.encode_commit(forged)
    repo.refs.update([RefUpdate("refs/heads/forged", forged_id, None, "test")], {forged_id: data})
    problems = repo.fsck().problems
    assert any("lineage index" in p and "history" in p for p in problems), problems


def test_a_rewritten_commit_carries_no_index() -> None:
    assert idindex.without_index(
        {"langgraph": {"ix": "0" * 64, "ixn": 3, "checkpoint_id": "x"}}
    ) == {"langgraph": {"checkpoint_id": "x"}}
    assert idindex.without_index({"other": 1}) == {"other": 1}


_HOSTILE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.text(max_size=8)
    | st.binary(max_size=40),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)


@given(
    value=st.fixed_dictionaries(
        {"f": st.just("statevcs.lineage-index")},
        optional={
            "keys": _HOSTILE,
            "commits": _HOSTILE,
            "older": _HOSTILE,
            "high": _HOSTILE,
        },
    )
    | _HOSTILE,
    raw=st.binary(max_size=200),
)
def test_hostile_segment_bytes_are_refused_not_raised(value: Any, raw: bytes) -> None:
    for data in (msgpack.packb(value, use_bin_type=True), raw):
        segment = idindex.parse_segment(data)
        assert segment is None or isinstance(segment, idindex.Segment)


@given(info=_HOSTILE)
def test_hostile_index_fields_are_ignored(info: Any) -> None:
    fields = idindex.fields_of({"langgraph": info}, "langgraph")
    assert fields is None or (
        (fields[0] is None or len(fields[0]) == 32) and 1 <= fields[1] <= idindex.SEGMENT_SIZE
    )


def test_a_segment_round_trips() -> None:
    commits = [bytes([n]) * 32 for n in range(3)]
    older = [idindex.Older(b"\1" * 32, 2, "a", "b", b"\2" * 32)]
    segment_id, data = idindex.encode_segment(["c", "d", "e"], commits, older, "e")
    repo = statevcs.Repo.init("memory://")
    repo.store.put_many({segment_id: data})
    segment = idindex.read_segment(repo.objects, segment_id)
    assert segment is not None and segment.keys == ["c", "d", "e"]
    assert segment.commit_at(2) == commits[2] and segment.older == tuple(older)
    assert idindex.read_segment(repo.objects, from_hex("ab" * 32)) is None


@pytest.mark.parametrize("history", ["collected", "before indexes"])
def test_a_history_without_a_usable_index_is_indexed_again_by_the_next_put(
    small_segments: None, history: str
) -> None:
    repo = statevcs.Repo.init("memory://")
    with pytest.MonkeyPatch.context() as patch:
        if history == "before indexes":
            patch.setattr(lg_store, "index_fields", lambda *_: ({}, {}))
        ids = _line(repo, 30)
    if history == "collected":
        repo.store.delete_many(_segments(repo))
        idindex._PARSED.clear()
    got, hits = _shapes(repo, ids, index=True, threads=("t",))
    assert hits == 1  # only the head itself: the rest walks
    saver = StateVCSSaver(repo)
    for n in range(2):
        cid = checkpoint_uuid(1100 + n)
        _put(saver, ids[-1], cid, n)
        ids.append(cid)
    got, hits = _shapes(repo, ids, index=True, threads=("t",))
    expected, _ = _shapes(repo, ids, index=False, threads=("t",))
    assert hits == len(ids) + 1  # and the unknown id: the index shows it is not there
    assert all(exact(a, b) for a, b in zip(got, expected, strict=True))
    assert repo.fsck().ok, repo.fsck().problems


def test_a_fresh_handle_on_s3_finds_an_early_checkpoint_through_the_index(s3_url: str) -> None:
    with statevcs.Repo.init(s3_url) as repo:
        ids = _line(repo, 140)
        expected = _tuple_shape(StateVCSSaver(repo).get_tuple(config_of("t", "", ids[9])))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(lg_store, "find_by_index", lambda *_: None)
            walked = _tuple_shape(StateVCSSaver(repo).get_tuple(config_of("t", "", ids[9])))
        assert exact(expected, walked)
    with statevcs.Repo.open(s3_url) as fresh:
        saver = StateVCSSaver(fresh)
        got = _tuple_shape(saver.get_tuple(config_of("t", "", ids[9])))
        assert saver._counts["lineage index hits"] == 1
        assert exact(got, expected)
        assert saver.get_tuple(config_of("t", "", UNKNOWN)) is None
