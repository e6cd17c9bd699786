"""The SQLite store passes the store contract and is safe across connections and processes."""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statevcs.errors import RefConflict, StoreError
from statevcs.stores.base import RefUpdate
from statevcs.stores.sqlite import SQLiteStore
from statevcs.testing import StoreContract, cas_increment, fake_id, id_number, make_objects

MAIN = "refs/heads/main"


class TestSQLiteStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SQLiteStore]:
        store = SQLiteStore(tmp_path / "statevcs.sqlite3")
        yield store
        store.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "statevcs.sqlite3"


def test_wal_mode_is_on(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    try:
        (mode,) = store._db.execute("PRAGMA journal_mode").fetchone()
        assert mode == "wal"
    finally:
        store.close()
    # The mode is persistent in the file: a plain connection sees it too.
    with sqlite3.connect(db_path) as plain:
        assert plain.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_durability_full_sets_synchronous_full(db_path: Path) -> None:
    store = SQLiteStore(db_path, durability="full")
    try:
        assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        store.close()
    store = SQLiteStore(db_path)
    try:
        assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    finally:
        store.close()


def test_reopening_after_close_keeps_everything(db_path: Path) -> None:
    objects = make_objects(10)
    store = SQLiteStore(db_path)
    store.update_refs([RefUpdate(MAIN, fake_id(1), None, "created")], objects)
    store.set_symbolic("HEAD", MAIN)
    store.config_set("core.format", "1")
    store.close()

    reopened = SQLiteStore(db_path)
    try:
        assert reopened.get_many(objects) == objects
        assert reopened.get_ref(MAIN) == fake_id(1)
        assert reopened.get_symbolic("HEAD") == MAIN
        assert reopened.config_get("core.format") == "1"
        assert [e.message for e in reopened.reflog(MAIN)] == ["created"]
    finally:
        reopened.close()


def test_two_store_objects_on_one_file_see_each_others_writes(db_path: Path) -> None:
    first = SQLiteStore(db_path)
    second = SQLiteStore(db_path)
    try:
        objects = make_objects(3)
        first.update_refs([RefUpdate(MAIN, fake_id(1), None, "by first")], objects)
        assert second.get_many(objects) == objects
        assert second.get_ref(MAIN) == fake_id(1)

        second.set_ref(MAIN, fake_id(2), expected=fake_id(1), message="by second")
        assert first.get_ref(MAIN) == fake_id(2)
        assert [e.message for e in first.reflog(MAIN)] == ["by second", "by first"]

        # The first connection's view is stale: its compare-and-swap must fail.
        with pytest.raises(RefConflict):
            first.set_ref(MAIN, fake_id(3), expected=fake_id(1))
        assert second.get_ref(MAIN) == fake_id(2)

        second.config_set("k", "v")
        assert first.config_get("k") == "v"
        assert first.delete_many(list(objects)) == 3
        assert second.has_many(objects) == set()
    finally:
        first.close()
        second.close()


def test_a_failed_transaction_rolls_back_its_objects_too(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    try:
        store.set_ref(MAIN, fake_id(1))
        objects = make_objects(4)
        with pytest.raises(RefConflict):
            store.update_refs([RefUpdate(MAIN, fake_id(2), fake_id(9))], objects)
        # One transaction: the conflict leaves no unreachable objects behind.
        assert store.has_many(objects) == set()
        # The connection is usable after the rollback.
        store.update_refs([RefUpdate(MAIN, fake_id(2), fake_id(1))], objects)
        assert store.has_many(objects) == set(objects)
    finally:
        store.close()


def test_opening_a_path_in_a_missing_folder_raises_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open SQLite store"):
        SQLiteStore(tmp_path / "no" / "such" / "folder" / "db.sqlite3")


def test_using_a_closed_store_raises_store_error(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    store.close()
    with pytest.raises(StoreError):
        store.get_ref(MAIN)


def _increment_in_process(path: str, times: int, barrier: Any, results: Any) -> None:
    store = SQLiteStore(path)
    try:
        barrier.wait(timeout=60)  # start together so the writers really race
        results.put(cas_increment(store, MAIN, times, pause=0.0005))
    finally:
        store.close()


def test_processes_doing_compare_and_swap_lose_no_update(db_path: Path) -> None:
    SQLiteStore(db_path).close()  # create the schema before the race
    per_process = 50
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results = context.Queue()
    workers = [
        context.Process(
            target=_increment_in_process, args=(str(db_path), per_process, barrier, results)
        )
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    retries = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    store = SQLiteStore(db_path)
    try:
        assert id_number(store.get_ref(MAIN)) == 2 * per_process
        log = store.reflog(MAIN)
        assert [id_number(e.new) for e in reversed(log)] == list(range(1, 2 * per_process + 1))
        assert all(id_number(e.old) + 1 == id_number(e.new) for e in log)
        # Each failed compare-and-swap was retried, never silently dropped.
        assert len(retries) == 2 and all(r >= 0 for r in retries)
    finally:
        store.close()


_NAME_CHARS = st.sampled_from(["a", "b", "/", "-", "é", "\ud7ff", "\ue000", "\U0010ffff", "z"])


@settings(max_examples=150, deadline=None)
@given(
    names=st.sets(st.text(_NAME_CHARS, min_size=1, max_size=6), max_size=12),
    prefix=st.text(_NAME_CHARS, max_size=4),
)
def test_list_refs_of_any_prefix_is_exactly_the_names_starting_with_it(
    tmp_path_factory: pytest.TempPathFactory, names: set[str], prefix: str
) -> None:
    store = SQLiteStore(tmp_path_factory.mktemp("refs") / "statevcs.sqlite3")
    try:
        for number, name in enumerate(sorted(names)):
            store.set_ref(name, fake_id(number))
        expected = {n: fake_id(i) for i, n in enumerate(sorted(names)) if n.startswith(prefix)}
        assert store.list_refs(prefix) == expected
    finally:
        store.close()


def test_listing_one_threads_refs_searches_the_index_not_the_table(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    try:
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)
        store.list_refs("refs/langgraph/heads/t1/")
        store._db.set_trace_callback(None)
        plan = store._db.execute("EXPLAIN QUERY PLAN " + statements[-1]).fetchall()
        assert any("SEARCH refs USING INDEX" in str(row) for row in plan), plan
    finally:
        store.close()
