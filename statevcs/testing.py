"""A reusable contract test suite for :class:`~statevcs.stores.base.Store` backends.

Every backend (the built-in memory and SQLite stores, and any third-party one) should behave the
same way, so the behaviour is written down once, as tests. Subclass :class:`StoreContract` in
your own test module and supply one fixture, ``store``, that returns a fresh, empty store::

    import pytest
    from statevcs.testing import StoreContract

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            s = MyStore(tmp_path / "db")
            yield s
            s.close()

The subclass then runs every test below. Tests control time by setting the store's ``now``
attribute (see :meth:`Store.now`), so a backend must read the clock through ``self.now()``.

This module imports :mod:`pytest`, a development dependency of statevcs: import it only from
test code.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from .errors import RefConflict, RefError, RefsChanged, StaleCache
from .hashing import ID_SIZE, ObjectId
from .objects import Blob, encode_with_id
from .stores.base import ANY, REFLOG_NOTE_LIMIT, RefUpdate, Store, StoredReflogEntry

MAIN = "refs/heads/main"
FEATURE = "refs/heads/feature"
TAG = "refs/tags/v1"


def make_objects(count: int, salt: str = "") -> dict[ObjectId, bytes]:
    """Return ``count`` distinct, correctly addressed blob objects (``id -> encoded bytes``)."""
    return dict(encode_with_id(Blob(f"{salt}object-{i}".encode())) for i in range(count))


def fake_id(number: int) -> ObjectId:
    """Return a 32-byte id that encodes ``number`` (refs may point at ids the store lacks)."""
    return number.to_bytes(ID_SIZE, "big")


def id_number(object_id: ObjectId | None) -> int:
    """Invert :func:`fake_id` (``None`` counts as 0)."""
    return 0 if object_id is None else int.from_bytes(object_id, "big")


def _set_clock(monkeypatch: pytest.MonkeyPatch, store: Store, moment: float) -> None:
    clock: Callable[[], float] = lambda: moment  # noqa: E731 - a tiny fixed clock
    monkeypatch.setattr(store, "now", clock)


def cas_increment(store: Store, name: str, times: int, *, pause: float = 0.0) -> int:
    """Increment the counter held in ref ``name`` ``times`` times; return how many retries.

    Each increment reads the ref, waits ``pause`` seconds (to widen the race window), and
    compare-and-swaps the next value in, retrying on :class:`RefConflict`.
    """
    retries = 0
    done = 0
    while done < times:
        current = store.get_ref(name)
        new = fake_id(id_number(current) + 1)
        if pause:
            time.sleep(pause)
        try:
            store.set_ref(name, new, expected=current, message=f"increment to {id_number(new)}")
        except RefConflict:
            retries += 1
            continue
        done += 1
    return retries


class StoreContract:
    """Behaviour every :class:`Store` backend must have; subclasses supply a ``store`` fixture.

    The name has no ``Test`` prefix, so pytest collects the tests only through subclasses.
    """

    server_clock = False
    """Set ``True`` when object write times come from a server's clock (S3 ``LastModified``)
    rather than :meth:`Store.now`: the write-time test then uses real time instead of a fake
    clock. Reflog times always come from :meth:`Store.now`."""

    # --- objects --------------------------------------------------------------

    def test_put_then_get_returns_the_same_bytes(self, store: Store) -> None:
        objects = make_objects(5)
        store.put_many(objects)
        assert store.get_many(objects) == objects

    def test_get_many_leaves_out_missing_ids(self, store: Store) -> None:
        present = make_objects(2)
        missing = make_objects(2, salt="missing")
        store.put_many(present)
        assert store.get_many([*missing, *present]) == present
        assert store.get_many(missing) == {}
        assert store.get_many([]) == {}

    def test_put_many_is_idempotent_and_counts_new_objects(self, store: Store) -> None:
        first = make_objects(3)
        assert store.put_many(first) == 3
        assert store.put_many(first) == 0
        more = {**first, **make_objects(2, salt="more")}
        assert store.put_many(more) == 2
        assert store.put_many({}) == 0
        assert sorted(i for i, _ in store.iter_objects()) == sorted(more)

    def test_put_many_keeps_the_first_bytes_stored_under_an_id(self, store: Store) -> None:
        object_id, data = next(iter(make_objects(1).items()))
        store.put_many({object_id: data})
        assert store.put_many({object_id: b"something else"}) == 0
        assert store.get_many([object_id]) == {object_id: data}

    def test_has_many_returns_the_subset_that_exists(self, store: Store) -> None:
        present = make_objects(3)
        missing = make_objects(3, salt="missing")
        store.put_many(present)
        assert store.has_many([*present, *missing]) == set(present)
        assert store.has_many(missing) == set()
        assert store.has_many([]) == set()

    def test_large_batches_cross_any_internal_batch_size(self, store: Store) -> None:
        objects = make_objects(1234)
        assert store.put_many(objects) == 1234
        ids = list(objects)
        assert store.get_many(ids) == objects
        assert store.has_many(ids) == set(ids)
        assert store.delete_many(ids[:1100]) == 1100
        assert store.has_many(ids) == set(ids[1100:])

    def test_iter_objects_yields_every_id_with_its_stored_size(self, store: Store) -> None:
        objects = make_objects(4)
        objects.update(dict([encode_with_id(Blob(b"x" * 3000))]))
        store.put_many(objects)
        listed = dict(store.iter_objects())
        assert set(listed) == set(objects)
        for object_id, size in listed.items():
            # A backend may compress; the stored size is positive and not wildly larger.
            assert 0 < size <= len(objects[object_id]) + 64

    def test_iter_objects_older_than_filters_by_write_time(
        self, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        old = make_objects(3, salt="old")
        new = make_objects(2, salt="new")
        if self.server_clock:
            # Write times come from the server (S3 LastModified, whole seconds): real time.
            before = time.time() - 2.0
            store.put_many(old)
            time.sleep(1.1)
            middle = time.time()
            time.sleep(1.1)
            store.put_many(new)
            store.put_many(old)
            after = time.time() + 2.0
        else:
            before, middle, after = 1_000.0, 1_500.0, 2_000.5
            _set_clock(monkeypatch, store, 1_000.0)
            store.put_many(old)
            _set_clock(monkeypatch, store, 2_000.0)
            store.put_many(new)
            # Re-putting an old object must not refresh its write time.
            store.put_many(old)
        assert {i for i, _ in store.iter_objects(older_than=middle)} == set(old)
        assert {i for i, _ in store.iter_objects(older_than=before)} == set()
        assert {i for i, _ in store.iter_objects(older_than=after)} == {*old, *new}
        assert {i for i, _ in store.iter_objects()} == {*old, *new}

    def test_ids_in_range_is_inclusive_sorted_and_limited(self, store: Store) -> None:
        objects = make_objects(40)
        store.put_many(objects)
        ordered = sorted(objects)
        low, high = ordered[5], ordered[30]
        assert store.ids_in_range(low, high, limit=100) == ordered[5:31]
        assert store.ids_in_range(low, high, limit=3) == ordered[5:8]
        assert store.ids_in_range(low, low) == [low]
        assert store.ids_in_range(b"\x00" * ID_SIZE, b"\xff" * ID_SIZE) == ordered[:16]

    def test_ids_in_range_finds_hex_prefixes(self, store: Store) -> None:
        objects = make_objects(64)
        store.put_many(objects)
        target = sorted(objects)[17]
        low = target[:2] + b"\x00" * (ID_SIZE - 2)
        high = target[:2] + b"\xff" * (ID_SIZE - 2)
        expected = sorted(i for i in objects if i[:2] == target[:2])
        assert store.ids_in_range(low, high) == expected
        assert target in expected

    def test_delete_many_removes_objects_and_counts_them(self, store: Store) -> None:
        objects = make_objects(5)
        store.put_many(objects)
        ids = list(objects)
        missing = list(make_objects(2, salt="missing"))
        assert store.delete_many([*ids[:2], *missing]) == 2
        assert store.has_many(ids) == set(ids[2:])
        assert store.get_many(ids[:2]) == {}
        assert store.delete_many(ids[:2]) == 0
        assert store.delete_many([]) == 0
        # A deleted object can be written again (gc raced with a writer that needed it).
        assert store.put_many({ids[0]: objects[ids[0]]}) == 1

    # --- refs -------------------------------------------------------------------

    def test_a_missing_ref_reads_as_none(self, store: Store) -> None:
        assert store.get_ref(MAIN) is None
        assert store.get_symbolic(MAIN) is None
        assert store.list_refs() == {}
        assert store.reflog(MAIN) == []

    def test_create_with_expected_none_then_compare_and_swap(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1), expected=None)
        assert store.get_ref(MAIN) == fake_id(1)
        store.set_ref(MAIN, fake_id(2), expected=fake_id(1))
        assert store.get_ref(MAIN) == fake_id(2)

    def test_create_conflicts_when_the_ref_already_exists(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1), expected=None)
        with pytest.raises(RefConflict) as info:
            store.set_ref(MAIN, fake_id(2), expected=None)
        assert info.value.ref == MAIN
        assert info.value.expected is None
        assert info.value.actual == fake_id(1).hex()
        assert store.get_ref(MAIN) == fake_id(1)

    def test_expected_mismatch_raises_and_changes_neither_ref_nor_reflog(
        self, store: Store
    ) -> None:
        store.set_ref(MAIN, fake_id(1), expected=None, message="create", log_also=["HEAD"])
        refs_before = store.list_refs()
        log_before = store.reflog(MAIN)
        head_log_before = store.reflog("HEAD")
        with pytest.raises(RefConflict) as info:
            store.set_ref(MAIN, fake_id(3), expected=fake_id(2), message="stale", log_also=["HEAD"])
        assert info.value.ref == MAIN
        assert info.value.expected == fake_id(2).hex()
        assert info.value.actual == fake_id(1).hex()
        assert MAIN in str(info.value)
        assert store.list_refs() == refs_before
        assert store.reflog(MAIN) == log_before
        assert store.reflog("HEAD") == head_log_before

    def test_expected_value_for_a_missing_ref_conflicts(self, store: Store) -> None:
        with pytest.raises(RefConflict) as info:
            store.set_ref(MAIN, fake_id(2), expected=fake_id(1))
        assert info.value.actual is None
        assert store.get_ref(MAIN) is None
        assert store.reflog(MAIN) == []

    def test_any_moves_a_ref_whatever_its_value(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1), expected=ANY)
        store.set_ref(MAIN, fake_id(2), expected=ANY)
        store.set_ref(MAIN, fake_id(3))  # ANY is the default
        assert store.get_ref(MAIN) == fake_id(3)

    def test_new_none_deletes_the_ref_and_logs_it(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1))
        store.set_ref(FEATURE, fake_id(1))
        with pytest.raises(RefConflict):
            store.set_ref(MAIN, None, expected=fake_id(9))
        assert store.get_ref(MAIN) == fake_id(1)
        store.set_ref(MAIN, None, expected=fake_id(1), message="deleted")
        assert store.get_ref(MAIN) is None
        assert store.list_refs() == {FEATURE: fake_id(1)}
        latest = store.reflog(MAIN)[0]
        assert (latest.old, latest.new, latest.message) == (fake_id(1), None, "deleted")
        # Deleting an absent ref with ANY is a no-op, and it can be created again.
        store.set_ref(MAIN, None)
        store.set_ref(MAIN, fake_id(2), expected=None)
        assert store.get_ref(MAIN) == fake_id(2)

    def test_get_refs_reads_several_names_leaving_out_absent_and_symbolic_ones(
        self, store: Store
    ) -> None:
        store.set_ref(MAIN, fake_id(1))
        store.set_ref(TAG, fake_id(2))
        store.set_symbolic("HEAD", MAIN)
        names = [TAG, "refs/heads/absent", MAIN, "HEAD", TAG, "refs/heads/%"]
        assert store.get_refs(names) == {TAG: fake_id(2), MAIN: fake_id(1)}
        assert store.get_refs([]) == {}
        many = [f"refs/heads/b{n}" for n in range(1200)]  # past any one query's parameters
        for name in many[::300]:
            store.set_ref(name, fake_id(3))
        assert store.get_refs(many) == {name: fake_id(3) for name in many[::300]}

    def test_list_refs_filters_by_prefix(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1))
        store.set_ref(FEATURE, fake_id(2))
        store.set_ref("refs/heads/exp/a", fake_id(3))
        store.set_ref(TAG, fake_id(4))
        store.set_symbolic("HEAD", MAIN)
        assert store.list_refs() == {
            MAIN: fake_id(1),
            FEATURE: fake_id(2),
            "refs/heads/exp/a": fake_id(3),
            TAG: fake_id(4),
        }
        assert store.list_refs("refs/heads/") == {
            MAIN: fake_id(1),
            FEATURE: fake_id(2),
            "refs/heads/exp/a": fake_id(3),
        }
        assert store.list_refs("refs/heads/exp/") == {"refs/heads/exp/a": fake_id(3)}
        assert store.list_refs("refs/tags/") == {TAG: fake_id(4)}
        assert store.list_refs("refs/remotes/") == {}
        # "%" and "_" are SQL LIKE wildcards: a prefix must match literally.
        store.set_ref("refs/heads/a_b", fake_id(5))
        store.set_ref("refs/heads/axb", fake_id(6))
        assert store.list_refs("refs/heads/a_") == {"refs/heads/a_b": fake_id(5)}
        assert store.list_refs("refs/heads/a%") == {}

    def test_symbolic_head_points_at_a_branch(self, store: Store) -> None:
        store.set_symbolic("HEAD", MAIN)
        assert store.get_symbolic("HEAD") == MAIN
        assert store.get_ref("HEAD") is None  # symbolic refs have no direct value
        assert "HEAD" not in store.list_refs("")
        store.set_symbolic("HEAD", FEATURE)
        assert store.get_symbolic("HEAD") == FEATURE
        assert store.get_symbolic(MAIN) is None

    def test_a_direct_value_detaches_a_symbolic_ref_and_back(self, store: Store) -> None:
        store.set_symbolic("HEAD", MAIN)
        store.set_ref("HEAD", fake_id(7), message="detach")
        assert store.get_symbolic("HEAD") is None
        assert store.get_ref("HEAD") == fake_id(7)
        store.set_symbolic("HEAD", MAIN)
        assert store.get_symbolic("HEAD") == MAIN
        assert store.get_ref("HEAD") is None

    def test_deleting_a_symbolic_ref_removes_it(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1))
        store.set_symbolic("HEAD", MAIN)
        store.set_ref("HEAD", None, expected=None)  # a symbolic ref has no direct value
        assert store.get_symbolic("HEAD") is None
        assert store.get_ref("HEAD") is None
        assert store.get_ref(MAIN) == fake_id(1)  # the target is untouched

    def test_set_symbolic_with_a_message_logs_the_move(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1))
        store.set_ref(FEATURE, fake_id(2))
        store.set_symbolic("HEAD", MAIN)  # no message: no reflog entry
        assert store.reflog("HEAD") == []
        store.set_symbolic("HEAD", FEATURE, message="checkout: moving from main to feature")
        store.set_ref("HEAD", fake_id(3), message="detach")
        store.set_symbolic("HEAD", MAIN, message="checkout: moving from 0303 to main")
        store.set_symbolic("HEAD", "refs/heads/unborn", message="checkout: unborn")
        assert [(e.old, e.new, e.message) for e in store.reflog("HEAD")] == [
            (fake_id(1), None, "checkout: unborn"),
            (fake_id(3), fake_id(1), "checkout: moving from 0303 to main"),
            (None, fake_id(3), "detach"),
            (fake_id(1), fake_id(2), "checkout: moving from main to feature"),
        ]
        assert store.reflog(MAIN) == store.reflog(MAIN)[:1]  # only its own creation

    def test_update_refs_applies_several_refs_together(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1))
        store.update_refs(
            [
                RefUpdate(MAIN, fake_id(2), fake_id(1), "move"),
                RefUpdate(FEATURE, fake_id(3), None, "create"),
                RefUpdate(TAG, fake_id(4), ANY, "tag"),
            ]
        )
        assert store.list_refs() == {MAIN: fake_id(2), FEATURE: fake_id(3), TAG: fake_id(4)}
        assert store.reflog(FEATURE)[0].message == "create"

    def test_update_refs_is_all_or_nothing(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1), message="one")
        store.set_ref(FEATURE, fake_id(5), message="five")
        before = store.list_refs()
        logs = {name: store.reflog(name) for name in (MAIN, FEATURE, TAG)}
        for stale_position in range(3):
            updates = [
                RefUpdate(MAIN, fake_id(2), fake_id(1), "move main"),
                RefUpdate(TAG, fake_id(3), None, "create tag"),
                RefUpdate(FEATURE, fake_id(6), fake_id(5), "move feature"),
            ]
            stale = updates[stale_position]
            updates[stale_position] = RefUpdate(stale.name, stale.new, fake_id(99), stale.message)
            with pytest.raises(RefConflict) as info:
                store.update_refs(updates)
            assert info.value.ref == stale.name
            assert store.list_refs() == before
            assert {name: store.reflog(name) for name in logs} == logs

    def test_a_batch_naming_one_ref_twice_is_refused_whole(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1), message="one")
        before, log = store.list_refs(), store.reflog(MAIN)
        with pytest.raises(RefError, match="once"):
            store.update_refs(
                [
                    RefUpdate(MAIN, fake_id(2), fake_id(1), "first"),
                    RefUpdate(MAIN, fake_id(3), fake_id(2), "second"),
                ],
                make_objects(1, salt="twice"),
            )
        assert store.list_refs() == before and store.reflog(MAIN) == log
        assert not store.has_many(make_objects(1, salt="twice"))

    def test_a_stale_gc_generation_refuses_the_whole_write(self, store: Store) -> None:
        generation = store.generation()
        store.put_many(make_objects(1, salt="kept"))
        store.delete_many(make_objects(1, salt="kept"))
        assert store.generation() == generation + 1
        objects = make_objects(2, salt="late")
        with pytest.raises(StaleCache):
            store.update_refs(
                [RefUpdate(MAIN, fake_id(7), None, "late")], objects, generation=generation
            )
        assert store.get_ref(MAIN) is None and not store.has_many(objects)
        store.update_refs(
            [RefUpdate(MAIN, fake_id(7), None, "now")], objects, generation=generation + 1
        )
        assert store.get_ref(MAIN) == fake_id(7)

    def test_delete_many_refuses_when_refs_moved_since_marking(self, store: Store) -> None:
        objects = make_objects(2, salt="marked")
        store.put_many(objects)
        state = store.refs_state()
        store.set_ref(MAIN, fake_id(8), message="a writer")
        with pytest.raises(RefsChanged):
            store.delete_many(objects, if_refs=state)
        assert store.has_many(objects) == set(objects)
        assert store.delete_many(objects, if_refs=store.refs_state()) == 2

    def test_update_refs_stores_the_objects_it_is_given(self, store: Store) -> None:
        objects = make_objects(6)
        commit = next(iter(objects))
        store.update_refs([RefUpdate(MAIN, commit, None, "commit")], objects)
        assert store.get_ref(MAIN) == commit
        assert store.get_many(objects) == objects
        # Objects alone (no ref updates) are stored too.
        more = make_objects(2, salt="more")
        store.update_refs([], more)
        assert store.has_many(more) == set(more)

    def test_update_refs_conflict_never_moves_the_ref_to_a_missing_object(
        self, store: Store
    ) -> None:
        store.set_ref(MAIN, fake_id(1))
        objects = make_objects(3)
        commit = next(iter(objects))
        with pytest.raises(RefConflict):
            store.update_refs([RefUpdate(MAIN, commit, fake_id(2), "stale")], objects)
        # The objects may or may not have been kept (gc removes them); the ref did not move.
        assert store.get_ref(MAIN) == fake_id(1)

    # --- reflogs ------------------------------------------------------------------

    def test_reflog_is_newest_first_with_old_new_message_and_time(
        self, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for step in range(1, 4):
            _set_clock(monkeypatch, store, 100.0 * step)
            store.set_ref(
                MAIN,
                fake_id(step),
                expected=fake_id(step - 1) if step > 1 else None,
                message=f"step {step}",
            )
        assert store.reflog(MAIN) == [
            StoredReflogEntry(fake_id(2), fake_id(3), 300.0, "step 3"),
            StoredReflogEntry(fake_id(1), fake_id(2), 200.0, "step 2"),
            StoredReflogEntry(None, fake_id(1), 100.0, "step 1"),
        ]

    def test_log_also_records_the_same_move_in_other_reflogs(self, store: Store) -> None:
        store.set_symbolic("HEAD", FEATURE)
        store.set_ref(MAIN, fake_id(1), message="first", log_also=["HEAD"])
        store.set_ref(MAIN, fake_id(2), message="second")
        store.set_ref(MAIN, fake_id(3), message="third", log_also=("HEAD", "logs/extra"))
        assert [(e.old, e.new, e.message) for e in store.reflog("HEAD")] == [
            (fake_id(2), fake_id(3), "third"),
            (None, fake_id(1), "first"),
        ]
        assert [e.message for e in store.reflog(MAIN)] == ["third", "second", "first"]
        assert [e.message for e in store.reflog("logs/extra")] == ["third"]
        # log_also names a reflog only: it never moves another ref.
        assert store.get_ref("logs/extra") is None
        assert store.get_symbolic("HEAD") == FEATURE

    def test_moves_of_the_branch_head_points_at_are_in_heads_reflog(self, store: Store) -> None:
        store.set_symbolic("HEAD", MAIN)
        store.set_ref(MAIN, fake_id(1), message="one")
        store.set_ref(FEATURE, fake_id(2), message="elsewhere")
        store.set_ref(MAIN, fake_id(3), message="two", log_also=["HEAD"])  # logged once
        assert [e.message for e in store.reflog("HEAD")] == ["two", "one"]

    def test_a_long_note_is_cut_to_the_same_bounded_note_everywhere(self, store: Store) -> None:
        limit = REFLOG_NOTE_LIMIT
        long = "commit: " + "é" * (limit - 9) + "€x" + "y" * 100_000
        store.set_symbolic("HEAD", MAIN, message=long)
        store.set_ref(MAIN, fake_id(1), message=long)
        store.update_refs([RefUpdate(FEATURE, fake_id(2), None, long, ("logs/extra",))])
        cut = "commit: " + "é" * (limit - 9) + "\u2026"  # limit characters, the last '…'
        assert len(cut) == limit
        for name in ("HEAD", MAIN, FEATURE, "logs/extra"):
            assert [e.message for e in store.reflog(name)] == [cut] * (2 if name == "HEAD" else 1)
        exact = "z" * limit  # a note of exactly the limit is kept whole
        store.set_ref(MAIN, fake_id(3), message=exact)
        assert store.reflog(MAIN)[0].message == exact

    def test_reflog_names_include_deleted_refs_until_their_reflog_goes(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1), message="main", log_also=["HEAD"])
        store.set_ref(FEATURE, fake_id(2), message="feature")
        store.set_ref(FEATURE, None, expected=fake_id(2), message="deleted")
        assert {"HEAD", MAIN, FEATURE} <= set(store.reflog_names())
        store.delete_reflog(FEATURE)
        assert FEATURE not in store.reflog_names()
        assert store.reflog_names() == sorted(store.reflog_names())

    def test_delete_reflog_forgets_only_that_reflog(self, store: Store) -> None:
        store.set_ref(MAIN, fake_id(1), message="main", log_also=["HEAD"])
        store.set_ref(FEATURE, fake_id(2), message="feature")
        store.delete_reflog(MAIN)
        assert store.reflog(MAIN) == []
        assert [e.message for e in store.reflog("HEAD")] == ["main"]
        assert [e.message for e in store.reflog(FEATURE)] == ["feature"]
        assert store.get_ref(MAIN) == fake_id(1)  # the ref itself stays
        store.delete_reflog("refs/heads/never-existed")  # no error
        store.set_ref(MAIN, fake_id(3), message="after", log_also=["HEAD"])
        assert [(e.old, e.message) for e in store.reflog(MAIN)] == [(fake_id(1), "after")]
        # And the other way round: forgetting HEAD's log keeps the branch's.
        store.delete_reflog("HEAD")
        assert store.reflog("HEAD") == []
        assert [e.message for e in store.reflog(MAIN)] == ["after"]
        assert [e.message for e in store.reflog(FEATURE)] == ["feature"]

    # --- config ---------------------------------------------------------------------

    def test_config_get_set_overwrite_and_delete(self, store: Store) -> None:
        assert store.config_get("core.format") is None
        store.config_set("core.format", "1")
        store.config_set("user.name", "Ada ✓")
        assert store.config_get("core.format") == "1"
        store.config_set("core.format", "2")
        assert store.config_get("core.format") == "2"
        assert store.config_get("user.name") == "Ada ✓"
        store.config_set("core.format", None)
        assert store.config_get("core.format") is None
        store.config_set("core.format", None)  # deleting a missing key is a no-op
        assert store.config_get("user.name") == "Ada ✓"
        store.config_set("empty", "")
        assert store.config_get("empty") == ""

    # --- lifecycle and concurrency ---------------------------------------------------

    def test_close_can_be_called_twice(self, store: Store) -> None:
        store.put_many(make_objects(1))
        store.close()
        store.close()

    def test_concurrent_writers_apply_every_increment_once(self, store: Store) -> None:
        per_thread = 50
        errors: list[BaseException] = []
        barrier = threading.Barrier(2)

        def worker() -> None:
            try:
                barrier.wait()
                cas_increment(store, MAIN, per_thread, pause=0.0005)
            except BaseException as exc:  # surfaced by the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors
        assert id_number(store.get_ref(MAIN)) == 2 * per_thread
        # Every value 1..100 was written exactly once, each from its predecessor.
        log = store.reflog(MAIN)
        assert [id_number(e.new) for e in reversed(log)] == list(range(1, 2 * per_thread + 1))
        assert all(id_number(e.old) + 1 == id_number(e.new) for e in log)


__all__ = ["StoreContract", "cas_increment", "fake_id", "id_number", "make_objects"]
