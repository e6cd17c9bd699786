"""An adversarial user against the integrity promises of issue 8.

Each test is a minimal reproducer named after the behaviour the documentation promises
(docs/concepts.md: "HEAD belongs to a handle", "The conflict rule", "Garbage collection next to
live writers"), or pins a guarantee nothing else tested yet.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
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


def test_merging_on_conflict_keeps_messages_the_other_writer_dropped_dropped(
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


def test_merging_on_conflict_keeps_messages_this_writer_dropped_dropped(tmp_path: Path) -> None:
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


_ = dump_tables  # used by the tests below
