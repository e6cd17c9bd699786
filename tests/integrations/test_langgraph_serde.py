"""The saver's default serde: it stores only what it loads back, and loads exactly or refuses.

A value of a type the strict serde would refuse to load is refused when put, before anything
is written (a real graph's thread stays readable and usable); once allowed it round-trips
exactly. A stored value that is damaged or foreign (another saver's pickle, damaged msgpack,
an extension LangGraph never writes, a blocked class) reads back as exactly what its bytes
encode or raises ``CorruptObject``/``UnsafeValue``: never another exception, never a ``None``
or a raw field map standing in for a value.
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
import enum
import importlib
import math
import operator
import os
import pickle
import re
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import ormsgpack
import pydantic
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_METHODS, SAFE_MSGPACK_TYPES
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send

import statevcs
from statevcs.errors import CorruptObject, SerializationError
from statevcs.integrations.langgraph import StateVCSSaver, UnsafeValue
from statevcs.integrations.langgraph.codec import safe_serializer

from .langgraph_support import checkpoint as _checkpoint
from .langgraph_support import thread as _thread

_EXAMPLES = int(os.environ.get("STATEVCS_SERDE_EXAMPLES", "150"))


class Note(pydantic.BaseModel):
    """An application's own model (module level: importable once allowed)."""

    text: str
    n: int = 0
    tags: list[str] = []


class Color(enum.Enum):
    """An application's own enum."""

    RED = "red"
    BLUE = 2


class LateTime(datetime.datetime):
    """A datetime subclass: LangGraph's serde rebuilds only ``datetime.datetime`` itself."""


_NOTE = (Note.__module__, "Note")
_ALLOWED = [_NOTE, (Color.__module__, "Color")]


def _saver(repo: statevcs.Repo | None = None) -> StateVCSSaver:
    return StateVCSSaver(repo if repo is not None else statevcs.Repo.init("memory://"))


def _advice(pair: tuple[str, str]) -> str:
    return re.escape(f"with_allowlist([{pair!r}])")


# --- refused when put, before anything is written -----------------------------------------


class NoteState(TypedDict, total=False):
    """A graph state holding the application's model, alone and in a list channel."""

    note: Note
    count: int
    notes: Annotated[list[Note], operator.add]


def _note_graph(checkpointer: Any) -> CompiledStateGraph[Any]:
    """``step`` makes a ``Note`` once ``count`` reaches 1 (or when the input holds one)."""

    def step(state: NoteState) -> dict[str, Any]:
        count = state.get("count", 0)
        out: dict[str, Any] = {"count": count + 1}
        if count >= 1 or "note" in state:
            out["notes"] = [Note(text=f"made at {count}", n=count, tags=["a"])]
            out["note"] = Note(text="latest", n=count)
        return out

    graph = StateGraph(NoteState)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_edge("step", END)
    return graph.compile(checkpointer=checkpointer)


_CONFIG: Any = {"configurable": {"thread_id": "notes"}}


def _same_state(*states: dict[str, Any]) -> bool:
    """Graph states equal type for type (a ``Note`` read back as a dict would differ), channel
    by channel (LangGraph reads channels by name, in no order)."""
    first, *others = (dict(sorted(state.items())) for state in states)
    return all(_same(first, other) for other in others)


def test_a_graph_holding_an_unallowed_model_is_refused_and_its_thread_stays_usable() -> None:
    saver = _saver()
    app = _note_graph(saver)
    assert app.invoke({"count": 0}, _CONFIG) == {"count": 1, "notes": []}
    refs = saver.repo.refs.as_hex()
    # The model in the input: the very first put is refused, nothing is written.
    with pytest.raises(UnsafeValue, match=_advice(_NOTE)):
        app.invoke({"note": Note(text="given")}, _CONFIG)
    assert saver.repo.refs.as_hex() == refs
    assert app.get_state(_CONFIG).values == {"count": 1, "notes": []}
    # Made by a node: its writes are refused; the input's checkpoint (plain) is kept.
    with pytest.raises(UnsafeValue, match=_advice(_NOTE)):
        app.invoke({"count": 1}, _CONFIG)
    waiting = app.get_state(_CONFIG)
    assert waiting.values == {"count": 1, "notes": []} and waiting.next == ("step",)
    assert len(list(app.get_state_history(_CONFIG))) == 5  # every checkpoint still loads
    # Allowed, the same thread goes on from where it stopped, and reads back exactly.
    allowed = _note_graph(saver.with_allowlist([_NOTE]))
    done = allowed.invoke(None, _CONFIG)
    made = [Note(text="made at 1", n=1, tags=["a"])]
    assert _same_state(done, {"count": 2, "notes": made, "note": Note(text="latest", n=1)})
    fresh = _note_graph(_saver(saver.repo).with_allowlist([_NOTE]))
    assert _same_state(fresh.get_state(_CONFIG).values, done)
    with pytest.raises(UnsafeValue, match=_advice(_NOTE)):
        _note_graph(_saver(saver.repo)).get_state(_CONFIG)  # a strict reader still refuses


def test_async_graph_runs_are_refused_the_same_way() -> None:
    saver = _saver()
    app = _note_graph(saver)

    async def run() -> None:
        await app.ainvoke({"count": 0}, _CONFIG)
        refs = saver.repo.refs.as_hex()
        with pytest.raises(UnsafeValue, match=_advice(_NOTE)):
            await app.ainvoke({"note": Note(text="given")}, _CONFIG)
        assert saver.repo.refs.as_hex() == refs
        assert (await app.aget_state(_CONFIG)).values == {"count": 1, "notes": []}

    asyncio.run(run())


def test_an_allowed_model_round_trips_exactly_as_in_memory() -> None:
    def run(checkpointer: Any) -> Any:
        app = _note_graph(checkpointer)
        app.invoke({"count": 0}, _CONFIG)
        app.invoke({"count": 1}, _CONFIG)
        app.invoke({"note": Note(text="given", tags=["x", "y"])}, _CONFIG)
        return [(s.values, s.next) for s in app.get_state_history(_CONFIG)]

    repo = statevcs.Repo.init("memory://")
    theirs = run(InMemorySaver())
    ours = run(_saver(repo).with_allowlist([_NOTE]))
    fresh = [
        (s.values, s.next)
        for s in _note_graph(_saver(repo).with_allowlist([_NOTE])).get_state_history(_CONFIG)
    ]
    assert len(ours) == len(fresh) == len(theirs) == 9
    for mine, again, reference in zip(ours, fresh, theirs, strict=True):
        assert _same_state(mine[0], again[0], reference[0])
        assert mine[1] == again[1] == reference[1]
    notes = [v for values, _ in ours for v in values.get("notes", [])]
    assert notes and all(type(n) is Note for n in notes)


_MADE = pydantic.create_model("Made", text=(str, ...))  # not importable by its name


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (Note(text="x"), _advice(_NOTE)),
        ({"deep": [{"in": Color.RED}]}, _advice((Color.__module__, "Color"))),
        (LateTime(2025, 1, 1), r"LateTime\.fromisoformat.*datetime\.datetime"),
        (_MADE(text="x"), _advice((_MADE.__module__, "Made"))),
    ],
    ids=["model", "nested-enum", "datetime-subclass", "class-made-at-run-time"],
)
@pytest.mark.parametrize("call", ["put", "put_writes", "aput", "aput_writes", "metadata", "item"])
def test_put_refuses_what_it_could_not_load_back_before_writing(
    value: Any, match: str, call: str
) -> None:
    saver = _saver()
    first = saver.put(
        _thread(), _checkpoint("1", {"a": 1, "rows": [1]}, 1), {}, {"a": 1, "rows": 1}
    )
    refs = saver.repo.refs.as_hex()
    before = saver.get_tuple(_thread())

    def attempt() -> Any:
        later = _checkpoint("2", {"a": value, "rows": [1]}, 2)
        if call == "put":
            return saver.put(first, later, {}, {"a": 2})
        if call == "aput":
            return asyncio.run(saver.aput(first, later, {}, {"a": 2}))
        if call == "put_writes":
            return saver.put_writes(first, [("a", 5), ("a", value)], "task")
        if call == "aput_writes":
            return asyncio.run(saver.aput_writes(first, [("a", value)], "task"))
        if call == "metadata":
            return saver.put(first, _checkpoint("2", {"a": 2}, 2), {"by": value}, {"a": 2})
        return saver.put(first, _checkpoint("2", {"a": 2, "rows": [1, value]}, 2), {}, {"rows": 2})

    with pytest.raises(UnsafeValue, match=match):
        attempt()
    assert saver.repo.refs.as_hex() == refs
    after = _saver(saver.repo).get_tuple(_thread())
    assert after is not None and before is not None
    assert (after.checkpoint, after.pending_writes) == (before.checkpoint, before.pending_writes)


def test_an_allowed_class_that_cannot_be_rebuilt_by_its_name_is_refused() -> None:
    saver = _saver()
    allowed = saver.with_allowlist([(_MADE.__module__, "Made")])
    with pytest.raises(SerializationError, match="does not load back"):
        allowed.put(_thread(), _checkpoint("1", {"a": _MADE(text="x")}, 1), {}, {"a": 1})
    assert saver.repo.refs.as_hex() == {}


# --- foreign and damaged stored values -----------------------------------------------------


class _Fixed:
    """A serde that stores every value as one given ``(tag, bytes)``: another writer."""

    def __init__(self, tag: str, data: bytes) -> None:
        self.pair = (tag, data)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self.pair

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        raise AssertionError("only used to write")


def _stored(tag: str, data: bytes) -> statevcs.Repo:
    repo = statevcs.Repo.init("memory://")
    StateVCSSaver(repo, serde=_Fixed(tag, data)).put(  # type: ignore[arg-type]
        _thread(), _checkpoint("1", {"x": {1, 2}}, 1), {}, {"x": 1}
    )
    return repo


def _ext(code: int, payload: Any) -> bytes:
    data = payload if isinstance(payload, bytes) else ormsgpack.packb(payload)
    return ormsgpack.packb({"k": ormsgpack.Ext(code, data)})


@pytest.mark.parametrize(
    ("tag", "data", "error"),
    [  # (what LangGraph's own strict serde gives instead, where it does not raise)
        ("pickle", pickle.dumps({1, 2}), UnsafeValue),  # a saver with pickle_fallback=True
        ("json", b'{"lc": 2, "type": "constr', UnsafeValue),  # damaged JSON
        ("json", b'{"a": 1}', UnsafeValue),  # LangGraph's old format: never written here
        ("msgpack", b"\x82\xa1a", CorruptObject),  # truncated
        ("msgpack", b"\xc1", CorruptObject),  # a byte msgpack never uses
        ("msgpack", _ext(5, b"\xc1"), CorruptObject),  # LangGraph: None
        ("msgpack", _ext(4, b"\xc1"), CorruptObject),  # LangGraph: None
        ("msgpack", _ext(6, b"\x01"), CorruptObject),  # a numpy array: LangGraph: None
        ("msgpack", _ext(42, b"\x01"), CorruptObject),  # an unknown extension: LangGraph: None
        ("msgpack", b"\x81\xa1k\xd4\xfb\x00", CorruptObject),  # extension -5: LangGraph: None
        ("msgpack", b"\x81\xa1k\xd6\xff\x00\x00\x00\x01", CorruptObject),  # a timestamp
        ("msgpack", _ext(0, 5), CorruptObject),  # LangGraph: None
        ("msgpack", _ext(1, ["uuid", "UUID", 5]), CorruptObject),  # LangGraph: the 5
        ("msgpack", _ext(0, ["uuid", "UUID", "not hex"]), CorruptObject),  # LangGraph: the str
        ("msgpack", _ext(5, [*_NOTE, {"n": "x"}, "m"]), UnsafeValue),  # LangGraph: the dict
        ("msgpack", _ext(0, ["os", "system", "true"]), UnsafeValue),
        ("msgpack", _ext(3, ["os", "system", "true", "__call__"]), UnsafeValue),
        ("msgpack", _ext(2, ["datetime", "time", {"hour": 99}]), CorruptObject),  # the dict
        ("msgpack", _ext(1, ["langgraph.types", "Send", ["only a node"]]), CorruptObject),  # list
        ("null", b"\x00", CorruptObject),  # LangGraph: None
        ("msgpack2", b"\x01", CorruptObject),  # LangGraph: NotImplementedError
    ],
)
def test_foreign_or_damaged_values_raise_statevcs_errors(
    tag: str, data: bytes, error: type[Exception]
) -> None:
    repo = _stored(tag, data)
    strict = _saver(repo)
    with pytest.raises(error):
        strict.get_tuple(_thread())
    with pytest.raises(error):
        list(strict.list(_thread()))
    allowed = _saver(repo).with_allowlist(_ALLOWED)  # refuses a damaged Note as corrupt
    with pytest.raises(CorruptObject if error is CorruptObject else (CorruptObject, UnsafeValue)):
        allowed.get_tuple(_thread())


def test_a_callers_own_serde_failing_to_load_raises_corrupt_object() -> None:
    # LangGraph's serializer raises NotImplementedError, ValueError, JSONDecodeError.
    for tag, data in (("nope", b"\x01"), ("msgpack", b"\x82\xa1a"), ("json", b"{")):
        reader = StateVCSSaver(_stored(tag, data), serde=JsonPlusSerializer())
        with pytest.raises(CorruptObject, match="JsonPlusSerializer"):
            reader.get_tuple(_thread())


# The property: a valid stored value, damaged, reads back as exactly what the damaged bytes
# encode (by a plain reference decoder of LangGraph's encoding, below) or raises.


class _Invalid(Exception):
    """The reference decoder found the bytes not to be a value LangGraph's encoder writes."""


_ARITY = {0: 3, 1: 3, 2: 3, 3: 4, 5: 4}


def _reference_ext(code: int, data: bytes) -> Any:
    parts = ormsgpack.unpackb(data, ext_hook=_reference_ext, option=ormsgpack.OPT_NON_STR_KEYS)
    if code == 7:
        return _DeltaSnapshot(parts)
    if code not in _ARITY or type(parts) is not list or len(parts) != _ARITY[code]:
        raise _Invalid
    module, name, argument = parts[:3]
    if code == 3:
        if (module, name, parts[3]) not in SAFE_MSGPACK_METHODS:
            raise _Invalid
    elif (module, name) not in SAFE_MSGPACK_TYPES and (module, name) not in _ALLOWED:
        raise _Invalid
    target = getattr(importlib.import_module(module), name)
    if code == 0:
        return target(argument)
    if code == 3:
        return getattr(target, parts[3])(argument)
    if code == 1:
        if type(argument) is not list:
            raise _Invalid
        if (module, name) == ("langgraph.types", "Send") and len(argument) == 3:
            return Send(argument[0], argument[1], timeout=argument[2])
        if (module, name) == ("langgraph.types", "Send") and len(argument) != 2:
            raise _Invalid
        return target(*argument)
    if type(argument) is not dict:
        raise _Invalid
    return target(**argument)  # pydantic models (LangChain's messages too) by validation


def _reference(tag: str, data: bytes) -> Any:
    """What ``(tag, data)`` encodes, LangGraph's encoder read plainly; ``_Invalid`` if nothing."""
    if tag == "bytes":
        return data
    if tag == "bytearray":
        return bytearray(data)
    if tag == "null" and not data:
        return None
    if tag != "msgpack":
        raise _Invalid
    try:
        return ormsgpack.unpackb(data, ext_hook=_reference_ext, option=ormsgpack.OPT_NON_STR_KEYS)
    except (ValueError, TypeError):  # ormsgpack's, an ext hook's failure included
        raise _Invalid from None


def _same(a: Any, b: Any) -> bool:
    """Equal type for type (NaN equal to NaN), key order for key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, decimal.Decimal):  # NaN, and sNaN that raises when compared
        return repr(a) == repr(b)
    if isinstance(a, set | frozenset):
        return sorted(map(repr, a)) == sorted(map(repr, b))
    if isinstance(a, pydantic.BaseModel):
        return _same(a.__dict__, b.__dict__) and _same(a.__pydantic_extra__, b.__pydantic_extra__)
    if isinstance(a, _DeltaSnapshot):
        return _same(a.value, b.value)
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            _same(k, j) and _same(v, w) for (k, v), (j, w) in zip(a.items(), b.items())
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, Send):
        return _same([a.node, a.arg, a.timeout], [b.node, b.arg, b.timeout])
    return bool(a == b)


_text = st.text(max_size=6)
_plain = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | _text
)
_messages = st.builds(lambda c, i: HumanMessage(c, id=i), _text, _text) | st.builds(
    lambda c, n: AIMessage(c, tool_calls=[{"name": n, "args": {"q": c}, "id": "c1"}]),
    _text,
    _text,
)
_typed = st.one_of(
    st.datetimes(timezones=st.none() | st.just(datetime.UTC)),
    st.dates(),
    st.times(),
    st.timedeltas(),
    st.uuids(),
    st.decimals(allow_nan=False, allow_infinity=False, places=2),
    st.frozensets(st.integers(-3, 3), max_size=3).map(set),
    st.sampled_from(Color),
    st.builds(Note, text=_text, n=st.integers(-5, 5), tags=st.lists(_text, max_size=2)),
    _messages,
    st.builds(Send, st.sampled_from(["a", "b"]), st.dictionaries(_text, _plain, max_size=2)),
)
_values = st.fixed_dictionaries(
    {"x": _typed},
    optional={
        "y": st.recursive(
            _plain | _typed,
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
            max_leaves=6,
        ),
        "z": st.binary(max_size=4),
    },
)
_hostile = st.recursive(
    _plain
    | st.binary(max_size=3)
    | st.sampled_from(["os", "system", "uuid", "UUID", "builtins", "set", "fromisoformat"]),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
) | st.sampled_from(
    [
        ["os", "system", "true"],
        ["builtins", "set", 5],
        [*_NOTE, "not a field map", "model_validate_json"],
        [*_NOTE, {"text": 5}, "model_validate_json"],
        ["uuid", "UUID", "zz"],
        ["datetime", "datetime", "not a date", "fromisoformat"],
        ["datetime", "datetime", "2025-01-01", "fromtimestamp"],
        ["langgraph.types", "Send", ["node"]],
        ["decimal", "Decimal", "abc"],
        ["pathlib._local", "Path", ["x"]],
        ["langchain_core.messages.human", "HumanMessage", {"content": 5}, "m"],
        ["langchain_core.messages.ai", "AIMessage", {"content": "", "tool_calls": [1]}, "m"],
    ]
)
_damages = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(0, 7)),
    st.tuples(st.just("cut"), st.integers(0, 10**6)),
    st.tuples(
        st.just("tag"),
        st.sampled_from(["pickle", "json", "bytes", "bytearray", "null", "msgpack ", "MSGPACK"]),
    ),
    st.tuples(st.just("pickle")),
    st.tuples(st.just("code"), st.integers(0, 100), st.integers(0, 127)),  # (bit flips: < 0)
    st.tuples(st.just("payload"), st.integers(0, 100), _hostile),
    st.tuples(st.just("extra"), st.binary(min_size=1, max_size=3)),
)


class _Node:
    """An extension while a value's msgpack is edited (its payload parsed, or raw bytes)."""

    def __init__(self, code: int, payload: Any) -> None:
        self.code = code
        self.payload = payload
        self.raw: bytes | None = None


def _parse(data: bytes, found: list[_Node]) -> Any:
    def hook(code: int, payload: bytes) -> _Node:
        node = _Node(code, None)
        found.append(node)
        node.payload = _parse(payload, found)
        return node

    return ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)


def _pack(tree: Any) -> bytes:
    def default(node: Any) -> Any:
        if isinstance(node, _Node):
            raw = node.raw if node.raw is not None else _pack(node.payload)
            return ormsgpack.Ext(node.code, raw)
        raise TypeError

    return ormsgpack.packb(tree, default=default, option=ormsgpack.OPT_NON_STR_KEYS)


def _damage(damage: tuple[Any, ...], tag: str, data: bytes, original: Any) -> tuple[str, bytes]:
    kind = damage[0]
    if kind == "flip":
        position = damage[1] % len(data)
        return tag, data[:position] + bytes([data[position] ^ (1 << damage[2])]) + data[
            position + 1 :
        ]
    if kind == "cut":
        return tag, data[: damage[1] % len(data)]
    if kind == "tag":
        return damage[1], data
    if kind == "pickle":
        return "pickle", pickle.dumps(original)
    if kind == "extra":
        return tag, data + damage[1]
    found: list[_Node] = []
    tree = _parse(data, found)
    node = found[damage[1] % len(found)]
    if kind == "code":
        node.code = damage[2]
    else:
        node.raw = ormsgpack.packb(damage[2])
    return tag, _pack(tree)


class _Damaging:
    """A serde storing every value as the default serde encodes it, then damaged."""

    def __init__(self, damage: tuple[Any, ...]) -> None:
        self.base = safe_serializer(_ALLOWED)
        self.damage = damage
        self.undo: dict[tuple[str, bytes], tuple[str, bytes]] = {}

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        tag, data = self.base.dumps_typed(obj)
        damaged = _damage(self.damage, tag, data, obj)
        self.undo[damaged] = (tag, data)
        return damaged

    def loads_typed(self, data: tuple[str, bytes]) -> Any:  # the writer reads its own parents
        return self.base.loads_typed(self.undo.get(data, data))


def _outcome(read: Callable[[], list[Any]], expected: Any) -> None:
    """``read()`` gives values equal to ``expected``, or raises if that is ``_Invalid``."""
    try:
        got = read()
    except (CorruptObject, UnsafeValue):
        assert expected is _Invalid, "a value the bytes encode was refused"
        return
    assert expected is not _Invalid, f"undecodable bytes read back as {got!r}"
    assert got and all(_same(value, expected) for value in got), (got, expected)


@settings(
    max_examples=_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(value=_values, damage=_damages)
def test_damaged_stored_values_read_back_as_their_bytes_say_or_raise(
    value: dict[str, Any], damage: tuple[Any, ...]
) -> None:
    # The undamaged value round-trips exactly (the reference agrees with the default serde).
    assert _same(_reference(*safe_serializer(_ALLOWED).dumps_typed(value)), value)
    repo = statevcs.Repo.init("memory://")
    serde = _Damaging(damage)
    writer = StateVCSSaver(repo, serde=serde)  # type: ignore[arg-type]
    values = {"x": value, "rows": [value]}
    one = writer.put(_thread(), _checkpoint("1", values, 1), {}, {"x": 1, "rows": 1})
    writer.put_writes(one, [("x", value)], "task")
    two = writer.put(one, _checkpoint("2", values, 1), {}, {})
    # One value, one encoding: the same damaged bytes wherever it is stored.
    stored = _damage(damage, *safe_serializer(_ALLOWED).dumps_typed(value), value)
    try:
        expected = _reference(*stored)
    except _Invalid:
        expected = _Invalid
    event(f"{damage[0]}: {'refused' if expected is _Invalid else 'decoded'}")

    def reader() -> StateVCSSaver:
        return _saver(repo).with_allowlist(_ALLOWED)  # type: ignore[return-value]

    def tuple_values() -> list[Any]:
        got = reader().get_tuple(one)
        assert got is not None and got.pending_writes is not None
        channels = got.checkpoint["channel_values"]
        return [channels["x"], channels["rows"][0], got.pending_writes[0][2]]

    def listed_values() -> list[Any]:
        out = []
        for got in reader().list(_thread()):
            out += [
                got.checkpoint["channel_values"]["x"],
                got.checkpoint["channel_values"]["rows"][0],
            ]
        return out

    def history_values() -> list[Any]:
        history = reader().get_delta_channel_history(config=two, channels=["x"])["x"]
        return [history["seed"], *(write[2] for write in history["writes"])]  # type: ignore[typeddict-item]

    for read in (tuple_values, listed_values, history_values):
        _outcome(read, expected)
