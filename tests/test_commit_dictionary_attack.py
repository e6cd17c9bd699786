"""Attacks on commits compressed with a dictionary of their own (tests/test_commit_dictionary.py
holds what the feature promises; these are the ways it was found to break, and the places it
was tried and held).

Every reader here runs where it matters: in a new process (spawn) that never registered a
dictionary, against real stores.
"""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from statevcs import Repo, Snapshot
from statevcs.compression import ZSTD_MAGIC, frame_dictionary
from statevcs.errors import CorruptObject
from statevcs.hashing import ObjectId
from statevcs.objectdb import COMMIT_DICTIONARY_KEY
from statevcs.plumbing import ObjectDatabase

_T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _in_child(target: Any, *args: Any) -> Any:
    """Run ``target(*args, answers)`` in a spawned process; return what it sends."""
    context = multiprocessing.get_context("spawn")
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=target, args=(*args, sending))
    child.start()
    try:
        assert receiving.poll(120), f"the child process ended (exit code {child.exitcode})"
        return receiving.recv()
    finally:
        child.join(60)


def _plumbing_commits(db: ObjectDatabase, salt: int, turns: int) -> list[ObjectId]:
    """``turns`` commits of fixed bytes (fixed time, fields): the samples a dictionary is
    trained on, and so its id, are the same in every run."""
    snapshot = db.write_snapshot(Snapshot(state={"k": 1}))
    parents: list[ObjectId] = []
    ids = []
    for turn in range(turns):
        metadata = {
            "checkpoint_id": f"1f1eaf85-{turn:04x}-6908-8000-b84911563df3",
            "salt": salt,
            "channels": {"messages": turn + 2, "__start__": turn + 1, "step": turn},
            "pad": "x" * 300,
        }
        commit_id = db.write_commit(
            snapshot,
            parents,
            message=f"loop step {turn}",
            author="a",
            timestamp=_T0,
            metadata=metadata,
        )
        ids.append(commit_id)
        parents = [commit_id]
    return ids


_COLLIDING_SALT = 22366
"""With this salt, the commits above train a dictionary whose id equals the one salt 0 trains
(commit dictionary ids hold 16 bits of a hash of their samples: found by trying salts)."""


def _read_commits(path: str, ids: list[ObjectId], answers: Any) -> None:
    with Repo.open(path) as repo:
        found = []
        for commit_id in ids:
            try:
                found.append(repo.objects.load_commit(commit_id).message)
            except Exception as exc:
                found.append(f"{type(exc).__name__}: {exc}")
        answers.send(found)


def test_two_repositories_whose_commit_dictionaries_share_an_id_in_one_process(
    tmp_path: Path,
) -> None:
    """A process that trained (or read) one repository's commit dictionary and then writes to
    another whose dictionary has the same id must not compress that one's commits with the
    first's dictionary: a fresh process, reading with the second's own, could not read them."""
    with Repo.init(tmp_path / "a") as first:
        _plumbing_commits(first.objects, 0, 100)
        first_key = first.store.config_get(COMMIT_DICTIONARY_KEY)
        assert first_key is not None
    with Repo.init(tmp_path / "b") as second:
        ids = _plumbing_commits(second.objects, _COLLIDING_SALT, 100)
        second_key = second.store.config_get(COMMIT_DICTIONARY_KEY)
        assert second_key is not None and second_key != first_key  # two dictionaries
        frames = [d for d in second.store.get_many(ids).values() if d[:4] == ZSTD_MAGIC]
        assert frames
    messages = _in_child(_read_commits, str(tmp_path / "b"), ids)
    assert messages == [f"loop step {turn}" for turn in range(100)]


def _write_colliding(path: str, answers: Any) -> None:
    """In a process of its own: a repository whose commit dictionary gets the colliding id."""
    with Repo.init(path) as repo:
        answers.send(_plumbing_commits(repo.objects, _COLLIDING_SALT, 100))


def test_writing_to_a_repository_whose_dictionary_id_another_repository_holds_here(
    tmp_path: Path,
) -> None:
    """The collision the other way round: the second repository trained elsewhere. Writing to
    it here keeps its commits plain (readable everywhere); reading its compressed ones here is
    refused as a documented error, not guessed with the other repository's dictionary."""
    with Repo.init(tmp_path / "a") as first:
        last = _plumbing_commits(first.objects, 0, 100)[-1]
        held = frame_dictionary(first.store.get_many([last])[last])
    path = str(tmp_path / "b")
    ids = _in_child(_write_colliding, path)
    with Repo.open(path) as second:
        stored = second.store.get_many(ids)
        assert frame_dictionary(stored[ids[-1]]) == held  # the same id, another dictionary
        snapshot = second.objects.load_commit(ids[0]).snapshot
        built = [
            second.objects.build_commit(
                snapshot, [ids[-1]], message=f"more {turn}", author="a", timestamp=_T0
            )
            for turn in range(5)
        ]
        second.objects.put(dict(built))
        more = [commit_id for commit_id, _ in built]
        assert all(d[:4] != ZSTD_MAGIC for d in second.store.get_many(more).values())
        with pytest.raises(CorruptObject):  # read with the other repository's dictionary
            second.objects.load_commit(ids[-1])
    messages = _in_child(_read_commits, path, ids + more)
    assert messages == [f"loop step {t}" for t in range(100)] + [f"more {t}" for t in range(5)]
