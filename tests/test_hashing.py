"""Object ids: blake3-256 of the encoded bytes, hex forms and prefix ranges."""

from __future__ import annotations

import pytest
from blake3 import blake3
from hypothesis import given
from hypothesis import strategies as st

from statevcs.hashing import HEX_SIZE, ID_SIZE, from_hex, hash_bytes, prefix_range, to_hex


@given(st.binary(max_size=2048))
def test_ids_are_blake3_digests_and_round_trip_through_hex(data: bytes) -> None:
    object_id = hash_bytes(data)
    assert object_id == blake3(data).digest() and len(object_id) == ID_SIZE
    text = to_hex(object_id)
    assert len(text) == HEX_SIZE and text == text.lower()
    assert from_hex(text) == object_id


@pytest.mark.parametrize("text", ["", "ab", "a" * 63, "a" * 65])
def test_from_hex_refuses_anything_but_a_full_id(text: str) -> None:
    with pytest.raises(ValueError, match="64 hex"):
        from_hex(text)


@given(st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=HEX_SIZE))
def test_a_prefix_range_holds_exactly_the_ids_that_start_with_it(prefix: str) -> None:
    low, high = prefix_range(prefix)
    assert to_hex(low).startswith(prefix.lower()) and to_hex(high).startswith(prefix.lower())
    assert low <= high
