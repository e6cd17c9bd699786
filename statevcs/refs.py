"""Ref names: git's ``check-ref-format`` rules, and branch/tag name helpers."""

from __future__ import annotations

from .errors import InvalidRefName

HEAD = "HEAD"
BRANCH_PREFIX = "refs/heads/"
TAG_PREFIX = "refs/tags/"
DEFAULT_BRANCH = "main"

_FORBIDDEN_CHARS = {"~": "'~'", "^": "'^'", ":": "':'", "?": "'?'", "*": "'*'", "[": "'['"}


def check_ref_name(name: str) -> str:
    """Return ``name`` if it is a valid ref name (or component path), else raise.

    Follows ``git check-ref-format``: no ``..``, no control characters, spaces, ``~ ^ : ? * [ \\``,
    no ``@{``, not ``@``, no component starting with ``.`` or ending with ``.lock``, no empty
    component, no leading or trailing ``/``, no trailing ``.``.
    """
    if not isinstance(name, str) or not name:
        raise InvalidRefName(str(name), "a ref name cannot be empty")
    if name == "@":
        raise InvalidRefName(name, "'@' alone is reserved (it means HEAD)")
    if ".." in name:
        raise InvalidRefName(name, "it contains '..'")
    if "@{" in name:
        raise InvalidRefName(name, "it contains '@{'")
    if "\\" in name:
        raise InvalidRefName(name, "it contains a backslash")
    for char in name:
        if ord(char) < 0x20 or ord(char) == 0x7F:
            raise InvalidRefName(name, "it contains a control character")
        if char == " ":
            raise InvalidRefName(name, "it contains a space")
        if char in _FORBIDDEN_CHARS:
            raise InvalidRefName(name, f"it contains {_FORBIDDEN_CHARS[char]}")
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
    """Validate a branch or tag short name (``main``, ``exp/a``); return it."""
    check_ref_name(name)
    if name.startswith("-"):
        raise InvalidRefName(name, f"a {what} name cannot start with '-'")
    if name == HEAD:
        raise InvalidRefName(name, f"'HEAD' cannot be a {what} name")
    if name.startswith("refs/"):
        raise InvalidRefName(name, f"give the short {what} name, without 'refs/'")
    return name


def branch_ref(name: str) -> str:
    """Return the full ref of branch ``name`` (``main`` -> ``refs/heads/main``)."""
    if name.startswith(BRANCH_PREFIX):
        name = name[len(BRANCH_PREFIX) :]
    return BRANCH_PREFIX + check_short_name(name, "branch")


def tag_ref(name: str) -> str:
    """Return the full ref of tag ``name`` (``v1`` -> ``refs/tags/v1``)."""
    if name.startswith(TAG_PREFIX):
        name = name[len(TAG_PREFIX) :]
    return TAG_PREFIX + check_short_name(name, "tag")


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
    "TAG_PREFIX",
    "branch_ref",
    "check_ref_name",
    "check_short_name",
    "short_name",
    "tag_ref",
]
