"""Attacks on commits compressed with a dictionary of their own (tests/test_commit_dictionary.py
holds what the feature promises; these are the ways it was found to break, and the places it
was tried and held).

Every reader here runs where it matters: in a new process (spawn) that never registered a
dictionary, against real stores.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dulwich.repo import Repo as GitRepo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import in_child
from test_upgrade import unpack_fixture

from statevcs import Repo, Snapshot, compression, objectdb
from statevcs.compression import ZSTD_MAGIC, frame_dictionary
from statevcs.errors import CorruptObject, MissingObject, StateVCSError
from statevcs.hashing import ObjectId, from_hex, to_hex
from statevcs.objectdb import COMMIT_DICTIONARY_KEY
from statevcs.objects import Blob, ZstdDictionary, encode_with_id
from statevcs.plumbing import ObjectDatabase
from statevcs.serializers import JSONSerializer
from statevcs.stores.sqlite import DB_FILENAME, SQLiteStore

_T0 = datetime(2026, 1, 1, tzinfo=UTC)


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
    messages = in_child("spawn", _read_commits, str(tmp_path / "b"), ids)
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
        ids = in_child("spawn", _write_colliding, path)
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
    messages = in_child("spawn", _read_commits, path, ids + more)
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
    one = in_child("spawn", _everything, str(compressed))
    other = in_child("spawn", _everything, str(plain))
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
    assert in_child("spawn", _upgrade_then_write, str(folder)) is not None
    log, _shows, _base, ok, problems = in_child("spawn", _everything_main_only, str(folder))
    assert ok, problems
    assert [m for _i, m, *_ in log[:250]] == [f"after the upgrade {t}" for t in range(249, -1, -1)]
    with Repo.open(folder) as repo:
        for commit_id in expected["commits"]:  # format-1 ids, through the upgrade map
            assert _shown(repo, commit_id) == shows[commit_id]
        repo.gc(grace=timedelta(0))
        assert repo.fsck().ok
    assert in_child("spawn", _everything_main_only, str(folder))[0] == log


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
    logged, turn, ok = in_child("spawn", _s3_log, cold)
    assert logged == expected
    assert turn == 196
    assert ok


# --- hostile config and bytes: documented errors, nothing written --------------------------


def _untrained(path: Path) -> tuple[Repo, dict[str, Any]]:
    repo = Repo.init(path)
    agent: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}
    repo.commit(agent, "first", metadata=_metadata(0))
    return repo, agent


def _contents(path: Path) -> tuple[Any, ...]:
    db = sqlite3.connect(path / DB_FILENAME)
    try:
        return tuple(
            sorted(db.execute(f"SELECT * FROM {table}").fetchall()) for table in ("objects", "refs")
        )
    finally:
        db.close()


def _hostile_names(repo: Repo) -> dict[str, str]:
    """Config values naming things that are no commit dictionary."""
    blob_id, blob = encode_with_id(Blob(b"not a dictionary" * 300))
    damaged_id, damaged = encode_with_id(ZstdDictionary(b"\x37\xa4\x30\xec" + b"\0" * 2000))
    repo.store.put_many({blob_id: blob, damaged_id: damaged})
    return {
        "missing": "ab" * 32,
        "a blob": to_hex(blob_id),
        "a damaged dictionary": to_hex(damaged_id),
        "not hex": "zz",
    }


@pytest.mark.parametrize("which", ["missing", "a blob", "a damaged dictionary", "not hex"])
def test_a_commit_dictionary_key_naming_no_dictionary_refuses_commits_and_writes_nothing(
    tmp_path: Path, which: str
) -> None:
    path = tmp_path / "repo"
    first, agent = _untrained(path)
    with first:
        first.store.config_set(COMMIT_DICTIONARY_KEY, _hostile_names(first)[which])
    before = _contents(path)
    repo = Repo.open(path)  # a handle that looks the key up
    try:
        agent["messages"].append({"role": "user", "content": "again"})
        with pytest.raises(StateVCSError) as refused:
            repo.commit(agent, "second", metadata=_metadata(1))
        assert isinstance(refused.value, CorruptObject | MissingObject), refused.value
        assert _contents(path) == before
        assert not repo.fsck().ok  # named as a problem, not raised
        if which == "not hex":  # gc cannot know what the key keeps alive
            with pytest.raises(CorruptObject, match="restore the repository's config"):
                repo.gc(grace=timedelta(0))
        assert _contents(path) == before
        assert [c.message for c in repo.log()] == ["first"]
    finally:
        repo.close()


_FRAME_WITH_COMMIT_DICTIONARY = bytes.fromhex("28b52ffd23") + (0x5000_1234).to_bytes(4, "little")
"""A zstd frame header naming a commit dictionary (by its id range) this repository never had."""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tail=st.binary(max_size=300), object_id=st.binary(min_size=32, max_size=32))
def test_hostile_frames_naming_a_commit_dictionary_are_stored_and_read_as_corrupt(
    tail: bytes, object_id: bytes
) -> None:
    data = _FRAME_WITH_COMMIT_DICTIONARY + tail
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / DB_FILENAME)
        try:
            store.put_many({object_id: data})
            assert store.get_many([object_id]) == {object_id: data}
            db = ObjectDatabase(store, JSONSerializer())
            with pytest.raises(CorruptObject):
                db.load(object_id)
        finally:
            store.close()


# --- two writers training at once, and gc beside them ------------------------------------


def _writer(path: str, branch: str, start: Any, answers: Any) -> None:
    """Wait for the start, then write 150 commits on ``branch`` (it trains a dictionary)."""
    with Repo.open(path) as repo:
        start.wait(60)
        state: dict[str, Any] = {"messages": [], "turn": 0}
        ids = []
        for turn in range(150):
            state["messages"].append({"role": "user", "content": f"{branch} {turn}"})
            state["turn"] = turn
            commit = repo.commit(state, f"{branch} {turn}", metadata=_metadata(turn), branch=branch)
            ids.append(commit.id)
        answers.send(ids)


def _collector(path: str, start: Any, stop: Any, answers: Any) -> None:
    """Collect garbage with no grace, over and over, until told to stop."""
    with Repo.open(path) as repo:
        start.wait(60)
        rounds = 0
        while not stop.is_set() and rounds < 200:
            repo.gc(grace=timedelta(0))
            rounds += 1
        answers.send(rounds)


def test_two_processes_training_at_once_beside_gc_leave_every_commit_readable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "repo"
    with Repo.init(path) as repo:
        repo.commit({"turn": -1}, "root")
    context = multiprocessing.get_context("spawn")
    start, stop = context.Event(), context.Event()
    pipes = [context.Pipe(duplex=False) for _ in range(3)]
    children = [
        context.Process(target=_writer, args=(str(path), "one", start, pipes[0][1])),
        context.Process(target=_writer, args=(str(path), "two", start, pipes[1][1])),
        context.Process(target=_collector, args=(str(path), start, stop, pipes[2][1])),
    ]
    for child in children:
        child.start()
    try:
        start.set()
        written = []
        for receiving, _ in pipes[:2]:
            assert receiving.poll(300), "a writer ended without answering"
            written.append(receiving.recv())
        stop.set()
        assert pipes[2][0].poll(300), "the collector ended without answering"
        assert pipes[2][0].recv() >= 1
    finally:
        for child in children:
            child.join(60)
    for branch, ids in zip(("one", "two"), written, strict=True):
        log, _shows, _base, ok, problems = in_child("spawn", _branch_log, str(path), branch)
        assert ok, problems
        assert [i for i, *_ in log][:150] == ids[::-1]
        assert [m for _i, m, *_ in log][:150] == [f"{branch} {t}" for t in range(149, -1, -1)]
    with Repo.open(path) as repo:
        stored = repo.store.get_many([from_hex(i) for ids in written for i in ids])
        # How many commits each writer wrote after training depends on the race (which writer
        # trained first, gc retries): that some were compressed, each with a dictionary the
        # repository names, is what holds every time.
        frames = [d for d in stored.values() if d[:4] == ZSTD_MAGIC]
        assert frames
        for dict_id in {frame_dictionary(d) for d in frames}:
            assert repo.store.config_get(f"core.zstd-dict.{dict_id:08x}") is not None


def _branch_log(path: str, branch: str, answers: Any) -> None:
    with Repo.open(path) as repo:
        log = [(c.id, c.message, c.metadata) for c in repo.log(branch)]
        report = repo.fsck()
        answers.send((log, None, None, report.ok, [str(p) for p in report.problems]))


# --- the git mirror: export, import into a new repository, export again ------------------


def _cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "statevcs", "-P", "--color", "never", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_git_mirror_round_trip_of_compressed_commits_is_exact(tmp_path: Path) -> None:
    source, copy = tmp_path / "source", tmp_path / "copy"
    with Repo.init(source) as repo:
        _workload(repo)
        assert repo.store.config_get(COMMIT_DICTIONARY_KEY) is not None
    _cli("-C", str(source), "export-git", str(tmp_path / "one.git"))
    _cli("init", str(copy))
    _cli("-C", str(copy), "import-git", str(tmp_path / "one.git"))
    _cli("-C", str(copy), "export-git", str(tmp_path / "two.git"))
    one, two = GitRepo(str(tmp_path / "one.git")), GitRepo(str(tmp_path / "two.git"))
    try:
        heads = {n: v for n, v in one.get_refs().items() if n.startswith(b"refs/heads/")}
        assert heads and heads == {
            n: v for n, v in two.get_refs().items() if n.startswith(b"refs/heads/")
        }
    finally:
        one.close()
        two.close()
    assert (
        in_child("spawn", _everything, str(source))[:3]
        == in_child("spawn", _everything, str(copy))[:3]
    )
    with Repo.open(copy) as repo:
        assert repo.store.config_get(COMMIT_DICTIONARY_KEY) is not None  # the copy trained too


# --- the history browser and the MCP queries, served by a new process ----------------------


def _served(path: str, answers: Any) -> None:
    """What the history browser's API and the MCP tools answer about every commit."""
    from starlette.testclient import TestClient

    from statevcs.cli.web.api import HistoryBrowser
    from statevcs.cli.web.app import build_app
    from statevcs.mcpserver import queries

    with Repo.open(path) as repo:
        client = TestClient(build_app(HistoryBrowser(repo)), base_url="http://127.0.0.1")
        graph = client.get("/api/graph", params={"limit": 200}).json()
        ids = [c.id for c in repo.log("main")]
        pages = [client.get("/api/commit", params={"rev": i}).json() for i in ids[::10]]
        logged = queries.log(repo, "main", limit=200)
        shown = [queries.show(repo, i) for i in ids[::10]]
        answers.send((graph, pages, logged, shown))


def test_the_history_browser_and_mcp_answer_the_same_from_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    with Repo.init(path) as repo:
        _workload(repo)
        assert repo.store.config_get(COMMIT_DICTIONARY_KEY) is not None
    fresh = in_child("spawn", _served, str(path))
    again = in_child("spawn", _served, str(path))  # the graph now written: answered from it
    assert fresh == again
    graph, pages, logged, shown = fresh
    assert len(logged["commits"]) == 150
    assert [c["message"] for c in logged["commits"]] == [f"step {t}" for t in range(149, -1, -1)]
    assert all("error" not in p for p in pages) and all("error" not in s for s in shown)
    assert "error" not in graph
    drawn = repr(graph)
    assert all(c["id"][:12] in drawn for c in logged["commits"])
