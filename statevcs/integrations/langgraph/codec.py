"""Channel values, list items and pending writes to storable documents and back.

Plain values (JSON types, plus bytes inside documents) are stored as they are, so ``statevcs
show`` and the git mirror can read them; LangChain's own message classes as their fields, with
``role`` and ``content`` on top (what ``statevcs show`` prints) and fields at their defaults left
out (rebuilt as the class itself: no code named by the data runs); anything else, message
subclasses included, through the saver's ``serde`` as its ``(type, bytes)`` pair.

The default serde, :func:`safe_serializer`, is LangGraph's ``JsonPlusSerializer`` restricted
to LangGraph's own allow-list of types (its strict mode): loading never imports a module or
calls a function the data names, and a value of a type it refuses raises
:class:`~statevcs.integrations.langgraph.errors.UnsafeValue` instead of coming back as
something else (when stored too: what it stores always loads back); one that does not decode
raises ``CorruptObject``, never ``None`` in its place.
"""

from __future__ import annotations

import copy
import importlib
import itertools
import math
import operator
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import msgpack
import ormsgpack
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
)
from langchain_core.messages.ai import UsageMetadata
from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_METHODS, SAFE_MSGPACK_TYPES
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import (
    EXT_CONSTRUCTOR_KW_ARGS,
    EXT_CONSTRUCTOR_POS_ARGS,
    EXT_CONSTRUCTOR_SINGLE_ARG,
    EXT_DELTA_SNAPSHOT,
    EXT_METHOD_SINGLE_ARG,
    EXT_NUMPY_ARRAY,
    EXT_PYDANTIC_V1,
    EXT_PYDANTIC_V2,
    JsonPlusSerializer,
    _send_from_args,
)
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from pydantic import BaseModel, TypeAdapter

from ...errors import CorruptObject, SerializationError, StateVCSError
from .errors import UnsafeValue

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
_MAX_DEPTH = 100
# LangChain's own message classes, stored as their fields (a subclass goes through serde, so
# it comes back as itself). The role names what ``statevcs show`` prints, and the class.
_CLASSES: dict[str, type[BaseMessage]] = {
    "user": HumanMessage,
    "assistant": AIMessage,
    "system": SystemMessage,
    "tool": ToolMessage,
    "chat": ChatMessage,
    "function": FunctionMessage,
}
_ROLES: dict[type[BaseMessage], str] = {cls: role for role, cls in _CLASSES.items()}
# Fields left out when at these defaults (None, False or empty), put back when read.
_DEFAULTS: dict[type[BaseMessage], dict[str, Any]] = {
    cls: {
        name: field.default
        for name, field in cls.model_fields.items()
        if name not in ("content", "type")
        and not field.is_required()
        and field.default_factory is None
        and field.default in (None, False)
        and type(field.default) in (type(None), bool)
    }
    | {
        name: field.get_default(call_default_factory=True)
        for name, field in cls.model_fields.items()
        if field.default_factory is not None
        and type(field.get_default(call_default_factory=True)) in (dict, list)
        and not field.get_default(call_default_factory=True)
    }
    for cls in _ROLES
}


# How to fill each field of a message rebuilt without validation: (name, kind, default) with
# kind 0 a constant default, 1 a factory of an empty dict or list, 2 required.
_PLANS: dict[type[BaseMessage], tuple[tuple[str, int, Any], ...]] = {}
for _cls in _ROLES:
    _plan: list[tuple[str, int, Any]] = []
    for _name, _field in _cls.model_fields.items():
        if _field.is_required():
            _plan.append((_name, 2, None))
        elif _field.default_factory is not None:
            _made = _field.get_default(call_default_factory=True)
            _plan.append(
                (_name, 1, type(_made))
                if type(_made) in (dict, list) and not _made
                else (_name, 2, None)
            )
        elif type(_field.default) in (type(None), bool, str, int):
            _plan.append((_name, 0, _field.default))
        else:
            _plan.append((_name, 2, None))
    _PLANS[_cls] = tuple(_plan)
_FIELD_NAMES: dict[type[BaseMessage], frozenset[str]] = {
    cls: frozenset(cls.model_fields) for cls in _ROLES
}
# The ``type`` each class's model_dump writes (a literal: validation refuses any other).
_KINDS: dict[type[BaseMessage], Any] = {cls: cls.model_fields["type"].default for cls in _ROLES}


def _construct(cls: type[BaseMessage], data: dict[str, Any]) -> BaseMessage:
    """``cls(**data)`` for fields a validated ``cls`` produced: set directly, not re-validated.

    The result equals what validation builds (same field values, same fields set, no
    extras); anything unusual (an unknown or missing required field, a field whose value is
    not of its type, another class's ``type``) goes through validation instead. ``data`` must
    be freshly decoded.
    """
    if not data.keys() <= _FIELD_NAMES[cls]:
        return cls(**data)
    reading = _READINGS[_ROLES[cls]][1]
    simple, shapes = reading.simple, reading.shapes
    for name, value in data.items():
        types = simple.get(name)
        if types is not None:
            if type(value) not in types:
                return cls(**data)
        elif name == "type":
            if type(value) is not str or value != _KINDS[cls]:
                return cls(**data)
        else:
            shape = shapes.get(name)
            if shape is None or not shape.admits(value):
                return cls(**data)
    if cls is AIMessage and not _ai_fields_kept(
        data.get("tool_calls", ()),
        data.get("invalid_tool_calls", ()),
        data.get("usage_metadata"),
        data.get("additional_kwargs"),
    ):
        return cls(**data)
    values: dict[str, Any] = {}
    for name, kind, default in _PLANS[cls]:
        if name in data:
            values[name] = data[name]
        elif kind == 0:
            values[name] = default
        elif kind == 1:
            values[name] = default()
        else:
            return cls(**data)
    message = cls.__new__(cls)
    object.__setattr__(message, "__dict__", values)
    object.__setattr__(message, "__pydantic_fields_set__", set(data))
    object.__setattr__(message, "__pydantic_extra__", {})
    object.__setattr__(message, "__pydantic_private__", None)
    return message


_CALL_KEYS = ("name", "args", "id", "type")
_INVALID_CALL_KEYS = ("name", "args", "id", "error", "type")
_USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")
_STR = frozenset({str})
_INT = frozenset({int})
_TEXT_OR_NONE = frozenset({str, type(None)})
_USAGE: TypeAdapter[UsageMetadata] = TypeAdapter(UsageMetadata)
_AI_CHECKED = frozenset({"tool_calls", "invalid_tool_calls", "usage_metadata", "additional_kwargs"})
"""The fields of a stored ``AIMessage`` that :func:`_ai_fields_kept` checks."""


def _ai_fields_kept(tool_calls: Any, invalid: Any, usage: Any, extra: Any) -> bool:
    """Whether ``AIMessage``'s validation keeps these fields exactly as they are.

    It rebuilds each tool call (``create_tool_call``: those four keys, in that order), puts
    usage counts in its order and coerces them, and parses ``additional_kwargs["tool_calls"]``
    when the message has no tool calls: a stored message whose fields it would change (only a
    damaged or foreign one) is validated instead of set directly. Lists were shape-checked.
    """
    for call in tool_calls:
        if not (
            type(call) is dict
            and tuple(call) == _CALL_KEYS
            and type(call["name"]) is str
            and type(call["args"]) is dict
            and _STR.issuperset(map(type, call["args"]))
            and (call["id"] is None or type(call["id"]) is str)
            and type(call["type"]) is str
            and call["type"] == "tool_call"
        ):
            return False
    for call in invalid:
        if not (
            type(call) is dict
            and tuple(call) == _INVALID_CALL_KEYS
            and _TEXT_OR_NONE.issuperset(map(type, call.values()))
            and call["type"] == "invalid_tool_call"
        ):
            return False
    if not tool_calls and not invalid and type(extra) is dict and extra.get("tool_calls"):
        return False
    if usage is None or (
        # The usual counts, in validation's order: what it keeps (checked without it).
        type(usage) is dict
        and tuple(usage) == _USAGE_KEYS
        and _INT.issuperset(map(type, usage.values()))
    ):
        return True
    try:
        validated = _USAGE.validate_python(usage)
    except Exception:  # pydantic's ValidationError, or anything a hostile value raises
        return False
    return _identical(validated, usage)


def _identical(a: Any, b: Any) -> bool:
    """Equal, type for type and key order for key order."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_identical(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class _Shape:
    """What a field's annotation admits, checked without validation: exact types, allowed
    literal values, and for a list the exact types of its items (``None``: anything)."""

    __slots__ = ("items", "types", "values")

    def __init__(self, annotation: Any) -> None:
        self.types: frozenset[type] | None = None
        self.values: frozenset[Any] | None = None
        self.items: frozenset[type] | None = None
        if annotation is Any:
            return
        types: set[type] = set()
        items: set[type] = set()
        values: set[Any] = set()
        for option in _options(annotation):
            origin = get_origin(option)
            if option is Any:
                return
            if origin is Literal:
                values.update(get_args(option))
                types.update(type(v) for v in get_args(option))
            elif option in (str, bool, type(None)):
                types.add(option)
            elif origin is dict or _is_dict(option):
                types.add(dict)
            elif origin is list:
                types.add(list)
                for inner in _options(get_args(option)[0]):
                    if get_origin(inner) is dict or _is_dict(inner):
                        items.add(dict)
                    elif inner in (str, bool, type(None)):
                        items.add(inner)
                    else:
                        raise _Unchecked
            else:
                raise _Unchecked
        self.types = frozenset(types)
        self.values = frozenset(values) if values else None
        self.items = frozenset(items) if list in types else None

    def admits(self, value: Any) -> bool:
        """Whether ``value`` is of the field's type (shallowly: a list's items, no deeper)."""
        types = self.types
        if types is None:
            return True
        kind = type(value)
        if kind not in types:
            return False
        if self.values is not None and kind is not list and value not in self.values:
            return False
        items = self.items
        if kind is list and items is not None:
            return all([type(item) in items for item in value])
        return True


class _Unchecked(Exception):
    """An annotation :class:`_Shape` cannot check: the field always goes through validation."""


def _is_dict(annotation: Any) -> bool:
    # dict itself or a TypedDict (a dict subclass at runtime, whichever typing module made it)
    return isinstance(annotation, type) and issubclass(annotation, dict)


def _options(annotation: Any) -> tuple[Any, ...]:
    return get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)


class _Reading:
    """How to rebuild one message class from a stored document without validation.

    ``template`` holds every field in the class's order at its constant default (factory and
    required fields hold a placeholder until filled); ``factories`` the fields whose default
    is a fresh empty dict or list; ``required`` the required fields other than ``content``;
    ``stored`` the fields :func:`item_doc` leaves out at their defaults (always set when read,
    as validating the rebuilt fields would set them); ``shapes`` the fields a document's
    ``lc`` may name with what each admits (not ``type``: the role implies it, it is never
    stored; nor a field whose annotation cannot be checked cheaply); ``simple`` the exact
    types of those whose check is the value's type alone; ``text`` whether any ``str`` is a
    valid content.
    """

    __slots__ = (
        "content",
        "factories",
        "required",
        "shapes",
        "simple",
        "stored",
        "template",
        "text",
        "tool_calls",
    )

    def __init__(self, cls: type[BaseMessage]) -> None:
        self.template: dict[str, Any] = {}
        factories: list[tuple[str, type]] = []
        required: list[str] = []
        for name, kind, default in _PLANS[cls]:
            self.template[name] = default if kind == 0 else None
            if kind == 1:
                factories.append((name, default))
            elif kind == 2 and name != "content":
                required.append(name)
        self.factories = tuple(factories)
        self.required = frozenset(required)
        self.stored = frozenset(_DEFAULTS[cls]) | {"content"}
        self.shapes: dict[str, _Shape] = {}
        for name, field in cls.model_fields.items():
            if name != "type":
                try:
                    self.shapes[name] = _Shape(field.annotation)
                except _Unchecked:
                    continue
        self.content = self.shapes.get("content")
        self.text = self.content is not None and self.content.admits("")
        self.tool_calls = self.shapes.get("tool_calls")
        self.simple: dict[str, frozenset[type]] = {
            name: shape.types
            for name, shape in self.shapes.items()
            if shape.types is not None and shape.values is None and shape.items is None
        }


_READINGS: dict[str, tuple[type[BaseMessage], _Reading]] = {
    role: (cls, _Reading(cls)) for role, cls in _CLASSES.items()
}
_set_attribute = object.__setattr__


def _stored_message(doc: dict[str, Any]) -> BaseMessage:
    """The message a list item's document stores (its ``"lc"`` key is present).

    The fields a stored document holds were dumped from a validated message of the class
    its role names, so they are set directly (the result equals what validation builds:
    same field values, same fields set, in the class's order). Anything a writer never
    produces (an unknown or missing field, a ``type``, a value not of its field's type) is
    validated instead, and what fails validation is a ``CorruptObject``.
    """
    role = doc.get("role")
    found = _READINGS.get(role) if type(role) is str else None
    fields = doc["lc"]
    if found is None or not isinstance(fields, dict) or "content" not in doc:
        raise CorruptObject("(checkpoint)", "a stored message names no known class")
    cls, reading = found
    content = doc["content"]
    calls = "tool_calls" in doc
    if not (
        (type(content) is str and reading.text)
        or (reading.content is not None and reading.content.admits(content))
    ) or (
        calls and (reading.tool_calls is None or not reading.tool_calls.admits(doc["tool_calls"]))
    ):
        return _validated(cls, fields, doc)
    simple = reading.simple
    for name, value in fields.items():
        types = simple.get(name)
        if types is not None:
            if type(value) not in types:
                return _validated(cls, fields, doc)
            continue
        shape = reading.shapes.get(name)
        if shape is None or not shape.admits(value):
            return _validated(cls, fields, doc)
    if reading.required and not reading.required <= fields.keys():
        return _validated(cls, fields, doc)
    if (
        cls is AIMessage
        # A reply holding none of them (most of a conversation) has nothing to check.
        and (calls or not _AI_CHECKED.isdisjoint(fields))
        and not _ai_fields_kept(
            doc["tool_calls"] if calls else fields.get("tool_calls", ()),
            fields.get("invalid_tool_calls", ()),
            fields.get("usage_metadata"),
            fields.get("additional_kwargs"),
        )
    ):
        return _validated(cls, fields, doc)
    values = reading.template.copy()
    for name, make in reading.factories:
        values[name] = make()
    values.update(fields)
    values["content"] = content
    if calls:
        values["tool_calls"] = doc["tool_calls"]
    fields_set = fields.keys() | reading.stored
    message = cls.__new__(cls)
    _set_attribute(message, "__dict__", values)
    _set_attribute(message, "__pydantic_fields_set__", fields_set)
    _set_attribute(message, "__pydantic_extra__", {})
    _set_attribute(message, "__pydantic_private__", None)
    return message


def _validated(cls: type[BaseMessage], fields: dict[Any, Any], doc: dict[str, Any]) -> BaseMessage:
    data: dict[Any, Any] = {
        k: type(v)() if type(v) in (dict, list) else v for k, v in _DEFAULTS[cls].items()
    }
    data.update(fields)
    data["content"] = doc["content"]
    if "tool_calls" in doc:
        data["tool_calls"] = doc["tool_calls"]
    if not all(type(key) is str for key in data):
        raise CorruptObject("(checkpoint)", "a stored message has a field name that is not text")
    try:
        return cls(**data)
    except Exception as exc:  # pydantic's and LangChain's validators raise several kinds
        raise CorruptObject(
            "(checkpoint)", f"a stored {cls.__name__} does not validate ({exc})"
        ) from None


def is_plain(value: Any, *, allow_bytes: bool, allow_surrogates: bool = False) -> bool:
    """Whether ``value`` reads back equal and of the same types from JSON (or msgpack).

    Exact types only (a ``tuple`` or a ``str`` subclass is not plain: it would come back as
    something else); dict keys must be strings; floats finite; ints within 64 bits; strings
    valid UTF-8 unless ``allow_surrogates`` (msgpack with ``surrogatepass`` keeps those).
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if item is None or kind is bool:
            continue
        if kind is str:
            if not item.isascii() and not allow_surrogates:
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return False
            continue
        if kind is int:
            if not _INT_MIN <= item <= _INT_MAX:
                return False
            continue
        if kind is float:
            if not math.isfinite(item):
                return False
            continue
        if kind is bytes:
            if not allow_bytes:
                return False
            continue
        if depth >= _MAX_DEPTH:
            return False
        if kind is list:
            stack.extend((child, depth + 1) for child in item)
            continue
        if kind is dict:
            for key, child in item.items():
                if type(key) is not str or not is_plain(
                    key, allow_bytes=False, allow_surrogates=allow_surrogates
                ):
                    return False
                stack.append((child, depth + 1))
            continue
        return False
    return True


def wrap(value: Any, serde: SerializerProtocol) -> dict[str, Any]:
    """Return ``value`` as a document: ``{"v": value}`` if plain, else ``{"t": tag, "b": data}``."""
    if is_plain(value, allow_bytes=True):
        return {"v": value}
    if type(value) is str:
        # Lone surrogates: LangGraph's msgpack would store "?" in their place.
        return {"s": value.encode("utf-8", "surrogatepass")}
    if is_plain(value, allow_bytes=True, allow_surrogates=True):
        return {"sp": msgpack.packb(value, use_bin_type=True, unicode_errors="surrogatepass")}
    if _holds_lone_surrogate(value):
        raise SerializationError(
            "the value holds text with lone surrogates (a string cut inside a UTF-16 pair) "
            "inside a type LangGraph's serde encodes, which would store '?' in their place; "
            "repair the text (e.g. text.encode('utf-16', 'surrogatepass').decode('utf-16')) "
            "or keep it in plain dicts, lists and strings, which are stored exactly",
            "a value",
        )
    tag, data = serde.dumps_typed(value)
    return {"t": tag, "b": data}


_WALK_LIMIT = 100_000


def _holds_lone_surrogate(value: Any) -> bool:
    """Whether a string inside ``value`` (containers, models' fields) has a lone surrogate.

    Bounded: a value too large to walk is left to the serde (``False``).
    """
    stack = [value]
    seen: set[int] = set()
    while stack:
        if len(seen) > _WALK_LIMIT:
            return False
        item = stack.pop()
        kind = type(item)
        if kind is str or isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return True
            continue
        if item is None or isinstance(item, (bool, int, float, bytes, bytearray)):
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, BaseModel):
            stack.append(item.__dict__)
            stack.append(item.__pydantic_extra__)
        elif hasattr(item, "__dict__") and isinstance(vars(item), dict):
            stack.append(vars(item))
    return False


def wrap_messages(value: Any, channel: str) -> dict[str, Any] | None:
    """Return a message-valued ``value`` as item documents (``None``: not that shape).

    A LangChain message of one of LangChain's own classes is ``{"m": doc}``, an exact list of
    them ``{"ml": [doc, ...]}``, an exact dict of str to such lists ``{"md": {key: [doc]}}``
    (the shape of a graph's input); each ``doc`` is the one :func:`item_doc` gives a list
    channel's item (a dict's items name its key as their channel), so the store keeps one
    object for a message whether it is in a list channel, a pending write or an input.
    """
    kind = type(value)
    if kind in _ROLES:
        doc = _lc_doc(channel, value)
        return None if doc is None else {"m": doc}
    if kind is list:
        docs = _message_docs(value, channel)
        return None if docs is None else {"ml": docs}
    if kind is dict and value:
        out: dict[str, Any] = {}
        for key, items in value.items():
            if type(key) is not str or type(items) is not list:
                return None
            docs = _message_docs(items, key)
            if docs is None:
                return None
            out[key] = docs
        return {"md": out}
    return None


def _message_docs(items: list[Any], channel: str) -> list[dict[str, Any]] | None:
    if not items or type(channel) is not str or not is_plain(channel, allow_bytes=False):
        return None
    docs = []
    for item in items:
        doc = _lc_doc(channel, item)
        if doc is None:
            return None
        docs.append(doc)
    return docs


def _lc_doc(channel: str, item: Any) -> dict[str, Any] | None:
    """The field document of one of LangChain's own messages (``None``: not one, or not plain)."""
    if type(item) not in _ROLES:
        return None
    try:
        doc = item_doc(channel, item, _NO_SERDE)
    except TypeError:
        return None
    return doc if "lc" in doc or "mb" in doc else None


def unwrap(doc: Any, serde: SerializerProtocol, where: str) -> Any:
    """Return the value :func:`wrap` (or :func:`wrap_messages`) stored as ``doc``."""
    if isinstance(doc, dict):
        if "v" in doc:
            return doc["v"]
        if "s" in doc and isinstance(doc["s"], bytes):
            try:
                return doc["s"].decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                _bad(where)
        if "sp" in doc:
            return _surrogate_value(doc["sp"], where)
        if "m" in doc:
            return _message(doc["m"], where)
        if "ml" in doc and isinstance(doc["ml"], list):
            return [_message(d, where) for d in doc["ml"]]
        if "md" in doc and isinstance(doc["md"], dict):
            return {
                str(k): [_message(d, where) for d in v] if isinstance(v, list) else _bad(where)
                for k, v in doc["md"].items()
            }
        tag, data = doc.get("t"), doc.get("b")
        if isinstance(tag, str) and isinstance(data, bytes):
            return _loaded(serde, tag, data, where)
    raise CorruptObject("(checkpoint)", f"{where} is not a stored LangGraph value")


def _loaded(serde: SerializerProtocol, tag: str, data: bytes, where: str) -> Any:
    """``serde.loads_typed((tag, data))``, any failure a ``StateVCSError`` naming ``where``.

    The default serde raises ``CorruptObject`` or ``UnsafeValue`` itself; one passed by the
    caller (LangGraph's ``JsonPlusSerializer``, an ``EncryptedSerializer``) raises whatever
    its decoder does (``NotImplementedError`` for an unknown tag, ``ValueError`` for damaged
    msgpack, a cipher's error for a wrong key).
    """
    try:
        return serde.loads_typed((tag, data))
    except CorruptObject as exc:
        raise CorruptObject(exc.object_id, f"{where}: {exc.reason}") from None
    except StateVCSError:
        raise
    except Exception as exc:
        raise CorruptObject(
            "(checkpoint)",
            f"{where} does not load with {type(serde).__name__} ({_short(exc)})",
        ) from None


def _no_ext(code: int, data: bytes) -> Any:
    raise ValueError(f"msgpack extension {code}: not stored by this saver")


def _surrogate_value(packed: Any, where: str) -> Any:
    if type(packed) is not bytes:
        _bad(where)
    try:
        value = msgpack.unpackb(
            packed, raw=False, unicode_errors="surrogatepass", strict_map_key=True, ext_hook=_no_ext
        )
    except (ValueError, TypeError) as exc:
        raise CorruptObject(
            "(checkpoint)", f"{where} does not decode ({type(exc).__name__})"
        ) from None
    if not is_plain(value, allow_bytes=True, allow_surrogates=True):
        _bad(where)
    return value


def _bad(where: str) -> Any:
    raise CorruptObject("(checkpoint)", f"{where} is not a stored LangGraph value")


def _message(doc: Any, where: str) -> Any:
    if not (isinstance(doc, dict) and ("lc" in doc or "mb" in doc)):
        _bad(where)
    return item_value(doc, _NO_SERDE)


class _NoSerde:
    """Stands for a serde where none may be used (LangChain's own messages need none)."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        raise TypeError("no serde here")

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        raise TypeError("no serde here")


_NO_SERDE: Any = _NoSerde()


def item_doc(channel: str, item: Any, serde: SerializerProtocol) -> dict[str, Any]:
    """Return one item of list channel ``channel`` as a message document.

    A LangChain message is ``{"channel", "role", "content", "lc": other fields}`` (plus its
    ``tool_calls`` if any); a string
    ``{"channel", "content"}``; anything else ``{"channel", "v"}`` or ``{"channel", "t", "b"}``.
    """
    kind = type(item)
    role = _ROLES.get(kind)
    if role is not None:
        data = message_to_dict(item)["data"]
        content = data.pop("content")
        data.pop("type", None)
        for name, default in _DEFAULTS[kind].items():
            if name in data and type(data[name]) is type(default) and data[name] == default:
                del data[name]
        doc = {"channel": channel, "role": role, "content": content, "lc": data}
        if "tool_calls" in data:
            doc["tool_calls"] = data.pop("tool_calls")  # on top too: statevcs show prints them
        if is_plain(doc, allow_bytes=True):
            return doc
        if is_plain(doc, allow_bytes=True, allow_surrogates=True):
            # Lone surrogates (text cut inside a UTF-16 pair): LangGraph's msgpack would store
            # "?" in their place; the fields go as msgpack bytes that keep them.
            del doc["channel"]
            packed = msgpack.packb(doc, use_bin_type=True, unicode_errors="surrogatepass")
            # What `statevcs show` prints (escaped text); the message is read from "mb".
            preview: dict[str, Any] = {
                k: _escaped(doc[k]) for k in ("content", "tool_calls") if k in doc
            }
            return {"channel": channel, "role": role, **preview, "mb": packed}
    if kind is str and is_plain(item, allow_bytes=False):
        return {"channel": channel, "content": item}
    return {"channel": channel, **wrap(item, serde)}


def item_value(doc: Any, serde: SerializerProtocol) -> Any:
    """Return the list item :func:`item_doc` stored as ``doc``."""
    if isinstance(doc, dict):
        if "lc" in doc:
            return _stored_message(doc)
        if "mb" in doc:
            return _stored_message(_surrogate_fields(doc))
        if "content" in doc and "v" not in doc and "t" not in doc and "s" not in doc:
            return doc["content"]
    return unwrap(doc, serde, "a list channel's item")


_IMMUTABLE = frozenset({str, int, float, bool, bytes, type(None)})


class _NotNative(Exception):
    """A value holds something other than msgpack's own types (copied by ``deepcopy``)."""


def _copy_native(value: Any) -> Any:
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is dict:
        if not value:
            return {}
        return {k: v if type(v) in _IMMUTABLE else _copy_native(v) for k, v in value.items()}
    if kind is list:
        if not value:
            return []
        return [v if type(v) in _IMMUTABLE else _copy_native(v) for v in value]
    raise _NotNative


def fresh_copy(item: Any) -> Any:
    """A copy of a decoded list item that shares nothing mutable with it, equal type for type.

    LangChain's own messages and values made of msgpack's types (what the decoder builds) are
    copied field by field; anything else goes through :func:`copy.deepcopy`.
    """
    kind = type(item)
    try:
        if kind in _ROLES:
            extra = item.__pydantic_extra__
            private = item.__pydantic_private__
            message = kind.__new__(kind)
            fields = {
                k: v if type(v) in _IMMUTABLE else _copy_native(v) for k, v in item.__dict__.items()
            }
            _set_attribute(message, "__dict__", fields)
            _set_attribute(message, "__pydantic_fields_set__", set(item.__pydantic_fields_set__))
            _set_attribute(
                message, "__pydantic_extra__", None if extra is None else _copy_native(extra)
            )
            _set_attribute(
                message, "__pydantic_private__", None if private is None else _copy_native(private)
            )
            return message
        return _copy_native(item)
    except _NotNative:
        return copy.deepcopy(item)


def _escaped(value: Any) -> Any:
    """``value`` with every string's lone surrogates written as ``\\udXXX`` (valid UTF-8)."""
    if type(value) is str:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if type(value) is dict:
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if type(value) is list:
        return [_escaped(v) for v in value]
    return value


def _surrogate_fields(doc: dict[str, Any]) -> dict[str, Any]:
    """The message document :func:`item_doc` packed to keep lone surrogates."""
    packed = doc["mb"]
    try:
        if type(packed) is not bytes:
            raise ValueError("not bytes")
        fields = msgpack.unpackb(
            packed, raw=False, unicode_errors="surrogatepass", strict_map_key=True, ext_hook=_no_ext
        )
    except (ValueError, TypeError, msgpack.exceptions.ExtraData) as exc:
        raise CorruptObject(
            "(checkpoint)", f"a stored message's packed fields do not decode ({type(exc).__name__})"
        ) from None
    if type(fields) is not dict or "lc" not in fields or "mb" in fields:
        raise CorruptObject("(checkpoint)", "a stored message's packed fields are not a message")
    if doc.get("role") != fields.get("role"):
        raise CorruptObject("(checkpoint)", "a stored message names two roles")
    return fields


def item_channel(doc: Any) -> str:
    """Return the channel a stored list item belongs to."""
    if isinstance(doc, dict) and isinstance(doc.get("channel"), str):
        return str(doc["channel"])
    raise CorruptObject("(checkpoint)", "a list channel's item names no channel")


def wrap_writes(
    writes: Mapping[tuple[str, int], tuple[str, str, Any, str]],
) -> list[list[Any]]:
    """Return stored writes ``{(task_id, idx): (task_id, channel, doc, task_path)}`` in order.

    The order is LangGraph's ``writes_sort_key``: ``(task_path, task_id, idx)``.
    """
    ordered = sorted(writes.items(), key=lambda kv: (kv[1][3], kv[0][0], kv[0][1]))
    return [
        [task_id, idx, channel, doc, path] for (task_id, idx), (_, channel, doc, path) in ordered
    ]


def read_writes(doc: Any) -> dict[tuple[str, int], tuple[str, str, Any, str]]:
    """Return the writes :func:`wrap_writes` stored (values still wrapped)."""
    if doc is None:
        return {}
    if not isinstance(doc, list):
        raise CorruptObject("(checkpoint)", "pending writes should be a list")
    result: dict[tuple[str, int], tuple[str, str, Any, str]] = {}
    for entry in doc:
        if not (isinstance(entry, list) and len(entry) == 5):
            raise CorruptObject("(checkpoint)", "a pending write should have five fields")
        task_id, idx, channel, value, path = entry
        if not (isinstance(task_id, str) and isinstance(idx, int) and isinstance(channel, str)):
            raise CorruptObject("(checkpoint)", "a pending write has fields of the wrong type")
        result[(task_id, idx)] = (task_id, channel, value, str(path))
    return result


# --- fingerprints: exact change detection for list items ---------------------------------

_FP_OPTIONS = (
    ormsgpack.OPT_PASSTHROUGH_SUBCLASS
    | ormsgpack.OPT_PASSTHROUGH_TUPLE
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_UUID
    | ormsgpack.OPT_PASSTHROUGH_ENUM
)
# Weak: a class made at run time (one per request, say) must not live on for a code; codes
# come from a counter, never reused, so a code still never names two classes.
_TYPE_CODES: weakref.WeakKeyDictionary[type, int] = weakref.WeakKeyDictionary()
_NEXT_CODE = itertools.count()
_TYPE_LOCK = threading.Lock()


def _type_code(kind: type) -> int:
    code = _TYPE_CODES.get(kind)
    if code is None:
        with _TYPE_LOCK:
            code = _TYPE_CODES.get(kind)
            if code is None:
                code = _TYPE_CODES[kind] = next(_NEXT_CODE)
    return code


_SCALARS = frozenset({str, int, float, bool, type(None)})
# What msgpack stores as raw bytes (bytes, bytearray and memoryview all alike), or as an
# extension a value could forge: a fingerprint holding one proves nothing about its type.
_RAW = (bytes, bytearray, memoryview, ormsgpack.Ext)
_MESSAGE_KINDS = frozenset(_ROLES)
_FIELDS = operator.attrgetter("__dict__")
_EXTRA = operator.attrgetter("__pydantic_extra__")
_TYPE_EQ = type.__eq__


def _raw_inside(value: Any) -> bool:
    """Whether msgpack encodes some part of ``value`` natively as raw bytes or an extension.

    Follows what :class:`Fingerprinter` encodes natively (exact lists, dicts, tuples and
    pydantic models' fields); everything else goes through the serde, which keeps its type.
    Call it only on a value msgpack encoded already (so it holds no cycle).
    """
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind is list or kind is tuple:
            stack.extend(item)
        elif kind is dict:
            stack.extend(item.values())
        elif isinstance(item, _RAW):
            return True
        elif isinstance(item, BaseModel):
            stack.append(item.__dict__)
            stack.append(item.__pydantic_extra__)
    return False


def _header(count: int) -> int:
    """Length of msgpack's header of an array of ``count`` items."""
    return 1 if count < 16 else 3 if count < 0x10000 else 5


@dataclass(frozen=True, slots=True)
class ListPrint:
    """The fingerprint of a whole list: equal prefixes mean equal leading items, exactly.

    ``kinds`` holds each item's class (compared by identity: classes whose metaclass
    redefines ``==`` get no print); ``body`` and ``extras``
    the concatenated msgpack encodings of each item's fields and pydantic extras (msgpack is
    self-delimiting, so a prefix of the bytes is the encoding of a prefix of the items).
    ``tagged``: raw bytes were found, so each item was encoded alone with its bytes tagged
    by type (slower, Python per item); prints of different modes never match.
    """

    kinds: tuple[type, ...]
    body: bytes
    extras: bytes
    tagged: bool

    @property
    def count(self) -> int:
        """Number of items."""
        return len(self.kinds)

    def extends(self, old: ListPrint) -> bool:
        """Whether the first ``old.count`` items are exactly the items ``old`` was taken of."""
        if not old.kinds:
            return True
        return (
            self.tagged == old.tagged
            and self.kinds[: len(old.kinds)] == old.kinds
            and self.body.startswith(old.body)
            and self.extras.startswith(old.extras)
        )


EMPTY_PRINT = ListPrint((), b"", b"", False)
"""The fingerprint of an empty list."""


class Fingerprinter:
    """Exact, cheap fingerprints of list items: equal bytes mean the item stores the same.

    A fingerprint is a msgpack encoding that keeps what JSON loses: bool, int and float
    differ; tuples, subclasses, pydantic models (messages) carry their class; raw bytes their
    type; other values are the serde's own encoding. Fingerprints are bytes, so nothing the
    caller mutates later can change one already taken (the saver compares new items against
    them, never against the live objects it was once given).
    """

    def __init__(self, serde: SerializerProtocol) -> None:
        # A print is never loaded: the default serde's load-back check would only cost time.
        self._dumps = (
            serde.dumps_unchecked if isinstance(serde, SafeSerializer) else serde.dumps_typed
        )
        self.items_scanned = 0
        """Items walked in Python so far (a cost counter: new items, not the whole list)."""

    def _pack(self, value: Any) -> bytes:
        return ormsgpack.packb(value, default=self._default, option=_FP_OPTIONS)

    def _default(self, value: Any) -> Any:
        kind = type(value)
        if isinstance(value, BaseModel):
            body: Any = [_type_code(kind), value.__dict__, value.__pydantic_extra__]
            return ormsgpack.Ext(1, self._pack(body))
        if kind is tuple:
            return ormsgpack.Ext(2, self._pack(list(value)))
        tag, data = self._dumps(value)
        return ormsgpack.Ext(3, ormsgpack.packb([_type_code(kind), tag, data]))

    def _tag(self, value: Any) -> Any:
        """``value`` with raw bytes tagged by type (a copy of its native containers)."""
        kind = type(value)
        if kind in _SCALARS:
            return value
        if kind is list:
            return [self._tag(v) for v in value]
        if kind is dict:
            return {k: self._tag(v) for k, v in value.items()}
        if kind is tuple:
            return ormsgpack.Ext(2, self._pack([self._tag(v) for v in value]))
        if kind is bytes:
            return ormsgpack.Ext(4, value)
        if kind is bytearray:
            return ormsgpack.Ext(5, bytes(value))
        if kind is memoryview or kind is ormsgpack.Ext:
            raise TypeError("no exact fingerprint")
        if isinstance(value, BaseModel):
            body = [
                _type_code(kind),
                self._tag(value.__dict__),
                self._tag(value.__pydantic_extra__),
            ]
            return ormsgpack.Ext(1, self._pack(body))
        return value  # a subclass or another type: the serde's encoding, with its class

    def __call__(self, item: Any) -> bytes | None:
        """The item's fingerprint (``None``: it has none, so it always counts as changed)."""
        kind = type(item)
        try:
            payload: list[Any] = (
                # LangChain's own messages (most items): one encoding of their fields.
                [-1 - _type_code(kind), item.__dict__, item.__pydantic_extra__]
                if kind in _ROLES
                else [_type_code(kind), item]
            )
            data = self._pack(payload)  # first: it fails on a cycle, which the walk would not
            self.items_scanned += 1
            if _raw_inside(payload):
                data = self._pack(self._tag(payload))
            return data
        except Exception:
            return None

    def many(self, items: Iterable[Any]) -> list[bytes | None]:
        """Fingerprints of ``items``, in order."""
        return [self(item) for item in items]

    def of_list(
        self, items: Sequence[Any], parent: ListPrint | None = None
    ) -> tuple[ListPrint | None, bool]:
        """The fingerprint of a whole list, and whether it extends ``parent``'s.

        One msgpack encoding of every item's fields (in C: no Python per item); only the
        items after a matching ``parent`` prefix are walked for raw bytes. ``None``: some
        item has no fingerprint (the list always counts as changed).
        """
        kinds = tuple(map(type, items))
        classes = frozenset(kinds)
        if not all(type(c).__eq__ is _TYPE_EQ for c in classes):
            return None, False
        if parent is None or not parent.tagged:
            if _MESSAGE_KINDS.issuperset(classes):
                fields: list[Any] = list(map(_FIELDS, items))
                extra: list[Any] = list(map(_EXTRA, items))
            else:
                fields = [i.__dict__ if type(i) in _ROLES else i for i in items]
                extra = [i.__pydantic_extra__ if type(i) in _ROLES else None for i in items]
            try:
                body = self._pack(fields)[_header(len(items)) :]
                extras = self._pack(extra)[_header(len(items)) :]
            except Exception:
                return None, False
            made = ListPrint(kinds, body, extras, False)
            kept = parent is not None and made.extends(parent)
            start = parent.count if kept and parent is not None else 0
            self.items_scanned += len(items) - start
            if not any(_raw_inside((fields[i], extra[i])) for i in range(start, len(items))):
                return made, kept
        parts = self.many(items)
        if None in parts:
            return None, False
        made = ListPrint(kinds, b"".join(parts), b"", True)  # type: ignore[arg-type]
        return made, parent is not None and made.extends(parent)


# --- the default serde ---------------------------------------------------------------------

# What LangGraph's msgpack encoder writes for each extension it rebuilds by name: the number of
# fields ((module, name, argument) or (module, name, argument, method)).
_NAMED = {
    EXT_CONSTRUCTOR_SINGLE_ARG: 3,
    EXT_CONSTRUCTOR_POS_ARGS: 3,
    EXT_CONSTRUCTOR_KW_ARGS: 3,
    EXT_METHOD_SINGLE_ARG: 4,
    EXT_PYDANTIC_V1: 3,
    EXT_PYDANTIC_V2: 4,
}
_KEYWORDS = frozenset({EXT_CONSTRUCTOR_KW_ARGS, EXT_PYDANTIC_V1, EXT_PYDANTIC_V2})
_SEND = ("langgraph.types", "Send")
_REASON_LIMIT = 200


class _Load:
    """One msgpack load by a :class:`SafeSerializer`, and the first error an extension met.

    ormsgpack replaces an ext hook's exception with a bare ``ValueError("ext_hook failed")``,
    so the hook keeps its own error here for :meth:`SafeSerializer._unpack` to raise.
    """

    __slots__ = ("error", "serde", "storing")

    def __init__(self, serde: SafeSerializer, storing: bool) -> None:
        self.serde = serde
        self.storing = storing
        self.error: StateVCSError | None = None

    def unpack(self, data: bytes) -> Any:
        return ormsgpack.unpackb(data, ext_hook=self.hook, option=ormsgpack.OPT_NON_STR_KEYS)

    def hook(self, code: int, data: bytes) -> Any:
        try:
            return self.serde._extension(code, data, self)
        except StateVCSError as exc:
            if self.error is None:
                self.error = exc
            raise
        except Exception as exc:  # a constructor's own error, a recursion limit, ...
            if self.error is None:
                self.error = CorruptObject(
                    "(checkpoint)", f"a stored value does not decode ({_short(exc)})"
                )
            raise


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: " + "; ".join(str(exc).split("\n"))
    return text if len(text) <= _REASON_LIMIT else text[: _REASON_LIMIT - 3] + "..."


class SafeSerializer(JsonPlusSerializer):
    """LangGraph's ``JsonPlusSerializer`` in strict mode that refuses instead of degrading.

    Loading builds only the types of LangGraph's allow-list (``SAFE_MSGPACK_TYPES``: messages,
    ``Send``, ``Interrupt``, ``Command``, datetimes, sets, ...) plus those passed as
    ``allowed_msgpack_modules`` or added by ``with_msgpack_allowlist``; it never imports a
    module the data names otherwise, and never unpickles. A value of another type raises
    ``UnsafeValue``; a value that does not decode (damaged msgpack, an extension LangGraph
    never writes, fields its class rejects, a tag this serde never writes) ``CorruptObject``.
    LangGraph itself would hand back the raw fields, or ``None``, instead: a silent change.

    Storing checks the same: :meth:`dumps_typed` refuses a value its own load would refuse,
    so what is stored always loads back.
    """

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """Encode ``obj``; ``UnsafeValue`` (or ``SerializationError``) if it would not load back."""
        tag, data = super().dumps_typed(obj)
        if tag == "msgpack" and not self._custom_unpack_ext_hook:
            try:
                self._unpack(data, storing=True)
            except CorruptObject as exc:
                raise SerializationError(
                    f"a value of type {type(obj).__name__} does not load back from its own "
                    f"encoding ({exc.reason}), so it is not stored; store a value whose class "
                    "rebuilds from its fields (pydantic: model_validate(model_dump()))"
                ) from None
        return tag, data

    def dumps_unchecked(self, obj: Any) -> tuple[str, bytes]:
        """LangGraph's encoding of ``obj``, without the load-back check (for fingerprints)."""
        return super().dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Load a value: ``UnsafeValue`` for a type this serde may not build (or pickle),
        ``CorruptObject`` for one that does not decode; never a silent ``None``."""
        if not (isinstance(data, tuple) and len(data) == 2 and type(data[0]) is str):
            raise CorruptObject("(checkpoint)", "a stored value is not a (type, bytes) pair")
        tag, payload = data
        if not isinstance(payload, (bytes, bytearray)):
            raise CorruptObject("(checkpoint)", f"a stored {tag!r} value holds no bytes")
        if self._custom_unpack_ext_hook or (tag == "pickle" and self.pickle_fallback):
            try:
                return super().loads_typed(data)
            except Exception as exc:
                raise CorruptObject(
                    "(checkpoint)", f"a stored value does not decode ({_short(exc)})"
                ) from None
        if tag == "msgpack":
            return self._unpack(bytes(payload), storing=False)
        if tag == "bytes":
            return bytes(payload)
        if tag == "bytearray":
            return bytearray(payload)
        if tag == "null":
            if payload:
                raise CorruptObject("(checkpoint)", "a stored 'null' value holds bytes")
            return None
        if tag == "pickle":
            raise UnsafeValue(
                "a stored value is a pickle (written by a saver whose serde has "
                "pickle_fallback=True); unpickling runs code, so this saver's serde refuses it. "
                "If you trust this repository, read it with "
                "StateVCSSaver(repo, serde=JsonPlusSerializer(pickle_fallback=True))"
            )
        if tag == "json":
            raise UnsafeValue(
                "a stored value is in LangGraph's old 'json' format, which this saver never "
                "writes and its serde does not load (its reviver imports the classes the data "
                "names); if you trust this repository, read it with "
                "StateVCSSaver(repo, serde=JsonPlusSerializer())"
            )
        raise CorruptObject("(checkpoint)", f"a stored value has the unknown type tag {tag!r}")

    def _unpack(self, data: bytes, *, storing: bool) -> Any:
        load = _Load(self, storing)
        try:
            return load.unpack(data)
        except Exception as exc:  # ormsgpack's own errors are ValueError and TypeError
            if load.error is not None:
                raise load.error from None
            raise CorruptObject(
                "(checkpoint)", f"a stored value does not decode as msgpack ({_short(exc)})"
            ) from None

    def _allows(self, module: str, name: str) -> bool:
        if (module, name) in SAFE_MSGPACK_TYPES:
            return True
        allowed = self._allowed_msgpack_modules
        return allowed is True or (allowed is not None and (module, name) in allowed)

    def _refuse(self, path: str, pair: tuple[str, str] | None, load: _Load) -> UnsafeValue:
        if pair is None:  # a method call: LangGraph allows only its own few, whatever the list
            advice = (
                "LangGraph's serde never allows it; store a value of the class itself (a "
                "datetime.datetime, not a subclass)"
            )
        else:
            advice = f"allow it: saver = saver.with_allowlist([{pair!r}])"
        if load.storing:
            return UnsafeValue(
                f"a value to store holds {path}, a type the saver's serde would refuse to load "
                f"back (loading a type nobody allowed could run code), so nothing was stored; to "
                f"store it, {advice}"
            )
        return UnsafeValue(
            f"a stored value holds {path}, a type the saver's serde may not load (loading it "
            f"could run code); if you trust this repository, {advice}"
        )

    def _extension(self, code: int, data: bytes, load: _Load) -> Any:
        """Rebuild one msgpack extension as LangGraph's encoder wrote it, or raise."""
        if code == EXT_NUMPY_ARRAY:
            array = self._unpack_ext_hook(code, data)  # LangGraph's: None when it cannot
            if array is None:
                raise CorruptObject(
                    "(checkpoint)", "a stored numpy array does not load (is numpy installed?)"
                )
            return array
        parts = load.unpack(data)
        if code == EXT_DELTA_SNAPSHOT:
            return _DeltaSnapshot(parts)
        size = _NAMED.get(code)
        if size is None:
            raise CorruptObject(
                "(checkpoint)", f"a stored value holds msgpack extension {code}, not LangGraph's"
            )
        if not (
            type(parts) is list
            and len(parts) == size
            and type(parts[0]) is str
            and type(parts[1]) is str
        ):
            raise CorruptObject("(checkpoint)", f"a stored msgpack extension {code} is malformed")
        module, name, argument = parts[0], parts[1], parts[2]
        if code == EXT_PYDANTIC_V2 and type(argument) is dict:
            # LangChain's own messages skip validation when their fields are of their types
            # (a validated message's model_dump): _construct rebuilds them equal.
            message = _DUMPED.get((module, name))  # (all on LangGraph's own allow-list)
            if message is not None:
                try:
                    return _construct(message, argument)
                except Exception as exc:  # pydantic's and LangChain's validators raise several
                    raise _not_rebuilt(module, name, exc) from None
        if code == EXT_METHOD_SINGLE_ARG:
            method = parts[3]
            if type(method) is not str or (module, name, method) not in SAFE_MSGPACK_METHODS:
                raise self._refuse(f"{module}.{name}.{method}", None, load)
        elif not self._allows(module, name):
            raise self._refuse(f"{module}.{name}", (module, name), load)
        if code in _KEYWORDS:
            if type(argument) is not dict or not all(type(k) is str for k in argument):
                raise CorruptObject("(checkpoint)", f"a stored {module}.{name} has no field map")
        elif code == EXT_CONSTRUCTOR_POS_ARGS and type(argument) is not list:
            raise CorruptObject("(checkpoint)", f"a stored {module}.{name} has no argument list")
        target = _rebuilt(module, name, lambda: getattr(importlib.import_module(module), name))
        if code == EXT_METHOD_SINGLE_ARG:
            return _rebuilt(module, name, lambda: getattr(target, method)(argument))
        if code == EXT_CONSTRUCTOR_SINGLE_ARG:
            return _rebuilt(module, name, lambda: target(argument))
        if code == EXT_CONSTRUCTOR_POS_ARGS:
            if (module, name) == _SEND:  # its timeout is keyword-only
                if len(argument) not in (2, 3):
                    raise CorruptObject("(checkpoint)", "a stored Send has a wrong argument count")
                return _rebuilt(module, name, lambda: _send_from_args(argument))
            return _rebuilt(module, name, lambda: target(*argument))
        return _rebuilt(module, name, lambda: target(**argument))


def _rebuilt(module: str, name: str, build: Callable[[], Any]) -> Any:
    """``build()``, any failure a ``CorruptObject`` naming the class (never a fallback value)."""
    try:
        return build()
    except StateVCSError:
        raise
    except Exception as exc:
        raise _not_rebuilt(module, name, exc) from None


def _not_rebuilt(module: str, name: str, exc: Exception) -> CorruptObject:
    return CorruptObject(
        "(checkpoint)", f"a stored {module}.{name} does not rebuild ({_short(exc)})"
    )


# (module, class name) as the msgpack encoder names a message -> the message class.
_DUMPED: dict[tuple[str, str], type[BaseMessage]] = {
    (cls.__module__, cls.__name__): cls for cls in _ROLES
}


def safe_serializer(allowed: Iterable[tuple[str, ...] | type] | None = None) -> SafeSerializer:
    """The saver's default serde: strict LangGraph types only, plus ``allowed``."""
    return SafeSerializer(allowed_msgpack_modules=list(allowed) if allowed else None)


__all__ = [
    "EMPTY_PRINT",
    "Fingerprinter",
    "ListPrint",
    "SafeSerializer",
    "is_plain",
    "item_channel",
    "item_doc",
    "item_value",
    "read_writes",
    "safe_serializer",
    "unwrap",
    "wrap",
    "wrap_messages",
    "wrap_writes",
]
