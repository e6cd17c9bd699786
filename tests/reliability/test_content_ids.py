"""A snapshot id is a pure function of content: warm or cold caches, any process, any store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from statevcs import Repo, Snapshot

from .harness import run_worker

M = {"role": "user", "content": [{"text": "y" * 10}]}


def _target() -> Snapshot:
    # The extras value equals a small message: inlining must not depend on what is cached.
    return Snapshot(messages=[M], extras={"last": M})


def _warm_up(repo: Repo) -> None:
    """Commit related content so every cache of this handle knows ``M`` and its pieces."""
    repo.commit(Snapshot(messages=[M]), message="the message alone", branch="warm-1")
    repo.commit(Snapshot(messages=[M, M], extras={"m": M}), message="twice", branch="warm-2")
    repo.commit({"messages": [M], "last": M}, message="as state", branch="warm-3")
    repo.show("warm-2")


def _commit_target(repo: Repo, branch: str) -> str:
    commit = repo.commit(_target(), message="target", branch=branch)
    shown = repo.show(branch)
    assert shown.messages == [M] and shown.extras == {"last": M}
    return commit.snapshot_id


def test_snapshot_id_is_the_same_from_warm_cold_and_other_processes(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    ids: dict[str, Any] = {}
    with Repo.init(folder) as warm:
        _warm_up(warm)
        ids["warm"] = _commit_target(warm, "warm")
        warm.show("HEAD")
    with Repo.open(folder) as cold:
        ids["cold"] = _commit_target(cold, "cold")
    ids["other process"] = run_worker("pure-content", folder).stdout.strip()
    with Repo.init("memory://") as memory:
        ids["memory, cold"] = _commit_target(memory, "x")
    with Repo.init("memory://") as memory:
        _warm_up(memory)
        ids["memory, warm"] = _commit_target(memory, "x")
    with Repo.init(tmp_path / "fresh") as fresh:
        ids["fresh repository"] = _commit_target(fresh, "x")
    assert len(set(ids.values())) == 1, ids
    with Repo.open(folder) as check:
        assert check.fsck().problems == ()
        for branch in ("warm", "cold", "other-process"):
            assert check.show(branch).extras == {"last": M}


def test_show_head_after_committing_an_extras_value_equal_to_a_message(tmp_path: Path) -> None:
    for target in ("memory://", tmp_path / "repo"):
        with Repo.init(target) as repo:
            repo.commit(Snapshot(messages=[M], extras={"last": M}))
            assert repo.show("HEAD").extras == {"last": M}
            assert repo.fsck().problems == ()
