"""Attacks on ``fastcdc-2020-small-values``: state and extras values around its thresholds
(8 KiB, 64 KiB, 128 KiB, each +-1 byte of encoding) on every store, forks, gc, fsck, upgrade
and the git mirror; and repositories recording the older chunkers keep writing the ids
statevcs 0.2.0 wrote.
"""

from __future__ import annotations

import random
import sqlite3
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import statevcs
from statevcs import Repo, Snapshot
from statevcs.hashing import ObjectId
from statevcs.mirror.git import export_git, import_git
from statevcs.objects import Blob, Chunked, CommitObject, encode_with_id
from statevcs.serializers import JSONSerializer
from statevcs.snapshot import _encode_document
from statevcs.structures.chunking import (
    CHUNK_THRESHOLD,
    CHUNKER_KEY,
    FASTCDC_2020,
    SMALL_CHUNKS_UP_TO,
    SMALL_MAX_CHUNK,
    SMALL_MIN_CHUNK,
    SMALL_VALUE_THRESHOLD,
)
from statevcs.structures.maps import read_map

SIZES = [
    size + delta
    for size in (SMALL_VALUE_THRESHOLD, CHUNK_THRESHOLD, SMALL_CHUNKS_UP_TO)
    for delta in (-1, 0, 1)
]


def _at(second: int) -> datetime:
    return datetime.fromtimestamp(1_700_000_000 + second, UTC)


def _text(rng: random.Random, size: int) -> str:
    return "".join(rng.choice("abcdefgh ijk\n") for _ in range(size))


def _state_size(value: Any) -> int:
    """The length of a state value's stored encoding (a blob of its JSON)."""
    return len(encode_with_id(Blob(JSONSerializer().serialize(value, "v")))[1])


def _extras_size(value: Any) -> int:
    return len(_encode_document(value, "v"))


def _sized(size: int, measure: Any, rng: random.Random, shape: Any) -> Any:
    """A value built by ``shape(text)`` whose encoding, by ``measure``, is exactly ``size``
    (two-byte characters fill the gaps where a length header grows)."""
    pool = _text(rng, size + 64)
    length = size
    for _ in range(20):
        got = measure(shape(pool[:length]))
        if got == size:
            return shape(pool[:length])
        length += size - got
    for near in range(length - 8, length + 1):
        for wide in range(4):
            value = shape("é" * wide + pool[: near - wide])
            if measure(value) == size:
                return value
    raise AssertionError(f"no value of encoded size {size}")


def _value_ids(repo: Repo, commit_id: str, field: str) -> dict[str, Any]:
    commit = repo.objects.load(bytes.fromhex(commit_id))
    assert isinstance(commit, CommitObject)
    snapshot = repo.objects.load_snapshot(commit.snapshot)
    return read_map(repo.objects, getattr(snapshot, field))


def _chunk_sizes(repo: Repo, value_id: ObjectId) -> list[int] | None:
    """The sizes of a stored value's chunks (``None``: stored whole)."""
    obj = repo.objects.load(value_id)
    if not isinstance(obj, Chunked):
        return None
    sizes = []
    for chunk_id in obj.chunks:
        chunk = repo.objects.load(chunk_id)
        assert isinstance(chunk, Blob)
        sizes.append(len(chunk.data))
    assert sum(sizes) == obj.size
    return sizes


def _check_cut(repo: Repo, value_id: Any, size: int, encoded: bytes | None = None) -> None:
    sizes = _chunk_sizes(repo, value_id) if isinstance(value_id, bytes) else None
    if size <= SMALL_VALUE_THRESHOLD:
        assert sizes is None, size
        return
    assert sizes is not None and sum(sizes) == size, size
    if size <= SMALL_CHUNKS_UP_TO:
        assert all(SMALL_MIN_CHUNK <= s <= SMALL_MAX_CHUNK for s in sizes[:-1]), size
    else:
        assert encoded is not None
        ends, end = [], 0
        for s in sizes:
            end += s
            ends.append(end)
        assert ends == FASTCDC_2020.cut_points(encoded)


@pytest.mark.parametrize("size", SIZES)
def test_values_at_the_thresholds_read_back_exactly_and_are_cut_as_specified(
    repo: Repo, size: int
) -> None:
    rng = random.Random(size)
    state_text = _sized(size, _state_size, rng, lambda t: t)
    state_dict = _sized(size, _state_size, rng, lambda t: {"z": t, "a": [1, 2.5, None, True]})
    extras_doc = _sized(
        size, _extras_size, rng, lambda t: {"z": [t, b"\x00\xff"], "a": [1, -(2**63)]}
    )
    extras_bytes = _sized(size, _extras_size, rng, lambda t: t.encode())
    snapshot = Snapshot(
        kind="dict",
        messages=[{"role": "user", "content": "hi"}],
        state={"text": state_text, "dict": state_dict},
        extras={"doc": extras_doc, "bytes": extras_bytes},
    )
    commit = repo.commit(snapshot, message=f"{size}")
    back = repo.show(commit.id)
    assert back.state == {"text": state_text, "dict": state_dict}
    assert list(back.state["dict"]) == ["z", "a"]
    assert back.extras == {"doc": extras_doc, "bytes": extras_bytes}
    assert list(back.extras["doc"]) == ["z", "a"] and back.extras["doc"]["a"] == [1, -(2**63)]
    assert type(back.extras["bytes"]) is bytes and type(back.extras["doc"]["z"][1]) is bytes
    state = _value_ids(repo, commit.id, "state")
    for key, value in (("text", state_text), ("dict", state_dict)):
        encoded = encode_with_id(Blob(JSONSerializer().serialize(value, "v")))[1]
        _check_cut(repo, state[key], size, encoded)
    extras = _value_ids(repo, commit.id, "extras")
    for key, value in (("doc", extras_doc), ("bytes", extras_bytes)):
        _check_cut(repo, extras[key], size, _encode_document(value, "v"))
    # A fresh handle reads it back too (nothing from the writer's caches).
    with Repo.open(repo.url) if repo.url.startswith("s3://") else _reopen(repo) as other:
        assert other.show(commit.id) == back
    assert repo.fsck().problems == ()


def _reopen(repo: Repo) -> Repo:
    if repo.url.startswith("memory://"):
        return Repo(repo.store)
    return Repo.open(repo.url)


# --- the ids repositories of the older chunkers write -----------------------------------------


def _old_chunker_commits(chunker: str | None) -> list[str]:
    """Commits with messages, state and extras of 100 B to 70 KB into a new repository set to
    record ``chunker`` (``None``: none recorded, as before chunkers were recorded)."""
    repo = Repo.init("memory://")
    repo.store.config_set(CHUNKER_KEY, chunker)
    repo = Repo(repo.store)
    rng = random.Random(5)
    ids = []
    for i, size in enumerate([100, 8_000, 8_300, 20_000, 66_000, 70_000]):
        snapshot = Snapshot(
            kind="dict",
            messages=[{"role": "user", "content": _text(rng, size)}],
            state={"s": _text(rng, size), "small": "x"},
            extras={"e": {"t": _text(rng, size)}, "f": [_text(rng, size // 3)]},
        )
        ids.append(repo.commit(snapshot, message=f"m{i}", timestamp=_at(i), author="a").id)
    return ids


# Written by statevcs before fastcdc-2020-small-values (the tree of ed548b9~1), same calls.
_PINNED = {
    "fastcdc-2020": "694895540f0d5cd66ed55b3e46d41005e4140f5492ae6038b3fa17ac583bf506",
    "gear-1": "97d185bec4b7c85f98a54814ab93b02718dd97e2f5c3eec54bd8edbbfe47a3be",
    None: "97d185bec4b7c85f98a54814ab93b02718dd97e2f5c3eec54bd8edbbfe47a3be",
}


@pytest.mark.parametrize("chunker", list(_PINNED), ids=str)
def test_repositories_of_the_older_chunkers_write_the_ids_they_wrote(chunker: str | None) -> None:
    assert _old_chunker_commits(chunker)[-1] == _PINNED[chunker]
    # The pin would catch a change: the new chunker cuts these values otherwise.
    assert _old_chunker_commits("fastcdc-2020-small-values")[-1] not in _PINNED.values()


# --- forks, gc, fsck, upgrade, the git mirror --------------------------------------------------


def _todo_history(repo: Repo) -> tuple[list[str], dict[str, Any]]:
    rng = random.Random(11)
    agent: dict[str, Any] = {"messages": [{"role": "user", "content": "go"}]}
    agent["todo"] = _text(rng, 30_000)
    ids = []
    for turn in range(4):
        agent["todo"] = agent["todo"][:5_000] + f"edit {turn}" + agent["todo"][5_010:]
        agent["notes"] = {"turn": turn, "text": _text(rng, 9_000)}
        ids.append(repo.commit(agent, message=f"turn {turn}", timestamp=_at(turn)).id)
    return ids, agent


def _chunks_of(repo: Repo, commit_id: str) -> set[ObjectId]:
    value = _value_ids(repo, commit_id, "state")["todo"]
    obj = repo.objects.load(value)
    assert isinstance(obj, Chunked)
    return set(obj.chunks)


def test_forks_share_chunks_gc_keeps_them_and_collects_the_rest(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "r")
    ids, _ = _todo_history(repo)
    repo.branch("fork", ids[1])
    forked: dict[str, Any] = {}
    repo.checkout(forked, "fork")
    forked["todo"] = forked["todo"][:20_000] + "forked" + forked["todo"][20_000:]
    fork = repo.commit(forked, message="fork", timestamp=_at(10))
    main_chunks, fork_chunks = _chunks_of(repo, ids[1]), _chunks_of(repo, fork.id)
    assert len(main_chunks & fork_chunks) >= len(main_chunks) - 3  # a small edit: ~1-2 chunks
    only_fork = fork_chunks - set().union(*(_chunks_of(repo, i) for i in ids))
    assert only_fork and repo.store.has_many(only_fork) == only_fork
    repo.checkout({}, "main")
    repo.delete_branch("fork")
    report = repo.gc(grace=timedelta(0), expire_reflog=timedelta(0))
    assert report.deleted > 0
    assert not repo.store.has_many(only_fork)  # collected
    for commit_id in ids:  # every chunk still reachable is kept
        assert repo.store.has_many(_chunks_of(repo, commit_id)) == _chunks_of(repo, commit_id)
        assert repo.show(commit_id).state["todo"]
    assert repo.fsck().problems == ()


def test_fsck_names_a_damaged_small_chunk(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "r")
    ids, _ = _todo_history(repo)
    victim = sorted(_chunks_of(repo, ids[-1]))[3]
    repo.close()
    with sqlite3.connect(tmp_path / "r" / "statevcs.sqlite3") as db:
        damaged = encode_with_id(Blob(b"not the chunk"))[1]
        assert db.execute("UPDATE objects SET data = ? WHERE id = ?", (damaged, victim)).rowcount
    db.close()
    repo = Repo.open(tmp_path / "r")
    problems = repo.fsck().problems
    assert problems and all(victim.hex() in problem for problem in problems)
    with pytest.raises(statevcs.CorruptObject, match=victim.hex()):
        repo.show(ids[-1])
    repo.close()


def test_upgrade_and_the_git_mirror_keep_small_value_chunks(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "r", storage_format=1)
    assert repo.objects.chunker.name == "fastcdc-2020-small-values"
    ids, _ = _todo_history(repo)
    before = [repo.show(i) for i in ids]
    report = repo.upgrade()
    assert report.commits_rewritten == len(ids)
    upgraded = [c.id for c in repo.log("main")][::-1]
    assert [repo.show(i) for i in upgraded] == before
    assert len(_chunks_of(repo, upgraded[-1])) > 10  # still ~2 KiB chunks
    assert repo.fsck().problems == ()
    export_git(repo, tmp_path / "m1")
    export_git(repo, tmp_path / "m2")
    refs = [
        subprocess.run(
            ["git", "-C", str(tmp_path / mirror), "for-each-ref"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for mirror in ("m1", "m2")
    ]
    assert refs[0] == refs[1] and "refs/heads/main" in refs[0]  # re-export is deterministic
    copy = Repo.init(tmp_path / "copy")
    import_git(copy, tmp_path / "m1")
    for commit in repo.log("main"):
        assert copy.get_commit(commit.id) == commit
        assert copy.show(commit.id) == repo.show(commit.id)
    assert copy.fsck().problems == ()
    # Both cut the next commit's values alike: the same id.
    next_ids = []
    for handle in (repo, copy):
        live: dict[str, Any] = {}
        handle.checkout(live, "main")
        live["todo"] += "more"
        next_ids.append(handle.commit(live, message="next", timestamp=_at(20), author="a").id)
    assert next_ids[0] == next_ids[1]


@pytest.mark.parametrize("chunker", ["fastcdc-2020", "gear-1"])
def test_commits_imported_from_an_older_chunkers_mirror_export_and_import_again(
    tmp_path: Path, chunker: str
) -> None:
    """A 0.2.0 repository's history, imported into a new repository and exported again, is
    recorded with the new repository's chunker in statevcs.json; importing that second mirror
    rebuilt its ~20 KB notes in ~2 KiB chunks and refused every commit (GitMirrorError)."""
    old = Repo.init(tmp_path / "old")
    old.store.config_set(CHUNKER_KEY, chunker)
    old = Repo.open(tmp_path / "old")
    assert old.objects.chunker.name == chunker
    rng = random.Random(4)
    agent: dict[str, Any] = {"messages": [{"role": "user", "content": _text(rng, 70_000)}]}
    for turn in range(3):
        agent["notes"] = _text(rng, 20_000)
        agent["messages"].append({"role": "assistant", "content": f"turn {turn}"})
        old.commit(agent, message=f"turn {turn}", timestamp=_at(turn))
    history = [c.id for c in old.log("main")]
    export_git(old, tmp_path / "m1")
    new = Repo.init(tmp_path / "new")
    import_git(new, tmp_path / "m1")
    live: dict[str, Any] = {}
    new.checkout(live, "main")
    live["notes"] += " and a new turn"
    new.commit(live, message="new turn", timestamp=_at(9))  # cut the new repository's way
    export_git(new, tmp_path / "m2")
    third = Repo.init("memory://")
    import_git(third, tmp_path / "m2")
    assert [c.id for c in third.log("main")] == [c.id for c in new.log("main")]
    assert [c.id for c in third.log("main")][1:] == history
    for commit in new.log("main"):
        assert third.show(commit.id) == new.show(commit.id)
    assert third.fsck().problems == ()
