"""Damaged objects and damaged files: only StateVCSError comes out, fsck names the damage."""

from __future__ import annotations

import contextlib
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import statevcs
from statevcs import Repo
from statevcs.hashing import to_hex

DB = "statevcs.sqlite3"


def _history(folder: Path) -> None:
    """Create a small repository with big and small values, a branch and a tag."""
    with Repo.init(folder) as repo:
        state: dict[str, Any] = {"messages": []}
        for i in range(12):
            state["messages"].append({"role": "user", "content": f"turn {i} " + "t" * 80})
            state["counter"] = i
            state["big"] = "b" * (70_000 if i == 5 else 200)
            repo.commit(state, message=f"turn {i}")
        repo.branch("side", "main~4")
        repo.tag("v1", "main~2")


def _readers(repo: Repo) -> list[tuple[str, Callable[[], object]]]:
    return [
        ("log", lambda: list(repo.log("main"))),
        ("log_all", lambda: list(repo.log_all())),
        ("show", lambda: repo.show("main")),
        ("show side", lambda: repo.show("side")),
        ("checkout", lambda: repo.checkout({}, "v1")),
        ("diff", lambda: repo.diff("side", "main")),
        ("reflog", lambda: repo.reflog("main")),
        ("stats", repo.stats),
    ]


def _only_statevcs_errors(folder: Path) -> tuple[list[str], statevcs.FsckReport | None]:
    """Open and read everything; return which calls failed (each with a StateVCSError).

    Any other exception fails the test. The fsck report is ``None`` when SQLite refused the
    file as malformed (a StoreError).
    """
    failed: list[str] = []
    try:
        repo = Repo.open(folder)
    except statevcs.StateVCSError:
        return ["open"], None
    with repo:
        for name, call in _readers(repo):
            try:
                call()
            except statevcs.StateVCSError:
                failed.append(name)
        try:
            report = repo.fsck()
        except statevcs.StoreError:
            # SQLite itself refuses a malformed file: that is named, not a crash.
            failed.append("fsck")
            report = None
    return failed, report


def _objects(folder: Path) -> list[tuple[bytes, bytes]]:
    with sqlite3.connect(folder / DB) as db:
        return [(bytes(i), bytes(d)) for i, d in db.execute("SELECT id, data FROM objects")]


def _set_object(folder: Path, object_id: bytes, data: bytes) -> None:
    db = sqlite3.connect(folder / DB)
    with db:
        db.execute("UPDATE objects SET data = ? WHERE id = ?", (data, object_id))
    db.close()


@pytest.mark.parametrize("position", ["first", "middle", "last"])
def test_flipped_byte_in_every_object_is_named_by_fsck(tmp_path: Path, position: str) -> None:
    folder = tmp_path / "repo"
    _history(folder)
    objects = _objects(folder)
    assert len(objects) > 20
    for object_id, data in objects:
        at = {"first": 0, "middle": len(data) // 2, "last": len(data) - 1}[position]
        damaged = data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]
        _set_object(folder, object_id, damaged)
        failed, report = _only_statevcs_errors(folder)
        assert report is not None and "open" not in failed
        named = [p for p in report.problems if to_hex(object_id) in p]
        assert named, f"fsck did not name damaged object {to_hex(object_id)}: {report.problems}"
        _set_object(folder, object_id, data)
    failed, report = _only_statevcs_errors(folder)
    assert failed == [] and report is not None and report.problems == ()


def test_deleted_object_is_named_by_fsck(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    _history(folder)
    for object_id, data in _objects(folder)[::3]:
        with sqlite3.connect(folder / DB) as db:
            db.execute("DELETE FROM objects WHERE id = ?", (object_id,))
        _failed, report = _only_statevcs_errors(folder)
        assert report is not None
        assert any(to_hex(object_id) in p for p in report.problems), report.problems
        with sqlite3.connect(folder / DB) as db:
            db.execute(
                "INSERT INTO objects (id, data, created) VALUES (?, ?, 0)", (object_id, data)
            )


@pytest.mark.parametrize(
    ("target", "description"),
    [
        (bytes(32), "a ref to an object that does not exist"),
        (b"\x01\x02", "a ref that is not a 32-byte id"),
        ("text", "a ref stored as text"),
    ],
)
def test_damaged_ref_is_named_by_fsck(tmp_path: Path, target: object, description: str) -> None:
    folder = tmp_path / "repo"
    _history(folder)
    with sqlite3.connect(folder / DB) as db:
        db.execute("UPDATE refs SET target = ? WHERE name = 'refs/heads/side'", (target,))
    failed, report = _only_statevcs_errors(folder)
    assert report is not None, description
    assert "show side" in failed, description
    assert any("side" in p for p in report.problems), (description, report.problems)


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE objects SET id = 'text-id' WHERE rowid = (SELECT max(rowid) FROM objects)",
        "UPDATE objects SET data = 'text' WHERE rowid = (SELECT max(rowid) FROM objects)",
        "UPDATE objects SET data = 12 WHERE rowid = (SELECT max(rowid) FROM objects)",
        "UPDATE reflog SET ts = 'yesterday'",
        "UPDATE reflog SET old = 'abc', new = x'0102'",
    ],
)
def test_damaged_rows_raise_statevcs_errors(tmp_path: Path, damage: str) -> None:
    # What a damaged page or another program can leave in a row: the wrong SQLite type.
    folder = tmp_path / "repo"
    _history(folder)
    with sqlite3.connect(folder / DB) as db:
        db.execute(damage)
    with Repo.open(folder) as repo:
        calls: list[Callable[[], object]] = [
            *(call for _name, call in _readers(repo)),
            repo.fsck,
            lambda: repo.reflog("HEAD"),
            lambda: repo.gc("0", dry_run=True),
        ]
        for call in calls:
            with contextlib.suppress(statevcs.StateVCSError):
                call()


def test_foreign_object_of_the_wrong_kind_is_named_by_fsck(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    _history(folder)
    with Repo.open(folder) as repo:
        snapshot_id = repo.get_commit("main").snapshot_id
    # The branch names a snapshot where a commit belongs.
    with sqlite3.connect(folder / DB) as db:
        db.execute(
            "UPDATE refs SET target = ? WHERE name = 'refs/heads/side'",
            (bytes.fromhex(snapshot_id),),
        )
    failed, report = _only_statevcs_errors(folder)
    assert report is not None and "show side" in failed
    assert any("side" in p or snapshot_id in p for p in report.problems), report.problems


def _wal_gone(folder: Path) -> None:
    assert not (folder / (DB + "-wal")).exists() or (folder / (DB + "-wal")).stat().st_size == 0


@pytest.mark.parametrize("keep", [0.0, 0.1, 0.5, 0.9, 0.99])
def test_truncated_database_file(tmp_path: Path, keep: float) -> None:
    folder = tmp_path / "repo"
    _history(folder)
    _wal_gone(folder)
    size = (folder / DB).stat().st_size
    with open(folder / DB, "r+b") as file:
        file.truncate(int(size * keep))
    _only_statevcs_errors(folder)


def test_truncated_database_file_at_every_page(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    _history(folder)
    original = (folder / DB).read_bytes()
    page = 4096
    for end in range(page, len(original), page):
        (folder / DB).write_bytes(original[:end])
        _only_statevcs_errors(folder)


def test_random_pages_overwritten(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    _history(folder)
    original = (folder / DB).read_bytes()
    rng = random.Random(7)
    for _ in range(20):
        damaged = bytearray(original)
        at = rng.randrange(100, len(original) - 64)
        damaged[at : at + 64] = rng.randbytes(64)
        (folder / DB).write_bytes(bytes(damaged))
        _only_statevcs_errors(folder)


def test_deleted_database_file(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    _history(folder)
    (folder / DB).unlink()
    with pytest.raises(statevcs.RepositoryNotFound):
        Repo.open(folder)
    assert not (folder / DB).exists()


def test_database_file_deleted_under_an_open_handle(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    _history(folder)
    with Repo.open(folder) as repo:
        for suffix in ("", "-wal", "-shm"):
            if (folder / (DB + suffix)).exists():
                (folder / (DB + suffix)).unlink()
        for _name, call in _readers(repo):
            with contextlib.suppress(statevcs.StateVCSError):
                call()
        with contextlib.suppress(statevcs.StateVCSError):
            repo.commit({"messages": []}, message="into a deleted file")


def _foreign_sqlite(path: Path) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("INSERT INTO users (name) VALUES ('alice')")
    db.close()


def _lookalike_sqlite(path: Path) -> None:
    """Another application's database that happens to use statevcs's table names."""
    db = sqlite3.connect(path)
    with db:
        for table in ("objects", "refs", "reflog", "config"):
            db.execute(f"CREATE TABLE {table} (whatever TEXT)")
        db.execute("INSERT INTO config VALUES ('x')")
    db.close()


def _foreign_wal_sqlite(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    with db:
        db.execute("CREATE TABLE notes (body TEXT)")
    db.close()


@pytest.mark.parametrize(
    "make",
    [
        lambda path: path.write_bytes(b""),
        lambda path: path.write_bytes(random.Random(1).randbytes(8192)),
        lambda path: path.write_bytes(b"SQLite format 3\x00" + random.Random(2).randbytes(8000)),
        lambda path: path.write_text("not a database at all\n"),
        _foreign_sqlite,
        _lookalike_sqlite,
        _foreign_wal_sqlite,
    ],
    ids=["zero-bytes", "random", "sqlite-header-random", "text", "foreign", "lookalike", "wal"],
)
def test_foreign_file_is_refused_and_left_byte_for_byte(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    make(folder / DB)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    for target in (folder, folder / DB):
        with pytest.raises(statevcs.StateVCSError, match="not a statevcs repository"):
            Repo.open(target)
    with pytest.raises(statevcs.RepositoryExists):
        Repo.init(folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_commit_does_not_overwrite_an_unreadable_ref(tmp_path: Path) -> None:
    # The ref row is there but its value is not an id: the branch's history must not be
    # silently replaced by a commit with no parent.
    folder = tmp_path / "repo"
    _history(folder)
    with sqlite3.connect(folder / DB) as db:
        db.execute("UPDATE refs SET target = 'damaged' WHERE name = 'refs/heads/main'")
    before = (folder / DB).read_bytes()
    with Repo.open(folder) as repo:
        assert repo.fsck().problems != ()
        with pytest.raises(statevcs.StateVCSError):
            repo.commit({"messages": []}, message="over a damaged ref")
    with sqlite3.connect(folder / DB) as db:
        assert db.execute("SELECT target FROM refs WHERE name = 'refs/heads/main'").fetchone() == (
            "damaged",
        )
    assert before
