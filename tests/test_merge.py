"""Structural merges (statevcs/merge.py): three-way state, conversations, merge bases, refs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statevcs
from statevcs import MergeConflict, RefConflict, Snapshot
from statevcs.merge import MISSING, merge_snapshots, same

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def snap(messages: list[Any] | None = None, **state: Any) -> Snapshot:
    return Snapshot(kind="dict", messages=messages or [], state=state)


def msg(text: str, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": text}


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


@pytest.fixture
def repo() -> statevcs.Repo:
    return statevcs.Repo.init("memory://", author="tester <t@example.com>")


@pytest.fixture
def clock() -> Clock:
    return Clock()


def forked(repo: statevcs.Repo, clock: Clock) -> dict[str, Any]:
    """main: base -> m1; feature: base -> f1. Returns the live dict (on main)."""
    agent: dict[str, Any] = {"messages": [msg("hi")], "a": 1, "b": 1, "c": 1}
    repo.commit(agent, "base", timestamp=clock())
    repo.branch("feature")
    agent["a"] = 2
    repo.commit(agent, "main changes a", timestamp=clock())
    repo.checkout(agent, "feature")
    agent["b"] = 3
    repo.commit(agent, "feature changes b", timestamp=clock())
    repo.checkout(agent, "main")
    return agent


# --- merge_snapshots -------------------------------------------------------------------


def test_state_keys_changed_on_one_side_take_that_side() -> None:
    base = snap(a=1, b=1, gone=0, also_gone=0)
    ours = snap(a=2, b=1, gone=0)
    theirs = snap(a=1, b=3, new=4, also_gone=0)
    merged = merge_snapshots(base, ours, theirs).snapshot
    assert merged.state == {"a": 2, "b": 3, "new": 4}


def test_conflicting_keys_raise_listing_them() -> None:
    with pytest.raises(MergeConflict) as info:
        merge_snapshots(snap(a=1, b=1, c=1), snap(a=2, b=2, c=1), snap(a=3, b=4, c=9))
    assert info.value.keys == ["a", "b"]
    assert "'a', 'b'" in str(info.value)


@pytest.mark.parametrize(("strategy", "expected"), [("ours", 2), ("theirs", 3)])
def test_strategy_settles_conflicts(strategy: str, expected: int) -> None:
    result = merge_snapshots(snap(a=1), snap(a=2), snap(a=3), strategy=strategy)  # type: ignore[arg-type]
    assert result.snapshot.state == {"a": expected}
    assert result.resolved == {"state.a": strategy}


def test_resolver_is_called_per_conflicting_key_and_can_delete() -> None:
    calls: list[tuple[Any, ...]] = []

    def resolve(key: str, base: Any, ours: Any, theirs: Any) -> Any:
        calls.append((key, base, ours, theirs))
        return MISSING if key == "drop" else ours + theirs

    base = snap(total=1, drop=1, same=0)
    merged = merge_snapshots(
        base, snap(total=2, drop=2, same=1), snap(total=5, same=1), strategy=resolve
    ).snapshot
    assert merged.state == {"total": 7, "same": 1}
    assert sorted(calls) == [("drop", 1, 2, MISSING), ("total", 1, 2, 5)]


def test_missing_sentinel_is_falsy_and_named() -> None:
    assert not MISSING
    assert repr(MISSING) == "MISSING"


def test_same_is_type_strict() -> None:
    assert same({"a": [1, 2.0]}, {"a": [1, 2.0]})
    assert not same(1, True)
    assert not same(1, 1.0)
    assert same(float("nan"), float("nan"))
    assert not same([1], (1,))
    assert not same({"a": 1, "b": 2}, {"a": 1, "c": 2})


def test_messages_fast_forward_when_one_side_is_a_prefix() -> None:
    short = [msg("hi")]
    long = [msg("hi"), msg("hello", "assistant")]
    assert merge_snapshots(snap(short), snap(short), snap(long)).snapshot.messages == long
    assert merge_snapshots(snap(short), snap(long), snap(short)).snapshot.messages == long


def test_diverged_messages_need_a_side() -> None:
    base = snap([msg("hi")])
    ours = snap([msg("hi"), msg("A", "assistant")])
    theirs = snap([msg("hi"), msg("B", "assistant")])
    with pytest.raises(MergeConflict, match="never interleaved") as raised:
        merge_snapshots(base, ours, theirs)
    assert raised.value.messages and not raised.value.keys and not raised.value.kind
    assert merge_snapshots(base, ours, theirs, strategy="theirs").snapshot.messages == (
        theirs.messages
    )
    # A resolver covers state keys only; the conversation needs the fallback side.
    with pytest.raises(MergeConflict):
        merge_snapshots(base, ours, theirs, strategy=lambda *a: a[2])
    result = merge_snapshots(base, ours, theirs, strategy=lambda *a: a[2], fallback="ours")
    assert result.snapshot.messages == ours.messages
    assert result.resolved == {"messages": "ours"}


def test_extras_merge_like_state() -> None:
    base = Snapshot(kind="dict", extras={"prompt": "p", "model": "m"})
    ours = Snapshot(kind="dict", extras={"prompt": "p2", "model": "m"})
    theirs = Snapshot(kind="dict", extras={"prompt": "p", "model": "m2"})
    assert merge_snapshots(base, ours, theirs).snapshot.extras == {"prompt": "p2", "model": "m2"}
    clash = Snapshot(kind="dict", extras={"prompt": "p3", "model": "m"})
    with pytest.raises(MergeConflict, match="extras keys") as raised:
        merge_snapshots(base, ours, clash)
    assert raised.value.extras_keys == ["prompt"] and not raised.value.messages


def test_unrelated_histories_merge_against_an_empty_base() -> None:
    merged = merge_snapshots(None, snap(a=1), snap(b=2)).snapshot
    assert merged.state == {"a": 1, "b": 2}
    with pytest.raises(MergeConflict):
        merge_snapshots(None, snap(a=1), snap(a=2))


def test_invalid_strategy_is_rejected() -> None:
    with pytest.raises(TypeError, match="strategy"):
        merge_snapshots(None, snap(), snap(), strategy="mine")  # type: ignore[arg-type]


values = st.one_of(st.integers(0, 3), st.text("ab", max_size=2), st.none())
states = st.dictionaries(st.sampled_from("pqrst"), values, max_size=5)


@settings(max_examples=200, deadline=None)
@given(base=states, ours=states, theirs=states)
def test_clean_merges_are_symmetric_and_keep_one_sided_changes(
    base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]
) -> None:
    try:
        forward = merge_snapshots(snap(**base), snap(**ours), snap(**theirs)).snapshot.state
    except MergeConflict as exc:
        for key in exc.keys:
            assert not same(ours.get(key, MISSING), theirs.get(key, MISSING))
        return
    backward = merge_snapshots(snap(**base), snap(**theirs), snap(**ours)).snapshot.state
    assert forward == backward
    for key in set(base) | set(ours) | set(theirs):
        if same(theirs.get(key, MISSING), base.get(key, MISSING)):
            assert same(forward.get(key, MISSING), ours.get(key, MISSING))


# --- merge bases ------------------------------------------------------------------------


def test_merge_base_of_a_fork(repo: statevcs.Repo, clock: Clock) -> None:
    forked(repo, clock)
    base = repo.resolve("main~1")
    assert repo.merge_base("main", "feature") == base
    assert repo.merge_base("feature", "main") == base
    assert repo.merge_base("main", "main~1") == base
    assert repo.merge_base("main~1", "main") == base


def test_merge_base_of_unrelated_histories_is_none(repo: statevcs.Repo, clock: Clock) -> None:
    repo.commit({"x": 1}, "one", timestamp=clock())
    other = _commit(repo, repo.objects.write_snapshot(snap(y=1)), [], "root 2", clock())
    assert repo.merge_base("main", other) is None


def test_criss_cross_merges_have_two_best_bases(repo: statevcs.Repo, clock: Clock) -> None:
    forked(repo, clock)
    m1, f1 = repo.resolve("main"), repo.resolve("feature")
    sid = bytes.fromhex(repo.get_commit("main").snapshot_id)
    x = _commit(repo, sid, [m1, f1], "x", clock())
    y = _commit(repo, sid, [f1, m1], "y", clock())
    assert sorted(repo.merge_bases(x, y)) == sorted([m1, f1])
    assert repo.merge_base(x, y) in (m1, f1)


def _commit(
    repo: statevcs.Repo, snapshot_id: bytes, parents: list[str], message: str, moment: Any
) -> str:
    """Write a commit with the plumbing (no ref moves) and return its hex id."""
    return repo.objects.write_commit(
        snapshot_id,
        [bytes.fromhex(p) for p in parents],
        message=message,
        author=repo.author,
        timestamp=moment,
    ).hex()


# --- merge into a branch -----------------------------------------------------------------


def test_merge_writes_a_two_parent_commit(repo: statevcs.Repo, clock: Clock) -> None:
    forked(repo, clock)
    main_head, feature_head = repo.resolve("main"), repo.resolve("feature")
    commit = repo.merge("main", "feature", timestamp=clock())
    assert commit.parents == (main_head, feature_head)
    assert repo.resolve("main") == commit.id
    assert repo.show("main").state == {"a": 2, "b": 3, "c": 1}
    assert commit.message == "Merge feature into main"
    assert commit.metadata["merge"]["source"] == "feature"
    assert repo.reflog("main")[0].message.startswith("merge feature")


def test_merging_an_ancestor_changes_nothing(repo: statevcs.Repo, clock: Clock) -> None:
    forked(repo, clock)
    head = repo.resolve("main")
    assert repo.merge("main", "main~1").id == head
    assert repo.resolve("main") == head


def test_merge_fast_forwards_when_the_target_is_an_ancestor(
    repo: statevcs.Repo, clock: Clock
) -> None:
    forked(repo, clock)
    repo.branch("behind", "main~1")
    commit = repo.merge("behind", "main")
    assert commit.id == repo.resolve("main") == repo.resolve("behind")
    repo.branch("behind2", "main~1")
    forced = repo.merge("behind2", "main", fast_forward=False, timestamp=clock())
    assert len(forced.parents) == 2


def test_a_conflict_writes_and_moves_nothing(repo: statevcs.Repo, clock: Clock) -> None:
    agent = forked(repo, clock)
    agent["b"] = 99
    repo.commit(agent, "main changes b too", timestamp=clock())
    head = repo.resolve("main")
    objects = repo.stats().objects
    with pytest.raises(MergeConflict) as info:
        repo.merge("main", "feature")
    assert info.value.keys == ["b"]
    assert repo.resolve("main") == head
    assert repo.stats().objects == objects
    merged = repo.merge("main", "feature", strategy="theirs", timestamp=clock())
    assert repo.show(merged.id).state["b"] == 3
    assert merged.metadata["merge"]["resolved"] == {"state.b": "theirs"}


def test_the_branch_moves_with_compare_and_swap(
    repo: statevcs.Repo, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    forked(repo, clock)
    real = repo.objects.encode_snapshot
    sneaky = repo.resolve("main~1")

    def racing(*args: Any, **kwargs: Any) -> Any:
        written = real(*args, **kwargs)
        # another writer moves main while the merge is being written
        repo.refs.set("refs/heads/main", bytes.fromhex(sneaky))
        return written

    monkeypatch.setattr(repo.objects, "encode_snapshot", racing)
    with pytest.raises(RefConflict):
        repo.merge("main", "feature", timestamp=clock())
    assert repo.resolve("main") == sneaky


def test_merging_into_a_missing_branch_fails(repo: statevcs.Repo, clock: Clock) -> None:
    forked(repo, clock)
    with pytest.raises(statevcs.RefNotFound):
        repo.merge("nope", "feature")


def test_repo_merge_method_delegates(repo: statevcs.Repo, clock: Clock) -> None:
    forked(repo, clock)
    assert repo.merge_base("main", "feature") == repo.resolve("main~1")
    commit = repo.merge("main", "feature", message="joined")
    assert commit.message == "joined"
    assert repo.merge_base("main", "feature") == repo.resolve("feature")
