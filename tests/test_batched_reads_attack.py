"""Attacks on the batched snapshot reads (``ObjectDB.prefetch``, ``read_snapshot`` reading a level
a query) and on the batched ref lookups (``Store.get_refs``, a full id read without a scan).

Every read gives back exactly what was committed or raises the documented error naming the
damaged object; a failed read leaves nothing wrong in the handle's caches: the same handle
still fails on the damaged data, and reads the data exactly once it is repaired.
"""

from __future__ import annotations

import copy
import sqlite3
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import CountingStore, message, run_threads
from test_upgrade import shown, unpack_fixture

from statevcs import (
    AmbiguousRefWarning,
    CorruptObject,
    MissingObject,
    Repo,
    Snapshot,
    UnknownRevision,
    objectdb,
)
from statevcs.errors import InvalidRefName
from statevcs.hashing import to_hex
from statevcs.objectdb import ObjectDB
from statevcs.objects import (
    ORDERED_SNAPSHOT_FORMAT,
    PACKED_SNAPSHOT_FORMAT,
    Chunked,
    CommitObject,
    ListNode,
    MapNode,
    SnapshotObject,
    encode_with_id,
)
from statevcs.refs import check_ref_name
from statevcs.stores.base import Store
from statevcs.stores.memory import MemoryStore
from statevcs.stores.s3 import S3Store
from statevcs.stores.sqlite import SQLiteStore

BIG = 300_000  # a message this long is stored out of line, chunked


def _snapshot(n: int) -> Snapshot:
    """``n`` messages (two of them chunked), a stored state map with a chunked value, extras."""
    messages = [message(i, BIG if i in (5, n - 1) else 40) for i in range(n)]
    state: dict[str, Any] = {f"k{i}": "v" * 40 for i in range(12)}
    state.update(big="b" * 200_000, notes="n" * 300)
    extras = {"system_prompt": {"text": "p" * 500}, **{f"e{i}": i for i in range(10)}}
    return Snapshot(messages=messages, state=state, extras=extras)


def _same(read: Snapshot, want: Snapshot) -> bool:
    return (read.kind, read.messages, read.state, read.extras) == (
        want.kind,
        want.messages,
        want.state,
        want.extras,
    )


def _roles(db: ObjectDB, commit_id: str) -> dict[str, bytes]:
    """One object id for each place an object can sit in the committed snapshot."""
    commit = db.load(bytes.fromhex(commit_id))
    assert isinstance(commit, CommitObject)
    snap = db.load(commit.snapshot)
    assert isinstance(snap, SnapshotObject) and isinstance(snap.state, bytes)
    found: dict[str, bytes] = {"snapshot": commit.snapshot, "root": snap.messages}
    found["tail doc"] = snap.tail[0]
    for tail_id in snap.tail:
        obj = db.load(tail_id)
        if isinstance(obj, Chunked):
            found["chunked tail doc"] = tail_id
            found["chunk of a tail doc"] = obj.chunks[-1]
    stack = [snap.messages]
    while stack:
        node = db.load(stack.pop())
        assert isinstance(node, ListNode)
        if node.level == 0:
            for item, value in zip(node.ids, node.values or ()):
                if value is None:
                    found["chunked tree message"] = item
            continue
        for child in node.ids:
            if db.load(child).level > 0:  # type: ignore[union-attr]
                found["inner node"] = child
            stack.append(child)
    found["leaf"] = _leaf_id(db, snap.messages)
    found["state map"] = snap.state
    state = db.load(snap.state)
    assert isinstance(state, MapNode)
    for value in state.values:
        if isinstance(value, bytes):
            obj = db.load(value)
            key = "chunked state value" if isinstance(obj, Chunked) else "state value"
            found[key] = value
            if isinstance(obj, Chunked):
                found["chunk of a state value"] = obj.chunks[0]
    extras = snap.extras if isinstance(snap.extras, MapNode) else db.load(snap.extras)
    assert isinstance(extras, MapNode)
    found["extras value"] = next(v for v in extras.values if isinstance(v, bytes))
    return found


def _leaf_id(db: ObjectDB, root: bytes) -> bytes:
    node = db.load(root)
    while isinstance(node, ListNode) and node.level > 0:
        child = node.ids[len(node.ids) // 2]
        node = db.load(child)
        if isinstance(node, ListNode) and node.level == 0:
            return child
    raise AssertionError("no leaf below the root")


ROLES = [
    "snapshot",
    "root",
    "inner node",
    "leaf",
    "tail doc",
    "chunked tail doc",
    "chunk of a tail doc",
    "chunked tree message",
    "state map",
    "state value",
    "chunked state value",
    "chunk of a state value",
    "extras value",
]


class Raw:
    """Direct access to a store's stored bytes, under the library (damage and repair)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, object_id: bytes) -> bytes | None:
        return self.store.get_many([object_id]).get(object_id)

    def put(self, object_id: bytes, data: bytes | None) -> None:
        store = self.store
        if isinstance(store, MemoryStore):
            if data is None:
                store._objects.pop(object_id, None)
            else:
                store._objects[object_id] = (data, 0.0)
            return
        if isinstance(store, S3Store):  # opened with cache=none: the bucket alone holds it
            key = store._object_key(object_id)
            if data is None:
                store._client.delete([key])
            else:
                store._client.put(key, data)
            return
        assert isinstance(store, SQLiteStore)
        with sqlite3.connect(store.path) as db:
            db.execute("DELETE FROM objects WHERE id = ?", (object_id,))
            if data is not None:
                db.execute(
                    "INSERT INTO objects (id, data, created) VALUES (?, ?, 0)", (object_id, data)
                )
        db.close()


def _damages(other: bytes) -> dict[str, Callable[[bytes], bytes | None]]:
    return {
        "another object's bytes": lambda data: other,
        "truncated": lambda data: data[: len(data) // 2],
        "a byte flipped": lambda data: data[:-1] + bytes([data[-1] ^ 1]),
        "empty": lambda data: b"",
        "deleted": lambda data: None,
    }


@pytest.fixture(params=["memory", "sqlite"])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Repo, str, Snapshot]]:
    """A repository whose HEAD~1 holds :func:`_snapshot` (a tail too); HEAD moves on."""
    url = "memory://" if request.param == "memory" else str(tmp_path / "r")
    yield from _history(url)


def _history(url: str) -> Iterator[tuple[Repo, str, Snapshot]]:
    repo = Repo.init(url)
    for n in range(83, 87):
        commit = repo.commit(_snapshot(n), message=f"{n} messages")
    repo.commit(Snapshot(messages=[message(0)]), message="moves on")
    yield repo, commit.id, _snapshot(86)
    repo.close()


def _fresh(repo: Repo) -> Repo:
    return Repo(repo.store) if repo.url.startswith("memory") else Repo.open(repo.url)


@pytest.mark.parametrize("role", ROLES)
def test_damage_at_any_level_is_named_and_a_repair_reads_back_through_the_same_handle(
    caches: str, history: tuple[Repo, str, Snapshot], role: str
) -> None:
    _damage_and_repair(history, role)


@pytest.mark.parametrize("role", ["tail doc", "leaf", "state map", "chunk of a state value"])
def test_damage_in_an_s3_bucket_is_named_and_a_repair_reads_back(s3_url: str, role: str) -> None:
    for history in _history(f"{s3_url}&cache=none"):
        _damage_and_repair(history, role)


def _damage_and_repair(history: tuple[Repo, str, Snapshot], role: str) -> None:
    repo, commit_id, want = history
    roles = _roles(repo.objects, commit_id)
    assert set(ROLES) <= set(roles)
    target = roles[role]
    raw = Raw(repo.store)
    original = raw.get(target)
    assert original is not None
    other = raw.get(roles["state value"] if role != "state value" else roles["leaf"])
    assert other is not None
    for name, damage in _damages(other).items():
        handle = _fresh(repo)
        raw.put(target, damage(original))
        for _ in range(2):  # a failed read caches nothing: the same handle fails again
            with pytest.raises((CorruptObject, MissingObject)) as caught:
                handle.show(commit_id)
            assert to_hex(target) in str(caught.value), (name, str(caught.value))
            if name == "deleted":
                assert caught.type is MissingObject
            # Whatever the failed read left cached, other commits still read exactly.
            assert handle.show("HEAD").messages == [message(0)]
        raw.put(target, original)
        assert _same(handle.show(commit_id), want), name
        handle.close()
    assert _same(_fresh(repo).show(commit_id), want)


def _commit_crafted(repo: Repo, snapshot: SnapshotObject, branch: str) -> str:
    """Store ``snapshot`` under a commit on ``branch``; return the commit's hex id."""
    snapshot_id, data = encode_with_id(snapshot)
    commit_id, commit_data = encode_with_id(CommitObject(snapshot_id, (), "crafted", 0, "x", {}))
    repo.store.put_many({snapshot_id: data, commit_id: commit_data})
    repo.store.set_ref(f"refs/heads/{branch}", commit_id)
    return to_hex(commit_id)


def _wrong_kinds(
    snap: SnapshotObject, roles: dict[str, bytes], commit_id: bytes
) -> dict[str, tuple[SnapshotObject, bytes]]:
    """Snapshots with one slot naming an object of the wrong kind, and that object's id."""
    plain_map = MapNode(("k",), (roles["state value"],))
    doc, blob, leaf, state_map = (
        roles["tail doc"],
        roles["state value"],
        roles["leaf"],
        roles["state map"],
    )
    extras_map = snap.extras if isinstance(snap.extras, bytes) else None
    cases: dict[str, tuple[SnapshotObject, bytes]] = {}
    for name, wrong in [
        ("leaf", leaf),
        ("map", state_map),
        ("blob", blob),
        ("snapshot", roles["snapshot"]),
        ("commit", commit_id),
        ("inner node", roles["inner node"]),
    ]:
        cases[f"a {name} in the tail"] = (_replace(snap, tail=(*snap.tail[:-1], wrong)), wrong)
    for name, wrong in [
        ("doc", doc),
        ("blob", blob),
        ("map", state_map),
        ("chunked doc", roles["chunked tail doc"]),
    ]:
        cases[f"a {name} as the tree root"] = (_replace(snap, messages=wrong), wrong)
    for name, wrong in [
        ("doc", doc),
        ("leaf", leaf),
        ("blob", blob),
        ("snapshot", roles["snapshot"]),
    ]:
        cases[f"a {name} as the state map"] = (_replace(snap, state=wrong), wrong)
        cases[f"a {name} as the extras map"] = (_replace(snap, extras=wrong), wrong)
    for name, wrong in [("map", state_map), ("leaf", leaf), ("root", roles["root"])]:
        bad = MapNode(("k",), (wrong,))
        cases[f"a {name} as a state value"] = (_replace(snap, state=bad), wrong)
        cases[f"a {name} as an extras value"] = (_replace(snap, extras=bad), wrong)
    cases["a blob as an extras value"] = (_replace(snap, extras=plain_map), blob)
    assert extras_map is None or extras_map not in (doc, blob)
    return cases


def _replace(snap: SnapshotObject, **fields: Any) -> SnapshotObject:
    values = {name: getattr(snap, name) for name in SnapshotObject.__slots__}
    values.update(fields)
    # A replaced map drops its recorded key order: one wrong thing per crafted snapshot.
    for name in ("state", "extras"):
        if name in fields:
            values[f"{name}_order"] = ()
    if values["version"] == ORDERED_SNAPSHOT_FORMAT and not (
        values["state_order"] or values["extras_order"]
    ):
        values["version"] = PACKED_SNAPSHOT_FORMAT
    return SnapshotObject(**values)


def test_an_object_of_the_wrong_kind_at_any_level_is_corrupt_and_named(
    history: tuple[Repo, str, Snapshot],
) -> None:
    repo, commit_id, want = history
    roles = _roles(repo.objects, commit_id)
    snap = repo.objects.load(roles["snapshot"])
    assert isinstance(snap, SnapshotObject)
    cases = _wrong_kinds(snap, roles, bytes.fromhex(commit_id))
    handle = _fresh(repo)
    for number, (name, (crafted, wrong)) in enumerate(sorted(cases.items())):
        bad = _commit_crafted(repo, crafted, f"bad{number}")
        for _ in range(2):
            with pytest.raises(CorruptObject) as caught:
                handle.show(bad)
            assert to_hex(wrong) in str(caught.value), (name, str(caught.value))
            assert _same(handle.show(commit_id), want), name
        with pytest.raises(CorruptObject):  # a handle that read nothing before fails alike
            _fresh(repo).show(bad)


class _LockstepStore(MemoryStore):
    """A memory store whose object reads wait for one another in pairs while ``lockstep`` is
    set: two threads reading the same snapshot through one handle then both miss every cache
    and both put what they read in it."""

    def __init__(self) -> None:
        super().__init__()
        self.lockstep: threading.Barrier | None = None

    def get_many(self, ids: Iterable[bytes]) -> dict[bytes, bytes]:
        found = super().get_many(ids)
        if self.lockstep is not None:
            self.lockstep.wait(timeout=10)
        return found


def _bytes_cached(db: ObjectDB) -> tuple[int, int]:
    """What the handle's bytes cache counts it holds, and what it holds."""
    return db._bytes_size, sum(len(data) for data in db._bytes.values())


def test_two_threads_reading_one_snapshot_at_once_count_its_bytes_once() -> None:
    store = _LockstepStore()
    with Repo(store) as writer:
        commit_ids = [
            writer.commit(
                {"messages": [message(i, 300) for i in range(n)], "k": str(n) * 900},
                message=str(n),
            ).id
            for n in (3, 11, 30)
        ]
    handle = Repo(store)
    store.lockstep = threading.Barrier(2)
    run_threads(lambda c: handle.show(c), [(c,) for c in commit_ids[:1]] * 2)
    store.lockstep = None
    counted, held = _bytes_cached(handle.objects)
    assert held > 0 and counted == held
    for commit_id in commit_ids:
        store.lockstep = threading.Barrier(2)
        run_threads(lambda c: handle.show(c), [(commit_id,)] * 2)
        store.lockstep = None
    counted, held = _bytes_cached(handle.objects)
    assert counted == held


def test_threads_sharing_a_handle_with_a_small_bytes_cache_read_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bytes cache evicting all the time while threads read: no ``KeyError`` from a count
    that ran ahead of what the cache holds, every read exact."""
    monkeypatch.setattr(objectdb, "_BYTES_CACHE", 4000)
    repo = Repo.init("memory://")
    states: dict[str, dict[str, Any]] = {}
    for n in range(20):
        state = {"messages": [message(i, 200) for i in range(3 * n)], "k": str(n) * 1000}
        state["j"] = str(n) * 900
        states[repo.commit(state).id] = copy.deepcopy(state)
    handle = Repo(repo.store)
    errors: list[BaseException] = []

    def read(k: int) -> None:
        try:
            for _ in range(30):
                for commit_id in list(states)[k % 3 :: 3]:
                    snap = handle.show(commit_id)
                    assert {**snap.state, "messages": snap.messages} == states[commit_id]
        except BaseException as exc:  # reported below, with the thread's own traceback
            errors.append(exc)

    run_threads(read, [(k,) for k in range(6)], switch_often=True)
    assert not errors, repr(errors[0])
    counted, held = _bytes_cached(handle.objects)
    assert counted >= 0 and held <= 4000 + 1000


def _reads_of_a_fresh_show(store: CountingStore, commit_id: str, want: dict[str, Any]) -> int:
    handle = Repo(store)
    before = store.reads
    snap = handle.show(commit_id)
    assert {**snap.state, "messages": snap.messages} == want
    return store.reads - before


@pytest.mark.parametrize("where", ["tail", "tree", "state"])
def test_a_snapshot_read_does_not_grow_with_how_many_values_are_chunked(where: str) -> None:
    """One large value or four, in the open tail, in the tree or in the state: the same reads
    (their chunked objects and all their chunks a batch each), not a read each."""
    counts = []
    for large in (1, 4):
        store = CountingStore()
        repo = Repo(store)
        state: dict[str, Any] = {"messages": [message(i, 40) for i in range(200)]}
        if where == "state":
            state.update({f"v{k}": str(k) * 100_000 for k in range(large)})
        elif where == "tree":
            for i in range(40, 40 + large):
                state["messages"][i] = message(i, 100_000)
        else:  # appended after a commit: the open tail holds them
            repo.commit(state)
            state["messages"] += [message(300 + i, 100_000) for i in range(large)]
        commit_id = repo.commit(state).id
        snap = repo.objects.load_snapshot(bytes.fromhex(repo.get_commit(commit_id).snapshot_id))
        assert where != "tail" or len(snap.tail) >= large
        counts.append(_reads_of_a_fresh_show(store, commit_id, state))
    assert counts[0] == counts[1], counts


# --- batched ref lookups ------------------------------------------------------------------

ref_components = st.text(
    st.sampled_from("abcXYZ019-_.%'\";()*?[]\\/é@{} "), min_size=1, max_size=12
).filter(lambda s: _is_ref_name(f"refs/heads/{s}"))


def _is_ref_name(name: str) -> bool:
    try:
        check_ref_name(name)
    except InvalidRefName:
        return False
    return True


@pytest.fixture(params=["memory", "sqlite"])
def ref_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    store: Store = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "s.db")
    yield store
    store.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    present=st.lists(ref_components, max_size=8, unique=True),
    asked=st.lists(ref_components, max_size=8),
    many=st.integers(0, 1200),
)
def test_get_refs_answers_what_get_ref_answers_name_by_name(
    ref_store: Store, present: list[str], asked: list[str], many: int
) -> None:
    """SQL-looking names, duplicates, absent names, symbolic refs, past 500 names a query."""
    for name, _ in ref_store.list_refs().items():
        ref_store.set_ref(name, None)
    targets = {f"refs/heads/{name}": bytes([n + 1]) * 32 for n, name in enumerate(present)}
    for name, target in targets.items():
        ref_store.set_ref(name, target)
    ref_store.set_symbolic("refs/remotes/o/HEAD", "refs/heads/main")
    names = [
        *(f"refs/heads/{a}" for a in asked),
        *targets,
        "refs/remotes/o/HEAD",
        *(f"refs/tags/n{k}" for k in range(many)),
        *(f"refs/heads/{a}" for a in reversed(asked)),
    ]
    expected = {}
    for name in names:
        value = ref_store.get_ref(name)
        if value is not None:
            expected[name] = value
    found = ref_store.get_refs(names)
    assert found == expected == {n: targets[n] for n in dict.fromkeys(names) if n in targets}
    assert list(found) == list(expected)  # in the order first asked


def test_a_full_id_that_is_also_a_ref_name_is_the_commit_with_a_warning(repo_rev: Repo) -> None:
    repo = repo_rev
    first = repo.commit({"messages": [message(0)]}, message="first").id
    second = repo.commit({"messages": [message(1)]}, message="second").id
    snapshot_hex = repo.get_commit(first).snapshot_id
    repo.store.set_ref(f"refs/heads/{first}", bytes.fromhex(second))
    repo.store.set_ref(f"refs/tags/{snapshot_hex}", bytes.fromhex(second))
    repo.store.set_ref(f"refs/remotes/{first[:12]}", bytes.fromhex(second))
    with pytest.warns(AmbiguousRefWarning, match=f"refs/heads/{first}"):
        assert repo.resolve(first) == first
    with warnings.catch_warnings():  # ref names are case-sensitive: no ref is named so
        warnings.simplefilter("error")
        assert repo.resolve(first.upper()) == first
    with pytest.warns(AmbiguousRefWarning):  # a hash prefix and a remote: the ref wins
        assert repo.resolve(first[:12]) == second
    # A full id naming an object that is no commit: unknown (as git: a full id is an id,
    # never a ref name), however often asked; a real commit still resolves after it.
    for text in (snapshot_hex, "0" * 64, "f" * 64):
        for _ in range(2):
            with pytest.raises(UnknownRevision, match="no commit has the id"):
                repo.resolve(text)
    with pytest.warns(AmbiguousRefWarning):
        assert repo.resolve(f"{first}~0") == first
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert repo.resolve(f"refs/heads/{first}") == second
        assert repo.resolve(f"heads/{first}") == second


def test_full_ids_of_every_kind_of_object_resolve_to_nothing_and_cache_nothing_wrong(
    repo_rev: Repo,
) -> None:
    repo = repo_rev
    state = {"messages": [message(i, BIG if i == 3 else 40) for i in range(40)], "k": "v" * 300}
    commit_id = repo.commit(state).id
    roles = _roles_of_any(repo.objects, commit_id)
    for role, object_id in roles.items():
        with pytest.raises(UnknownRevision):
            repo.resolve(to_hex(object_id))
        assert role and repo.resolve(commit_id) == commit_id
    restored: dict[str, Any] = {}
    repo.checkout(restored, commit_id)
    assert restored == state
    fresh = _fresh(repo)
    for object_id in roles.values():
        with pytest.raises(UnknownRevision):
            fresh.resolve(to_hex(object_id))
    restored = {}
    fresh.checkout(restored, commit_id)
    assert restored == state


def _roles_of_any(db: ObjectDB, commit_id: str) -> dict[str, bytes]:
    """Ids of objects of every kind below a commit, and of a message only a leaf holds."""
    commit = db.load(bytes.fromhex(commit_id))
    assert isinstance(commit, CommitObject)
    snap = db.load(commit.snapshot)
    assert isinstance(snap, SnapshotObject)
    found = {"snapshot": commit.snapshot, "root": snap.messages}
    leaf = db.load(_leaf_id(db, snap.messages))
    assert isinstance(leaf, ListNode) and leaf.values is not None
    found["packed message"] = next(i for i, v in zip(leaf.ids, leaf.values) if v is not None)
    for item, value in zip(leaf.ids, leaf.values):
        if value is None:
            found["chunked message"] = item
    if isinstance(snap.state, bytes):
        found["state map"] = snap.state
    return found


@pytest.fixture(params=["memory", "sqlite"])
def repo_rev(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Repo]:
    url = "memory://" if request.param == "memory" else str(tmp_path / "r")
    with Repo.init(url) as repo:
        yield repo


# --- threads and garbage collection ----------------------------------------------------------


def _state(n: int, branch: str) -> dict[str, Any]:
    messages = [message(i, BIG if i % 17 == 3 else 40) for i in range(n)]
    return {"messages": messages, "branch": branch, "notes": branch * 200, "n": n}


def test_threads_read_and_commit_through_one_handle_while_another_collects(
    tmp_path: Path,
) -> None:
    """Readers of kept commits read them exactly; readers of commits another handle is
    collecting read them exactly or get ``MissingObject``/``UnknownRevision``; commits made
    meanwhile through the shared handle all read back exactly from a fresh process' handle."""
    folder = tmp_path / "r"
    kept: dict[str, dict[str, Any]] = {}
    doomed: dict[str, dict[str, Any]] = {}
    with Repo.init(folder) as setup:
        for n in range(20, 60, 8):
            main = setup.commit(_state(n, "main"), branch="main", message=f"{n}")
            kept[main.id] = _state(n, "main")
            state = _state(n + 3, "doomed")
            doomed[setup.commit(state, branch="doomed", message=f"{n}").id] = state
    shared = Repo.open(folder)
    collector = Repo.open(folder)
    written: dict[str, dict[str, Any]] = {}
    errors: list[BaseException] = []
    started = threading.Event()

    def work(role: str, k: int) -> None:
        try:
            if role == "collect":
                started.wait(timeout=30)  # collect while the readers are reading
                collector.delete_branch("doomed")
                for _ in range(3):
                    collector.gc(grace="0", expire_reflog="0")
            elif role == "write":
                for n in range(30, 70, 10):
                    state = _state(n + k, f"w{k}")
                    written[shared.commit(state, branch=f"w{k}", message="w").id] = state
            else:
                for _ in range(4):
                    for commit_id, state in [*doomed.items(), *kept.items()]:
                        try:
                            snap = shared.show(commit_id)
                        except (MissingObject, UnknownRevision) as exc:
                            assert commit_id in doomed, f"{commit_id[:12]}: {exc!r}"
                            continue
                        started.set()
                        assert {**snap.state, "messages": snap.messages} == state
        except BaseException as exc:  # reported below, with the thread's own traceback
            errors.append(exc)

    jobs = [("collect", 0), ("write", 1), ("write", 2), ("read", 3), ("read", 4), ("read", 5)]
    run_threads(work, jobs, switch_often=True)
    assert not errors, repr(errors[0])
    shared.close()
    collector.close()
    with Repo.open(folder) as fresh:
        for commit_id, state in [*kept.items(), *written.items()]:
            snap = fresh.show(commit_id)
            assert {**snap.state, "messages": snap.messages} == state
        assert fresh.fsck().ok


# --- any snapshot, any damage ------------------------------------------------------------------

_DAMAGES: dict[str, Callable[[bytes, bytes], bytes | None]] = {
    "another object's bytes": lambda data, other: other,
    "truncated": lambda data, other: data[: len(data) // 2],
    "a byte flipped": lambda data, other: data[:-1] + bytes([data[-1] ^ 1]),
    "deleted": lambda data, other: None,
}

sizes = st.sampled_from([0, 10, 70, 2_000, 90_000])
"""Message and value sizes: empty, inline, small, a document, chunked."""


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A few states of one conversation: appended, cut, edited; state and extras of any size."""
    states: list[dict[str, Any]] = []
    messages: list[Any] = []
    for step in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["append", "append", "cut", "edit"]))
        if action == "append" or not messages:
            count = draw(st.integers(0, 40))
            messages += [message(len(messages) + i, draw(sizes)) for i in range(count)]
        elif action == "cut":
            messages = messages[: draw(st.integers(0, len(messages)))]
        else:
            at = draw(st.integers(0, len(messages) - 1))
            messages[at] = message(1000 + step, draw(sizes))
        keys = draw(st.lists(st.sampled_from("abcdefghijklmnop"), max_size=10, unique=True))
        state = {"messages": list(messages), **{k: "s" * draw(sizes) for k in keys}}
        states.append(state)
    return states


@pytest.fixture(params=["default", "tiny"])
def caches(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The handle's caches as they ship, or so small that every read evicts and every
    document counts as large (kept nowhere, checked by the load that reads it again)."""
    if request.param == "tiny":
        monkeypatch.setattr(objectdb, "_LARGE", 100)
        monkeypatch.setattr(objectdb, "_BYTES_CACHE", 3000)
        monkeypatch.setattr(objectdb, "_NODE_CACHE", 5)
    return str(request.param)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=histories(), pick=st.integers(0, 10**6), damage=st.sampled_from(sorted(_DAMAGES)))
def test_any_snapshot_reads_back_exactly_or_names_its_damage_in_few_reads(
    caches: str, steps: list[dict[str, Any]], pick: int, damage: str
) -> None:
    store = CountingStore()
    with Repo(store) as repo:
        commit_ids = [repo.commit(copy.deepcopy(state), branch="main").id for state in steps]
    for commit_id, state in zip(commit_ids, steps):
        handle = Repo(store)
        before = store.reads
        restored: dict[str, Any] = {}
        handle.checkout(restored, commit_id)
        assert restored == state
        height = _height(handle.objects, commit_id)
        # The commit, the snapshot, then a level a read; large values and messages add at most
        # four reads (the zstd dictionary, chunks of the tail's, chunked messages and theirs).
        assert caches == "tiny" or store.reads - before <= 2 + height + 1 + 4
    # Damage one object the last commit's read needs, read it through a fresh handle.
    needed = sorted(_needed(Repo(store), commit_ids[-1]))
    target = needed[pick % len(needed)]
    raw = Raw(store)
    original = raw.get(target)
    assert original is not None
    other = raw.get(needed[(pick + 1) % len(needed)])
    assert other is not None
    broken = _DAMAGES[damage](original, other)
    handle = Repo(store)
    raw.put(target, broken)
    if broken != original:
        # Damage under the commit itself: no commit to resolve the id to (UnknownRevision);
        # anywhere below it: the damaged object.
        with pytest.raises((CorruptObject, MissingObject, UnknownRevision)) as caught:
            handle.checkout({}, commit_ids[-1])
        assert to_hex(target) in str(caught.value)
        assert (caught.type is UnknownRevision) == (target.hex() == commit_ids[-1])
        if caught.type is UnknownRevision and broken is not None:
            assert "corrupt" in str(caught.value)  # not "no commit has the id"
    raw.put(target, original)
    restored = {}
    handle.checkout(restored, commit_ids[-1])
    assert restored == steps[-1]


def _height(db: ObjectDB, commit_id: str) -> int:
    commit = db.load(bytes.fromhex(commit_id))
    assert isinstance(commit, CommitObject)
    snap = db.load(commit.snapshot)
    assert isinstance(snap, SnapshotObject)
    root = db.load(snap.messages)
    assert isinstance(root, ListNode)
    return root.level + 1


def _needed(repo: Repo, commit_id: str) -> set[bytes]:
    """Every stored object a full read of the commit's snapshot needs."""
    db = repo.objects
    commit = db.load(bytes.fromhex(commit_id))
    assert isinstance(commit, CommitObject)
    snap = db.load(commit.snapshot)
    assert isinstance(snap, SnapshotObject)
    found = {bytes.fromhex(commit_id), commit.snapshot, snap.messages}
    stack = [snap.messages]
    while stack:
        node = db.load(stack.pop())
        assert isinstance(node, ListNode)
        if node.level > 0:
            found.update(node.ids)
            stack.extend(node.ids)
        elif node.values is not None:
            found.update(i for i, v in zip(node.ids, node.values) if v is None)
        else:
            found.update(node.ids)
    found.update(snap.tail)
    for ref in (snap.state, snap.extras):
        node = ref if isinstance(ref, MapNode) else db.load(ref)
        if isinstance(ref, bytes):
            found.add(ref)
        assert isinstance(node, MapNode)
        found.update(v for v in node.values if isinstance(v, bytes))
    for object_id in list(found):
        obj = db.load(object_id)
        if isinstance(obj, Chunked):
            found.update(obj.chunks)
    return {i for i in found if repo.store.has_many([i])}


def test_a_full_id_of_a_damaged_commit_says_it_is_damaged(repo_rev: Repo) -> None:
    repo = repo_rev
    first = repo.commit({"messages": [message(0)]}, message="first").id
    second = repo.commit({"messages": [message(1)]}, message="second").id
    raw = Raw(repo.store)
    original = raw.get(bytes.fromhex(first))
    assert original is not None
    raw.put(bytes.fromhex(first), original[:-1])
    for handle in (_fresh(repo), _fresh(repo)):
        for text in (first, f"{first}~0", first.upper()):
            with pytest.raises(UnknownRevision, match=f"{first}.*corrupt.*statevcs fsck"):
                handle.resolve(text)
        with pytest.raises(UnknownRevision, match="corrupt"):  # walking through it too
            handle.resolve(f"{second}~2")
        assert handle.resolve(second) == second
    raw.put(bytes.fromhex(first), None)
    with pytest.raises(UnknownRevision, match="no commit has the id"):
        _fresh(repo).resolve(first)
    raw.put(bytes.fromhex(first), original)
    handle = _fresh(repo)
    assert handle.resolve(first) == first == handle.resolve(f"{second}~1")


def test_format_1_commits_read_exactly_while_another_handle_upgrades_and_collects(
    tmp_path: Path,
) -> None:
    """Threads reading a format-1 repository's commits by their old ids through one handle
    while another upgrades it to format 2 and collects the old objects: every read exact,
    or (an old object collected under the read) ``MissingObject``; once done, all exact."""
    folder, expected, shows = unpack_fixture(tmp_path)
    reader = Repo.open(folder)
    upgrader = Repo.open(folder)
    errors: list[BaseException] = []
    started = threading.Event()

    def work(role: str) -> None:
        try:
            if role == "upgrade":
                started.wait(timeout=30)
                upgrader.upgrade()
                upgrader.gc("0", expire_reflog="0")
                return
            for _ in range(3):
                for commit_id in expected["commits"]:
                    try:
                        assert shown(reader, commit_id) == shows[commit_id]
                    except MissingObject:
                        continue
                    started.set()
        except BaseException as exc:  # reported below, with the thread's own traceback
            errors.append(exc)

    run_threads(work, [("upgrade",), ("read",), ("read",)], switch_often=True)
    assert not errors, repr(errors[0])
    for handle in (reader, Repo.open(folder)):
        for commit_id in expected["commits"]:
            assert shown(handle, commit_id) == shows[commit_id]
            assert shown(handle, commit_id[:12]) == shows[commit_id]
    upgrader.close()
    reader.close()


def test_a_warm_handle_resolves_ids_another_handle_upgraded_and_collected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handle that read format-1 commits by their ids, after another handle upgraded the
    repository and collected the old objects: the ids stand for the replacing commits, read
    exactly (the cached old commit is no proof the store still holds it, nor what it names)."""
    monkeypatch.setattr(objectdb, "_BYTES_CACHE", 3000)  # smaller than what it read
    folder, expected, shows = unpack_fixture(tmp_path)
    with Repo.open(folder) as reader:
        for commit_id in expected["commits"]:
            assert shown(reader, commit_id) == shows[commit_id]
        with Repo.open(folder) as upgrader:
            upgrader.upgrade()
            upgrader.gc("0", expire_reflog="0")
        for commit_id in expected["commits"]:
            assert reader.resolve(commit_id) != commit_id
            assert shown(reader, commit_id) == shows[commit_id]


def test_a_warm_handle_does_not_resolve_a_commit_another_handle_collected(
    repo_rev: Repo,
) -> None:
    repo = repo_rev
    repo.commit({"messages": [message(0)]}, branch="main")
    gone = repo.commit({"messages": [message(1, BIG)], "k": "v" * 300}, branch="doomed").id
    warm = _fresh(repo)
    assert warm.show(gone).messages == [message(1, BIG)]
    collector = _fresh(repo)
    collector.delete_branch("doomed")
    collector.gc("0", expire_reflog="0")
    assert not repo.store.has_many([bytes.fromhex(gone)])
    for handle in (warm, _fresh(repo)):
        with pytest.raises(UnknownRevision, match="no commit has the id"):
            handle.resolve(gone)
