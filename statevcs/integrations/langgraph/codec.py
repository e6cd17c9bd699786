"""Channel values, list items and pending writes to storable documents and back.

Plain values (JSON types, plus bytes inside documents) are stored as they are, so ``statevcs
show`` and the git mirror can read them; LangChain messages as ``message_to_dict`` documents
(read back by ``messages_from_dict``: a known message class is built, no code runs); anything
else through the saver's ``serde`` (LangGraph's ``JsonPlusSerializer`` by default), as its
``(type, bytes)`` pair. Loading runs code only if that serde does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
from langgraph.checkpoint.serde.base import SerializerProtocol

from ...errors import CorruptObject

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
_MAX_DEPTH = 100
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def is_plain(value: Any, *, allow_bytes: bool) -> bool:
    """Whether ``value`` reads back equal and of the same types from JSON (or msgpack).

    Exact types only (a ``tuple`` or a ``str`` subclass is not plain: it would come back as
    something else); dict keys must be strings; floats finite; ints within 64 bits.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if item is None or kind is bool:
            continue
        if kind is str:
            if not item.isascii():
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
                if type(key) is not str or not is_plain(key, allow_bytes=False):
                    return False
                stack.append((child, depth + 1))
            continue
        return False
    return True


def wrap(value: Any, serde: SerializerProtocol) -> dict[str, Any]:
    """Return ``value`` as a document: ``{"v": value}`` if plain, else ``{"t": tag, "b": data}``."""
    if is_plain(value, allow_bytes=True):
        return {"v": value}
    tag, data = serde.dumps_typed(value)
    return {"t": tag, "b": data}


def unwrap(doc: Any, serde: SerializerProtocol, where: str) -> Any:
    """Return the value :func:`wrap` stored as ``doc``."""
    if isinstance(doc, dict):
        if "v" in doc:
            return doc["v"]
        tag, data = doc.get("t"), doc.get("b")
        if isinstance(tag, str) and isinstance(data, bytes):
            return serde.loads_typed((tag, data))
    raise CorruptObject("(checkpoint)", f"{where} is not a stored LangGraph value")


def item_doc(channel: str, item: Any, serde: SerializerProtocol) -> dict[str, Any]:
    """Return one item of list channel ``channel`` as a message document."""
    if isinstance(item, BaseMessage):
        data = message_to_dict(item)
        if is_plain(data, allow_bytes=True):
            return {"channel": channel, "role": _ROLES.get(item.type, item.type), "lc": data}
    return {"channel": channel, **wrap(item, serde)}


def item_value(doc: Any, serde: SerializerProtocol) -> Any:
    """Return the list item :func:`item_doc` stored as ``doc``."""
    if isinstance(doc, dict) and "lc" in doc:
        return messages_from_dict([doc["lc"]])[0]
    return unwrap(doc, serde, "a list channel's item")


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


__all__ = [
    "is_plain",
    "item_channel",
    "item_doc",
    "item_value",
    "read_writes",
    "unwrap",
    "wrap",
    "wrap_writes",
]
