"""Revision expressions: ``HEAD``, names, hash prefixes, ``name@{n}``, ``~n``, ``^n``, chained.

Grammar (a subset of gitrevisions(7))::

    revision := base suffix*
    base     := "HEAD" | "@" | name | name "@{" n "}" | "@{" n "}" | hex-prefix (>= 4 digits)
    suffix   := "~" [n] | "^" [n]

``~n`` follows first parents n times; ``^n`` takes the n-th parent (``^0`` is the commit
itself); ``name@{n}`` is the value ``name`` had n moves ago, from its reflog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from .errors import AmbiguousRevision, InvalidRevision, UnknownRevision
from .hashing import HEX_SIZE, MIN_PREFIX, ObjectId, from_hex, prefix_range
from .refs import BRANCH_PREFIX, HEAD, TAG_PREFIX

_REFLOG = re.compile(r"^(?P<name>.*?)@\{(?P<n>[0-9]+)\}$")
_SUFFIX = re.compile(r"([~^])([0-9]*)")
_HEX = re.compile(r"^[0-9a-fA-F]+$")


@dataclass(frozen=True, slots=True)
class Revision:
    """A parsed revision: a base (name or hex) with optional reflog index and suffix steps."""

    base: str
    reflog_index: int | None = None
    steps: tuple[tuple[str, int], ...] = ()


def parse_revision(text: str) -> Revision:
    """Parse a revision expression; raise ``InvalidRevision`` on bad syntax."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidRevision("a revision cannot be empty; try 'HEAD', a branch name or a hash")
    cut = len(text)
    for marker in ("~", "^"):
        position = text.find(marker)
        if position != -1:
            cut = min(cut, position)
    base, rest = text[:cut], text[cut:]
    steps: list[tuple[str, int]] = []
    position = 0
    while position < len(rest):
        match = _SUFFIX.match(rest, position)
        if match is None:
            raise InvalidRevision(
                f"cannot parse {text!r} at {rest[position:]!r}; suffixes are ~N and ^N"
            )
        op, digits = match.group(1), match.group(2)
        steps.append((op, int(digits) if digits else 1))
        position = match.end()
    reflog_index: int | None = None
    match = _REFLOG.match(base)
    if match is not None:
        base = match.group("name") or "@"
        reflog_index = int(match.group("n"))
    if "@{" in base:
        raise InvalidRevision(f"cannot parse {text!r}: reflog selectors look like name@{{2}}")
    if base == "@":
        base = HEAD
    if not base:
        raise InvalidRevision(f"{text!r} has suffixes but no name or hash to apply them to")
    return Revision(base, reflog_index, tuple(steps))


class RevisionContext(Protocol):
    """What resolving a revision needs from a repository."""

    def ref_value(self, full_name: str) -> ObjectId | None:
        """Return the commit a full ref name points to (``HEAD`` included), or ``None``."""
        ...

    def head_target(self) -> str | None:
        """Return the ref ``HEAD`` is attached to (``refs/heads/main``), or ``None`` if detached."""
        ...

    def reflog_values(self, full_name: str) -> list[ObjectId | None]:
        """Return the values a ref had, newest first (index 0 is its current value)."""
        ...

    def commits_with_prefix(self, low: ObjectId, high: ObjectId) -> list[ObjectId]:
        """Return commit ids within the range (a hex-prefix lookup)."""
        ...

    def parents(self, commit_id: ObjectId) -> tuple[ObjectId, ...]:
        """Return a commit's parents (``UnknownRevision`` if it is not a commit)."""
        ...


def _ref_candidates(ctx: RevisionContext, name: str) -> list[str]:
    if name == HEAD:
        return [HEAD]
    if name.startswith("refs/"):
        return [name] if ctx.ref_value(name) is not None else []
    return [
        full
        for full in (BRANCH_PREFIX + name, TAG_PREFIX + name)
        if ctx.ref_value(full) is not None
    ]


def _resolve_base(ctx: RevisionContext, revision: Revision, text: str) -> ObjectId:
    base = revision.base
    if revision.reflog_index is not None:
        full = HEAD if base == HEAD else None
        if full is None:
            found = _ref_candidates(ctx, base)
            if len(found) > 1:
                raise AmbiguousRevision(text, found)
            if not found:
                raise UnknownRevision(f"unknown revision {text!r}: no branch or tag named {base!r}")
            full = found[0]
        values = ctx.reflog_values(full)
        if revision.reflog_index >= len(values):
            raise UnknownRevision(
                f"unknown revision {text!r}: the reflog of {full} has only {len(values)} entries"
            )
        value = values[revision.reflog_index]
        if value is None:
            raise UnknownRevision(f"unknown revision {text!r}: {full} did not exist then")
        return value

    candidates = _ref_candidates(ctx, base)
    if len(candidates) > 1:
        raise AmbiguousRevision(text, candidates)
    if candidates:
        value = ctx.ref_value(candidates[0])
        if value is None:  # HEAD on an unborn branch
            target = ctx.head_target() or HEAD
            raise UnknownRevision(
                f"unknown revision {text!r}: {target} has no commits yet; commit something first"
            )
        return value
    if _HEX.match(base) and MIN_PREFIX <= len(base) <= HEX_SIZE:
        if len(base) == HEX_SIZE:
            full_id = from_hex(base.lower())
            matches = ctx.commits_with_prefix(full_id, full_id)
        else:
            low, high = prefix_range(base)
            matches = ctx.commits_with_prefix(low, high)
        if len(matches) > 1:
            raise AmbiguousRevision(text, [m.hex() for m in matches])
        if matches:
            return matches[0]
    raise UnknownRevision(
        f"unknown revision {text!r}: no branch, tag or commit hash matches {base!r}; "
        "list branches with `statevcs branch` and commits with `statevcs log`"
    )


def resolve_revision(ctx: RevisionContext, text: str) -> ObjectId:
    """Resolve a revision expression to a commit id."""
    revision = parse_revision(text)
    commit_id = _resolve_base(ctx, revision, text)
    for op, count in revision.steps:
        if op == "~":
            for walked in range(count):
                parents = ctx.parents(commit_id)
                if not parents:
                    raise UnknownRevision(
                        f"unknown revision {text!r}: history has only {walked} commits "
                        f"before {commit_id.hex()[:12]}"
                    )
                commit_id = parents[0]
        elif count > 0:
            parents = ctx.parents(commit_id)
            if count > len(parents):
                raise UnknownRevision(
                    f"unknown revision {text!r}: commit {commit_id.hex()[:12]} has "
                    f"{len(parents)} parent(s), not {count}"
                )
            commit_id = parents[count - 1]
    return commit_id


__all__ = ["Revision", "RevisionContext", "parse_revision", "resolve_revision"]
