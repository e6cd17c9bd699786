"""The integrations' shared direct reads and fork naming (``statevcs.integrations.stored``)."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support import run_threads

import statevcs
from statevcs.integrations.stored import branch_tip, commit_messages, fork_branch


def _repo_with_conversation(path: Path) -> str:
    with statevcs.Repo.init(path) as repo:
        commit = repo.commit({"messages": [{"role": "user", "content": "hi"}]}, branch="s")
        return commit.id


def test_fork_branch_takes_the_first_free_number(tmp_path: Path) -> None:
    at = _repo_with_conversation(tmp_path / "r")
    with statevcs.Repo.open(tmp_path / "r") as repo:
        repo.branch("s-fork-1", at)
        repo.branch("s-fork-3", at)
        assert fork_branch(repo, "s", at) == "s-fork-2"
        assert fork_branch(repo, "s", at) == "s-fork-4"
        assert repo.branches()["s-fork-4"] == at


def test_concurrent_forks_get_distinct_names_and_move_nothing(tmp_path: Path) -> None:
    """Handles forking at once never share or move a branch: every fork exists at its commit."""
    at = _repo_with_conversation(tmp_path / "r")
    names: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(6)

    def forker() -> None:
        try:
            with statevcs.Repo.open(tmp_path / "r") as repo:
                start.wait()
                for _ in range(5):
                    name = fork_branch(repo, "s", at)
                    with lock:
                        names.append(name)
        except BaseException as exc:  # reported below
            errors.append(exc)

    run_threads(forker, [()] * 6)
    assert not errors
    assert len(names) == len(set(names)) == 30
    with statevcs.Repo.open(tmp_path / "r") as repo:
        branches = repo.branches()
        assert all(branches[name] == at for name in names)
        assert sorted(names, key=lambda n: int(n.rsplit("-", 1)[1])) == [
            f"s-fork-{n}" for n in range(1, 31)
        ]
        tip = branch_tip(repo, "s-fork-30")
        assert tip is not None
        assert commit_messages(repo, tip) == [{"role": "user", "content": "hi"}]


_INHERITED: list[statevcs.Repo] = []
"""A handle the test process opened and used before forking its workers (gunicorn --preload)."""


def _forker(location: str, at: str, count: int, inherit: bool) -> None:
    """Fork ``count`` branches of ``s`` at ``at``; a forked worker uses the parent's handle."""
    repo = _INHERITED[0] if inherit else statevcs.Repo.open(location)
    try:
        for _ in range(count):
            fork_branch(repo, "s", at)
    finally:
        if not inherit:
            repo.close()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_forks_from_several_processes_get_distinct_names(tmp_path: Path, method: str) -> None:
    """Forked (sharing the parent's open handle) and spawned workers forking at once: every
    fork is a branch of its own at the right commit, and a fresh process reads it back."""
    at = _repo_with_conversation(tmp_path / "r")
    location = str(tmp_path / "r")
    context = multiprocessing.get_context(method)
    with statevcs.Repo.open(location) as parent:
        parent.branches()  # used before the fork, as a preloading server does
        _INHERITED[:] = [parent]
        try:
            workers = [
                context.Process(target=_forker, args=(location, at, 5, method == "fork"))
                for _ in range(4)
            ]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(120)
                assert worker.exitcode == 0
        finally:
            _INHERITED.clear()
    reader = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, statevcs\n"
            "from statevcs.integrations.stored import branch_tip, commit_messages\n"
            "with statevcs.Repo.open(sys.argv[1]) as repo:\n"
            "    forks = sorted(n for n in repo.branches() if n.startswith('s-fork-'))\n"
            "    print(len(forks), len({repo.branches()[n] for n in forks}))\n"
            "    print(commit_messages(repo, branch_tip(repo, forks[-1])))\n",
            location,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert reader.stdout.splitlines() == ["20 1", "[{'role': 'user', 'content': 'hi'}]"]
    with statevcs.Repo.open(location) as repo:
        names = [n for n in repo.branches() if n.startswith("s-fork-")]
        assert sorted(names, key=lambda n: int(n.rsplit("-", 1)[1])) == [
            f"s-fork-{n}" for n in range(1, 21)
        ]
        assert all(repo.branches()[n] == at for n in names)
        assert repo.fsck().ok
