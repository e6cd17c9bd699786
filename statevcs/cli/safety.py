"""Text that cannot drive a terminal: what every string read from a repository goes through.

A module of its own, without rich or the repository, so that the group's error handling loads
it at start-up for nothing.
"""

from __future__ import annotations

import re

# C0 and C1 control characters and DEL drive the terminal (colors, cursor moves, OSC 8 links,
# title changes, \x9b is a one-byte CSI); lone surrogates cannot be encoded for output at all.
_CONTROLS = "\x00-\x1f\x7f-\x9f\ud800-\udfff"
# The Unicode line and paragraph separators break a line in some terminals and editors (a
# forged header line after an author's name) and end a JavaScript string before ES2019.
LINE_SEPARATORS = "\u2028\u2029"
# Every bidi formatting character reorders what is shown (CVE-2021-42574): the marks (ALM, LRM,
# RLM), embeddings, overrides and isolates.
BIDI_FORMATTING = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# Invisible format characters (category Cf) that make two different strings look the same or
# hide text: zero width space, word joiner, invisible operators, deprecated format controls,
# the BOM, interlinear annotations and the tag characters (invisible ASCII, used to smuggle
# instructions to language models). Zero width (non-)joiners stay: Persian, Indic scripts and
# emoji sequences need them, and they only join or part the visible letters around them.
INVISIBLE_FORMATTING = (
    "\u180e\u200b\u2060-\u2064\u206a-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"
)
_UNSAFE = re.compile(f"[{_CONTROLS}{LINE_SEPARATORS}{BIDI_FORMATTING}{INVISIBLE_FORMATTING}]")
# In JSON output C0 characters are already escaped by the encoder; these are not.
UNSAFE_IN_JSON = re.compile(
    f"[\x7f-\x9f\ud800-\udfff{LINE_SEPARATORS}{BIDI_FORMATTING}{INVISIBLE_FORMATTING}]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def json_escape(match: re.Match[str]) -> str:
    """The JSON escape of one matched character (a surrogate pair beyond the BMP)."""
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def safe_text(value: object, *, keep: str = "") -> str:
    """Return ``value`` as text that cannot drive a terminal.

    Control characters (C0, DEL, C1), the line and paragraph separators (U+2028, U+2029),
    every bidi formatting character (U+061C, U+200E, U+200F,
    U+202A-U+202E, U+2066-U+2069), invisible format characters (U+200B, U+2060-U+2064, U+FEFF,
    tag characters, ...; see :data:`INVISIBLE_FORMATTING`) and lone surrogates become visible
    escapes such as ``\\x1b``, ``\\u202e`` and ``\\U000e0041``; the characters in ``keep``
    (``"\\n"``, ``"\\t"``) pass through. Every string the command line prints from a
    repository goes through this function.
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
    import shlex  # suggestions come with errors, not with every command

    line = shlex.join(("statevcs", *words))
    return f"`{line} {then}`" if then else f"`{line}`"


__all__ = [
    "BIDI_FORMATTING",
    "INVISIBLE_FORMATTING",
    "LINE_SEPARATORS",
    "UNSAFE_IN_JSON",
    "json_escape",
    "one_line",
    "safe_text",
    "suggest",
]
