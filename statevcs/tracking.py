"""Framework-neutral change tracking for live conversations (used by every built-in adapter).

After a commit or checkout, the adapter makes the live conversation a :class:`TrackedMessages`
list whose messages are :class:`TrackedDict`/:class:`TrackedList` copies (equal in content,
``isinstance`` of ``dict``/``list``). Every mutating method records, in O(1), the lowest message
position changed since each repository last synced the list; appending records nothing, because
it leaves the synced prefix alone. The next commit then vouches for
``min(lowest changed position, synced length)`` leading messages without looking at them, and
only the messages after that prefix are encoded, hashed and tracked: O(k + log n) per commit.

What is seen: appends, deletions, insertions, replacements, sorting, slicing assignments, and
in-place edits of any dict or list nested inside a tracked message (a dict or list put into one
is swapped for a tracked copy at the next commit, so that its own later edits are seen too).
What is not: a mutable object of another type nested in a message (msgpack refuses those
anyway), and edits made through a reference to the list that was replaced at the first commit,
or to a dict or list swapped since (see docs/concepts.md).
When the live list is replaced by another list, nothing is vouched for: the next commit
encodes every message (and the repository still reuses the stored tree after their common
prefix).
"""

from __future__ import annotations

import copy
import gc
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from .merge import same

UNCHANGED = 1 << 62
"""``dirty_from`` of a list with no change since the sync."""


class _Guard:
    """Reports in-place edits of one message to the list that holds it at ``index``."""

    __slots__ = ("edited", "index", "owner")

    def __init__(self, owner: weakref.ref[TrackedMessages], index: int) -> None:
        self.owner = owner
        self.index = index
        self.edited: dict[int, Any] | None = None
        """The containers of the message edited since the last sync (by ``id``)."""

    def touch(self, container: Any) -> None:
        edited = self.edited
        if edited is None:
            self.edited = {id(container): container}
        else:
            edited[id(container)] = container
        owner = self.owner()
        if owner is not None:
            owner._changed(self.index)


class TrackedDict(dict[Any, Any]):
    """A ``dict`` inside a tracked message that reports its edits (nested levels included).

    It behaves as a plain ``dict`` (``isinstance(x, dict)``, ``==``, JSON, msgpack); copies,
    deep copies and pickles of it are plain dicts.
    """

    __slots__ = ("_guard",)
    _guard: _Guard

    __hash__ = None

    def __setitem__(self, key: Any, value: Any) -> None:
        self._guard.touch(self)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self._guard.touch(self)
        dict.__delitem__(self, key)

    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[misc]
        self._guard.touch(self)
        dict.update(self, other)
        return self

    def clear(self) -> None:
        """Remove every item."""
        self._guard.touch(self)
        dict.clear(self)

    def pop(self, *args: Any) -> Any:
        """Remove a key and return its value."""
        self._guard.touch(self)
        return dict.pop(self, *args)

    def popitem(self) -> tuple[Any, Any]:
        """Remove and return the last item."""
        self._guard.touch(self)
        return dict.popitem(self)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        """Return ``self[key]``, inserting ``default`` first if missing."""
        if key not in self:
            self._guard.touch(self)
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Update from a mapping or pairs."""
        self._guard.touch(self)
        dict.update(self, *args, **kwargs)

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        memo[id(self)] = result
        for key, value in self.items():
            result[copy.deepcopy(key, memo)] = copy.deepcopy(value, memo)
        return result

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class TrackedList(list[Any]):
    """A ``list`` inside a tracked message that reports its edits (see :class:`TrackedDict`)."""

    __slots__ = ("_guard",)
    _guard: _Guard

    __hash__ = None

    def __setitem__(self, index: Any, value: Any) -> None:
        self._guard.touch(self)
        list.__setitem__(self, index, value)

    def __delitem__(self, index: Any) -> None:
        self._guard.touch(self)
        list.__delitem__(self, index)

    def __iadd__(self, other: Any) -> TrackedList:  # type: ignore[misc]
        self._guard.touch(self)
        list.extend(self, other)
        return self

    def __imul__(self, count: Any) -> TrackedList:  # type: ignore[misc]
        self._guard.touch(self)
        list.__imul__(self, count)
        return self

    def append(self, value: Any) -> None:
        """Append ``value``."""
        self._guard.touch(self)
        list.append(self, value)

    def extend(self, values: Any) -> None:
        """Append every item of ``values``."""
        self._guard.touch(self)
        list.extend(self, values)

    def insert(self, index: Any, value: Any) -> None:
        """Insert ``value`` before ``index``."""
        self._guard.touch(self)
        list.insert(self, index, value)

    def pop(self, index: Any = -1) -> Any:
        """Remove and return the item at ``index``."""
        self._guard.touch(self)
        return list.pop(self, index)

    def remove(self, value: Any) -> None:
        """Remove the first occurrence of ``value``."""
        self._guard.touch(self)
        list.remove(self, value)

    def clear(self) -> None:
        """Remove every item."""
        self._guard.touch(self)
        list.clear(self)

    def sort(self, *args: Any, **kwargs: Any) -> None:
        """Sort in place."""
        self._guard.touch(self)
        list.sort(self, *args, **kwargs)

    def reverse(self) -> None:
        """Reverse in place."""
        self._guard.touch(self)
        list.reverse(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        result: list[Any] = []
        memo[id(self)] = result
        result.extend(copy.deepcopy(value, memo) for value in self)
        return result

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (list, (list(self),))


@dataclass(eq=False, slots=True)
class _Watch:
    """What one repository (and holder) last synced of a list, and the changes since."""

    repo: weakref.ref[Any]
    key: int
    commit: object
    length: int
    offset: int = 0
    dirty_from: int = UNCHANGED
    fields: Any = None


class TrackedMessages(list[Any]):
    """A live conversation list that knows, per repository, which leading messages changed.

    It behaves as a plain ``list``; copies, deep copies and pickles of it are plain lists.
    Appending costs nothing extra; any other change costs O(1) per repository watching it.
    """

    __slots__ = ("__weakref__", "_fresh", "_version", "_watches")
    _version: int
    _watches: list[_Watch]
    _fresh: bool

    __hash__ = None

    def _changed(self, index: int) -> None:
        self._version += 1
        for watch in self._watches:
            if index < watch.dirty_from:
                watch.dirty_from = index

    def _position(self, index: Any) -> int:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            count = len(range(start, stop, step))
            if step > 0 or count == 0:
                return start if step > 0 else stop + 1
            return start + step * (count - 1)
        position = int(index)
        return max(0, position + len(self)) if position < 0 else position

    def __setitem__(self, index: Any, value: Any) -> None:
        self._changed(self._position(index))
        list.__setitem__(self, index, value)

    def __delitem__(self, index: Any) -> None:
        self._changed(self._position(index))
        list.__delitem__(self, index)

    def __imul__(self, count: Any) -> TrackedMessages:  # type: ignore[misc]
        self._changed(0 if count <= 0 else len(self))
        list.__imul__(self, count)
        return self

    def insert(self, index: Any, value: Any) -> None:
        """Insert ``value`` before ``index``."""
        self._changed(min(self._position(index), len(self)))
        list.insert(self, index, value)

    def pop(self, index: Any = -1) -> Any:
        """Remove and return the item at ``index``."""
        self._changed(self._position(index))
        return list.pop(self, index)

    def remove(self, value: Any) -> None:
        """Remove the first occurrence of ``value``."""
        self._changed(self.index(value))
        list.remove(self, value)

    def clear(self) -> None:
        """Remove every item."""
        self._changed(0)
        list.clear(self)

    def sort(self, *args: Any, **kwargs: Any) -> None:
        """Sort in place."""
        self._changed(0)
        list.sort(self, *args, **kwargs)

    def reverse(self) -> None:
        """Reverse in place."""
        self._changed(0)
        list.reverse(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        result: list[Any] = []
        memo[id(self)] = result
        result.extend(copy.deepcopy(value, memo) for value in self)
        return result

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (list, (list(self),))

    def _watch(self, repo: object, key: int) -> _Watch | None:
        for watch in self._watches:
            if watch.key == key and watch.repo() is repo:
                return watch
        return None


def new_tracked(messages: Sequence[Any] = ()) -> TrackedMessages:
    """Return a :class:`TrackedMessages` holding tracked copies of ``messages``.

    A list a :class:`TrackedDecoder` just built is returned as it is, once: its messages are
    tracked copies already, made while they were decoded.
    """
    if type(messages) is TrackedMessages and getattr(messages, "_fresh", False):
        messages._fresh = False
        return messages
    tracked = _empty_tracked()
    owner = weakref.ref(tracked)
    # Copying a long conversation allocates many containers, none in a cycle; the cyclic
    # collector would otherwise run repeatedly over the whole heap meanwhile (3/4 of the time
    # at 10,000 messages). Left disabled if the program disabled it.
    pause = len(messages) > _GC_PAUSE_FROM and gc.isenabled()
    if pause:
        gc.disable()
    try:
        list.extend(tracked, [_track_message(m, _Guard(owner, i)) for i, m in enumerate(messages)])
    finally:
        if pause:
            gc.enable()
    return tracked


_GC_PAUSE_FROM = 1000


def _empty_tracked() -> TrackedMessages:
    tracked = TrackedMessages()
    tracked._version = 0
    tracked._watches = []
    tracked._fresh = False
    return tracked


class TrackedDecoder:
    """Decodes a checkout's messages straight into tracked copies (a
    :class:`~statevcs.snapshot.MessageDecoder`).

    msgpack builds each map and array and hands it to a hook that makes it a
    :class:`TrackedDict`/:class:`TrackedList` reporting to the message's guard: one copy of
    each container instead of a plain decode followed by :func:`new_tracked`'s copy (measured:
    2,000 Strands messages decode and track in 7.6 ms instead of 3.6 + 10.8 ms).
    """

    def __init__(self) -> None:
        self._tracked = _empty_tracked()
        self._owner = weakref.ref(self._tracked)
        self._guard = _Guard(self._owner, 0)

    def _dict(self, value: dict[Any, Any]) -> TrackedDict:
        tracked = TrackedDict(value)
        tracked._guard = self._guard
        return tracked

    def _list(self, value: list[Any]) -> TrackedList:
        tracked = TrackedList(value)
        tracked._guard = self._guard
        return tracked

    def decode(self, data: bytes, index: int) -> Any:
        """The tracked message at ``index`` from its msgpack."""
        self._guard = _Guard(self._owner, index)
        return msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=False,
            use_list=True,
            object_hook=self._dict,
            list_hook=self._list,
        )

    def adopt(self, value: Any, index: int) -> Any:
        """The tracked copy of a message at ``index`` decoded elsewhere."""
        return _track_message(value, _Guard(self._owner, index))

    def collect(self, messages: list[Any]) -> TrackedMessages:
        """The tracked list holding ``messages`` (:func:`new_tracked` takes it as it is)."""
        tracked = self._tracked
        list.extend(tracked, messages)
        tracked._fresh = True
        return tracked


# ExtType is a namedtuple that msgpack packs as an ext value: kept as it is, never a tuple.
_LEAVES = frozenset({str, int, float, bool, bytes, type(None), msgpack.ExtType, msgpack.Timestamp})


def _track(value: Any, guard: _Guard) -> Any:
    """Return a copy of ``value`` whose dicts and lists report edits to ``guard``."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict or isinstance(value, dict):
        # dict.__init__ fills the subclass directly, bypassing the tracking __setitem__.
        tracked_dict = TrackedDict({key: _track(item, guard) for key, item in value.items()})
        tracked_dict._guard = guard
        return tracked_dict
    if kind is list or isinstance(value, list):
        tracked_list = TrackedList([_track(item, guard) for item in value])
        tracked_list._guard = guard
        return tracked_list
    if isinstance(value, tuple):
        return tuple(_track(item, guard) for item in value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)  # a mutable buffer could change unseen; bytes cannot
    return value


def _track_message(value: Any, guard: _Guard) -> Any:
    """:func:`_track` for one message, also for messages nested deeper than Python recurses."""
    try:
        return _track(value, guard)
    except RecursionError:
        return _track_deep(value, guard)


def _track_deep(value: Any, guard: _Guard) -> Any:
    """:func:`_track` without recursion (for deeply nested messages)."""
    root: list[Any] = [None]
    # (source, destination container, key or index in it)
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    tuples: list[tuple[list[Any], Any, Any]] = []
    while stack:
        source, target, slot = stack.pop()
        kind = type(source)
        if kind in _LEAVES:
            _put(target, slot, source)
        elif isinstance(source, dict):
            tracked_dict = TrackedDict(dict.fromkeys(source))
            tracked_dict._guard = guard
            _put(target, slot, tracked_dict)
            stack.extend((item, tracked_dict, key) for key, item in source.items())
        elif isinstance(source, (list, tuple)):
            items: list[Any] = [None] * len(source)
            if isinstance(source, list):
                container: Any = TrackedList(items)
                container._guard = guard
            else:
                container = items
                tuples.append((items, target, slot))
            _put(target, slot, container)
            stack.extend((item, container, index) for index, item in enumerate(source))
        elif isinstance(source, (bytearray, memoryview)):
            _put(target, slot, bytes(source))
        else:
            _put(target, slot, source)
    # Tuples are immutable: build them once their items are final, innermost first.
    for items, target, slot in reversed(tuples):
        _put(target, slot, tuple(items))
    return root[0]


def _put(target: Any, slot: Any, value: Any) -> None:
    if isinstance(target, dict):
        dict.__setitem__(target, slot, value)
    else:
        list.__setitem__(target, slot, value)


def _adopt(tracked: TrackedMessages, start: int, end: int) -> None:
    """Make positions ``start:end`` of ``tracked`` hold messages guarded at their position."""
    owner = weakref.ref(tracked)
    for index in range(start, min(end, len(tracked))):
        message = tracked[index]
        if type(message) in (TrackedDict, TrackedList):
            guard = message._guard
            if guard.index == index and guard.owner() is tracked:
                if guard.edited is not None:
                    _track_put(guard)
                continue  # reports to this position, nested levels included
        list.__setitem__(tracked, index, _track_message(message, _Guard(owner, index)))


def _track_put(guard: _Guard) -> None:
    """Swap for tracked copies the containers put into a message since its last sync.

    A plain dict or list put into a tracked message (or a tracked one of another message) would
    report no edits: the commit after the next would vouch for a stale message. Only the
    containers edited since the sync can hold one, as direct children; containers already
    tracked for the message stay as they are (references to them keep working).
    """
    edited, guard.edited = guard.edited or {}, None
    for container in edited.values():
        is_dict = type(container) is TrackedDict
        children: Any = container.values() if is_dict else container
        if _LEAVES.issuperset(map(type, children)):
            continue  # the commonest case, checked in C
        swaps: list[tuple[Any, Any]] = []
        for slot, value in container.items() if is_dict else enumerate(container):
            kind = type(value)
            if kind in _LEAVES or (
                (kind is TrackedDict or kind is TrackedList) and value._guard is guard
            ):
                continue
            if isinstance(value, (dict, list, tuple, bytearray, memoryview)):
                swaps.append((slot, _track_message(value, guard)))
        for slot, value in swaps:
            _put(container, slot, value)


@dataclass(eq=False)
class _Capture:
    """A capture in progress: what the commit encodes, kept until :func:`finish`."""

    holder: Any
    repo: Any
    key: int
    lists: list[list[Any]]
    lengths: list[int]
    versions: list[int]
    items: list[list[Any] | None]
    starts: list[int]
    keep: int | None
    fields: Any
    commit: object
    thread: int


_pending = threading.local()

# Per repository and holder key: the ids of the plain lists it synced last. A plain list becomes
# tracked at its second sync only, so committing a new list every time (nothing to vouch for)
# never pays for tracked copies. An id reused by another list only makes that one tracked early.
_plain_seen: weakref.WeakKeyDictionary[Any, dict[int, set[int]]] = weakref.WeakKeyDictionary()
_seen_lock = threading.Lock()


def _seen_before(repo: object, key: int, live: list[Any], eager: bool) -> bool:
    if eager:
        return True
    seen = _plain_seen.get(repo)
    return seen is not None and id(live) in seen.get(key, ())


def _record(
    holder: object,
    repo: object,
    key: int,
    lists: Sequence[list[Any]],
    starts: list[int],
    keep: int | None,
    fields: Any,
    commit: object = None,
    eager: bool = True,
) -> None:
    # Plain lists cannot report changes: keep their items to check them when the sync lands.
    _pending.capture = _Capture(
        holder,
        repo,
        key,
        list(lists),
        [len(live) for live in lists],
        [live._version if isinstance(live, TrackedMessages) else -1 for live in lists],
        [
            list(live)
            if not isinstance(live, TrackedMessages) and _seen_before(repo, key, live, eager)
            else None
            for live in lists
        ],
        starts,
        keep,
        fields,
        commit,
        threading.get_ident(),
    )


def begin(
    holder: object,
    repo: object,
    lists: Sequence[list[Any]],
    *,
    key: int = 0,
    fields: Any = None,
    eager: bool = True,
) -> None:
    """Note a capture of ``lists`` (``holder``'s messages, back to back) for ``repo``.

    Works out how many leading messages are unchanged since ``repo`` last synced them, for
    :func:`unchanged_prefix`. O(number of lists) for tracked lists. With ``eager=False`` a
    plain list is made tracked at its second sync, not its first (for holders often given a
    new list per commit, such as dicts).
    """
    if repo is None:
        return
    keep: int | None = None
    commit: object = None
    starts: list[int] = []
    offset = 0
    stopped = False
    for live in lists:
        start = 0
        if not stopped:
            watch = live._watch(repo, key) if isinstance(live, TrackedMessages) else None
            if watch is not None and offset == 0:
                commit = watch.commit
            if watch is None or watch.commit != commit or watch.offset != offset:
                stopped = True
                if offset:
                    keep = offset
            else:
                start = min(watch.dirty_from, watch.length, len(live))
                keep = offset + start
                # A change or growth here shifts every later list: the prefix ends here.
                stopped = start < watch.length or start < len(live)
        starts.append(start)
        offset += len(live)
    _record(holder, repo, key, lists, starts, keep, fields, commit, eager)


def restored(
    holder: object, repo: object, lists: Sequence[list[Any]], *, key: int = 0, fields: Any = None
) -> None:
    """Note that ``holder`` now holds ``lists`` (from :func:`new_tracked`) fresh from ``repo``."""
    if repo is not None:
        _record(holder, repo, key, lists, [len(live) for live in lists], None, fields)


def unchanged_prefix(holder: object, repo: object, commit: object) -> int | None:
    """Leading messages unchanged since ``repo`` synced ``holder`` as ``commit``.

    Answers for the capture in progress (:func:`begin`); ``None`` when the lists were last
    synced as another commit, such as another dict committed through the same handle.
    """
    capture: _Capture | None = getattr(_pending, "capture", None)
    if (
        capture is None
        or capture.holder is not holder
        or capture.repo is not repo
        or capture.thread != threading.get_ident()
        or capture.commit != commit
        or commit is None
    ):
        return None
    return capture.keep


def _forget(lists: Sequence[list[Any]], repo: object, key: int) -> None:
    for live in lists:
        if isinstance(live, TrackedMessages):
            live._watches = [w for w in live._watches if not (w.key == key and w.repo() is repo)]


def discard(holder: object, repo: object, lists: Sequence[list[Any]], *, key: int = 0) -> None:
    """Vouch for nothing at ``holder``'s next commit to ``repo`` (its lists hold other content)."""
    _pending.capture = None
    _forget(lists, repo, key)


def finish(
    holder: object,
    repo: object,
    lists: Sequence[list[Any]],
    install: Callable[[int, TrackedMessages], None],
    *,
    commit: object,
    key: int = 0,
) -> None:
    """Adopt the pending capture of ``holder`` as what ``repo`` now holds as ``commit``.

    ``lists`` are ``holder``'s live lists now; a plain one is replaced through
    ``install(position, tracked_list)``. Messages captured but not yet tracked are swapped
    for tracked copies (O(new messages)). If anything changed since the capture, nothing is
    vouched for next time.
    """
    capture: _Capture | None = getattr(_pending, "capture", None)
    _pending.capture = None
    if repo is None:
        return
    if (
        capture is None
        or capture.holder is not holder
        or capture.repo is not repo
        or capture.thread != threading.get_ident()
        or len(lists) != len(capture.lists)
    ):
        _forget(lists, repo, key)
        return
    for index, live in enumerate(lists):
        captured = capture.lists[index]
        count = capture.lengths[index]
        items = capture.items[index]
        unchanged = live is captured and len(live) >= count
        if unchanged and isinstance(live, TrackedMessages):
            unchanged = live._version == capture.versions[index]
        elif unchanged and items is not None:
            unchanged = all(live[i] is items[i] for i in range(count))
        elif unchanged:
            unchanged = False  # a plain list seen for the first time: track it next time
            with _seen_lock:
                seen = _plain_seen.setdefault(repo, {})
                seen[key] = {id(other) for other in lists if not isinstance(other, TrackedMessages)}
        if not unchanged:
            _forget(lists, repo, key)
            return
    offset = 0
    for index, live in enumerate(lists):
        count = capture.lengths[index]
        if isinstance(live, TrackedMessages):
            tracked = live
            _adopt(tracked, capture.starts[index], count)
        else:
            tracked = new_tracked(live[:count])
            list.extend(tracked, live[count:])
            install(index, tracked)
            with _seen_lock:
                _plain_seen.get(repo, {}).get(key, set()).discard(id(live))
        watches = [w for w in tracked._watches if w.repo() is not None]
        watch = next((w for w in watches if w.key == key and w.repo() is repo), None)
        if watch is None:
            watch = _Watch(weakref.ref(repo), key, commit, count)
            watches.append(watch)
        watch.commit = commit
        watch.length = count
        watch.offset = offset
        watch.dirty_from = UNCHANGED
        watch.fields = capture.fields if index == 0 else None
        tracked._watches = watches
        offset += count


def is_clean(lists: Sequence[list[Any]], repo: object, *, key: int = 0, fields: Any = None) -> bool:
    """Whether ``lists`` and ``fields`` still equal what ``repo`` last synced; O(lists)."""
    commit: object = None
    for index, live in enumerate(lists):
        if not isinstance(live, TrackedMessages):
            return False
        watch = live._watch(repo, key)
        if (
            watch is None
            or watch.dirty_from != UNCHANGED
            or watch.length != len(live)
            or (index and watch.commit != commit)
        ):
            return False
        if index == 0:
            # same(), not ``!=``: a dict whose keys were only reordered commits anew.
            if not same(watch.fields, fields):
                return False
            commit = watch.commit
    return bool(lists)


__all__ = [
    "TrackedDict",
    "TrackedList",
    "TrackedMessages",
    "begin",
    "discard",
    "finish",
    "is_clean",
    "new_tracked",
    "TrackedDecoder",
    "restored",
    "unchanged_prefix",
]
