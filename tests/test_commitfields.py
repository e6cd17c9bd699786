"""Commit metadata: what commits reads back equal; refusals name the key and what to do."""

from __future__ import annotations

import enum
from types import MappingProxyType
from typing import Any

import pytest

from statevcs import Repo
from statevcs.commitfields import canonical_metadata
from statevcs.errors import SerializationError


class Mode(str, enum.Enum):  # noqa: UP042 - the mixin whose str() is not its text
    FAST = "fast"


class Level(enum.IntEnum):
    HIGH = 3


class Ratio(float):
    def __float__(self) -> float:
        return 0.0


def _unchanged(repo: Repo) -> Any:
    store = repo.store
    return store.list_refs(""), {i for i, _ in store.iter_objects()}


def test_an_int_too_long_for_text_is_a_serialization_error_and_nothing_is_written() -> None:
    # Issue 17: a raw ValueError (Python's limit on writing ints as text) escaped here.
    repo = Repo.init("memory://")
    repo.commit({"a": 1})
    before = _unchanged(repo)
    with pytest.raises(SerializationError) as raised:
        repo.commit({"a": 2}, metadata={"n": 10**5000})
    assert raised.value.path == "metadata['n']"
    assert "an integer of 16610 bits does not fit in 64 bits" in str(raised.value)
    assert "hex(n)" in str(raised.value)
    with pytest.raises(SerializationError, match="keys must be strings, found int <int object>"):
        repo.commit({"a": 2}, metadata={10**5000: 1})
    assert _unchanged(repo) == before


@pytest.mark.parametrize(
    ("metadata", "path", "fragment"),
    [
        ({"t": (1, 2)}, "metadata['t']", "a tuple would read back as a list"),
        ({"a": [{"b": ()}]}, "metadata['a'][0]['b']", "a tuple"),
        ({"n": 2**64}, "metadata['n']", "an integer of 65 bits"),
        ({"f": float("nan")}, "metadata['f']", "not a finite number"),
        ({"b": b"x"}, "metadata['b']", "a bytes is not JSON-compatible"),
        ({"s": "\ud800"}, "metadata['s']", "lone surrogate"),
        ({"d": {(1, 2): 1}}, "metadata['d']", "keys must be strings, found tuple (1, 2)"),
    ],
)
def test_metadata_that_would_not_read_back_equal_is_refused(
    metadata: dict[str, Any], path: str, fragment: str
) -> None:
    repo = Repo.init("memory://")
    before = _unchanged(repo)
    with pytest.raises(SerializationError) as raised:
        repo.commit({"a": 1}, metadata=metadata)
    assert raised.value.path == path
    assert fragment in str(raised.value)
    assert _unchanged(repo) == before


def test_subclasses_are_stored_as_their_own_value_not_their_str() -> None:
    # str(Mode.FAST) is "Mode.FAST": metadata used to store that instead of "fast".
    metadata = {
        "mode": Mode.FAST,
        "level": Level.HIGH,
        "ratio": Ratio(0.25),
        Mode.FAST: [Level.HIGH],
        "view": MappingProxyType({"k": 1}),
    }
    repo = Repo.init("memory://")
    commit = repo.commit({"a": 1}, metadata=metadata)
    stored = Repo(repo.store).get_commit(commit.id).metadata
    assert stored == {"fast": [3], "level": 3, "mode": "fast", "ratio": 0.25, "view": {"k": 1}}
    assert [type(v) for v in (stored["mode"], stored["level"], stored["ratio"])] == [
        str,
        int,
        float,
    ]
    assert all(type(k) is str for k in stored)
    assert stored == canonical_metadata(metadata) == metadata


class _OwnText(str):
    """A str whose equality is its identity: Python keeps it apart from the plain text."""

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


def test_metadata_keys_that_are_one_text_are_refused() -> None:
    # The copy looked each value up by the key's text: the plain key's value replaced the
    # subclass key's (silently), or a lone subclass key raised a raw KeyError.
    repo = Repo.init("memory://")
    before = _unchanged(repo)
    with pytest.raises(SerializationError, match="both the text 'a'") as caught:
        repo.commit({"messages": []}, metadata={"m": {_OwnText("a"): 1, "a": 2}})
    assert caught.value.path == "metadata['m']"
    assert _unchanged(repo) == before


def test_a_metadata_key_of_a_str_subclass_with_its_own_hash_is_stored_as_its_text() -> None:
    repo = Repo.init("memory://")
    repo.commit({"messages": []}, metadata={"m": {_OwnText("b"): 1}, _OwnText("z"): [2]})
    assert next(iter(repo.log())).metadata == {"m": {"b": 1}, "z": [2]}
