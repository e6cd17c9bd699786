"""The JSON value mapping of the git mirror: Python values to JSON files and back, exactly.

Messages, extras, JSON state and commit metadata hold msgpack-native values (None, bool, int,
float, str, bytes, lists, dicts with any hashable key). JSON holds fewer, so a few one-key
marker objects stand in: ``{"__bytes__": "<base64>"}``, ``{"__float__": "nan"}``,
``{"__map__": [[key, value], ...]}`` (non-string keys) and ``{"__dict__": {...}}`` (a dict that
would look like a marker). ``{"__raw__": ...}`` (state kept as stored bytes) is the export's and
import's business: :func:`from_json` leaves it alone.

:func:`to_json` and :func:`from_json` are iterative, so any depth up to :data:`MAX_DEPTH`
converts without Python recursion; deeper values raise :class:`~statevcs.errors.GitMirrorError`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any, cast

from ...documents import NOT_A_SCALAR, json_scalar
from ...errors import GitMirrorError

MAX_DEPTH = 512
"""Deepest nesting of lists and objects the JSON mapping reads or writes (documents deeper
than msgpack's 511 levels cannot be stored anyway; deeper JSON state is written verbatim)."""
MARKERS = frozenset({"__bytes__", "__float__", "__map__", "__dict__", "__raw__"})
"""The keys of one-key objects that stand for a value JSON cannot hold."""

_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def too_deep(where: str) -> GitMirrorError:
    """The error for a value nested deeper than :data:`MAX_DEPTH` (at ``where``)."""
    return GitMirrorError(
        f"{where} is nested more than {MAX_DEPTH} levels deep; flatten the value "
        "(statevcs.mirror.git.MAX_DEPTH)"
    )


def to_json(value: Any) -> Any:
    """Return a JSON-compatible form of a msgpack-native value, with markers where needed.

    :func:`from_json` inverts it exactly: bytes, non-finite floats, non-string keys and
    marker-shaped dicts all come back as they were. Raises :class:`GitMirrorError` for other
    types and for nesting deeper than :data:`MAX_DEPTH`.
    """
    root: list[Any] = [None]
    # Each task writes the converted item into out[slot]; containers are created before their
    # items are converted, so key order is kept without recursion.
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
    while stack:
        item, out, slot, depth = stack.pop()
        scalar = json_scalar(item)
        if scalar is not NOT_A_SCALAR:
            out[slot] = scalar
        elif isinstance(item, (list, tuple, dict)):
            if depth >= MAX_DEPTH:
                raise too_deep("a value")
            if isinstance(item, dict) and all(isinstance(k, str) for k in item):
                mapping: dict[str, Any] = dict.fromkeys(item)
                marker_like = len(item) == 1 and next(iter(item)) in MARKERS
                out[slot] = {"__dict__": mapping} if marker_like else mapping
                stack.extend((v, mapping, k, depth + 1) for k, v in item.items())
            elif isinstance(item, dict):
                pairs: list[list[Any]] = [[None, None] for _ in range(len(item))]
                out[slot] = {"__map__": pairs}
                for pair, (k, v) in zip(pairs, item.items()):
                    stack.append((k, pair, 0, depth + 1))
                    stack.append((v, pair, 1, depth + 1))
            else:
                array: list[Any] = [None] * len(item)
                out[slot] = array
                stack.extend((v, array, i, depth + 1) for i, v in enumerate(item))
        else:
            raise GitMirrorError(
                f"cannot write a {type(item).__name__} value to the git mirror: messages and "
                "extras hold only JSON types and bytes"
            )
    return root[0]


_VALUE, _TUPLE, _MAP = 0, 1, 2


def from_json(value: Any, where: str = "a value") -> Any:
    """Invert :func:`to_json` (``__raw__`` markers are left for the caller).

    Raises :class:`GitMirrorError` naming ``where`` for a malformed marker, a map key that
    cannot be a key, or nesting deeper than :data:`MAX_DEPTH`.
    """
    root: list[Any] = [None]
    # Tasks: (_VALUE, item, out, slot, depth, as_key) converts one item; (_TUPLE, items, ...)
    # and (_MAP, pairs, ...) run after their children to build tuples (hashable map keys) and
    # marker maps whose keys must be complete before they can be inserted.
    stack: list[tuple[int, Any, Any, Any, int, bool]] = [(_VALUE, value, root, 0, 0, False)]
    while stack:
        task, item, out, slot, depth, as_key = stack.pop()
        if task == _TUPLE:
            out[slot] = tuple(item)
            continue
        if task == _MAP:
            if as_key:
                raise GitMirrorError(f"{where}: a map cannot be a key of another map")
            try:
                out[slot] = dict(cast("list[tuple[Any, Any]]", item))
            except TypeError as exc:
                raise GitMirrorError(f"{where}: a __map__ key cannot be a key ({exc})") from None
            continue
        if isinstance(item, (list, dict)) and depth >= MAX_DEPTH:
            raise too_deep(where)
        if isinstance(item, list):
            array: list[Any] = [None] * len(item)
            if as_key:
                stack.append((_TUPLE, array, out, slot, depth, False))
            else:
                out[slot] = array
            stack.extend((_VALUE, v, array, i, depth + 1, as_key) for i, v in enumerate(item))
        elif isinstance(item, dict):
            if len(item) == 1:
                ((key, inner),) = item.items()
                if key in MARKERS and key != "__raw__":
                    _marker(stack, key, inner, out, slot, depth, as_key, where)
                    continue
            if as_key:
                raise GitMirrorError(f"{where}: an object cannot be a key of a map")
            mapping: dict[str, Any] = dict.fromkeys(item)
            out[slot] = mapping
            stack.extend((_VALUE, v, mapping, k, depth + 1, False) for k, v in item.items())
        else:
            out[slot] = item
    return root[0]


def _marker(
    stack: list[tuple[int, Any, Any, Any, int, bool]],
    key: str,
    inner: Any,
    out: Any,
    slot: Any,
    depth: int,
    as_key: bool,
    where: str,
) -> None:
    """Decode one marker object for :func:`from_json` (children go on ``stack``)."""
    if key == "__bytes__":
        try:
            if not isinstance(inner, str):
                raise TypeError("not a string")
            out[slot] = base64.b64decode(inner, validate=True)
        except (TypeError, ValueError, binascii.Error) as exc:
            raise GitMirrorError(
                f"{where}: a __bytes__ marker must hold base64 text ({exc})"
            ) from None
    elif key == "__float__":
        if not isinstance(inner, str) or inner not in _FLOATS:
            raise GitMirrorError(
                f"{where}: a __float__ marker must hold 'nan', 'inf' or '-inf', not {inner!r:.40}"
            )
        out[slot] = _FLOATS[inner]
    elif key == "__map__":
        if not isinstance(inner, list) or not all(
            isinstance(p, list) and len(p) == 2 for p in inner
        ):
            raise GitMirrorError(f"{where}: a __map__ marker must hold a list of [key, value]")
        pairs: list[list[Any]] = [[None, None] for _ in range(len(inner))]
        stack.append((_MAP, pairs, out, slot, depth, as_key))
        for pair, (k, v) in zip(pairs, inner):
            stack.append((_VALUE, k, pair, 0, depth + 1, True))
            stack.append((_VALUE, v, pair, 1, depth + 1, False))
    else:  # __dict__
        if not isinstance(inner, dict):
            raise GitMirrorError(f"{where}: a __dict__ marker must hold an object")
        if as_key:
            raise GitMirrorError(f"{where}: an object cannot be a key of a map")
        mapping: dict[str, Any] = dict.fromkeys(inner)
        out[slot] = mapping
        stack.extend((_VALUE, v, mapping, k, depth + 1, False) for k, v in inner.items())


class _Unusual(Exception):
    """A value :func:`_pretty` leaves to :func:`json.dumps` (and its errors)."""


_PRETTY_DEPTH = 64
"""Deeper values go through :func:`json.dumps`, so its limits and errors stay the rule."""
_encode_text = cast("Any", json.encoder).encode_basestring  # C, as json.dumps uses it
_float_text = float.__repr__
_int_text = int.__repr__


def _pretty(value: Any, out: list[str], newline: str, sort_keys: bool) -> None:
    """Append ``value`` as ``json.dumps(value, indent=2, separators=(",", ": "),
    ensure_ascii=False, allow_nan=False)`` writes it, byte for byte; raise :class:`_Unusual`
    for anything that call would treat specially (non-finite floats, other types, depth)."""
    if isinstance(value, str):
        out.append(_encode_text(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(_int_text(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _Unusual
        out.append(_float_text(value))
    elif len(newline) > 2 * _PRETTY_DEPTH:
        raise _Unusual
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        out.append("[")
        for index, item in enumerate(value):
            out.append("," + inner if index else inner)
            _pretty(item, out, inner, sort_keys)
        out.append(newline + "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        out.append("{")
        try:
            items = sorted(value.items()) if sort_keys else value.items()
        except TypeError:  # keys that do not compare: json.dumps says so
            raise _Unusual from None
        for index, (key, item) in enumerate(items):
            if not isinstance(key, str):
                raise _Unusual  # json.dumps turns some keys into text and refuses others
            out.append("," + inner if index else inner)
            out.append(_encode_text(key))
            out.append(": ")
            _pretty(item, out, inner, sort_keys)
        out.append(newline + "}")
    else:
        raise _Unusual


def dump_json(value: Any, *, sort_keys: bool = False) -> bytes:
    """Return ``value`` (already JSON-compatible) as the pretty UTF-8 JSON the mirror stores.

    The layout is fixed (two-space indent, ``", "``/``": "`` separators, non-ASCII text as
    UTF-8), so equal values always give equal bytes. ``sort_keys`` is for ``statevcs.json``;
    documents keep their key order, which is part of their content.
    """
    try:
        try:
            parts: list[str] = []
            _pretty(value, parts, "\n", sort_keys)
            text = "".join(parts)
        except _Unusual:
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
        raise too_deep("a value") from None
    except (ValueError, TypeError) as exc:  # lone surrogates, NaN, non-JSON types
        raise GitMirrorError(f"a value cannot be written as JSON to the mirror ({exc})") from None


def parse_json(data: bytes, where: str) -> Any:
    """Parse a mirror file as UTF-8 JSON; anything else raises an error naming ``where``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GitMirrorError(f"{where} is not UTF-8 text ({exc})") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise too_deep(where) from None
    except ValueError as exc:
        raise GitMirrorError(f"{where} is not valid JSON ({exc})") from None
