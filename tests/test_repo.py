"""Repository porcelain: commit, checkout, branches, log, refs, failure safety."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from support import message, object_count

import statevcs
from statevcs import Repo
from statevcs.objects import CommitObject, ListNode, SnapshotObject, decode
from statevcs.stores.base import RefUpdate
from statevcs.stores.sqlite import DB_FILENAME


def test_commit_log_checkout_branch_show(repo: Repo) -> None:
    state: dict[str, Any] = {"messages": [], "counter": 0}
    commits = []
    for i in range(6):
        state["messages"].append(message(i))
        state["counter"] = i
        commits.append(repo.commit(state, message=f"turn {i}", metadata={"user_id": "123"}))
    assert [c.message for c in repo.log("main")] == [f"turn {i}" for i in reversed(range(6))]
    assert commits[-1].parents == (commits[-2].id,)
    assert commits[0].parents == ()
    assert commits[-1].metadata == {"user_id": "123"}
    assert commits[-1].timestamp.tzinfo is not None

    restored = repo.checkout(state, "main~3")
    assert restored.id == commits[2].id
    assert state["counter"] == 2
    assert state["messages"] == [message(i) for i in range(3)]

    repo.branch("experiment", rev="main~2")
    snap = repo.show("experiment")
    assert isinstance(snap, statevcs.Snapshot)
    assert snap.state == {"counter": 3}
    assert len(snap.messages) == 4
    assert repo.branches() == {"experiment": commits[3].id, "main": commits[5].id}
    assert [c.id for c in repo.log("main", limit=2)] == [commits[5].id, commits[4].id]


def test_checkout_picks_a_branch_over_a_tag_and_a_commit_id_of_the_same_name(repo: Repo) -> None:
    """As ``git checkout name``: an existing branch wins over a tag and over a commit id, and
    the object stays attached to it; ``resolve`` (``git rev-parse``) still takes the id."""
    first: dict[str, Any] = {"messages": [message(0)], "n": 0}
    a = repo.commit(first, message="a")
    first["n"] = 1
    b = repo.commit(first, message="b")
    repo.tag("dup", rev=a.id)
    repo.branch("dup", rev=b.id)
    repo.branch(a.id, rev=b.id)  # a branch named like commit a's full id, at b
    for rev, branch in (("dup", "dup"), ("refs/heads/dup", "dup"), (a.id, a.id)):
        tip = repo.get_commit(f"refs/heads/{branch}")
        agent: dict[str, Any] = {}
        assert repo.checkout(agent, rev).id == tip.id
        assert agent["n"] >= 1 and repo.attached_branch(agent) == branch
        agent["n"] += 1
        assert repo.commit(agent, message=f"on {rev}").parents == (tip.id,)
        assert repo.get_commit(f"refs/heads/{branch}").message == f"on {rev}"
    with pytest.warns(statevcs.AmbiguousRefWarning):
        assert repo.resolve(a.id) == a.id
    detached: dict[str, Any] = {}
    assert repo.checkout(detached, "tags/dup").id == a.id
    assert repo.attached_branch(detached) is None


def test_dict_follows_head_and_detached_commit_needs_branch(repo: Repo) -> None:
    state: dict[str, Any] = {"messages": [message(0)], "n": 0}
    repo.commit(state, message="one")
    state["n"] = 1
    repo.commit(state, message="two")
    repo.checkout(state, "main~1")
    assert repo.head_branch is None
    state["n"] = 5
    with pytest.raises(statevcs.DetachedHead, match="branch="):
        repo.commit(state, message="lost?")
    assert repo.get_commit("main").message == "two"
    forked = repo.commit(state, message="fork", branch="what-if")
    assert repo.head_branch == "what-if"
    assert forked.parents == (repo.resolve("main~1"),)
    state["n"] = 6
    assert repo.commit(state, message="next").parents == (forked.id,)
    repo.checkout(state, "main")
    assert repo.head_branch == "main" and state["n"] == 1


def test_weakrefable_objects_remember_their_branch(repo: Repo) -> None:
    first = statevcs.Snapshot(messages=[message(0)], state={"who": "a"})
    repo.commit(first, message="root")
    repo.branch("b")
    second = statevcs.Snapshot()
    repo.checkout(second, "b")
    second.state["who"] = "b"
    first.state["who"] = "a2"
    on_b = repo.commit(second, message="on b")
    on_main = repo.commit(first, message="on main")
    assert repo.get_commit("b").id == on_b.id
    assert repo.get_commit("main").id == on_main.id
    assert repo.attached_branch(second) == "b"
    assert repo.show("b").state == {"who": "b"}


def _written_by_append(repo: Repo, state: dict[str, Any], start: int) -> int:
    before = object_count(repo)
    state["messages"].extend([message(start), message(start + 1)])
    repo.commit(state, message="append")
    return object_count(repo) - before


def _tree_height(repo: Repo) -> int:
    snapshot = repo.objects.load(bytes.fromhex(repo.get_commit("HEAD").snapshot_id))
    assert isinstance(snapshot, SnapshotObject)
    root = repo.objects.load(snapshot.messages)
    assert isinstance(root, ListNode)
    return root.level + 1


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (100, [4, 4, 6, 4, 4, 5, 4, 5, 6, 4]),
        (10_000, [4, 4, 4, 4, 4, 7, 4, 4, 4, 4]),
    ],
)
def test_objects_written_per_append_grow_like_log_n(n: int, expected: list[int]) -> None:
    """Appending 2 messages writes 2 messages + snapshot + commit, plus the tree path
    (one node per level) only when the append closes a leaf; a message that goes straight
    into the closed leaf is stored inside it, not as an object of its own (format 2)."""
    repo = Repo.init("memory://")
    state: dict[str, Any] = {"messages": [message(i) for i in range(n)]}
    repo.commit(state)
    written = [_written_by_append(repo, state, n + 2 * k) for k in range(10)]
    height = _tree_height(repo)
    assert height == (3 if n == 100 else 5)  # grows like log8(n)
    for count in written:
        assert count == 4 or 4 + 1 <= count <= 4 + height + 1
    assert written == expected


def test_a_fresh_checkout_by_commit_id_reads_a_level_of_objects_a_query(tmp_path: Path) -> None:
    """Resolving a full id and reading its snapshot: one query per level of what it names."""
    state: dict[str, Any] = {"messages": [], "notes": "n" * 300, "count": 0}
    with Repo.init(tmp_path / "r") as repo:
        for turn in range(40):
            state["messages"] += [message(2 * turn), message(2 * turn + 1)]
            state["count"] = turn
            commit = repo.commit(state, message=f"turn {turn}")
        height = _tree_height(repo)
        repo.commit({"messages": [], "later": True}, message="moves on")
    with Repo.open(tmp_path / "r") as fresh:
        statements: list[str] = []
        fresh.store._db.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        restored: dict[str, Any] = {}
        fresh.checkout(restored, commit.id)
    assert restored == state
    # Resolve: every ref the id could name, the branch first (one query), then the commit.
    # Read: the snapshot; what it names (tail, tree root, maps); the maps' values with the
    # root's children; then one query per tree level below those.
    assert height >= 3
    expected = 2 + 3 + (height - 2)
    assert len(statements) == expected, "\n".join(s[:100] for s in statements)


def test_serialization_error_writes_nothing(repo: Repo) -> None:
    state: dict[str, Any] = {"messages": [message(0)], "ok": 1}
    good = repo.commit(state)
    before = object_count(repo)
    state["when"] = dt.datetime(2026, 1, 1)
    state["messages"].append(message(1))
    with pytest.raises(statevcs.SerializationError, match="when"):
        repo.commit(state)
    assert object_count(repo) == before
    assert repo.resolve("main") == good.id
    state.pop("when")
    state["messages"].append({"role": "user", "content": object()})
    with pytest.raises(statevcs.SerializationError, match=r"messages\[2\]"):
        repo.commit(state)
    assert object_count(repo) == before


def test_corrupt_object_is_detected_on_read(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "repo")
    commit = repo.commit({"messages": [message(0)], "n": 1})
    repo.close()
    db = sqlite3.connect(tmp_path / "repo" / DB_FILENAME)
    snapshot_id = bytes.fromhex(commit.snapshot_id)
    data = db.execute("SELECT data FROM objects WHERE id = ?", (snapshot_id,)).fetchone()[0]
    db.execute("UPDATE objects SET data = ? WHERE id = ?", (data[:-1] + b"\x00", snapshot_id))
    db.commit()
    db.close()
    with pytest.raises(statevcs.CorruptObject, match=commit.snapshot_id):
        Repo.open(tmp_path / "repo").show("main")


def test_reflog_and_reset(repo: Repo) -> None:
    state: dict[str, Any] = {"n": 0}
    ids = []
    for i in range(3):
        state["n"] = i
        ids.append(repo.commit(state, message=f"c{i}").id)
    repo.reset("main", ids[0])
    log = repo.reflog("main")
    assert log[0].message.startswith("reset")
    assert [e.new for e in log] == [ids[0], ids[2], ids[1], ids[0]]
    assert repo.resolve("main@{1}") == ids[2]
    assert repo.resolve("HEAD@{1}") == ids[2]


def test_an_unlogged_ref_move_writes_no_reflog_entry(repo: Repo) -> None:
    """``RefUpdate(log=False)`` moves the ref (and HEAD's branch) without a reflog entry."""
    first = bytes.fromhex(repo.commit({"n": 1}, message="one").id)
    second = bytes.fromhex(repo.commit({"n": 2}, message="two").id)
    before_main, before_head = repo.reflog("main"), repo.reflog("HEAD")
    repo.refs.update([RefUpdate("refs/heads/main", first, second, "quiet", log=False)])
    repo.refs.update([RefUpdate("refs/heads/side", second, None, "quiet", log=False)])
    assert repo.resolve("main") == first.hex()
    assert repo.resolve("side") == second.hex()
    assert repo.reflog("main") == before_main
    assert repo.reflog("HEAD") == before_head
    assert repo.reflog("side") == []
    repo.refs.update([RefUpdate("refs/heads/main", second, first, "loud")])
    assert repo.reflog("main")[0].message == "loud"
    assert repo.reflog("HEAD")[0].message == "loud"


def test_tags_and_errors(repo: Repo) -> None:
    repo.commit({"n": 1}, message="one")
    repo.tag("v1")
    assert repo.tags() == {"v1": repo.resolve("main")}
    with pytest.raises(statevcs.RefExists):
        repo.tag("v1")
    with pytest.raises(statevcs.InvalidRefName):
        repo.branch("bad..name")
    with pytest.raises(statevcs.UnknownRevision):
        repo.show("nope")
    with pytest.raises(statevcs.RefNotFound):
        repo.delete_branch("nope")
    with pytest.raises(statevcs.RepositoryError, match="default branch"):
        repo.delete_branch("main")
    repo.commit({"n": 2}, message="two")
    repo.branch("v1")
    with pytest.warns(statevcs.AmbiguousRefWarning, match="refs/heads/v1"):
        assert repo.resolve("v1") == repo.resolve("refs/tags/v1")  # git takes the tag
    assert repo.resolve("refs/tags/v1") == repo.resolve("main~1")


def test_every_error_is_a_statevcs_error() -> None:
    for name in statevcs.__all__:
        value = getattr(statevcs, name)
        if (
            isinstance(value, type)
            and issubclass(value, Exception)
            and not issubclass(value, Warning)
        ):
            assert issubclass(value, statevcs.StateVCSError), name


def test_init_and_open_errors(tmp_path: Path) -> None:
    with pytest.raises(statevcs.RepositoryNotFound, match=r"Repo\.init"):
        Repo.open(tmp_path / "missing")
    Repo.init(tmp_path / "r").close()
    with pytest.raises(statevcs.RepositoryExists):
        Repo.init(tmp_path / "r")
    with Repo.open(tmp_path / "r") as reopened:
        assert reopened.head_branch == "main"
        assert list(reopened.log()) == []


def test_rich_state_with_msgpack_serializer(tmp_path: Path) -> None:
    import uuid
    from decimal import Decimal

    serializer = statevcs.MsgpackSerializer()
    with Repo.init(tmp_path / "r", serializer=serializer) as repo:
        value = {
            "when": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
            "id": uuid.UUID(int=7),
            "price": Decimal("1.10"),
        }
        state: dict[str, Any] = {"messages": [], **value}
        repo.commit(state)
        assert repo.show("main").state == value
    with Repo.open(tmp_path / "r") as plain, pytest.raises(statevcs.SerializationError):
        plain.show("main")


def test_large_values_are_chunked_and_deduplicated(repo: Repo) -> None:
    rng = random.Random(1)
    document = rng.randbytes(1_000_000)
    state: dict[str, Any] = {"messages": [{"role": "user", "content": [{"bytes": document}]}]}
    repo.commit(state)
    before = repo.stats().bytes_stored
    edited = document[:500_000] + b"edit" + document[500_000:]
    state["messages"][0] = {"role": "user", "content": [{"bytes": edited}]}
    repo.commit(state)
    added = repo.stats().bytes_stored - before
    assert added < 100_000  # a few chunks, not another megabyte
    assert repo.show("main").messages[0]["content"][0]["bytes"] == edited
    assert repo.show("main~1").messages[0]["content"][0]["bytes"] == document


def test_plumbing_containers_write_commits_and_move_refs(repo: Repo) -> None:
    a = repo.commit({"k": 1})
    a_id = bytes.fromhex(a.id)
    snapshot_id = repo.objects.write_snapshot(statevcs.Snapshot(state={"k": 2}))
    assert repo.objects.read_snapshot(snapshot_id).snapshot.state == {"k": 2}
    assert repo.objects.load_snapshot(snapshot_id).state_codec == "json"
    merge_id = repo.objects.write_commit(
        snapshot_id,
        [a_id, a_id],
        message="two parents",
        author="me <me@example.com>",
        timestamp=datetime.now(dt.UTC),
    )
    repo.refs.set("refs/heads/main", merge_id, expected=a_id)
    with pytest.raises(statevcs.RefConflict):
        repo.refs.set("refs/heads/main", a_id, expected=a_id)
    assert repo.resolve("main^2") == a.id
    with pytest.raises(statevcs.InvalidRefName):
        repo.refs.set("main", a_id)  # a full name is required
    with pytest.raises(TypeError, match="commit_id"):
        repo.refs.set("refs/heads/x", a.id)  # type: ignore[arg-type]
    obj = decode(merge_id, repo.store.get_many([merge_id])[merge_id])
    assert isinstance(obj, CommitObject) and len(obj.parents) == 2


def test_same_message_twice_is_not_shared_after_restore(repo: Repo) -> None:
    state: dict[str, Any] = {"messages": [message(0), message(0)]}
    repo.commit(state)
    fresh: dict[str, Any] = {}
    repo.checkout(fresh, "main")
    fresh["messages"][0]["role"] = "changed"
    assert fresh["messages"][1]["role"] == "user"


def test_stale_writer_raises_instead_of_reverting_another_writers_work(tmp_path: Path) -> None:
    first = Repo.init(tmp_path / "repo")
    first.commit({"x": 1}, message="c0")
    second = Repo.open(tmp_path / "repo")
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    c0 = first.checkout(a, "main")
    second.checkout(b, "main")
    b["x"] = 2
    c1 = second.commit(b, message="c1")
    a["y"] = 1
    before = object_count(first)
    with pytest.raises(statevcs.RefConflict) as caught:
        first.commit(a, message="stale")
    assert c1.short_id in str(caught.value) and c0.short_id in str(caught.value)
    assert "on_conflict='merge'" in str(caught.value)
    assert object_count(first) == before  # nothing written
    assert first.resolve("main") == c1.id
    assert first.show("main").state == {"x": 2}
    # The documented retry: check out the branch again and redo the change.
    first.checkout(a, "main")
    a["y"] = 1
    done = first.commit(a, message="redone")
    assert done.parents == (c1.id,)
    assert first.show("main").state == {"x": 2, "y": 1}
    first.close()
    second.close()


def test_stale_writer_can_merge_three_way(tmp_path: Path) -> None:
    first = Repo.init(tmp_path / "repo")
    first.commit({"x": 1, "messages": [message(0)]}, message="c0")
    second = Repo.open(tmp_path / "repo")
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    first.checkout(a, "main")
    second.checkout(b, "main")
    b["x"] = 2
    c1 = second.commit(b, message="c1")
    a["y"] = 1
    a["messages"].append(message(1))
    merged = first.commit(a, message="mine", on_conflict="merge")
    assert merged.parents[0] == c1.id and len(merged.parents) == 2
    mine = first.get_commit(merged.parents[1])
    assert mine.message == "mine" and mine.parents == (first.resolve("main~2"),)
    assert first.show("main").state == {"x": 2, "y": 1}
    assert len(first.show("main").messages) == 2
    assert a["x"] == 2 and a["y"] == 1  # the live object holds the merged state
    a["z"] = 3
    assert first.commit(a, message="next").parents == (merged.id,)
    # Both sides changing one key is a MergeConflict that writes nothing.
    b2: dict[str, Any] = {}
    second.checkout(b2, "main")
    a["z"] = 4
    first.commit(a, message="z4")
    b2["z"] = 5
    tip = second.resolve("main")
    with pytest.raises(statevcs.MergeConflict):
        second.commit(b2, message="z5", on_conflict="merge")
    assert second.resolve("main") == tip
    first.close()
    second.close()


def test_a_fresh_object_commits_on_the_tip(tmp_path: Path) -> None:
    first = Repo.init(tmp_path / "repo")
    second = Repo.open(tmp_path / "repo")
    a = first.commit(statevcs.Snapshot(state={"who": "first"}), message="a")
    b = second.commit(statevcs.Snapshot(state={"who": "second"}), message="b")
    assert b.parents == (a.id,)
    first.close()
    second.close()


def test_open_refuses_an_unknown_repository_format(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "r")
    repo.store.config_set("core.format", "99")  # by hand: repo.config refuses its own keys
    repo.close()
    with pytest.raises(statevcs.RepositoryError, match="format '99'"):
        Repo.open(tmp_path / "r")


class _NamedSerializer(statevcs.JSONSerializer):
    def __init__(self, name: Any) -> None:
        self.name = name


@pytest.mark.parametrize(
    ("serializer", "error", "fragment"),
    [
        (_NamedSerializer(5), TypeError, "serializer.name must be a non-empty str"),
        (_NamedSerializer(None), TypeError, "serializer.name must be a non-empty str"),
        (_NamedSerializer(""), TypeError, "serializer.name must be a non-empty str"),
        (_NamedSerializer("j\ud800"), statevcs.SerializationError, "lone surrogate"),
        ("json", TypeError, "serializer must be a StateSerializer"),
    ],
)
def test_a_serializer_a_snapshot_could_not_name_is_refused_before_anything_is_created(
    tmp_path: Path, serializer: Any, error: type[Exception], fragment: str
) -> None:
    # A name that is not text was recorded in each snapshot, which then never read back; a
    # wrong serializer left a half-made repository folder behind.
    with pytest.raises(error, match=fragment):
        Repo.init(tmp_path / "repo", serializer=serializer)
    assert not (tmp_path / "repo").exists()
    repo = Repo.init("memory://")
    with pytest.raises(error, match=fragment):
        Repo(repo.store, serializer=serializer)
