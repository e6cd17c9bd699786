"""Validation of the fields a caller gives a commit: message, author, timestamp, metadata.

Everything is checked before any object is written, so bad input never leaves a half-written
commit or a moved ref, and what is stored always reads back (and exports to git) unchanged.
Metadata is copied into a canonical form (sorted keys), so later changes to the caller's dict
cannot reach the stored commit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .errors import SerializationError

MAX_METADATA_DEPTH = 64
"""How deeply metadata may nest (dicts and lists inside each other)."""

MAX_TEXT_BYTES = 1024 * 1024
"""Upper bound on a commit message or author, in UTF-8 bytes."""

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def check_text(value: object, argument: str, *, limit: int = MAX_TEXT_BYTES) -> str:
    """Return ``value`` if it is a storable string; else ``TypeError`` or ``SerializationError``."""
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, got {type(value).__name__}")
    _check_encodable(value, argument)
    if len(value) > limit or len(value.encode("utf-8")) > limit:
        raise SerializationError(
            f"{argument} is longer than {limit} bytes; store large text in the snapshot instead",
            argument,
        )
    return value


def _check_encodable(value: str, where: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SerializationError(
            f"{where} holds a character that is not valid Unicode text (a lone surrogate); "
            "decode the text with errors='replace' before committing",
            where,
        ) from None


def timestamp_us(moment: object) -> int:
    """Return a timezone-aware datetime as microseconds since the Unix epoch (UTC)."""
    if not isinstance(moment, datetime):
        raise TypeError(f"timestamp must be a datetime, got {type(moment).__name__}")
    try:
        offset = moment.utcoffset()
        delta = moment - _EPOCH if offset is not None else None
    except (ValueError, TypeError, OverflowError) as exc:
        raise SerializationError(
            f"the timestamp's time zone is invalid ({exc})", "timestamp"
        ) from None
    if moment.tzinfo is None or delta is None:
        raise SerializationError(
            "commit timestamps must be timezone-aware; pass datetime.now(timezone.utc)",
            "timestamp",
        )
    if delta < timedelta(0):
        # git (and the git mirror) cannot represent times before the Unix epoch.
        raise SerializationError(
            f"commit timestamps must be 1970-01-01 UTC or later, got {moment.isoformat()}",
            "timestamp",
        )
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def canonical_metadata(metadata: object) -> dict[str, Any]:
    """Return a canonical deep copy of commit metadata, or raise ``SerializationError``.

    Allowed: dicts with string keys, lists, strings, booleans, ``None``, integers that fit in
    64 bits and finite floats, nested at most :data:`MAX_METADATA_DEPTH` deep: what reads back
    equal. Subclasses are stored as their base type (an ``IntEnum`` member as its int); tuples
    are refused, since they would read back as lists.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
    result: dict[str, Any] = {}
    # An explicit stack instead of recursion: hostile nesting must not exhaust Python's stack.
    stack: list[tuple[object, str, int, Any, Any]] = [(metadata, "metadata", 0, None, None)]
    root: Any = None
    while stack:
        value, path, depth, parent, slot = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            raise SerializationError(
                f"{path}: metadata nests deeper than {MAX_METADATA_DEPTH} levels; flatten it",
                path,
            )
        copied: Any
        if isinstance(value, Mapping):
            copied = {}
            for key, original in _keys(value, path):
                copied[key] = None
                stack.append((value[original], f"{path}[{key!r}]", depth + 1, copied, key))
        elif isinstance(value, tuple):
            raise SerializationError(
                f"{path}: a tuple would read back as a list; convert it to a list", path
            )
        elif isinstance(value, list):
            copied = [None] * len(value)
            for index, item in enumerate(value):
                stack.append((item, f"{path}[{index}]", depth + 1, copied, index))
        else:
            copied = _scalar(value, path)
        if parent is None:
            root = copied
        else:
            parent[slot] = copied
    assert isinstance(root, dict)
    result = root
    return result


def _keys(mapping: Mapping[Any, Any], path: str) -> list[tuple[str, Any]]:
    """The mapping's keys as stored (their text) with the keys themselves, sorted by text."""
    keys: dict[str, Any] = {}
    for key in mapping:
        if not isinstance(key, str):
            raise SerializationError(
                f"{path}: metadata keys must be strings, found {type(key).__name__} "
                f"{_short_repr(key)}; convert keys with str()",
                path,
            )
        _check_encodable(key, f"{path} key")
        text = str.__str__(key)  # the text itself, whatever a subclass's __str__ says
        if text in keys:  # a str subclass with its own __eq__/__hash__: one key once stored
            raise SerializationError(
                f"{path}: two keys are both the text {_short_repr(text)} (a "
                f"{type(keys[text]).__name__} and a {type(key).__name__}); stored as text they "
                "would be one key and a value would be lost; give them different texts",
                path,
            )
        keys[text] = key
    return sorted(keys.items(), key=lambda pair: pair[0])


def _short_repr(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, never failing (a huge int, a bad repr)."""
    try:
        text = repr(value)
    except Exception:
        return f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _scalar(value: object, path: str) -> object:
    if value is None or isinstance(value, bool):
        return value
    # Subclasses become their base type through the base type's own method, not through
    # int()/float()/str(), which a subclass (an Enum mixin's __str__, say) may override.
    if isinstance(value, int):
        number = int.__int__(value)
        if not _INT_MIN <= number <= _INT_MAX:
            # Not the digits: Python refuses to write ints over 4,300 digits as text.
            raise SerializationError(
                f"{path}: an integer of {number.bit_length()} bits does not fit in 64 bits "
                "(-2**63 to 2**64-1); store it as a string (str(n), or hex(n) beyond 4,300 "
                "digits)",
                path,
            )
        return number
    if isinstance(value, float):
        real = float.__float__(value)
        if not math.isfinite(real):
            raise SerializationError(
                f"{path}: {real} is not a finite number; store it as a string or None", path
            )
        return real
    if isinstance(value, str):
        _check_encodable(value, path)
        return str.__str__(value)
    raise SerializationError(
        f"{path}: a {type(value).__name__} is not JSON-compatible; commit metadata may hold "
        "dicts, lists, str, int, float, bool and None",
        path,
    )


def copy_tree(value: Any) -> Any:
    """Return a deep copy of JSON-like data (dicts, lists, tuples, scalars), at any depth.

    Unlike ``copy.deepcopy`` it never recurses, so data read from a hostile repository cannot
    exhaust Python's stack.
    """
    if type(value) is dict and not set(map(type, value.values())) - _FLAT:
        return dict(value)  # the usual metadata: one level of scalars, copied in C
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, parent, slot = stack.pop()
        if isinstance(item, dict):
            copied: Any = dict.fromkeys(item)
            stack.extend((v, copied, k) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            copied = [None] * len(item)
            stack.extend((v, copied, i) for i, v in enumerate(item))
            if isinstance(item, tuple):
                # Tuples are immutable: fill a list, then freeze it once its items are copied.
                stack.insert(len(stack) - len(item), (_Freeze(copied), parent, slot))
                parent[slot] = copied
                continue
        elif isinstance(item, _Freeze):
            copied = tuple(item.items)
        else:
            copied = item
        parent[slot] = copied
    return root[0]


_FLAT = frozenset({str, int, float, bool, type(None)})
"""Types a flat dict's copy can share (immutable, and no subclass: ``type`` is checked)."""


class _Freeze:
    __slots__ = ("items",)

    def __init__(self, items: list[Any]) -> None:
        self.items = items


__all__ = [
    "MAX_METADATA_DEPTH",
    "MAX_TEXT_BYTES",
    "canonical_metadata",
    "check_text",
    "copy_tree",
    "timestamp_us",
]
