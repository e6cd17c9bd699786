"""Text that cannot drive a terminal: what every string read from a repository goes through.

A module of its own, without rich or the repository, so that the group's error handling loads
it at start-up for nothing.
"""

from __future__ import annotations

import re
import shlex

# C0 and C1 control characters and DEL drive the terminal (colors, cursor moves, OSC 8 links,
# title changes, \x9b is a one-byte CSI); the bidi embeddings, overrides and isolates reorder
# what is shown (CVE-2021-42574); lone surrogates cannot be encoded for output at all.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# In JSON output C0 characters are already escaped by the encoder; these are not.
UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(value: object, *, keep: str = "") -> str:
    """Return ``value`` as text that cannot drive a terminal.

    Control characters (C0, DEL, C1), the bidi override and isolate characters (U+202A-U+202E,
    U+2066-U+2069) and lone surrogates become visible escapes such as ``\\x1b`` and ``\\u202e``;
    the characters in ``keep`` (``"\\n"``, ``"\\t"``) pass through. Every string the command
    line prints from a repository goes through this function.
    """
    text = value if isinstance(value, str) else str(value)
    if keep:
        return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _escape(m), text)
    return _UNSAFE.sub(_escape, text)


def one_line(message: str) -> str:
    """``message`` made safe, with every run of whitespace (newlines too) as one space."""
    return safe_text(" ".join(message.split()))


def suggest(*words: str, then: str = "") -> str:
    """A command to suggest, in backquotes: ``statevcs`` and ``words``, each shell-quoted.

    Pasted as shown it runs as meant: a URL's ``&`` does not background the command, a name
    with a space stays one argument. ``then`` is appended as it is (placeholders: ``REV``).
    """
    line = shlex.join(("statevcs", *words))
    return f"`{line} {then}`" if then else f"`{line}`"


__all__ = ["UNSAFE_IN_JSON", "one_line", "safe_text", "suggest"]
