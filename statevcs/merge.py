"""Structural three-way merges of snapshots (the commit-graph side lives in ``history``).

A merge never interleaves conversations: the messages of one side win, either because one side
is a prefix of the other (a fast-forward of the conversation) or because the caller chose a
side. State and extras merge key by key against the merge base, as git merges lines.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .errors import MergeConflict

if TYPE_CHECKING:
    from .model import Snapshot


class _Missing:
    """Sentinel type for a key that is absent on one side of a merge."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()
"""Stands for an absent key: passed to resolvers, and returned by one to delete the key."""

MESSAGES_AT = "statevcs.messages_at"
"""The dict adapter's extras key: how many state keys stood before ``"messages"``. Part of the
state's key order, so a merge takes it from the side whose order it takes (never a conflict)."""

Side = Literal["ours", "theirs"]
Resolver = Callable[[str, Any, Any, Any], Any]
"""``(key, base, ours, theirs) -> value``; any argument may be :data:`MISSING`."""
Strategy = Side | Resolver


@dataclass(frozen=True)
class MergeResult:
    """The merged snapshot of a structural merge, and how each conflict was settled."""

    snapshot: Snapshot
    resolved: dict[str, str] = field(default_factory=dict)
    """How each conflict was settled: ``{"state.k": "ours", "messages": "theirs", ...}``."""


def same(a: Any, b: Any) -> bool:
    """Return whether two decoded values are identical in type and content.

    Stricter than ``==``: ``1``, ``1.0`` and ``True`` differ, as they serialize differently.
    Dicts are the same only with their keys in the same order (the order is stored too).
    """
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        if len(a) != len(b) or not all(x == y for x, y in zip(a, b)):
            return False
        return all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    try:
        return bool(a == b)
    except Exception:  # exotic values with a broken __eq__ count as different
        return False


def _same_list(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    return len(a) == len(b) and _is_prefix(a, b)


def _is_prefix(short: list[dict[str, Any]], long: list[dict[str, Any]]) -> bool:
    return len(short) <= len(long) and all(
        same(x, y) for x, y in zip(short, long[: len(short)], strict=True)
    )


def merge_snapshots(
    base: Snapshot | None,
    ours: Snapshot,
    theirs: Snapshot,
    *,
    strategy: Strategy | None = None,
    fallback: Side | None = None,
) -> MergeResult:
    """Merge two snapshots structurally against their common ``base`` (``None``: unrelated).

    State and extras merge key by key: a key changed on one side takes that side; a key changed
    differently on both sides is a conflict, settled by ``strategy`` (``"ours"``, ``"theirs"``
    or a resolver ``(key, base, ours, theirs) -> value`` for state keys). Messages take the
    side that changed them when only one did (appends, removals and edits alike), the longer
    side when both only appended and one extends the other, else the side named by the
    strategy.
    ``fallback`` settles conflicts a resolver does not cover (messages, extras, kind); it
    defaults to ``strategy`` when that is a side name. Raises :class:`MergeConflict` listing
    every unsettled conflict.

    Keys keep the order of the side that reordered them (a dict's ``"messages"`` place
    included); when both sides did, the order of the side ``fallback`` or ``strategy`` names,
    else ours. A reorder never conflicts; a value whose dict keys were reordered is changed.
    """
    if strategy is not None and not callable(strategy) and strategy not in ("ours", "theirs"):
        raise TypeError(f"strategy must be 'ours', 'theirs' or a callable, got {strategy!r}")
    if fallback is not None and fallback not in ("ours", "theirs"):
        raise TypeError(f"fallback must be 'ours' or 'theirs', got {fallback!r}")
    side: Side | None = fallback
    if side is None and isinstance(strategy, str):
        side = strategy
    resolver = strategy if callable(strategy) else None
    from .model import Snapshot  # pydantic loads with the first merge, not with the module

    base = (
        base
        if base is not None
        else Snapshot.model_construct(kind=ours.kind, messages=[], state={}, extras={})
    )
    resolved: dict[str, str] = {}
    problems: list[str] = []

    messages_conflict = kind_conflict = False
    # Messages, three-way: a side that did not change the conversation takes the other's (a
    # removal or an edit included); when both changed it, the longer wins only if both merely
    # appended to the base, one side's appends extending the other's.
    ours_kept = _is_prefix(base.messages, ours.messages)
    theirs_kept = _is_prefix(base.messages, theirs.messages)
    if _same_list(ours.messages, theirs.messages) or _same_list(theirs.messages, base.messages):
        messages = ours.messages
    elif _same_list(ours.messages, base.messages):
        messages = theirs.messages
    elif ours_kept and theirs_kept and _is_prefix(theirs.messages, ours.messages):
        messages = ours.messages
    elif ours_kept and theirs_kept and _is_prefix(ours.messages, theirs.messages):
        messages = theirs.messages
    elif side is not None:
        messages = ours.messages if side == "ours" else theirs.messages
        resolved["messages"] = side
    else:
        messages = ours.messages
        messages_conflict = True
        problems.append(
            "the conversations diverged (neither is a prefix of the other) and conversations "
            "are never interleaved"
        )

    # kind
    kind = ours.kind
    if ours.kind != theirs.kind:
        if ours.kind == base.kind:
            kind = theirs.kind
        elif theirs.kind == base.kind:
            kind = ours.kind
        elif side is not None:
            kind = ours.kind if side == "ours" else theirs.kind
            resolved["kind"] = side
        else:
            kind_conflict = True
            problems.append(
                f"snapshot kind changed on both sides ({ours.kind!r} vs {theirs.kind!r})"
            )

    # The messages' place is part of the state's order (below), not an extras value of its own.
    at = [_position(s) for s in (base, ours, theirs)]
    placed = all(p is not None for p in at)
    state, state_conflicts = _merge_maps(
        base.state, ours.state, theirs.state, side, resolver, resolved, "state"
    )
    extras, extras_conflicts = _merge_maps(
        _unplaced(base.extras, placed),
        _unplaced(ours.extras, placed),
        _unplaced(theirs.extras, placed),
        side,
        None,
        resolved,
        "extras",
    )
    # Keys follow the order of the side that changed it; when both did, the strategy's side
    # (ours without one). Keys only the other side holds follow them.
    moved = (at[0] != at[1], at[0] != at[2])
    state_first = _order_side(base.state, ours.state, theirs.state, moved, side)
    state = _ordered(state, (ours.state, theirs.state)[state_first])
    if placed:
        start = (ours, theirs)[state_first]
        kept = [k for k in list(start.state)[: at[1 + state_first] or 0] if k in state]
        if kept:
            extras[MESSAGES_AT] = len(kept)
    extras_first = _order_side(base.extras, ours.extras, theirs.extras, (False, False), side)
    extras = _ordered(extras, (ours.extras, theirs.extras)[extras_first])
    if state_conflicts:
        problems.insert(
            0, "state keys changed differently on both sides: " + _listing(state_conflicts)
        )
    if extras_conflicts:
        problems.append(
            "extras keys changed differently on both sides: " + _listing(extras_conflicts)
        )
    if problems:
        hint = (
            ". Choose a side with strategy='ours' or 'theirs' (`--strategy ours|theirs` on the "
            "command line); a per-key resolver callable can settle state keys"
        )
        raise MergeConflict(
            "merge conflict: " + "; ".join(problems) + hint,
            keys=state_conflicts,
            extras_keys=extras_conflicts,
            messages=messages_conflict,
            kind=kind_conflict,
        )
    merged = Snapshot.model_construct(kind=kind, messages=messages, state=state, extras=extras)
    return MergeResult(snapshot=merged, resolved=resolved)


def _position(snapshot: Snapshot) -> int | None:
    """How many state keys stood before ``"messages"`` (0 if not recorded; ``None``: not a
    count, left to merge as any other extras value)."""
    position = snapshot.extras.get(MESSAGES_AT, 0)
    return position if type(position) is int and position >= 0 else None


def _unplaced(extras: Mapping[str, Any], placed: bool) -> Mapping[str, Any]:
    """``extras`` without the messages' place when the merge places the messages itself."""
    if not placed or MESSAGES_AT not in extras:
        return extras
    return {k: v for k, v in extras.items() if k != MESSAGES_AT}


def _reordered(base: Mapping[str, Any], side: Mapping[str, Any]) -> bool:
    """Whether ``side`` changed the order of the keys it shares with ``base``."""
    return [k for k in side if k in base] != [k for k in base if k in side]


def _order_side(
    base: Mapping[str, Any],
    ours: Mapping[str, Any],
    theirs: Mapping[str, Any],
    moved: tuple[bool, bool],
    side: Side | None,
) -> int:
    """0 (ours) or 1 (theirs): the side whose key order a merge keeps. The side that alone
    reordered (``moved``: ours, theirs also moved something else, such as the messages);
    when both did, the strategy's side, else ours."""
    ours_changed = moved[0] or _reordered(base, ours)
    theirs_changed = moved[1] or _reordered(base, theirs)
    if ours_changed and theirs_changed:
        return 1 if side == "theirs" else 0
    return 1 if theirs_changed else 0


def _ordered(merged: dict[str, Any], first: Mapping[str, Any]) -> dict[str, Any]:
    """``merged`` with ``first``'s keys first, in its order; the other keys after, as merged."""
    ordered = {k: merged[k] for k in first if k in merged}
    ordered.update((k, v) for k, v in merged.items() if k not in ordered)
    return ordered


def _listing(keys: Iterable[str]) -> str:
    return ", ".join(repr(k) for k in sorted(keys))


def _merge_maps(
    base: Mapping[str, Any],
    ours: Mapping[str, Any],
    theirs: Mapping[str, Any],
    side: Side | None,
    resolver: Resolver | None,
    resolved: dict[str, str],
    label: str,
) -> tuple[dict[str, Any], list[str]]:
    result: dict[str, Any] = {}
    conflicts: list[str] = []
    keys = (
        list(ours)
        + [k for k in theirs if k not in ours]
        + [k for k in base if k not in ours and k not in theirs]
    )
    for key in keys:
        b = base.get(key, MISSING)
        o = ours.get(key, MISSING)
        t = theirs.get(key, MISSING)
        if same(o, t) or same(t, b):
            value = o
        elif same(o, b):
            value = t
        elif resolver is not None:
            value = resolver(key, b, o, t)
            resolved[f"{label}.{key}"] = "resolver"
        elif side is not None:
            value = o if side == "ours" else t
            resolved[f"{label}.{key}"] = side
        else:
            conflicts.append(key)
            continue
        if value is not MISSING:
            result[key] = value
    return result, conflicts


__all__ = [
    "MISSING",
    "MergeResult",
    "Resolver",
    "Side",
    "Strategy",
    "merge_snapshots",
    "same",
]
