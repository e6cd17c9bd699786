"""The integrations' shared direct reads and fork naming (``statevcs.integrations.stored``)."""

from __future__ import annotations

import threading
from pathlib import Path

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
