"""The plumbing containers: repo.objects, repo.refs, repo.config."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import statevcs
from statevcs import Repo
from statevcs.errors import RepositoryError
from statevcs.hashing import from_hex


def test_objects_write_a_snapshot_and_a_commit_and_read_them_back(repo: Repo) -> None:
    parent = from_hex(repo.commit({"n": 1}).id)
    snapshot_id = repo.objects.write_snapshot(statevcs.Snapshot(state={"n": 2}))
    commit_id = repo.objects.write_commit(
        snapshot_id,
        [parent],
        message="by hand",
        author="tool <tool@example.com>",
        timestamp=datetime(2025, 1, 1, tzinfo=UTC),
        metadata={"b": 1, "a": [1]},
    )
    commit = repo.objects.load_commit(commit_id)
    assert commit.parents == (parent,) and commit.metadata == {"a": [1], "b": 1}
    assert repo.objects.read_snapshot(snapshot_id).snapshot.state == {"n": 2}
    assert repo.objects.read_state_bytes(snapshot_id) == {"n": b"2"}
    assert repo.get_commit("main").id != commit_id.hex()  # no ref moved


def test_write_commit_validates_before_writing(repo: Repo) -> None:
    snapshot_id = repo.objects.write_snapshot(statevcs.Snapshot())
    before = sum(1 for _ in repo.store.iter_objects())
    moment = datetime(2025, 1, 1, tzinfo=UTC)
    with pytest.raises(TypeError, match="parents"):
        repo.objects.write_commit(snapshot_id, "ab", message="", author="a", timestamp=moment)
    with pytest.raises(statevcs.MissingObject):
        repo.objects.write_commit(
            snapshot_id, [b"\x01" * 32], message="", author="a", timestamp=moment
        )
    with pytest.raises(statevcs.SerializationError):
        repo.objects.write_commit(
            snapshot_id, [], message="", author="a", timestamp=moment, metadata={"x": {1, 2}}
        )
    assert sum(1 for _ in repo.store.iter_objects()) == before


def test_raw_state_is_stored_verbatim_in_its_codec(repo: Repo) -> None:
    snapshot = statevcs.Snapshot(state={"k": b"\x93\x01\x02\x03"})
    written = repo.objects.encode_snapshot(snapshot, state_codec="msgpack", raw_state=True)
    repo.objects.put(written.objects)
    assert repo.objects.read_state_bytes(written.snapshot_id) == {"k": b"\x93\x01\x02\x03"}
    assert repo.objects.load_snapshot(written.snapshot_id).state_codec == "msgpack"


def test_refs_set_is_a_validated_compare_and_swap(repo: Repo) -> None:
    first = from_hex(repo.commit({"n": 1}).id)
    second = from_hex(repo.commit({"n": 2}).id)
    repo.refs.set("refs/tags/t", first, expected=None, message="tag by hand")
    with pytest.raises(statevcs.RefConflict):
        repo.refs.set("refs/tags/t", second, expected=None)
    repo.refs.set("refs/tags/t", second, expected=first)
    assert repo.refs.as_hex("refs/tags/") == {"refs/tags/t": second.hex()}
    assert repo.refs.reflog("refs/tags/t")[-1].message == "tag by hand"
    with pytest.raises(statevcs.InvalidRefName):
        repo.refs.set("refs/tags/bad..name", first)
    with pytest.raises(statevcs.MissingObject):
        repo.refs.set("refs/tags/u", b"\x02" * 32)
    repo.refs.set("refs/tags/t", None)
    assert repo.refs.get("refs/tags/t") is None


def test_config_refuses_statevcs_own_keys(repo: Repo) -> None:
    repo.config.set("user.team", "search")
    assert repo.config.get("user.team") == "search"
    for key in ("core.format", "core.durability", "gc.generation"):
        with pytest.raises(RepositoryError, match="belongs to statevcs"):
            repo.config.set(key, "1")


@pytest.mark.parametrize("storage_format", [1, 2])
@pytest.mark.parametrize("serializer", [statevcs.JSONSerializer, statevcs.MsgpackSerializer])
def test_snapshot_values_are_the_snapshot_without_its_model(
    tmp_path: Path, storage_format: int, serializer: type[statevcs.StateSerializer]
) -> None:
    with Repo.init(tmp_path / "r", storage_format=storage_format, serializer=serializer()) as repo:
        messages = [{"role": "user", "content": f"m{n} " + "x" * 300} for n in range(40)]
        big = {"text": "y" * 200_000}
        repo.commit({"messages": messages, "n": 1, "big": big, "extras": 1}, metadata={"k": "v"})
        commit = repo.get_commit("main")
        values = repo.objects.read_snapshot_values(from_hex(commit.snapshot_id))
        snapshot = repo.show("main")
        assert (values.kind, values.messages, values.state, values.extras) == (
            snapshot.kind,
            snapshot.messages,
            snapshot.state,
            snapshot.extras,
        )
        assert values.state_codec == serializer.name
        values.messages.append("fresh")  # fresh objects: the next read is unchanged
        again = repo.objects.read_snapshot_values(from_hex(commit.snapshot_id))
        assert again.messages == snapshot.messages


@given(st.one_of(st.binary(), st.text(), st.integers(), st.none()))
@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_snapshot_values_refuse_what_is_not_a_snapshot_id(repo: Repo, value: object) -> None:
    commit = repo.commit({"n": 1})
    with pytest.raises((TypeError, statevcs.StateVCSError)):
        repo.objects.read_snapshot_values(value)  # type: ignore[arg-type]
    with pytest.raises(statevcs.CorruptObject):  # a commit is not a snapshot
        repo.objects.read_snapshot_values(from_hex(commit.id))
