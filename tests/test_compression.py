"""Compressed objects (format 2): ids name the plain bytes, hostile frames are refused."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from statevcs import CorruptObject, Repo, compression
from statevcs.compression import ZSTD_MAGIC, content_id, is_packed, pack, unpack
from statevcs.hashing import from_hex, hash_bytes
from statevcs.objects import (
    DOC_PREFIX,
    ListNode,
    ZstdDictionary,
    decode,
    encode,
    encode_with_id,
    kind_of,
    leaf_problems,
)
from statevcs.stores.sqlite import DB_FILENAME

ANY_ID = b"\x01" * 32


@given(st.binary(max_size=4096))
def test_what_is_packed_unpacks_to_the_same_bytes(data: bytes) -> None:
    stored = pack(data)
    assert unpack(ANY_ID, stored) == data
    assert content_id(stored) == hash_bytes(data)
    assert is_packed(stored) == (stored != data or data[:4] == ZSTD_MAGIC)


def test_small_or_incompressible_objects_stay_plain() -> None:
    assert pack(b"\x92\xa3doc\xa1x") == b"\x92\xa3doc\xa1x"
    noise = bytes(range(256)) * 1  # 256 bytes zstd cannot shrink by 10 %
    assert not is_packed(pack(noise))
    text = msgpack.packb(["doc", "the same words again " * 40])
    assert is_packed(pack(text)) and len(pack(text)) < len(text) // 4


def test_a_frame_that_would_expand_past_the_limit_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bomb = zstandard.ZstdCompressor().compress(b"\0" * 1_000_000)  # about 50 bytes
    monkeypatch.setattr(compression, "MAX_EXPANDED", 100_000)
    with pytest.raises(CorruptObject, match="would expand to 1000000 bytes"):
        unpack(ANY_ID, bomb)


def test_frames_without_a_size_or_damaged_are_refused() -> None:
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(b"x" * 1000)
    with pytest.raises(CorruptObject, match="does not declare its size"):
        unpack(ANY_ID, unsized)
    good = pack(b"y" * 1000)
    with pytest.raises(CorruptObject, match="damaged"):
        unpack(ANY_ID, good[:-4])
    with pytest.raises(CorruptObject, match="header is damaged"):
        unpack(ANY_ID, ZSTD_MAGIC)
    assert not is_packed(b"\x93")  # every plain object is a msgpack array


def test_a_frame_of_other_bytes_fails_the_hash_check() -> None:
    data = encode(ListNode(0, (b"\2" * 32,), (), (b"\xa5hello" * 60,)))
    with pytest.raises(CorruptObject, match="do not hash"):
        decode(hash_bytes(b"something else"), pack(data))
    assert kind_of(decode(hash_bytes(data), pack(data))) == "leaf"


def test_hostile_leaves_are_refused_or_named_by_fsck() -> None:
    bad_values: list[Any] = [
        ["leaf", [b"\1" * 32], []],  # fewer values than ids
        ["leaf", [b"\1" * 32], [5]],  # a value that is not bytes
        ["leaf", [b"\1" * 31], [b"x"]],  # a short id
        ["leaf", [b"\1" * 32], [b"x"], 0],  # an extra field
    ]
    for raw in bad_values:
        data = msgpack.packb(raw, use_bin_type=True)
        with pytest.raises(CorruptObject):
            decode(hash_bytes(data), data)
    value = msgpack.packb({"role": "user"})
    honest = ListNode(0, (hash_bytes(DOC_PREFIX + value),), (), (value,))
    assert leaf_problems(honest) == []
    lying = ListNode(0, (b"\7" * 32,), (), (value,))
    assert leaf_problems(lying) == [f"entry 0 ({'07' * 32}) does not hash to its id"]


def test_a_compression_bomb_in_a_repository_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Repo.init(tmp_path / "repo") as repo:
        messages = [{"role": "user", "content": "words " * 50 + str(i)} for i in range(40)]
        repo.commit({"messages": messages})
        leaves = [
            object_id
            for object_id, data in repo.store.get_many(
                [i for i, _ in repo.store.iter_objects()]
            ).items()
            if is_packed(data) and kind_of(decode(object_id, data)) == "leaf"
        ]
    assert leaves
    bomb = zstandard.ZstdCompressor().compress(b"\0" * 10_000_000)
    db = sqlite3.connect(tmp_path / "repo" / DB_FILENAME)
    db.execute("UPDATE objects SET data = ? WHERE id = ?", (bomb, leaves[0]))
    db.commit()
    db.close()
    monkeypatch.setattr(compression, "MAX_EXPANDED", 1_000_000)
    with Repo.open(tmp_path / "repo") as repo:
        with pytest.raises(CorruptObject, match="would expand"):
            repo.show("main")
        report = repo.fsck()
        assert not report.ok
        assert any(leaves[0].hex() in p and "would expand" in p for p in report.problems)


def in_a_fresh_process(code: str, folder: Path) -> str:
    """What ``code`` prints in a new Python process (no dictionary registered yet)."""
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def _chatty(i: int) -> dict[str, Any]:
    words = ["alpha", "beta", "gamma", "delta", "tool", "result", "weather", "Paris", "Oslo"]
    text = " ".join(words[(i * 7 + k) % len(words)] for k in range(60))
    return {"role": "user" if i % 2 else "assistant", "content": [{"text": f"{i}: {text}"}]}


def _train(repo: Repo, start: int = 0, count: int = 600) -> list[dict[str, Any]]:
    agent: dict[str, Any] = {"messages": []}
    for i in range(start, start + count, 2):
        agent["messages"] += [_chatty(i), _chatty(i + 1)]
        repo.commit(agent, f"turn {i}")
    return agent["messages"]


def test_a_trained_dictionary_is_found_by_a_fresh_process(tmp_path: Path) -> None:
    with Repo.init(tmp_path / "repo") as repo:
        messages = _train(repo)
        dictionary = repo.store.config_get("core.zstd-dictionary")
        assert dictionary is not None
        stored = repo.store.get_many([i for i, _ in repo.store.iter_objects()])
        framed = [d for d in stored.values() if compression.frame_dictionary(d)]
        assert framed  # objects written after training name the dictionary
    code = (
        "import sys, statevcs\n"
        "with statevcs.Repo.open(sys.argv[1]) as repo:\n"
        "    print(len(repo.show('main').messages), repo.fsck().ok)\n"
    )
    assert in_a_fresh_process(code, tmp_path / "repo").split() == [str(len(messages)), "True"]


def test_gc_keeps_every_dictionary_even_one_no_config_names(tmp_path: Path) -> None:
    with Repo.init(tmp_path / "repo") as repo:
        _train(repo)
        named = repo.store.config_get("core.zstd-dictionary")
        assert named is not None
        # A dictionary another handle trained at the same moment (its config key lost).
        spare = zstandard.train_dictionary(4096, [msgpack.packb(_chatty(i)) for i in range(400)])
        spare_id, spare_bytes = encode_with_id(ZstdDictionary(spare.as_bytes()))
        repo.store.put_many({spare_id: spare_bytes})
        repo.gc("0", expire_reflog="0")
        present = repo.store.has_many([from_hex(named), spare_id])
        assert present == {from_hex(named), spare_id}
        assert repo.fsck().ok


@pytest.mark.parametrize(
    "samples",
    [
        [b"x"] * 1000,
        [b"a" * 200] * 200,
        [b"hello world %d" % (i % 2) for i in range(2000)],
        [msgpack.packb({"role": "user", "content": "ping"})] * 3000,
    ],
    ids=["one byte", "one run", "two strings", "a heartbeat message"],
)
def test_repetitive_samples_train_no_dictionary_gc_could_not_tell_apart(
    samples: list[bytes],
) -> None:
    """zstd trains 120-240 byte dictionaries on these; gc keeps unreachable dictionaries (a
    racing writer's) by their size from MIN_DICTIONARY_SIZE up, so none smaller is ever used."""
    for for_commits in (False, True):
        assert compression.train_dictionary(samples, 4096, for_commits=for_commits) is None


@settings(max_examples=40, deadline=None)
@given(
    words=st.lists(st.binary(min_size=1, max_size=12), min_size=1, max_size=6),
    count=st.integers(min_value=50, max_value=800),
)
def test_every_trained_dictionary_is_one_gc_recognizes(words: list[bytes], count: int) -> None:
    samples = [words[i % len(words)] * (1 + i % 7) for i in range(count)]
    trained = compression.train_dictionary(samples, 4096)
    assert trained is None or len(trained) >= compression.MIN_DICTIONARY_SIZE


def test_objects_compressed_with_a_dictionary_need_it(tmp_path: Path) -> None:
    with Repo.init(tmp_path / "repo") as repo:
        _train(repo)
        named = repo.store.config_get("core.zstd-dictionary")
        assert named is not None
    db = sqlite3.connect(tmp_path / "repo" / DB_FILENAME)
    db.execute("DELETE FROM config WHERE key LIKE 'core.zstd-dict%'")
    db.commit()
    db.close()
    code = (
        "import sys, statevcs\n"
        "try:\n"
        "    statevcs.Repo.open(sys.argv[1]).show('main')\n"
        "except statevcs.CorruptObject as exc:\n"
        "    print(exc)\n"
    )
    said = in_a_fresh_process(code, tmp_path / "repo")
    assert "zstd dictionary" in said and "restore the repository's config" in said


def _with_declared_size(frame: bytes, size: int) -> bytes:
    """``frame`` (single-segment, 2-byte size field) with another declared content size."""
    descriptor = frame[4]
    assert descriptor >> 6 == 1 and descriptor & 0x20  # 2-byte size field, single segment
    return frame[:5] + (size - 256).to_bytes(2, "little") + frame[7:]


def test_a_frame_that_declares_another_size_than_it_holds_is_refused() -> None:
    """The declared size bounds the output: a frame holding more or less is damaged."""
    plain = b"abcdefgh" * 500
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(plain)
    assert unpack(ANY_ID, frame) == plain
    for declared in (300, len(plain) - 1, len(plain) + 1, 60_000):
        with pytest.raises(CorruptObject, match=r"damaged|another size"):
            unpack(ANY_ID, _with_declared_size(frame, declared))
