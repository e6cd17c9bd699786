"""Two runs side by side, turn by turn: where they diverged and how."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..diff import (
    MessageChange,
    MessagesDiff,
    OrderChange,
    ValueChange,
    diff_fields,
    diff_message_ids,
    diff_orders,
)
from ..hashing import from_hex
from ..plain import to_plain
from .timeline import Turn, turns_between

if TYPE_CHECKING:
    from ..repo import Repo

TurnStatus = Literal["same", "diverged", "only_a", "only_b"]
"""``same``: identical messages; ``diverged``: both runs have the turn, with differences;
``only_a`` / ``only_b``: one run stops before it."""


@dataclass(frozen=True, slots=True)
class TurnComparison:
    """Turn ``index`` of both runs: its status, the structural diff, the tools only one used."""

    index: int
    status: TurnStatus
    a: Turn | None
    b: Turn | None
    messages: MessagesDiff
    """The turn's messages position by position (positions counted from the turn's prompt)."""
    state: tuple[ValueChange, ...]
    """State keys that differ between the commits ending the turn in each run."""
    extras: tuple[ValueChange, ...]
    """Extras (system prompt, framework fields) that differ between those commits."""
    tools_only_a: tuple[str, ...]
    """Tool calls (by name, once per call) run A made in this turn and run B did not."""
    tools_only_b: tuple[str, ...]
    """Tool calls run B made in this turn and run A did not."""
    order: tuple[OrderChange, ...] = ()
    """State or extras keys both commits hold, in another order in run B."""

    def to_dict(self, *, messages: bool = False) -> dict[str, Any]:
        """A JSON-compatible rendering (``messages=True`` adds each turn's messages)."""
        return {
            "index": self.index,
            "status": self.status,
            "a": self.a.to_dict(messages=messages) if self.a is not None else None,
            "b": self.b.to_dict(messages=messages) if self.b is not None else None,
            "messages": {
                "common_prefix": self.messages.common_prefix,
                "a_length": self.messages.old_length,
                "b_length": self.messages.new_length,
                "changes": [
                    {"index": c.index, "kind": c.kind, "a": to_plain(c.old), "b": to_plain(c.new)}
                    for c in self.messages.changes
                ],
            },
            "state": [_change(c) for c in self.state],
            "extras": [_change(c) for c in self.extras],
            "tools_only_a": list(self.tools_only_a),
            "tools_only_b": list(self.tools_only_b),
            "order": [{"field": c.field, "a": list(c.old), "b": list(c.new)} for c in self.order],
        }


def _change(change: ValueChange) -> dict[str, Any]:
    return {
        "key": change.key,
        "kind": change.kind,
        "a": to_plain(change.old),
        "b": to_plain(change.new),
    }


@dataclass(frozen=True, slots=True)
class Comparison:
    """Runs ``a`` and ``b`` compared turn by turn (see :func:`compare`)."""

    a: str
    """Revision A as given."""
    b: str
    """Revision B as given."""
    a_commit: str
    b_commit: str
    merge_base: str | None
    """Their best common ancestor (``None``: unrelated histories)."""
    common_prefix: int
    """How many leading messages the two conversations share."""
    turns: tuple[TurnComparison, ...]

    @property
    def diverged(self) -> list[int]:
        """The indexes of the turns that are not the same in both runs."""
        return [t.index for t in self.turns if t.status != "same"]

    @property
    def first_divergence(self) -> int | None:
        """The first turn that differs, or ``None`` when the runs are the same."""
        diverged = self.diverged
        return diverged[0] if diverged else None

    def to_dict(self, *, messages: bool = False) -> dict[str, Any]:
        """A JSON-compatible rendering (what ``statevcs compare --json`` prints)."""
        return {
            "a": {"rev": self.a, "id": self.a_commit},
            "b": {"rev": self.b, "id": self.b_commit},
            "merge_base": self.merge_base,
            "common_prefix": self.common_prefix,
            "first_divergence": self.first_divergence,
            "diverged": self.diverged,
            "turns": [t.to_dict(messages=messages) for t in self.turns],
        }


def _messages_diff(a: Turn | None, b: Turn | None) -> MessagesDiff:
    ids_a = a.message_ids if a is not None else ()
    ids_b = b.message_ids if b is not None else ()
    values_a = a.messages if a is not None else ()
    values_b = b.messages if b is not None else ()
    changes = []
    for i in range(max(len(ids_a), len(ids_b))):
        old = ids_a[i] if i < len(ids_a) else None
        new = ids_b[i] if i < len(ids_b) else None
        if old == new:
            continue
        if old is None:
            changes.append(MessageChange(i, "added", None, values_b[i]))
        elif new is None:
            changes.append(MessageChange(i, "removed", values_a[i], None))
        else:
            changes.append(MessageChange(i, "changed", values_a[i], values_b[i]))
    prefix = changes[0].index if changes else min(len(ids_a), len(ids_b))
    return MessagesDiff(prefix, len(ids_a), len(ids_b), tuple(changes))


def _only(mine: Turn | None, theirs: Turn | None) -> tuple[str, ...]:
    left = Counter(c.name for c in mine.tool_calls) if mine is not None else Counter()
    right = Counter(c.name for c in theirs.tool_calls) if theirs is not None else Counter()
    return tuple(sorted((left - right).elements()))


def compare(repo: Repo, a: str, b: str) -> Comparison:
    """Compare runs ``a`` and ``b`` (two revisions, usually branches) turn by turn.

    Turns are numbered from the start of each conversation and paired by number; a turn is
    ``same`` when its messages are the same objects in both runs. For every other turn the
    result holds the positional diff of its messages, the state and extras that differ between
    the commits ending it, and the tool calls only one run made. Each run's messages are read
    once; state is decoded only for keys that differ.
    """
    if not isinstance(a, str):
        raise TypeError(f"a must be a str, got {type(a).__name__}")
    if not isinstance(b, str):
        raise TypeError(f"b must be a str, got {type(b).__name__}")
    a_commit, b_commit = repo.resolve(a), repo.resolve(b)
    runs_a = turns_between(repo, None, from_hex(a_commit))
    runs_b = turns_between(repo, None, from_hex(b_commit))
    db = repo.objects
    by_index_a = {t.index: t for t in runs_a}
    by_index_b = {t.index: t for t in runs_b}
    compared = []
    for index in sorted(set(by_index_a) | set(by_index_b)):
        turn_a, turn_b = by_index_a.get(index), by_index_b.get(index)
        messages = _messages_diff(turn_a, turn_b)
        state: tuple[ValueChange, ...] = ()
        extras: tuple[ValueChange, ...] = ()
        order: tuple[OrderChange, ...] = ()
        if turn_a is None:
            status: TurnStatus = "only_b"
        elif turn_b is None:
            status = "only_a"
        else:
            status = "same" if turn_a.message_ids == turn_b.message_ids else "diverged"
            if turn_a.commit and turn_b.commit and turn_a.commit != turn_b.commit:
                old = db.load_snapshot(db.load_commit(from_hex(turn_a.commit)).snapshot)
                new = db.load_snapshot(db.load_commit(from_hex(turn_b.commit)).snapshot)
                state, extras = diff_fields(db, old, new, repo.serializer)
                order = diff_orders(db, old, new)
        compared.append(
            TurnComparison(
                index,
                status,
                turn_a,
                turn_b,
                messages,
                state,
                extras,
                _only(turn_a, turn_b),
                _only(turn_b, turn_a),
                order,
            )
        )
    tip_a = db.load_snapshot(db.load_commit(from_hex(a_commit)).snapshot)
    tip_b = db.load_snapshot(db.load_commit(from_hex(b_commit)).snapshot)
    prefix = diff_message_ids(db, tip_a, tip_b).common_prefix
    return Comparison(
        a, b, a_commit, b_commit, repo.merge_base(a_commit, b_commit), prefix, tuple(compared)
    )


__all__ = ["Comparison", "TurnComparison", "TurnStatus", "compare"]
