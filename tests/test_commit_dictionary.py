"""Commits compressed with a dictionary of their own (format 2).

A framework's commits carry metadata that repeats from one commit to the next (a LangGraph
checkpoint's ids and channel versions), which zstd cannot find inside one small commit. After
its first :data:`~statevcs.objectdb.COMMIT_TRAIN_AFTER` bytes of commits, a repository trains a
dictionary on them and compresses later commits with it. What must hold: every commit reads
back exactly, in a process that never saw the dictionary too; history walks, the SQLite
parents index, the commit graph, fsck and gc work on compressed commits; the dictionary is a
gc root and its config keys cannot be set by hand.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from support import in_child

import statevcs
from statevcs import Repo
from statevcs.compression import (
    ZSTD_MAGIC,
    frame_dictionary,
    is_commit_dictionary,
    register_dictionary,
    train_dictionary,
)
from statevcs.errors import CorruptObject, RepositoryError
from statevcs.hashing import from_hex
from statevcs.objectdb import COMMIT_DICTIONARY_KEY, unpack_stored
from statevcs.stores.sqlite import DB_FILENAME, SQLiteStore

TURNS = 200  # ~75 KB of commits: the dictionary trains after the first 32 KB


def _metadata(turn: int) -> dict[str, Any]:
    """Metadata shaped like a LangGraph checkpoint's: repeated keys, changing numbers."""
    versions = {"__start__": turn + 1, "messages": turn + 2, "branch:to:agent": turn + 2}
    return {
        "framework": {
            "checkpoint_id": f"1f1eaf85-{turn:04x}-6908-8000-b84911563df3",
            "parent_checkpoint_id": f"1f1eaf85-{turn - 1:04x}-6944-bfff-a3061bf22370",
            "channels": json.dumps({"v": 4, "channel_versions": versions, "step": turn}),
        },
        "source": "loop",
        "step": turn,
    }


def _fill(repo: Repo, turns: int = TURNS, branch: str = "main") -> list[str]:
    state: dict[str, Any] = {"messages": [], "turn": 0}
    ids = []
    for turn in range(turns):
        state["messages"].append({"role": "user", "content": f"question {turn} on {branch}"})
        state["turn"] = turn
        commit = repo.commit(state, message=f"loop step {turn}", metadata=_metadata(turn))
        ids.append(commit.id)
    return ids


def _stored(repo: Repo, commit_id: str) -> bytes:
    data = repo.store.get_many([from_hex(commit_id)])[from_hex(commit_id)]
    assert isinstance(data, bytes)
    return data


@pytest.fixture(params=["memory", "sqlite", "s3"])
def any_repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Repo, str]]:
    """A new repository on each store, and the location another handle opens it by."""
    target: str | Path
    if request.param == "s3":
        target = request.getfixturevalue("s3_url")
    else:
        target = "memory://" if request.param == "memory" else tmp_path / "repo"
    with Repo.init(target) as repository:
        yield repository, "" if request.param == "memory" else str(target)


def test_commits_after_the_first_ones_are_stored_compressed_and_read_back_exactly(
    any_repo: tuple[Repo, str],
) -> None:
    repo, location = any_repo
    ids = _fill(repo)
    stored = [_stored(repo, i) for i in ids]
    compressed = {i: d for i, d in zip(ids, stored, strict=True) if d[:4] == ZSTD_MAGIC}
    assert stored[0][:4] != ZSTD_MAGIC  # before the dictionary: plain
    assert len(compressed) >= TURNS // 3
    assert all(is_commit_dictionary(frame_dictionary(d)) for d in compressed.values())
    # Compressed, they take well under half their plain size.
    plain = {i: unpack_stored(repo.store, from_hex(i), d) for i, d in compressed.items()}
    assert sum(map(len, compressed.values())) < 0.5 * sum(map(len, plain.values()))
    assert repo.store.config_get(COMMIT_DICTIONARY_KEY) is not None
    # A handle that never read the dictionary reads every commit back as written.
    handles = [repo] + ([Repo.open(location)] if location else [])
    for handle in handles:
        logged = list(handle.log("main"))
        assert [c.id for c in logged] == ids[::-1]
        for turn, commit in enumerate(reversed(logged)):
            assert commit.message == f"loop step {turn}"
            assert commit.metadata == _metadata(turn)
        back: dict[str, Any] = {}
        handle.checkout(back, ids[TURNS // 2])
        assert back["turn"] == TURNS // 2
        assert len(back["messages"]) == TURNS // 2 + 1
    for handle in handles[1:]:
        handle.close()


def test_a_format_1_repository_keeps_its_commits_plain(tmp_path: Path) -> None:
    with Repo.init(tmp_path / "old", storage_format=1) as repo:
        ids = _fill(repo, 120)
        assert all(_stored(repo, i)[:4] != ZSTD_MAGIC for i in ids)
        assert repo.store.config_get(COMMIT_DICTIONARY_KEY) is None


def _read_everything(path: str, answers: Any) -> None:
    """In a process that never registered the dictionary: log, walks, fsck, checkout."""
    with Repo.open(path) as repo:
        logged = [(c.id, c.message, c.metadata) for c in repo.log("main")]
        side = [c.id for c in repo.log("side")]
        base = repo.merge_base("main", "side")
        state: dict[str, Any] = {}
        repo.checkout(state, "main~5")
        report = repo.fsck()
        answers.send((logged, side, base, state, report.ok, [str(p) for p in report.problems]))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_new_process_walks_checks_and_reads_compressed_commits(
    tmp_path: Path, method: str
) -> None:
    path = tmp_path / "repo"
    with Repo.init(path) as repo:
        ids = _fill(repo)
        repo.branch("side", ids[100])
        side_state: dict[str, Any] = {}
        repo.checkout(side_state, "side")
        for turn in range(3):
            side_state["turn"] = 1000 + turn
            repo.commit(side_state, message=f"side {turn}", metadata=_metadata(1000 + turn))
        expected_log = [(c.id, c.message, c.metadata) for c in repo.log("main")]
        expected_side = [c.id for c in repo.log("side")]
        expected_state: dict[str, Any] = {}
        repo.checkout(expected_state, "main~5")
    logged, side, base, state, ok, problems = in_child(method, _read_everything, str(path))
    assert logged == expected_log
    assert side == expected_side
    assert base == ids[100]
    assert state == expected_state
    assert ok, problems


def test_the_sqlite_parents_index_covers_compressed_commits(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    with Repo.init(path) as repo:
        ids = _fill(repo)
    db = sqlite3.connect(path / "statevcs.sqlite3")
    rows = dict(db.execute("SELECT id, parents FROM objects WHERE parents IS NOT NULL"))
    db.close()
    for child, parent in zip(ids[1:], ids, strict=False):
        assert rows[from_hex(child)] == from_hex(parent)
    with Repo.open(path) as repo:
        # One read-ahead of the whole line answers from that index.
        found = repo.store.ancestry([from_hex(ids[-1])], 1000)
        assert {from_hex(i) for i in ids} <= set(found)


def _insert_foreign(path: str, commit_id: bytes, data: bytes, answers: Any) -> None:
    """A process that never registered the dictionary stores a compressed commit."""
    store = SQLiteStore(Path(path) / DB_FILENAME)
    try:
        store.put_many({commit_id: data})
    finally:
        store.close()
    db = sqlite3.connect(Path(path) / "statevcs.sqlite3")
    answers.send(db.execute("SELECT parents FROM objects WHERE id = ?", (commit_id,)).fetchone()[0])
    db.close()


def test_a_process_without_the_dictionary_indexes_the_parents_of_a_compressed_commit(
    tmp_path: Path,
) -> None:
    source = tmp_path / "source"
    with Repo.init(source) as repo:
        ids = _fill(repo)
        data = _stored(repo, ids[-1])
        assert data[:4] == ZSTD_MAGIC
    # A copy of the repository without that commit: the dictionary is in its config and
    # objects, and a fresh process puts the commit's stored bytes back.
    copy = tmp_path / "copy"
    copy.mkdir()
    source_db = sqlite3.connect(source / "statevcs.sqlite3")
    source_db.execute(f"VACUUM INTO '{copy / 'statevcs.sqlite3'}'")
    source_db.close()
    db = sqlite3.connect(copy / "statevcs.sqlite3")
    db.execute("DELETE FROM objects WHERE id = ?", (from_hex(ids[-1]),))
    db.commit()
    db.close()
    parents = in_child("spawn", _insert_foreign, str(copy), from_hex(ids[-1]), data)
    assert parents == from_hex(ids[-2])


def test_gc_keeps_the_commit_dictionary(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    with Repo.init(path) as repo:
        ids = _fill(repo)
        dictionary = repo.store.config_get(COMMIT_DICTIONARY_KEY)
        assert dictionary is not None
        repo.gc("0")
        assert repo.store.has_many([from_hex(dictionary)]) == {from_hex(dictionary)}
    assert in_child("spawn", _read_everything_after_gc, str(path)) == ids[::-1]


def _read_everything_after_gc(path: str, answers: Any) -> None:
    with Repo.open(path) as repo:
        answers.send([c.id for c in repo.log("main")])


def test_a_commit_frame_whose_dictionary_is_gone_is_named_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    with Repo.init(path) as repo:
        ids = _fill(repo)
        dict_id = frame_dictionary(_stored(repo, ids[-1]))
    db = sqlite3.connect(path / "statevcs.sqlite3")
    db.execute("DELETE FROM config WHERE key = ?", (f"core.zstd-dict.{dict_id:08x}",))
    db.execute("DELETE FROM config WHERE key = ?", (COMMIT_DICTIONARY_KEY,))
    db.commit()
    db.close()
    kind, message = in_child("spawn", _checkout_tip, str(path))
    assert kind == "CorruptObject"
    assert f"{dict_id:08x}" in message


def _checkout_tip(path: str, answers: Any) -> None:
    with Repo.open(path) as repo:
        try:
            repo.checkout({}, "main")
        except statevcs.StateVCSError as error:
            answers.send((type(error).__name__, str(error)))
        else:
            answers.send(("nothing", ""))


@pytest.mark.parametrize(
    "key",
    [COMMIT_DICTIONARY_KEY, "core.zstd-dictionary", "core.zstd-dict.50000001"],
)
def test_the_dictionary_keys_cannot_be_set_by_hand(tmp_path: Path, key: str) -> None:
    with Repo.init(tmp_path / "repo") as repo:
        before = repo.config.get(key)
        with pytest.raises(RepositoryError, match="belongs to statevcs"):
            repo.config.set(key, "00" * 32)
        assert repo.config.get(key) == before


def test_commit_dictionary_ids_carry_their_tag_in_the_users_range() -> None:
    samples = [msgpack.packb(["commit", i, _metadata(i)]) for i in range(200)]
    trained = train_dictionary(samples, 4096, for_commits=True)
    assert trained is not None
    dict_id = register_dictionary(trained)
    assert is_commit_dictionary(dict_id)
    assert 32_768 <= dict_id < 2**31  # the ids zstd leaves to users


def test_a_damaged_commit_frame_is_stored_unindexed_and_read_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    with Repo.init(path) as repo:
        ids = _fill(repo)
        data = _stored(repo, ids[-1])
    assert is_commit_dictionary(frame_dictionary(data))
    damaged = data[:-6] + bytes(6)
    db = sqlite3.connect(path / "statevcs.sqlite3")
    db.execute("DELETE FROM objects WHERE id = ?", (from_hex(ids[-1]),))
    db.commit()
    db.close()
    with Repo.open(path) as repo:
        repo.store.put_many({from_hex(ids[-1]): damaged})
        with pytest.raises(CorruptObject):
            repo.checkout({}, "main")
        assert not repo.fsck().ok
    db = sqlite3.connect(path / "statevcs.sqlite3")
    row = db.execute("SELECT parents FROM objects WHERE id = ?", (from_hex(ids[-1]),)).fetchone()
    db.close()
    assert row == (None,)


def test_small_commits_stay_plain_and_train_no_dictionary(tmp_path: Path) -> None:
    """A chat turn's commit (~126 bytes) is not worth compressing: none is sampled."""
    with Repo.init(tmp_path / "repo") as repo:
        state: dict[str, Any] = {"messages": [], "turn": 0}
        ids = []
        for turn in range(400):  # ~50 KB of commits, past the training threshold
            state["messages"].append({"role": "user", "content": f"q{turn}"})
            state["turn"] = turn
            ids.append(repo.commit(state, message=f"turn {turn}").id)
        stored = [_stored(repo, i) for i in ids]
        assert max(map(len, stored)) < 160
        assert all(d[:4] != ZSTD_MAGIC for d in stored)
        assert repo.store.config_get(COMMIT_DICTIONARY_KEY) is None


def test_a_commit_frame_declaring_more_than_a_megabyte_is_stored_unindexed(
    tmp_path: Path,
) -> None:
    """Expanding a frame only to index its parents is bounded (a hostile frame may declare
    256 MiB): a larger commit is stored as given, without a parents entry, and reads back."""
    from statevcs.compression import pack
    from statevcs.hashing import hash_bytes

    path = tmp_path / "repo"
    with Repo.init(path) as repo:
        ids = _fill(repo)
        dict_id = frame_dictionary(_stored(repo, ids[-1]))
        plain = msgpack.packb(
            ["commit", b"\1" * 32, [from_hex(ids[-1])], "a", 0, "big", {"pad": "x" * (2 << 20)}]
        )
        framed = pack(plain, dict_id, scope=repo.store.identity)
        assert framed[:4] == ZSTD_MAGIC and len(framed) < 100_000
        big_id = hash_bytes(plain)
        repo.store.put_many({big_id: framed})
        assert repo.objects.load(big_id) is not None
    db = sqlite3.connect(path / "statevcs.sqlite3")
    row = db.execute("SELECT parents FROM objects WHERE id = ?", (big_id,)).fetchone()
    db.close()
    assert row == (None,)
