"""Reproducers of issue 8, sections 1, 2, 3 and 6: each failed before its fix."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import statevcs
from statevcs import Repo, Snapshot
from statevcs.stores.sqlite import DB_FILENAME

SMALL = {"role": "user", "content": [{"text": "y" * 10}]}


def _dump(path: Path) -> list[Any]:
    with sqlite3.connect(path / DB_FILENAME) as db:
        return [
            sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in ("objects", "refs", "reflog", "config")
        ]


# --- 1.1 gc in another handle against a long-lived writer -----------------------------


def test_gc_by_another_handle_cannot_make_a_writer_reference_deleted_objects(
    tmp_path: Path,
) -> None:
    writer = Repo.init(tmp_path / "r")
    writer.commit({"base": 0}, message="root")
    draft = Snapshot(messages=[{"role": "user", "content": "draft text " * 20}])
    writer.commit(draft, message="draft", branch="draft")
    collector = Repo.open(tmp_path / "r")
    collector.delete_branch("draft")
    collector.gc(dt.timedelta(0), expire_reflog="0")
    assert collector.gc(dt.timedelta(0)).deleted == 0  # the draft objects are gone already
    again = Snapshot(messages=[{"role": "user", "content": "draft text " * 20}])
    commit = writer.commit(again, message="same content on main", branch="main")
    report = writer.fsck()
    assert report.ok, report.problems
    fresh = Repo.open(tmp_path / "r")
    assert fresh.show(commit.id).messages == again.messages
    for handle in (writer, collector, fresh):
        handle.close()


def test_gc_generation_is_bumped_by_every_sweep(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "r")
    repo.commit(Snapshot(state={"x": 1}), message="a", branch="tmp")
    repo.commit({"y": 1}, message="b")
    before = repo.store.generation()
    repo.delete_branch("tmp")
    repo.gc("0", expire_reflog="0")
    assert repo.store.generation() == before + 1
    with pytest.raises(statevcs.StaleCache):
        repo.store.update_refs([], {}, generation=before)
    repo.close()


# --- 1.2 snapshot ids are a pure function of content -----------------------------------


def test_an_extras_value_equal_to_a_small_message_keeps_the_message() -> None:
    repo = Repo.init()
    repo.commit(Snapshot(messages=[SMALL], extras={"last": SMALL}), message="m")
    shown = repo.show("HEAD")
    assert shown.messages == [SMALL] and shown.extras == {"last": SMALL}
    assert repo.fsck().ok


_SAME_CONTENT = textwrap.dedent(
    """
    import sys
    from statevcs import Repo, Snapshot
    m = {"role": "user", "content": [{"text": "y" * 10}]}
    repo = Repo.open(sys.argv[1])
    snap = Snapshot(messages=[m, {"role": "assistant", "content": "z" * 300}],
                    extras={"last": m, "big": {"k": "v" * 500}}, state={"n": 1})
    print(repo.objects.write_snapshot(snap).hex())
    """
)


def test_snapshot_ids_are_the_same_from_warm_cold_and_other_processes(tmp_path: Path) -> None:
    warm = Repo.init(tmp_path / "r")
    m = dict(SMALL)
    other = {"role": "assistant", "content": "z" * 300}
    # Warm the handle's caches with related content first.
    warm.commit(Snapshot(messages=[m], extras={"big": {"k": "v" * 500}}), message="warm-up")
    snap = Snapshot(
        messages=[m, other], extras={"last": m, "big": {"k": "v" * 500}}, state={"n": 1}
    )
    warm_id = warm.objects.write_snapshot(snap).hex()
    cold = Repo.open(tmp_path / "r")
    assert cold.objects.write_snapshot(snap.model_copy(deep=True)).hex() == warm_id
    memory_id = Repo.init().objects.write_snapshot(snap.model_copy(deep=True)).hex()
    assert memory_id == warm_id
    out = subprocess.run(
        [sys.executable, "-c", _SAME_CONTENT, str(tmp_path / "r")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == warm_id
    warm.close()
    cold.close()


# --- 1.4 commit fields are validated before anything is written ------------------------


@pytest.mark.parametrize("bad", [None, b"x", 0, [], {}, 1.5])
def test_a_non_string_message_or_author_is_refused_and_nothing_moves(
    tmp_path: Path, bad: Any
) -> None:
    repo = Repo.init(tmp_path / "r")
    repo.commit({"n": 0}, message="root")
    before = _dump(tmp_path / "r")
    with pytest.raises(TypeError, match="message"):
        repo.commit({"n": 1}, message=bad)
    with pytest.raises(TypeError, match="author"):
        repo.commit({"n": 1}, message="x", author=bad if bad is not None else 5)
    assert _dump(tmp_path / "r") == before
    assert [c.message for c in repo.log()] == ["root"]
    repo.close()


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ({1: "int key"}, statevcs.SerializationError),
        ({"big": 2**64}, statevcs.SerializationError),
        ({"small": -(2**63) - 1}, statevcs.SerializationError),
        ({"nan": float("nan")}, statevcs.SerializationError),
        ({"surrogate": "\ud800"}, statevcs.SerializationError),
        ({"\udfff": 1}, statevcs.SerializationError),
        ({"set": {1, 2}}, statevcs.SerializationError),
        ("not a dict", TypeError),
    ],
)
def test_bad_metadata_is_refused_before_anything_is_written(
    tmp_path: Path, metadata: Any, error: type[Exception]
) -> None:
    repo = Repo.init(tmp_path / "r")
    repo.commit({"n": 0}, message="root")
    before = _dump(tmp_path / "r")
    with pytest.raises(error):
        repo.commit({"n": 1}, message="x", metadata=metadata)
    assert _dump(tmp_path / "r") == before
    repo.close()


def test_deep_metadata_raises_serialization_error_not_recursion_error() -> None:
    repo = Repo.init()
    deep: Any = "leaf"
    for _ in range(10_000):
        deep = {"d": deep}
    with pytest.raises(statevcs.SerializationError, match="deeper"):
        repo.commit({"n": 1}, metadata={"deep": deep})
    looped: dict[str, Any] = {}
    looped["self"] = looped
    with pytest.raises(statevcs.SerializationError):
        repo.commit({"n": 1}, metadata=looped)
    assert list(repo.log()) == []


def test_lone_surrogates_in_message_and_author_are_refused(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "r")
    with pytest.raises(statevcs.SerializationError):
        repo.commit({"n": 1}, message="bad \udc80")
    with pytest.raises(statevcs.SerializationError):
        repo.commit({"n": 1}, author="\ud800 <a@b>")
    assert list(repo.log()) == []
    repo.close()


def test_naive_timestamp_is_refused() -> None:
    repo = Repo.init()
    with pytest.raises(statevcs.SerializationError, match="timezone"):
        repo.commit({"n": 1}, timestamp=dt.datetime(2020, 1, 1))
    with pytest.raises(TypeError, match="timestamp"):
        repo.commit({"n": 1}, timestamp="2020-01-01")  # type: ignore[arg-type]


# --- 1.8 metadata aliasing -------------------------------------------------------------------


def test_metadata_cannot_be_changed_through_the_callers_dict_or_a_returned_commit() -> None:
    repo = Repo.init()
    metadata: dict[str, Any] = {"z": 1, "a": {"nested": [1, 2]}}
    commit = repo.commit({"n": 1}, metadata=metadata)
    metadata["a"]["nested"].append(3)
    metadata["z"] = 2
    commit.metadata["a"]["nested"].append(4)
    again = repo.get_commit(commit.id)
    assert again.metadata == {"a": {"nested": [1, 2]}, "z": 1}
    assert list(again.metadata) == ["a", "z"]  # canonical order


# --- 1.9 and 1.10 opening ---------------------------------------------------------------------


def test_open_does_not_write_into_an_empty_file(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / DB_FILENAME).write_bytes(b"")
    with pytest.raises(statevcs.RepositoryNotFound, match="not a statevcs repository"):
        Repo.open(folder)
    assert (folder / DB_FILENAME).read_bytes() == b""
    assert sorted(p.name for p in folder.iterdir()) == [DB_FILENAME]


def test_open_does_not_write_into_another_applications_database(tmp_path: Path) -> None:
    folder = tmp_path / "foreign"
    folder.mkdir()
    with sqlite3.connect(folder / DB_FILENAME) as db:
        db.execute("CREATE TABLE users (name TEXT)")
        db.execute("INSERT INTO users VALUES ('ada')")
    db.close()
    before = (folder / DB_FILENAME).read_bytes()
    with pytest.raises(statevcs.RepositoryNotFound, match="not a statevcs repository"):
        Repo.open(folder)
    assert (folder / DB_FILENAME).read_bytes() == before


def test_open_refuses_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    folder = tmp_path / "junk"
    folder.mkdir()
    (folder / DB_FILENAME).write_bytes(b"\x00garbage" * 100)
    with pytest.raises(statevcs.RepositoryNotFound, match="not a statevcs repository"):
        Repo.open(folder)


@pytest.mark.parametrize(
    "url", ["https://example.com/repo", "gs://b/p", "file:///tmp/x", "S3x://bucket/x"]
)
def test_unknown_url_schemes_are_refused_and_create_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(statevcs.RepositoryError, match="unsupported repository URL scheme"):
        Repo.init(url)
    with pytest.raises(statevcs.RepositoryError, match="unsupported repository URL scheme"):
        Repo.open(url)
    assert list(tmp_path.iterdir()) == []


def test_memory_repositories_cannot_be_reopened() -> None:
    with pytest.raises(statevcs.RepositoryNotFound, match="memory://"):
        Repo.open("memory://")


# --- 2. HEAD belongs to a handle --------------------------------------------------------------


def test_a_dict_committed_to_another_branch_does_not_move_the_stored_head(
    tmp_path: Path,
) -> None:
    first = Repo.init(tmp_path / "r")
    state: dict[str, Any] = {"n": 0}
    first.commit(state, message="root")
    state["n"] = 1
    first.commit(state, message="on b", branch="b")
    assert first.head_branch == "b"  # this handle follows its dict
    assert first.default_branch == "main"
    second = Repo.open(tmp_path / "r")
    assert second.head_branch == "main"
    landed = second.commit({"n": 2}, message="second handle")
    assert second.resolve("main") == landed.id
    assert [c.message for c in second.log("b")] == ["on b", "root"]
    assert second.reflog("HEAD")[0].message.startswith("commit")
    first.close()
    second.close()


def test_switch_moves_the_default_branch_with_a_reflog_entry(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "r")
    repo.commit({"n": 0}, message="root")
    with pytest.raises(statevcs.RefNotFound, match="create=True"):
        repo.switch("feature")
    repo.switch("feature", create=True)
    assert repo.default_branch == "feature" and repo.head_branch == "feature"
    assert repo.reflog("HEAD")[0].message == "switch: moving from main to feature"
    with Repo.open(tmp_path / "r") as other:
        assert other.head_branch == "feature"
        other.commit({"n": 1}, message="on feature")
        assert [c.message for c in other.log()] == ["on feature", "root"]
    repo.close()


@pytest.mark.parametrize("rev", ["HEAD", "@", "main"])
def test_checking_out_head_or_a_branch_keeps_the_object_attached(rev: str) -> None:
    repo = Repo.init()
    agent = Snapshot(state={"n": 0})
    repo.commit(agent, message="root")
    reloaded = Snapshot()
    repo.checkout(reloaded, rev)
    reloaded.state["n"] = 1
    assert repo.commit(reloaded, message="keep going").parents == (repo.resolve("main~1"),)
    assert repo.attached_branch(reloaded) == "main"


def test_checking_out_a_non_branch_revision_detaches() -> None:
    repo = Repo.init()
    agent = Snapshot(state={"n": 0})
    repo.commit(agent, message="root")
    repo.commit(agent, message="two")
    repo.checkout(agent, "main~0")
    with pytest.raises(statevcs.DetachedHead, match="branch="):
        repo.commit(agent, message="x")


# --- 3. errors are StateVCSError or TypeError naming the argument -------------------------------


def test_wrong_argument_types_raise_type_error_naming_the_argument() -> None:
    repo = Repo.init()
    repo.commit({"n": 1})
    cases: list[tuple[Any, str]] = [
        (lambda: repo.branch(None), "name"),  # type: ignore[arg-type]
        (lambda: repo.checkout({}, 5), "rev"),  # type: ignore[arg-type]
        (lambda: repo.reflog(5), "ref"),  # type: ignore[arg-type]
        (lambda: list(repo.log(limit="a")), "limit"),  # type: ignore[arg-type]
        (lambda: repo.gc(grace=5), "grace"),  # type: ignore[arg-type]
        (lambda: repo.show(5), "rev"),  # type: ignore[arg-type]
        (lambda: repo.refs.set("refs/heads/x", "ab"), "commit_id"),  # type: ignore[arg-type]
        (lambda: repo.tag(b"v1"), "name"),  # type: ignore[arg-type]
        (lambda: repo.commit({}, branch=3), "branch"),  # type: ignore[arg-type]
    ]
    for call, argument in cases:
        with pytest.raises(TypeError, match=argument):
            call()


def test_bad_ids_and_durations_raise_statevcs_errors() -> None:
    repo = Repo.init()
    head = repo.commit({"n": 1})
    with pytest.raises(statevcs.RevisionError):
        repo.show("xyz")
    with pytest.raises(statevcs.RevisionError):
        repo.get_commit("zz" * 32)
    with pytest.raises(statevcs.MissingObject):
        repo.refs.set("refs/heads/x", b"\x00" * 32)
    with pytest.raises(statevcs.InvalidDuration, match="2w"):
        repo.gc(grace="soon")
    assert repo.gc(grace="0").deleted == 0
    assert repo.resolve("main") == head.id


def test_lone_surrogates_in_names_and_revisions_raise_statevcs_errors(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "r")
    repo.commit({"n": 1})
    for call in (
        lambda: repo.resolve("\udc80"),
        lambda: repo.branch("\ud800"),
        lambda: repo.tag("x\udfff"),
        lambda: repo.commit({"\ud800": 1}),
        lambda: repo.commit({"messages": [{"role": "\udc80"}]}),
    ):
        with pytest.raises(statevcs.StateVCSError):
            call()
    assert len(list(repo.log())) == 1
    repo.close()


# --- 6. durability, reflog expiry, messages=None, WAL size ---------------------------------------


def test_durability_is_exposed_on_init_and_open(tmp_path: Path) -> None:
    with Repo.init(tmp_path / "r", durability="full") as repo:
        assert repo.store.durability == "full"  # type: ignore[attr-defined]
    with Repo.open(tmp_path / "r") as repo:  # the repository's own setting
        assert repo.store.durability == "full"  # type: ignore[attr-defined]
    with Repo.open(tmp_path / "r", durability="normal") as repo:
        assert repo.store.durability == "normal"  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="durability"):
        Repo.open(tmp_path / "r", durability="sometimes")  # type: ignore[arg-type]


def test_expiring_reflogs_lets_gc_reclaim_history_dropped_by_reset() -> None:
    repo = Repo.init()
    state: dict[str, Any] = {"messages": []}
    for i in range(5):
        state["messages"].append({"role": "user", "content": f"turn {i} " + "x" * 200})
        repo.commit(state, message=f"turn {i}")
    repo.reset("main", "main~4")
    assert repo.gc("0").deleted == 0  # the reflog still holds the dropped commits
    report = repo.gc("0", expire_reflog="0")
    assert report.deleted > 0
    assert repo.fsck().ok
    assert len(list(repo.log())) == 1


def test_messages_none_comes_back_as_none() -> None:
    repo = Repo.init()
    state: dict[str, Any] = {"messages": None, "n": 1}
    repo.commit(state)
    restored: dict[str, Any] = {}
    repo.checkout(restored, "main")
    assert restored == {"messages": None, "n": 1}


def test_the_wal_file_stays_bounded_while_a_repository_is_open(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "r")
    state: dict[str, Any] = {"messages": []}
    for i in range(1500):
        state["messages"].append({"role": "user", "content": f"{i} " + "w" * 600})
        repo.commit(state, message=str(i))
    wal = tmp_path / "r" / f"{DB_FILENAME}-wal"
    assert wal.stat().st_size <= 2 * 1024 * 1024
    repo.close()


def test_commit_json_metadata_round_trips_exactly(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "r")
    metadata = {"b": [1, 2.5, None, True, "x"], "a": {"k": -(2**63), "u": 2**64 - 1}}
    commit = repo.commit({"n": 1}, metadata=metadata)
    repo.close()
    with Repo.open(tmp_path / "r") as reopened:
        assert json.dumps(reopened.get_commit(commit.id).metadata, sort_keys=True) == json.dumps(
            metadata, sort_keys=True
        )


# --- what commit accepts, checkout can read (and the mirror can export) ----------------------


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_the_deepest_message_commit_accepts_reads_back_and_exports(tmp_path: Path) -> None:
    pytest.importorskip("dulwich")
    repo = Repo.init(tmp_path / "r")
    deepest = {"role": "user", "content": _nested(510)}
    state: dict[str, Any] = {"messages": [deepest, deepest]}  # repeated: two unshared copies
    repo.commit(state, message="deep", metadata={"m": _nested(60)})
    restored: dict[str, Any] = {}
    repo.checkout(restored, "main")
    assert restored["messages"] == [deepest, deepest]
    assert restored["messages"][0] is not restored["messages"][1]
    from statevcs.mirror.git import export_git

    export_git(repo, tmp_path / "mirror")
    repo.close()


@pytest.mark.parametrize("depth", [512, 700, 1022, 5000])
def test_messages_too_deep_to_read_back_are_refused_at_commit(depth: int) -> None:
    repo = Repo.init()
    with pytest.raises(statevcs.SerializationError, match=r"messages\[0\]"):
        repo.commit({"messages": [{"role": "user", "content": _nested(depth)}]})
    with pytest.raises(statevcs.SerializationError, match="extras"):
        repo.commit(Snapshot(extras={"deep": _nested(depth + 1)}))
    assert list(repo.log()) == []


def test_messages_the_caller_still_holds_keep_reaching_the_commit() -> None:
    # A plain list and its message dicts belong to the caller: statevcs never swaps them for
    # copies, so edits made through references kept from before a commit are committed.
    repo = Repo.init()
    reply: dict[str, Any] = {"role": "assistant", "content": []}
    messages: list[Any] = [{"role": "user", "content": "hi"}, reply]
    state: dict[str, Any] = {"messages": messages}
    for _ in range(3):
        repo.commit(state)
    assert state["messages"] is messages and state["messages"][1] is reply
    reply["content"].append({"text": "streamed after the commit"})
    messages.append({"role": "user", "content": "more"})
    repo.commit(state)
    assert repo.show("main").messages == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"text": "streamed after the commit"}]},
        {"role": "user", "content": "more"},
    ]


@pytest.mark.parametrize(
    "url", ["foo://user:hunter2@host/x", "gs://k:hunter2@b/p", "memory://u:hunter2@x"]
)
def test_a_refused_url_never_shows_its_password(url: str) -> None:
    for call in (Repo.init, Repo.open):
        with pytest.raises(statevcs.RepositoryError) as raised:
            call(url)
        assert "hunter2" not in str(raised.value)
