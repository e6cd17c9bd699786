"""Attacks on how a folder's SQLite file is recognised as a repository (``read_config``)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import statevcs
from statevcs import Repo
from statevcs.stores.sqlite import DB_FILENAME, SQLiteStore


def test_a_repository_whose_creation_has_not_finished_is_not_called_another_version(
    tmp_path: Path,
) -> None:
    # What a process opening the folder sees while another is inside Repo.init: the tables
    # exist, the config (format, HEAD) is written in later transactions.
    SQLiteStore(tmp_path / DB_FILENAME).close()
    with pytest.raises(statevcs.RepositoryError) as caught:
        Repo.open(tmp_path)
    assert "matching statevcs version" not in str(caught.value)
    assert "try again" in str(caught.value)


def _crashed_copy(source: Path, target: Path) -> None:
    """``target`` gets the files a process killed while holding ``source`` open leaves,
    minus the shared memory (a reboot, or a tidy-up, removed it): the log has content."""
    target.mkdir()
    for suffix in ("", "-wal"):
        shutil.copyfile(source.with_name(source.name + suffix), target / (DB_FILENAME + suffix))


@pytest.mark.xfail(
    strict=True,
    reason="a write-ahead log with content is read through a normal read-only connection, "
    "which creates the -shm file beside another application's database when it has none",
)
def test_a_foreign_wal_database_left_by_a_crash_gets_no_shared_memory_file(
    tmp_path: Path,
) -> None:
    live = tmp_path / "live" / "notes.sqlite3"
    live.parent.mkdir()
    db = sqlite3.connect(live)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA wal_autocheckpoint=0")
        with db:
            db.execute("CREATE TABLE notes (body TEXT)")
            db.execute("INSERT INTO notes VALUES ('mine')")
        folder = tmp_path / "repo"
        _crashed_copy(live, folder)
    finally:
        db.close()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert (folder / f"{DB_FILENAME}-wal").stat().st_size > 0
    with pytest.raises(statevcs.RepositoryNotFound):
        Repo.open(folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_repository_left_by_a_crash_opens_with_every_commit(tmp_path: Path) -> None:
    live = tmp_path / "live"
    repo = Repo.init(live)
    try:
        repo.store._db.execute("PRAGMA wal_autocheckpoint=0")  # type: ignore[attr-defined]
        for i in range(3):
            repo.commit({"messages": [{"role": "user", "content": f"m{i}"}]}, message=f"c{i}")
        _crashed_copy(live / DB_FILENAME, tmp_path / "repo")
    finally:
        repo.close()
    with Repo.open(tmp_path / "repo") as reopened:
        assert [c.message for c in reopened.log()] == ["c2", "c1", "c0"]
        state: dict[str, object] = {}
        reopened.checkout(state, "main")
        assert state == {"messages": [{"role": "user", "content": "m2"}]}


@contextmanager
def _read_only(folder: Path) -> Iterator[Path]:
    """``folder``'s files on a read-only filesystem (a tmpfs remounted read-only when run as
    root, since root ignores permissions; else the folder made read-only)."""
    if os.geteuid() != 0:
        os.chmod(folder, 0o555)
        try:
            yield folder
        finally:
            os.chmod(folder, 0o755)
        return
    mount = folder.with_name(folder.name + "-ro")
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=True)
    try:
        for file in folder.iterdir():
            shutil.copyfile(file, mount / file.name)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.parametrize("crashed", [False, True], ids=["clean", "crashed"])
def test_a_repository_on_read_only_media_is_not_called_a_stranger(
    tmp_path: Path, crashed: bool
) -> None:
    live = tmp_path / "live"
    repo = Repo.init(live)
    try:
        repo.store._db.execute("PRAGMA wal_autocheckpoint=0")  # type: ignore[attr-defined]
        repo.commit({"n": 1}, message="kept")
        if crashed:
            _crashed_copy(live / DB_FILENAME, tmp_path / "repo")
    finally:
        repo.close()
    if not crashed:
        shutil.copytree(live, tmp_path / "repo")
    with _read_only(tmp_path / "repo") as folder:
        try:
            Repo.open(folder).close()
        except statevcs.RepositoryNotFound:
            raise
        except statevcs.StoreError as error:
            # Not openable there (SQLite needs its shared memory file): it must say why.
            assert "permissions" in str(error)
