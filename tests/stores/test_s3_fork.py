"""S3 repositories in forked and spawned children: they work or fail at once, never hang.

obstore's I/O runtime does not survive ``fork()``: a child forked from a process that made S3
requests gets :class:`ForkedProcessError` on its first call, on the parent's handle or a new
one; a spawned child, or a forked one whose parent never used S3, works. Every child is
waited for with a timeout, so a hang fails the test instead of stalling the run.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from statevcs import ForkedProcessError, Repo, StateVCSError

ANSWER_TIMEOUT = 60.0  # seconds: a spawned child imports statevcs on a loaded machine first

_parents_handle: Repo | None = None  # set before a fork: the child inherits it


def _child(url: str, use_parents_handle: bool, answers: Connection) -> None:
    """Commit and read back in ``url``; send ``("ok", state)`` or ``("error", name, text,
    seconds)``."""
    started = time.monotonic()
    try:
        repo = _parents_handle if use_parents_handle else Repo.open(url)
        assert repo is not None
        repo.commit({"by": "child", "pid": os.getpid()}, message="from the child")
        answers.send(("ok", repo.show("main").state))
        if not use_parents_handle:
            repo.close()
    except StateVCSError as exc:
        answers.send(("error", type(exc).__name__, str(exc), time.monotonic() - started))
    except Exception as exc:  # anything else: shown by the test's assertion
        answers.send(("crash", repr(exc)))


def _run_child(method: str, url: str, *, use_parents_handle: bool) -> tuple[Any, ...]:
    """Run :func:`_child` with start ``method``; its answer, or fail if it hangs or dies."""
    context = multiprocessing.get_context(method)
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(url, use_parents_handle, sending))
    child.start()
    sending.close()
    try:
        if not receiving.poll(ANSWER_TIMEOUT):
            pytest.fail(f"the {method} child hung: no answer in {ANSWER_TIMEOUT:.0f} s")
        answer: tuple[Any, ...] = receiving.recv()
        child.join(ANSWER_TIMEOUT)
        assert child.exitcode == 0
        return answer
    finally:
        if child.is_alive():
            child.kill()
            child.join()
        receiving.close()


@pytest.fixture
def used_repo(s3_url: str) -> Iterator[Repo]:
    """A repository this process has committed to (so obstore's runtime runs here)."""
    global _parents_handle
    repo = Repo.init(s3_url)
    repo.commit({"by": "parent"}, message="from the parent")
    _parents_handle = repo
    yield repo
    _parents_handle = None
    repo.close()


@pytest.mark.parametrize("use_parents_handle", [True, False], ids=["parents-handle", "new-handle"])
def test_a_forked_child_of_a_process_that_used_s3_fails_at_once_saying_what_to_do(
    used_repo: Repo, s3_url: str, use_parents_handle: bool
) -> None:
    answer = _run_child("fork", s3_url, use_parents_handle=use_parents_handle)
    assert answer[0] == "error", answer
    _, name, text, seconds = answer
    assert name == ForkedProcessError.__name__
    assert "forked from a process that had already used S3" in text
    assert "'spawn' or 'forkserver'" in text and "only after the fork" in text
    assert seconds < 5  # at once: no request was even tried
    # Nothing of the child's reached the bucket; the parent's handle still works.
    assert [c.message for c in used_repo.log()] == ["from the parent"]
    used_repo.commit({"by": "parent", "after": "fork"}, message="parent again")
    assert used_repo.show("main").state == {"by": "parent", "after": "fork"}


def test_a_spawned_child_works_while_the_parent_holds_a_used_handle(
    used_repo: Repo, s3_url: str
) -> None:
    answer = _run_child("spawn", s3_url, use_parents_handle=False)
    assert answer[0] == "ok", answer
    assert answer[1]["by"] == "child"
    # The parent sees the child's commit, content included, on the handle it kept open.
    assert [c.message for c in used_repo.log()] == ["from the child", "from the parent"]
    assert used_repo.show("main").state == answer[1]


# Run in a fresh interpreter: this test process has made S3 requests already.
_NEVER_USED_S3 = """
import multiprocessing, sys
from statevcs import ForkedProcessError, Repo

def grandchild(url, answers):
    try:
        Repo.open(url)
        answers.send("opened")
    except ForkedProcessError:
        answers.send("refused")

def child(url, answers):
    with Repo.init(url) as repo:
        repo.commit({"by": "child"}, message="from the child")
        answers.send(repo.show("main").state)
    # The child made S3 requests: a process forked from it is refused in turn.
    grandchild_process = multiprocessing.get_context("fork").Process(
        target=grandchild, args=(url, answers)
    )
    grandchild_process.start()
    grandchild_process.join(TIMEOUT)
    if grandchild_process.is_alive():
        grandchild_process.kill()

url = sys.argv[1]
Repo.open(sys.argv[2]).close()  # statevcs in use here, but not S3
receiving, sending = multiprocessing.Pipe(duplex=False)
process = multiprocessing.get_context("fork").Process(target=child, args=(url, sending))
process.start()
for _ in range(2):
    print(receiving.recv() if receiving.poll(TIMEOUT) else "hung", flush=True)
process.join(TIMEOUT)
if process.is_alive():
    process.kill()
"""


def test_a_forked_child_works_when_the_parent_never_used_s3(s3_url: str, tmp_path: Path) -> None:
    Repo.init(tmp_path / "local").close()
    script = _NEVER_USED_S3.replace("TIMEOUT", repr(ANSWER_TIMEOUT))
    done = subprocess.run(
        [sys.executable, "-c", script, s3_url, str(tmp_path / "local")],
        capture_output=True,
        text=True,
        timeout=4 * ANSWER_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["{'by': 'child'}", "refused"], done.stderr
    with Repo.open(s3_url) as repo:
        assert repo.show("main").state == {"by": "child"}
