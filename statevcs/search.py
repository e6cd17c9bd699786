"""Search the messages of a history: which messages contain a text or match a regex, and which
commits added them.

Messages are content-addressed, so a message shared by a thousand commits is one object: the
search finds, for every commit, the messages it added (a prolly-tree diff against its parents,
whose cost follows the change, not the conversation), then decodes and matches each distinct
message once.

A message's searchable text is every string value inside it (at any depth; not dict keys, and
not the top-level ``role`` and ``channel`` labels). A match never spans two strings.

Regular expressions run on Python's ``re``, which has no time limit, so patterns that can take
exponential time are refused before anything runs (:class:`UnsafePattern`): a repetition inside
an unbounded repetition (``(a+)+``), alternatives longer than one character inside one
(``(a|aa)*``), backreferences and conditionals, more than :data:`MAX_UNBOUNDED` unbounded
repetitions, patterns longer than :data:`MAX_PATTERN` characters.
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .diff import diff_message_ids
from .errors import StateVCSError
from .hashing import ObjectId, to_hex
from .history import CommitGraph, walk
from .objectdb import ObjectDB
from .objects import CommitObject, SnapshotObject
from .plain import to_plain
from .snapshot import load_snapshot_object, stored_messages
from .transcript import role_of, strings_in

MAX_PATTERN = 1000
"""The longest pattern accepted, in characters."""
MAX_UNBOUNDED = 6
"""The most unbounded repetitions (``*``, ``+``, ``{n,}``) a regex may hold."""
SNIPPET = 60
"""Characters of context shown on each side of a match."""

_parser: Any = importlib.import_module("re._parser")
_constants: Any = importlib.import_module("re._constants")
_REPEATS = {_constants.MAX_REPEAT, _constants.MIN_REPEAT}
_POSSESSIVE = getattr(_constants, "POSSESSIVE_REPEAT", None)


class InvalidPattern(StateVCSError, ValueError):
    """A search pattern that is not a valid regular expression."""


class UnsafePattern(InvalidPattern):
    """A regular expression refused because matching it could take exponential time."""


@dataclass(frozen=True, slots=True)
class Introduced:
    """A commit that added a message, and the message's position in its conversation."""

    commit: str
    position: int


@dataclass(frozen=True, slots=True)
class MessageMatch:
    """One matching message (once, however many commits hold it)."""

    message_id: str
    role: str | None
    snippet: str
    """The matching string around its first match (at most ``SNIPPET`` characters each side)."""
    message: Any
    """The message, decoded."""
    introduced: tuple[Introduced, ...]
    """The commits that added it (it is in every descendant that did not remove it), newest
    first."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible rendering."""
        return {
            "message_id": self.message_id,
            "role": self.role,
            "snippet": self.snippet,
            "message": to_plain(self.message),
            "introduced": [{"commit": i.commit, "position": i.position} for i in self.introduced],
        }


@dataclass(frozen=True, slots=True)
class CommitMatch:
    """A commit that added matching messages: ``(position, message id)`` of each."""

    commit: str
    message: str
    """The commit's message."""
    matches: tuple[tuple[int, str], ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible rendering."""
        return {
            "commit": self.commit,
            "message": self.message,
            "matches": [{"position": p, "message_id": m} for p, m in self.matches],
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What :meth:`statevcs.Repo.search` found: matching messages and the commits adding them."""

    pattern: str
    regex: bool
    ignore_case: bool
    commits_searched: int
    messages_searched: int
    """Distinct messages read (each once)."""
    messages: tuple[MessageMatch, ...]
    """Matching messages, newest first (by the newest commit that added each)."""
    commits: tuple[CommitMatch, ...]
    """Commits that added at least one matching message, newest first."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible rendering (what ``statevcs search --json`` prints)."""
        return {
            "pattern": self.pattern,
            "regex": self.regex,
            "ignore_case": self.ignore_case,
            "commits_searched": self.commits_searched,
            "messages_searched": self.messages_searched,
            "messages": [m.to_dict() for m in self.messages],
            "commits": [c.to_dict() for c in self.commits],
        }


def _unsafe(items: Any, inside_unbounded: bool, counter: list[int]) -> str | None:
    """Why a parsed pattern could backtrack exponentially, or ``None``."""
    for op, av in items:
        if op in _REPEATS or (_POSSESSIVE is not None and op == _POSSESSIVE):
            _low, high, body = av
            unbounded = high == _constants.MAXREPEAT
            if unbounded:
                counter[0] += 1
                if counter[0] > MAX_UNBOUNDED:
                    return f"more than {MAX_UNBOUNDED} unbounded repetitions"
            if inside_unbounded and (unbounded or high > 1):
                return "a repetition inside an unbounded repetition, such as (a+)+"
            found = _unsafe(body, inside_unbounded or unbounded, counter)
            if found:
                return found
        elif op is _constants.BRANCH:
            if inside_unbounded and any(len(list(alt)) != 1 for alt in av[1]):
                return "alternatives longer than one character inside a repetition, such as (a|ab)*"
            for alt in av[1]:
                found = _unsafe(alt, inside_unbounded, counter)
                if found:
                    return found
        elif op in (_constants.GROUPREF, _constants.GROUPREF_EXISTS):
            return "a backreference or a conditional group"
        elif op is _constants.SUBPATTERN:
            found = _unsafe(av[3], inside_unbounded, counter)
            if found:
                return found
        elif op in (_constants.ASSERT, _constants.ASSERT_NOT):
            found = _unsafe(av[1], inside_unbounded, counter)
            if found:
                return found
        elif op is getattr(_constants, "ATOMIC_GROUP", None):
            found = _unsafe(av, inside_unbounded, counter)
            if found:
                return found
    return None


def compile_pattern(pattern: str, *, regex: bool, ignore_case: bool) -> re.Pattern[str]:
    """Compile a search pattern, refusing invalid or unsafe regexes (see the module docs)."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
    if not isinstance(regex, bool):
        raise TypeError(f"regex must be True or False, got {type(regex).__name__}")
    if not isinstance(ignore_case, bool):
        raise TypeError(f"ignore_case must be True or False, got {type(ignore_case).__name__}")
    if not pattern:
        raise InvalidPattern("the search pattern is empty; give some text to look for")
    if len(pattern) > MAX_PATTERN:
        raise InvalidPattern(
            f"the search pattern has {len(pattern)} characters; the limit is {MAX_PATTERN}"
        )
    flags = re.IGNORECASE if ignore_case else 0
    if not regex:
        return re.compile(re.escape(pattern), flags)
    try:
        with warnings.catch_warnings():
            # "Possible nested set" and friends: about patterns re may read differently one day.
            warnings.simplefilter("ignore", FutureWarning)
            parsed = _parser.parse(pattern, flags)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        raise InvalidPattern(
            f"{pattern!r} is not a valid regular expression ({exc}); search for plain text "
            "without --regex, or fix the pattern"
        ) from None
    why = _unsafe(parsed, False, [0])
    if why is not None:
        raise UnsafePattern(
            f"{pattern!r} is refused: it holds {why}, which can take exponential time on long "
            "messages; rewrite it without nesting (e.g. a+ for (a+)+), or search for plain text"
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return re.compile(pattern, flags)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        raise InvalidPattern(f"{pattern!r} is not a valid regular expression ({exc})") from None


def _snippet(text: str, match: re.Match[str]) -> str:
    start, end = max(0, match.start() - SNIPPET), min(len(text), match.end() + SNIPPET)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _added(
    db: ObjectDB,
    snapshot: SnapshotObject,
    parents: Sequence[SnapshotObject],
) -> list[tuple[int, ObjectId]]:
    """(position, id) of the messages this snapshot holds at a place no parent does."""
    if not parents:
        return list(enumerate(stored_messages(db, snapshot).ids(db)))
    found: set[tuple[int, ObjectId]] | None = None
    for parent in parents:
        if parent.messages == snapshot.messages and parent.tail == snapshot.tail:
            return []
        changes = diff_message_ids(db, parent, snapshot).changes
        mine = {(c.index, c.new) for c in changes if c.new is not None}
        found = mine if found is None else found & mine
    return sorted(found or ())


def search_history(
    db: ObjectDB,
    starts: Sequence[ObjectId],
    pattern: str,
    *,
    regex: bool = False,
    ignore_case: bool = False,
    limit: int | None = None,
) -> SearchResult:
    """Search every commit reachable from ``starts`` (all parents); see the module docs.

    ``limit`` keeps at most that many matching messages (the newest).
    """
    compiled = compile_pattern(pattern, regex=regex, ignore_case=ignore_case)
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise TypeError(f"limit must be a non-negative int or None, got {limit!r}")
    graph = CommitGraph(db)
    commits: list[tuple[ObjectId, CommitObject]] = list(walk(graph, starts))
    snapshots: dict[ObjectId, SnapshotObject] = {}
    loaded = db.load_many(dict.fromkeys(c.snapshot for _, c in commits))
    for snapshot_id, obj in loaded.items():
        if isinstance(obj, SnapshotObject):
            snapshots[snapshot_id] = obj

    def snapshot_of(commit: CommitObject) -> SnapshotObject:
        found = snapshots.get(commit.snapshot)
        if found is None:
            found = snapshots[commit.snapshot] = load_snapshot_object(db, commit.snapshot)
        return found

    added_by: dict[ObjectId, list[tuple[ObjectId, int]]] = {}
    for commit_id, commit in commits:
        parents = [snapshot_of(graph.commit(p)) for p in commit.parents]
        for position, message_id in _added(db, snapshot_of(commit), parents):
            added_by.setdefault(message_id, []).append((commit_id, position))
    ids = list(added_by)
    search = compiled.search
    matched: list[MessageMatch] = []
    order = {commit_id: n for n, (commit_id, _) in enumerate(commits)}  # newest first
    for message_id, message in zip(ids, db.iter_docs(ids)):
        for text in strings_in(message):
            found = search(text)
            if found is not None:
                introduced = sorted(added_by[message_id], key=lambda e: order[e[0]])
                matched.append(
                    MessageMatch(
                        to_hex(message_id),
                        role_of(message),
                        _snippet(text, found),
                        message,
                        tuple(Introduced(to_hex(c), p) for c, p in introduced),
                    )
                )
                break
    matched.sort(
        key=lambda m: (order[bytes.fromhex(m.introduced[0].commit)], m.introduced[0].position)
    )
    if limit is not None:
        matched = matched[:limit]
    by_commit: dict[str, list[tuple[int, str]]] = {}
    for match in matched:
        for entry in match.introduced:
            by_commit.setdefault(entry.commit, []).append((entry.position, match.message_id))
    messages = {to_hex(commit_id): commit.message for commit_id, commit in commits}
    commit_matches = [
        CommitMatch(commit, messages[commit], tuple(sorted(found)))
        for commit, found in sorted(by_commit.items(), key=lambda e: order[bytes.fromhex(e[0])])
    ]
    return SearchResult(
        pattern,
        regex,
        ignore_case,
        len(commits),
        len(ids),
        tuple(matched),
        tuple(commit_matches),
    )


__all__ = [
    "MAX_PATTERN",
    "MAX_UNBOUNDED",
    "CommitMatch",
    "Introduced",
    "InvalidPattern",
    "MessageMatch",
    "SearchResult",
    "UnsafePattern",
    "compile_pattern",
    "search_history",
]
