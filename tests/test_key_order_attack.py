"""Attacks on the committed key order (snapshot version 3): every reader hands it back.

Each test here began as a failing one against 59cd7ef ("Key order kept"), or checks a surface
that commit did not test: merges, diffs, the git mirror on every store, upgrades, gc and fsck.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import statevcs
from statevcs.diff import OrderChange
from statevcs.errors import CorruptObject, MergeConflict, MissingObject
from statevcs.hashing import from_hex, to_hex
from statevcs.merge import MESSAGES_AT, merge_snapshots, same
from statevcs.objects import (
    ORDERED_SNAPSHOT_FORMAT,
    PACKED_SNAPSHOT_FORMAT,
    SnapshotObject,
    encode_with_id,
)


def snapshot_object(repo: statevcs.Repo, revision: str = "main") -> SnapshotObject:
    return repo.objects.load_snapshot(
        repo.objects.load_commit(from_hex(repo.resolve(revision))).snapshot
    )


def fork(repo: statevcs.Repo, base: dict[str, Any]) -> None:
    """Commit ``base`` on main and start branch ``side`` there."""
    repo.commit(dict(base), message="base")
    repo.branch("side")


def commit_on(repo: statevcs.Repo, branch: str, items: list[tuple[str, Any]]) -> None:
    """Commit a dict holding exactly ``items`` (in that order) on ``branch``."""
    live: dict[str, Any] = {}
    repo.checkout(live, branch)
    live.clear()
    live.update(items)
    repo.commit(live, message=f"on {branch}")


def checked_out(repo: statevcs.Repo, revision: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    repo.checkout(out, revision)
    return out


# --- merges -------------------------------------------------------------------------------


def test_a_merge_keeps_the_order_only_theirs_changed(repo: statevcs.Repo) -> None:
    fork(repo, {"a": 1, "b": 2, "messages": []})
    commit_on(repo, "side", [("b", 2), ("a", 1), ("messages", [])])
    commit_on(repo, "main", [("a", 1), ("b", 2), ("messages", []), ("c", 3)])
    merged = repo.merge("main", "side")
    assert list(checked_out(repo, merged.id)) == ["b", "a", "messages", "c"]
    assert snapshot_object(repo).version == ORDERED_SNAPSHOT_FORMAT


def test_a_merge_keeps_an_order_both_sides_share(repo: statevcs.Repo) -> None:
    fork(repo, {"z": 1, "messages": [], "y": 2})
    commit_on(repo, "side", [("z", 1), ("messages", []), ("y", 2), ("x", 3)])
    commit_on(repo, "main", [("z", 5), ("messages", []), ("y", 2)])
    merged = repo.merge("main", "side")
    assert list(checked_out(repo, merged.id).items()) == [
        ("z", 5),
        ("messages", []),
        ("y", 2),
        ("x", 3),
    ]


def test_a_merge_of_dicts_that_both_moved_messages_is_no_conflict(repo: statevcs.Repo) -> None:
    # Before 59cd7ef both sides only added keys, which merges; the messages' place is no
    # extras value to conflict on.
    fork(repo, {"messages": []})
    commit_on(repo, "side", [("x", 1), ("y", 2), ("messages", [])])
    commit_on(repo, "main", [("a", 1), ("messages", [])])
    merged = repo.merge("main", "side")
    out = checked_out(repo, merged.id)
    # Both reordered: ours keeps its order and its place for "messages", theirs' keys follow.
    assert list(out.items()) == [("a", 1), ("messages", []), ("x", 1), ("y", 2)]
    assert repo.show(merged.id).extras == {MESSAGES_AT: 1}


def test_a_merged_dict_commit_checks_out(repo: statevcs.Repo) -> None:
    # Theirs moved "messages" after two keys; ours dropped both: the merge must not record a
    # place past the end of its state (a checkout refused it as a corrupt object).
    fork(repo, {"messages": [], "a": 1, "b": 2})
    commit_on(repo, "side", [("a", 1), ("b", 2), ("messages", [])])
    commit_on(repo, "main", [("messages", [])])
    merged = repo.merge("main", "side")
    assert checked_out(repo, merged.id) == {"messages": []}
    assert not repo.fsck().problems


def test_a_merge_keeps_a_nested_reorder_only_theirs_made(repo: statevcs.Repo) -> None:
    fork(repo, {"cfg": {"p": 1, "q": 2}, "n": 0})
    commit_on(repo, "side", [("cfg", {"q": 2, "p": 1}), ("n", 0)])
    commit_on(repo, "main", [("cfg", {"p": 1, "q": 2}), ("n", 1)])
    merged = repo.merge("main", "side")
    out = checked_out(repo, merged.id)
    assert list(out["cfg"]) == ["q", "p"]
    assert out["n"] == 1


def test_a_reorder_on_both_sides_of_one_value_is_a_conflict() -> None:
    base = statevcs.Snapshot(kind="k", messages=[], state={"v": {"a": 1, "b": 2, "c": 3}})
    ours = statevcs.Snapshot(kind="k", messages=[], state={"v": {"b": 2, "a": 1, "c": 3}})
    theirs = statevcs.Snapshot(kind="k", messages=[], state={"v": {"c": 3, "a": 1, "b": 2}})
    with pytest.raises(MergeConflict) as caught:
        merge_snapshots(base, ours, theirs)
    assert caught.value.keys == ["v"]


def test_same_sees_key_order() -> None:
    assert same({"a": 1, "b": 2}, {"a": 1, "b": 2})
    assert not same({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not same([{"a": 1, "b": 2}], [{"b": 2, "a": 1}])


names = st.sampled_from(["a", "b", "c", "d", "e"])
layouts = st.lists(names, unique=True, max_size=5).flatmap(
    lambda keys: st.permutations(keys).map(list)
)


def _dict_of(keys: list[str], at: int, value: int) -> dict[str, Any]:
    items: list[tuple[str, Any]] = [(k, value) for k in keys]
    items.insert(min(at, len(items)), ("messages", []))
    return dict(items)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=layouts,
    ours=layouts,
    theirs=layouts,
    places=st.tuples(*[st.integers(0, 5)] * 3),
)
def test_any_merge_of_ordered_dicts_checks_out_and_keeps_one_sides_order(
    base: list[str], ours: list[str], theirs: list[str], places: tuple[int, int, int]
) -> None:
    repo = statevcs.Repo.init("memory://")
    fork(repo, _dict_of(base, places[0], 0))
    # Each side changes only values that the other leaves alone: no value conflicts.
    commit_on(repo, "side", list(_dict_of(theirs, places[2], 0).items()))
    commit_on(repo, "main", list(_dict_of(ours, places[1], 0).items()))
    merged = repo.merge("main", "side", strategy="ours")
    out = checked_out(repo, merged.id)  # never a "corrupt object"
    keys = [k for k in out if k != "messages"]
    assert keys in (
        [k for k in ours if k in out] + [k for k in keys if k not in ours],
        [k for k in theirs if k in out] + [k for k in keys if k not in theirs],
    )
    assert not repo.fsck().problems


# --- diffs --------------------------------------------------------------------------------


def test_a_diff_of_a_reorder_only_commit_names_the_order(repo: statevcs.Repo) -> None:
    first = repo.commit({"a": 1, "b": 2, "messages": []}, message="sorted")
    second = repo.commit({"b": 2, "a": 1, "messages": []}, message="reordered")
    result = repo.diff(first.id, second.id)
    assert not result.is_empty  # the snapshots differ: a diff must not say "no differences"
    assert result.order == (OrderChange("state", ("a", "b"), ("b", "a")),)
    assert "state key order: 'a', 'b' -> 'b', 'a'" in str(result)
    assert repo.diff(second.id, second.id).is_empty


def test_a_diff_names_the_order_of_the_keys_both_sides_hold(repo: statevcs.Repo) -> None:
    first = repo.commit(statevcs.Snapshot(kind="k", state={"c": 1, "a": 2}), message="1")
    # "b" is new and "c" stays before "a": no order change, one added key.
    second = repo.commit(statevcs.Snapshot(kind="k", state={"c": 1, "b": 0, "a": 2}), message="2")
    result = repo.diff(first.id, second.id)
    assert result.order == ()
    assert [(c.key, c.kind) for c in result.state] == [("b", "added")]
    third = repo.commit(
        statevcs.Snapshot(kind="k", state={"a": 2}, extras={"y": 1, "x": 2}), message="3"
    )
    assert repo.diff(second.id, third.id).order == ()  # one common state key, sorted extras
    fourth = repo.commit(
        statevcs.Snapshot(kind="k", state={"a": 2}, extras={"x": 2, "y": 1}), message="4"
    )
    assert repo.diff(third.id, fourth.id).order == (OrderChange("extras", ("y", "x"), ("x", "y")),)


def test_the_cli_and_mcp_diffs_name_the_order(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from statevcs.cli import cli
    from statevcs.mcpserver import queries

    with statevcs.Repo.init(tmp_path / "r") as repo:
        repo.commit({"a": 1, "b": 2}, message="sorted")
        repo.commit({"b": 2, "a": 1}, message="reordered")
        answer = queries.diff(repo, "HEAD~1", "HEAD")
    assert answer["empty"] is False
    assert answer["order"] == [{"field": "state", "a": ["a", "b"], "b": ["b", "a"]}]
    runner = CliRunner()
    shown = runner.invoke(cli, ["-C", str(tmp_path / "r"), "diff", "HEAD~1", "HEAD"])
    assert shown.exit_code == 0, shown.output
    assert 'state key order: ["a", "b"] → ["b", "a"]' in shown.output
    assert "(no differences)" not in shown.output
    data = runner.invoke(cli, ["-C", str(tmp_path / "r"), "diff", "HEAD~1", "HEAD", "--json"])
    assert json.loads(data.output)["order"] == [
        {"field": "state", "old": ["a", "b"], "new": ["b", "a"]}
    ]
    code = runner.invoke(
        cli, ["-C", str(tmp_path / "r"), "diff", "HEAD~1", "HEAD", "--exit-code"]
    ).exit_code
    assert code == 1


# --- the git mirror -----------------------------------------------------------------------


def git(*args: str | Path) -> str:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(Path.cwd()), "PATH": os.environ["PATH"]}
    done = subprocess.run(["git", *map(str, args)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def ordered_history(repo: statevcs.Repo, main: str = "main", side: str = "side") -> None:
    """Commits whose state and extras record an order: small, prolly-sized and merged."""
    big = {f"k{index:03d}": {"v": index} for index in range(60, 0, -1)}  # a stored map
    repo.commit(
        {"turn": 1, "messages": [{"role": "user", "n": 1}], **big}, message="big", branch=main
    )
    repo.branch(side, main)
    repo.commit(
        statevcs.Snapshot(
            kind="k", state={"d": 1, "c": [2]}, extras={"f": 1, "e": {"z": 0, "y": 1}}
        ),
        message="snapshot",
        branch=main,
    )
    commit_on(repo, side, [("b", 1), ("messages", []), ("a", 2)])
    repo.merge(main, side, strategy="theirs")


def rev_parse(mirror: Path, *refs: str) -> list[str]:
    return git("-C", mirror, "rev-parse", *refs).split()


@pytest.mark.parametrize(
    ("source", "target"), [("memory", "sqlite"), ("sqlite", "s3"), ("s3", "memory")]
)
def test_an_ordered_history_round_trips_the_mirror_on_every_store(
    source: str, target: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from statevcs.mirror.git import export_git, import_git

    def open_store(kind: str, name: str) -> statevcs.Repo:
        if kind == "s3":
            return statevcs.Repo.init(request.getfixturevalue("s3_url"))  # one per test
        return statevcs.Repo.init("memory://" if kind == "memory" else tmp_path / name)

    repo = open_store(source, "a")
    ordered_history(repo)
    export_git(repo, tmp_path / "first")
    copy = open_store(target, "b")
    import_git(copy, tmp_path / "first")
    assert copy.refs.as_hex() == repo.refs.as_hex()
    for commit in repo.log_all():
        assert checked_out(copy, commit.id) == checked_out(repo, commit.id)
        assert list(checked_out(copy, commit.id)) == list(checked_out(repo, commit.id))
        assert list(copy.show(commit.id).extras) == list(repo.show(commit.id).extras)
    export_git(copy, tmp_path / "second")
    refs = ["refs/heads/main", "refs/heads/side"]
    assert rev_parse(tmp_path / "second", *refs) == rev_parse(tmp_path / "first", *refs)
    assert not copy.fsck().problems
    repo.close()
    copy.close()


def test_a_state_json_reordered_with_git_imports_as_a_new_commit(tmp_path: Path) -> None:
    from statevcs.mirror.git import export_git, import_git

    repo = statevcs.Repo.init(tmp_path / "r")
    repo.commit({"a": 1, "b": 2, "messages": []}, message="sorted")
    mirror = tmp_path / "mirror"
    export_git(repo, mirror)
    state = json.loads((mirror / "state.json").read_text())
    (mirror / "state.json").write_text(json.dumps(dict(reversed(state.items())), indent=2))
    git("-C", mirror, "add", "state.json")
    git("-C", mirror, "-c", "user.name=G", "-c", "user.email=g@x", "commit", "-q", "-m", "ba")
    before = repo.resolve("main")
    report = import_git(repo, mirror)
    assert (report.commits_imported, report.commits_from_git) == (1, 1)
    assert repo.get_commit("main").parents == (before,)
    assert list(checked_out(repo, "main")) == ["b", "a", "messages"]
    assert repo.diff(before, "main").order == (OrderChange("state", ("a", "b"), ("b", "a")),)


def test_a_state_json_reordered_in_place_is_refused(tmp_path: Path) -> None:
    from statevcs.errors import GitMirrorError
    from statevcs.mirror.git import export_git, import_git

    repo = statevcs.Repo.init(tmp_path / "r")
    repo.commit({"b": 1, "a": 2}, message="ordered")
    mirror = tmp_path / "mirror"
    export_git(repo, mirror)
    state = json.loads((mirror / "state.json").read_text())
    assert list(state) == ["b", "a"]
    (mirror / "state.json").write_text(json.dumps({"a": 2, "b": 1}, indent=2))
    git("-C", mirror, "add", "state.json")
    # The same statevcs.json, so the files claim the recorded snapshot: never a wrong id.
    git(
        "-C",
        mirror,
        "-c",
        "user.name=G",
        "-c",
        "user.email=g@x",
        "commit",
        "-q",
        "--amend",
        "--no-edit",
    )
    with pytest.raises(GitMirrorError, match="changed without a new commit"):
        import_git(statevcs.Repo.init("memory://"), mirror)


# --- upgrades, gc, fsck and other processes -----------------------------------------------


def test_an_upgraded_format_1_repository_keeps_the_order_of_what_it_imported(
    tmp_path: Path,
) -> None:
    # A format-1 repository can hold version-3 snapshots: an ordered mirror imports into it
    # with its ids. The upgrade rewrites those commits (their parents change): the order stays.
    from statevcs.mirror.git import export_git, import_git
    from tests.test_upgrade import unpack_fixture

    source = statevcs.Repo.init(tmp_path / "source")
    ordered_history(source, "ordered", "ordered-side")
    export_git(source, tmp_path / "mirror")
    folder, _, _ = unpack_fixture(tmp_path)
    with statevcs.Repo.open(folder) as repo:
        assert repo.storage_format == 1
        import_git(repo, tmp_path / "mirror")
        expected = {c.id: checked_out(source, c.id) for c in source.log_all()}
        assert snapshot_object(repo, "ordered-side").version == ORDERED_SNAPSHOT_FORMAT
        # A commit of an unsorted dict in format 1 reads back sorted (documented), with
        # "messages" at its place.
        repo.commit({"z": 1, "messages": [], "y": 2}, message="format 1", branch="old")
        assert list(checked_out(repo, "old")) == ["y", "messages", "z"]
        repo.upgrade()
        for commit_id, state in expected.items():
            assert list(checked_out(repo, commit_id).items()) == list(state.items())
        repo.commit({"z": 1, "messages": [], "y": 2}, message="format 2", branch="new")
        assert list(checked_out(repo, "new")) == ["z", "messages", "y"]
        repo.gc("0", expire_reflog="0")
        assert repo.fsck().ok
        for commit_id, state in expected.items():
            assert list(checked_out(repo, commit_id).items()) == list(state.items())
        assert list(checked_out(repo, "new")) == ["z", "messages", "y"]


def test_gc_and_fsck_keep_every_ordered_snapshot(repo: statevcs.Repo) -> None:
    ordered_history(repo)
    tips = {name: checked_out(repo, name) for name in ("main", "side")}
    repo.commit({"dropped": 1, "a": 0}, message="to collect", branch="gone")
    repo.delete_branch("gone")
    repo.gc("0", expire_reflog="0")
    report = repo.fsck()
    assert report.ok, report.problems
    for name, state in tips.items():
        assert list(checked_out(repo, name).items()) == list(state.items())


def test_a_cold_s3_handle_reads_the_committed_order(s3_url: str) -> None:
    with statevcs.Repo.init(s3_url) as repo:
        ordered_history(repo)
        expected = {c.id: checked_out(repo, c.id) for c in repo.log_all()}
    with statevcs.Repo.open(s3_url + "&cache=none") as cold:
        for commit_id, state in expected.items():
            assert list(checked_out(cold, commit_id).items()) == list(state.items())
            assert list(cold.show(commit_id).extras) == list(cold.show(commit_id).extras)


# --- hostile snapshots --------------------------------------------------------------------


def _forge(repo: statevcs.Repo, stored: SnapshotObject, state_order: tuple[int, ...]) -> str:
    """Commit ``stored`` claiming ``state_order`` (its extras order kept) on branch ``forged``."""
    extras_order = stored.extras_order
    ordered = bool(state_order or extras_order)
    forged = SnapshotObject(
        stored.kind,
        stored.messages,
        stored.tail,
        stored.state,
        stored.extras,
        stored.state_codec,
        ORDERED_SNAPSHOT_FORMAT if ordered else PACKED_SNAPSHOT_FORMAT,
        state_order,
        extras_order,
    )
    snapshot_id, data = encode_with_id(forged)
    repo.objects.put({snapshot_id: data})
    commit_id = repo.objects.write_commit(
        snapshot_id, [], message="forged", author="x <x@example.com>", timestamp=datetime.now(UTC)
    )
    repo.refs.set("refs/heads/forged", commit_id)
    return to_hex(commit_id)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    count=st.integers(0, 40),
    wide=st.booleans(),
    off=st.sampled_from([0, 0, 0, 1, -1, 3, -3]),
    data=st.data(),
)
def test_a_forged_order_reads_back_as_that_permutation_or_is_refused(
    count: int, wide: bool, off: int, data: st.DataObject
) -> None:
    claimed = max(0, count + off)  # an order over as many keys as the map holds, or not
    # Inline maps (a few short values) and stored ones (many, or wide values) alike.
    repo = statevcs.Repo.init("memory://")
    state = {f"k{i:02d}": ("v" * 70 if wide else i) for i in range(count)}
    repo.commit(statevcs.Snapshot(kind="k", state=state, extras={"b": 1, "a": 2}), message="m")
    stored = snapshot_object(repo)
    order = tuple(data.draw(st.permutations(range(claimed))))
    if order == tuple(range(claimed)):
        order = ()  # the sorted order is recorded as none
    forged = _forge(repo, stored, order)
    if claimed == count or not order:
        out = repo.show(forged)
        keys = sorted(state)
        assert list(out.state) == ([keys[i] for i in order] if order else keys)
        assert list(out.extras) == ["b", "a"]
        assert repo.fsck().ok
    else:
        with pytest.raises(CorruptObject, match="key order names"):
            repo.show(forged)
        live: dict[str, Any] = {"kept": 1}
        with pytest.raises(CorruptObject):
            repo.checkout(live, forged)
        assert live == {"kept": 1}
        assert any("key order names" in p for p in repo.fsck().problems)


def test_an_order_on_a_missing_map_is_named_missing_by_fsck(tmp_path: Path) -> None:
    repo = statevcs.Repo.init(tmp_path / "r")
    state = {f"k{i:02d}": "v" * 70 for i in range(30, 0, -1)}  # a stored map, in an order
    repo.commit(statevcs.Snapshot(kind="k", state=state), message="m")
    stored = snapshot_object(repo)
    assert isinstance(stored.state, bytes) and stored.state_order
    assert repo.store.delete_many([stored.state]) == 1  # what a damaged disk leaves
    repo.close()
    with statevcs.Repo.open(tmp_path / "r") as reopened:
        with pytest.raises(MissingObject):
            reopened.show("main")
        problems = reopened.fsck().problems
        assert any(to_hex(stored.state) in p and "missing" in p for p in problems), problems
        assert not any("key order" in p for p in problems)  # the walk names it once


def test_a_commit_that_merges_keeps_another_writers_reorder(tmp_path: Path) -> None:
    with statevcs.Repo.init(tmp_path / "r") as first:
        first.commit({"a": 1, "b": 2, "messages": []}, message="base")
    with statevcs.Repo.open(tmp_path / "r") as mine, statevcs.Repo.open(tmp_path / "r") as theirs:
        live: dict[str, Any] = {}
        mine.checkout(live, "main")
        other: dict[str, Any] = {}
        theirs.checkout(other, "main")
        other.clear()
        other.update({"messages": [], "b": 2, "a": 1})  # a reorder, "messages" now first
        theirs.commit(other, message="reordered")
        live["c"] = 3
        merged = mine.commit(live, message="c", on_conflict="merge")
        assert len(merged.parents) == 2
        assert list(live.items()) == [("messages", []), ("b", 2), ("a", 1), ("c", 3)]
        assert list(checked_out(mine, merged.id).items()) == list(live.items())


def test_fsck_checks_every_order_over_a_shared_map_once_read(repo: statevcs.Repo) -> None:
    # Orders over one stored map, met before and after the walk reads it: fsck names the
    # snapshot whose order does not cover the map, and no other.
    state = {f"k{i:02d}": "v" * 70 for i in range(20, 0, -1)}
    repo.commit(statevcs.Snapshot(kind="k", state=state), message="ordered")
    stored = snapshot_object(repo)
    assert isinstance(stored.state, bytes)
    good = _forge(repo, stored, tuple(range(19, -1, -1)))
    repo.branch("good", good)
    bad = _forge(repo, stored, (1, 0))
    repo.branch("bad", bad)
    repo.delete_branch("forged")
    repo.commit(statevcs.Snapshot(kind="k", state={"b": 1, "a": 2}), message="inline order")
    problems = list(repo.fsck().problems)
    assert problems == [
        f"object {repo.get_commit(bad).snapshot_id} is corrupt: its state key order names 2 "
        "keys where its state map holds 20"
    ]


@pytest.mark.parametrize(
    ("strategy", "expected"), [(None, "ours"), ("ours", "ours"), ("theirs", "theirs")]
)
def test_when_both_sides_reorder_the_strategy_picks_the_order(strategy: Any, expected: str) -> None:
    base = statevcs.Snapshot(kind="k", state={"a": 1, "b": 2, "c": 3})
    ours = statevcs.Snapshot(kind="k", state={"c": 3, "b": 2, "a": 1})
    theirs = statevcs.Snapshot(kind="k", state={"b": 2, "a": 1, "c": 3, "d": 4})
    merged = merge_snapshots(base, ours, theirs, strategy=strategy).snapshot
    assert list(merged.state) == (
        ["c", "b", "a", "d"] if expected == "ours" else ["b", "a", "c", "d"]
    )


# --- the dict adapter ---------------------------------------------------------------------


def test_a_dict_whose_messages_key_is_transient_commits(repo: statevcs.Repo) -> None:
    # Before 59cd7ef this committed (messages are always captured); then it raised a bare
    # ValueError ("'messages' is not in list") when "messages" was not the first key.
    agent: dict[str, Any] = {"a": 1, "messages": [{"role": "user"}], "b": 2}
    statevcs.transient(agent, "messages")
    repo.commit(agent, message="m")
    assert repo.show("main").messages == [{"role": "user"}]
    live: dict[str, Any] = {"messages": ["live"]}
    statevcs.transient(live, "messages")
    repo.checkout(live, "main")
    assert list(live.items()) == [("a", 1), ("messages", ["live"]), ("b", 2)]


def test_a_state_key_deleted_with_git_still_checks_out_into_a_dict(tmp_path: Path) -> None:
    # "messages" stood after two keys; a commit made with git drops one of them (extras.json,
    # with the place, untouched): the place is past the state's end, "messages" goes last.
    from statevcs.mirror.git import export_git, import_git

    repo = statevcs.Repo.init(tmp_path / "r")
    repo.commit({"a": 1, "b": 2, "messages": [{"role": "user"}]}, message="m")
    mirror = tmp_path / "mirror"
    export_git(repo, mirror)
    (mirror / "state.json").write_text(json.dumps({"a": 1}, indent=2))
    git("-C", mirror, "add", "state.json")
    git("-C", mirror, "-c", "user.name=G", "-c", "user.email=g@x", "commit", "-q", "-m", "no b")
    import_git(repo, mirror)
    assert repo.show("main").extras == {MESSAGES_AT: 2}
    assert list(checked_out(repo, "main").items()) == [("a", 1), ("messages", [{"role": "user"}])]


@pytest.mark.parametrize("place", [-1, "1", True, 1.0, None])
def test_a_place_for_messages_that_is_no_count_is_refused_and_nothing_changes(
    place: Any,
) -> None:
    repo = statevcs.Repo.init("memory://")
    repo.commit(
        statevcs.Snapshot(kind="dict", state={"a": 1}, extras={MESSAGES_AT: place}), message="m"
    )
    live: dict[str, Any] = {"kept": 1}
    with pytest.raises(CorruptObject, match="should be a position"):
        repo.checkout(live, "main")
    assert live == {"kept": 1}


# --- experiments --------------------------------------------------------------------------


def test_compare_names_a_turn_whose_state_differs_only_in_order(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from statevcs.cli import cli
    from statevcs.experiments import compare

    def reply(text: str) -> dict[str, Any]:
        return {"role": "assistant", "content": [{"text": text}]}

    with statevcs.Repo.init(tmp_path / "r") as repo:
        question = {"role": "user", "content": [{"text": "Q0"}]}
        repo.commit({"messages": [question], "plan": "a", "step": 0}, message="asked")
        repo.branch("other", "main")
        # The same values, "step" first on the other run (whose answer differs too).
        repo.commit({"messages": [question, reply("A")], "plan": "a", "step": 0}, message="a")
        repo.commit(
            {"step": 0, "messages": [question, reply("B")], "plan": "a"},
            message="b",
            branch="other",
        )
        result = compare(repo, "main", "other")
        first = result.turns[0]
        assert (first.status, first.state) == ("diverged", ())
        assert first.order == (OrderChange("state", ("plan", "step"), ("step", "plan")),)
        assert result.to_dict()["turns"][0]["order"] == [
            {"field": "state", "a": ["plan", "step"], "b": ["step", "plan"]}
        ]
    shown = CliRunner().invoke(cli, ["-C", str(tmp_path / "r"), "compare", "main", "other"])
    assert shown.exit_code == 0, shown.output
    assert "state key order differs" in shown.output


@pytest.mark.parametrize("messages", [None, "absent", []])
def test_the_dict_adapters_own_extras_record_no_order(messages: Any) -> None:
    # {"a": 1, "messages": None}: a sorted state, so a version-2 snapshot; its extras (where
    # "messages" stood, and that it was None) were kept unsorted, a key order of their own.
    repo = statevcs.Repo.init("memory://")
    agent: dict[str, Any] = {"a": 1} if messages == "absent" else {"a": 1, "messages": messages}
    repo.commit(agent, message="m")
    assert snapshot_object(repo).version == PACKED_SNAPSHOT_FORMAT
    out: dict[str, Any] = {}
    repo.checkout(out, "main")
    assert list(out.items()) == list(agent.items())
