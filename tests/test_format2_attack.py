"""Storage format 2 attacked: whatever is committed reads back exactly, however it was built.

Random edit sequences on a conversation (appends, edits in the middle, truncation, reordering,
duplicates, messages above the 64 KiB chunking threshold, empty conversations, forks from old
commits, resets) are committed through plain lists (full re-encode, spliced onto the last
tree) and through tracked lists (incremental appends); after every commit the new commit and
every earlier one read back exactly, in this handle and in a fresh one, and the snapshot id is
the one a fresh repository gives the same list (history independence). Both storage formats,
and format 1 upgraded to format 2, are checked; the caches are squeezed small so that eviction
happens on every commit.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import interrupted_upgrade

import statevcs.objectdb as objectdb
from statevcs import Repo, tracked_messages
from statevcs.hashing import hash_bytes
from statevcs.objects import encode_doc
from statevcs.structures import chunking, prolly
from statevcs.upgrade import read_upgrade_map

HUGE = chunking.CHUNK_THRESHOLD + 1000


def _message(kind: int, text: str) -> Any:
    """A message of one of several shapes (dicts, other documents, one above 64 KiB)."""
    if kind == 0:
        return {"role": "user", "content": [{"text": text}]}
    if kind == 1:
        return {"role": "assistant", "content": [{"text": text * 40, "n": len(text)}]}
    if kind == 2:
        return {"role": "tool", "content": text + "x" * HUGE}  # chunked, stays out of line
    if kind == 3:
        return text  # a message that is not a dict
    if kind == 4:
        return None
    return [text, b"\x28\xb5\x2f\xfd" + text.encode()]  # bytes that look like a zstd frame


_messages = st.builds(
    _message,
    st.sampled_from([0, 0, 0, 1, 1, 2, 3, 4, 5]),
    st.text(alphabet="abcdé", max_size=8),
)

_op = st.one_of(
    st.tuples(st.just("append"), st.lists(_messages, min_size=1, max_size=40)),
    st.tuples(st.just("edit"), st.integers(0, 500), _messages),
    st.tuples(st.just("truncate"), st.integers(0, 500)),
    st.tuples(st.just("reverse"), st.integers(0, 500), st.integers(0, 500)),
    st.tuples(st.just("duplicate"), st.integers(0, 500), st.integers(1, 30)),
    st.tuples(st.just("insert"), st.integers(0, 500), st.lists(_messages, max_size=10)),
    st.tuples(st.just("clear"), st.none()),
    st.tuples(st.just("fork"), st.integers(0, 50)),
    st.tuples(st.just("reset"), st.integers(0, 50)),
    st.tuples(st.just("fresh"), st.none()),
    st.tuples(st.just("merge"), st.integers(0, 500), st.lists(_messages, max_size=12)),
)


def _edit(messages: list[Any], op: tuple[Any, ...]) -> None:
    """Apply one list edit in place (through the list, as tracked lists require)."""
    name = op[0]
    n = len(messages)
    if name == "append":
        messages.extend(op[1])
    elif name == "edit" and n:
        messages[op[1] % n] = op[2]
    elif name == "truncate":
        del messages[op[1] % (n + 1) :]
    elif name == "reverse" and n:
        i, j = sorted((op[1] % n, op[2] % n))
        messages[i : j + 1] = messages[i : j + 1][::-1]
    elif name == "duplicate" and n:
        i = op[1] % n
        messages[i:i] = [messages[i]] * op[2]
    elif name == "insert":
        i = op[1] % (n + 1)
        messages[i:i] = op[2]
    elif name == "clear":
        del messages[:]


def _fresh_snapshot_id(messages: list[Any], storage_format: int, k: int = 1) -> str:
    """The snapshot id a new repository gives ``messages`` committed in one go."""
    with Repo.init("memory://", storage_format=storage_format) as other:
        return other.commit({"messages": list(messages), "k": k}, message="m").snapshot_id


def _reopen(repo: Repo, folder: Path | str | None) -> Repo:
    return Repo.open(folder) if folder is not None else Repo(repo.store)


@pytest.fixture
def small_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches so small that every commit evicts: reads must never depend on them."""
    monkeypatch.setattr(objectdb, "_BYTES_CACHE", 3000)
    monkeypatch.setattr(objectdb, "_NODE_CACHE", 5)
    monkeypatch.setattr(objectdb, "_KNOWN_LIMIT", 20)
    monkeypatch.setattr(objectdb, "TRAIN_AFTER", 4000)


def _blank(tracked: bool) -> dict[str, Any]:
    """A conversation object (its list tracked or plain; a checkout keeps the kind)."""
    return {"messages": tracked_messages() if tracked else [], "k": 1}


def run_sequence(
    repo: Repo, folder: Path | str | None, ops: list[tuple[Any, ...]], tracked: bool
) -> list[tuple[str, list[Any]]]:
    """Apply ``ops``, committing after each; check every commit; return (commit id, messages)."""
    storage_format = repo.storage_format
    obj = _blank(tracked)
    committed: list[tuple[str, list[Any]]] = []
    branch = "main"
    for step, op in enumerate(ops):
        if op[0] == "fork" and committed:
            commit_id, _ = committed[op[1] % len(committed)]
            branch = f"fork{step}"
            repo.branch(branch, commit_id)
            obj = _blank(tracked)
            repo.checkout(obj, branch)
        elif op[0] == "reset" and committed:
            commit_id, _ = committed[op[1] % len(committed)]
            repo.reset(branch, commit_id)
            obj = _blank(tracked)
            repo.checkout(obj, branch)
        elif op[0] == "merge" and committed:
            # A side branch edits the conversation (cut at a point, new messages); this side
            # changes only state; the merge commit takes the side's messages.
            side_name = f"side{step}"
            repo.branch(side_name, committed[-1][0])
            side = _blank(tracked)
            repo.checkout(side, side_name)
            cut = op[1] % (len(side["messages"]) + 1)
            del side["messages"][cut:]
            side["messages"].extend(op[2])
            repo.commit(side, message="side", branch=side_name)
            obj["k"] = obj["k"] + 1
            repo.commit(obj, message="ours", branch=branch)
            merged = repo.merge(branch, side_name, fast_forward=False)
            assert repo.show(merged.id).messages == list(side["messages"])
            assert merged.snapshot_id == _fresh_snapshot_id(
                list(side["messages"]), storage_format, obj["k"]
            )
            obj = _blank(tracked)
            repo.checkout(obj, branch)
        elif op[0] == "fresh":
            repo = _reopen(repo, folder)
            obj = _blank(tracked)
            if committed:
                repo.checkout(obj, branch)
        else:
            _edit(obj["messages"], op)
        commit = repo.commit(obj, message=f"step {step}", branch=branch)
        expected = list(obj["messages"])
        committed.append((commit.id, expected))
        assert repo.show(commit.id).messages == expected
        assert commit.snapshot_id == _fresh_snapshot_id(expected, storage_format, obj["k"])
    # Each commit in a handle of its own, newest first: no cache from reading another commit
    # (a packed leaf read earlier) may hide a message the store does not hold.
    for commit_id, expected in reversed(committed):
        with _reopen(repo, folder) as fresh:
            assert fresh.show(commit_id).messages == expected
    report = repo.fsck()
    assert report.ok, report
    return committed


_SETTINGS = settings(
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("storage_format", [2, 1])
@pytest.mark.parametrize("tracked", [False, True], ids=["plain", "tracked"])
@given(ops=st.lists(_op, min_size=1, max_size=20))
@_SETTINGS
def test_memory_commits_read_back_exactly(
    storage_format: int, tracked: bool, ops: list[tuple[Any, ...]], small_caches: None
) -> None:
    with Repo.init("memory://", storage_format=storage_format) as repo:
        run_sequence(repo, None, ops, tracked)


@given(ops=st.lists(_op, min_size=1, max_size=10))
@settings(
    max_examples=20,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_sqlite_commits_read_back_exactly(
    ops: list[tuple[Any, ...]], small_caches: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("repo")
    with Repo.init(folder) as repo:
        run_sequence(repo, folder, ops, tracked=True)


@given(ops=st.lists(_op, min_size=1, max_size=10))
@settings(
    max_examples=20,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_upgrade_keeps_every_commit(
    ops: list[tuple[Any, ...]], small_caches: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("repo")
    with Repo.init(folder, storage_format=1) as repo:
        committed = run_sequence(repo, folder, ops, tracked=False)
    with Repo.open(folder) as repo:
        repo.upgrade()
        assert repo.storage_format == 2
        mapped = read_upgrade_map(repo.objects)
        for commit_id, expected in committed:
            # Commits only reflogs reach are not rewritten: they keep their format-1 ids.
            new = mapped.get(bytes.fromhex(commit_id))
            new_id = new.hex() if new is not None else commit_id
            shown = repo.show(new_id)
            assert shown.messages == expected
            if new is not None:
                fresh_id = _fresh_snapshot_id(expected, 2, shown.state["k"])
                assert repo.get_commit(new_id).snapshot_id == fresh_id
        # Commits on top of an upgraded branch read back too, and stay history independent.
        for branch in repo.branches():
            obj: dict[str, Any] = {}
            repo.checkout(obj, branch)
            obj["messages"].append({"role": "user", "content": "after"})
            commit = repo.commit(obj, message="after upgrade")
            assert repo.show(commit.id).messages == obj["messages"]
            assert commit.snapshot_id == _fresh_snapshot_id(obj["messages"], 2, obj["k"])
        assert repo.fsck().ok
    with Repo.open(folder) as fresh:
        for commit_id, expected in committed:
            assert fresh.show(commit_id).messages == expected


# --- the bugs this file found, as plain regression tests ----------------------------------


def _say(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


@pytest.mark.parametrize("tracked", [False, True], ids=["plain", "tracked"])
def test_a_message_cut_back_into_the_tail_is_an_object_again(tracked: bool) -> None:
    """Two messages closing a leaf, then the last one removed: the first is in the open tail,
    which names it by id, so it must be stored as a ``doc`` object (it was only in the leaf)."""
    with Repo.init("memory://") as repo:
        messages = tracked_messages() if tracked else []
        obj: dict[str, Any] = {"messages": messages}
        messages.extend([_say(""), _say("a")])  # the second id closes the first leaf
        first = repo.commit(obj, message="two")
        del messages[1:]
        second = repo.commit(obj, message="one")
        assert repo.fsck().ok
        for commit in (second, first):  # newest first: no leaf read before to fall back on
            with Repo(repo.store) as fresh:
                count = 2 if commit is first else 1
                assert fresh.show(commit.id).messages == [_say(""), _say("a")][:count]


def test_an_edit_before_evicted_packed_messages(small_caches: None) -> None:
    """Messages known only through a packed leaf whose bytes the cache let go are repacked
    (this raised KeyError in ``doc_values``)."""
    with Repo.init("memory://") as repo:
        messages = tracked_messages()
        obj: dict[str, Any] = {"messages": messages}
        messages.extend([_say(""), _say(""), _message(2, "")])  # big: its chunks evict all
        repo.show(repo.commit(obj, message="three").id)  # learns each leaf's messages
        messages[1] = _message(1, "baé")
        repo.show(repo.commit(obj, message="edit").id)
        messages[0] = _say("")  # the same message again: a splice at 0 repacks the rest
        commit = repo.commit(obj, message="edit")
        with Repo(repo.store) as fresh:
            assert fresh.show(commit.id).messages == list(messages)


def test_a_leaf_collected_by_another_handle_does_not_break_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A handle knows a message from a packed leaf that another handle's gc deleted; the
    message is still an object of its own (in another branch's tail) and must read."""
    monkeypatch.setattr(objectdb, "_NODE_CACHE", 3)
    messages = [_say(f"m{i}") for i in range(200)]
    with Repo.init("memory://") as reader:
        empty = reader.commit({"messages": []}, message="empty")
        reader.branch("other", empty.id)
        full = reader.commit({"messages": messages}, message="full")
        reader.show(full.id)  # learns where each message lives
        lone = next(m for m in messages[:100] if _leaf_member(reader, full.id, m))
        collector = Repo(reader.store)
        side: dict[str, Any] = {}
        collector.checkout(side, "other")
        side["messages"] = [lone]
        tip = collector.commit(side, message="lone")
        collector.reset("main", empty.id)
        time.sleep(1.1)
        assert collector.gc(grace="0", expire_reflog="1s").deleted
        for i in range(5):  # push the leaf out of the reader's node cache
            reader.objects.remember(bytes([i]) * 32, reader.objects.load(bytes.fromhex(tip.id)))
        assert reader.show(tip.id).messages == [lone]


def _leaf_member(repo: Repo, commit_id: str, message: Any) -> bool:
    """Whether ``message`` sits in a closed leaf of the commit and would sit in a tail alone."""
    object_id = hash_bytes(encode_doc(message))
    return bool(object_id[-1] & prolly._MASK) and object_id in repo.objects._homes


def test_message_ids_read_after_the_homes_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The LangGraph store's path (``prolly.items`` then ``iter_docs``) once the handle's map
    of packed messages overflowed and was cleared while its leaves stayed cached."""
    monkeypatch.setattr(objectdb, "_KNOWN_LIMIT", 250)
    messages = [_say(f"m{i}") for i in range(100)]
    with Repo.init("memory://") as repo:
        commit = repo.commit({"messages": messages}, message="all")
        for other in range(3):  # more packed messages than the limit; the leaves stay cached
            repo.commit({"messages": [_say(f"{other}-{i}") for i in range(100)]}, message="o")
        snapshot = repo.objects.load_snapshot(bytes.fromhex(commit.snapshot_id))
        for _ in range(2):
            ids = [*prolly.items(repo.objects, snapshot.messages), *snapshot.tail]
            assert list(repo.objects.iter_docs(ids)) == messages
            assert repo.objects.load_docs(ids[:5]) == messages[:5]


@pytest.mark.parametrize("tracked", [False, True], ids=["plain", "tracked"])
def test_a_handle_opened_before_the_upgrade_keeps_writing_readable_commits(
    tmp_path: Path, tracked: bool
) -> None:
    """A handle that still writes format 1 splices onto trees another process upgraded and
    grew in format 2 (messages that only packed leaves hold): nothing it writes may name a
    message that is not stored."""
    folder = tmp_path / "repo"
    first = [_say(f"m{i}") for i in range(100)]
    with Repo.init(folder, storage_format=1) as repo:
        repo.commit({"messages": first}, message="format 1")
    stale = Repo.open(folder)
    assert stale.storage_format == 1
    with Repo.open(folder) as upgrader:
        upgrader.upgrade()
    grown = [*first, *(_say(f"n{i}") for i in range(100))]
    with Repo.open(folder) as writer:
        writer.commit({"messages": grown}, message="format 2")
    with stale:
        obj: dict[str, Any] = {"messages": tracked_messages() if tracked else []}
        stale.checkout(obj, "main")
        del obj["messages"][150:]
        obj["messages"].append(_say("new"))
        commit = stale.commit(obj, message="from the stale handle")
        assert stale.fsck().ok
    with Repo.open(folder) as fresh:
        assert fresh.show(commit.id).messages == [*grown[:150], _say("new")]
        assert fresh.fsck().ok


def test_an_upgrade_killed_before_it_set_the_format_leaves_writers_safe(tmp_path: Path) -> None:
    """Refs moved to packed trees, ``core.format`` still 1 (killed between steps 3 and 4):
    a fresh handle reads format 1 from the config, and must not write format 1 onto them."""
    folder = tmp_path / "repo"
    grown, _tip = interrupted_upgrade(folder, _say)
    with Repo.open(folder) as writer:
        assert writer.storage_format == 1
        obj: dict[str, Any] = {"messages": tracked_messages()}
        writer.checkout(obj, "main")
        del obj["messages"][150:]
        obj["messages"].append(_say("new"))
        commit = writer.commit(obj, message="after the interrupted upgrade")
    with Repo.open(folder) as fresh:
        assert fresh.show(commit.id).messages == [*grown[:150], _say("new")]
        assert fresh.fsck().ok


@given(ops=st.lists(_op, min_size=1, max_size=8))
@settings(
    max_examples=3,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_s3_commits_read_back_exactly(ops: list[tuple[Any, ...]], seaweedfs: Any) -> None:
    """The same sequences on S3 (SeaweedFS): every commit, in a fresh handle each."""
    url = seaweedfs.url(f"t/{uuid.uuid4().hex}")
    with Repo.init(url) as repo:
        run_sequence(repo, url, ops, tracked=True)
