"""Adapters turn live objects into :class:`Snapshot` objects and back.

The repository picks an adapter by the object's type. Plain ``dict`` and ``Snapshot`` are
built in; framework integrations (``statevcs.integrations.strands``, ...) register theirs when
imported, and are imported lazily the first time the repository meets one of their objects, so
``import statevcs`` never imports a framework.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from . import tracking
from .errors import CorruptObject, UnsupportedObject, install_hint
from .merge import MESSAGES_AT

if TYPE_CHECKING:
    from .snapshot import Snapshot

MESSAGES_KEY = "messages"
_NO_MESSAGES = "statevcs.no_messages_key"
_NULL_MESSAGES = "statevcs.messages_null"


@runtime_checkable
class Adapter(Protocol):
    """Captures a live object as a :class:`Snapshot` and restores one into it in place.

    During every call :func:`current_repo` names the repository doing the work.
    """

    kind: str

    def capture(self, obj: Any) -> Snapshot:
        """Return the object's current snapshot (it may reference live message dicts)."""
        ...

    def restore(self, obj: Any, snapshot: Snapshot) -> None:
        """Make the object equal to ``snapshot``, in place, keeping its transient keys."""
        ...


@runtime_checkable
class IncrementalAdapter(Adapter, Protocol):
    """An adapter that knows which leading messages are unchanged since the last sync.

    The repository calls :meth:`mark_synced` after each commit or checkout of ``obj``; then a
    commit re-encodes only the messages after :meth:`unchanged_prefix`.
    """

    def unchanged_prefix(self, obj: Any) -> int | None:
        """Return how many leading messages are unchanged since ``mark_synced`` (or ``None``)."""
        ...

    def mark_synced(self, obj: Any) -> None:
        """Record that ``obj`` now equals what the repository stored or restored."""
        ...


def message_decoder(adapter: Adapter, obj: Any) -> tracking.TrackedDecoder | None:
    """The decoder a checkout into ``obj`` builds its messages with, if its adapter has one.

    An adapter that puts the restored messages in a tracked list defines
    ``message_decoder(obj)`` returning a :class:`~statevcs.tracking.TrackedDecoder`, so the
    messages are decoded straight into tracked copies (:func:`tracking.new_tracked` then takes
    them as they are); one without it gets plain values.
    """
    make = getattr(adapter, "message_decoder", None)
    return None if make is None else make(obj)


_INCREMENTAL: dict[type, bool] = {}


def is_incremental(adapter: Adapter) -> bool:
    """Whether ``adapter`` is an :class:`IncrementalAdapter` (cached per class: a protocol
    ``isinstance`` check costs tens of microseconds, too much for every commit)."""
    cls = type(adapter)
    known = _INCREMENTAL.get(cls)
    if known is None:
        known = _INCREMENTAL[cls] = isinstance(adapter, IncrementalAdapter)
    return known


_current_repo: ContextVar[object | None] = ContextVar("statevcs_current_repo", default=None)


def current_repo() -> object | None:
    """Return the ``Repo`` committing or checking out through the adapter right now, or ``None``.

    Adapters that keep per-repository state (such as which messages a repository already holds,
    for ``unchanged_prefix``) key it by this object.
    """
    return _current_repo.get()


@contextmanager
def acting_for(repo: object) -> Iterator[None]:
    """Make :func:`current_repo` return ``repo`` inside the ``with`` block (the repo's job)."""
    token = _current_repo.set(repo)
    try:
        yield
    finally:
        _current_repo.reset(token)


_current_sync: ContextVar[object | None] = ContextVar("statevcs_current_sync", default=None)


def current_sync() -> object | None:
    """Return the commit the repository last synced the object with, during ``unchanged_prefix``
    and ``mark_synced`` (an opaque token; ``None`` outside them).

    An incremental adapter that keeps its record on something other than the object itself
    (the built-in dict adapter keeps it on the messages list) compares it with the token it
    saw at ``mark_synced``, so that it never vouches for messages synced as another commit.
    """
    return _current_sync.get()


@contextmanager
def syncing(commit: object) -> Iterator[None]:
    """Make :func:`current_sync` return ``commit`` inside the ``with`` block (the repo's job)."""
    token = _current_sync.set(commit)
    try:
        yield
    finally:
        _current_sync.reset(token)


ENTRY_POINT_GROUP = "statevcs.adapters"
"""Entry-point group through which integrations declare their adapters.

The entry point's name is the top-level module of the framework (``strands``); its value is a
module that registers adapters when imported, or a callable taking the registry. The registry
loads it the first time it meets an object from that framework, so ``import statevcs`` never
imports a framework. statevcs's own integrations are declared the same way (pyproject.toml).
"""

Target = type | str
"""What an adapter is registered for: a class, or ``"module.QualName"`` (no import needed)."""


class AdapterRegistry:
    """Maps object types to adapters; a registry with a ``parent`` falls back to it.

    The process-wide registry is :data:`ADAPTERS`; a repository can have its own child
    registry (``Repo.init(..., adapters=AdapterRegistry(parent=ADAPTERS))``) to override an
    adapter for its objects only.
    """

    def __init__(self, parent: AdapterRegistry | None = None, *, entry_points: bool = False):
        self._parent = parent
        self._adapters: dict[Target, Adapter] = {}
        self._entry_points = entry_points
        self._loaded: set[str] = set()
        self._lock = threading.RLock()

    def register(self, target: Target, adapter: Adapter) -> None:
        """Use ``adapter`` for objects of type ``target`` (and its subclasses)."""
        if not isinstance(target, (type, str)):
            raise TypeError(f"target must be a class or a 'module.QualName' string, got {target!r}")
        if not isinstance(adapter, Adapter):
            raise TypeError(
                f"adapter must have kind, capture(obj) and restore(obj, snapshot); got "
                f"{type(adapter).__name__}"
            )
        with self._lock:
            self._adapters[target] = adapter

    def unregister(self, target: Target) -> None:
        """Forget the adapter registered for ``target`` here (``KeyError`` if there is none)."""
        with self._lock:
            del self._adapters[target]

    def lookup(self, obj: object) -> Adapter:
        """Return the adapter for ``obj``, loading a framework integration if one is declared."""
        cls = type(obj)
        adapter = self._find(cls)
        if adapter is not None:
            return adapter
        # A list (a message history) belongs to the framework of its items.
        item = type(obj[0]) if isinstance(obj, list) and obj else None
        if self._load_integrations(cls) | (item is not None and self._load_integrations(item)):
            adapter = self._find(cls)
            if adapter is not None:
                return adapter
        raise UnsupportedObject(
            f"statevcs does not know how to capture a {cls.__module__}.{cls.__qualname__}; "
            "pass a dict or a statevcs.Snapshot, or register an adapter with "
            "statevcs.register_adapter(YourClass, adapter)"
        )

    def _find(self, cls: type) -> Adapter | None:
        for klass in cls.__mro__:
            adapter = self._adapters.get(klass) or self._adapters.get(
                f"{klass.__module__}.{klass.__qualname__}"
            )
            if adapter is not None:
                return adapter
        return self._parent._find(cls) if self._parent is not None else None

    def _load_integrations(self, cls: type) -> bool:
        if self._parent is not None:
            return self._parent._load_integrations(cls)
        if not self._entry_points:
            return False
        roots = {klass.__module__.split(".", 1)[0] for klass in cls.__mro__}
        loaded = False
        from importlib import metadata  # loads email and zipfile: only when needed

        for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if entry.name not in roots or entry.name in self._loaded:
                continue
            with self._lock:
                self._loaded.add(entry.name)
            try:
                target = entry.load()
            except ImportError as exc:
                raise UnsupportedObject(
                    f"cannot load the statevcs integration for {entry.name} ({exc}); "
                    f"{install_hint(entry.name.replace('_', '-'))}"
                ) from exc
            if callable(target):
                target(self)
            loaded = True
        return loaded


ADAPTERS = AdapterRegistry(entry_points=True)
"""The process-wide adapter registry (integrations register here through entry points)."""


def register_adapter(target: Target, adapter: Adapter) -> None:
    """Use ``adapter`` for objects of type ``target`` (a class or ``"module.QualName"``)."""
    ADAPTERS.register(target, adapter)


def unregister_adapter(target: Target) -> None:
    """Forget the process-wide adapter for ``target``."""
    ADAPTERS.unregister(target)


def adapter_for(obj: object) -> Adapter:
    """Return the process-wide adapter for ``obj``, loading an integration if needed."""
    return ADAPTERS.lookup(obj)


# --- transient keys -----------------------------------------------------------

# Keyed by id(): a weakly referenceable object is held through a weak reference whose callback
# drops the entry when the object dies; any other object (a plain dict) is held strongly until
# transient_clear(obj), because an id() may be reused once its object is gone.
_transient: dict[int, tuple[Any, set[str]]] = {}
_lock = threading.RLock()


def transient(obj: Any, *keys: str) -> None:
    """Mark state keys of ``obj`` as runtime-only: never committed, kept across checkouts.

    Use it for values such as database connections or API clients. An object that can be
    weakly referenced (an agent, a ``Snapshot``) is not kept alive by this: its transient keys
    are forgotten when it is collected. A plain ``dict`` cannot be weakly referenced, so
    statevcs keeps a reference to it for as long as it has transient keys: call
    ``transient_clear(obj)`` when you are done with it to release it.
    """
    with _lock:
        entry = _transient.get(id(obj))
        if entry is not None and _target(entry[0]) is not obj:
            entry = None  # a dead object's id, reused
        if entry is None:
            key = id(obj)

            def forget(_ref: object, key: int = key) -> None:
                with _lock:
                    current = _transient.get(key)
                    if current is not None and current[0] is _ref:
                        del _transient[key]

            try:
                holder: Any = weakref.ref(obj, forget)
            except TypeError:
                holder = obj
            entry = (holder, set())
            _transient[id(obj)] = entry
        entry[1].update(keys)


def _target(holder: Any) -> Any:
    return holder() if isinstance(holder, weakref.ref) else holder


def transient_keys(obj: Any) -> frozenset[str]:
    """Return the state keys marked runtime-only on ``obj``."""
    entry = _transient.get(id(obj))
    if entry is None:
        return frozenset()
    holder, keys = entry
    return frozenset(keys) if _target(holder) is obj else frozenset()


def transient_clear(obj: Any) -> None:
    """Forget every transient key of ``obj`` (and release it, for a plain ``dict``)."""
    with _lock:
        entry = _transient.get(id(obj))
        if entry is not None and _target(entry[0]) is obj:
            del _transient[id(obj)]


# --- built-in adapters ----------------------------------------------------------


class DictAdapter:
    """Plain dicts: the ``"messages"`` list (when present) is the conversation, the rest state.

    The messages are yours: statevcs never swaps the list or the message dicts you put in the
    dict (a reference you kept keeps reaching what is committed), so each commit encodes and
    hashes every message (the tree is still spliced, so only changed paths are written). For
    commits that cost O(new messages), opt in: ``obj["messages"] =
    statevcs.tracked_messages(...)`` -- a :class:`~statevcs.tracking.TrackedMessages` list that
    records changes, and whose message dicts are replaced by tracked copies when committed
    (keep working through the list, not through references to messages you appended). A
    checkout keeps the kind of list the dict had.
    """

    kind = "dict"

    def capture(self, obj: dict[str, Any]) -> Snapshot:
        """Split the dict into messages and state, leaving out transient keys."""
        skip = transient_keys(obj)
        messages = obj.get(MESSAGES_KEY)
        extras: dict[str, Any] = {}
        if messages is None:
            messages = []
            tracking.begin(obj, current_repo(), [])
            # Absent and None are different states: both come back as they were.
            extras[_NO_MESSAGES if MESSAGES_KEY not in obj else _NULL_MESSAGES] = True
        elif not isinstance(messages, list):
            raise UnsupportedObject(
                f"state['messages'] is a {type(messages).__name__}; it must be a list of "
                "message dicts (rename the key if it holds something else)"
            )
        elif isinstance(messages, tracking.TrackedMessages):
            tracking.begin(obj, current_repo(), [messages], eager=False)
        state = {k: v for k, v in obj.items() if k != MESSAGES_KEY and k not in skip}
        if MESSAGES_KEY in obj and next(iter(obj)) != MESSAGES_KEY:
            # Among the committed keys ("messages" counts even when marked transient).
            position = [k for k in obj if k == MESSAGES_KEY or k not in skip].index(MESSAGES_KEY)
            if position:  # a transient key first is not a position to keep
                # First: the adapter's own extras stay sorted (no key order to record).
                extras = {MESSAGES_AT: position, **extras}
        from .model import Snapshot  # pydantic loads with the first capture

        return Snapshot.model_construct(
            kind=self.kind, messages=messages, state=state, extras=extras
        )

    def message_decoder(self, obj: dict[str, Any]) -> tracking.TrackedDecoder | None:
        """Tracked messages come back tracked (see :func:`message_decoder`)."""
        if isinstance(obj.get(MESSAGES_KEY), tracking.TrackedMessages):
            return tracking.TrackedDecoder()
        return None

    def restore(self, obj: dict[str, Any], snapshot: Snapshot) -> None:
        """Replace the dict's contents with the snapshot's, keeping transient keys.

        Keys come back in the order they were committed; transient keys follow them.
        """
        keep = {k: obj[k] for k in transient_keys(obj) if k in obj}
        opted_in = isinstance(obj.get(MESSAGES_KEY), tracking.TrackedMessages)
        state = list(snapshot.state.items())
        position = _messages_position(snapshot, len(state))
        obj.clear()
        obj.update(state[:position])
        if snapshot.extras.get(_NULL_MESSAGES):
            obj[MESSAGES_KEY] = None
        elif snapshot.extras.get(_NO_MESSAGES):
            pass
        elif opted_in:
            messages = tracking.new_tracked(snapshot.messages)
            obj[MESSAGES_KEY] = messages
            tracking.restored(obj, current_repo(), [messages])
        else:
            obj[MESSAGES_KEY] = snapshot.messages
        obj.update(state[position:])
        obj.update(keep)

    def unchanged_prefix(self, obj: dict[str, Any]) -> int | None:
        """Leading messages unchanged since the last commit or checkout (``None``: all new)."""
        if not isinstance(obj.get(MESSAGES_KEY), tracking.TrackedMessages):
            return None
        return tracking.unchanged_prefix(obj, current_repo(), current_sync())

    def mark_synced(self, obj: dict[str, Any]) -> None:
        """Record a tracked ``obj["messages"]`` as what the repository now holds."""
        messages = obj.get(MESSAGES_KEY)
        if isinstance(messages, tracking.TrackedMessages):
            tracking.finish(
                obj,
                current_repo(),
                [messages],
                lambda _index, tracked: obj.__setitem__(MESSAGES_KEY, tracked),
                commit=current_sync(),
            )


def _messages_position(snapshot: Snapshot, keys: int) -> int:
    """How many state keys came before ``"messages"`` in a committed dict (0 if not recorded).

    A place past the last key (a state key dropped by a commit made with git, say) puts
    ``"messages"`` last.
    """
    position = snapshot.extras.get(MESSAGES_AT, 0)
    if type(position) is not int or position < 0:
        raise CorruptObject(
            "(snapshot)",
            f"extras[{MESSAGES_AT!r}] should be a position among the {keys} state keys, "
            f"found {position!r:.40}; the commit was not written by statevcs's dict adapter",
        )
    return min(position, keys)


class SnapshotAdapter:
    """``statevcs.Snapshot`` objects are committed as they are.

    Like :class:`DictAdapter`: incremental when ``obj.messages`` is a
    :class:`~statevcs.tracking.TrackedMessages` list (``statevcs.tracked_messages(...)``);
    otherwise every message is encoded and nothing of yours is swapped.
    """

    kind = "snapshot"

    def capture(self, obj: Snapshot) -> Snapshot:
        """Return the snapshot itself, without transient state keys."""
        if isinstance(obj.messages, tracking.TrackedMessages):
            tracking.begin(obj, current_repo(), [obj.messages], eager=False)
        skip = transient_keys(obj)
        if not skip:
            return obj
        state = {k: v for k, v in obj.state.items() if k not in skip}
        from .model import Snapshot

        return Snapshot.model_construct(
            kind=obj.kind, messages=obj.messages, state=state, extras=obj.extras
        )

    def message_decoder(self, obj: Snapshot) -> tracking.TrackedDecoder | None:
        """Tracked messages come back tracked (see :func:`message_decoder`)."""
        if isinstance(obj.messages, tracking.TrackedMessages):
            return tracking.TrackedDecoder()
        return None

    def restore(self, obj: Snapshot, snapshot: Snapshot) -> None:
        """Overwrite the snapshot's fields in place, keeping transient state keys."""
        keep = {k: obj.state[k] for k in transient_keys(obj) if k in obj.state}
        obj.kind = snapshot.kind
        if isinstance(obj.messages, tracking.TrackedMessages):
            messages = tracking.new_tracked(snapshot.messages)
            obj.messages = messages
            tracking.restored(obj, current_repo(), [messages])
        else:
            obj.messages = snapshot.messages
        obj.state = {**snapshot.state, **keep}
        obj.extras = snapshot.extras

    def unchanged_prefix(self, obj: Snapshot) -> int | None:
        """Leading messages unchanged since the last commit or checkout (``None``: all new)."""
        if not isinstance(obj.messages, tracking.TrackedMessages):
            return None
        return tracking.unchanged_prefix(obj, current_repo(), current_sync())

    def mark_synced(self, obj: Snapshot) -> None:
        """Record a tracked ``obj.messages`` as what the repository now holds."""
        if isinstance(obj.messages, tracking.TrackedMessages):
            tracking.finish(
                obj,
                current_repo(),
                [obj.messages],
                lambda _index, tracked: setattr(obj, "messages", tracked),
                commit=current_sync(),
            )


def tracked_messages(messages: Iterable[Any] = ()) -> tracking.TrackedMessages:
    """Return a message list whose commits cost O(new messages) (an opt-in; see DictAdapter).

    The list holds tracked copies of ``messages``; messages appended later are replaced by
    tracked copies when committed, so keep working through the list.
    """
    return tracking.new_tracked(list(messages))


register_adapter(dict, DictAdapter())
# By name, so that registering it does not load pydantic (statevcs.model).
register_adapter("statevcs.snapshot.Snapshot", SnapshotAdapter())

__all__ = [
    "ADAPTERS",
    "ENTRY_POINT_GROUP",
    "Adapter",
    "AdapterRegistry",
    "DictAdapter",
    "IncrementalAdapter",
    "SnapshotAdapter",
    "acting_for",
    "adapter_for",
    "current_repo",
    "current_sync",
    "is_incremental",
    "syncing",
    "register_adapter",
    "transient",
    "unregister_adapter",
    "transient_clear",
    "tracked_messages",
    "transient_keys",
]
