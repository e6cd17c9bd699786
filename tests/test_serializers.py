"""Tests for statevcs.serializers: round trips, strict rejection with paths, and safe decoding."""

from __future__ import annotations

import builtins
import collections
import contextlib
import copy
import dataclasses
import enum
import importlib
import math
import os
import pathlib
import pickle
import subprocess
import sys
import threading
import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from statevcs.errors import SerializationError, UntrustedPayload
from statevcs.serializers import (
    JSONSerializer,
    MsgpackSerializer,
    PickleSerializer,
    StateSerializer,
    serializer_for,
)

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]

# --- registered test types (module level so pickle can find them too) ------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = 2
    PAIR = (1, 2)


class Perm(enum.IntFlag):
    READ = 1
    WRITE = 2


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    when: datetime
    tags: frozenset[str] = frozenset()


@dataclasses.dataclass
class WithDerived:
    a: int
    doubled: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.doubled = self.a * 2


class Event(BaseModel):
    name: str
    at: datetime
    counts: dict[str, int] = {}
    point: Point | None = None
    color: Color = Color.RED
    span: tuple[int, ...] = ()


class Aliased(BaseModel):
    user_name: str = Field(alias="userName")


class NotRegistered(BaseModel):
    x: int


class Plain:
    """An ordinary class, neither dataclass, model nor Enum."""


class WeirdTZ(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=1)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def tzname(self, dt: datetime | None) -> str:
        return "WEIRD"


class WritesMarker:
    """Unpickling this runs code: it writes a marker file."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (pathlib.Path.write_text, (self.path, "pwned"))


@dataclasses.dataclass
class Box:
    items: list[int]


def rich_serializer() -> MsgpackSerializer:
    return MsgpackSerializer(types=[Color, Perm, Point, WithDerived, Event, Aliased])


# --- exact comparison ----------------------------------------------------------


def assert_identical(got: Any, expected: Any) -> None:
    """Equal, with the same types all the way down (tuple stays tuple, -0.0 stays -0.0)."""
    assert type(got) is type(expected), f"{got!r} is {type(got)}, expected {type(expected)}"
    if isinstance(expected, dict):
        assert len(got) == len(expected)
        for (gk, gv), (ek, ev) in zip(got.items(), expected.items(), strict=True):
            assert_identical(gk, ek)
            assert_identical(gv, ev)
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert_identical(g, e)
    elif isinstance(expected, (set, frozenset)):
        assert got == expected
        for element in expected:
            assert_identical(next(g for g in got if g == element), element)
    elif isinstance(expected, float):
        assert repr(got) == repr(expected)
    elif isinstance(expected, (datetime, time)):
        assert got == expected
        assert repr(got) == repr(expected)  # same tzinfo and fold
        assert got.tzinfo == expected.tzinfo
    elif isinstance(expected, Decimal):
        assert str(got) == str(expected)
    elif dataclasses.is_dataclass(expected):
        assert got == expected
        for f in dataclasses.fields(expected):
            assert_identical(getattr(got, f.name), getattr(expected, f.name))
    elif isinstance(expected, BaseModel):
        assert got == expected
        for name in type(expected).model_fields:
            assert_identical(getattr(got, name), getattr(expected, name))
    else:
        assert got == expected


# --- strategies -----------------------------------------------------------------

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | finite_floats | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=25,
)

fixed_offsets = st.builds(
    timezone,
    st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23)),
)
named_offsets = st.builds(
    timezone,
    st.timedeltas(min_value=timedelta(hours=-12), max_value=timedelta(hours=12)),
    st.text(min_size=1, max_size=8),
)
any_tz = st.none() | st.just(UTC) | fixed_offsets | named_offsets | st.timezones()
datetimes = st.datetimes(timezones=any_tz)
points = st.builds(
    Point, x=st.integers(), when=datetimes, tags=st.frozensets(st.text(max_size=5), max_size=4)
)
events = st.builds(
    Event,
    name=st.text(max_size=10),
    at=datetimes,
    counts=st.dictionaries(st.text(max_size=5), st.integers(-(2**63), 2**63 - 1), max_size=3),
    point=st.none() | points,
    color=st.sampled_from(Color),
    span=st.lists(st.integers(), max_size=3).map(tuple),
)
hashables = st.recursive(
    st.integers() | st.text(max_size=8) | st.booleans() | st.none() | st.uuids(),
    lambda children: (
        st.lists(children, max_size=3).map(tuple) | st.frozensets(children, max_size=3)
    ),
    max_leaves=6,
)
rich_scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: big ints go through an extension type
    | finite_floats
    | st.text()
    | st.binary()
    | datetimes
    | st.dates()
    | st.times(timezones=st.none() | fixed_offsets | st.timezones())
    | st.timedeltas()
    | st.uuids()
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.sampled_from(Color)
    | st.sampled_from([Perm.READ, Perm.READ | Perm.WRITE])
    | points
    | events
    | st.builds(WithDerived, a=st.integers(-1000, 1000))
    | st.builds(Aliased, userName=st.text(max_size=8))
)
rich_values = st.recursive(
    rich_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(hashables, children, max_size=4)
        | st.sets(st.integers(), max_size=6)
        | st.frozensets(st.text(max_size=5), max_size=6)
        | st.sets(hashables, max_size=4)
    ),
    max_leaves=12,
)

slow_settings = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


# --- protocol ---------------------------------------------------------------------


def test_all_serializers_satisfy_the_protocol() -> None:
    for ser in (JSONSerializer(), MsgpackSerializer(), PickleSerializer(key=b"k")):
        assert isinstance(ser, StateSerializer)
    assert not isinstance(object(), StateSerializer)
    assert [JSONSerializer.name, MsgpackSerializer.name, PickleSerializer.name] == [
        "json",
        "msgpack",
        "pickle",
    ]


# --- JSON -------------------------------------------------------------------------


@given(json_values)
@settings(max_examples=300, deadline=None)
def test_json_round_trip_is_exact_and_deterministic(value: Any) -> None:
    ser = JSONSerializer()
    data = ser.serialize(value)
    assert isinstance(data, bytes)
    assert_identical(ser.deserialize(data), value)
    assert ser.serialize(copy.deepcopy(value)) == data
    ser.validate(value)  # accepted: must not raise


def test_json_output_is_compact_utf8_and_keeps_key_order() -> None:
    ser = JSONSerializer()
    data = ser.serialize({"zeta": 1, "alpha": ["é", 2.5, None, True]})
    assert data == '{"zeta":1,"alpha":["é",2.5,null,true]}'.encode()
    assert list(ser.deserialize(data)) == ["zeta", "alpha"]
    assert ser.serialize({"b": 1, "a": 2}) != ser.serialize({"a": 2, "b": 1})


def test_json_keeps_negative_zero_and_big_ints() -> None:
    ser = JSONSerializer()
    value = [-0.0, 10**30, -(10**30), 1e300]
    assert_identical(ser.deserialize(ser.serialize(value)), value)


@pytest.mark.parametrize(
    ("bad", "hint"),
    [
        ((3,), "convert it to a list"),
        ({3}, "sorted list"),
        (frozenset({3}), "sorted list"),
        (b"raw", "base64"),
        (datetime(2024, 1, 2, 3, 4), ".isoformat()"),
        (date(2024, 1, 2), ".isoformat()"),
        (Decimal("1.5"), "str(...)"),
        (uuid.UUID(int=5), "str(...)"),
        (timedelta(seconds=3), "total_seconds"),
        (Plain(), "convert it to a dict, list, str"),
        (Color.RED, "MsgpackSerializer(types=[Color])"),
        (Perm.READ, "MsgpackSerializer(types=[Perm])"),
        (Box([1]), "MsgpackSerializer(types=[Box])"),
        (NotRegistered(x=1), "MsgpackSerializer(types=[NotRegistered])"),
        (collections.OrderedDict(a=1), "convert it with dict(...)"),
    ],
)
def test_json_rejects_values_that_would_not_round_trip(bad: Any, hint: str) -> None:
    ser = JSONSerializer()
    value = {"a": {"b": [1, 2, bad]}}
    with pytest.raises(SerializationError) as info:
        ser.serialize(value, path="state")
    assert info.value.path == "state['a']['b'][2]"
    message = str(info.value)
    assert message.startswith("state['a']['b'][2] is ")
    assert hint in message
    with pytest.raises(SerializationError) as again:
        ser.validate(value, path="state")
    assert again.value.path == "state['a']['b'][2]"


def test_json_datetime_message_says_what_to_do() -> None:
    with pytest.raises(SerializationError) as info:
        JSONSerializer().serialize({"when": datetime(2024, 5, 1)}, path="state['config']")
    assert info.value.path == "state['config']['when']"
    assert str(info.value) == (
        "state['config']['when'] is a datetime.datetime, which JSON cannot store; convert it "
        "to a string with .isoformat() or open the repository with statevcs.MsgpackSerializer()"
    )


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_json_rejects_nan_and_infinity(number: float) -> None:
    with pytest.raises(SerializationError, match="finite") as info:
        JSONSerializer().serialize({"items": [0.5, number]}, path="state")
    assert info.value.path == "state['items'][1]"


def test_json_rejects_non_string_keys_with_path() -> None:
    for key in (3, 1.5, None, True, (1, 2)):
        with pytest.raises(SerializationError, match="keys must be strings") as info:
            JSONSerializer().serialize({"a": {"b": [1, 2, {key: "x"}]}}, path="state")
        assert info.value.path == f"state['a']['b'][2][{key!r}]"


def test_json_rejects_lone_surrogates_with_path() -> None:
    for value in ({"a": ["ok", "bad\ud800"]}, {"a": {"bad\udfff": 1, "x": 1}}):
        with pytest.raises(SerializationError, match="surrogate") as info:
            JSONSerializer().serialize(value, path="state")
        assert info.value.path is not None
        assert info.value.path.startswith("state['a']")


def test_json_rejects_ints_too_long_to_write_as_text_with_path() -> None:
    ser = JSONSerializer()
    ok = 10**4000  # under Python's default 4300-digit limit
    assert ser.deserialize(ser.serialize([ok])) == [ok]
    with pytest.raises(SerializationError, match="too many digits") as info:
        ser.serialize({"a": [ok, 10**5000]}, path="state")
    assert info.value.path == "state['a'][1]"


def test_json_rejects_reference_cycles_without_recursion_error() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    with pytest.raises(SerializationError, match="cycle") as info:
        JSONSerializer().serialize({"loop": loop}, path="state")
    assert info.value.path == "state"


def test_json_default_path_is_value() -> None:
    with pytest.raises(SerializationError) as info:
        JSONSerializer().serialize((1, 2))
    assert info.value.path == "value"
    assert str(info.value).startswith("value is a tuple")


@pytest.mark.parametrize(
    "data", [b"", b"{", b"\xff\xfe", b"NaN", b"[Infinity]", b"-Infinity", b'{"a": 1} x']
)
def test_json_deserialize_rejects_invalid_bytes(data: bytes) -> None:
    with pytest.raises(SerializationError) as info:
        JSONSerializer().deserialize(data, path="state['x']")
    assert info.value.path == "state['x']"
    assert "could not be read" in str(info.value)


@given(st.binary(max_size=64))
@settings(max_examples=200, deadline=None)
def test_json_deserialize_of_random_bytes_returns_or_raises_serialization_error(
    data: bytes,
) -> None:
    try:
        value = JSONSerializer().deserialize(data)
    except SerializationError:
        return
    assert JSONSerializer().deserialize(JSONSerializer().serialize(value)) == value


# --- msgpack ----------------------------------------------------------------------


@given(rich_values)
@slow_settings
def test_msgpack_round_trip_is_exact(value: Any) -> None:
    ser = rich_serializer()
    data = ser.serialize(value, path="state")
    assert_identical(ser.deserialize(data), value)
    assert ser.serialize(copy.deepcopy(value)) == data
    ser.validate(value)  # accepted: must not raise


@given(json_values)
@settings(max_examples=100, deadline=None)
def test_msgpack_round_trips_every_json_value(value: Any) -> None:
    ser = MsgpackSerializer()
    assert_identical(ser.deserialize(ser.serialize(value)), value)


def test_msgpack_rich_value_examples() -> None:
    ser = rich_serializer()
    paris = ZoneInfo("Europe/Paris")
    value = {
        "naive": datetime(2024, 3, 31, 2, 30, 0, 17),
        "aware": datetime(2024, 10, 27, 2, 30, tzinfo=paris, fold=1),
        "named": datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=30), "IST")),
        "utc": datetime(2024, 1, 1, tzinfo=UTC),
        "time": time(23, 59, 59, 999999, tzinfo=timezone(timedelta(hours=-3))),
        "day": date(1, 1, 1),
        "span": timedelta(days=-3, seconds=5, microseconds=7),
        "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "price": Decimal("-0.00100"),
        "blob": b"\x00\xff",
        "tags": {1, 2, 3},
        "frozen": frozenset({"a"}),
        "pair": (1, (2, [3])),
        3: "int key",
        (1, "a"): "tuple key",
        "huge": 2**200,
        "tiny": -(2**64),
        "nz": -0.0,
        "nan": math.nan,
        "empty": [(), set(), frozenset(), {}],
    }
    got = ser.deserialize(ser.serialize(value))
    assert list(got) == list(value)
    got_nan = got.pop("nan")
    expected = dict(value)
    expected.pop("nan")
    assert math.isnan(got_nan)
    assert_identical(got, expected)
    assert got["aware"].tzinfo is paris
    assert got["named"].tzname() == "IST"


def test_msgpack_registered_classes_round_trip() -> None:
    ser = rich_serializer()
    point = Point(
        x=1, when=datetime(2024, 1, 1, tzinfo=ZoneInfo("Asia/Tokyo")), tags=frozenset("ab")
    )
    event = Event(
        name="tick",
        at=datetime(2024, 2, 2, 12, tzinfo=UTC),
        counts={"a": 1},
        point=point,
        color=Color.PAIR,
        span=(1, 2),
    )
    value = {
        "point": point,
        "event": event,
        "colors": [Color.RED, Color.GREEN, Color.PAIR],
        "perm": Perm.READ | Perm.WRITE,
        "derived": WithDerived(a=21),
        "aliased": Aliased(userName="ada"),
    }
    got = ser.deserialize(ser.serialize(value))
    assert_identical(got, value)
    assert got["derived"].doubled == 42
    assert got["event"].point.when.tzinfo is ZoneInfo("Asia/Tokyo")


def test_msgpack_equal_sets_give_equal_bytes() -> None:
    ser = MsgpackSerializer()
    words = [f"word-{i}" for i in range(50)]
    forward, backward = set(), set()
    for word in words:
        forward.add(word)
    for word in reversed(words):
        backward.add(word)
    assert ser.serialize({"s": forward}) == ser.serialize({"s": backward})
    assert ser.serialize(frozenset(words)) == ser.serialize(frozenset(reversed(words)))


def test_msgpack_set_bytes_do_not_depend_on_hash_seed() -> None:
    code = (
        "import sys\n"
        "from statevcs.serializers import MsgpackSerializer\n"
        "s = {f'w{i}' for i in range(30)}\n"
        "print(','.join(s))\n"
        "print(MsgpackSerializer().serialize({'s': s, 'f': frozenset(s)}).hex())\n"
    )
    orders, payloads = set(), set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO_ROOT)}
        out = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        orders.add(out[0])
        payloads.add(out[1])
    assert len(orders) > 1, "hash seeds should change set iteration order"
    assert len(payloads) == 1


def test_msgpack_keeps_key_order_and_non_string_keys() -> None:
    ser = MsgpackSerializer()
    value = {2: "b", 1: "a", (0, 1): "t", frozenset({1}): "f", b"k": "bytes", None: 0, 1.5: 1}
    got = ser.deserialize(ser.serialize(value))
    assert_identical(got, value)
    assert list(got) == list(value)


@pytest.mark.parametrize(
    ("bad", "path", "fragment"),
    [
        ({"a": {"b": [1, 2, Plain()]}}, "state['a']['b'][2]", "cannot store"),
        ({"a": {"b": [1, 2, bytearray(b"x")]}}, "state['a']['b'][2]", "bytes(...)"),
        ({"t": (1, Plain())}, "state['t'][1]", "cannot store"),
        ({"m": {(1, 2): {"x": Plain()}}}, "state['m'][(1, 2)]['x']", "cannot store"),
        ({"c": collections.OrderedDict(a=1)}, "state['c']", "subclass of dict"),
        ({"k": {Plain(): 1}}, "state['k'][<key ", "cannot store"),
        ({"s": {Plain()}}, "state['s'][<element ", "cannot store"),
        ({"x": "ok\ud800"}, "state['x']", "surrogate"),
        ({"x": ["\ud800"]}, "state['x'][0]", "surrogate"),
    ],
)
def test_msgpack_rejects_unsupported_values_with_path(bad: Any, path: str, fragment: str) -> None:
    with pytest.raises(SerializationError) as info:
        MsgpackSerializer().serialize(bad, path="state")
    assert info.value.path is not None
    assert info.value.path.startswith(path)
    assert fragment in str(info.value)
    if not path.endswith(" "):
        assert info.value.path == path


def test_msgpack_rejects_unsupported_timezone_inside_dataclass() -> None:
    ser = MsgpackSerializer(types=[Point])
    value = {"p": Point(x=1, when=datetime(2024, 1, 1, tzinfo=WeirdTZ()))}
    with pytest.raises(SerializationError, match=r"zoneinfo\.ZoneInfo") as info:
        ser.validate(value, path="state")
    assert info.value.path == "state['p'].when"


def test_msgpack_unregistered_class_at_serialize_says_to_register() -> None:
    for instance, name in (
        (Box([1]), "Box"),
        (Color.RED, "Color"),
        (NotRegistered(x=1), "NotRegistered"),
    ):
        with pytest.raises(SerializationError) as info:
            MsgpackSerializer().serialize({"items": [instance]}, path="state")
        assert info.value.path == "state['items'][0]"
        assert f"types=[{name}]" in str(info.value)
        assert f"register({name})" in str(info.value)


def test_msgpack_nested_unregistered_enum_inside_model_is_reported() -> None:
    ser = MsgpackSerializer(types=[Event])  # Color (a field type) is not registered
    event = Event(name="x", at=datetime(2024, 1, 1))
    with pytest.raises(SerializationError, match=r"types=\[Color\]") as info:
        ser.serialize({"e": event}, path="state")
    assert info.value.path == "state['e'].color"


def test_msgpack_unregistered_class_at_deserialize_is_refused() -> None:
    data = rich_serializer().serialize({"p": Point(x=1, when=datetime(2024, 1, 1))})
    with pytest.raises(SerializationError, match="not registered") as info:
        MsgpackSerializer().deserialize(data, path="state['p']")
    assert f"{Point.__module__}:Point" in str(info.value)
    assert info.value.path == "state['p']"


def test_msgpack_decoding_never_imports_named_modules(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "imported.txt"
    canary = tmp_path / "statevcs_canary_module.py"
    canary.write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\n"
        "class Thing:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    names = ["os:system", "subprocess:Popen", "statevcs_canary_module:Thing", "builtins:eval"]
    ser = rich_serializer()
    imported: list[str] = []
    real_import = builtins.__import__

    def spy_import(name: str, *args: Any, **kwargs: Any) -> Any:
        imported.append(name)
        return real_import(name, *args, **kwargs)

    def spy_import_module(name: str, package: str | None = None) -> Any:
        imported.append(name)
        raise AssertionError("decoding must not import")

    modules_before = set(sys.modules)
    errors: list[BaseException] = []
    payloads = [
        msgpack.packb(msgpack.ExtType(code, msgpack.packb([name, arg])))
        for name in names
        for code, arg in ((10, "ls"), (11, {"args": "ls"}), (12, {"x": 1}))
    ]
    with monkeypatch.context() as patch:
        patch.setattr(importlib, "import_module", spy_import_module)
        patch.setattr(builtins, "__import__", spy_import)
        imported.clear()  # only imports made while decoding count
        for payload in payloads:
            try:
                ser.deserialize(payload, path="state")
            except BaseException as exc:  # collected and checked below
                errors.append(exc)
        during_decoding = list(imported)
    assert during_decoding == []
    assert set(sys.modules) == modules_before
    assert not marker.exists()
    assert len(errors) == len(payloads)
    for error in errors:
        assert isinstance(error, SerializationError)
        assert "not registered" in str(error)
    assert "os:system" in str(errors[0])


def test_msgpack_unknown_extension_code_is_refused() -> None:
    data = msgpack.packb({"a": msgpack.ExtType(99, b"whatever")})
    with pytest.raises(SerializationError, match="unknown msgpack extension type 99") as info:
        MsgpackSerializer().deserialize(data, path="state")
    assert info.value.path == "state"


def test_msgpack_registered_name_with_wrong_kind_is_refused() -> None:
    ser = MsgpackSerializer()
    ser.register(Color, name="shared")
    payload = msgpack.packb(msgpack.ExtType(11, msgpack.packb(["shared", {"x": 1}])))
    with pytest.raises(SerializationError, match="registered as an enum"):
        ser.deserialize(payload)


def test_msgpack_refuses_unsafe_time_zone_keys() -> None:
    for key in ("../../etc/passwd", "/etc/localtime", "Europe/../../x", "a.b"):
        fields = [2024, 1, 1, 0, 0, 0, 0, 0, [1, key]]
        payload = msgpack.packb(msgpack.ExtType(1, msgpack.packb(fields)))
        with pytest.raises(SerializationError, match="invalid time zone key"):
            MsgpackSerializer().deserialize(payload)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xc1",
        b"\x92\x01",
        b"\x81\x91\x01\x02",  # map with a list key
        msgpack.packb(msgpack.ExtType(5, b"short")),  # uuid needs 16 bytes
        msgpack.packb(msgpack.ExtType(1, msgpack.packb([1, 2]))),  # truncated datetime
        msgpack.packb(msgpack.ExtType(9, msgpack.packb({"not": "a list"}))),
        msgpack.packb(msgpack.ExtType(6, b"not-a-number")),
        msgpack.packb(1) + b"\x00",  # trailing bytes
    ],
)
def test_msgpack_deserialize_rejects_invalid_bytes(data: bytes) -> None:
    with pytest.raises(SerializationError, match="could not be read") as info:
        MsgpackSerializer().deserialize(data, path="state['x']")
    assert info.value.path == "state['x']"


@given(st.binary(max_size=64))
@settings(max_examples=300, deadline=None)
def test_msgpack_deserialize_of_random_bytes_returns_or_raises_serialization_error(
    data: bytes,
) -> None:
    with contextlib.suppress(SerializationError):
        rich_serializer().deserialize(data)


def test_msgpack_rebuild_failure_is_a_serialization_error() -> None:
    ser = MsgpackSerializer(types=[Point])
    payload = msgpack.packb(
        msgpack.ExtType(11, msgpack.packb([f"{Point.__module__}:Point", {"nope": 1}]))
    )
    with pytest.raises(SerializationError, match=f"rebuilding {Point.__module__}.Point"):
        ser.deserialize(payload)


def test_register_custom_name_is_used_in_payload() -> None:
    writer = MsgpackSerializer()
    assert writer.register(Point, name="geo.Point") is Point
    data = writer.serialize(Point(x=1, when=datetime(2024, 1, 1)))
    assert b"geo.Point" in data
    assert b"test_serializers" not in data
    reader = MsgpackSerializer()
    reader.register(Point, name="geo.Point")
    assert reader.deserialize(data) == Point(x=1, when=datetime(2024, 1, 1))
    with pytest.raises(SerializationError, match=r"'geo\.Point'"):
        MsgpackSerializer(types=[Point]).deserialize(data)
    assert writer.registered == {"geo.Point": Point}


def test_register_rejects_bad_classes_and_conflicts() -> None:
    ser = MsgpackSerializer(types=[Point])
    ser.register(Point)  # same class, same name: fine
    for bad in (Plain, int, Point(x=1, when=datetime(2024, 1, 1))):
        with pytest.raises(SerializationError, match="register"):
            ser.register(bad)  # type: ignore[type-var]
    with pytest.raises(SerializationError, match="already registered for"):
        ser.register(Box, name=f"{Point.__module__}:Point")
    with pytest.raises(SerializationError, match="only one name"):
        ser.register(Point, name="other")
    with pytest.raises(SerializationError, match="non-empty"):
        ser.register(Box, name="")


def test_msgpack_reference_cycle_is_a_serialization_error() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(SerializationError, match="cycle") as info:
        MsgpackSerializer().serialize({"loop": loop}, path="state")
    assert info.value.path == "state"


# --- pickle -----------------------------------------------------------------------


def test_pickle_round_trip() -> None:
    ser = PickleSerializer(key=b"secret")
    value = {"box": Box([1, 2]), "when": datetime(2024, 1, 1), "set": {1, 2}, "t": (1,)}
    data = ser.serialize(value, path="state")
    assert data[:1] == b"\x01"
    assert_identical(ser.deserialize(data), value)
    assert PickleSerializer(key="secret").deserialize(data) == value  # str key == its utf-8


def test_pickle_refuses_unsigned_pickle_bytes() -> None:
    raw = pickle.dumps({"a": 1}, protocol=5)
    with pytest.raises(UntrustedPayload, match="refused") as info:
        PickleSerializer(key=b"secret").deserialize(raw, path="state['a']")
    assert info.value.path == "state['a']"
    assert isinstance(info.value, SerializationError)


@pytest.mark.parametrize("data", [b"", b"\x01", b"\x01" + b"\x00" * 32, b"\x02" + b"\x00" * 40])
def test_pickle_refuses_short_or_unknown_payloads(data: bytes) -> None:
    with pytest.raises(UntrustedPayload, match="not a signed statevcs pickle payload"):
        PickleSerializer(key=b"secret").deserialize(data)


def test_pickle_refuses_any_single_flipped_byte() -> None:
    ser = PickleSerializer(key=b"secret")
    data = ser.serialize({"a": [1, 2, 3]})
    for index in range(len(data)):
        tampered = bytearray(data)
        tampered[index] ^= 0x01
        with pytest.raises(UntrustedPayload):
            ser.deserialize(bytes(tampered))


def test_pickle_refuses_wrong_key() -> None:
    data = PickleSerializer(key=b"right key").serialize([1, 2, 3])
    with pytest.raises(UntrustedPayload, match="not signed with this serializer's key"):
        PickleSerializer(key=b"wrong key").deserialize(data)


def test_pickle_refuses_malicious_payload_without_running_it(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "pwned.txt"
    raw = pickle.dumps(WritesMarker(marker), protocol=5)
    ser = PickleSerializer(key=b"secret")
    forged = [raw, b"\x01" + b"\x00" * 32 + raw, b"\x01" + os.urandom(32) + raw]
    for payload in forged:
        with pytest.raises(UntrustedPayload):
            ser.deserialize(payload)
    assert not marker.exists()
    pickle.loads(raw)  # control: the payload really does run code when unpickled
    assert marker.read_text() == "pwned"


def test_pickle_empty_key_is_refused() -> None:
    for key in (b"", ""):
        with pytest.raises(SerializationError, match="non-empty key"):
            PickleSerializer(key=key)


def test_pickle_validate_reports_unpicklable_values_with_path() -> None:
    ser = PickleSerializer(key=b"secret")
    with pytest.raises(SerializationError, match="can't be pickled") as info:
        ser.validate({"lock": threading.Lock()}, path="state['tools']")
    assert info.value.path == "state['tools']"
    with pytest.raises(SerializationError, match="can't be pickled"):
        ser.serialize(lambda: None, path="state['fn']")
    ser.validate({"ok": Box([1])})  # accepted: must not raise
    assert "secret" not in repr(ser)


def test_pickle_signed_but_broken_body_is_a_serialization_error() -> None:
    ser = PickleSerializer(key=b"secret")
    good = ser.serialize(1)
    body = b"not a pickle"
    import hashlib
    import hmac

    forged_with_key = b"\x01" + hmac.new(b"secret", body, hashlib.sha256).digest() + body
    with pytest.raises(SerializationError, match="correctly signed") as info:
        ser.deserialize(forged_with_key)
    assert not isinstance(info.value, UntrustedPayload)
    assert ser.deserialize(good) == 1


# --- serializer_for ---------------------------------------------------------------


def test_serializer_for_returns_configured_when_names_match() -> None:
    for configured in (JSONSerializer(), rich_serializer(), PickleSerializer(key=b"k")):
        assert serializer_for(configured.name, configured) is configured


def test_serializer_for_json_is_always_available() -> None:
    for configured in (rich_serializer(), PickleSerializer(key=b"k")):
        chosen = serializer_for("json", configured)
        assert isinstance(chosen, JSONSerializer)
        assert chosen.deserialize(b'{"a":[1]}') == {"a": [1]}


def test_serializer_for_tells_user_how_to_open_the_repository() -> None:
    with pytest.raises(SerializationError) as info:
        serializer_for("pickle", JSONSerializer())
    assert "written with the 'pickle' serializer" in str(info.value)
    assert "serializer=statevcs.PickleSerializer(key=...)" in str(info.value)
    with pytest.raises(SerializationError, match=r"statevcs\.MsgpackSerializer\(types="):
        serializer_for("msgpack", PickleSerializer(key=b"k"))
    with pytest.raises(SerializationError, match="unknown serializer 'cbor'"):
        serializer_for("cbor", rich_serializer())
    with pytest.raises(SerializationError, match="PickleSerializer"):
        serializer_for("pickle", rich_serializer())


# --- bounded decoding: deep, hostile and huge payloads ------------------------------


def nested_tuples(depth: int) -> Any:
    value: Any = ()
    for _ in range(depth):
        value = (value,)
    return value


def raw_nested_ext(depth: int, code: int = 9) -> bytes:
    """A payload of ``depth`` extension values nested inside one another, built by hand."""
    inner = msgpack.packb([])
    for _ in range(depth - 1):
        inner = msgpack.packb([msgpack.ExtType(code, inner)])
    return bytes(msgpack.packb(msgpack.ExtType(code, inner)))


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO_ROOT, capture_output=True, text=True
    )


def test_msgpack_200_deep_tuple_is_refused_instead_of_crashing_the_reader() -> None:
    # The reproducer: it used to serialize fine (938 bytes) and then kill Python with
    # SIGSEGV when read back. Run in a child process so a crash fails the test, not pytest.
    code = (
        "import msgpack\n"
        "from statevcs.errors import SerializationError\n"
        "from statevcs.serializers import MsgpackSerializer\n"
        "s = MsgpackSerializer()\n"
        "v = ()\n"
        "for _ in range(200):\n"
        "    v = (v,)\n"
        "try:\n"
        "    s.serialize({'deep': v}, path='state')\n"
        "except SerializationError as exc:\n"
        "    print('serialize:', exc)\n"
        "inner = msgpack.packb([])\n"
        "for _ in range(200):  # the same bytes the serializer used to write for it\n"
        "    inner = msgpack.packb([msgpack.ExtType(9, inner)])\n"
        "data = msgpack.packb(msgpack.ExtType(9, inner))\n"
        "print('bytes:', len(data))\n"
        "try:\n"
        "    s.deserialize(data, path=\"state['deep']\")\n"
        "except SerializationError as exc:\n"
        "    print('deserialize:', exc)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, f"child died (rc {result.returncode}): {result.stderr}"
    lines = result.stdout.splitlines()
    assert lines[0].startswith("serialize: state['deep'][0][0]")
    assert "nested deeper than 64 levels" in lines[0]
    assert lines[1] == "bytes: 938"
    assert lines[2].startswith("deserialize: state['deep'] could not be read")
    assert "nested deeper than 64 levels" in lines[2]


@pytest.mark.parametrize(
    "wrap",
    [
        lambda v: (v,),
        lambda v: frozenset({v}),
        lambda v: [{"k": (v, 1)}],
        lambda v: Point(x=1, when=datetime(2024, 1, 1), tags=v),
    ],
    ids=["tuple", "frozenset", "list-dict-tuple", "dataclass"],
)
def test_msgpack_reads_back_everything_it_accepts_up_to_the_nesting_limit(wrap: Any) -> None:
    ser = rich_serializer()
    value: Any = "leaf"
    for _ in range(64):
        value = wrap(value)
    assert ser.deserialize(ser.serialize(value)) == value
    with pytest.raises(SerializationError, match="nested deeper than 64 levels") as info:
        ser.serialize({"k": wrap(value)}, path="state")
    assert info.value.path is not None and info.value.path.startswith("state['k']")


def test_msgpack_limit_holds_for_every_container_extension() -> None:
    ser = rich_serializer()
    for code in (7, 8, 9, 10, 11, 12):
        with pytest.raises(SerializationError, match="nested deeper than 64 levels"):
            ser.deserialize(raw_nested_ext(65, code))
        with pytest.raises(SerializationError):
            ser.deserialize(raw_nested_ext(5000, code))


def test_msgpack_deepest_readable_value_decodes_on_a_small_thread_stack() -> None:
    # 64 nested extension values must not need a large C stack: threads may have 256 KiB.
    code = (
        "import threading\n"
        "from statevcs.serializers import MsgpackSerializer\n"
        "s = MsgpackSerializer()\n"
        "v = 'leaf'\n"
        "for _ in range(64):\n"
        "    v = (v,)\n"
        "data = s.serialize(v)\n"
        "threading.stack_size(256 * 1024)\n"
        "out = []\n"
        "t = threading.Thread(target=lambda: out.append(s.deserialize(data) == v))\n"
        "t.start()\n"
        "t.join()\n"
        "print(out)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, f"child died (rc {result.returncode}): {result.stderr}"
    assert result.stdout.strip() == "[True]"


@pytest.mark.parametrize(
    "data",
    [
        b"\xdd\xff\xff\xff\xff",  # an array claiming 4 billion entries
        b"\xdf\xff\xff\xff\xff",  # a map claiming 4 billion pairs
        b"\xc6\xff\xff\xff\xff",  # bytes claiming 4 GiB
        b"\xdb\xff\xff\xff\xff",  # a string claiming 4 GiB
        b"\xc9\xff\xff\xff\xff\x09",  # an extension claiming 4 GiB
        b"\xc7\x05\x09\xdd\xff\xff\xff\xff",  # a tuple whose payload claims 4 billion entries
        b"\xc7\x05\x07\xdd\xff\xff\xff\xff",  # the same for a set
        b"\x91" * 5000,  # 5,000 nested arrays
    ],
)
def test_msgpack_payloads_claiming_huge_sizes_are_refused(data: bytes) -> None:
    with pytest.raises(SerializationError, match="could not be read"):
        rich_serializer().deserialize(data)


def test_json_decoding_of_deep_input_is_a_serialization_error() -> None:
    for depth in (10_000, 200_000):
        with pytest.raises(SerializationError, match="nested too deeply"):
            JSONSerializer().deserialize(b"[" * depth + b"]" * depth)


def _ext_payloads(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    packed = inner.map(lambda v: msgpack.packb(v, use_bin_type=True))
    return st.builds(msgpack.ExtType, st.integers(0, 16), packed | st.binary(max_size=24))


_hostile_trees = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=16),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.text(max_size=4) | st.integers(-5, 5), inner, max_size=4)
        | _ext_payloads(inner)
    ),
    max_leaves=20,
)
hostile_msgpack = (
    _hostile_trees.map(lambda v: bytes(msgpack.packb(v, use_bin_type=True)))
    | st.binary(max_size=64)
    | st.builds(
        lambda depth, code: raw_nested_ext(depth, code), st.integers(1, 300), st.integers(0, 13)
    )
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_msgpack)
def test_hostile_payloads_raise_only_serialization_errors(data: bytes) -> None:
    for ser in (JSONSerializer(), MsgpackSerializer(), rich_serializer(), PickleSerializer(b"k")):
        try:
            ser.deserialize(data, path="state['x']")
        except SerializationError as exc:
            assert exc.path == "state['x']"
            assert "state['x']" in str(exc)


def nested_json(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def call_from_depth(frames: int, action: Any) -> Any:
    return action() if frames <= 0 else call_from_depth(frames - 1, action)


def test_json_reads_back_what_it_accepts_even_from_a_deep_call_stack() -> None:
    ser = JSONSerializer()
    deepest = nested_json(500)
    data = ser.serialize(deepest)
    assert call_from_depth(400, lambda: ser.deserialize(data)) == deepest
    with pytest.raises(SerializationError, match="more than 500 levels") as info:
        ser.serialize({"k": nested_json(500)}, path="state")
    assert info.value.path == "state"
