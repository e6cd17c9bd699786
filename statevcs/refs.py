"""Ref names: git's ``check-ref-format`` rules, and branch/tag name helpers."""

from __future__ import annotations

import re

from .errors import InvalidRefName

HEAD = "HEAD"
BRANCH_PREFIX = "refs/heads/"
TAG_PREFIX = "refs/tags/"
DEFAULT_BRANCH = "main"

MAX_REF_NAME_LENGTH = 1024
"""The longest ref name accepted, in characters (so any ref fits in a revision expression)."""

_FORBIDDEN_CHARS = {"~": "'~'", "^": "'^'", ":": "':'", "?": "'?'", "*": "'*'", "[": "'['"}
_BAD_CHAR = re.compile("[\x00-\x20\x7f~^:?*\\[\ud800-\udfff]")
"""Every character a ref name may not hold: controls, space, DEL, ``~^:?*[``, lone surrogates."""


def _bad_char_reason(char: str) -> str:
    """Why ``char`` (one that :data:`_BAD_CHAR` matches) cannot be in a ref name."""
    if char == " ":
        return "it contains a space"
    if char in _FORBIDDEN_CHARS:
        return f"it contains {_FORBIDDEN_CHARS[char]}"
    if 0xD800 <= ord(char) <= 0xDFFF:
        return (
            f"it contains a lone surrogate ({char!r}), which is not Unicode text; "
            "decode the name from UTF-8 first"
        )
    return "it contains a control character"


def check_ref_name(name: str) -> str:
    """Return ``name`` if it is a valid ref name (or component path), else raise.

    Follows ``git check-ref-format``: no ``..``, no control characters, spaces, ``~ ^ : ? * [ \\``,
    no ``@{``, not ``@``, no component starting with ``.`` or ending with ``.lock``, no empty
    component, no leading or trailing ``/``, no trailing ``.``. statevcs also refuses lone
    surrogates (not Unicode text, so not storable) and names longer than
    :data:`MAX_REF_NAME_LENGTH` characters. A ``name`` that is not a ``str`` raises
    ``TypeError``.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not name:
        raise InvalidRefName(name, "a ref name cannot be empty")
    if len(name) > MAX_REF_NAME_LENGTH:
        raise InvalidRefName(
            name, f"it is {len(name)} characters long; the limit is {MAX_REF_NAME_LENGTH}"
        )
    if name == "@":
        raise InvalidRefName(name, "'@' alone is reserved (it means HEAD)")
    if ".." in name:
        raise InvalidRefName(name, "it contains '..'")
    if "@{" in name:
        raise InvalidRefName(name, "it contains '@{'")
    if "\\" in name:
        raise InvalidRefName(name, "it contains a backslash")
    bad = _BAD_CHAR.search(name)  # one C-level scan; names are checked on every ref read
    if bad is not None:
        raise InvalidRefName(name, _bad_char_reason(bad.group()))
    if name.startswith("/") or name.endswith("/"):
        raise InvalidRefName(name, "it starts or ends with '/'")
    if name.endswith("."):
        raise InvalidRefName(name, "it ends with '.'")
    for component in name.split("/"):
        if not component:
            raise InvalidRefName(name, "it contains an empty component ('//')")
        if component.startswith("."):
            raise InvalidRefName(name, f"component {component!r} starts with '.'")
        if component.endswith(".lock"):
            raise InvalidRefName(name, f"component {component!r} ends with '.lock'")
    return name


def check_short_name(name: str, what: str = "branch") -> str:
    """Validate a branch or tag short name (``main``, ``exp/a``); return it.

    As in ``git branch``, a short name may itself start with ``refs/`` (``refs/heads/x`` names
    the branch ``refs/heads/refs/heads/x``); it may not start with ``-`` or be ``HEAD``.
    """
    check_ref_name(name)
    if name.startswith("-"):
        raise InvalidRefName(name, f"a {what} name cannot start with '-'")
    if name == HEAD:
        raise InvalidRefName(name, f"'HEAD' cannot be a {what} name")
    return name


def branch_ref(name: str) -> str:
    """Return the full ref of the branch with short name ``name`` (``main`` -> ``refs/heads/main``).

    ``name`` is always a short name, as in ``git branch``: ``branch_ref("refs/heads/x")`` is
    ``refs/heads/refs/heads/x``. Use :func:`full_branch_ref` where a full name is also allowed.
    """
    # The prefix may take the full name over the length limit.
    return check_ref_name(BRANCH_PREFIX + check_short_name(name, "branch"))


def full_branch_ref(name_or_full: str) -> str:
    """Return the full ref of a branch given by short name or by full ``refs/heads/...`` name.

    For arguments that select an existing branch (``refs/heads/main`` and ``main`` both give
    ``refs/heads/main``); creating a branch takes a short name (:func:`branch_ref`).
    """
    if not isinstance(name_or_full, str):
        raise TypeError(f"name_or_full must be a str, got {type(name_or_full).__name__}")
    if name_or_full.startswith(BRANCH_PREFIX):
        check_short_name(name_or_full[len(BRANCH_PREFIX) :], "branch")
        return name_or_full
    return branch_ref(name_or_full)


def tag_ref(name: str) -> str:
    """Return the full ref of the tag with short name ``name`` (``v1`` -> ``refs/tags/v1``).

    ``name`` is always a short name, as in ``git tag``: ``tag_ref("refs/tags/x")`` is
    ``refs/tags/refs/tags/x``.
    """
    return check_ref_name(TAG_PREFIX + check_short_name(name, "tag"))


def short_name(ref: str) -> str:
    """Return a ref's short name (``refs/heads/main`` -> ``main``)."""
    for prefix in (BRANCH_PREFIX, TAG_PREFIX):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return ref


__all__ = [
    "BRANCH_PREFIX",
    "DEFAULT_BRANCH",
    "HEAD",
    "MAX_REF_NAME_LENGTH",
    "TAG_PREFIX",
    "branch_ref",
    "check_ref_name",
    "check_short_name",
    "full_branch_ref",
    "short_name",
    "tag_ref",
]
