"""Hostile repositories: planted pickles and crafted objects never run code or crash a reader.

Objects are written straight into the store with correct ids (what anyone who can write the
database file can do), one branch per attack. The readers run in a subprocess, so a segfault
or a runaway recursion shows as a failing return code instead of killing the test runner.
"""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path
from typing import Any

import msgpack
import pytest

import statevcs
from statevcs import Repo
from statevcs.hashing import ObjectId, hash_bytes
from statevcs.objects import CommitObject, ListNode, MapNode, encode_with_id

from .harness import run_worker


class _Payload:
    """Unpickling this creates ``marker``: the proof that loading ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        import os

        return (os.system, (f"touch '{self.marker}'",))


def _pack(raw: Any) -> bytes:
    data: bytes = msgpack.packb(raw, use_bin_type=True)
    return data


def _deep_array(depth: int) -> bytes:
    """The msgpack bytes of ``[[[...1...]]]`` nested ``depth`` deep (no packer recursion)."""
    return b"\x91" * depth + b"\x01"


def _ext_nested(depth: int) -> bytes:
    """MsgpackSerializer tuple extensions nested ``depth`` deep: ext(9, [ext(9, [...])])."""
    value = _pack(1)
    for _ in range(depth):
        body = b"\x91" + value
        value = b"\xc7" + struct.pack(">B", len(body)) if len(body) < 256 else b""
        if not value:
            value = b"\xc9" + struct.pack(">I", len(body))
        value += b"\x09" + body
    return value


class Planter:
    """Writes crafted objects into a repository and points a branch at each attack."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.empty_list = self.put_object(ListNode(0, (), ()))
        self.empty_map = MapNode((), ())
        self.branches: list[str] = []

    def put(self, data: bytes) -> ObjectId:
        object_id = hash_bytes(data)
        self.repo.store.put_many({object_id: data})
        return object_id

    def put_object(self, obj: Any) -> ObjectId:
        object_id, data = encode_with_id(obj)
        self.repo.store.put_many({object_id: data})
        return object_id

    def snapshot(
        self,
        *,
        messages: ObjectId | None = None,
        tail: list[ObjectId] | None = None,
        state: bytes | None = None,
        extras: bytes | None = None,
        codec: str = "json",
    ) -> ObjectId:
        """A snapshot object; ``state``/``extras`` are raw msgpack map refs when given."""
        head = _pack(["snapshot", 1, "dict", messages or self.empty_list, tail or []])
        empty = _pack([[], []])
        body = (state or empty) + (extras or empty) + _pack(codec)
        # Patch the array header from 5 to 8 elements: fields are appended raw.
        assert head[0] == 0x95
        return self.put(b"\x98" + head[1:] + body)

    def commit(
        self, name: str, snapshot: ObjectId, *, timestamp: int = 0, metadata: bytes | None = None
    ) -> None:
        if metadata is None:
            commit_id = self.put_object(CommitObject(snapshot, (), "hostile", timestamp, "x", {}))
        else:
            head = _pack(["commit", snapshot, [], "hostile", timestamp, "x"])
            assert head[0] == 0x96
            commit_id = self.put(b"\x97" + head[1:] + metadata)
        self.repo.store.set_ref(f"refs/heads/{name}", commit_id)
        self.branches.append(name)

    def state_value(self, name: str, data: bytes, codec: str) -> None:
        """A branch whose state key ``x`` holds ``data`` (inline, and as a blob)."""
        inline = _pack([["x"], [[data]]])
        self.commit(name + "-inline", self.snapshot(state=inline, codec=codec))
        blob = self.put(_pack(["blob", data]))
        self.commit(name + "-blob", self.snapshot(state=_pack([["x"], [blob]]), codec=codec))


def _plant_everything(folder: Path, marker: Path) -> list[str]:
    with Repo.init(folder) as repo:
        repo.commit({"messages": [{"role": "user", "content": "ok"}], "x": 1}, message="ok")
        plant = Planter(repo)
        evil = pickle.dumps(_Payload(marker), protocol=5)
        forged = b"\x01" + statevcs.PickleSerializer(b"attacker's key")._sign(evil) + evil
        for codec in ("pickle", "json", "msgpack", "evil-codec"):
            plant.state_value(f"raw-pickle-{codec}", evil, codec)
            plant.state_value(f"forged-pickle-{codec}", forged, codec)
        plant.state_value("json-deep", b"[" * 100_000 + b"]" * 100_000, "json")
        plant.state_value("msgpack-deep", _deep_array(100_000), "msgpack")
        plant.state_value("msgpack-ext-deep", _ext_nested(300), "msgpack")
        plant.state_value("msgpack-garbage", b"\xc1\xff\x00", "msgpack")
        for depth in (200, 600, 1_000, 100_000):
            doc = plant.put(b"\x92\xa3doc" + _deep_array(depth))
            plant.commit(f"message-deep-{depth}", plant.snapshot(tail=[doc, doc]))
            inline = b"\x92\x91\xa4last\x91\x91" + _deep_array(depth)
            plant.commit(f"extras-deep-{depth}", plant.snapshot(extras=inline))
            plant.commit(
                f"metadata-deep-{depth}",
                plant.snapshot(),
                metadata=b"\x81\xa1k" + _deep_array(depth),
            )
        for timestamp in (2**62, -(2**62), 2**64 - 1, -(2**63)):
            plant.commit(f"timestamp-{timestamp}", plant.snapshot(), timestamp=timestamp)
        ok_doc = plant.put(_pack(["doc", {"role": "user", "content": "x"}]))
        huge = plant.put_object(ListNode(1, (plant.empty_list,), (2**63 - 1,)))
        plant.commit("list-huge-count", plant.snapshot(messages=huge))
        confused = plant.put_object(ListNode(1, (ok_doc,), (1,)))
        plant.commit("list-of-a-document", plant.snapshot(messages=confused))
        plant.commit("messages-root-is-a-doc", plant.snapshot(messages=ok_doc))
        chunked = plant.put(_pack(["chunked", 2**40, [ok_doc]]))
        plant.commit("chunked-lies-about-size", plant.snapshot(tail=[chunked]))
        return plant.branches


@pytest.mark.parametrize("serializer", ["json", "msgpack", "pickle"])
def test_hostile_repository_runs_no_code_and_raises_only_statevcs_errors(
    tmp_path: Path, serializer: str
) -> None:
    folder = tmp_path / "repo"
    marker = tmp_path / "pwned"
    branches = _plant_everything(folder, marker)
    done = run_worker("read-everything", folder, serializer, timeout=300)
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])["outcomes"]
    assert not marker.exists(), "a planted pickle was executed"
    failed = {what for what, result in outcomes if result != "ok"}
    refused = ("raw-pickle", "forged-pickle", "json-deep", "msgpack-", "list-", "messages-root")
    for branch in branches:
        if branch.startswith(refused) or branch.endswith("-100000"):
            assert f"show refs/heads/{branch}" in failed, branch
    assert "show refs/heads/main" not in failed
    assert {what for what, _ in outcomes} >= {"fsck", "stats", "export_git"}
