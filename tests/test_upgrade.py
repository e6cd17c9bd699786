"""Storage format 2 and ``statevcs upgrade``: format-1 repositories read, upgrade in place,
survive being killed mid-upgrade, and every old id still names the same state."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import tarfile
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
from test_cli import invoke

import statevcs
from statevcs import Repo
from statevcs.hashing import from_hex
from statevcs.objects import PACKED_SNAPSHOT_FORMAT, SNAPSHOT_FORMAT, ListNode

DATA = Path(__file__).parent / "data"


def unpack_fixture(tmp_path: Path) -> tuple[Path, dict[str, Any], dict[str, list[Any]]]:
    """The format-1 repository statevcs 0.1 wrote (tests/data/make_repo_format1.py)."""
    with tarfile.open(DATA / "repo_format1.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    folder = tmp_path / "repo_format1"
    expected = json.loads((folder / "expected.json").read_text())
    shows = msgpack.unpackb((folder / "expected.msgpack").read_bytes(), raw=False)
    return folder, expected, shows


def shown(repo: Repo, rev: str) -> list[Any]:
    snap = repo.show(rev)
    return [snap.kind, snap.messages, snap.state, snap.extras]


def snapshot_format(repo: Repo, rev: str) -> int:
    commit = repo.objects.load_commit(from_hex(repo.resolve(rev)))
    return repo.objects.load_snapshot(commit.snapshot).version


def test_a_format_1_repository_reads_exactly_what_statevcs_0_1_wrote(tmp_path: Path) -> None:
    folder, expected, shows = unpack_fixture(tmp_path)
    with Repo.open(folder) as repo:
        assert repo.storage_format == 1
        assert repo.refs.as_hex() == expected["refs"]
        for commit_id in expected["commits"]:
            assert shown(repo, commit_id) == shows[commit_id]
        assert repo.fsck().ok
        # It keeps writing format 1 until upgraded (an older statevcs may share it).
        agent: dict[str, Any] = {}
        repo.checkout(agent, "main")
        agent["messages"].append({"role": "user", "content": "still format 1"})
        repo.commit(agent, "more")
        assert snapshot_format(repo, "main") == SNAPSHOT_FORMAT


def test_upgrade_keeps_every_state_and_every_old_id(tmp_path: Path) -> None:
    folder, expected, shows = unpack_fixture(tmp_path)
    with Repo.open(folder) as repo:
        report = repo.upgrade()
        assert (report.format_before, report.format_after) == (1, 2)
        assert report.commits_rewritten == len(expected["commits"])
        assert set(report.refs_moved) == set(expected["refs"])
        assert repo.storage_format == 2
        for name in expected["refs"]:
            assert snapshot_format(repo, name) == PACKED_SNAPSHOT_FORMAT
            assert shown(repo, name) == shown(repo, expected["refs"][name])
        for commit_id in expected["commits"]:
            assert shown(repo, commit_id) == shows[commit_id]
        assert repo.fsck().ok
        # Old objects go once their reflog entries expire; old ids then resolve through the
        # upgrade map, to the commits that replaced them.
        repo.gc("0", expire_reflog="0")
        for commit_id in expected["commits"]:
            assert repo.resolve(commit_id) != commit_id
            assert shown(repo, commit_id) == shows[commit_id]
            assert shown(repo, commit_id[:10]) == shows[commit_id]
        assert repo.fsck().ok
        assert repo.upgrade().commits_rewritten == 0
    with Repo.open(folder) as again:
        assert again.storage_format == 2
        assert shown(again, expected["commits"][3]) == shows[expected["commits"][3]]


def test_upgrade_is_history_independent_of_how_it_was_written(tmp_path: Path) -> None:
    """An upgraded repository holds the commits format 2 would have written from the start."""
    folder, _, _ = unpack_fixture(tmp_path)
    with Repo.open(folder) as repo:
        repo.upgrade()
        tip = repo.show("snap")
    with Repo.init("memory://") as fresh:
        written = fresh.objects.write_snapshot(tip)
        upgraded = repo_snapshot_id(folder, "snap")
        assert written == upgraded


def repo_snapshot_id(folder: Path, rev: str) -> bytes:
    with Repo.open(folder) as repo:
        return repo.objects.load_commit(from_hex(repo.resolve(rev))).snapshot


def test_upgrade_refuses_when_another_writer_moved_a_ref(tmp_path: Path) -> None:
    folder, expected, _ = unpack_fixture(tmp_path)
    with Repo.open(folder) as repo, Repo.open(folder) as other:
        original = repo.store.list_refs
        moved: list[bool] = []

        def racing(prefix: str = "refs/") -> dict[str, bytes]:
            refs = original(prefix)
            if not moved:  # another process commits while the upgrade rewrites history
                moved.append(True)
                other.commit({"messages": [], "k": 1}, "meanwhile", branch="side")
            return refs

        repo.store.list_refs = racing  # type: ignore[method-assign]
        with pytest.raises(statevcs.RefConflict):
            repo.upgrade()
        del repo.store.list_refs
        refs = repo.refs.as_hex()
        assert refs["refs/heads/main"] == expected["refs"]["refs/heads/main"]
        assert snapshot_format(repo, "main") == SNAPSHOT_FORMAT
        assert repo.upgrade().commits_rewritten > 0  # run again: it goes through
        assert snapshot_format(repo, "side") == PACKED_SNAPSHOT_FORMAT


def _format_1_history(folder: Path, commits: int) -> dict[str, list[Any]]:
    rng = random.Random(7)
    shows: dict[str, list[Any]] = {}
    with Repo.init(folder, storage_format=1) as repo:
        agent: dict[str, Any] = {"messages": [], "step": 0}
        for i in range(commits):
            agent["messages"].append({"role": "user", "content": f"turn {i} " * rng.randint(1, 30)})
            agent["step"] = i
            branch = None if i % 17 else f"fork-{i}"
            commit = repo.commit(
                dict(agent, messages=list(agent["messages"])), f"c{i}", branch=branch
            )
            shows[commit.id] = shown(repo, commit.id)
    return shows


def _upgrade_in_child(folder: str) -> None:
    with Repo.open(folder) as repo:
        repo.upgrade()


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_an_upgrade_killed_at_any_moment_loses_nothing(tmp_path: Path, start_method: str) -> None:
    folder = tmp_path / "repo"
    shows = _format_1_history(folder, 150)
    context = multiprocessing.get_context(start_method)
    rng = random.Random(start_method)
    for _ in range(4):
        child = context.Process(target=_upgrade_in_child, args=(str(folder),))
        child.start()
        time.sleep(rng.uniform(0.05, 0.6))
        if child.pid is not None and child.is_alive():
            os.kill(child.pid, signal.SIGKILL)
        child.join(60)
        with Repo.open(folder) as repo:  # whatever state it was left in reads the same
            for commit_id, expected in shows.items():
                assert shown(repo, commit_id) == expected
            assert repo.fsck().ok
    with Repo.open(folder) as repo:
        repo.upgrade()
        assert repo.storage_format == 2
        for commit_id, expected in shows.items():
            assert shown(repo, commit_id) == expected
        assert repo.fsck().ok


def test_the_cli_upgrades_and_says_what_it_did(tmp_path: Path) -> None:
    folder, expected, _ = unpack_fixture(tmp_path)
    said = json.loads(invoke("-C", folder, "upgrade", "--json").stdout)
    assert said["format_before"] == 1 and said["format_after"] == 2
    assert said["commits_rewritten"] == len(expected["commits"])
    assert "nothing to do" in invoke("-C", folder, "upgrade").stdout


def test_storage_format_argument_is_checked() -> None:
    with pytest.raises(TypeError, match="storage_format"):
        Repo.init("memory://", storage_format="2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="storage_format"):
        Repo.init("memory://", storage_format=3)
    with Repo.init("memory://") as repo:
        assert repo.storage_format == 2
        repo.commit({"messages": [{"role": "user", "content": str(i)} for i in range(40)]})
        tip = repo.objects.load_commit(from_hex(repo.resolve("main")))
        root = repo.objects.load(repo.objects.load_snapshot(tip.snapshot).messages)
        assert isinstance(root, ListNode)
