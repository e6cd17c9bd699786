"""``compression.pack_many`` (the commit path's batch of objects) gives exactly the bytes
``pack`` gives each object, with and without a dictionary, for any bytes."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from statevcs.compression import (
    ZSTD_MAGIC,
    pack,
    pack_many,
    register_dictionary,
    train_dictionary,
    unpack,
)
from statevcs.hashing import hash_bytes


def _message(i: int) -> bytes:
    words = ["tool", "result", "assistant", "weather", "Paris", "forecast", "user", str(i)]
    return msgpack.packb(["doc", {"role": "user", "text": " ".join(words[i % 5 :] * 6)}])


@pytest.fixture(scope="module")
def dictionary() -> int:
    trained = train_dictionary([_message(i) for i in range(600)], size=4096)
    assert trained is not None
    return register_dictionary(trained)


objects = st.dictionaries(
    st.binary(min_size=32, max_size=32),
    st.one_of(
        st.binary(max_size=600),
        st.builds(lambda b: ZSTD_MAGIC + b, st.binary(max_size=300)),
        st.builds(_message, st.integers(0, 10_000)),
    ),
    max_size=12,
)


@given(objects)
def test_pack_many_is_pack_of_each(found: dict[bytes, bytes]) -> None:
    packed = pack_many(found)
    assert packed == {k: pack(v) for k, v in found.items()}
    assert list(packed) == list(found)
    assert all(unpack(k, packed[k]) == v for k, v in found.items())


@given(found=objects)
def test_pack_many_with_a_dictionary_is_pack_of_each(
    found: dict[bytes, bytes], dictionary: int
) -> None:
    packed = pack_many(found, dictionary)
    assert packed == {k: pack(v, dictionary) for k, v in found.items()}
    assert all(hash_bytes(unpack(k, packed[k])) == hash_bytes(v) for k, v in found.items())


def test_an_unregistered_dictionary_is_refused() -> None:
    with pytest.raises(ValueError, match="not registered"):
        pack_many({b"\x01" * 32: _message(1) * 4}, 0x7FFF_FFF1)
    assert pack_many({}, 0x7FFF_FFF1) == {}
