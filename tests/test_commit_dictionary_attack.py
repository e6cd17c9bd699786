"""Attacks on commits compressed with a dictionary of their own (tests/test_commit_dictionary.py
holds what the feature promises; these are the ways it was found to break, and the places it
was tried and held).

Every reader here runs where it matters: in a new process (spawn) that never registered a
dictionary, against real stores.
"""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_upgrade import unpack_fixture

from statevcs import Repo, Snapshot, compression, objectdb
from statevcs.compression import ZSTD_MAGIC, frame_dictionary
from statevcs.hashing import ObjectId, from_hex
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


_PINNED_IDS = range(0x5000_0000, 0x5000_0002)
"""Commit dictionary ids drawn from two values only, so two repositories collide on purpose
(with the real 2**28 values no salt that collides can be found by trying)."""
_COLLIDING_SALT = 1
"""With this salt, the commits above train a dictionary whose id, drawn from
:data:`_PINNED_IDS`, equals the one salt 0 trains (found by trying salts)."""


@pytest.fixture
def pinned_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compression, "COMMIT_DICTIONARY_IDS", _PINNED_IDS)


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
    tmp_path: Path, pinned_ids: None
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
    compression.COMMIT_DICTIONARY_IDS = _PINNED_IDS
    with Repo.init(path) as repo:
        answers.send(_plumbing_commits(repo.objects, _COLLIDING_SALT, 100))


def test_a_repository_whose_dictionary_id_another_open_repository_holds_here(
    tmp_path: Path, pinned_ids: None
) -> None:
    """The collision the other way round: the second repository trained elsewhere, and both
    are open here at once. Each is read and written with its own dictionary: a process keeps
    dictionaries per repository (``Store.identity``), as frames name them by id alone. (The
    first fix refused the second repository's dictionary in such a process instead.)"""
    with Repo.init(tmp_path / "a") as first:
        first_ids = _plumbing_commits(first.objects, 0, 100)
        held = frame_dictionary(first.store.get_many([first_ids[-1]])[first_ids[-1]])
        path = str(tmp_path / "b")
        ids = _in_child(_write_colliding, path)
        with Repo.open(path) as second:
            stored = second.store.get_many(ids)
            assert frame_dictionary(stored[ids[-1]]) == held  # the same id, another dictionary
            assert stored[ids[-1]][:4] == ZSTD_MAGIC
            snapshot = second.objects.load_commit(ids[0]).snapshot
            built = [
                second.objects.build_commit(
                    snapshot,
                    [ids[-1]],
                    message=f"more {turn}",
                    author="a",
                    timestamp=_T0,
                    metadata={"pad": "x" * 300},  # large enough to be compressed
                )
                for turn in range(5)
            ]
            second.objects.put(dict(built))
            more = [commit_id for commit_id, _ in built]
            written = second.store.get_many(more).values()
            assert all(frame_dictionary(d) == held for d in written)  # its own, same id
            # Reads of both repositories, interleaved, each with its own dictionary.
            for turn in (0, 50, 99):
                assert second.objects.load_commit(ids[turn]).message == f"loop step {turn}"
                assert first.objects.load_commit(first_ids[turn]).message == f"loop step {turn}"
            assert second.fsck().ok
            assert first.fsck().ok
    messages = _in_child(_read_commits, path, ids + more)
    assert messages == [f"loop step {t}" for t in range(100)] + [f"more {t}" for t in range(5)]


# --- what held: readers in a new process, differential, upgrade, S3 without a cache ----------


def _metadata(turn: int) -> dict[str, Any]:
    """Shaped like a LangGraph checkpoint's metadata: repeated keys, changing numbers."""
    return {
        "framework": {
            "checkpoint_id": f"1f1eaf85-{turn:04x}-6908-8000-b84911563df3",
            "channels": {"v": 4, "channel_versions": {"messages": turn + 2}, "step": turn},
        },
        "source": "loop",
        "step": turn,
    }


def _workload(repo: Repo, turns: int = 150) -> list[str]:
    state: dict[str, Any] = {"messages": [], "turn": 0}
    ids = []
    for turn in range(turns):
        state["messages"].append({"role": "user", "content": f"question {turn}"})
        state["turn"] = turn
        ids.append(repo.commit(state, message=f"step {turn}", metadata=_metadata(turn)).id)
    repo.branch("side", ids[50])
    return ids


def _everything(path: str, answers: Any) -> None:
    """What a person reads: every commit's log entry and show, merge base, fsck, the graph."""
    with Repo.open(path) as repo:
        log = [(c.id, c.message, c.metadata, c.parents, c.snapshot_id) for c in repo.log("main")]
        shows = {c[0]: _shown(repo, c[0]) for c in log[::7]}
        base = repo.merge_base("main", "side")
        report = repo.fsck()
        answers.send((log, shows, base, report.ok, [str(p) for p in report.problems]))


def _shown(repo: Repo, rev: str) -> list[Any]:
    snap = repo.show(rev)
    return [snap.kind, snap.messages, snap.state, snap.extras]


def test_log_and_show_are_the_same_with_and_without_commit_compression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compressed, plain = tmp_path / "compressed", tmp_path / "plain"
    with Repo.init(compressed) as repo:
        _workload(repo)
        assert repo.store.config_get(COMMIT_DICTIONARY_KEY) is not None
    with monkeypatch.context() as patched:
        patched.setattr(objectdb, "COMMIT_TRAIN_AFTER", 1 << 40)
        with Repo.init(plain) as repo:
            _workload(repo)
            assert repo.store.config_get(COMMIT_DICTIONARY_KEY) is None
    one = _in_child(_everything, str(compressed))
    other = _in_child(_everything, str(plain))
    assert one[3] and other[3], (one[4], other[4])

    def without_ids_and_times(found: Any) -> Any:
        log, shows, _base, _ok, _problems = found
        return [(m, d) for _i, m, d, _p, _s in log], sorted(map(repr, shows.values()))

    assert without_ids_and_times(one) == without_ids_and_times(other)
    assert len(one[0]) == 150 and one[2] == one[0][99][0]  # side forks at step 50


def _upgrade_then_write(folder: str, answers: Any) -> None:
    with Repo.open(folder) as repo:
        repo.upgrade()
    with Repo.open(folder) as repo:
        agent: dict[str, Any] = {}
        repo.checkout(agent, "main")
        for turn in range(250):
            agent["turn"] = turn
            repo.commit(agent, f"after the upgrade {turn}", metadata=_metadata(turn))
        answers.send(repo.store.config_get(COMMIT_DICTIONARY_KEY))


def test_an_upgraded_format_1_repository_trains_and_old_ids_still_resolve(tmp_path: Path) -> None:
    folder, expected, shows = unpack_fixture(tmp_path)
    assert _in_child(_upgrade_then_write, str(folder)) is not None
    log, _shows, _base, ok, problems = _in_child(_everything_main_only, str(folder))
    assert ok, problems
    assert [m for _i, m, *_ in log[:250]] == [f"after the upgrade {t}" for t in range(249, -1, -1)]
    with Repo.open(folder) as repo:
        for commit_id in expected["commits"]:  # format-1 ids, through the upgrade map
            assert _shown(repo, commit_id) == shows[commit_id]
        repo.gc(grace=timedelta(0))
        assert repo.fsck().ok
    assert _in_child(_everything_main_only, str(folder))[0] == log


def _everything_main_only(path: str, answers: Any) -> None:
    with Repo.open(path) as repo:
        log = [(c.id, c.message, c.metadata) for c in repo.log("main")]
        report = repo.fsck()
        answers.send((log, None, None, report.ok, [str(p) for p in report.problems]))


def _s3_log(url: str, answers: Any) -> None:
    with Repo.open(url) as repo:
        logged = [(c.id, c.message, c.metadata) for c in repo.log("main")]
        state: dict[str, Any] = {}
        repo.checkout(state, "main~3")
        answers.send((logged, state["turn"], repo.fsck().ok))


def test_s3_without_a_cache_reads_compressed_commits_in_a_new_process(s3_url: str) -> None:
    with Repo.init(s3_url) as repo:
        ids = _workload(repo, 200)
        frames = [d for d in repo.store.get_many([from_hex(i) for i in ids]).values()]
        assert sum(d[:4] == ZSTD_MAGIC for d in frames) > 20
        expected = [(c.id, c.message, c.metadata) for c in repo.log("main")]
    cold = s3_url + ("&" if "?" in s3_url else "?") + "cache=none"
    logged, turn, ok = _in_child(_s3_log, cold)
    assert logged == expected
    assert turn == 196
    assert ok
