"""The git mirror's JSON writer: the bytes of ``json.dumps``'s pretty layout, whatever the value."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statevcs.errors import GitMirrorError
from statevcs.mirror.git.jsonmap import MAX_DEPTH, dump_json, to_json

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()  # nan and infinities included: both writers must refuse them alike
    | st.text()  # lone surrogates included
)
keys = st.text() | st.integers() | st.floats() | st.booleans() | st.none()
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(keys, inner, max_size=4)
    ),
    max_leaves=30,
)


def reference(value: Any, sort_keys: bool) -> bytes | type[Exception]:
    """What the mirror wrote before the fast writer: ``json.dumps`` with its fixed layout."""
    try:
        text = json.dumps(
            value,
            indent=2,
            separators=(",", ": "),
            ensure_ascii=False,
            allow_nan=False,
            sort_keys=sort_keys,
        )
        return (text + "\n").encode("utf-8")
    except RecursionError:
        return GitMirrorError
    except (ValueError, TypeError):
        return GitMirrorError


def written(value: Any, sort_keys: bool) -> bytes | type[Exception]:
    try:
        return dump_json(value, sort_keys=sort_keys)
    except GitMirrorError:
        return GitMirrorError


@settings(max_examples=400, deadline=None)
@given(value=values, sort_keys=st.booleans())
def test_dump_json_writes_what_json_dumps_writes(value: Any, sort_keys: bool) -> None:
    assert written(value, sort_keys) == reference(value, sort_keys)


@settings(max_examples=100, deadline=None)
@given(value=values)
def test_dump_json_of_mapped_values_matches_json_dumps(value: Any) -> None:
    # What an export really writes: values mapped by to_json first (markers for bytes, NaN...).
    try:
        mapped = to_json(value)
    except GitMirrorError:
        return
    assert written(mapped, False) == reference(mapped, False)
    assert isinstance(written(mapped, False), bytes)


@pytest.mark.parametrize("depth", [1, 63, 64, 65, 200, MAX_DEPTH])
def test_deep_values_are_written_as_json_dumps_writes_them(depth: int) -> None:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    assert written(value, False) == reference(value, False)


def test_refusals_name_the_problem() -> None:
    for bad in ({"x": math.nan}, [math.inf], {"k": object()}, {(1, 2): 1}, "\ud800"):
        with pytest.raises(GitMirrorError, match="cannot be written as JSON"):
            dump_json(bad)
    with pytest.raises(GitMirrorError, match="cannot be written as JSON"):
        dump_json({1: 1, "a": 2}, sort_keys=True)  # keys that do not compare
