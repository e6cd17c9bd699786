"""What a message or an extras value may hold, and why a value is refused.

Messages and extras values are stored as msgpack documents and read back by msgpack alone, so a
value is accepted only when it reads back equal to what was committed: dicts, lists, str,
bytes, int (-2**63 to 2**64-1), float (NaN and infinities included), bool and None, nested at
most :data:`MAX_DOCUMENT_DEPTH` levels. Subclasses of these (a tracked message, an
``OrderedDict``, a ``StrEnum`` member) and ``bytearray`` and ``memoryview`` are stored as their
base type and read back as it, equal to what was committed.

Tuples are refused: msgpack has no tuple, so one would read back as a list (which is not equal
to it), and a tuple used as a dict key would read back as a list, which cannot be a key: the
whole document would be unreadable.
"""

from __future__ import annotations

import threading
from typing import Any

import msgpack

from .errors import SerializationError
from .plain import NOT_A_SCALAR, json_scalar

MAX_DOCUMENT_DEPTH = 512
"""How deeply a message or extras value may nest (lists and dicts inside each other).

msgpack writes deeper values than its reader accepts; refusing them at commit keeps the promise
that whatever commits reads back (and exports to git, which uses the same limit).
"""

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1


# Set when the packer meets a subclass with its own equality: two such keys of one dict, or one
# and a plain key, may be one key once stored as their base type (see _colliding_keys).
class _Seen(threading.local):
    seen = False


_own_equality = _Seen()


def _note_equality(value: Any, base: type) -> None:
    kind = type(value)
    if kind.__eq__ is not base.__eq__ or kind.__hash__ is not base.__hash__:
        _own_equality.seen = True


def _as_base(value: Any) -> Any:
    """The packer's fallback: a subclass becomes its base type; anything else is refused."""
    # dict.copy and list.copy read the storage itself, as msgpack does (and faster than dict()).
    if isinstance(value, dict):
        return dict.copy(value)
    if isinstance(value, list):
        return list.copy(value)
    if isinstance(value, str):
        _note_equality(value, str)
        return str.__str__(value)  # the text itself, whatever the subclass's __str__ says
    if isinstance(value, bytes):
        _note_equality(value, bytes)
        return bytes(memoryview(value))
    if isinstance(value, int):
        if type(value) is int:  # exact ints reach the fallback only when out of range
            raise OverflowError("Integer value out of range")
        _note_equality(value, int)
        return int.__int__(value)
    if isinstance(value, float):
        _note_equality(value, float)
        return float.__float__(value)
    if isinstance(value, tuple):
        raise TypeError("a tuple would read back as a list")
    raise TypeError(f"can not serialize {type(value).__name__!r} object")


class ThreadSafePacker:
    """A ``msgpack.Packer``'s ``pack`` that threads (and re-entrant calls) may share.

    A Packer writes into one buffer, and its ``default`` callback (or a finalizer the garbage
    collector runs meanwhile) is Python code, during which another thread may run: two threads
    sharing one Packer interleave their output, and each commit stores bytes holding part of the
    other's document. Each thread keeps its own Packer; a call made while that one is busy
    (re-entered from a callback) packs with a fresh one.
    """

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._idle = threading.local()

    def __call__(self, value: Any) -> bytes:
        """Encode ``value`` (what ``msgpack.Packer(**options).pack`` raises, it raises)."""
        idle = self._idle
        packer = getattr(idle, "packer", None)
        if packer is None:
            packer = msgpack.Packer(**self._options)
        idle.packer = None  # busy: a re-entered call makes its own
        try:
            return packer.pack(value)  # type: ignore[no-any-return]
        finally:
            idle.packer = packer


_pack = ThreadSafePacker(use_bin_type=True, autoreset=True, strict_types=True, default=_as_base)


def pack(value: Any) -> bytes:
    """Encode a document; raises ``TypeError``, ``ValueError`` or ``OverflowError`` if refused.

    ``strict_types`` keeps msgpack from writing tuples as lists; :func:`refusal` says why a
    value was refused. Safe to call from any number of threads at once.
    """
    data = _pack(value)
    if _own_equality.seen:
        _own_equality.seen = False
        if _first_collision(value) is not None:
            raise ValueError("two keys of a dict would be one key once stored")
    return data


_PLAIN_KEYS = frozenset({str, bytes, int, float, bool, type(None)})


def _colliding_keys(mapping: dict[Any, Any]) -> tuple[Any, Any] | None:
    """Two keys of ``mapping`` that are one key once stored as their base types, if any.

    Python keeps them apart only through a subclass's own ``__eq__``/``__hash__``; msgpack
    reads back one of them, and the other's value is lost.
    """
    if all(type(key) in _PLAIN_KEYS for key in mapping):
        return None
    stored: dict[Any, Any] = {}
    for key in mapping:
        base = _base_key(key)
        if base in stored:
            return stored[base], key
        stored[base] = key
    return None


def _base_key(key: Any) -> Any:
    if type(key) in _PLAIN_KEYS or not isinstance(key, (str, bytes, int, float)):
        return key
    return _as_base(key)


def _first_collision(value: Any) -> tuple[Any, Any] | None:
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found = _colliding_keys(item)
            if found is not None:
                return found
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


# Bytes that can start a msgpack map or array (fixmap, fixarray, map16/32, array16/32); every
# other byte value is deleted before counting. Text can contain such bytes too, so the count
# is an upper bound on the number of containers, and hence on the nesting depth.
_NOT_CONTAINER_START = bytes(b for b in range(256) if not (0x80 <= b <= 0x9F or 0xDC <= b <= 0xDF))


def may_be_too_deep(data: bytes) -> bool:
    """Whether an encoded document could nest deeper than :data:`MAX_DOCUMENT_DEPTH` (C speed)."""
    return (
        len(data) > MAX_DOCUMENT_DEPTH
        and len(data.translate(None, _NOT_CONTAINER_START)) > MAX_DOCUMENT_DEPTH
    )


def check_depth(value: Any, path: str) -> None:
    """Raise ``SerializationError`` if ``value`` nests deeper than :data:`MAX_DOCUMENT_DEPTH`."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, (list, tuple)):
            children = current
        else:
            continue
        if depth >= MAX_DOCUMENT_DEPTH:
            raise _too_deep(path)
        stack.extend((child, depth + 1) for child in children)


_TOO_DEEP = f"nests deeper than {MAX_DOCUMENT_DEPTH} levels; flatten it or store it as a string"


def _too_deep(path: str) -> SerializationError:
    return SerializationError(f"{path} {_TOO_DEEP}", path)


# --- explaining a refusal ----------------------------------------------------------------

_KEEP_IN_STATE = "or keep the value in state, where the repository's serializer stores it"
_FIXES: dict[str, str] = {
    "set": "convert it to a list",
    "frozenset": "convert it to a list",
    "datetime": "convert it to a string with .isoformat()",
    "date": "convert it to a string with .isoformat()",
    "time": "convert it to a string with .isoformat()",
    "Decimal": "convert it to a string with str(...)",
    "UUID": "convert it to a string with str(...)",
}


def refusal(value: Any, path: str, error: Exception) -> SerializationError:
    """The ``SerializationError`` naming where in ``value`` (at ``path``) :func:`pack` failed.

    ``error`` is what :func:`pack` raised; it is quoted only if no part of ``value`` explains it.
    """
    found = _first_problem(value)
    if found is None:
        return SerializationError(
            f"{path} cannot be stored ({type(error).__name__}: {short_repr(error)}); messages and "
            "extras hold dicts, lists, str, bytes, int, float, bool and None: convert the "
            f"value, {_KEEP_IN_STATE}",
            path,
        )
    where, problem = found
    full = path + where
    return SerializationError(f"{full} {problem}", full)


# msgpack's own extension objects (an ExtType is a tuple): packed as they are, read back equal.
_NATIVE_EXTENSIONS = (msgpack.ExtType, msgpack.Timestamp)


def _first_problem(value: Any) -> tuple[str, str] | None:
    """The location (a suffix of the path) and description of the first refused part."""
    # An explicit stack (hostile nesting must not exhaust Python's), in document order.
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        if type(item) in _NATIVE_EXTENSIONS:
            continue
        if isinstance(item, tuple):
            return where, (
                "is a tuple, which would read back as a list; convert it to a list, "
                f"{_KEEP_IN_STATE} (statevcs.MsgpackSerializer() keeps tuples)"
            )
        if isinstance(item, (dict, list)):
            if depth >= MAX_DOCUMENT_DEPTH:
                return "", _TOO_DEEP  # named at the top: the path down would be 512 steps long
            if isinstance(item, list):
                pairs: list[tuple[Any, Any]] = list(enumerate(item))
            else:
                pairs = list(item.items())
                for key, _child in pairs:
                    problem = _key_problem(key)
                    if problem is not None:
                        return where, problem
                collision = _colliding_keys(item)
                if collision is not None:
                    first, second = (short_repr(k) for k in collision)
                    odd = collision[1] if type(collision[1]) not in _PLAIN_KEYS else collision[0]
                    name = type(odd).__name__
                    return where, (
                        f"has the keys {first} and {second} ({_article(name)} {name} with its "
                        "own __eq__ or __hash__), which "
                        "are one key once stored, so a value would be lost; make the keys "
                        f"distinct as plain values, {_KEEP_IN_STATE}"
                    )
            stack.extend(
                (child, f"{where}[{short_repr(key)}]", depth + 1) for key, child in reversed(pairs)
            )
            continue
        problem = _scalar_problem(item)
        if problem is not None:
            return where, problem
    return None


def _key_problem(key: Any) -> str | None:
    if isinstance(key, tuple):
        return (
            f"uses the key {short_repr(key)} (a tuple), which msgpack would read back as a list, "
            "which cannot be a dict key (the document could not be read at all); convert the "
            f"key to a string, {_KEEP_IN_STATE} (statevcs.MsgpackSerializer() keeps tuple keys)"
        )
    if _is_plain_scalar(key):
        problem = _scalar_problem(key)
        return None if problem is None else f"has a key that {problem}"
    name = type(key).__name__
    return (
        f"uses the key {short_repr(key)} ({_article(name)} {name}), which messages and extras "
        "cannot store as a key (keys may be str, bytes, int, float, bool or None); convert the "
        f"key to a string, {_KEEP_IN_STATE}"
    )


def _is_plain_scalar(item: Any) -> bool:
    return item is None or isinstance(item, (bool, float, bytes, bytearray, memoryview, int, str))


def _scalar_problem(item: Any) -> str | None:
    if item is None or isinstance(item, (bool, float, bytes, bytearray, memoryview)):
        return None
    if isinstance(item, int):
        number = int.__int__(item)
        if _INT_MIN <= number <= _INT_MAX:
            return None
        return (
            f"is an integer of {number.bit_length()} bits, outside the range msgpack stores "
            "(-2**63 to 2**64-1); store it as a string (str(n), or hex(n) beyond 4,300 digits), "
            f"{_KEEP_IN_STATE} (statevcs.MsgpackSerializer() stores ints of any size)"
        )
    if isinstance(item, str):
        try:
            str.encode(item, "utf-8")
        except UnicodeEncodeError:
            return (
                "is a string containing a lone surrogate, which is not valid Unicode; remove it "
                "or decode the original bytes with errors='replace'"
            )
        return None
    name = type(item).__name__
    fix = _FIXES.get(name, "convert it to one of those")
    return (
        f"is {_article(name)} {name}, which messages and extras cannot store (they hold dicts, "
        f"lists, str, bytes, int, float, bool and None); {fix}, {_KEEP_IN_STATE}"
    )


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, never failing (huge ints, hostile reprs)."""
    try:
        text = repr(value)
    except Exception:
        if isinstance(value, int):
            return f"<int of {int.__int__(value).bit_length()} bits>"
        return f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "MAX_DOCUMENT_DEPTH",
    "NOT_A_SCALAR",
    "ThreadSafePacker",
    "check_depth",
    "json_scalar",
    "may_be_too_deep",
    "pack",
    "refusal",
    "short_repr",
]
