"""SQLite's POSIX locks survive every way statevcs opens a repository in one process.

POSIX advisory locks belong to the process and any ``close`` of the database file drops them
all. If statevcs read the file with a plain handle while a ``Repo`` of the same process held
it, another process would take the database for unused: its last ``close`` checkpoints and
deletes the write-ahead log and shared memory under the live handle, and later opens fail
with "disk I/O error" (or worse, writes land in a deleted log).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import statevcs
from statevcs import Repo
from statevcs.stores.sqlite import DB_FILENAME, read_config

_OTHER_PROCESS = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("SELECT count(*) FROM refs").fetchall()
db.close()
"""


def _other_process_opens_and_closes(db_file: Path) -> None:
    subprocess.run([sys.executable, "-c", _OTHER_PROCESS, str(db_file)], check=True, timeout=60)


def test_opening_a_second_handle_keeps_the_first_handles_locks(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    db_file = folder / DB_FILENAME
    with Repo.init(folder) as repo:
        repo.commit({"messages": [{"role": "user", "content": "kept"}]}, message="one")
        Repo.open(folder).close()
        read_config(db_file)
        # Another process that opens and closes the database must still see it in use here:
        # its close must not checkpoint and delete the log this handle is using.
        _other_process_opens_and_closes(db_file)
        assert (folder / f"{DB_FILENAME}-wal").exists()
        assert (folder / f"{DB_FILENAME}-shm").exists()
        repo.commit({"messages": [{"role": "user", "content": "kept too"}]}, message="two")
        reopened = Repo.open(folder)
        try:
            assert [c.message for c in reopened.log()] == ["two", "one"]
        finally:
            reopened.close()


def test_processes_that_open_handles_while_committing_lose_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    Repo.init(folder).close()
    script = tmp_path / "worker.py"
    script.write_text(
        "import sys, statevcs\n"
        "name, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
        "repo = statevcs.Repo.open(path)\n"
        "state = {'writer': name, 'items': []}\n"
        "for i in range(n):\n"
        "    state['items'].append(i)\n"
        "    repo.commit(state, message=f'{name}{i}', branch=name)\n"
        "    statevcs.Repo.open(path).close()\n"
        "repo.close()\n"
    )
    rounds = 60
    workers = [
        subprocess.Popen([sys.executable, str(script), name, str(folder), str(rounds)])
        for name in ("a", "b")
    ]
    for worker in workers:
        assert worker.wait(timeout=300) == 0
    with Repo.open(folder) as repo:
        assert repo.fsck().problems == ()
        for name in ("a", "b"):
            state: dict[str, object] = {}
            repo.checkout(state, name)
            assert state == {"writer": name, "items": list(range(rounds))}
            assert len(list(repo.log(name))) == rounds


def test_a_foreign_wal_database_gets_no_sidecar_files(tmp_path: Path) -> None:
    import sqlite3

    folder = tmp_path / "repo"
    folder.mkdir()
    db = sqlite3.connect(folder / DB_FILENAME)
    db.execute("PRAGMA journal_mode=WAL")
    with db:
        db.execute("CREATE TABLE notes (body TEXT)")
    db.close()
    try:
        Repo.open(folder)
    except statevcs.RepositoryNotFound:
        pass
    else:  # pragma: no cover - a failure
        raise AssertionError("a foreign database opened as a repository")
    assert sorted(p.name for p in folder.iterdir()) == [DB_FILENAME]
