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
    try:
        first, second = Repo.init("memory://"), Repo.init("memory://")
        probe = Probe()
        first.commit(probe)
        second.commit(probe)
        second.checkout(probe, "main")
        assert seen == [first, second, second]
        assert statevcs.adapters.current_repo() is None
    finally:
        statevcs.unregister_adapter(Probe)  # leave the process-wide registry as it was
    with pytest.raises(statevcs.UnsupportedObject):
        Repo.init().commit(Probe())


class _Counter:
    """A live object: one integer."""

    def __init__(self) -> None:
        self.n = 0


class _CounterAdapter:
    kind = "test.counter"

    def __init__(self, key: str = "n") -> None:
        self.key = key

    def capture(self, obj: _Counter) -> statevcs.Snapshot:
        return statevcs.Snapshot(kind=self.kind, state={self.key: obj.n})

    def restore(self, obj: _Counter, snapshot: statevcs.Snapshot) -> None:
        obj.n = snapshot.state[self.key]


def test_a_repository_can_override_an_adapter_for_itself_only() -> None:
    statevcs.register_adapter(_Counter, _CounterAdapter())
    try:
        own = statevcs.AdapterRegistry(parent=statevcs.ADAPTERS)
        own.register(_Counter, _CounterAdapter(key="count"))
        special = Repo.init(adapters=own)
        plain = Repo.init()
        counter = _Counter()
        counter.n = 3
        special.commit(counter)
        plain.commit(counter)
        assert special.show("main").state == {"count": 3}
        assert plain.show("main").state == {"n": 3}
        own.unregister(_Counter)  # falls back to the process-wide adapter
        assert special.adapters.lookup(counter).kind == "test.counter"
    finally:
        statevcs.unregister_adapter(_Counter)


def test_registering_something_that_is_not_an_adapter_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="capture"):
        statevcs.register_adapter(_Counter, object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="target"):
        statevcs.register_adapter(42, _CounterAdapter())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="adapters"):
        Repo.init(adapters={})  # type: ignore[arg-type]


def test_integrations_are_declared_through_entry_points() -> None:
    from importlib import metadata

    names = {e.name: e.value for e in metadata.entry_points(group="statevcs.adapters")}
    assert names.get("strands") == "statevcs.integrations.strands"
