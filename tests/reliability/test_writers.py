"""Many processes writing one repository: nothing lost, nothing reverted, nothing dangling."""

from __future__ import annotations

import itertools
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import statevcs
from statevcs import Repo, Snapshot

from .harness import count, dump_tables, run_worker, start_worker

COMMITS = count("COMMITS", 25)
GC_COMMITS = count("GC_COMMITS", 200)
WRITERS = 8


def _start_all(
    tmp_path: Path, location: str, command: str, jobs: list[tuple[str, str]]
) -> list[str]:
    """Run one worker per (branch, name) job, released together; return their outputs."""
    go = tmp_path / "go"
    children = [
        start_worker(
            command,
            location,
            branch,
            name,
            COMMITS,
            go,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # A cache folder per process: on S3 each writer is another machine.
            env={**os.environ, "STATEVCS_CACHE_DIR": str(tmp_path / f"cache-{n}")},
        )
        for n, (branch, name) in enumerate(jobs)
    ]
    time.sleep(0.5)  # let every interpreter start, so the writers really race
    go.touch()
    outputs = []
    for child in children:
        out, err = child.communicate(timeout=600)
        assert child.returncode == 0, f"a writer failed ({child.returncode}):\n{err[-3000:]}"
        outputs.append(out)
    return outputs


def test_writers_on_one_branch_with_retry_keep_every_message(tmp_path: Path, location: str) -> None:
    # The branch exists before the writers start: a writer whose first commit creates the
    # branch races with the others (see test_fresh_object_creating_a_branch_...).
    with Repo.init(location) as repo:
        repo.commit({"messages": []}, message="root")
    names = [f"w{n}" for n in range(WRITERS)]
    started = time.monotonic()
    outputs = _start_all(tmp_path, location, "retry-writer", [("main", name) for name in names])
    elapsed = time.monotonic() - started
    conflicts = sum(int(out.split()[1]) for out in outputs)
    with Repo.open(location) as repo:
        history = list(repo.log("main", all_parents=True))
        assert len(history) == WRITERS * COMMITS + 1
        # Linear: every commit but the root has exactly one parent, the next one in the log.
        for newer, older in itertools.pairwise(history):
            assert newer.parents == (older.id,)
        assert history[-1].parents == ()
        tip = repo.show("main")
        contents = [m["content"] for m in tip.messages]
        assert sorted(contents) == sorted(f"{n} {i}" for n in names for i in range(COMMITS))
        assert len(set(contents)) == len(contents)
        # Each writer's own messages stay in its order.
        for name in names:
            own = [c for c in contents if c.split()[0] == name]
            assert own == [f"{name} {i}" for i in range(COMMITS)]
        assert tip.state == {name: COMMITS - 1 for name in names}
        assert repo.fsck().problems == ()
    print(f"\n{WRITERS}x{COMMITS} commits, {conflicts} conflicts retried, {elapsed:.1f}s")


def test_writers_on_separate_branches_share_the_prefix(tmp_path: Path, location: str) -> None:
    prefix = [{"role": "user", "content": f"shared {i} " + "p" * 500} for i in range(50)]
    with Repo.init(location) as repo:
        repo.commit({"messages": prefix}, message="shared prefix")
        single = repo.stats().bytes_stored
    names = [f"b{n}" for n in range(WRITERS)]
    _start_all(tmp_path, location, "branch-writer", [(name, name) for name in names])
    with Repo.open(location) as repo:
        for name in names:
            snapshot = repo.show(name)
            assert snapshot.messages[:50] == prefix
            assert [m["content"].split()[:2] for m in snapshot.messages[50:]] == [
                [name, str(i)] for i in range(COMMITS)
            ]
            assert snapshot.state == {"who": name}
            assert len(list(repo.log(name))) == COMMITS + 1
        stats = repo.stats()
        assert repo.fsck().problems == ()
    # The prefix (about 28 KB) is stored once: each commit adds its own message and a bounded
    # overhead (commit, snapshot, the tree path to the new leaf), never another prefix copy.
    per_commit = (stats.bytes_stored - single) / (WRITERS * COMMITS)
    assert per_commit < 3_000, f"{per_commit:.0f} bytes stored per commit"
    print(f"\n{per_commit:.0f} bytes per commit on 8 branches, dedup ratio {stats.dedup_ratio:.1f}")
    assert stats.dedup_ratio > 5


def test_stale_writer_in_another_process_raises_and_writes_nothing(repo_path: Path) -> None:
    with Repo.open(repo_path) as repo:
        state: dict[str, Any] = {}
        c0 = repo.checkout(state, "main")
        c1 = run_worker("set-and-commit", repo_path, "x", 2).stdout.strip()
        before = dump_tables(repo_path / "statevcs.sqlite3")
        state["y"] = 1
        with pytest.raises(statevcs.RefConflict) as raised:
            repo.commit(state, message="stale")
        assert c0.id[:12] in str(raised.value) and c1[:12] in str(raised.value)
        assert dump_tables(repo_path / "statevcs.sqlite3") == before
        assert repo.show("main").state == {"x": 2}
        merged = repo.commit(state, message="merge it", on_conflict="merge")
        assert repo.show(merged.id).state == {"x": 2, "y": 1}
        assert state["x"] == 2


def test_stale_snapshot_in_another_process_raises(repo_path: Path) -> None:
    with Repo.open(repo_path) as repo:
        snapshot = Snapshot()
        repo.checkout(snapshot, "main")
        run_worker("set-and-commit", repo_path, "x", 2)
        before = dump_tables(repo_path / "statevcs.sqlite3")
        snapshot.state["y"] = 1
        with pytest.raises(statevcs.RefConflict):
            repo.commit(snapshot, message="stale")
        assert dump_tables(repo_path / "statevcs.sqlite3") == before


MESSAGE = {"role": "user", "content": [{"text": "the same message " * 5}]}


def _check_restorable(folder: str, rev: str, expected: list[Any]) -> None:
    with Repo.open(folder) as fresh:
        assert fresh.fsck().problems == ()
        restored: dict[str, Any] = {}
        fresh.checkout(restored, rev)
        assert restored["messages"] == expected


def test_gc_in_another_process_then_same_message_on_a_new_branch(location: str) -> None:
    # The reproducer: main does not exist yet when A commits there.
    folder = location
    with Repo.init(folder) as a:
        a.commit({"messages": [MESSAGE]}, message="draft", branch="draft")
        run_worker("delete-and-gc", folder, "draft")
        a.commit({"messages": [MESSAGE]}, message="main", branch="main")
        assert a.fsck().problems == ()
    _check_restorable(folder, "main", [MESSAGE])


def test_gc_in_another_process_then_same_message_on_an_existing_branch(location: str) -> None:
    folder = location
    with Repo.init(folder) as a:
        a.commit(Snapshot(messages=[]), message="root")
        a.commit(Snapshot(messages=[MESSAGE]), message="draft", branch="draft")
        run_worker("delete-and-gc", folder, "draft")
        a.commit(Snapshot(messages=[MESSAGE]), message="main", branch="main")
        assert a.fsck().problems == ()
    _check_restorable(folder, "main", [MESSAGE])


def test_gc_looping_in_another_process_while_reusing_old_content(
    tmp_path: Path, location: str
) -> None:
    folder = location
    # Each round opens a cold handle; on S3 a quarter of the rounds keeps the test near 10 s.
    rounds = GC_COMMITS if "://" not in location else max(GC_COMMITS // 4, 10)
    stop = tmp_path / "stop"
    conversations = [
        [{"role": "user", "content": f"conversation {c} turn {t} " * 8} for t in range(3)]
        for c in range(2)
    ]
    blobs = ["a" * 300, "b" * 300]
    with Repo.init(folder) as a:
        a.commit(Snapshot(messages=[]), message="root")
        collector = start_worker("gc-loop", folder, stop, stdout=subprocess.PIPE)
        assert collector.stdout is not None
        assert collector.stdout.readline() == "ready\n"
        started = time.monotonic()
        try:
            for i in range(rounds):
                # The previous commit's content becomes unreachable, the collector deletes it,
                # and the next commit but one reuses exactly that content.
                if "live" in a.branches():
                    a.delete_branch("live")
                time.sleep(0.002)
                snapshot = Snapshot(
                    messages=conversations[i % 2], state={"blob": blobs[i % 2], "i": i}
                )
                commit = a.commit(snapshot, message=f"c {i}", branch="live")
                with Repo.open(folder) as cold:
                    restored = cold.show(commit.id)
                assert restored.messages == conversations[i % 2]
                assert restored.state == {"blob": blobs[i % 2], "i": i}
        finally:
            stop.touch()
            out = collector.communicate(timeout=120)[0]
        elapsed = time.monotonic() - started
        assert collector.returncode == 0
        assert a.fsck().problems == ()
    with Repo.open(folder) as fresh:
        assert fresh.fsck().problems == ()
        assert fresh.show("live").state == {
            "blob": blobs[(rounds - 1) % 2],
            "i": rounds - 1,
        }
    print(f"\n{rounds} commits against a gc loop ({out.strip()}), {elapsed:.1f}s")


def test_fresh_object_creating_a_branch_does_not_replace_a_concurrent_writers_commit(
    tmp_path: Path,
) -> None:
    # Writer A's commit would create `main`; writer B creates it first, between A reading the
    # branch (absent) and A's compare-and-swap. A's state never saw B's message, so landing on
    # top of B silently drops it from the tip: A must get RefConflict and write nothing.
    folder = tmp_path / "repo"
    Repo.init(folder).close()
    with Repo.open(folder) as a, Repo.open(folder) as b:
        original = a.store.update_refs
        raced: list[str] = []

        def b_commits_first(*args: Any, **kwargs: Any) -> None:
            if not raced:
                raced.append(b.commit({"messages": [{"role": "user", "content": "B"}]}).id)
            original(*args, **kwargs)

        a.store.update_refs = b_commits_first  # type: ignore[method-assign]
        with pytest.raises(statevcs.RefConflict):
            a.commit({"messages": [{"role": "user", "content": "A"}]}, message="A")
        assert [m["content"] for m in b.show("main").messages] == ["B"]
        assert b.resolve("main") == raced[0]
