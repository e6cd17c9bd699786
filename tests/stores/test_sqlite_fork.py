"""SQLite repositories in forked and spawned children keep every commit.

A forked child inherits its parent's SQLite lock records: before the store let go of its
connection at a fork, the parent closing its handle checkpointed and deleted the write-ahead
log under the child, and the child's acknowledged commits were lost (on the parent's handle
and on one the child opened itself).
"""

from __future__ import annotations

import multiprocessing
import threading
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest

from statevcs import Repo

ANSWER_TIMEOUT = 60.0  # seconds: a spawned child imports statevcs on a loaded machine first

_parents_handle: Repo | None = None  # set before a fork: the child inherits it


def _child(
    folder: str, use_parents_handle: bool, opened: Event, go: Event, answers: Connection
) -> None:
    """Read, wait for the parent to close its handle, then commit three times (from a new
    thread: no lock is left held by the fork) and send the log and the state at the tip."""
    repo = _parents_handle if use_parents_handle else Repo.open(folder)
    assert repo is not None
    repo.log()
    opened.set()
    go.wait(ANSWER_TIMEOUT)

    def commit() -> None:
        for n in range(3):
            repo.commit({"by": "child", "n": n}, message=f"child {n}")

    worker = threading.Thread(target=commit)
    worker.start()
    worker.join(ANSWER_TIMEOUT)
    answers.send(([c.message for c in repo.log()], repo.show("main").state))
    # No close: a worker may end without one (and closing may checkpoint what a lost log held).


@pytest.mark.parametrize(
    ("method", "use_parents_handle"),
    [("fork", True), ("fork", False), ("spawn", False)],
    ids=["fork-parents-handle", "fork-new-handle", "spawn-new-handle"],
)
def test_a_childs_commits_survive_the_parent_closing_its_handle(
    tmp_path: Path, method: str, use_parents_handle: bool
) -> None:
    global _parents_handle
    folder = str(tmp_path / "repo")
    repo = _parents_handle = Repo.init(folder)
    repo.commit({"by": "parent"}, message="parent")
    context = multiprocessing.get_context(method)
    opened, go = context.Event(), context.Event()
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(folder, use_parents_handle, opened, go, sending))
    try:
        child.start()
        sending.close()
        assert opened.wait(ANSWER_TIMEOUT), f"the {method} child hung opening the repository"
        repo.close()  # the parent's last connection: SQLite checkpoints here if it may
        go.set()
        if not receiving.poll(ANSWER_TIMEOUT):
            pytest.fail(f"the {method} child hung: no answer in {ANSWER_TIMEOUT:.0f} s")
        answer: Any = receiving.recv()
        child.join(ANSWER_TIMEOUT)
        assert child.exitcode == 0
    finally:
        _parents_handle = None
        if child.is_alive():
            child.kill()
            child.join()
        receiving.close()
    expected = ["child 2", "child 1", "child 0", "parent"]
    assert answer == (expected, {"by": "child", "n": 2})
    with Repo.open(folder) as reopened:  # what the child was told it committed is there
        assert [c.message for c in reopened.log()] == expected
        assert reopened.show("main").state == {"by": "child", "n": 2}
        assert reopened.fsck().ok


def _commit_in(folder: str, answers: Connection) -> None:
    with Repo.open(folder) as repo:
        repo.commit({"by": "child"}, message="child", branch="child")
        answers.send(repo.show("child").state)


def test_the_parent_keeps_working_while_and_after_a_forked_child_commits(tmp_path: Path) -> None:
    method = "fork"  # a spawned child shares nothing with the parent's handle
    folder = str(tmp_path / "repo")
    with Repo.init(folder) as repo:
        repo.commit({"by": "parent"}, message="parent")
        context = multiprocessing.get_context(method)
        receiving, sending = context.Pipe(duplex=False)
        child = context.Process(target=_commit_in, args=(folder, sending))
        child.start()
        sending.close()
        repo.commit({"by": "parent", "while": "child runs"}, message="parent again")
        try:
            assert receiving.poll(ANSWER_TIMEOUT), f"the {method} child hung"
            assert receiving.recv()["by"] == "child"
            child.join(ANSWER_TIMEOUT)
            assert child.exitcode == 0
        finally:
            if child.is_alive():
                child.kill()
                child.join()
            receiving.close()
        assert [c.message for c in repo.log()] == ["parent again", "parent"]
        assert [c.message for c in repo.log("child")] == ["child"]
        assert repo.show("child").state == {"by": "child"}
        assert repo.fsck().ok
