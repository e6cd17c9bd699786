"""Fuzzing every public entry point of Repo with hostile and wrongly typed arguments.

Each example builds a small repository (memory:// or SQLite) and applies a few random calls.
A call may succeed, raise a StateVCSError, or raise a TypeError that names one of its
arguments; nothing else. A failed call leaves the store byte-for-byte as it was (every table
read with sqlite3 directly). At the end a cold handle reads every ref and commit back equal.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import statevcs
from statevcs import Repo, Snapshot
from statevcs.mirror.git import export_git, import_git
from statevcs.stores.base import ANY
from statevcs.stores.memory import MemoryStore
from statevcs.stores.sqlite import SQLiteStore

from .harness import count, dump_tables, run_worker, snapshot_content
from .workers import all_refs, repository_digest

EXAMPLES = count("EXAMPLES", 40)
# Exploring: STATEVCS_RELIABILITY_COLLECT=problems.txt lists every problem instead of failing.
COLLECT = os.environ.get("STATEVCS_RELIABILITY_COLLECT")
OPS_PER_EXAMPLE = 6

WRONG_TYPES = st.sampled_from([None, 5, -1, 1.5, True, b"main", ["main"], {"a": 1}, object()])

TRICKY_REVISIONS = [
    "",
    "HEAD",
    "@",
    "main",
    "side",
    "v1",
    "main~1",
    "main~2^",
    "main^2",
    "HEAD~99999999999999999999999",
    "main~-1",
    "main@{0}",
    "main@{1}",
    "main@{99}",
    "@{-1}",
    "@{1}",
    "HEAD@{yesterday}",
    "main@{",
    "main..side",
    "main...side",
    ":/turn",
    "HEAD^{tree}",
    "HEAD^{}",
    "refs/heads/main",
    "heads/main",
    "tags/v1",
    "refs/tags/v1",
    "abcd",
    "0000",
    "0" * 64,
    "f" * 64,
    "g" * 64,
    "\x00",
    "main\x00",
    "\ud800",
    "main\ud800",
    "\x1b[31m",
    "ma in",
    "a" * 5000,
    "~" * 200,
    "^" * 200,
    "HEAD" + "~1" * 300,
]

TRICKY_NAMES = [
    "",
    "x",
    "main",
    "side",
    "v1",
    "HEAD",
    "@",
    "-x",
    "a..b",
    "a/",
    "/a",
    "a//b",
    "a.lock",
    "a.",
    ".a",
    "a@{b",
    "a b",
    "a\x7f",
    "a\x00",
    "a\ud800",
    "a:b",
    "a?b",
    "a*b",
    "a[b",
    "a\\b",
    "refs/heads/x",
    "refs/tags/y",
    "ä/ü",
    "x" * 2000,
    "feature/deep/name",
]

text = st.text(max_size=20)
surrogate_text = st.text(st.characters(codec=None, min_codepoint=0xD800, max_codepoint=0xDFFF))
revisions = st.one_of(st.sampled_from(TRICKY_REVISIONS), text, surrogate_text, WRONG_TYPES)
names = st.one_of(st.sampled_from(TRICKY_NAMES), text, WRONG_TYPES)
messages_text = st.one_of(
    text, surrogate_text, st.just("m" * 10_000), st.just("[/]\x1b]8;;x\a"), WRONG_TYPES
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**100]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=10),
    surrogate_text,
    st.binary(max_size=10),
)
json_like = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(
            st.one_of(st.text(max_size=5), st.integers(), st.none()), children, max_size=3
        ),
        st.tuples(children),
    ),
    max_leaves=8,
)


def _deep(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _deep_dict(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"k": value}
    return value


hostile_values = st.one_of(
    json_like,
    st.sampled_from(
        [_deep(63), _deep(65), _deep(5000), _deep_dict(70), {1, 2}, frozenset(), object()]
    ),
)
metadata = st.one_of(
    st.none(),
    st.dictionaries(st.text(max_size=5), hostile_values, max_size=3),
    st.dictionaries(st.one_of(st.integers(), st.none(), surrogate_text), json_like, max_size=2),
    WRONG_TYPES,
)
authors = st.one_of(st.none(), text, surrogate_text, st.just("a\nb <x>"), WRONG_TYPES)
timestamps = st.one_of(
    st.none(),
    st.datetimes(),
    st.datetimes(timezones=st.just(UTC)),
    st.sampled_from(
        [
            datetime.min,
            datetime.max,
            datetime(1, 1, 1, tzinfo=UTC),
            datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            datetime(1969, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14))),
            datetime(2500, 1, 1, tzinfo=timezone(timedelta(hours=14))),
        ]
    ),
    st.sampled_from([0, "2024-01-01", 1.5, -(10**20)]),
)
durations = st.one_of(
    st.sampled_from(
        [timedelta(0), "0", "2w", "3d12h", "1s", "bogus", "-1d", "", "9" * 40, timedelta(-1)]
    ),
    st.sampled_from([timedelta.max, timedelta.min]),
    text,
    WRONG_TYPES,
)
message_docs = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": json_like}),
    hostile_values,
)
states = st.one_of(
    st.dictionaries(
        st.one_of(st.text(max_size=6), surrogate_text, st.just("messages")),
        hostile_values,
        max_size=4,
    ),
    st.builds(
        lambda msgs, rest: {"messages": msgs, **rest},
        st.lists(message_docs, max_size=3),
        st.dictionaries(st.text(max_size=4), json_like, max_size=2),
    ),
    st.dictionaries(st.integers(), json_like, min_size=1, max_size=1),
)


def _objects_to_commit(draw: Callable[..., Any]) -> Any:
    choice = draw(st.integers(0, 4))
    if choice == 0:
        # Built without pydantic's validation, so hostile values reach the repository.
        messages = draw(st.lists(message_docs, max_size=3))
        state = draw(st.dictionaries(st.text(max_size=4), hostile_values, max_size=3))
        extras = draw(st.dictionaries(st.text(max_size=4), hostile_values, max_size=2))
        return Snapshot.model_construct(
            kind="snapshot", messages=messages, state=state, extras=extras
        )
    if choice == 1:
        return draw(WRONG_TYPES)
    return draw(states)


class Sandbox:
    """One example's repository and the folder export/import targets live in."""

    def __init__(self, kind: str) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="statevcs-fuzz-"))
        self.kind = kind
        self.folder = self.root / "repo"
        self.repo = Repo.init("memory://" if kind == "memory" else self.folder)
        state: dict[str, Any] = {"messages": []}
        for i in range(4):
            state["messages"].append({"role": "user", "content": f"turn {i}"})
            state["counter"] = i
            self.repo.commit(state, message=f"turn {i}", metadata={"i": i})
        self.repo.branch("side", "main~2")
        side: dict[str, Any] = {}
        self.repo.checkout(side, "side")
        side["side"] = True
        self.repo.commit(side, message="on side")
        self.repo.tag("v1", "main~1")
        self.commit_ids = [c.id for c in self.repo.log_all()]
        self.snapshot_ids = [self.repo.get_commit(c).snapshot_id for c in self.commit_ids]
        export_git(self.repo, self.root / "mirror")

    def dump(self) -> Any:
        store = self.repo.store
        if isinstance(store, SQLiteStore):
            return dump_tables(store.path)
        assert isinstance(store, MemoryStore)
        return (
            {k: v[0] for k, v in store._objects.items()},
            dict(store._refs),
            dict(store._symbolic),
            {k: list(v) for k, v in store._reflogs.items()},
            dict(store._config),
            store._generation,
        )

    def cold(self) -> Repo:
        if self.kind == "memory":
            return Repo(self.repo.store)
        return Repo.open(self.folder)

    def close(self) -> None:
        self.repo.close()
        shutil.rmtree(self.root, ignore_errors=True)


def _ops(
    box: Sandbox, draw: Callable[..., Any]
) -> Iterator[tuple[str, tuple[str, ...], Callable[[], Any]]]:
    """Yield (name, argument names, call) for random calls on ``box.repo``."""
    repo = box.repo
    ids = st.one_of(
        st.sampled_from(box.commit_ids + box.snapshot_ids),
        st.sampled_from(["xyz", "0" * 64, "G" * 64, "a" * 63, "a" * 65, box.commit_ids[0].upper()]),
        text,
        WRONG_TYPES,
    )
    # The plumbing containers take binary ids: real ones, wrong lengths, zeros, hex text.
    raw_ids = st.one_of(
        st.sampled_from([bytes.fromhex(i) for i in box.commit_ids + box.snapshot_ids]),
        st.sampled_from([b"", b"\x00" * 32, b"\xff" * 31, b"\x01" * 33]),
        ids,
    )
    paths = st.sampled_from(
        [
            box.root / "mirror",
            box.root / "new-mirror",
            box.root / "repo",
            box.root / "repo" / "statevcs.sqlite3",
            box.root / "nested" / "deeper" / "mirror",
            box.root / "a\nb",
            str(box.root / "x") + "\x00",
            box.root / "missing",
            str(box.root / "mirror"),
            5,
            None,
        ]
    )
    table: dict[str, Callable[[], tuple[tuple[str, ...], Callable[[], Any]]]] = {}

    def op(name: str) -> Callable[[Callable[[], tuple[tuple[str, ...], Callable[[], Any]]]], None]:
        def register(build: Callable[[], tuple[tuple[str, ...], Callable[[], Any]]]) -> None:
            table[name] = build

        return register

    @op("commit")
    def _commit() -> Any:
        obj = _objects_to_commit(draw)
        kwargs = {
            "message": draw(messages_text),
            "metadata": draw(metadata),
            "author": draw(authors),
            "branch": draw(st.one_of(st.none(), names)),
            "timestamp": draw(timestamps),
            "on_conflict": draw(st.sampled_from(["raise", "merge", "bogus", None])),
        }
        return ("obj", *kwargs), lambda: repo.commit(obj, **kwargs)

    @op("checkout")
    def _checkout() -> Any:
        obj = draw(st.sampled_from([{}, {"messages": [1]}, Snapshot(), 5, None, "x", []]))
        rev = draw(revisions)
        return ("obj", "rev"), lambda: repo.checkout(obj, rev)

    for reader in ("show", "get_commit", "resolve"):

        def _read(reader: str = reader) -> Any:
            rev = draw(revisions)
            return ("rev",), lambda: getattr(repo, reader)(rev)

        table[reader] = _read

    @op("log")
    def _log() -> Any:
        rev = draw(revisions)
        limit = draw(st.one_of(st.none(), st.integers(-5, 5), st.just(10**30), WRONG_TYPES))
        everything = draw(st.one_of(st.booleans(), WRONG_TYPES))
        return ("rev", "limit", "all_parents"), lambda: list(
            repo.log(rev, limit=limit, all_parents=everything)
        )

    @op("diff")
    def _diff() -> Any:
        a, b = draw(revisions), draw(revisions)
        return ("a", "b"), lambda: repo.diff(a, b)

    @op("merge_base")
    def _merge_base() -> Any:
        a, b = draw(revisions), draw(revisions)
        return ("a", "b"), lambda: repo.merge_base(a, b)

    @op("merge_bases")
    def _merge_bases() -> Any:
        a, b = draw(revisions), draw(revisions)
        return ("a", "b"), lambda: repo.merge_bases(a, b)

    @op("is_ancestor")
    def _is_ancestor() -> Any:
        a, b = draw(revisions), draw(revisions)
        return ("ancestor", "descendant"), lambda: repo.is_ancestor(a, b)

    @op("branch")
    def _branch() -> Any:
        name, start, force = draw(names), draw(revisions), draw(st.booleans())
        return ("name", "rev"), lambda: repo.branch(name, start, force=force)

    @op("tag")
    def _tag() -> Any:
        name, rev, force = draw(names), draw(revisions), draw(st.booleans())
        return ("name", "rev"), lambda: repo.tag(name, rev, force=force)

    @op("reset")
    def _reset() -> Any:
        name, rev = draw(names), draw(revisions)
        return ("branch", "rev"), lambda: repo.reset(name, rev)

    @op("delete_branch")
    def _delete_branch() -> Any:
        name = draw(names)
        return ("name",), lambda: repo.delete_branch(name)

    @op("delete_tag")
    def _delete_tag() -> Any:
        name = draw(names)
        return ("name",), lambda: repo.delete_tag(name)

    @op("reflog")
    def _reflog() -> Any:
        ref = draw(st.one_of(names, revisions))
        return ("ref",), lambda: repo.reflog(ref)

    @op("merge")
    def _merge() -> Any:
        kwargs = {
            "strategy": draw(st.sampled_from(["ours", "theirs", None, "bogus", 5])),
            "message": draw(st.one_of(st.none(), messages_text)),
            "author": draw(authors),
            "fallback": draw(st.sampled_from(["ours", "theirs", None, "x"])),
            "fast_forward": draw(st.booleans()),
            "timestamp": draw(timestamps),
        }
        target, source = draw(names), draw(revisions)
        return ("branch", "rev", *kwargs), lambda: repo.merge(target, source, **kwargs)

    @op("switch")
    def _switch() -> Any:
        name, create = draw(names), draw(st.booleans())
        return ("name",), lambda: repo.switch(name, create=create)

    @op("gc")
    def _gc() -> Any:
        grace, expire = draw(durations), draw(st.one_of(st.none(), durations))
        dry = draw(st.booleans())
        return ("grace", "expire_reflog"), lambda: repo.gc(grace, dry_run=dry, expire_reflog=expire)

    @op("set_ref")
    def _set_ref() -> Any:
        name = draw(st.one_of(names, st.sampled_from(["refs/heads/x", "refs/tags/y", "refs/z"])))
        target = draw(st.one_of(raw_ids, st.none()))
        expected = draw(st.one_of(st.just(ANY), st.none(), raw_ids))
        message = draw(messages_text)
        return ("name", "commit_id", "expected", "message"), lambda: repo.refs.set(
            name, target, expected=expected, message=message
        )

    @op("write_commit")
    def _write_commit() -> Any:
        snapshot_id = draw(raw_ids)
        parents = draw(st.one_of(st.lists(raw_ids, max_size=2), WRONG_TYPES, text))
        kwargs = {
            "author": draw(authors),
            "timestamp": draw(timestamps),
            "metadata": draw(metadata),
        }
        message = draw(messages_text)
        return ("snapshot_id", "parents", "message", *kwargs), lambda: repo.objects.write_commit(
            snapshot_id, parents, message=message, **kwargs
        )

    @op("write_snapshot")
    def _write_snapshot() -> Any:
        snapshot = _objects_to_commit(draw)
        codec = draw(st.sampled_from([None, "json", "msgpack", "pickle", "nope", 5]))
        return ("snapshot", "state_codec"), lambda: repo.objects.write_snapshot(
            snapshot, state_codec=codec
        )

    for reader in ("read_snapshot", "load_snapshot"):

        def _snap(reader: str = reader) -> Any:
            snapshot_id = draw(raw_ids)
            return ("snapshot_id",), lambda: getattr(repo.objects, reader)(snapshot_id)

        table[reader] = _snap

    @op("config")
    def _config() -> Any:
        key = draw(
            st.one_of(
                st.sampled_from(["core.format", "user.name", "gc.generation"]),
                text,
                surrogate_text,
                WRONG_TYPES,
            )
        )
        value = draw(st.one_of(st.none(), text, surrogate_text, WRONG_TYPES))
        if draw(st.booleans()):
            return ("key",), lambda: repo.config.get(key)
        return ("key", "value"), lambda: repo.config.set(key, value)

    @op("export_git")
    def _export() -> Any:
        target = draw(paths)
        branch = draw(st.one_of(st.none(), names))
        force = draw(st.booleans())
        return ("target", "branch", "path"), lambda: export_git(
            repo, target, branch=branch, force=force
        )

    @op("import_git")
    def _import() -> Any:
        source = draw(paths)
        return ("source", "path"), lambda: import_git(repo, source)

    names_list = sorted(table)
    for _ in range(OPS_PER_EXAMPLE):
        name = draw(st.sampled_from(names_list))
        argnames, call = table[name]()
        yield name, argnames, call


def _read_all(repo: Repo) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for ref, commit_id in all_refs(repo).items():
        seen[ref] = commit_id
    for commit in repo.log_all():
        seen[commit.id] = (commit, snapshot_content(repo.show(commit.id)))
    seen["reflog"] = [repo.reflog(r) for r in all_refs(repo)]
    return seen


def _problem(text: str) -> None:
    """Fail, or in collect mode append ``text`` to the file named by the environment."""
    if not COLLECT:
        raise AssertionError(text)
    with open(COLLECT, "a", encoding="utf-8") as out:
        out.write(text.replace("\n", " ")[:400] + "\n")


def _exercise(kind: str, data: st.DataObject) -> None:
    box = Sandbox(kind)
    try:
        for name, argnames, call in _ops(box, data.draw):
            before = box.dump()
            try:
                call()
            except statevcs.StateVCSError:
                pass
            except TypeError as exc:
                if not any(arg in str(exc) for arg in argnames):
                    _problem(f"{kind} {name}: TypeError does not name its argument: {exc}")
            except Exception as exc:
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                _problem(
                    f"{kind} {name}: {type(exc).__name__}: {exc} "
                    f"(at {Path(frame.filename).name}:{frame.lineno})"
                )
            else:
                continue
            if box.dump() != before:
                _problem(f"{kind} {name} failed but changed the store")
        # A handle with cold caches (for SQLite a fresh connection) reads back the same.
        try:
            cold = box.cold()
        except statevcs.StateVCSError as exc:
            _problem(f"{kind}: the repository cannot be reopened: {exc}")
            return
        try:
            if _read_all(cold) != _read_all(box.repo):
                _problem(f"{kind}: a cold handle reads back something else")
            problems = cold.fsck().problems
            if problems:
                _problem(f"{kind}: fsck after fuzzing: {problems}")
        finally:
            if kind != "memory":
                cold.close()
        expected = {"repo", "mirror", "new-mirror", "nested", "a\nb", "missing"}
        leftovers = {p.name for p in box.root.iterdir()} - expected
        if leftovers:
            _problem(f"{kind}: something was written outside the targets: {leftovers}")
    finally:
        box.close()


SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(data=st.data())
def test_fuzz_memory_store(data: st.DataObject) -> None:
    _exercise("memory", data)


@SETTINGS
@given(data=st.data())
def test_fuzz_sqlite_store(data: st.DataObject) -> None:
    _exercise("sqlite", data)


def test_repository_reads_back_the_same_in_another_process(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    with Repo.init(folder) as repo:
        state: dict[str, Any] = {"messages": []}
        for i in range(6):
            state["messages"].append({"role": "user", "content": [{"text": f"é\u2028{i}\x1b"}]})
            state[f"k{i % 3}"] = {"nested": [i, 2**63, -(2**63), 1.5, None, "\U0001f600"]}
            repo.commit(
                state,
                message=f"turn {i}\n\nbody",
                metadata={"z": i, "a": {"b": [True, None]}},
                timestamp=datetime(2001 + i, 1, 1, tzinfo=timezone(timedelta(hours=i))),
            )
        repo.branch("side", "main~3")
        side: dict[str, Any] = {}
        repo.checkout(side, "side")
        side["side"] = "yes"
        repo.commit(side, message="side")
        repo.merge("main", "side")
        repo.tag("v1", "main~1")
        repo.switch("side")
        repo.gc("0")
        expected = repository_digest(repo)
    assert run_worker("repository-digest", folder).stdout.strip() == expected
