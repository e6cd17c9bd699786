"""Maintenance: gc, fsck and stats, including failure and corruption cases."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from support import message
from test_diff import commit_crafted_tree, commit_tall_tree, doc_ids

import statevcs
from statevcs import Repo
from statevcs.hashing import ObjectId
from statevcs.objects import ListNode, decode, encode_with_id, kind_of
from statevcs.stores.sqlite import DB_FILENAME


def test_crash_between_objects_and_ref_leaves_repository_consistent(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "repo")
    state: dict[str, Any] = {"messages": [message(0)], "n": 0}
    good = repo.commit(state)

    original = repo.store.update_refs

    def crash(updates: Any, objects: Any = None, **_: Any) -> None:
        repo.store.put_many(objects or {})  # the objects land ...
        raise OSError("simulated crash before the ref moved")  # ... the ref does not

    repo.store.update_refs = crash  # type: ignore[method-assign]
    state["messages"].append(message(1))
    state["n"] = 1
    with pytest.raises(OSError):
        repo.commit(state)
    repo.store.update_refs = original  # type: ignore[method-assign]
    repo.close()

    reopened = Repo.open(tmp_path / "repo")
    assert reopened.resolve("main") == good.id
    report = reopened.fsck()
    assert report.ok, report.problems
    assert report.dangling > 0
    gc = reopened.gc(grace=dt.timedelta(0))
    assert gc.deleted == report.dangling
    assert reopened.fsck().dangling == 0


def test_fsck_reports_corruption_without_raising(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "repo")
    state: dict[str, Any] = {"messages": [message(i) for i in range(3)], "n": 1}
    repo.commit(state)
    stored = repo.store.get_many(i for i, _ in repo.store.iter_objects())
    # A message of the open tail (a doc) and a closed leaf holding the others (format 2).
    docs = sorted(i for i, data in stored.items() if kind_of(decode(i, data)) == "doc")
    leaves = sorted(i for i, data in stored.items() if kind_of(decode(i, data)) == "leaf")
    repo.close()
    db = sqlite3.connect(tmp_path / "repo" / DB_FILENAME)
    db.execute("UPDATE objects SET data = X'00' WHERE id = ?", (docs[0],))
    db.execute("DELETE FROM objects WHERE id = ?", (leaves[0],))
    db.commit()
    db.close()
    report = Repo.open(tmp_path / "repo").fsck()
    assert not report.ok
    assert any("corrupt" in p for p in report.problems)
    assert any("missing" in p for p in report.problems)
    # Each damage is named once, though both the re-hash and the walk from the refs meet it.
    assert len(set(report.problems)) == len(report.problems), report.problems
    assert sum(statevcs.hashing.to_hex(docs[0]) in p for p in report.problems) == 1


def test_gc_keeps_reachable_and_reflogged_history(repo: Repo) -> None:
    state: dict[str, Any] = {"messages": [], "n": 0}
    for i in range(5):
        state["messages"].append(message(i))
        state["n"] = i
        repo.commit(state)
    repo.reset("main", "main~2")
    report = repo.gc(grace=dt.timedelta(0))
    assert report.deleted == 0  # the reflog still reaches the reset-away commits
    assert len(list(repo.log("main@{1}"))) == 5
    repo.branch("tmp")
    repo.checkout(state, "tmp")
    state["n"] = 100
    repo.commit(state)
    repo.checkout(state, "main")
    repo.delete_branch("tmp")
    assert repo.gc(grace=dt.timedelta(days=1)).deleted == 0  # too recent
    later = repo.gc(grace=dt.timedelta(0), dry_run=True)
    assert later.dry_run
    assert repo.fsck().ok


def test_stats_counts_dedup(repo: Repo) -> None:
    state: dict[str, Any] = {"messages": []}
    for i in range(50):
        state["messages"].append(message(i, 500))
        repo.commit(state)
    stats = repo.stats()
    assert stats.commits == 50
    assert stats.naive_bytes > 20 * stats.bytes_stored / 2
    assert stats.dedup_ratio > 5
    assert stats.branches == {"main": repo.resolve("main")}


def test_gc_reports_progress(repo: Repo) -> None:
    state: dict[str, Any] = {"messages": [message(i) for i in range(30)], "n": 0}
    repo.commit(state)
    repo.branch("tmp")
    repo.checkout(state, "tmp")
    state["messages"].append(message(99))
    repo.commit(state)
    repo.checkout(state, "main")
    repo.delete_branch("tmp")
    repo.store.delete_reflog("HEAD")
    calls: list[tuple[str, int, int]] = []
    report = repo.gc(grace=dt.timedelta(0), progress=lambda *args: calls.append(args))
    assert report.deleted > 0
    assert calls[0][0] == "marking" and calls[-1] == ("sweeping", report.deleted, report.deleted)
    assert repo.fsck().ok


def test_forks_share_storage() -> None:
    repo = Repo.init("memory://")
    state: dict[str, Any] = {"messages": [], "turn": 0}
    for i in range(500):
        state["messages"].extend([message(2 * i, 200), message(2 * i + 1, 600)])
        state["turn"] = i
        repo.commit(state, message=f"turn {i}")
    single = repo.stats().bytes_stored
    fork_bytes = 0
    for f in range(10):
        repo.branch(f"fork-{f}", rev="main")
        fork = statevcs.Snapshot()
        repo.checkout(fork, f"fork-{f}")
        for t in range(10):
            new = [message(10_000 + 100 * f + 2 * t, 200), message(10_001 + 100 * f + 2 * t, 600)]
            fork.messages.extend(new)
            fork_bytes += sum(len(statevcs.objects.encode_doc(m)) for m in new)
            repo.commit(fork, message=f"fork {f} turn {t}")
    stats = repo.stats()
    assert stats.commits == 600
    assert stats.bytes_stored < 1.2 * (single + fork_bytes)
    assert stats.dedup_ratio > 50


# Store-independent (a cost shape / an iterative walk); on S3 it costs 10-20 s of uploads.
@pytest.mark.parametrize("repo", ["memory", "sqlite"], indirect=True)
def test_stats_and_fsck_of_a_3000_level_message_tree(repo: Repo) -> None:
    messages = [message(i, 100) for i in range(40)]
    repo.commit({"messages": messages})
    commit_tall_tree(repo, messages, 3000, "tall")
    stats = repo.stats()
    assert stats.commits == 2
    one_copy = sum(len(statevcs.objects.encode_doc(m)) for m in messages)
    assert stats.naive_bytes >= 2 * one_copy
    assert repo.fsck().ok


def test_stats_of_a_tree_whose_levels_lie_is_corrupt(repo: Repo) -> None:
    repo.commit({"messages": [message(i) for i in range(40)]})
    out: dict[ObjectId, bytes] = {}
    leaf, data = encode_with_id(ListNode(0, tuple(doc_ids([message(0)], out))))
    out[leaf] = data
    root, data = encode_with_id(ListNode(5, (leaf,), (1,)))
    out[root] = data
    commit_crafted_tree(repo, root, out, "liar")
    with pytest.raises(statevcs.errors.CorruptObject, match="level 0 sits where level 4"):
        repo.stats()
