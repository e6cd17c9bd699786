"""Reading list items back: the saver's message rebuilding without validation.

Stored message documents (what ``item_doc`` writes) come back equal to what validating their
fields builds: same class, field values, field order and fields set, nothing shared between
two reads. Hostile documents give a value or a ``StateVCSError``, never another exception.
"""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

import statevcs
from statevcs.errors import StateVCSError
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph.codec import (
    _CLASSES,
    _DEFAULTS,
    fresh_copy,
    item_doc,
    item_value,
    safe_serializer,
)

_text = st.text(max_size=12)
_plain = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_content = _text | st.lists(
    st.fixed_dictionaries({"type": st.just("text"), "text": _text}) | _text, max_size=3
)
_common = {
    "id": st.none() | _text,
    "name": st.none() | _text,
    "additional_kwargs": st.dictionaries(_text, _plain, max_size=2),
    "response_metadata": st.dictionaries(_text, _plain, max_size=2),
}
_calls = st.lists(
    st.fixed_dictionaries(
        {
            "name": _text,
            "args": st.dictionaries(_text, _plain, max_size=2),
            "id": st.none() | _text,
        }
    ),
    max_size=2,
)
_usage = st.none() | st.builds(
    lambda i, o: {"input_tokens": i, "output_tokens": o, "total_tokens": i + o},
    st.integers(0, 99),
    st.integers(0, 99),
)


def _optional(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


_messages: st.SearchStrategy[BaseMessage] = st.one_of(
    st.builds(lambda c, f: HumanMessage(c, **f), _content, _optional(_common)),
    st.builds(lambda c, f: SystemMessage(c, **f), _content, _optional(_common)),
    st.builds(
        lambda c, f: AIMessage(c, **f),
        _content,
        _optional({**_common, "tool_calls": _calls, "usage_metadata": _usage}),
    ),
    st.builds(
        lambda c, t, f: ToolMessage(c, tool_call_id=t, **f),
        _content,
        _text,
        _optional({**_common, "artifact": _plain, "status": st.sampled_from(["success", "error"])}),
    ),
    st.builds(lambda c, r, f: ChatMessage(c, role=r, **f), _content, _text, _optional(_common)),
    st.builds(
        lambda c, n, f: FunctionMessage(c, name=n, **f),
        _content,
        _text,
        _optional({k: v for k, v in _common.items() if k != "name"}),
    ),
)


def _stored(doc: Any) -> Any:
    """``doc`` as the store hands it back: msgpack-decoded afresh."""
    return msgpack.unpackb(msgpack.packb(doc, use_bin_type=True), raw=False, strict_map_key=False)


def _validated(doc: dict[str, Any]) -> BaseMessage:
    """The reference: the message class validating the stored fields."""
    cls = _CLASSES[doc["role"]]
    data = {k: type(v)() if type(v) in (dict, list) else v for k, v in _DEFAULTS[cls].items()}
    data.update(doc["lc"])
    data["content"] = doc["content"]
    if "tool_calls" in doc:
        data["tool_calls"] = doc["tool_calls"]
    return cls(**data)


@settings(max_examples=300, deadline=None)
@given(_messages)
def test_stored_messages_read_back_as_validation_builds_them(message: BaseMessage) -> None:
    doc = item_doc("messages", message, safe_serializer())
    assert "lc" in doc
    expected = _validated(_stored(doc))
    first, second = item_value(_stored(doc), None), item_value(_stored(doc), None)  # type: ignore[arg-type]
    for got in (first, second):
        assert type(got) is type(message) is type(expected)
        assert got == message == expected
        assert list(got.__dict__.items()) == list(expected.__dict__.items())
        assert got.model_fields_set == expected.model_fields_set
        assert got.__pydantic_extra__ == expected.__pydantic_extra__
        assert got.model_dump() == expected.model_dump()
    for name, value in first.__dict__.items():
        if isinstance(value, (dict, list)):
            assert value is not second.__dict__[name]


_hostile_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | st.sampled_from(["user", "assistant", "tool", "chat", "function", "system", "human", "ai"])
    | st.sampled_from(["id", "name", "type", "tool_calls", "content", "role", "tool_call_id"])
    | st.binary(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["id", "name", "type", "tool_calls", "args", "role", "status"])
            | st.integers(0, 2),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)
_hostile_docs = st.fixed_dictionaries(
    {"lc": _hostile_values},
    optional={
        "channel": _hostile_values,
        "role": _hostile_values,
        "content": _hostile_values,
        "tool_calls": _hostile_values,
        "v": _hostile_values,
    },
)


@settings(max_examples=500, deadline=None)
@given(_hostile_docs | _hostile_values)
def test_hostile_item_documents_give_a_value_or_a_statevcs_error(doc: Any) -> None:
    stored = _stored(doc)
    try:
        value = item_value(stored, safe_serializer())
    except StateVCSError:
        return
    if isinstance(stored, dict) and "lc" in stored:
        # Only the class its role names, and only with fields of that class's types.
        assert type(value) is _CLASSES[stored["role"]]
        assert value == _validated(stored)


def test_known_hostile_shapes_raise_statevcs_errors() -> None:
    serde = safe_serializer()
    for doc in (
        {"role": ["user"], "content": "x", "lc": {}},  # an unhashable role
        {"role": "user", "content": "x", "lc": {1: "x"}},  # a field that is not named
        {"role": "user", "content": "x", "lc": {"type": "ai"}},  # a type its role denies
        {"role": "tool", "content": "x", "lc": {}},  # a required field missing
        {"role": "assistant", "content": "x", "lc": {"tool_calls": 5}},
        {"role": "nobody", "content": "x", "lc": {}},
        {"role": "user", "lc": {}},
    ):
        try:
            item_value(doc, serde)
        except StateVCSError:
            continue
        raise AssertionError(f"{doc!r} read back as a message")


def test_a_message_twice_in_a_list_reads_back_as_two_unshared_messages() -> None:
    saver = StateVCSSaver(statevcs.Repo.init("memory://"))
    message = HumanMessage("hi", id="1", additional_kwargs={"a": [1]})
    config = saver.put(
        {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
        {
            "v": 1,
            "id": "1",
            "ts": "2025-01-01T00:00:00+00:00",
            "channel_values": {"messages": [message, message]},
            "channel_versions": {"messages": 1},
            "versions_seen": {},
            "updated_channels": None,
        },
        {},
        {"messages": 1},
    )
    for _ in range(2):  # the second read comes from the object database's cache
        got = saver.get_tuple(config)
        assert got is not None
        first, second = got.checkpoint["channel_values"]["messages"]
        assert first == second == message and first is not second
        assert first.additional_kwargs is not second.additional_kwargs
        first.additional_kwargs["a"].append(2)  # in-place edits stay with the reader
        assert second.additional_kwargs == {"a": [1]}


def _mutable_ids(value: Any) -> set[int]:
    """Ids of every mutable container inside ``value`` (a message's fields included)."""
    found: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, BaseMessage):
            stack.extend([item.__dict__, item.__pydantic_extra__, item.__pydantic_fields_set__])
            found.add(id(item))
        elif isinstance(item, (dict, list, set, bytearray)):
            found.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)
    return found


def _same(a: Any, b: Any) -> bool:
    """Equal type for type, key order for key order, fields set for fields set."""
    if type(a) is not type(b):
        return False
    if isinstance(a, BaseMessage):
        return (
            _same(a.__dict__, b.__dict__)
            and a.__pydantic_fields_set__ == b.__pydantic_fields_set__
            and _same(a.__pydantic_extra__, b.__pydantic_extra__)
        )
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b) or (a != a and b != b)


@settings(max_examples=300, deadline=None)
@given(item=_messages | _plain | st.lists(st.tuples(_text, st.binary(max_size=4)), max_size=2))
def test_fresh_copies_equal_their_item_and_share_nothing_mutable(item: Any) -> None:
    copied = fresh_copy(item)
    assert _same(copied, item)
    assert not (_mutable_ids(copied) & _mutable_ids(item))


def test_lone_surrogates_in_messages_come_back_exactly() -> None:
    # Text cut inside a UTF-16 pair: LangGraph's own savers store "?" in its place.
    saver = StateVCSSaver(statevcs.Repo.init("memory://"))
    thread = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    messages = [
        HumanMessage("cut \ud83d here", id="u"),
        AIMessage("ok", id="a", additional_kwargs={"k\udc00": ["v\ud800"]}),
    ]
    checkpoint = {
        "v": 1,
        "id": "1",
        "ts": "2025-01-01T00:00:00+00:00",
        "channel_values": {"messages": messages},
        "channel_versions": {"messages": 1},
        "versions_seen": {},
        "updated_channels": None,
    }
    config = saver.put(thread, checkpoint, {}, {"messages": 1})  # type: ignore[arg-type]
    saver.put_writes(config, [("messages", [HumanMessage("w\ud83d", id="w")])], "task")
    for reader in (saver, StateVCSSaver(saver.repo)):
        got = reader.get_tuple(thread)
        assert got is not None
        read = got.checkpoint["channel_values"]["messages"]
        assert [type(m) for m in read] == [type(m) for m in messages]
        assert all(_same(a.__dict__, b.__dict__) for a, b in zip(read, messages, strict=True))
        assert got.pending_writes[0][2][0].content == "w\ud83d"


@pytest.mark.parametrize(
    "packed",
    [b"\xc1", b"\x91\x01", b"\x91" * 5000, msgpack.packb({"role": "human"}), "text", 5],
)
def test_hostile_packed_message_fields_raise_corrupt_object(packed: Any) -> None:
    doc = {"channel": "m", "role": "human", "mb": packed}
    with pytest.raises(StateVCSError):
        item_value(doc, safe_serializer())
    wrong_role = {
        "channel": "m",
        "role": "ai",
        "mb": msgpack.packb({"role": "human", "content": "x", "lc": {}}),
    }
    with pytest.raises(StateVCSError):
        item_value(wrong_role, safe_serializer())
