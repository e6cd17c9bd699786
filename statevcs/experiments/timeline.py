"""A run read as turns: each user prompt, what followed it, and the commit that ends it.

A run is a branch's first-parent history. Its conversation (the tip's messages) is cut before
every user prompt (:func:`statevcs.transcript.is_prompt`); turn *k* is the *k*-th prompt and the
messages up to the next one. The commit that ends a turn is the oldest commit of the run whose
conversation holds the whole turn (one commit per turn: that turn's commit; a commit per
message or per graph step: the one adding its last message, not the next turn's input
checkpoint), else the newest commit holding part of it (a conversation manager trimmed it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import StateVCSError, UnknownRevision
from ..hashing import ObjectId, from_hex, to_hex
from ..objects import SnapshotObject
from ..plain import to_plain
from ..snapshot import stored_messages
from ..structures import prolly
from ..transcript import ToolUse, is_prompt, text_of, tool_uses

if TYPE_CHECKING:
    from ..repo import Repo


class NotInHistory(StateVCSError):
    """A revision range's start is not on the first-parent history of its end."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One user turn of a run: the prompt, the messages that answer it, the commit ending it."""

    index: int
    """1-based: the turn's prompt is the ``index``-th user prompt of the conversation."""
    start: int
    """Position of the prompt in the conversation."""
    end: int
    """Position just after the turn's last message."""
    commit: str | None
    """The run's commit that ends this turn (``None`` when no commit of the run stops inside it)."""
    prompt: Any
    """The user message, as stored."""
    text: str
    """The prompt's text."""
    message_ids: tuple[str, ...]
    """Object ids of the turn's messages, prompt first (equal ids: equal messages)."""
    messages: tuple[Any, ...]
    """The turn's messages, decoded."""
    tool_calls: tuple[ToolUse, ...]
    """The tool calls the turn's messages ask for, in order."""

    def to_dict(self, *, messages: bool = False) -> dict[str, Any]:
        """A JSON-compatible rendering (``messages=True`` adds the decoded messages)."""
        found: dict[str, Any] = {
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "commit": self.commit,
            "text": self.text,
            "message_ids": list(self.message_ids),
            "tool_calls": [call.to_dict() for call in self.tool_calls],
        }
        if messages:
            found["messages"] = to_plain(list(self.messages))
        return found


def _length(repo: Repo, obj: SnapshotObject) -> int:
    return prolly.length(repo.objects, obj.messages) + len(obj.tail)


def _chain(repo: Repo, tip: ObjectId, since: ObjectId | None) -> list[tuple[str, int]]:
    """(commit id, conversation length) along first parents from ``since`` (excluded) to ``tip``,
    oldest first."""
    commits = []
    reached = since is None
    since_hex = to_hex(since) if since is not None else None
    for commit in repo.log(to_hex(tip)):
        if commit.id == since_hex:
            reached = True
            break
        commits.append(commit)
    if not reached:
        raise NotInHistory(
            f"{since_hex} is not on the first-parent history of {to_hex(tip)[:12]}; give a range "
            "A..B where A is an ancestor of B along first parents (see `statevcs log B`)"
        )
    commits.reverse()
    snapshots = repo.objects.load_many(from_hex(c.snapshot_id) for c in commits)
    found = []
    for commit in commits:
        obj = snapshots[from_hex(commit.snapshot_id)]
        assert isinstance(obj, SnapshotObject)
        found.append((commit.id, _length(repo, obj)))
    return found


def _ending(
    chain: list[tuple[str, int]], oldest: dict[int, str], start: int, end: int
) -> str | None:
    """The oldest commit holding the whole turn, else the newest holding part of it."""
    found = oldest.get(end)
    if found is not None:
        return found
    partial = None
    for commit_id, length in chain:  # rare: only when a conversation manager trimmed the turn
        if start < length < end:
            partial = commit_id
    return partial


def parse_range(revisions: str) -> tuple[str | None, str]:
    """Split ``"A..B"`` into ``("A", "B")``; a single revision ``B`` is ``(None, "B")``."""
    if not isinstance(revisions, str):
        raise TypeError(f"revisions must be a str, got {type(revisions).__name__}")
    if ".." in revisions:
        since, _, tip = revisions.partition("..")
        if not since or not tip or ".." in tip:
            raise UnknownRevision(
                f"cannot read the range {revisions!r}: write A..B (the turns after A up to B)"
            )
        return since, tip
    return None, revisions


def turns(repo: Repo, revisions: str) -> list[Turn]:
    """Return the user turns of a run: every turn of ``B``, or with ``"A..B"`` those after ``A``.

    ``A`` must be on ``B``'s first-parent history (``NotInHistory`` otherwise). Each message is
    read once; the cost follows the number of commits and messages in the range.
    """
    since_rev, tip_rev = parse_range(revisions)
    tip = from_hex(repo.resolve(tip_rev))
    since = from_hex(repo.resolve(since_rev)) if since_rev is not None else None
    return turns_between(repo, since, tip)


def turns_between(repo: Repo, since: ObjectId | None, tip: ObjectId) -> list[Turn]:
    """:func:`turns` on commit ids: the turns of ``tip`` whose prompt comes after ``since``'s."""
    db = repo.objects
    chain = _chain(repo, tip, since)
    base = 0
    if since is not None:
        base = _length(repo, db.load_snapshot(db.load_commit(since).snapshot))
    tip_snapshot = db.load_snapshot(db.load_commit(tip).snapshot)
    ids = stored_messages(db, tip_snapshot).ids(db)
    messages = db.load_docs(ids)
    starts = [i for i, message in enumerate(messages) if is_prompt(message)]
    oldest: dict[int, str] = {}
    for commit_id, length in chain:
        oldest.setdefault(length, commit_id)
    found = []
    for number, start in enumerate(starts, 1):
        if start < base:
            continue
        end = starts[number] if number < len(starts) else len(messages)
        ending = _ending(chain, oldest, start, end)
        body = messages[start:end]
        found.append(
            Turn(
                index=number,
                start=start,
                end=end,
                commit=ending,
                prompt=messages[start],
                text=text_of(messages[start]),
                message_ids=tuple(to_hex(i) for i in ids[start:end]),
                messages=tuple(body),
                tool_calls=tuple(call for message in body for call in tool_uses(message)),
            )
        )
    return found


def turn_commit(repo: Repo, rev: str, turn: int) -> str:
    """Return the commit that ends turn ``turn`` (1-based) of the run at ``rev``."""
    if not isinstance(turn, int) or isinstance(turn, bool):
        raise TypeError(f"turn must be an int, got {type(turn).__name__}")
    found = turns(repo, rev)
    for candidate in found:
        if candidate.index == turn and candidate.commit is not None:
            return candidate.commit
    raise UnknownRevision(
        f"{rev!r} has no commit ending turn {turn} (it has {len(found)} turns); see "
        f"`statevcs log {rev}`"
    )


__all__ = ["NotInHistory", "Turn", "parse_range", "turn_commit", "turns", "turns_between"]
