"""Revision expressions: ``HEAD``, names, hash prefixes, ``name@{n}``, ``~n``, ``^n``, chained.

Grammar (a subset of gitrevisions(7))::

    revision := base suffix*
    base     := "HEAD" | "@" | name | name "@{" n "}" | "@{" n "}" | hex-prefix (>= 4 digits)
    suffix   := "~" [n] | "^" [n]

``~n`` follows first parents n times; ``^n`` takes the n-th parent (``^0`` is the commit
itself); ``name@{n}`` is the value ``name`` had n moves ago, from its reflog, and ``@{n}`` reads
the reflog of the branch ``HEAD`` is on (``HEAD@{n}`` reads ``HEAD``'s own reflog).

A name is looked up as git does, in this order, and the first ref that exists wins:
``<name>`` (``HEAD`` and full ``refs/...`` names), ``refs/<name>``, ``refs/tags/<name>``,
``refs/heads/<name>``, ``refs/remotes/<name>``, ``refs/remotes/<name>/HEAD``. When more than
one exists (a branch and a tag with one name) an :class:`AmbiguousRefWarning` is emitted. A
full-length hex id always means that commit; a shorter hex prefix is tried only when no ref
matches. See ``docs/revisions.md`` for where statevcs differs from git.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Protocol

from .errors import AmbiguousRevision, InvalidRefName, InvalidRevision, UnknownRevision
from .hashing import HEX_SIZE, MIN_PREFIX, ObjectId, from_hex, prefix_range
from .refs import HEAD, MAX_REF_NAME_LENGTH, check_ref_name

MAX_REVISION_LENGTH = 4096
"""The longest revision expression accepted, in characters."""

MAX_COUNT = 2**31 - 1
"""The largest ``~n``, ``^n`` or ``@{n}`` number accepted (git's limit, ``INT_MAX``)."""

REF_LOOKUP_RULES: tuple[str, ...] = (
    "{}",
    "refs/{}",
    "refs/tags/{}",
    "refs/heads/{}",
    "refs/remotes/{}",
    "refs/remotes/{}/HEAD",
)
"""How a name expands to full ref names, in the order git tries them (gitrevisions(7))."""

_REFLOG = re.compile(r"^(?P<name>.*?)@\{(?P<n>[0-9]+)\}$")
_SUFFIX = re.compile(r"([~^])([0-9]*)")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# A count longer than this cannot be <= MAX_COUNT; checked before int() so a 4,000-digit number
# costs nothing.
_MAX_DIGITS = len(str(MAX_COUNT))
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class AmbiguousRefWarning(UserWarning):
    """A name matched more than one ref (or a ref and a hash prefix); the first was used.

    git prints ``warning: refname 'x' is ambiguous`` in the same case. Write the full ref name
    (``refs/heads/x``, ``refs/tags/x``) to say which one you mean.
    """


@dataclass(frozen=True, slots=True)
class Revision:
    """A parsed revision: a base (name or hex) with optional reflog index and suffix steps.

    ``base`` is ``""`` for ``@{n}``: the reflog of the branch ``HEAD`` is on.
    """

    base: str
    reflog_index: int | None = None
    steps: tuple[tuple[str, int], ...] = ()


def _shown(text: str) -> str:
    """``repr`` of a revision for an error message, shortened when it is long."""
    return repr(text) if len(text) <= 80 else repr(text[:60]) + f"... ({len(text)} characters)"


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"revision must be a str, got {type(text).__name__}")
    if not text.strip():
        raise InvalidRevision("a revision cannot be empty; try 'HEAD', a branch name or a hash")
    if len(text) > MAX_REVISION_LENGTH:
        raise InvalidRevision(
            f"revision {_shown(text)} is longer than {MAX_REVISION_LENGTH} characters; "
            "give a branch or tag name, or a commit hash"
        )
    bad = _CONTROL.search(text)
    if bad is not None:
        raise InvalidRevision(
            f"revision {_shown(text)} contains the control character {bad.group()!r} at "
            f"position {bad.start()}; branch and tag names cannot contain control characters"
        )
    bad = _SURROGATE.search(text)
    if bad is not None:
        raise InvalidRevision(
            f"revision {_shown(text)} contains a lone surrogate {bad.group()!r} at position "
            f"{bad.start()}, which is not valid Unicode text; decode the name from UTF-8 "
            "before passing it"
        )
    return text


def _count(digits: str, text: str) -> int:
    if len(digits.lstrip("0")) > _MAX_DIGITS or int(digits) > MAX_COUNT:
        raise InvalidRevision(
            f"revision {_shown(text)}: {digits[:20]}{'...' if len(digits) > 20 else ''} is larger "
            f"than {MAX_COUNT}, the largest count a revision can hold"
        )
    return int(digits)


def parse_revision(text: str) -> Revision:
    """Parse a revision expression; raise ``InvalidRevision`` on bad syntax.

    A ``text`` that is not a ``str`` raises ``TypeError``; control characters, lone surrogates,
    more than :data:`MAX_REVISION_LENGTH` characters and counts above :data:`MAX_COUNT` raise
    ``InvalidRevision``.
    """
    _check_text(text)
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
                f"cannot parse {_shown(text)} at {_shown(rest[position:])}; suffixes are ~N and ^N"
            )
        op, digits = match.group(1), match.group(2)
        steps.append((op, _count(digits, text) if digits else 1))
        position = match.end()
    reflog_index: int | None = None
    match = _REFLOG.match(base)
    if match is not None:
        base = match.group("name")
        reflog_index = _count(match.group("n"), text)
    if "@{" in base:
        raise InvalidRevision(
            f"cannot parse {_shown(text)}: reflog selectors look like name@{{2}} "
            "(dates, @{-n} and @{upstream} are not supported)"
        )
    if base == "@":
        base = HEAD
    if not base and reflog_index is None:
        raise InvalidRevision(
            f"{_shown(text)} has suffixes but no name or hash to apply them to; "
            "try HEAD~1 or main^2"
        )
    return Revision(base, reflog_index, tuple(steps))


class RevisionContext(Protocol):
    """What resolving a revision needs from a repository."""

    def ref_value(self, full_name: str) -> ObjectId | None:
        """Return the commit a full ref name points to (``HEAD`` included), or ``None``."""
        ...

    def ref_values(self, full_names: Sequence[str]) -> dict[str, ObjectId]:
        """Return the commit each existing ref among ``full_names`` points to (one read)."""
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


def _warn(message: str) -> None:
    # Point the warning at the first caller outside statevcs, so the default filter shows it
    # once per call site of the user's code rather than once per process.
    level = 2
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, AmbiguousRefWarning, stacklevel=level)


def _is_ref_name(full: str) -> bool:
    try:
        check_ref_name(full)
    except InvalidRefName:
        return False
    return True


def ref_candidates(name: str) -> list[str]:
    """The full ref names ``name`` may stand for, in git's lookup order (``[]`` when ``name``
    cannot be part of a ref name, so junk costs no lookup): ``main`` may be ``refs/main``,
    ``refs/tags/main``, ``refs/heads/main``, ``refs/remotes/main`` or
    ``refs/remotes/main/HEAD``."""
    # Prefixing valid components keeps a name valid, so checking ``name`` once is enough (the
    # parser has already turned the one exception, a bare "@", into HEAD).
    if not _is_ref_name(name):
        return []
    # $GIT_DIR/<name> holds only HEAD and the refs/ tree in a statevcs repository.
    first = [name] if name == HEAD or name.startswith("refs/") else []
    candidates = [*first, *(rule.format(name) for rule in REF_LOOKUP_RULES[1:])]
    return [full for full in candidates if len(full) <= MAX_REF_NAME_LENGTH]


def _matches(ctx: RevisionContext, name: str) -> list[tuple[str, ObjectId]]:
    candidates = ref_candidates(name)
    values = ctx.ref_values(candidates) if candidates else {}
    return [(full, values[full]) for full in candidates if full in values]


def matching_refs(ctx: RevisionContext, name: str) -> list[str]:
    """Return the existing refs ``name`` can mean, in git's lookup order (the first one wins).

    ``matching_refs(ctx, "dup")`` is ``["refs/tags/dup", "refs/heads/dup"]`` when a tag and a
    branch are both called ``dup``; ``[]`` when nothing matches (``HEAD`` on an unborn branch
    matches nothing).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not name or _CONTROL.search(name) or _SURROGATE.search(name):
        return []
    return [full for full, _ in _matches(ctx, name)]


def _ambiguity(name: str, refs: list[str], hex_also: bool = False) -> str:
    listing = ", ".join(refs) + (", a commit hash prefix" if hex_also else "")
    return (
        f"refname {name!r} is ambiguous: it matches {listing}; using {refs[0]} (git's lookup "
        "order). Write the full ref name to choose."
    )


def _is_full_hex(base: str) -> bool:
    return len(base) == HEX_SIZE and _HEX.match(base) is not None


def _is_hex_prefix(base: str) -> bool:
    return MIN_PREFIX <= len(base) < HEX_SIZE and _HEX.match(base) is not None


def _prefix_commits(ctx: RevisionContext, base: str) -> list[ObjectId]:
    if len(base) == HEX_SIZE:
        full_id = from_hex(base.lower())
        return ctx.commits_with_prefix(full_id, full_id)
    low, high = prefix_range(base)
    return ctx.commits_with_prefix(low, high)


def reflog_ref(ctx: RevisionContext, name: str) -> str:
    """Return the full ref whose reflog ``name@{n}`` reads.

    ``""`` (as in ``@{n}``) is the branch ``HEAD`` is on, or ``HEAD`` when detached; ``HEAD``
    is ``HEAD``; any other name is the first existing ref in git's lookup order (a tag before a
    branch of the same name, with an :class:`AmbiguousRefWarning`). Raise ``UnknownRevision``
    when no such ref exists.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if name == "":
        full = ctx.head_target() or HEAD
        if ctx.ref_value(full) is None:
            raise UnknownRevision(
                f"{full} has no commits yet, so it has no reflog; commit something first"
            )
        return full
    found = matching_refs(ctx, name)
    if not found and name == HEAD:
        target = ctx.head_target() or HEAD
        raise UnknownRevision(f"{target} has no commits yet, so HEAD has no reflog")
    if not found:
        raise UnknownRevision(
            f"no branch or tag named {_shown(name)}; list branches with `statevcs branch`"
        )
    # git also warns when the name is a commit's hash (prefix): ``abcd1234@{1}`` reads the ref.
    hex_also = (
        MIN_PREFIX <= len(name) <= HEX_SIZE
        and _HEX.match(name) is not None
        and bool(_prefix_commits(ctx, name))
    )
    if len(found) > 1 or hex_also:
        _warn(_ambiguity(name, found, hex_also))
    return found[0]


def _resolve_reflog(ctx: RevisionContext, base: str, index: int, text: str) -> ObjectId:
    try:
        full = reflog_ref(ctx, base)
    except UnknownRevision as exc:
        raise UnknownRevision(f"unknown revision {_shown(text)}: {exc}") from None
    values = ctx.reflog_values(full)
    if not values:
        # git answers name@{0} from the ref itself when its reflog is empty (expired).
        current = ctx.ref_value(full)
        if index == 0 and current is not None:
            return current
        raise UnknownRevision(f"unknown revision {_shown(text)}: the reflog of {full} is empty")
    if index >= len(values):
        raise UnknownRevision(
            f"unknown revision {_shown(text)}: the reflog of {full} has only "
            f"{len(values)} entries; see them with `statevcs reflog`"
        )
    value = values[index]
    if value is None:
        raise UnknownRevision(f"unknown revision {_shown(text)}: {full} did not exist then")
    return value


def _resolve_base(ctx: RevisionContext, revision: Revision, text: str) -> ObjectId:
    base = revision.base
    if revision.reflog_index is not None:
        return _resolve_reflog(ctx, base, revision.reflog_index, text)

    if _is_full_hex(base):
        # As in git, a full-length id is that object even if a ref has the same name.
        commit_id = from_hex(base.lower())
        found_ids = ctx.commits_with_prefix(commit_id, commit_id)
        if found_ids:
            # The commit itself, or (after `statevcs upgrade` and a gc) the one replacing it.
            commit_id = found_ids[0]
            shadowed = _matches(ctx, base)
            if shadowed:
                _warn(
                    f"refname {base!r} is ambiguous: it is a commit id and also names "
                    f"{shadowed[0][0]}; using the commit. Write the full ref name for the ref."
                )
            return commit_id
        raise UnknownRevision(
            f"unknown revision {_shown(text)}: no commit has the id {base}; "
            "list commits with `statevcs log`"
        )

    found = _matches(ctx, base)
    if found:
        hex_also = _is_hex_prefix(base) and bool(_prefix_commits(ctx, base))
        if len(found) > 1 or hex_also:
            _warn(_ambiguity(base, [full for full, _ in found], hex_also))
        return found[0][1]
    if _is_hex_prefix(base):
        matches = _prefix_commits(ctx, base)
        if len(matches) > 1:
            raise AmbiguousRevision(text, [m.hex() for m in matches])
        if matches:
            return matches[0]
    if base == HEAD:
        target = ctx.head_target() or HEAD
        raise UnknownRevision(
            f"unknown revision {_shown(text)}: {target} has no commits yet; commit something first"
        )
    raise UnknownRevision(
        f"unknown revision {_shown(text)}: no branch, tag or commit hash matches {_shown(base)}; "
        "list branches with `statevcs branch` and commits with `statevcs log`"
    )


def resolve_revision(ctx: RevisionContext, text: str) -> ObjectId:
    """Resolve a revision expression to a commit id.

    Raises ``TypeError`` when ``text`` is not a ``str``, ``InvalidRevision`` on bad syntax,
    ``UnknownRevision`` when it names nothing and ``AmbiguousRevision`` when a hash prefix
    matches several commits.
    """
    revision = parse_revision(text)
    commit_id = _resolve_base(ctx, revision, text)
    for op, count in revision.steps:
        if op == "~":
            # Bounded by the history's length, whatever ``count`` is.
            for walked in range(count):
                parents = ctx.parents(commit_id)
                if not parents:
                    raise UnknownRevision(
                        f"unknown revision {_shown(text)}: ~{count} walks past the first "
                        f"commit; {commit_id.hex()[:12]}, reached after {walked} "
                        f"step{'' if walked == 1 else 's'}, has no parent"
                    )
                commit_id = parents[0]
        elif count > 0:
            parents = ctx.parents(commit_id)
            if count > len(parents):
                raise UnknownRevision(
                    f"unknown revision {_shown(text)}: commit {commit_id.hex()[:12]} has "
                    f"{len(parents)} parent(s), not {count}"
                )
            commit_id = parents[count - 1]
    return commit_id


__all__ = [
    "MAX_COUNT",
    "MAX_REVISION_LENGTH",
    "REF_LOOKUP_RULES",
    "AmbiguousRefWarning",
    "Revision",
    "RevisionContext",
    "matching_refs",
    "parse_revision",
    "ref_candidates",
    "reflog_ref",
    "resolve_revision",
]
