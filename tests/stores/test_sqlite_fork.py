"""SQLite repositories in forked and spawned children keep every commit.

A forked child inherits its parent's SQLite lock records: before the store let go of its
connection at a fork, the parent closing its handle checkpointed and deleted the write-ahead
log under the child, and the child's acknowledged commits were lost (on the parent's handle
and on one the child opened itself).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest

from statevcs import Repo, Snapshot
from statevcs.adapters import DictAdapter

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


class _Slow(dict[str, Any]):
    """A dict whose adapter takes a while to capture: a commit in progress at a fork."""


class _SlowAdapter(DictAdapter):
    def __init__(self, started: threading.Event) -> None:
        self.started = started

    def capture(self, obj: dict[str, Any]) -> Snapshot:
        self.started.set()
        time.sleep(0.3)
        return super().capture(obj)


def _commit_on_parents_handle(answers: Connection) -> None:
    repo = _parents_handle
    assert repo is not None
    repo.commit({"by": "child"}, message="child", branch="child")
    answers.send(([c.message for c in repo.log("main")], repo.show("child").state))


@pytest.mark.parametrize("url", ["sqlite", "memory://"])
def test_a_fork_while_another_thread_commits_leaves_the_child_a_working_handle(
    tmp_path: Path, url: str
) -> None:
    # The committing thread held the handle's lock at the fork; in the child that thread does
    # not exist, so the lock stayed held and the child's first commit waited forever.
    global _parents_handle
    repo = _parents_handle = Repo.init(str(tmp_path / "repo") if url == "sqlite" else url)
    started = threading.Event()
    repo.adapters.register(_Slow, _SlowAdapter(started))
    repo.commit({"by": "parent"}, message="parent")
    committer = threading.Thread(target=repo.commit, args=(_Slow(by="thread"),), daemon=True)
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_commit_on_parents_handle, args=(sending,))
    try:
        committer.start()
        assert started.wait(ANSWER_TIMEOUT)
        child.start()  # while the thread is inside its commit
        sending.close()
        if not receiving.poll(ANSWER_TIMEOUT):
            pytest.fail("the forked child hung on the parent's handle")
        log, state = receiving.recv()
        child.join(ANSWER_TIMEOUT)
        assert child.exitcode == 0
    finally:
        _parents_handle = None
        if child.is_alive():
            child.kill()
            child.join()
        receiving.close()
    committer.join(ANSWER_TIMEOUT)
    # The fork waited for the thread's commit: the child saw it, and the parent still works.
    assert (log, state) == (["", "parent"], {"by": "child"})
    repo.commit({"by": "parent", "after": True}, message="after")
    assert [c.message for c in repo.log()] == ["after", "", "parent"]
    if url == "sqlite":
        with Repo.open(str(tmp_path / "repo")) as reopened:
            assert [c.message for c in reopened.log("child")] == ["child"]
            assert reopened.fsck().ok
    repo.close()
