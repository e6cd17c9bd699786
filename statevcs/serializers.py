"""Serializers: turn user state values into bytes and back.

A repository stores every state value as bytes produced by one serializer, and records the
serializer's short ``name`` ("json", "msgpack", "pickle") next to them so a later reader can
pick the right decoder with :func:`serializer_for`.

* :class:`JSONSerializer` (the default) stores exactly what JSON round-trips unchanged.
* :class:`MsgpackSerializer` adds an allow-list of rich values (datetimes, UUIDs, decimals,
  bytes, sets, tuples) plus Enum, dataclass and pydantic classes the user registered. Decoding
  never imports a module or resolves a name: class names are looked up in the registry only.
* :class:`PickleSerializer` is opt-in and signs every payload with an HMAC key; unsigned or
  tampered payloads are refused before any unpickling happens.

Every failure raises :class:`~statevcs.errors.SerializationError` whose message names the
location of the bad value (``state['config']['when']``) and says what to do about it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import msgpack

from statevcs.errors import SerializationError, UntrustedPayload

if TYPE_CHECKING:
    import uuid
    from decimal import Decimal

    from pydantic import BaseModel


def _model_base() -> type[BaseModel] | None:
    """pydantic's ``BaseModel`` once pydantic is loaded; before that no value can be a model,
    so the serializers never load pydantic themselves (start-up of the command line)."""
    module = sys.modules.get("pydantic")
    return None if module is None else module.BaseModel


def _is_model(value: object) -> bool:
    base = _model_base()
    return base is not None and isinstance(value, base)


__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_NESTING",
    "JSONSerializer",
    "MsgpackSerializer",
    "PickleSerializer",
    "StateSerializer",
    "serializer_for",
]

_T = TypeVar("_T", bound=type)
_NoneType = type(None)


@runtime_checkable
class StateSerializer(Protocol):
    """What a repository needs to store state values: a codec name and three methods.

    ``name`` is recorded in every snapshot; :func:`serializer_for` uses it to find a decoder.
    ``path`` is a human-readable location (``state['config']``) used in error messages.
    """

    name: str

    def serialize(self, value: Any, path: str = "value") -> bytes:
        """Return ``value`` as bytes; raise SerializationError naming ``path`` if it can't."""
        ...

    def deserialize(self, data: bytes, path: str = "value") -> Any:
        """Return the value stored in ``data``; raise SerializationError if it is invalid."""
        ...

    def validate(self, value: Any, path: str = "value") -> None:
        """Raise SerializationError (with the exact key path) if ``value`` can't be stored."""
        ...


# --- shared helpers -------------------------------------------------------------


class _Bad(Exception):
    """Internal: a value can't be encoded; path segments are collected while unwinding."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix
        self.segments: list[str] = []

    def error(self, base: str) -> SerializationError:
        path = base + "".join(reversed(self.segments))
        return SerializationError(f"{path} {self.problem}; {self.fix}", path)


class _Corrupt(Exception):
    """Internal: a payload can't be decoded."""


def _short_repr(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{_type_name(type(value))} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _seg(key: Any) -> str:
    return f"[{_short_repr(key)}]"


def _type_name(cls: type) -> str:
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _a_type(cls: type) -> str:
    name = _type_name(cls)
    return f"{_article(name)} {name}"


def _check_text(text: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise _Bad(
                f"is a string containing a lone surrogate ({_short_repr(text)}), "
                "which is not valid unicode",
                "remove the surrogate or decode the original bytes with errors='replace'",
            ) from None


_LONG_INT_BITS = 3_000  # below this, ints always convert to text (limit: 4300 digits)


def _int_to_text_works(value: int) -> bool:
    try:
        repr(value)
    except ValueError:  # sys.set_int_max_str_digits limit
        return False
    return True


def _deep(path: str, limit: int | None = None) -> SerializationError:
    levels = f" (more than {limit} levels)" if limit is not None else ""
    return SerializationError(
        f"{path} is nested too deeply{levels} or contains a reference cycle (a container that "
        "contains itself); flatten it or break the cycle before storing it",
        path,
    )


# --- JSON -----------------------------------------------------------------------

_JSON_SCALARS = frozenset({str, int, bool, _NoneType})
_JSON_ALTERNATIVE = "or open the repository with statevcs.MsgpackSerializer()"
_JSON_FIXES_BY_NAME = {
    "tuple": "convert it to a list",
    "set": "convert it to a sorted list",
    "frozenset": "convert it to a sorted list",
    "bytes": "encode it as text (for example base64)",
    "bytearray": "encode it as text (for example base64)",
    "datetime": "convert it to a string with .isoformat()",
    "date": "convert it to a string with .isoformat()",
    "time": "convert it to a string with .isoformat()",
    "timedelta": "convert it to a number of seconds with .total_seconds()",
    "Decimal": "convert it to a string with str(...)",
    "UUID": "convert it to a string with str(...)",
}


@functools.cache
def _json_fixes() -> dict[type, str]:
    """The advice for each type JSON cannot store (uuid and decimal load only to give it)."""
    import uuid
    from decimal import Decimal

    types = (tuple, set, frozenset, bytes, bytearray, datetime, date, time, timedelta)
    by_name = {t.__name__: t for t in (*types, Decimal, uuid.UUID)}
    return {by_name[name]: fix for name, fix in _JSON_FIXES_BY_NAME.items()}


_PLAIN_BASES: tuple[type, ...] = (bool, int, float, str, dict, list)


def _json_unsupported(value: Any) -> _Bad:
    cls = type(value)
    if isinstance(value, Enum):
        return _Bad(
            f"is {_a_type(cls)} enum member, which JSON cannot store",
            f"store its .value instead, or open the repository with "
            f"statevcs.MsgpackSerializer(types=[{cls.__qualname__}])",
        )
    if dataclasses.is_dataclass(value) or _is_model(value):
        return _Bad(
            f"is {_a_type(cls)}, which JSON cannot store",
            f"convert it to a dict, or open the repository with "
            f"statevcs.MsgpackSerializer(types=[{cls.__qualname__}])",
        )
    fix = _json_fixes().get(cls)
    if fix is not None:
        return _Bad(f"is {_a_type(cls)}, which JSON cannot store", f"{fix} {_JSON_ALTERNATIVE}")
    for base in _PLAIN_BASES:
        if isinstance(value, base):
            return _Bad(
                f"is {_a_type(cls)} (a subclass of {base.__name__}), which JSON would read "
                f"back as a plain {base.__name__}",
                f"convert it with {base.__name__}(...) {_JSON_ALTERNATIVE}",
            )
    return _Bad(
        f"is {_a_type(cls)}, which JSON cannot store",
        "convert it to a dict, list, str, int, float, bool or None, "
        "or open the repository with statevcs.MsgpackSerializer() "
        "(registering it if it is a dataclass, pydantic model or Enum)",
    )


def _json_bad_float(value: float) -> _Bad:
    return _Bad(
        f"is the float {value!r}, which JSON cannot store (only finite numbers)",
        "store None or a string instead, or open the repository with statevcs.MsgpackSerializer()",
    )


def _json_bad_key(key: Any) -> _Bad:
    return _Bad(
        f"uses the key {_short_repr(key)} ({_a_type(type(key))}), but JSON object keys "
        "must be strings",
        "convert the keys with str(...), or open the repository with "
        "statevcs.MsgpackSerializer(), which keeps non-string keys",
    )


MAX_JSON_DEPTH = 500
"""How deeply JSONSerializer nests lists and dicts.

Python's JSON decoder recurses once per level, so a value is refused when written unless it
can be read back with room to spare in a caller's stack (Python allows 1,000 frames).
"""


class _TooDeep(Exception):
    """Internal: a JSON value nests deeper than MAX_JSON_DEPTH."""


def _walk_json(value: Any, depth: int = 1) -> None:
    """Raise _Bad unless ``value`` is exactly a JSON value (one recursive walk)."""
    cls = type(value)
    if depth > MAX_JSON_DEPTH and (cls is dict or cls is list):
        raise _TooDeep
    if cls is dict:
        for key, item in value.items():
            if type(key) is not str:
                bad = _json_bad_key(key)
                bad.segments.append(_seg(key))
                raise bad
            kind = type(item)
            if kind in _JSON_SCALARS or (kind is float and math.isfinite(item)):
                continue
            try:
                _walk_json(item, depth + 1)
            except _Bad as bad:
                bad.segments.append(_seg(key))
                raise
    elif cls is list:
        for index, item in enumerate(value):
            kind = type(item)
            if kind in _JSON_SCALARS or (kind is float and math.isfinite(item)):
                continue
            try:
                _walk_json(item, depth + 1)
            except _Bad as bad:
                bad.segments.append(f"[{index}]")
                raise
    elif cls is float:
        if not math.isfinite(value):
            raise _json_bad_float(value)
    elif cls not in _JSON_SCALARS:
        raise _json_unsupported(value)


def _find_unencodable_json(value: Any) -> None:
    """Raise _Bad at a string or int of a (valid) JSON value that can't be written."""
    cls = type(value)
    if cls is str:
        _check_text(value)
    elif cls is int:
        if value.bit_length() > _LONG_INT_BITS and not _int_to_text_works(value):
            raise _Bad(
                "is an integer with too many digits to write as JSON text "
                "(see sys.set_int_max_str_digits)",
                "store it as a string, or open the repository with statevcs.MsgpackSerializer()",
            )
    elif cls is dict:
        for key, item in value.items():
            try:
                _check_text(key)
                _find_unencodable_json(item)
            except _Bad as bad:
                bad.segments.append(_seg(key))
                raise
    elif cls is list:
        for index, item in enumerate(value):
            try:
                _find_unencodable_json(item)
            except _Bad as bad:
                bad.segments.append(f"[{index}]")
                raise


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON")


_json_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class JSONSerializer:
    """Stores plain JSON values (the default): dict (str keys), list, str, int, float, bool, None.

    Strict on purpose: tuples, sets, bytes, datetimes, non-string keys, NaN/infinity and custom
    objects are refused with an error naming their path, instead of coming back changed. Key
    order is kept, and equal values always give equal bytes.
    """

    name: str = "json"

    def serialize(self, value: Any, path: str = "value") -> bytes:
        """Return ``value`` as compact UTF-8 JSON; raise SerializationError naming the bad path."""
        try:
            _walk_json(value)
        except _Bad as bad:
            raise bad.error(path) from None
        except (_TooDeep, RecursionError):
            raise _deep(path, MAX_JSON_DEPTH) from None
        try:
            return _json_encoder.encode(value).encode("utf-8")
        except RecursionError:
            raise _deep(path) from None
        except ValueError as exc:  # lone surrogates, ints over the digit limit
            try:
                _find_unencodable_json(value)
            except _Bad as bad:
                raise bad.error(path) from None
            raise SerializationError(
                f"{path} could not be written as JSON ({exc}); "
                "open the repository with statevcs.MsgpackSerializer()",
                path,
            ) from None

    def deserialize(self, data: bytes, path: str = "value") -> Any:
        """Return the value stored in UTF-8 JSON ``data``; raise SerializationError if invalid."""
        try:
            return json.loads(str(data, "utf-8"), parse_constant=_reject_constant)
        except RecursionError:
            raise SerializationError(
                f"{path} could not be read: the JSON is nested too deeply", path
            ) from None
        except (ValueError, TypeError) as exc:
            raise SerializationError(
                f"{path} could not be read: the stored bytes are not valid UTF-8 JSON ({exc}); "
                "run `statevcs fsck` to check the repository",
                path,
            ) from None

    def validate(self, value: Any, path: str = "value") -> None:
        """Raise SerializationError naming the exact key path if ``value`` is not plain JSON."""
        self.serialize(value, path)

    def __repr__(self) -> str:
        return "JSONSerializer()"


# --- msgpack ----------------------------------------------------------------------

_EXT_DATETIME = 1
_EXT_DATE = 2
_EXT_TIME = 3
_EXT_TIMEDELTA = 4
_EXT_UUID = 5
_EXT_DECIMAL = 6
_EXT_SET = 7
_EXT_FROZENSET = 8
_EXT_TUPLE = 9
_EXT_ENUM = 10
_EXT_DATACLASS = 11
_EXT_MODEL = 12
_EXT_BIGINT = 13

MAX_NESTING = 64
"""How deep MsgpackSerializer nests tuples, sets, frozensets and registered objects.

Each of them is a msgpack extension whose payload is decoded by a nested call, so their
nesting is what decoding recursion follows. Values nested deeper are refused when written, and
payloads nested deeper are refused when read, before they can exhaust the C stack. Lists and
dicts between them do not count: msgpack bounds those itself (511 levels inside each).
"""

_FAST_LEVELS = 2  # levels decoded by unpackb: 40 KiB of C stack each, then 1 KiB each

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
_MP_PLAIN = frozenset({str, float, bool, _NoneType, bytes})
_MP_PLAIN_NO_TEXT = frozenset({float, bool, _NoneType, bytes})
_ZONE_KEY = re.compile(r"[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*\Z")
_TZ_FIXED = 0
_TZ_ZONE = 1
_MSGPACK_HINT = (
    "convert it to a supported type (dict, list, tuple, set, str, bytes, int, float, bool, "
    "None, datetime, date, time, timedelta, UUID, Decimal), or wrap it in a dataclass or "
    "pydantic model and register that class with MsgpackSerializer(types=[...])"
)


@functools.cache
def _validate_by_name() -> bool:
    import inspect

    from pydantic import BaseModel

    return "by_name" in inspect.signature(BaseModel.model_validate).parameters


_KIND_ENUM = "enum"
_KIND_DATACLASS = "dataclass"
_KIND_MODEL = "pydantic model"
_KIND_EXT = {_KIND_ENUM: _EXT_ENUM, _KIND_DATACLASS: _EXT_DATACLASS, _KIND_MODEL: _EXT_MODEL}


def _packb(obj: Any) -> bytes:
    data: bytes = msgpack.packb(obj, use_bin_type=True)
    return data


def _unpack_top(data: bytes, ext_hook: Callable[[int, bytes], Any]) -> Any:
    """Decode one msgpack value; no length field may claim more than ``data`` holds.

    unpackb sets every ``max_*_len`` from ``len(data)`` itself (documented since msgpack 1.0),
    so a crafted header can't make it allocate more than the payload's size; passing them
    again would cost a fifth of each call.
    """
    return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True, ext_hook=ext_hook)


def _unpack_nested(data: bytes, ext_hook: Callable[[int, bytes], Any]) -> Any:
    """Like :func:`_unpack_top`, with the decoder's context on the heap, not the C stack."""
    size = len(data)
    unpacker = msgpack.Unpacker(
        None,
        read_size=max(size, 1),
        raw=False,
        strict_map_key=False,
        use_list=True,
        ext_hook=ext_hook,
        max_buffer_size=max(size, 1),  # also bounds every length field, as above
    )
    unpacker.feed(data)
    value = unpacker.unpack()
    if unpacker.tell() != size:
        raise _Corrupt("malformed extension payload (extra bytes after it)")
    return value


def _deeper(depth: int) -> int:
    """Return the depth inside one more extension container; _Bad past MAX_NESTING."""
    if depth >= MAX_NESTING:
        raise _Bad(
            f"is nested deeper than {MAX_NESTING} levels of tuples, sets, frozensets and "
            "registered objects, which MsgpackSerializer could not read back safely",
            "flatten it, or use lists (which do not count toward the limit) for the inner levels",
        )
    return depth + 1


def _array_header(count: int) -> bytes:
    if count < 16:
        return bytes((0x90 | count,))
    if count < 0x10000:
        return b"\xdc" + count.to_bytes(2, "big")
    return b"\xdd" + count.to_bytes(4, "big")


@dataclasses.dataclass(frozen=True)
class _Registered:
    cls: type
    name: str
    kind: str
    fields: tuple[str, ...] = ()


def _registrable_kind(cls: type) -> str | None:
    if issubclass(cls, Enum):
        return _KIND_ENUM
    base = _model_base()
    if base is not None and issubclass(cls, base):
        return _KIND_MODEL
    if dataclasses.is_dataclass(cls):
        return _KIND_DATACLASS
    return None


def _tz_spec(tz: tzinfo | None) -> Any:
    if tz is None:
        return None
    if type(tz) is timezone:
        offset = tz.utcoffset(None)
        name = tz.tzname(None)
        default_name = timezone(offset).tzname(None)
        return [
            _TZ_FIXED,
            offset // timedelta(microseconds=1),
            None if name == default_name else name,
        ]
    from zoneinfo import ZoneInfo

    if type(tz) is ZoneInfo:
        key = tz.key
        if key is None or not _ZONE_KEY.match(key):
            raise _Bad(
                "has a ZoneInfo time zone without a usable key (loaded from a file?)",
                "use zoneinfo.ZoneInfo('Area/City') or a datetime.timezone offset",
            )
        return [_TZ_ZONE, key]
    raise _Bad(
        f"has a time zone of type {_type_name(type(tz))}, which MsgpackSerializer cannot store",
        "use datetime.timezone (a fixed offset) or zoneinfo.ZoneInfo('Area/City') instead",
    )


def _tz_from_spec(spec: Any) -> tzinfo | None:
    if spec is None:
        return None
    if spec[0] == _TZ_FIXED and len(spec) == 3:
        offset = timedelta(microseconds=spec[1])
        return timezone(offset) if spec[2] is None else timezone(offset, spec[2])
    if spec[0] == _TZ_ZONE and len(spec) == 2:
        key = spec[1]
        if not isinstance(key, str) or not _ZONE_KEY.match(key):
            raise _Corrupt(f"invalid time zone key {_short_repr(key)}")
        from zoneinfo import ZoneInfo

        try:
            return ZoneInfo(key)
        except Exception:
            raise _Corrupt(
                f"time zone {key!r} is not available on this machine; "
                "install the tzdata package (pip install tzdata)"
            ) from None
    raise _Corrupt("invalid time zone")


class MsgpackSerializer:
    """Stores rich values with msgpack: datetimes, UUIDs, decimals, bytes, sets, tuples and more.

    Besides everything JSON stores (with any hashable dict keys, e.g. ints), it round-trips
    exactly, keeping types: datetime (naive, ``datetime.timezone`` or ``zoneinfo.ZoneInfo``),
    date, time, timedelta, UUID, Decimal, bytes, set, frozenset, tuple and ints of any size.
    Enum, dataclass and pydantic classes are stored only once registered, under a stable name
    (``module:qualname`` unless given)::

        serializer = MsgpackSerializer(types=[Order, Color])
        serializer.register(Customer, name="shop.Customer")

    Decoding only looks class names up in this registry; it never imports anything.
    """

    name: str = "msgpack"

    def __init__(self, types: Iterable[type] = ()) -> None:
        """Create a serializer that also stores instances of the given Enum/dataclass/models."""
        self._by_class: dict[type, _Registered] = {}
        self._by_name: dict[str, _Registered] = {}
        # One extension hook per nesting depth, made once rather than per decoded value.
        self._hooks = tuple(functools.partial(self._ext_hook, d) for d in range(MAX_NESTING + 1))
        for cls in types:
            self.register(cls)

    # registration ----------------------------------------------------------------

    def register(self, cls: _T, name: str | None = None) -> _T:
        """Allow instances of ``cls`` (an Enum, dataclass or pydantic model class); returns it.

        ``name`` identifies the class inside payloads (default ``module:qualname``); keep it
        stable across renames so old snapshots still load.
        """
        if not isinstance(cls, type):
            raise SerializationError(
                f"register() needs a class, got {_short_repr(cls)}; pass the class itself"
            )
        kind = _registrable_kind(cls)
        if kind is None:
            raise SerializationError(
                f"{_type_name(cls)} can't be registered: only Enum, dataclass and pydantic "
                "BaseModel classes can; wrap other objects in a dataclass"
            )
        if name is None:
            name = f"{cls.__module__}:{cls.__qualname__}"
        if not isinstance(name, str) or not name:
            raise SerializationError(f"register() needs a non-empty string name, got {name!r}")
        existing = self._by_name.get(name)
        if existing is not None and existing.cls is not cls:
            raise SerializationError(
                f"the name {name!r} is already registered for {_type_name(existing.cls)}; "
                f"register {_type_name(cls)} under another name with register(cls, name=...)"
            )
        current = self._by_class.get(cls)
        if current is not None and current.name != name:
            raise SerializationError(
                f"{_type_name(cls)} is already registered as {current.name!r}; "
                "a class can have only one name"
            )
        fields: tuple[str, ...] = ()
        if kind == _KIND_DATACLASS:
            fields = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        entry = _Registered(cls, name, kind, fields)
        self._by_class[cls] = entry
        self._by_name[name] = entry
        return cls

    @property
    def registered(self) -> Mapping[str, type]:
        """The registered classes, by the name they carry in payloads."""
        return {name: entry.cls for name, entry in self._by_name.items()}

    # encoding --------------------------------------------------------------------

    def serialize(self, value: Any, path: str = "value") -> bytes:
        """Return ``value`` as msgpack bytes; raise SerializationError naming the bad path."""
        try:
            return _packb(self._encode(value, False, 0))
        except _Bad as bad:
            raise bad.error(path) from None
        except RecursionError:
            raise _deep(path) from None
        except UnicodeEncodeError:
            try:
                self._encode(value, True, 0)
            except _Bad as bad:
                raise bad.error(path) from None
            raise SerializationError(
                f"{path} contains text that is not valid unicode; remove lone surrogates", path
            ) from None
        except ValueError as exc:  # msgpack's own nesting limit
            raise SerializationError(
                f"{path} could not be written as msgpack ({exc}); "
                "it is probably nested too deeply: flatten it",
                path,
            ) from None

    def validate(self, value: Any, path: str = "value") -> None:
        """Raise SerializationError naming the exact path if ``value`` can't be stored."""
        self.serialize(value, path)

    def _encode(self, value: Any, text: bool, depth: int) -> Any:
        """Return a msgpack-native tree for ``value``; ``text`` checks every string.

        ``depth`` counts the extension containers (tuple, set, registered object) around it.
        """
        cls = type(value)
        if cls in _MP_PLAIN:
            if text and cls is str:
                _check_text(value)
            return value
        if cls is int:
            if _INT_MIN <= value <= _INT_MAX:
                return value
            return msgpack.ExtType(
                _EXT_BIGINT, value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
            )
        if cls is dict:
            plain = _MP_PLAIN_NO_TEXT if text else _MP_PLAIN
            out: dict[Any, Any] = {}
            for key, item in value.items():
                if text or type(key) is not str:
                    try:
                        encoded_key = self._encode(key, text, depth)
                    except _Bad as bad:
                        bad.segments.append(f"[<key {_short_repr(key)}>]")
                        raise
                else:
                    encoded_key = key
                kind = type(item)
                if kind in plain or (kind is int and _INT_MIN <= item <= _INT_MAX):
                    out[encoded_key] = item
                    continue
                try:
                    out[encoded_key] = self._encode(item, text, depth)
                except _Bad as bad:
                    bad.segments.append(_seg(key))
                    raise
            return out
        if cls is list:
            return self._encode_items(value, text, depth)
        encoder = _encoders().get(cls)
        if encoder is not None:
            return encoder(self, value, text, depth)
        entry = self._by_class.get(cls)
        if entry is not None:
            return self._encode_registered(entry, value, text, _deeper(depth))
        raise self._unsupported(value)

    def _encode_items(self, items: Iterable[Any], text: bool, depth: int) -> list[Any]:
        plain = _MP_PLAIN_NO_TEXT if text else _MP_PLAIN
        out: list[Any] = []
        for index, item in enumerate(items):
            kind = type(item)
            if kind in plain or (kind is int and _INT_MIN <= item <= _INT_MAX):
                out.append(item)
                continue
            try:
                out.append(self._encode(item, text, depth))
            except _Bad as bad:
                bad.segments.append(f"[{index}]")
                raise
        return out

    def _encode_tuple(self, value: tuple[Any, ...], text: bool, depth: int) -> Any:
        items = self._encode_items(value, text, _deeper(depth))
        return msgpack.ExtType(_EXT_TUPLE, _packb(items))

    def _encode_set(self, value: set[Any] | frozenset[Any], text: bool, depth: int) -> Any:
        depth = _deeper(depth)
        parts: list[bytes] = []
        for item in value:
            try:
                parts.append(_packb(self._encode(item, text, depth)))
            except _Bad as bad:
                bad.segments.append(f"[<element {_short_repr(item)}>]")
                raise
        parts.sort()  # equal sets give equal bytes, whatever their iteration order
        code = _EXT_SET if type(value) is set else _EXT_FROZENSET
        return msgpack.ExtType(code, _array_header(len(parts)) + b"".join(parts))

    def _encode_registered(self, entry: _Registered, value: Any, text: bool, depth: int) -> Any:
        fields: dict[str, Any] = {}
        if entry.kind == _KIND_ENUM:
            try:
                encoded: Any = self._encode(value.value, text, depth)
            except _Bad as bad:
                bad.segments.append(".value")
                raise
        else:
            if entry.kind == _KIND_DATACLASS:
                fields = {name: getattr(value, name) for name in entry.fields}
            else:
                try:
                    fields = value.model_dump(mode="python", round_trip=True)
                except Exception as exc:
                    raise _Bad(
                        f"is {_a_type(entry.cls)} that pydantic could not dump ({exc})",
                        "fix the model's field values or serializers",
                    ) from None
            encoded = {}
            for field_name, item in fields.items():
                try:
                    encoded[field_name] = self._encode(item, text, depth)
                except _Bad as bad:
                    bad.segments.append(f".{field_name}")
                    raise
        return msgpack.ExtType(_KIND_EXT[entry.kind], _packb([entry.name, encoded]))

    def _unsupported(self, value: Any) -> _Bad:
        cls = type(value)
        kind = _registrable_kind(cls)
        if kind is not None:
            return _Bad(
                f"is {_a_type(cls)} ({kind}), which MsgpackSerializer stores only once the "
                "class is registered",
                f"pass types=[{cls.__qualname__}] to MsgpackSerializer or call "
                f"serializer.register({cls.__qualname__})",
            )
        if isinstance(value, (bytearray, memoryview)):
            return _Bad(
                f"is {_a_type(cls)}, which MsgpackSerializer would read back as bytes",
                "convert it with bytes(...)",
            )
        from decimal import Decimal

        for base in (*_PLAIN_BASES, tuple, set, frozenset, bytes, datetime, date, Decimal):
            if isinstance(value, base):
                return _Bad(
                    f"is {_a_type(cls)} (a subclass of {_type_name(base)}), which "
                    f"MsgpackSerializer would read back as a plain {_type_name(base)}",
                    f"convert it with {base.__name__}(...), or {_MSGPACK_HINT}",
                )
        return _Bad(f"is {_a_type(cls)}, which MsgpackSerializer cannot store", _MSGPACK_HINT)

    # decoding --------------------------------------------------------------------

    def deserialize(self, data: bytes, path: str = "value") -> Any:
        """Return the value stored in msgpack ``data``; raise SerializationError if invalid.

        Classes are found only in this serializer's registry; nothing is imported. Sizes are
        bounded by the payload's length and nesting by :data:`MAX_NESTING`, so hostile bytes
        raise SerializationError instead of exhausting memory or the stack.
        """
        try:
            return _unpack_top(data, self._hooks[0])
        except _Corrupt as exc:
            raise SerializationError(f"{path} could not be read: {exc}", path) from None
        except (RecursionError, msgpack.StackError):
            raise SerializationError(
                f"{path} could not be read: the payload is nested too deeply; "
                "run `statevcs fsck` to check the repository",
                path,
            ) from None
        except Exception as exc:
            raise SerializationError(
                f"{path} could not be read: the stored bytes are not a valid msgpack payload "
                f"({type(exc).__name__}: {exc}); run `statevcs fsck` to check the repository",
                path,
            ) from None

    def _ext_hook(self, depth: int, code: int, data: bytes) -> Any:
        decoder = _DECODERS.get(code)
        if decoder is None:
            raise _Corrupt(
                f"it contains an unknown msgpack extension type {code}; it was written by "
                "another program or a newer statevcs"
            )
        return decoder(self, data, depth)

    def _decode_list(self, data: bytes, depth: int) -> list[Any]:
        """Decode a container extension's payload, which lies one level deeper than it."""
        depth += 1
        if depth > MAX_NESTING:
            raise _Corrupt(
                f"it is nested deeper than {MAX_NESTING} levels of tuples, sets, frozensets "
                "and registered objects, more than MsgpackSerializer writes; it was written by "
                "another program or crafted"
            )
        hook = self._hooks[depth]
        # The first levels may use the fast unpackb (its context lives on the C stack, about
        # 40 KiB); deeper levels use an Unpacker, whose context lives on the heap.
        items = _unpack_top(data, hook) if depth <= _FAST_LEVELS else _unpack_nested(data, hook)
        if type(items) is not list:
            raise _Corrupt("malformed extension payload")
        return items

    def _decode_registered(self, data: bytes, depth: int, kind: str) -> Any:
        items = self._decode_list(data, depth)
        if len(items) != 2 or type(items[0]) is not str:
            raise _Corrupt(f"malformed {kind} payload")
        name, payload = items
        entry = self._by_name.get(name)  # the registry is the only place names are resolved
        if entry is None:
            raise _Corrupt(
                f"it contains {_article(kind)} {kind} named {name!r}, which is not registered "
                "with this serializer; open the repository with "
                "statevcs.MsgpackSerializer(types=[...]) registering that class under that name"
            )
        if entry.kind != kind:
            raise _Corrupt(
                f"{name!r} is registered as {_article(entry.kind)} {entry.kind}, not {kind}"
            )
        try:
            if kind == _KIND_ENUM:
                return entry.cls(payload)
            if type(payload) is not dict or not all(type(k) is str for k in payload):
                raise _Corrupt(f"malformed {kind} payload for {name!r}")
            if kind == _KIND_DATACLASS:
                return entry.cls(**payload)
            model: type[BaseModel] = entry.cls
            if _validate_by_name():
                return model.model_validate(payload, by_name=True)
            return model.model_validate(payload)
        except _Corrupt:
            raise
        except Exception as exc:
            raise _Corrupt(
                f"rebuilding {_type_name(entry.cls)} (registered as {name!r}) failed: "
                f"{type(exc).__name__}: {exc}; the class may have changed since the snapshot "
                "was written"
            ) from None

    def __repr__(self) -> str:
        names = ", ".join(sorted(self._by_name))
        return f"MsgpackSerializer(registered=[{names}])"


def _encode_datetime(ser: MsgpackSerializer, value: datetime, text: bool, depth: int) -> Any:
    fields = [value.year, value.month, value.day, value.hour, value.minute, value.second]
    fields += [value.microsecond, value.fold, _tz_spec(value.tzinfo)]
    return msgpack.ExtType(_EXT_DATETIME, _packb(fields))


def _encode_date(ser: MsgpackSerializer, value: date, text: bool, depth: int) -> Any:
    return msgpack.ExtType(_EXT_DATE, _packb([value.year, value.month, value.day]))


def _encode_time(ser: MsgpackSerializer, value: time, text: bool, depth: int) -> Any:
    fields = [value.hour, value.minute, value.second, value.microsecond, value.fold]
    fields.append(_tz_spec(value.tzinfo))
    return msgpack.ExtType(_EXT_TIME, _packb(fields))


def _encode_timedelta(ser: MsgpackSerializer, value: timedelta, text: bool, depth: int) -> Any:
    return msgpack.ExtType(_EXT_TIMEDELTA, _packb([value.days, value.seconds, value.microseconds]))


def _encode_uuid(ser: MsgpackSerializer, value: uuid.UUID, text: bool, depth: int) -> Any:
    return msgpack.ExtType(_EXT_UUID, value.bytes)


def _encode_decimal(ser: MsgpackSerializer, value: Decimal, text: bool, depth: int) -> Any:
    return msgpack.ExtType(_EXT_DECIMAL, str(value).encode("ascii"))


@functools.cache
def _encoders() -> dict[type, Callable[[MsgpackSerializer, Any, bool, int], Any]]:
    """The encoder of each extension type (uuid and decimal load with the first encoding)."""
    import uuid
    from decimal import Decimal

    return {
        tuple: MsgpackSerializer._encode_tuple,
        set: MsgpackSerializer._encode_set,
        frozenset: MsgpackSerializer._encode_set,
        datetime: _encode_datetime,
        date: _encode_date,
        time: _encode_time,
        timedelta: _encode_timedelta,
        uuid.UUID: _encode_uuid,
        Decimal: _encode_decimal,
    }


def _fields(data: bytes, count: int) -> list[Any]:
    """Decode a leaf extension's payload: a flat array of ``count`` plain values."""
    items = _unpack_top(data, _refuse_ext)
    if type(items) is not list or len(items) != count:
        raise _Corrupt("malformed extension payload")
    return items


def _refuse_ext(code: int, data: bytes) -> Any:
    raise _Corrupt(f"malformed extension payload (an extension of type {code} inside)")


def _decode_datetime(ser: MsgpackSerializer, data: bytes, depth: int) -> Any:
    y, mo, d, h, mi, s, us, fold, tz = _fields(data, 9)
    return datetime(y, mo, d, h, mi, s, us, tzinfo=_tz_from_spec(tz), fold=fold)


def _decode_date(ser: MsgpackSerializer, data: bytes, depth: int) -> Any:
    y, mo, d = _fields(data, 3)
    return date(y, mo, d)


def _decode_time(ser: MsgpackSerializer, data: bytes, depth: int) -> Any:
    h, mi, s, us, fold, tz = _fields(data, 6)
    return time(h, mi, s, us, tzinfo=_tz_from_spec(tz), fold=fold)


def _decode_timedelta(ser: MsgpackSerializer, data: bytes, depth: int) -> Any:
    days, seconds, microseconds = _fields(data, 3)
    return timedelta(days=days, seconds=seconds, microseconds=microseconds)


def _decode_uuid(ser: MsgpackSerializer, data: bytes, depth: int) -> Any:
    import uuid

    return uuid.UUID(bytes=bytes(data))


def _decode_decimal(ser: MsgpackSerializer, data: bytes, depth: int) -> Any:
    from decimal import Decimal

    return Decimal(bytes(data).decode("ascii"))


def _decode_bigint(ser: MsgpackSerializer, data: bytes, depth: int) -> Any:
    return int.from_bytes(data, "big", signed=True)


_DECODERS: dict[int, Callable[[MsgpackSerializer, bytes, int], Any]] = {
    _EXT_DATETIME: _decode_datetime,
    _EXT_DATE: _decode_date,
    _EXT_TIME: _decode_time,
    _EXT_TIMEDELTA: _decode_timedelta,
    _EXT_UUID: _decode_uuid,
    _EXT_DECIMAL: _decode_decimal,
    _EXT_SET: lambda ser, data, depth: set(ser._decode_list(data, depth)),
    _EXT_FROZENSET: lambda ser, data, depth: frozenset(ser._decode_list(data, depth)),
    _EXT_TUPLE: lambda ser, data, depth: tuple(ser._decode_list(data, depth)),
    _EXT_ENUM: lambda ser, data, depth: ser._decode_registered(data, depth, _KIND_ENUM),
    _EXT_DATACLASS: lambda ser, data, depth: ser._decode_registered(data, depth, _KIND_DATACLASS),
    _EXT_MODEL: lambda ser, data, depth: ser._decode_registered(data, depth, _KIND_MODEL),
    _EXT_BIGINT: _decode_bigint,
}


# --- pickle -----------------------------------------------------------------------

_PICKLE_FORMAT = b"\x01"
_DIGEST_SIZE = 32  # HMAC-SHA256
_PICKLE_PROTOCOL = 5


class PickleSerializer:
    """Stores any picklable value, signed with an HMAC key (opt-in; use only with trusted data).

    Each payload is ``format byte + HMAC-SHA256(key, pickle) + pickle``. Loading checks the
    signature first and refuses (:class:`~statevcs.errors.UntrustedPayload`) anything not
    signed with this key, so a tampered repository can't make it run code.
    """

    name: str = "pickle"

    def __init__(self, key: bytes | str) -> None:
        """Create a serializer signing with ``key`` (bytes, or str encoded as UTF-8)."""
        raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        if not raw:
            raise SerializationError(
                "PickleSerializer needs a non-empty key; pass a long random secret, "
                "e.g. PickleSerializer(key=os.environ['STATEVCS_PICKLE_KEY'])"
            )
        self._key = raw

    def _sign(self, body: bytes) -> bytes:
        import hashlib
        import hmac

        return hmac.new(self._key, body, hashlib.sha256).digest()

    def serialize(self, value: Any, path: str = "value") -> bytes:
        """Return ``value`` pickled (protocol 5) and signed; raise SerializationError if not."""
        try:
            import pickle  # pickle, hmac and zoneinfo load where used: start-up pays for none

            body = pickle.dumps(value, protocol=_PICKLE_PROTOCOL)
        except RecursionError:
            raise _deep(path) from None
        except Exception as exc:
            raise SerializationError(
                f"{path} can't be pickled ({type(exc).__name__}: {exc}); make it picklable "
                "(module-level classes and functions, no open files, locks or sockets) or "
                "store plain data instead",
                path,
            ) from None
        return _PICKLE_FORMAT + self._sign(body) + body

    def deserialize(self, data: bytes, path: str = "value") -> Any:
        """Return the unpickled value after checking its signature; raise UntrustedPayload if bad.

        Nothing is unpickled unless the HMAC matches this serializer's key.
        """
        data = bytes(data)
        header = len(_PICKLE_FORMAT) + _DIGEST_SIZE
        if len(data) <= header or data[:1] != _PICKLE_FORMAT:
            raise UntrustedPayload(
                f"{path} is not a signed statevcs pickle payload, so it was refused without "
                "being unpickled; it may be corrupt or written by something else",
                path,
            )
        signature = data[1:header]
        body = data[header:]
        import hmac
        import pickle

        if not hmac.compare_digest(signature, self._sign(body)):
            raise UntrustedPayload(
                f"{path} was not signed with this serializer's key (wrong key, or the bytes were "
                "tampered with), so it was refused without being unpickled; open the repository "
                "with the key it was written with",
                path,
            )
        try:
            return pickle.loads(body)
        except Exception as exc:
            raise SerializationError(
                f"{path} is correctly signed but could not be unpickled "
                f"({type(exc).__name__}: {exc}); a class it needs may have moved or changed",
                path,
            ) from None

    def validate(self, value: Any, path: str = "value") -> None:
        """Raise SerializationError naming ``path`` if ``value`` can't be pickled."""
        self.serialize(value, path)

    def __repr__(self) -> str:
        return "PickleSerializer(key=<hidden>)"


# --- choosing a decoder -----------------------------------------------------------

_OPEN_WITH = {
    "msgpack": "serializer=statevcs.MsgpackSerializer(types=[...]) registering the same classes",
    "pickle": "serializer=statevcs.PickleSerializer(key=...) and the key it was written with",
}


def serializer_for(name: str, configured: StateSerializer) -> StateSerializer:
    """Return the serializer that can decode state written with codec ``name``.

    That is ``configured`` when its name matches, a fresh :class:`JSONSerializer` for "json"
    (always safe), and otherwise a SerializationError saying which serializer to open with.
    """
    if configured.name == name:
        return configured
    if name == JSONSerializer.name:
        return JSONSerializer()
    hint = _OPEN_WITH.get(name)
    if hint is not None:
        message = (
            f"this snapshot's state was written with the {name!r} serializer, but the "
            f"repository is open with {configured.name!r}; open the repository with {hint}"
        )
    else:
        message = (
            f"this snapshot's state was written with an unknown serializer {name!r}, but the "
            f"repository is open with {configured.name!r}; open the repository with the "
            f"serializer that wrote it (one whose name is {name!r})"
        )
    raise SerializationError(message)
