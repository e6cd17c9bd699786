"""SIGKILL in the middle of commits loses no acknowledged commit and corrupts nothing."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from datetime import timedelta

import pytest

from statevcs import Repo

from .harness import count, start_worker
from .workers import dict_digest

KILLS = count("KILLS", 30)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL needs a POSIX system")


def _run_until_killed(folder: str, seed: str, delay: float) -> list[tuple[str, str]]:
    """Start a committing child, SIGKILL it ``delay`` seconds after it is ready.

    Returns the (commit id, digest) lines it printed completely: the acknowledged commits.
    """
    child = start_worker("commit-loop", folder, seed, stdout=subprocess.PIPE)
    assert child.stdout is not None
    first = child.stdout.readline()
    assert first == "ready\n", f"child failed to start: {first!r}"
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    rest = child.stdout.read()
    child.wait()
    assert child.returncode == -signal.SIGKILL, "the child died before it was killed"
    # A line cut by the kill has no newline: that commit was never acknowledged.
    lines = rest.split("\n")[:-1]
    return [(line.split()[0], line.split()[1]) for line in lines]


def test_sigkill_during_commits_loses_no_acknowledged_commit(location: str) -> None:
    folder = location
    Repo.init(folder).close()
    rng = random.Random(os.environ.get("STATEVCS_RELIABILITY_SEED", "kills"))
    acknowledged: list[tuple[str, str]] = []
    started = time.monotonic()
    for kill in range(KILLS):
        # Mostly mid-stream kills; some within the first commit, where the schema, WAL and
        # first objects are being written.
        delay = rng.uniform(0, 0.004) if kill % 5 == 0 else rng.uniform(0, 0.15)
        acknowledged += _run_until_killed(folder, f"k{kill}", delay)
    elapsed = time.monotonic() - started
    assert acknowledged, "no commit was acknowledged: the kills came too early to test anything"

    with Repo.open(folder) as repo:
        for commit_id, expected in acknowledged:
            snapshot = repo.show(commit_id)
            state = {"messages": snapshot.messages, **snapshot.state}
            assert dict_digest(state) == expected, f"commit {commit_id} reads back different"
        history = [c.id for c in repo.log("main")]
        # Every acknowledged commit is on main, in the order it was acknowledged.
        positions = {commit_id: n for n, commit_id in enumerate(reversed(history))}
        order = [positions[commit_id] for commit_id, _ in acknowledged]
        assert order == sorted(order)
        restored: dict[str, object] = {}
        repo.checkout(restored, acknowledged[-1][0])
        assert dict_digest(restored) == acknowledged[-1][1]

        report = repo.fsck()
        assert report.problems == ()
        repo.gc(timedelta(0))
        after = repo.fsck()
        assert after.problems == ()
        assert after.dangling == 0
        for commit_id, expected in acknowledged:
            snapshot = repo.show(commit_id)
            assert dict_digest({"messages": snapshot.messages, **snapshot.state}) == expected
    print(
        f"\n{KILLS} kills, {len(acknowledged)} acknowledged commits, {len(history)} on main, "
        f"{report.dangling} dangling objects before gc, {elapsed:.1f}s"
    )
