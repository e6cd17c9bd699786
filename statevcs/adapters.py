"""Adapters turn live objects into :class:`Snapshot` objects and back.

The repository picks an adapter by the object's type. Plain ``dict`` and ``Snapshot`` are
built in; framework integrations (``statevcs.integrations.strands``, ...) register theirs when
imported, and are imported lazily the first time the repository meets one of their objects, so
``import statevcs`` never imports a framework.
"""

from __future__ import annotations

import importlib
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

from .errors import UnsupportedObject
from .snapshot import Snapshot

MESSAGES_KEY = "messages"
_NO_MESSAGES = "statevcs.no_messages_key"
_NULL_MESSAGES = "statevcs.messages_null"


@runtime_checkable
class Adapter(Protocol):
    """Captures a live object as a :class:`Snapshot` and restores one into it in place.

    Adapters may also offer ``unchanged_prefix(obj) -> int | None`` (how many leading messages
    are known unchanged since the last ``mark_synced(obj)``) and ``mark_synced(obj)``, which the
    repository calls after each commit or checkout; then a commit re-encodes only new messages.
    During every call :func:`current_repo` names the repository doing the work.
    """

    kind: str

    def capture(self, obj: Any) -> Snapshot:
        """Return the object's current snapshot (it may reference live message dicts)."""
        ...

    def restore(self, obj: Any, snapshot: Snapshot) -> None:
        """Make the object equal to ``snapshot``, in place, keeping its transient keys."""
        ...


_current_repo: ContextVar[Any] = ContextVar("statevcs_current_repo", default=None)


def current_repo() -> Any:
    """Return the ``Repo`` committing or checking out through the adapter right now, or ``None``.

    Adapters that keep per-repository state (such as which messages a repository already holds,
    for ``unchanged_prefix``) key it by this object.
    """
    return _current_repo.get()


@contextmanager
def acting_for(repo: Any) -> Iterator[None]:
    """Make :func:`current_repo` return ``repo`` inside the ``with`` block (the repo's job)."""
    token = _current_repo.set(repo)
    try:
        yield
    finally:
        _current_repo.reset(token)


_registry: dict[type | str, Adapter] = {}
_lazy_integrations = {"strands": "statevcs.integrations.strands"}
_lock = threading.RLock()


def register_adapter(target: type | str, adapter: Adapter) -> None:
    """Use ``adapter`` for objects of type ``target`` (a class or ``"module.QualName"``)."""
    with _lock:
        _registry[target] = adapter


def _lookup(cls: type) -> Adapter | None:
    for klass in cls.__mro__:
        adapter = _registry.get(klass) or _registry.get(f"{klass.__module__}.{klass.__qualname__}")
        if adapter is not None:
            return adapter
    return None


def adapter_for(obj: Any) -> Adapter:
    """Return the adapter for ``obj``, importing a framework integration if needed."""
    cls = type(obj)
    adapter = _lookup(cls)
    if adapter is not None:
        return adapter
    for klass in cls.__mro__:
        root = klass.__module__.split(".", 1)[0]
        module = _lazy_integrations.get(root)
        if module is not None:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise UnsupportedObject(
                    f"cannot load the statevcs integration for {root} ({exc}); "
                    f"install it with `pip install 'statevcs[{root}]'`"
                ) from exc
            adapter = _lookup(cls)
            if adapter is not None:
                return adapter
    raise UnsupportedObject(
        f"statevcs does not know how to capture a {cls.__module__}.{cls.__qualname__}; "
        "pass a dict or a statevcs.Snapshot, or register an adapter with "
        "statevcs.register_adapter(YourClass, adapter)"
    )


# --- transient keys -----------------------------------------------------------

_transient: dict[int, tuple[Any, set[str]]] = {}


def transient(obj: Any, *keys: str) -> None:
    """Mark state keys of ``obj`` as runtime-only: never committed, kept across checkouts.

    Use it for values such as database connections or API clients. For objects that cannot be
    weakly referenced (a plain ``dict``) statevcs keeps a reference to the object for as long as
    it has transient keys; call ``transient_clear(obj)`` to release it.
    """
    with _lock:
        entry = _transient.get(id(obj))
        if entry is None:
            key = id(obj)

            def forget(_ref: object, key: int = key) -> None:
                _transient.pop(key, None)

            try:
                holder: Any = weakref.ref(obj, forget)
            except TypeError:
                holder = obj
            entry = (holder, set())
            _transient[id(obj)] = entry
        entry[1].update(keys)


def transient_keys(obj: Any) -> frozenset[str]:
    """Return the state keys marked runtime-only on ``obj``."""
    entry = _transient.get(id(obj))
    if entry is None:
        return frozenset()
    holder, keys = entry
    target = holder() if isinstance(holder, weakref.ref) else holder
    return frozenset(keys) if target is obj else frozenset()


def transient_clear(obj: Any) -> None:
    """Forget every transient key of ``obj``."""
    with _lock:
        _transient.pop(id(obj), None)


# --- built-in adapters ----------------------------------------------------------


class DictAdapter:
    """Plain dicts: the ``"messages"`` list (when present) is the conversation, the rest state."""

    kind = "dict"

    def capture(self, obj: dict[str, Any]) -> Snapshot:
        """Split the dict into messages and state, leaving out transient keys."""
        skip = transient_keys(obj)
        messages = obj.get(MESSAGES_KEY)
        extras: dict[str, Any] = {}
        if messages is None:
            messages = []
            # Absent and None are different states: both come back as they were.
            extras[_NO_MESSAGES if MESSAGES_KEY not in obj else _NULL_MESSAGES] = True
        elif not isinstance(messages, list):
            raise UnsupportedObject(
                f"state['messages'] is a {type(messages).__name__}; it must be a list of "
                "message dicts (rename the key if it holds something else)"
            )
        state = {k: v for k, v in obj.items() if k != MESSAGES_KEY and k not in skip}
        return Snapshot.model_construct(
            kind=self.kind, messages=messages, state=state, extras=extras
        )

    def restore(self, obj: dict[str, Any], snapshot: Snapshot) -> None:
        """Replace the dict's contents with the snapshot's, keeping transient keys."""
        keep = {k: obj[k] for k in transient_keys(obj) if k in obj}
        obj.clear()
        if snapshot.extras.get(_NULL_MESSAGES):
            obj[MESSAGES_KEY] = None
        elif not snapshot.extras.get(_NO_MESSAGES):
            obj[MESSAGES_KEY] = snapshot.messages
        obj.update(snapshot.state)
        obj.update(keep)


class SnapshotAdapter:
    """``statevcs.Snapshot`` objects are committed as they are."""

    kind = "snapshot"

    def capture(self, obj: Snapshot) -> Snapshot:
        """Return the snapshot itself, without transient state keys."""
        skip = transient_keys(obj)
        if not skip:
            return obj
        state = {k: v for k, v in obj.state.items() if k not in skip}
        return Snapshot.model_construct(
            kind=obj.kind, messages=obj.messages, state=state, extras=obj.extras
        )

    def restore(self, obj: Snapshot, snapshot: Snapshot) -> None:
        """Overwrite the snapshot's fields in place, keeping transient state keys."""
        keep = {k: obj.state[k] for k in transient_keys(obj) if k in obj.state}
        obj.kind = snapshot.kind
        obj.messages = snapshot.messages
        obj.state = {**snapshot.state, **keep}
        obj.extras = snapshot.extras


register_adapter(dict, DictAdapter())
register_adapter(Snapshot, SnapshotAdapter())

__all__ = [
    "Adapter",
    "DictAdapter",
    "SnapshotAdapter",
    "acting_for",
    "adapter_for",
    "current_repo",
    "register_adapter",
    "transient",
    "transient_clear",
    "transient_keys",
]
