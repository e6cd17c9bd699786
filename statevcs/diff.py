"""Structural diffs of two snapshots: messages by position, state and extras by key.

The message diff walks both prolly trees and skips equal, aligned subtrees, so its cost follows
the size of the difference, not the length of the conversation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .hashing import ObjectId
from .objectdb import ObjectDB
from .objects import Doc, MapValue, SnapshotObject
from .serializers import StateSerializer, serializer_for
from .snapshot import (
    extras_entries,
    load_snapshot_object,
    message_ids_from,
    read_values,
    state_entries,
)
from .structures import prolly
from .structures.maps import read_map

ChangeKind = Literal["added", "removed", "changed"]


@dataclass(frozen=True, slots=True)
class MessageChange:
    """A message added, removed or changed at ``index``."""

    index: int
    kind: ChangeKind
    old: Any
    new: Any


@dataclass(frozen=True, slots=True)
class MessagesDiff:
    """How two conversations differ, position by position."""

    common_prefix: int
    old_length: int
    new_length: int
    changes: tuple[MessageChange, ...]

    @property
    def added(self) -> list[MessageChange]:
        """Messages present only in the new conversation."""
        return [c for c in self.changes if c.kind == "added"]

    @property
    def removed(self) -> list[MessageChange]:
        """Messages present only in the old conversation."""
        return [c for c in self.changes if c.kind == "removed"]

    @property
    def changed(self) -> list[MessageChange]:
        """Positions whose message differs."""
        return [c for c in self.changes if c.kind == "changed"]


@dataclass(frozen=True, slots=True)
class ValueChange:
    """A state or extras key added, removed or changed (``old`` -> ``new``)."""

    key: str
    kind: ChangeKind
    old: Any
    new: Any


@dataclass(frozen=True, slots=True)
class OrderChange:
    """The keys of ``field`` (``"state"`` or ``"extras"``) kept in another order: the keys
    both snapshots hold, ``old`` in the old order and ``new`` in the new one."""

    field: Literal["state", "extras"]
    old: tuple[str, ...]
    new: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SnapshotDiff:
    """The structural difference between two snapshots."""

    old: str
    new: str
    old_kind: str
    new_kind: str
    messages: MessagesDiff
    state: tuple[ValueChange, ...]
    extras: tuple[ValueChange, ...]
    nodes_visited: int
    order: tuple[OrderChange, ...] = ()
    """State or extras keys that both snapshots hold, committed in another order."""

    @property
    def is_empty(self) -> bool:
        """Whether the two snapshots are identical."""
        return (
            self.old_kind == self.new_kind
            and not self.messages.changes
            and not self.state
            and not self.extras
            and not self.order
        )

    def __str__(self) -> str:
        return render(self)


_TOO_DEEP = "<nested too deeply to show>"


def _text(value: Any, show: Any = str) -> str:
    """``str`` or ``repr`` of a stored value, which may nest deeper than Python's repr goes."""
    try:
        return str(show(value))
    except RecursionError:
        return _TOO_DEEP


def _preview(message: Any, width: int = 60) -> str:
    if isinstance(message, dict):
        role = message.get("role", "?")
        content = message.get("content", "")
        if isinstance(content, list):
            parts = []
            for block in content:
                if isinstance(block, dict):
                    if "text" in block:
                        parts.append(_text(block["text"]))
                    else:
                        parts.append(f"[{next(iter(block), 'block')}]")
            content = " ".join(parts)
        text = " ".join(_text(content).split())
        if len(text) > width:
            text = text[: width - 1] + "…"
        return f"{_text(role)}: {text}"
    return _text(message, repr)[:width]


def _short(value: Any, width: int = 40) -> str:
    text = _text(value, repr)
    return text if len(text) <= width else text[: width - 1] + "…"


def render(diff: SnapshotDiff) -> str:
    """Render a diff as readable text (what ``str(diff)`` and the CLI print)."""
    lines = [f"diff {diff.old[:12]} {diff.new[:12]}"]
    if diff.old_kind != diff.new_kind:
        lines.append(f"kind: {diff.old_kind} -> {diff.new_kind}")
    m = diff.messages
    lines.append(
        f"messages: {m.old_length} -> {m.new_length} (common prefix {m.common_prefix}; "
        f"+{len(m.added)} -{len(m.removed)} ~{len(m.changed)})"
    )
    signs = {"added": "+", "removed": "-", "changed": "~"}
    for change in m.changes:
        shown = change.new if change.kind != "removed" else change.old
        lines.append(f"  {signs[change.kind]} [{change.index}] {_preview(shown)}")
    for title, changes in (("state", diff.state), ("extras", diff.extras)):
        if changes:
            lines.append(f"{title}:")
        for c in changes:
            if c.kind == "added":
                lines.append(f"  + {c.key} = {_short(c.new)}")
            elif c.kind == "removed":
                lines.append(f"  - {c.key} (was {_short(c.old)})")
            else:
                lines.append(f"  ~ {c.key}: {_short(c.old)} -> {_short(c.new)}")
    for reordered in diff.order:
        lines.append(
            f"{reordered.field} key order: {_keys(reordered.old)} -> {_keys(reordered.new)}"
        )
    if diff.is_empty:
        lines.append("(no differences)")
    return "\n".join(lines)


def _keys(keys: tuple[str, ...], width: int = 60) -> str:
    """Keys as ``a, b, c`` (shortened past ``width`` characters)."""
    text = ", ".join(_short(k, 20) for k in keys)
    return text if len(text) <= width else text[: width - 1] + "…"


def _map_changes(
    old: dict[str, MapValue],
    new: dict[str, MapValue],
    decode_old: Callable[[dict[str, MapValue]], dict[str, Any]],
    decode_new: Callable[[dict[str, MapValue]], dict[str, Any]],
) -> tuple[ValueChange, ...]:
    keys = sorted(set(old) | set(new))
    differing = [k for k in keys if old.get(k) != new.get(k)]
    old_values = decode_old({k: old[k] for k in differing if k in old})
    new_values = decode_new({k: new[k] for k in differing if k in new})
    changes = []
    for key in differing:
        if key not in old:
            changes.append(ValueChange(key, "added", None, new_values[key]))
        elif key not in new:
            changes.append(ValueChange(key, "removed", old_values[key], None))
        else:
            changes.append(ValueChange(key, "changed", old_values[key], new_values[key]))
    return tuple(changes)


def diff_message_ids(db: ObjectDB, old: SnapshotObject, new: SnapshotObject) -> prolly.ListDiff:
    """Positional diff of two conversations (prolly tree + inline tail each), as message ids.

    Equal, aligned subtrees are skipped: the cost follows the difference, not the length.
    """
    old_tree = prolly.length(db, old.messages)
    new_tree = prolly.length(db, new.messages)
    changes: list[prolly.ItemChange] = []
    visited = 0
    start = min(old_tree, new_tree)
    if old.messages != new.messages:
        tree_diff = prolly.diff(db, old.messages, new.messages)
        visited = tree_diff.nodes_visited
        changes.extend(c for c in tree_diff.changes if c.index < start)
    old_rest = message_ids_from(db, old, start)
    new_rest = message_ids_from(db, new, start)
    for offset in range(max(len(old_rest), len(new_rest))):
        a = old_rest[offset] if offset < len(old_rest) else None
        b = new_rest[offset] if offset < len(new_rest) else None
        if a != b:
            changes.append(prolly.ItemChange(start + offset, a, b))
    old_length, new_length = old_tree + len(old.tail), new_tree + len(new.tail)
    first = changes[0].index if changes else min(old_length, new_length)
    return prolly.ListDiff(first, old_length, new_length, tuple(changes), visited)


def diff_fields(
    db: ObjectDB, old: SnapshotObject, new: SnapshotObject, serializer: StateSerializer
) -> tuple[tuple[ValueChange, ...], tuple[ValueChange, ...]]:
    """Compare the state and extras of two snapshot objects, key by key (messages left out).

    Equal maps cost nothing to compare; only the values of differing keys are decoded.
    """
    if old.state == new.state:
        state: tuple[ValueChange, ...] = ()
    else:
        old_codec = serializer_for(old.state_codec, serializer)
        new_codec = serializer_for(new.state_codec, serializer)
        state = _map_changes(
            read_map(db, old.state),
            read_map(db, new.state),
            lambda entries: read_values(db, entries, old_codec),
            lambda entries: read_values(db, entries, new_codec),
        )
    if old.extras == new.extras:
        extras: tuple[ValueChange, ...] = ()
    else:
        extras = _map_changes(
            read_map(db, old.extras),
            read_map(db, new.extras),
            lambda entries: read_values(db, entries, None),
            lambda entries: read_values(db, entries, None),
        )
    return state, extras


def diff_orders(db: ObjectDB, old: SnapshotObject, new: SnapshotObject) -> tuple[OrderChange, ...]:
    """The state and extras keys both snapshots hold whose committed order differs.

    Free when neither snapshot records an order (sorted keys keep their relative order).
    """
    changes: list[OrderChange] = []
    fields: tuple[tuple[Literal["state", "extras"], Any], ...] = (
        ("state", state_entries),
        ("extras", extras_entries),
    )
    for field, entries in fields:
        old_order = old.state_order if field == "state" else old.extras_order
        new_order = new.state_order if field == "state" else new.extras_order
        if not old_order and not new_order:
            continue
        old_keys, new_keys = list(entries(db, old)), list(entries(db, new))
        kept = set(old_keys) & set(new_keys)
        before = tuple(k for k in old_keys if k in kept)
        after = tuple(k for k in new_keys if k in kept)
        if before != after:
            changes.append(OrderChange(field, before, after))
    return tuple(changes)


def diff_snapshots(
    db: ObjectDB,
    old_id: ObjectId,
    new_id: ObjectId,
    serializer: StateSerializer,
    *,
    old_label: str = "",
    new_label: str = "",
) -> SnapshotDiff:
    """Compare two stored snapshots structurally."""
    old = load_snapshot_object(db, old_id)
    new = load_snapshot_object(db, new_id)
    list_diff = diff_message_ids(db, old, new)
    wanted = {i for c in list_diff.changes for i in (c.old, c.new) if i is not None}
    docs = db.load_values(wanted)

    def value(object_id: ObjectId | None) -> Any:
        if object_id is None:
            return None
        doc = docs[object_id]
        return doc.value if isinstance(doc, Doc) else doc.data

    changes = []
    for c in list_diff.changes:
        kind: ChangeKind = "changed" if c.old and c.new else ("added" if c.new else "removed")
        changes.append(MessageChange(c.index, kind, value(c.old), value(c.new)))
    messages = MessagesDiff(
        list_diff.common_prefix, list_diff.old_length, list_diff.new_length, tuple(changes)
    )
    state, extras = diff_fields(db, old, new, serializer)
    return SnapshotDiff(
        old_label or old_id.hex(),
        new_label or new_id.hex(),
        old.kind,
        new.kind,
        messages,
        state,
        extras,
        list_diff.nodes_visited,
        diff_orders(db, old, new),
    )


__all__ = [
    "MessageChange",
    "MessagesDiff",
    "OrderChange",
    "SnapshotDiff",
    "ValueChange",
    "diff_fields",
    "diff_message_ids",
    "diff_orders",
    "diff_snapshots",
    "render",
]
