"""An adversarial user against the integrity promises of issue 8.

Each test is a minimal reproducer named after the behaviour the documentation promises
(docs/concepts.md: "HEAD belongs to a handle", "The conflict rule", "Garbage collection next to
live writers"), or pins a guarantee nothing else tested yet.
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
import time
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from statevcs import Repo, Snapshot
from statevcs.errors import MergeConflict, RefConflict, StateVCSError

from .harness import dump_tables

DB = "statevcs.sqlite3"


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def _conversation(n: int, tag: str = "m") -> list[dict[str, Any]]:
    # Long enough that the messages form closed prolly leaves, not only the open tail.
    return [_message(f"{tag}{i}") for i in range(n)]


def _texts(snapshot: Snapshot) -> list[str]:
    return [m["content"][0]["text"] for m in snapshot.messages]


def _python(code: str) -> None:
    """Run ``code`` in a fresh interpreter (another process holding its own handle)."""
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=120)


def _assert_whole(folder: Path) -> None:
    """fsck is clean and a FRESH handle restores every commit of every branch and tag."""
    with Repo.open(folder) as fresh:
        report = fresh.fsck()
        assert report.ok, report.problems
        for name in [*fresh.branches(), *fresh.tags()]:
            for commit in fresh.log(name, all_parents=True):
                fresh.show(commit.id)


@pytest.fixture
def two_handles(repo_path: Path) -> tuple[Repo, Repo]:
    """Handles A and B on one SQLite repository whose ``main`` is C0 (``x=1``)."""
    return Repo.open(repo_path), Repo.open(repo_path)


# --- gc against a long-lived object's cached conversation ------------------------------------


def test_an_object_whose_branch_was_deleted_and_collected_commits_a_whole_snapshot(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "repo"
    repo = Repo.init(folder)
    repo.commit({"messages": [], "x": 0}, message="C0")
    draft = Snapshot(messages=_conversation(300))
    repo.commit(draft, branch="draft", message="draft")
    repo.delete_branch("draft")
    repo.gc("0")
    draft.state["kept"] = True
    repo.commit(draft, branch="keep", message="keep the draft after all")
    repo.close()
    _assert_whole(folder)


def test_a_collection_in_another_process_cannot_leave_a_later_commit_incomplete(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "repo"
    repo = Repo.init(folder)
    repo.commit({"messages": [], "x": 0}, message="C0")
    draft = Snapshot(messages=_conversation(300))
    repo.commit(draft, branch="draft", message="draft")
    _python(
        "from statevcs import Repo\n"
        f"r = Repo.open({str(folder)!r}); r.delete_branch('draft'); r.gc('0')\n"
    )
    repo.tag("seen", "main")  # any ref move makes this handle learn about the collection
    draft.state["kept"] = True
    repo.commit(draft, branch="keep", message="keep the draft after all")
    repo.close()
    _assert_whole(folder)


# --- the conflict rule: a stale object never overwrites another writer's work ----------------


def test_a_stale_dict_cannot_revert_another_handles_commit_after_switch(
    two_handles: tuple[Repo, Repo], repo_path: Path
) -> None:
    a, b = two_handles
    stale: dict[str, Any] = {}
    a.checkout(stale, "main")
    theirs: dict[str, Any] = {}
    b.checkout(theirs, "main")
    theirs["x"] = 2
    b.commit(theirs, message="C1 by B")
    a.switch("main")  # the same branch: nothing about the stale dict changed
    stale["y"] = 1
    with pytest.raises(RefConflict):
        a.commit(stale, message="stale A")
    with Repo.open(repo_path) as fresh:
        assert fresh.show("main").state == {"x": 2}


def test_a_stale_dict_cannot_revert_another_handles_commit_after_reloading_another_dict(
    two_handles: tuple[Repo, Repo], repo_path: Path
) -> None:
    a, b = two_handles
    stale: dict[str, Any] = {}
    a.checkout(stale, "main")
    theirs: dict[str, Any] = {}
    b.checkout(theirs, "main")
    theirs["x"] = 2
    b.commit(theirs, message="C1 by B")
    a.checkout({}, "main")  # A reloads the tip into a second dict; ``stale`` still holds C0
    stale["y"] = 1
    with pytest.raises(RefConflict):
        a.commit(stale, message="stale A")
    with Repo.open(repo_path) as fresh:
        assert fresh.show("main").state == {"x": 2}


def test_a_snapshot_checked_out_by_one_handle_cannot_revert_work_through_another(
    two_handles: tuple[Repo, Repo], repo_path: Path
) -> None:
    a, b = two_handles
    stale = Snapshot()
    a.checkout(stale, "main")
    theirs = Snapshot()
    b.checkout(theirs, "main")
    theirs.state["x"] = 2
    b.commit(theirs, message="C1 by B")
    stale.state["y"] = 1
    with Repo.open(repo_path) as c, pytest.raises(RefConflict):
        c.commit(stale, message="stale object through a third handle")
    with Repo.open(repo_path) as fresh:
        assert fresh.show("main").state == {"x": 2}


def test_merging_on_conflict_does_not_restore_messages_the_other_writer_dropped(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "repo"
    with Repo.init(folder) as repo:
        repo.commit(Snapshot(messages=[_message("1"), _message("secret")]), message="C0")
    a, b = Repo.open(folder), Repo.open(folder)
    ours, theirs = Snapshot(), Snapshot()
    a.checkout(ours, "main")
    b.checkout(theirs, "main")
    theirs.messages.pop()
    b.commit(theirs, message="B drops the last message")
    ours.state["y"] = 1  # A never touches the conversation
    # Refusing with MergeConflict is allowed; silently undoing B's change is not.
    with contextlib.suppress(MergeConflict):
        a.commit(ours, message="A sets y", on_conflict="merge")
    with Repo.open(folder) as fresh:
        assert _texts(fresh.show("main")) == ["1"]


def test_merging_on_conflict_does_not_restore_messages_this_writer_dropped(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    with Repo.init(folder) as repo:
        repo.commit(Snapshot(messages=[_message("1"), _message("undo me")]), message="C0")
    a, b = Repo.open(folder), Repo.open(folder)
    ours, theirs = Snapshot(), Snapshot()
    a.checkout(ours, "main")
    b.checkout(theirs, "main")
    theirs.state["y"] = 1
    b.commit(theirs, message="B sets y")
    ours.messages.pop()
    with contextlib.suppress(MergeConflict):
        a.commit(ours, message="A undoes the last turn", on_conflict="merge")
    with Repo.open(folder) as fresh:
        assert _texts(fresh.show("main")) == ["1"]


# --- plumbing: a ref may only name what the store holds ----------------------------------


def test_refs_set_refuses_a_commit_that_was_encoded_but_never_stored(small_repo: Repo) -> None:
    from statevcs.objects import CommitObject

    head = small_repo.refs.get("refs/heads/main")
    assert head is not None
    commit = CommitObject(
        snapshot=small_repo.objects.load_commit(head).snapshot,
        parents=(head,),
        author="a",
        timestamp_us=1,
        message="encoded, never put",
        metadata={},
    )
    commit_id, _encoded = small_repo.objects.encode_commit(commit)
    with pytest.raises(StateVCSError):
        small_repo.refs.set("refs/heads/ghost", commit_id, expected=None)
    assert small_repo.fsck().ok
    assert small_repo.path is not None
    _assert_whole(small_repo.path)


# --- HEAD: every move of the stored HEAD is in its reflog ------------------------------------


def test_a_commit_racing_a_switch_to_its_branch_is_in_heads_reflog(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    with Repo.init(folder) as repo:
        repo.commit({"messages": [], "x": 0}, message="C0")
        repo.switch("dev", create=True)
    a, b = Repo.open(folder), Repo.open(folder)
    update = a.refs.update

    def switch_first(*args: Any, **kwargs: Any) -> None:
        # Another process makes ``main`` the default branch while A's commit is on its way.
        if not switched:
            switched.append(True)
            b.switch("main")
        update(*args, **kwargs)

    switched: list[bool] = []
    a.refs.update = switch_first  # type: ignore[method-assign]
    commit = a.commit({"messages": [], "x": 5}, branch="main", message="A on main")
    with Repo.open(folder) as fresh:
        assert fresh.default_branch == "main"
        assert fresh.resolve("HEAD") == commit.id
        assert fresh.reflog("HEAD")[0].new == commit.id
        assert fresh.resolve("HEAD@{0}") == commit.id


def _head_log_chains(repo: Repo) -> None:
    """HEAD's reflog is one unbroken chain ending at HEAD's value: no move went unlogged."""
    log = repo.reflog("HEAD")
    assert log, "HEAD's reflog is empty"
    assert log[0].new == repo.resolve("HEAD")
    for newer, older in itertools.pairwise(log):
        assert newer.old == older.new, (newer, older)


def test_no_operation_but_switch_moves_the_stored_head_and_every_move_is_logged(
    tmp_path: Path,
) -> None:
    pytest.importorskip("dulwich")
    from statevcs.mirror.git import export_git, import_git

    folder = tmp_path / "repo"
    repo = Repo.init(folder)
    repo.commit({"messages": [], "x": 0}, message="C0")
    head_before = repo.refs.default_branch()
    steps: list[tuple[str, Any]] = [
        ("dict on b", lambda: repo.commit({"messages": [], "x": 1}, branch="b")),
        ("snapshot on c", lambda: repo.commit(Snapshot(state={"y": 1}), branch="c")),
        ("checkout b", lambda: repo.checkout({}, "b")),
        ("checkout detached", lambda: repo.checkout({}, "main~0")),
        ("branch", lambda: repo.branch("d", "b")),
        ("tag", lambda: repo.tag("t", "c")),
        ("reset b", lambda: repo.reset("b", "main")),
        ("merge into main", lambda: repo.merge("main", "c")),
        ("reset main", lambda: repo.reset("main", "main~1")),
        ("commit main", lambda: repo.commit(Snapshot(state={"z": 1}), branch="main")),
        ("delete d", lambda: repo.delete_branch("d")),
        ("gc", lambda: repo.gc("0", expire_reflog="1w")),
        ("export", lambda: export_git(repo, tmp_path / "mirror.git")),
        ("import", lambda: import_git(repo, tmp_path / "mirror.git")),
        (
            "other process",
            lambda: _python(
                "from statevcs import Repo, Snapshot\n"
                f"r = Repo.open({str(folder)!r})\n"
                "r.commit({'messages': [], 'q': 1}, branch='e')\n"
                "r.commit(Snapshot(state={'q': 2}), branch='main')\n"
            ),
        ),
    ]
    for name, step in steps:
        step()
        with Repo.open(folder) as fresh:
            assert fresh.refs.default_branch() == head_before, name
            _head_log_chains(fresh)
    repo.close()
    _assert_whole(folder)


def test_a_fresh_dict_commits_to_the_branch_it_names_after_another_dict_went_elsewhere() -> None:
    repo = Repo.init("memory://")
    repo.commit({"messages": [], "x": 0}, message="C0")
    repo.commit({"messages": [], "q": 1}, branch="e", message="one dict on e")
    # A new dict, never checked out, and nobody else writes: it commits on main's tip.
    commit = repo.commit({"messages": [], "q": 2}, branch="main", message="another dict on main")
    assert repo.resolve("main") == commit.id


# --- merges write all or nothing ---------------------------------------------------------------


def test_a_conflicting_merge_on_commit_writes_nothing_at_all(
    two_handles: tuple[Repo, Repo], repo_path: Path
) -> None:
    a, b = two_handles
    ours, theirs = Snapshot(), Snapshot()
    a.checkout(ours, "main")
    b.checkout(theirs, "main")
    theirs.state["x"] = 2
    b.commit(theirs, message="B sets x")
    before = dump_tables(repo_path / DB)
    ours.state["x"] = 3
    with pytest.raises(MergeConflict):
        a.commit(ours, message="A sets x", on_conflict="merge")
    assert dump_tables(repo_path / DB) == before
    assert a.synced_commit(ours) != b.synced_commit(theirs)  # still stale: no silent reload
    _assert_whole(repo_path)


def test_a_merge_on_commit_redone_when_the_branch_moves_again_keeps_both_sides(
    two_handles: tuple[Repo, Repo], repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import statevcs.merge

    a, b = two_handles
    ours, theirs = Snapshot(), Snapshot()
    a.checkout(ours, "main")
    b.checkout(theirs, "main")
    theirs.state["x"] = 2
    b.commit(theirs, message="B sets x")
    real = statevcs.merge.merge_snapshots

    def b_commits_again(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        if theirs.state.get("z") is None:
            theirs.state["z"] = 3  # B moves the branch again while A is merging
            b.commit(theirs, message="B sets z")
        return result

    monkeypatch.setattr(statevcs.merge, "merge_snapshots", b_commits_again)
    ours.state["y"] = 1
    merged = a.commit(ours, message="A sets y", on_conflict="merge")
    with Repo.open(repo_path) as fresh:
        assert fresh.resolve("main") == merged.id
        assert fresh.show("main").state == {"x": 2, "y": 1, "z": 3}
    assert ours.state == {"x": 2, "y": 1, "z": 3}
    _assert_whole(repo_path)


def test_a_merge_on_commit_that_conflicts_with_a_racing_commit_writes_nothing(
    two_handles: tuple[Repo, Repo], repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import statevcs.merge

    a, b = two_handles
    ours, theirs = Snapshot(), Snapshot()
    a.checkout(ours, "main")
    b.checkout(theirs, "main")
    theirs.state["x"] = 2
    b.commit(theirs, message="B sets x")
    real = statevcs.merge.merge_snapshots
    before: list[dict[str, list[tuple[object, ...]]]] = []

    def b_touches_our_key(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        if not before:
            theirs.state["y"] = "B's"
            b.commit(theirs, message="B sets y too")
            before.append(dump_tables(repo_path / DB))
        return result

    monkeypatch.setattr(statevcs.merge, "merge_snapshots", b_touches_our_key)
    ours.state["y"] = "A's"
    with pytest.raises(MergeConflict):
        a.commit(ours, message="A sets y", on_conflict="merge")
    assert dump_tables(repo_path / DB) == before[0]
    with Repo.open(repo_path) as fresh:
        assert fresh.show("main").state == {"x": 2, "y": "B's"}


def test_repo_merge_refuses_when_the_branch_moves_during_the_merge(
    two_handles: tuple[Repo, Repo], repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import statevcs.repo

    a, b = two_handles
    side = Snapshot()
    a.checkout(side, "main")
    side.state["y"] = 1
    a.commit(side, branch="side", message="y on side")
    moved = Snapshot()
    b.checkout(moved, "main")
    moved.state["x"] = 2
    b.commit(moved, message="x on main")
    real = statevcs.repo.merge_snapshots

    def b_commits(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        if "z" not in moved.state:
            moved.state["z"] = 3
            b.commit(moved, message="z on main, during the merge")
        return result

    monkeypatch.setattr(statevcs.repo, "merge_snapshots", b_commits)
    with pytest.raises(RefConflict):
        a.merge("main", "side")
    with Repo.open(repo_path) as fresh:
        assert fresh.show("main").state == {"x": 2, "z": 3}
    _assert_whole(repo_path)


# --- crash points: nothing half-written is reachable ------------------------------------------


def test_a_crash_between_storing_objects_and_moving_the_ref_changes_nothing(
    repo_path: Path,
) -> None:
    repo = Repo.open(repo_path)
    snap = Snapshot(messages=_conversation(200), state={"big": "v" * 5000})
    before = dump_tables(repo_path / DB)
    store: Any = repo.store
    insert = store._insert

    def crash_after_insert(db: Any, objects: Any) -> int:
        insert(db, objects)
        raise OSError("power cut after the objects were written")

    store._insert = crash_after_insert
    with pytest.raises(OSError):
        repo.commit(snap, message="lost")
    assert dump_tables(repo_path / DB) == before
    del store._insert
    # The handle must not believe the rolled-back objects are stored.
    snap.state["more"] = 1
    repo.commit(snap, message="after the crash")
    repo.close()
    _assert_whole(repo_path)


def test_a_failing_reflog_write_rolls_back_the_objects_and_the_ref(repo_path: Path) -> None:
    import sqlite3

    repo = Repo.open(repo_path)
    before = dump_tables(repo_path / DB)
    db = sqlite3.connect(repo_path / DB)
    db.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON reflog BEGIN SELECT RAISE(ABORT, 'disk full'); END"
    )
    db.commit()
    snap = Snapshot(messages=_conversation(50))
    with pytest.raises(StateVCSError):
        repo.commit(snap, message="lost")
    assert dump_tables(repo_path / DB) == before
    db.execute("DROP TRIGGER boom")
    db.commit()
    db.close()
    repo.commit(snap, message="after the disk was freed")
    repo.close()
    _assert_whole(repo_path)


def test_a_gc_that_dies_between_delete_batches_leaves_every_branch_whole(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "repo"
    repo = Repo.init(folder)
    repo.commit({"messages": [], "x": 0}, message="C0")
    # Enough garbage for several delete batches: about 1,800 objects once packed (format 2
    # keeps several messages in one leaf object).
    for i in range(3):
        repo.commit(Snapshot(messages=_conversation(4_800, f"b{i}-")), branch=f"b{i}")
    keep = Snapshot(messages=_conversation(300, "keep"))
    repo.commit(keep, branch="keep")
    for i in range(3):
        repo.delete_branch(f"b{i}")
    store: Any = repo.store
    delete = store.delete_many
    calls: list[int] = []

    def die_on_second_batch(ids: Any, **kwargs: Any) -> int:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process is killed mid-gc
        return int(delete(ids, **kwargs))

    store.delete_many = die_on_second_batch
    with pytest.raises(KeyboardInterrupt):
        repo.gc("0")
    assert len(calls) == 2
    del store.delete_many
    _assert_whole(folder)
    keep.messages.append(_message("after the interrupted gc"))
    repo.commit(keep, message="go on")
    repo.gc("0")
    repo.close()
    _assert_whole(folder)


# --- gc in other processes against live writers ------------------------------------------------

_GC_LOOP = """
import os, sys
from pathlib import Path
from statevcs import Repo
folder, stop, progress = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
with Repo.open(folder) as repo:
    sweeps = 0
    while not stop.exists():
        repo.gc("0", expire_reflog="0")
        sweeps += 1
        progress.with_suffix(".tmp").write_text(str(sweeps))
        os.replace(progress.with_suffix(".tmp"), progress)
print(sweeps)
"""


def test_gc_and_reflog_expiry_looping_in_another_process_never_break_live_writers(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "repo"
    with Repo.init(folder) as repo:
        repo.commit({"messages": [], "x": 0}, message="C0")
    stop, progress = tmp_path / "stop", tmp_path / "sweeps"
    collector = subprocess.Popen(
        [sys.executable, "-c", _GC_LOOP, str(folder), str(stop), str(progress)],
        stdout=subprocess.PIPE,
        text=True,
    )
    seen = [0]

    def after_a_sweep() -> None:
        # Each step runs after at least one more complete sweep (mark, expire, delete).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = int(progress.read_text()) if progress.exists() else 0
            if done > seen[0]:
                seen[0] = done
                return
            time.sleep(0.005)
        raise AssertionError("the collector made no progress")

    try:
        a, b = Repo.open(folder), Repo.open(folder)
        agent = Snapshot(messages=_conversation(150, "agent"))  # lives across every sweep
        a.commit(agent, branch="agent", message="start")
        other = Snapshot()
        a.checkout(other, "main")
        for i in range(30):
            after_a_sweep()
            agent.messages.append(_message(f"turn {i}"))
            agent.state["turn"] = i
            a.commit(agent, message=f"turn {i}")
            if i % 5 == 0:
                # Another handle moves main; A's stale object merges after the sweeps.
                theirs = Snapshot()
                b.checkout(theirs, "main")
                theirs.state[f"b{i}"] = i
                b.commit(theirs, message=f"B {i}")
                after_a_sweep()
                other.state[f"a{i}"] = i
                a.commit(other, message=f"A {i}", on_conflict="merge")
            if i % 7 == 0:
                a.branch(f"fork{i}", "agent")
                b.reset("agent", "agent~1")  # history only the reflog kept, now expiring
                after_a_sweep()
                a.checkout(agent, "agent")
    finally:
        stop.touch()
        out, _ = collector.communicate(timeout=120)
    assert collector.returncode == 0
    assert int(out.strip()) >= 30
    a.close()
    b.close()
    _assert_whole(folder)
    with Repo.open(folder) as fresh:
        assert _texts(fresh.show("agent"))[-1] == "turn 29"
        keys = {f"{w}{i}" for w in "ab" for i in range(0, 30, 5)}
        assert keys <= set(fresh.show("main").state)


def test_plumbing_objects_collected_before_their_ref_is_set_are_refused(
    repo_path: Path,
) -> None:
    from datetime import datetime

    repo = Repo.open(repo_path)
    head = repo.refs.get("refs/heads/main")
    assert head is not None
    snapshot_id = repo.objects.write_snapshot(
        Snapshot(messages=_conversation(120), state={"blob": "b" * 4000})
    )
    commit_id = repo.objects.write_commit(
        snapshot_id,
        [head],
        message="plumbing",
        author="tool <t@x>",
        timestamp=datetime.now(UTC),
    )
    _python(f"from statevcs import Repo\nRepo.open({str(repo_path)!r}).gc('0')\n")
    with pytest.raises(StateVCSError):
        repo.refs.set("refs/heads/main", commit_id, expected=head)
    assert repo.refs.get("refs/heads/main") == head
    _assert_whole(repo_path)
    # Written again, the same commit can be published.
    assert (
        repo.objects.write_snapshot(
            Snapshot(messages=_conversation(120), state={"blob": "b" * 4000})
        )
        == snapshot_id
    )
    again = repo.objects.write_commit(
        snapshot_id,
        [head],
        message="plumbing",
        author="tool <t@x>",
        timestamp=datetime.now(UTC),
    )
    repo.refs.set("refs/heads/main", again, expected=head)
    repo.close()
    _assert_whole(repo_path)


# --- the conflict rule holds on every spelling and path ------------------------------------------


def _stale_on_feat(folder: Path) -> tuple[Repo, Repo, Snapshot]:
    with Repo.open(folder) as repo:
        repo.branch("feat", "main")
    a, b = Repo.open(folder), Repo.open(folder)
    stale, theirs = Snapshot(), Snapshot()
    a.checkout(stale, "feat")
    b.checkout(theirs, "feat")
    theirs.state["x"] = 2
    b.commit(theirs, message="B on feat")
    stale.state["y"] = 1
    return a, b, stale


@pytest.mark.parametrize(
    "how",
    [
        "branch=feat",
        "branch=refs/heads/feat",
        "after A reloads another object",
        "after A switches to feat",
        "after A force-moves feat to itself",
        "after B deletes feat",
        "after B deletes feat, merging",
    ],
)
def test_a_stale_object_never_overwrites_the_branch_it_synced_with(
    repo_path: Path, how: str
) -> None:
    a, b, stale = _stale_on_feat(repo_path)
    kwargs: dict[str, Any] = {}
    if how.startswith("branch="):
        kwargs["branch"] = how.removeprefix("branch=")
    elif how == "after A reloads another object":
        a.checkout(Snapshot(), "feat")
    elif how == "after A switches to feat":
        a.switch("feat")
    elif how == "after A force-moves feat to itself":
        a.branch("feat", "feat", force=True)
    else:
        b.delete_branch("feat")
        if how.endswith("merging"):
            kwargs["on_conflict"] = "merge"
    before = dump_tables(repo_path / DB)
    with pytest.raises(RefConflict):
        a.commit(stale, message="stale", **kwargs)
    assert dump_tables(repo_path / DB) == before


# --- commit fields: bad input is a StateVCSError, and what commits exports validly --------------


def test_a_timestamp_whose_zone_gives_an_impossible_offset_is_a_statevcs_error() -> None:
    from datetime import datetime, timedelta, tzinfo

    class ThirtyHours(tzinfo):
        def utcoffset(self, dt: datetime | None) -> timedelta:
            return timedelta(hours=30)

        def dst(self, dt: datetime | None) -> timedelta:
            return timedelta(0)

    repo = Repo.init("memory://")
    with pytest.raises(StateVCSError):
        repo.commit({"messages": []}, timestamp=datetime(2020, 1, 1, tzinfo=ThirtyHours()))
    assert repo.branches() == {}


def test_a_commit_dated_before_1970_exports_a_commit_git_accepts(tmp_path: Path) -> None:
    import shutil
    from datetime import datetime

    if shutil.which("git") is None:
        pytest.skip("the git CLI is not installed; it is the judge of a valid git commit")
    pytest.importorskip("dulwich")
    from statevcs.mirror.git import export_git

    repo = Repo.init(tmp_path / "repo")
    moment = datetime(1969, 12, 31, tzinfo=UTC)
    try:
        repo.commit({"messages": []}, message="old", timestamp=moment)
    except StateVCSError:
        return  # refusing the date at commit time keeps the promise too
    export_git(repo, tmp_path / "mirror.git")
    fsck = subprocess.run(
        ["git", "-C", str(tmp_path / "mirror.git"), "fsck", "--strict"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert fsck.returncode == 0, fsck.stderr
