"""Adapters: the dict adapter, transient keys, unknown objects, the calling repository."""

from __future__ import annotations

from typing import Any

import pytest

import statevcs
from statevcs import Repo


def test_dict_without_messages_key_round_trips(repo: Repo) -> None:
    state: dict[str, Any] = {"a": 1}
    repo.commit(state)
    state["a"] = 2
    repo.commit(state)
    repo.checkout(state, "HEAD~1")
    assert state == {"a": 1}


def test_transient_keys_are_not_committed_and_survive_checkout(repo: Repo) -> None:
    connection = object()
    state: dict[str, Any] = {"messages": [], "n": 1, "db": connection}
    statevcs.transient(state, "db")
    repo.commit(state)
    state["n"] = 2
    repo.commit(state)
    assert "db" not in repo.show("main").state
    repo.checkout(state, "main~1")
    assert state["db"] is connection and state["n"] == 1
    statevcs.transient_clear(state)


def test_unsupported_object_has_a_clear_error(repo: Repo) -> None:
    with pytest.raises(statevcs.UnsupportedObject, match="register_adapter"):
        repo.commit(object())


def test_adapters_are_told_which_repository_calls_them() -> None:
    seen: list[object] = []

    class Probe:
        """A live object with nothing in it."""

    class ProbeAdapter:
        kind = "test.probe"

        def capture(self, obj: Probe) -> statevcs.Snapshot:
            seen.append(statevcs.adapters.current_repo())
            return statevcs.Snapshot.model_construct(
                kind=self.kind, messages=[], state={}, extras={}
            )

        def restore(self, obj: Probe, snapshot: statevcs.Snapshot) -> None:
            seen.append(statevcs.adapters.current_repo())

    statevcs.register_adapter(Probe, ProbeAdapter())
    first, second = Repo.init("memory://"), Repo.init("memory://")
    probe = Probe()
    first.commit(probe)
    second.commit(probe)
    second.checkout(probe, "main")
    assert seen == [first, second, second]
    assert statevcs.adapters.current_repo() is None
