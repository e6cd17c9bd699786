"""The embedded default store: one SQLite file in WAL mode, one transaction per commit.

Several processes may open the same file: writers take SQLite's write lock with
``BEGIN IMMEDIATE`` (waiting up to ``busy_timeout``), so a commit's objects and its ref
compare-and-swap land together or not at all. A handle survives ``fork()``: it lets go of its
connection just before a fork and reconnects on next use, in the parent and in the child
(see :mod:`statevcs.stores.forksafety`).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

from ..compression import (
    DICTIONARY_PREFIX,
    ZSTD_MAGIC,
    MissingDictionary,
    declared_size,
    frame_dictionary,
    is_commit_dictionary,
    register_dictionary,
    unpack,
)
from ..errors import (
    CorruptObject,
    RefConflict,
    RefsChanged,
    RepositoryNotFound,
    StaleCache,
    StateVCSError,
    StoreError,
)
from ..hashing import ObjectId
from ..objects import CommitObject, ZstdDictionary, decode
from . import forksafety
from .base import (
    ANY,
    RefsState,
    RefUpdate,
    Store,
    StoredReflogEntry,
    also_logged,
    check_batch,
    reflog_note,
)

DB_FILENAME = "statevcs.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    rowid INTEGER PRIMARY KEY,
    id BLOB NOT NULL UNIQUE,
    data BLOB NOT NULL,
    created REAL NOT NULL,
    parents BLOB
);
CREATE TABLE IF NOT EXISTS refs (
    name TEXT PRIMARY KEY,
    target BLOB,
    symbolic TEXT
);
CREATE TABLE IF NOT EXISTS reflog (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    old BLOB,
    new BLOB,
    ts REAL NOT NULL,
    message TEXT NOT NULL,
    also TEXT
);
CREATE INDEX IF NOT EXISTS reflog_by_name ON reflog (name, seq);
CREATE INDEX IF NOT EXISTS reflog_by_also ON reflog (also, seq) WHERE also IS NOT NULL;
CREATE TABLE IF NOT EXISTS config (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

# Each commit's row also holds its first two parents (``objects.parents``, their ids end to end;
# NULL for other objects), written with it, so a walk of history reads a long stretch of commits
# in one query. It is only a read-ahead hint: parents are always read from the commit bytes
# themselves, so a missing or wrong value costs a query, never a wrong answer. (A column, not a
# table: a table of its own wrote one more page per commit, +50% on a commit's time.)
_COMMIT_PREFIX = b"\x97\xa6commit"  # how every encoded commit begins: ["commit", ...] of 7
_ANCESTRY = """
WITH RECURSIVE walk(id) AS (
    {starts}
    UNION
    SELECT substr(objects.parents, side.start, 32)
    FROM walk JOIN objects ON objects.id = walk.id
    JOIN (SELECT 1 AS start UNION ALL SELECT 33) AS side
    WHERE length(objects.parents) >= side.start + 31
    LIMIT ?
)
SELECT objects.id, objects.data FROM walk JOIN objects ON objects.id = walk.id
"""

_BATCH = 500  # stay well under SQLite's host-parameter limit
_GENERATION_KEY = "gc.generation"
_WAL_LIMIT_BYTES = 1024 * 1024
_WAL_CHECKPOINT_PAGES = 256  # ~1 MB at 4 KiB pages: the WAL stays small while a repo is open

Durability = Literal["normal", "full"]
"""``"normal"``: survives a crash of the application; the last commits may roll back on power
loss or an OS crash. ``"full"``: every acknowledged commit survives power loss too (an fsync per
commit, about 1.5-2x slower)."""


def _hex(value: ObjectId | None) -> str | None:
    return value.hex() if value is not None else None


def _shown(value: object) -> str:
    if isinstance(value, bytes):
        return value.hex()
    return repr(value)[:80]


def _row_id(value: object) -> ObjectId:
    """An object id read from the database; a damaged row raises instead of passing as one."""
    if isinstance(value, bytes) and len(value) == 32:
        return value
    raise CorruptObject(_shown(value), "a stored row has a damaged id; run `statevcs fsck`")


def _row_data(object_id: object, data: object) -> bytes:
    if isinstance(data, bytes):
        return data
    raise CorruptObject(_shown(object_id), "its stored row is damaged (no byte data)")


def _prefix_end(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix`` (``None``: no bound)."""
    if not prefix:
        return None
    code = ord(prefix[-1]) + 1
    if 0xD800 <= code <= 0xDFFF:  # surrogates cannot be stored: the next character is U+E000
        code = 0xE000
    if code > 0x10FFFF:
        return _prefix_end(prefix[:-1])
    return prefix[:-1] + chr(code)


def _ref_target(name: object, value: object) -> ObjectId | None:
    """A ref's target as stored; a damaged one raises instead of reading as "no ref"."""
    if value is None:
        return None
    if isinstance(value, bytes) and len(value) == 32:
        return value
    raise StoreError(
        f"ref {name} holds a damaged value ({_shown(value)}); repair it by moving it "
        "unconditionally: repo.refs.set(name, commit_id) (expected=ANY, the default)"
    )


def _parse_generation(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise StoreError(
            f"the repository's gc generation is damaged ({_shown(value)}); it must be an "
            "integer: restore it with a backup or set it to a number larger than before"
        ) from None


def _timestamp(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0  # a damaged reflog time must not hide the entry's commits from gc


def read_config(path: str | Path) -> dict[str, str]:
    """Return the config of the statevcs database at ``path`` without writing to it.

    Raises :class:`~statevcs.errors.RepositoryNotFound` when ``path`` is not a statevcs
    database (an empty file, another application's SQLite file, not SQLite at all); such a file
    is left exactly as it was, with no ``-wal``/``-shm`` files beside it. Raises
    :class:`~statevcs.errors.StoreError` when the file cannot be read (after a few retries of
    SQLite's transient errors): a repository is never taken for a stranger's file because
    another process was busy with it.

    The file is only ever read through SQLite. Opening and closing it with a plain file
    handle would drop the POSIX locks this process's SQLite connections hold on it (they are
    per process, released by any ``close``); another process could then take the database
    for unused, checkpoint it and delete the write-ahead log and shared memory under those
    connections (SQLite's "How To Corrupt" 2.2).
    """
    file = Path(path)
    wal = file.with_name(file.name + "-wal")
    # A database with no write-ahead log is complete in its main file: read it as immutable
    # (no locks, no -wal/-shm created), and only a statevcs repository goes on to a normal read.
    if not _has_content(wal):
        found = _classify(file, immutable=True)
        if found is None:
            return _read_config(file)
        if not _has_content(wal):
            raise found
    # A write-ahead log with content: its sidecars already exist (another connection made
    # them), so a normal read-only connection creates nothing and sees the latest commit.
    found = _classify(file, immutable=False)
    if found is not None:
        raise found
    return _read_config(file)


def _has_content(file: Path) -> bool:
    try:
        return file.stat().st_size > 0
    except OSError:
        return False


_TRANSIENT_ATTEMPTS = 8


def _connect_ro(file: Path, *, immutable: bool) -> sqlite3.Connection:
    flags = "mode=ro&immutable=1" if immutable else "mode=ro"
    try:
        return sqlite3.connect(f"{file.absolute().as_uri()}?{flags}", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {file}: {exc}; check the path and permissions") from exc


def _not_found(file: Path, why: str) -> RepositoryNotFound:
    return RepositoryNotFound(
        f"{file} is not a statevcs repository ({why}); point at a folder created by `statevcs init`"
    )


def _classify(file: Path, *, immutable: bool) -> RepositoryNotFound | None:
    """``None`` if ``file`` holds statevcs's tables, else the error saying why it does not."""
    for attempt in range(_TRANSIENT_ATTEMPTS):
        db = _connect_ro(file, immutable=immutable)
        try:
            tables = {
                str(row[0])
                for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as exc:
            if _cannot_open(exc):
                raise _unopenable(file, exc) from exc
            if not _transient(exc):
                return _not_found(file, "not an SQLite database" if _not_a_db(exc) else str(exc))
            if attempt == _TRANSIENT_ATTEMPTS - 1:
                raise StoreError(
                    f"cannot read {file}: {exc}; another process may be writing it, try again"
                ) from exc
            time.sleep(0.005 * 2**attempt)
            continue
        finally:
            db.close()
        if not {"objects", "refs", "reflog", "config"} <= tables:
            return _not_found(file, "no statevcs tables")
        return None
    raise AssertionError("unreachable")  # pragma: no cover


def _not_a_db(exc: sqlite3.DatabaseError) -> bool:
    return getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB"


def _cannot_open(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite could not open the file or its sidecars (permissions, read-only media):
    that says nothing about whose file it is."""
    name = str(getattr(exc, "sqlite_errorname", ""))
    return name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_READONLY"))


def _unopenable(file: Path, exc: sqlite3.DatabaseError) -> StoreError:
    return StoreError(
        f"cannot read {file}: {exc}; SQLite must be able to read it and to create or use "
        f"{file.name}-shm beside it: check the folder's permissions (on read-only media, "
        "copy the repository to a writable folder first)"
    )


def _transient(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite's error may pass on a retry (busy, locked, I/O) rather than name a
    file that is not a database."""
    name = str(getattr(exc, "sqlite_errorname", ""))
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_IOERR", "SQLITE_PROTOCOL"))


def _read_config(file: Path) -> dict[str, str]:
    for attempt in range(_TRANSIENT_ATTEMPTS):
        db = _connect_ro(file, immutable=False)
        try:
            return {str(k): str(v) for k, v in db.execute("SELECT key, value FROM config")}
        except sqlite3.DatabaseError as exc:
            if _cannot_open(exc):
                raise _unopenable(file, exc) from exc
            if not _transient(exc):
                raise _not_found(file, str(exc)) from None
            if attempt == _TRANSIENT_ATTEMPTS - 1:
                raise StoreError(
                    f"cannot read the config of {file}: {exc}; if another process is writing "
                    "it, try again, else run `statevcs fsck`"
                ) from exc
            time.sleep(0.005 * 2**attempt)
        finally:
            db.close()
    raise AssertionError("unreachable")  # pragma: no cover


class SQLiteStore(Store):
    """A store in one SQLite database file (WAL mode; safe for several processes)."""

    def __init__(
        self,
        path: str | Path,
        *,
        durability: Durability = "normal",
        busy_timeout: float = 30.0,
    ) -> None:
        if durability not in ("normal", "full"):
            raise ValueError(f"durability must be 'normal' or 'full', got {durability!r}")
        self.path = Path(path)
        self.url = str(self.path)
        self.durability: Durability = durability
        self._busy_timeout = busy_timeout
        self._lock = threading.RLock()
        self._closed = False
        self._db: sqlite3.Connection | None = None  # None: connect on next use
        try:
            self._db = self._connect()
            if not _schema_complete(self._db):
                self._create_schema()
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open SQLite store {self.path}: {exc}; check the path and permissions"
            ) from exc
        forksafety.track(self)

    def _create_schema(self) -> None:
        """Create what is missing (a new file, or one an older statevcs wrote), in one write."""
        try:
            with self._write() as db:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                if not _has_column(db, "objects", "parents"):
                    db.execute("ALTER TABLE objects ADD COLUMN parents BLOB")
                    _index_existing_commits(db)
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open SQLite store {self.path}: {exc}; check the path and permissions"
            ) from exc

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            str(self.path),
            timeout=self._busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            db.execute("PRAGMA journal_mode=WAL")
            sync = "FULL" if self.durability == "full" else "NORMAL"
            db.execute(f"PRAGMA synchronous={sync}")
            db.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")
            db.execute(f"PRAGMA journal_size_limit={_WAL_LIMIT_BYTES}")
            db.execute(f"PRAGMA wal_autocheckpoint={_WAL_CHECKPOINT_PAGES}")
        except BaseException:
            db.close()
            raise
        return db

    def _connection(self) -> sqlite3.Connection:
        """The open connection (the caller holds ``_lock``), reconnecting after a fork."""
        if self._db is None:
            if self._closed:
                raise StoreError(f"the store for {self.path} is closed; open the repository again")
            try:
                self._db = self._connect()
            except sqlite3.Error as exc:
                raise StoreError(
                    f"cannot reopen SQLite store {self.path}: {exc}; check the path and permissions"
                ) from exc
        return self._db

    # --- fork() -------------------------------------------------------------

    def _before_fork(self) -> None:
        """Let go of the connection (waiting for a write in progress): a child that inherited
        this process's SQLite locks on the file could lose its commits (see forksafety)."""
        self._lock.acquire()
        db = self._db
        # Inside a write only if this very thread forks in the middle of one: keep it.
        if db is not None and not db.in_transaction:
            try:
                db.close()
            except sqlite3.Error:
                return
            self._db = None

    def _after_fork(self, *, in_child: bool) -> None:
        """Release the lock :meth:`_before_fork` took; the next use reconnects."""
        self._lock.release()

    @property
    def identity(self) -> str:
        """The database file's path and the repository's id (``core.id``, set at init).

        Every handle on one repository gets the same identity; a new repository created where
        a deleted one was gets another. Repositories made before ``core.id`` existed use the
        file's inode and creation time instead.
        """
        cached = self.__dict__.get("_identity")
        if cached is None:
            token = self.config_get("core.id")
            if token is None:
                stat = self.path.stat()
                token = f"{stat.st_ino}-{stat.st_ctime_ns}"
            cached = self.__dict__["_identity"] = f"sqlite:{self.path.resolve()}:{token}"
        return str(cached)

    # --- transactions -------------------------------------------------------

    def _write(self) -> _Transaction:
        return _Transaction(self)

    def _query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        with self._lock:
            try:
                return self._connection().execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite read failed on {self.path}: {exc}") from exc

    # --- objects ------------------------------------------------------------

    def get_many(self, ids: Iterable[ObjectId]) -> dict[ObjectId, bytes]:
        """Return the stored bytes of every id that exists."""
        wanted = list(ids)
        found: dict[ObjectId, bytes] = {}
        for start in range(0, len(wanted), _BATCH):
            batch = wanted[start : start + _BATCH]
            marks = ",".join("?" * len(batch))
            for object_id, data in self._query(
                f"SELECT id, data FROM objects WHERE id IN ({marks})", batch
            ):
                found[_row_id(object_id)] = _row_data(object_id, data)
        return found

    def ancestry(self, starts: Iterable[ObjectId], limit: int) -> dict[ObjectId, bytes]:
        """Return ``starts`` and up to ``limit`` commits below them, in one query."""
        wanted = list(dict.fromkeys(starts))
        if not wanted:
            return {}
        first, rest = wanted[:_BATCH], wanted[_BATCH:]
        values = "VALUES " + ",".join(["(?)"] * len(first))
        rows = self._query(_ANCESTRY.format(starts=values), [*first, len(first) + limit])
        found = {_row_id(object_id): _row_data(object_id, data) for object_id, data in rows}
        if rest:
            found.update(self.get_many(rest))
        return found

    def put_many(self, objects: Mapping[ObjectId, bytes]) -> int:
        """Store the objects that are new; return how many were new."""
        if not objects:
            return 0
        with self._write() as db:
            return self._insert(db, objects)

    def _insert(self, db: sqlite3.Connection, objects: Mapping[ObjectId, bytes]) -> int:
        now = self.now()
        before = db.total_changes
        prefix = _COMMIT_PREFIX
        db.executemany(
            "INSERT OR IGNORE INTO objects (id, data, created, parents) VALUES (?, ?, ?, ?)",
            [
                # Only a commit has parents to index: the others skip the call.
                (
                    object_id,
                    data,
                    now,
                    _parents_value(object_id, data, db, objects, self.identity)
                    if isinstance(data, bytes)
                    and (
                        data.startswith(prefix)
                        or (data[:4] == ZSTD_MAGIC and is_commit_dictionary(frame_dictionary(data)))
                    )
                    else None,
                )
                for object_id, data in objects.items()
            ],
        )
        return db.total_changes - before

    def has_many(self, ids: Iterable[ObjectId]) -> set[ObjectId]:
        """Return the subset of ``ids`` that exist."""
        wanted = list(ids)
        found: set[ObjectId] = set()
        for start in range(0, len(wanted), _BATCH):
            batch = wanted[start : start + _BATCH]
            marks = ",".join("?" * len(batch))
            for (object_id,) in self._query(f"SELECT id FROM objects WHERE id IN ({marks})", batch):
                found.add(_row_id(object_id))
        return found

    def iter_objects(self, *, older_than: float | None = None) -> Iterator[tuple[ObjectId, int]]:
        """Yield ``(id, size)`` of every stored object."""
        if older_than is None:
            rows = self._query("SELECT id, length(data) FROM objects")
        else:
            rows = self._query(
                "SELECT id, length(data) FROM objects WHERE created < ?", (older_than,)
            )
        for object_id, size in rows:
            if not isinstance(size, int):
                raise CorruptObject(_shown(object_id), "its stored row is damaged (no byte data)")
            yield _row_id(object_id), size

    def ids_in_range(self, low: ObjectId, high: ObjectId, limit: int = 16) -> list[ObjectId]:
        """Return up to ``limit`` ids in ``[low, high]``."""
        rows = self._query(
            "SELECT id FROM objects WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?",
            (low, high, limit),
        )
        return [r[0] for r in rows if isinstance(r[0], bytes)]

    def delete_many(self, ids: Iterable[ObjectId], *, if_refs: RefsState | None = None) -> int:
        """Delete objects and bump the gc generation; return how many existed."""
        wanted = list(ids)
        deleted = 0
        with self._write() as db:
            if if_refs is not None and self._refs_state(db) != if_refs:
                raise RefsChanged("refs moved while garbage collection was marking")
            db.execute(
                "INSERT INTO config (key, value) VALUES (?, '1') ON CONFLICT(key) "
                "DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
                (_GENERATION_KEY,),
            )
            for start in range(0, len(wanted), _BATCH):
                batch = wanted[start : start + _BATCH]
                marks = ",".join("?" * len(batch))
                deleted += db.execute(f"DELETE FROM objects WHERE id IN ({marks})", batch).rowcount
        return deleted

    def generation(self) -> int:
        """Return the gc generation."""
        rows = self._query("SELECT value FROM config WHERE key = ?", (_GENERATION_KEY,))
        return _parse_generation(rows[0][0]) if rows else 0

    @staticmethod
    def _generation(db: sqlite3.Connection) -> int:
        row = db.execute("SELECT value FROM config WHERE key = ?", (_GENERATION_KEY,)).fetchone()
        return _parse_generation(row[0]) if row is not None else 0

    def refs_state(self) -> RefsState:
        """Return a fingerprint of every ref and reflog."""
        with self._lock:
            return self._refs_state(self._connection())

    @staticmethod
    def _refs_state(db: sqlite3.Connection) -> RefsState:
        refs = tuple(db.execute("SELECT name, target, symbolic FROM refs ORDER BY name"))
        log = db.execute("SELECT max(seq), count(*) FROM reflog").fetchone()
        return (refs, tuple(log))

    # --- refs ---------------------------------------------------------------

    def get_ref(self, name: str) -> ObjectId | None:
        """Return the id ``name`` points to, or ``None``."""
        rows = self._query("SELECT target FROM refs WHERE name = ?", (name,))
        return _ref_target(name, rows[0][0]) if rows else None

    def get_refs(self, names: Sequence[str]) -> dict[str, ObjectId]:
        """Return what each existing direct ref among ``names`` points to, in one query."""
        unique = list(dict.fromkeys(names))
        found: dict[str, ObjectId] = {}
        for start in range(0, len(unique), _BATCH):
            batch = unique[start : start + _BATCH]
            rows = self._query(
                f"SELECT name, target FROM refs WHERE name IN ({','.join('?' * len(batch))})",
                batch,
            )
            for name, target in rows:
                value = _ref_target(name, target)
                if value is not None:
                    found[str(name)] = value
        return {name: found[name] for name in unique if name in found}

    def list_refs(self, prefix: str = "refs/") -> dict[str, ObjectId]:
        """Return every direct ref under ``prefix``."""
        # A range of the primary key (names sort by code point, as UTF-8 bytes do), so listing
        # one thread's refs among thousands reads those rows only; substr() keeps it exact.
        end = _prefix_end(prefix)
        rows = self._query(
            "SELECT name, target FROM refs WHERE name >= ? AND name < ? AND target IS NOT NULL "
            "AND substr(name, 1, ?) = ? ORDER BY name"
            if end is not None
            else "SELECT name, target FROM refs WHERE name >= ? AND target IS NOT NULL "
            "AND substr(name, 1, ?) = ? ORDER BY name",
            (prefix, end, len(prefix), prefix)
            if end is not None
            else (prefix, len(prefix), prefix),
        )
        return {str(n): t for n, t in ((n, _ref_target(n, t)) for n, t in rows) if t is not None}

    def get_symbolic(self, name: str) -> str | None:
        """Return the target of symbolic ref ``name``, or ``None``."""
        rows = self._query("SELECT symbolic FROM refs WHERE name = ?", (name,))
        return str(rows[0][0]) if rows and rows[0][0] is not None else None

    def set_symbolic(self, name: str, target: str, message: str = "") -> None:
        """Make ``name`` a symbolic ref to ``target`` (a ``message`` logs the move)."""
        with self._write() as db:
            old = self._value(db, name) if message else None
            db.execute(
                "INSERT INTO refs (name, target, symbolic) VALUES (?, NULL, ?) "
                "ON CONFLICT(name) DO UPDATE SET target = NULL, symbolic = excluded.symbolic",
                (name, target),
            )
            if message:
                db.execute(
                    "INSERT INTO reflog (name, old, new, ts, message) VALUES (?, ?, ?, ?, ?)",
                    (name, old, self._value(db, target), self.now(), reflog_note(message)),
                )

    @staticmethod
    def _value(db: sqlite3.Connection, name: str) -> ObjectId | None:
        """Return the value of ``name``, following one symbolic step."""
        row = db.execute("SELECT target, symbolic FROM refs WHERE name = ?", (name,)).fetchone()
        if row is not None and row[1] is not None:
            row = db.execute("SELECT target FROM refs WHERE name = ?", (row[1],)).fetchone()
        return _ref_target(name, row[0]) if row is not None else None

    def update_refs(
        self,
        updates: Sequence[RefUpdate],
        objects: Mapping[ObjectId, bytes] | None = None,
        *,
        generation: int | None = None,
    ) -> None:
        """Store objects and apply every compare-and-swap in one transaction."""
        check_batch(updates)
        with self._write() as db:
            # One statement for both: the gc generation and the branch HEAD points at.
            stored_generation, head = db.execute(
                "SELECT (SELECT value FROM config WHERE key = ?), "
                "(SELECT symbolic FROM refs WHERE name = 'HEAD')",
                (_GENERATION_KEY,),
            ).fetchone()
            if generation is not None:
                current_generation = (
                    _parse_generation(stored_generation) if stored_generation is not None else 0
                )
                if current_generation != generation:
                    raise StaleCache(generation, current_generation)
            head_target = str(head) if head is not None else None
            if objects:
                self._insert(db, objects)
            current: dict[str, ObjectId | None] = {}
            for update in updates:
                if isinstance(update.expected, bytes) and update.new is not None:
                    # Fast path: one conditional UPDATE is the compare-and-swap.
                    cursor = db.execute(
                        "UPDATE refs SET target = ?, symbolic = NULL WHERE name = ? AND target = ?",
                        (update.new, update.name, update.expected),
                    )
                    if cursor.rowcount == 1:
                        current[update.name] = update.expected
                        continue
                row = db.execute(
                    "SELECT target FROM refs WHERE name = ?", (update.name,)
                ).fetchone()
                try:
                    value = _ref_target(update.name, row[0]) if row else None
                except StoreError:
                    if update.expected is not ANY:
                        raise
                    value = None  # an unconditional move repairs a damaged ref
                current[update.name] = value
                if update.expected is not ANY and value != update.expected:
                    expected = update.expected if isinstance(update.expected, bytes) else None
                    raise RefConflict(update.name, _hex(expected), _hex(value))
                if update.new is None:
                    db.execute("DELETE FROM refs WHERE name = ?", (update.name,))
                else:
                    db.execute(
                        "INSERT INTO refs (name, target, symbolic) VALUES (?, ?, NULL) "
                        "ON CONFLICT(name) DO UPDATE SET target = excluded.target, symbolic = NULL",
                        (update.name, update.new),
                    )
            now = self.now()
            # One row per movement; ``also`` names a second ref whose log shares it (HEAD).
            rows = []
            for update in updates:
                if not update.log:
                    continue
                old = current[update.name]
                logs = also_logged(update, head_target)
                also = logs[0] if logs else None
                note = reflog_note(update.message)
                rows.append((update.name, old, update.new, now, note, also))
                rows.extend((extra, old, update.new, now, note, None) for extra in logs[1:])
            db.executemany(
                "INSERT INTO reflog (name, old, new, ts, message, also) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )

    def reflog_names(self) -> list[str]:
        """Return every name that has reflog entries (shared rows count for both names)."""
        rows = self._query(
            "SELECT name FROM reflog UNION SELECT also FROM reflog WHERE also IS NOT NULL "
            "ORDER BY 1"
        )
        return [str(row[0]) for row in rows]

    def reflog(self, name: str) -> list[StoredReflogEntry]:
        """Return the reflog of ``name``, newest first."""
        rows = self._query(
            "SELECT seq, old, new, ts, message FROM reflog WHERE name = ? "
            "UNION ALL SELECT seq, old, new, ts, message FROM reflog WHERE also = ? "
            "ORDER BY seq DESC",
            (name, name),
        )
        return [
            StoredReflogEntry(
                old if isinstance(old, bytes) else None,
                new if isinstance(new, bytes) else None,
                _timestamp(ts),
                str(message),
            )
            for _seq, old, new, ts, message in rows
        ]

    def delete_reflog(self, name: str) -> None:
        """Forget the reflog of ``name``."""
        with self._write() as db:
            # Shared rows stay with the other ref that logged them.
            db.execute(
                "UPDATE reflog SET name = also, also = NULL WHERE name = ? AND also IS NOT NULL",
                (name,),
            )
            db.execute("DELETE FROM reflog WHERE name = ?", (name,))
            db.execute("UPDATE reflog SET also = NULL WHERE also = ?", (name,))

    def expire_reflogs(self, older_than: float) -> int:
        """Delete reflog entries older than ``older_than``."""
        with self._write() as db:
            return db.execute("DELETE FROM reflog WHERE ts < ?", (older_than,)).rowcount

    def reclaim_space(self) -> int:
        """Shrink the file after ``gc`` deleted objects: ``VACUUM``, then truncate the WAL.

        SQLite keeps deleted rows' pages for reuse, so without this the file never shrinks.
        VACUUM was chosen over ``auto_vacuum=INCREMENTAL`` (measured in docs/benchmarks.md):
        it needs no conversion of existing files, compacts the half-empty pages that an
        incremental vacuum leaves, and costs about what ``gc``'s own pass over every object
        does. Other processes keep reading meanwhile; their writes wait (the busy timeout).
        A failure (disk full, a writer holding the lock too long) frees nothing and raises
        :class:`StoreError`: the deletion itself is already done and the space is reused.
        """
        with self._lock:
            try:
                db = self._connection()
                before = self._pages(db)
                db.execute("VACUUM")
                # The file shrinks when the WAL is copied back into it (and the WAL emptied).
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                after = self._pages(db)
            except sqlite3.Error as exc:
                raise StoreError(
                    f"gc deleted the objects but could not shrink {self.path}: {exc}; the "
                    "space will be reused by new commits, or run `statevcs gc` again to shrink it"
                ) from exc
            return max(0, before - after)

    @staticmethod
    def _pages(db: sqlite3.Connection) -> int:
        """The database's size in bytes: its pages, free ones included."""
        count = db.execute("PRAGMA page_count").fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
        return int(count) * int(size)

    # --- config -------------------------------------------------------------

    def config_get(self, key: str) -> str | None:
        """Return a config value, or ``None``."""
        rows = self._query("SELECT value FROM config WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def config_set(self, key: str, value: str | None) -> None:
        """Set or delete a config value."""
        with self._write() as db:
            if value is None:
                db.execute("DELETE FROM config WHERE key = ?", (key,))
            else:
                db.execute(
                    "INSERT INTO config (key, value) VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._closed = True
            if self._db is not None:
                self._db.close()
                self._db = None


_SCHEMA_NAMES = {"objects", "refs", "reflog", "config", "reflog_by_name", "reflog_by_also"}


def _schema_complete(db: sqlite3.Connection) -> bool:
    """Whether every table, index and column exists (then opening writes nothing)."""
    names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    return names >= _SCHEMA_NAMES and _has_column(db, "objects", "parents")


def _has_column(db: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in db.execute(f"PRAGMA table_info({table})"))


def _parents_value(
    object_id: object,
    data: object,
    db: sqlite3.Connection | None = None,
    batch: Mapping[ObjectId, bytes] | None = None,
    scope: str = "",
) -> bytes | None:
    """The first two parents named by a commit's bytes, end to end; None for other objects.

    A commit compressed with the repository's commit dictionary is decompressed first; a
    process that has not registered that dictionary yet finds it in ``batch`` or ``db``. The
    index is a read-ahead hint (walks read parents from the commits): bytes that cannot be
    read here are stored unindexed, and whoever reads them gets ``CorruptObject``.
    """
    if not isinstance(object_id, bytes) or not isinstance(data, bytes):
        return None
    if data[:4] == ZSTD_MAGIC:
        if not 0 <= declared_size(data) <= _LARGEST_INDEXED_COMMIT:
            return None  # a commit is never this large: no need to expand it to find out
        try:
            try:
                data = unpack(object_id, data, scope)
            except MissingDictionary as missing:
                if db is None or not _register_from(db, batch or {}, missing.dict_id, scope):
                    return None
                data = unpack(object_id, data, scope)
        except StateVCSError:
            return None
    if not data.startswith(_COMMIT_PREFIX):
        return None
    try:
        obj = decode(object_id, data, check_hash=False)
    except StateVCSError:
        return None
    if not isinstance(obj, CommitObject) or not obj.parents:
        return None
    return b"".join(obj.parents[:2])


_LARGEST_INDEXED_COMMIT = 1024 * 1024
"""Compressed commits larger than this (metadata of a megabyte) are stored unindexed: the
index is a hint, and a hostile frame may declare up to 256 MiB."""


def _register_from(
    db: sqlite3.Connection, batch: Mapping[ObjectId, bytes], dict_id: int, scope: str
) -> bool:
    """Register dictionary ``dict_id`` from this database (or ``batch``); whether it was found."""
    row = db.execute(
        "SELECT value FROM config WHERE key = ?", (f"{DICTIONARY_PREFIX}{dict_id:08x}",)
    ).fetchone()
    if row is None:
        return False
    try:
        dictionary_id = bytes.fromhex(str(row[0]))
    except ValueError:
        return False
    data = batch.get(dictionary_id)
    if data is None:
        found = db.execute("SELECT data FROM objects WHERE id = ?", (dictionary_id,)).fetchone()
        data = found[0] if found is not None else None
    try:
        obj = decode(dictionary_id, data) if isinstance(data, bytes) else None
        return isinstance(obj, ZstdDictionary) and register_dictionary(obj.data, scope) == dict_id
    except (StateVCSError, ValueError):
        return False


def _index_existing_commits(db: sqlite3.Connection) -> None:
    """Fill in the parents of a repository's commits written before the column existed."""
    cursor = db.execute(
        "SELECT id, data FROM objects WHERE substr(data, 1, ?) = ?",
        (len(_COMMIT_PREFIX), _COMMIT_PREFIX),
    )
    rows = [(_parents_value(i, d), i) for i, d in cursor.fetchall()]
    db.executemany("UPDATE objects SET parents = ? WHERE id = ?", [r for r in rows if r[0]])


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK`` on any exception)."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store
        self._db: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        self._store._lock.acquire()
        try:
            self._db = self._store._connection()
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self._store._lock.release()
            raise StoreError(
                f"cannot start a write on {self._store.path}: {exc}; "
                "another process may hold the lock for too long",
                landed=False,
            ) from exc
        except BaseException:
            self._store._lock.release()
            raise
        return self._db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        db = self._db
        assert db is not None
        try:
            if exc_type is None:
                try:
                    db.execute("COMMIT")
                except sqlite3.Error as error:
                    db.execute("ROLLBACK")
                    raise StoreError(
                        f"SQLite commit failed on {self._store.path}: {error}", landed=False
                    ) from error
            else:
                db.execute("ROLLBACK")  # so a StoreError from inside wrote nothing either
                if isinstance(exc, StoreError) and exc.landed is None:
                    exc.landed = False
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(
                        f"SQLite write failed on {self._store.path}: {exc}", landed=False
                    ) from exc
        finally:
            self._store._lock.release()


__all__ = ["DB_FILENAME", "Durability", "SQLiteStore", "read_config"]
