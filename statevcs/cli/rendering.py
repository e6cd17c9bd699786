"""How the command line shows repository data: safe text, JSON, commit headers, messages, diffs.

Everything read from a repository (messages, authors, keys, ref names, metadata) is printed as
plain text through :func:`safe_text`, never as rich markup, with terminal control characters
shown as visible escapes; ``--json`` output goes through :func:`emit_json`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import re
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from ..diff import SnapshotDiff
from ..errors import StateVCSError
from ..repo import Commit, Repo

ROLE_STYLES = {
    "user": "bold green",
    "assistant": "bold blue",
    "system": "bold magenta",
    "tool": "bold yellow",
}
"""The style of each message role's name."""

# --- terminal safety ----------------------------------------------------------------------

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
_UNSAFE_IN_JSON = re.compile(
    f"[\x7f-\x9f\ud800-\udfff{LINE_SEPARATORS}{BIDI_FORMATTING}{INVISIBLE_FORMATTING}]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    # JSON spells a character beyond the BMP as its UTF-16 surrogate pair.
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def safe_text(value: object, *, keep: str = "") -> str:
    """Return ``value`` as text that cannot drive a terminal.

    Control characters (C0, DEL, C1), the line and paragraph separators (U+2028, U+2029),
    every bidi formatting character (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069),
    invisible format characters (U+200B, U+2060-U+2064, U+FEFF,
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


def _json_text(text: str) -> str:
    # These characters only ever occur inside JSON string literals, so a \uXXXX escape keeps
    # the document valid and the value unchanged for a JSON reader.
    return _UNSAFE_IN_JSON.sub(_json_escape, text)


def text(*parts: object | tuple[object, str]) -> Text:
    """Build one rich ``Text`` from parts (a value, or ``(value, style)``), all made safe."""
    line = Text()
    for part in parts:
        value, style = part if isinstance(part, tuple) else (part, "")
        line.append(safe_text(value), style=style)
    return line


def lines(message: str) -> list[str]:
    """Split on newlines only (a lone \\r is escaped, not a line break); drop CRLF's \\r."""
    return [line.removesuffix("\r") for line in message.split("\n")]


def first_line(message: str) -> str:
    """The first line of a commit message (``""`` for an empty one)."""
    return lines(message)[0] if message else ""


def short(value: Any, width: int = 80) -> str:
    """A one-line preview of a value: JSON where it is JSON, else its ``repr``, cut at ``width``."""
    try:
        # JSON for JSON values; Python's repr shows what else it is (datetime, set, bytes).
        shown = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))
    except (TypeError, ValueError, RecursionError):
        shown = repr(value)
    shown = " ".join(shown.split())
    return shown if len(shown) <= width else shown[: width - 1] + "…"


def plural(count: int, word: str) -> str:
    """``1 commit``, ``2 commits``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def human_bytes(size: float) -> str:
    """A byte count in B, KiB, MiB or GiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover - unreachable


# --- JSON output ---------------------------------------------------------------------------


def to_plain(value: Any) -> Any:
    """Return a JSON-compatible rendering of any decoded value, for ``--json`` output.

    Uses the git mirror's markers where JSON has no form (see :func:`statevcs.mirror.git.to_json`):
    bytes become ``{"__bytes__": "<base64>"}``, non-finite floats ``{"__float__": "nan"}``,
    dicts with non-string keys ``{"__map__": [[key, value], ...]}``. Datetimes become ISO
    strings, sets and tuples lists, and anything else its ``repr``. Never recurses, so any
    depth renders.
    """
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, out, slot = stack.pop()
        if item is None or isinstance(item, (bool, str, int)):
            out[slot] = item
        elif isinstance(item, float):
            if math.isfinite(item):
                out[slot] = item
            else:
                out[slot] = {"__float__": "nan" if math.isnan(item) else repr(item)}
        elif isinstance(item, (bytes, bytearray, memoryview)):
            out[slot] = {"__bytes__": base64.b64encode(bytes(item)).decode("ascii")}
        elif isinstance(item, dict) and all(isinstance(k, str) for k in item):
            mapping: dict[str, Any] = dict.fromkeys(item)
            out[slot] = mapping
            stack.extend((v, mapping, k) for k, v in item.items())
        elif isinstance(item, dict):
            pairs: list[list[Any]] = [[None, None] for _ in range(len(item))]
            out[slot] = {"__map__": pairs}
            for pair, (k, v) in zip(pairs, item.items()):
                stack.append((k, pair, 0))
                stack.append((v, pair, 1))
        elif isinstance(item, (list, tuple, set, frozenset)):
            items = sorted(item, key=repr) if isinstance(item, (set, frozenset)) else item
            array: list[Any] = [None] * len(items)
            out[slot] = array
            stack.extend((v, array, i) for i, v in enumerate(items))
        elif isinstance(item, (datetime, date, time)):
            out[slot] = item.isoformat()
        elif isinstance(item, timedelta):
            out[slot] = item.total_seconds()
        else:
            out[slot] = repr(item)
    return root[0]


def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout, terminal-safe and lossless."""
    click.echo(_json_text(json.dumps(to_plain(value), indent=2, ensure_ascii=False)))


def commit_json(commit: Commit, refs: Sequence[str] = ()) -> dict[str, Any]:
    """A commit as ``--json`` shows it, with the refs that point at it."""
    return {
        "id": commit.id,
        "short_id": commit.short_id,
        "parents": list(commit.parents),
        "snapshot_id": commit.snapshot_id,
        "author": commit.author,
        "timestamp": commit.timestamp.isoformat(),
        "message": commit.message,
        "metadata": commit.metadata,
        "refs": list(refs),
    }


# --- commit headers --------------------------------------------------------------------------


class Decorations:
    """Which refs point at which commits, for ``(HEAD -> main, tag: v1)`` labels."""

    def __init__(self, repo: Repo) -> None:
        self.by_commit: dict[str, list[tuple[str, str]]] = {}
        head_branch = repo.head_branch
        if head_branch is None:
            with contextlib.suppress(StateVCSError):  # a detached HEAD may name nothing
                self._add(repo.resolve("HEAD"), "HEAD", "bold cyan")
        for name, commit_id in sorted(repo.branches().items()):
            if name == head_branch:
                self.by_commit.setdefault(commit_id, []).insert(
                    0, (f"HEAD -> {head_branch}", "bold cyan")
                )
            else:
                self._add(commit_id, name, "bold green")
        for name, commit_id in sorted(repo.tags().items()):
            self._add(commit_id, "tag: " + name, "bold yellow")

    def _add(self, commit_id: str, label: str, style: str) -> None:
        self.by_commit.setdefault(commit_id, []).append((label, style))

    def labels(self, commit_id: str) -> list[str]:
        """The labels of ``commit_id`` as plain strings (for ``--json``)."""
        return [label for label, _ in self.by_commit.get(commit_id, [])]

    def text(self, commit_id: str) -> Text:
        """`` (HEAD -> main, tag: v1)`` in color, or nothing when no ref points at the commit."""
        found = self.by_commit.get(commit_id)
        if not found:
            return Text()
        shown = text((" (", "yellow"))
        for index, (label, style) in enumerate(found):
            if index:
                shown.append(", ", style="yellow")
            shown.append_text(text((label, style)))
        shown.append(")", style="yellow")
        return shown


def oneline(commit: Commit, decorations: Decorations) -> Text:
    """``1a2b3c4d5e6f (main) first line`` as ``log --oneline`` shows a commit."""
    line = text((commit.short_id, "yellow"))
    line.append_text(decorations.text(commit.id))
    line.append_text(text(" " + first_line(commit.message)))
    return line


def print_header(out: Console, commit: Commit, decorations: Decorations) -> None:
    """Print a commit as ``log`` and ``show`` do: id, merge parents, author, date, message."""
    line = text(("commit " + commit.id, "yellow"))
    line.append_text(decorations.text(commit.id))
    out.print(line)
    if len(commit.parents) > 1:
        out.print(text("Merge:  " + " ".join(p[:12] for p in commit.parents)))
    out.print(text("Author: " + commit.author))
    out.print(text("Date:   " + commit.timestamp.strftime("%Y-%m-%d %H:%M:%S %z")))
    out.print()
    for text_line in lines(commit.message or "(no message)"):
        out.print(text("    " + text_line))


# --- messages ---------------------------------------------------------------------------------


def _text_lines(value: str, style: str = "", indent: str = "") -> list[Text]:
    return [text((indent + line, style)) for line in lines(value)]


def _block_lines(block: Any) -> list[Text]:
    if not isinstance(block, dict):
        return [text(short(block, 400))]
    if "text" in block and isinstance(block["text"], str):
        return _text_lines(block["text"])
    if "toolUse" in block and isinstance(block["toolUse"], dict):
        use = block["toolUse"]
        line = text(("→ ", "yellow"), (use.get("name", "?"), "bold yellow"))
        line.append_text(text("(" + short(use.get("input", {}), 300) + ")"))
        if use.get("toolUseId"):
            line.append_text(text((f"  [{use['toolUseId']}]", "dim")))
        return [line]
    if "toolResult" in block and isinstance(block["toolResult"], dict):
        result = block["toolResult"]
        status = str(result.get("status", "?"))
        line = text(
            ("← ", "yellow"),
            (f"result {status}", "bold yellow" if status != "error" else "bold red"),
        )
        if result.get("toolUseId"):
            line.append_text(text((f"  [{result['toolUseId']}]", "dim")))
        found = [line]
        content = result.get("content", [])
        for part in content if isinstance(content, list) else [content]:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                found.extend(_text_lines(part["text"], indent="  "))
            elif isinstance(part, dict) and "json" in part:
                found.append(text("  " + short(part["json"], 300)))
            else:
                found.append(text("  " + short(part, 300)))
        return found
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"]
        said = ""
        if isinstance(reasoning, dict):
            inner = reasoning.get("reasoningText", {})
            said = inner.get("text", "") if isinstance(inner, dict) else ""
        shown = said if isinstance(said, str) and said else short(reasoning, 200)
        return _text_lines("[reasoning] " + shown, style="dim italic")
    kind = next(iter(block), "block")
    return [text((f"[{kind}] " + short(block[kind], 200) if block else "[empty]", "dim"))]


def message_lines(message: Any) -> list[Text]:
    """Render one message readably: text, tool uses (→) and tool results (←), all made safe."""
    if not isinstance(message, dict):
        return [text(short(message, 400))]
    content = message.get("content")
    found: list[Text] = []
    if isinstance(content, str):
        found.extend(_text_lines(content))
    elif isinstance(content, list):
        for block in content:
            found.extend(_block_lines(block))
    elif content is not None:
        found.append(text(short(content, 400)))
    calls = message.get("tool_calls", [])
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        if not isinstance(function, dict):
            function = {}
        if not function and isinstance(call, dict) and "name" in call:
            # LangChain's form (LangGraph checkpoints): {"name", "args", "id"}.
            function = {"name": call["name"], "arguments": call.get("args", "")}
        line = text(("→ ", "yellow"), (function.get("name", "?"), "bold yellow"))
        line.append_text(text("(" + short(function.get("arguments", ""), 300) + ")"))
        found.append(line)
    if not found:
        found.append(text(("(empty)", "dim")))
    return found


def role_text(message: Any) -> Text:
    """A message's role in its color (``?`` when it has none)."""
    role = str(message.get("role", "?")) if isinstance(message, dict) else "?"
    return text((role, ROLE_STYLES.get(role, "bold")))


def preview(message: Any, width: int = 70) -> str:
    """A message as one line of at most ``width`` characters."""
    parts = [line.plain for line in message_lines(message)]
    joined = " ".join(" ".join(parts).split())
    return joined if len(joined) <= width else joined[: width - 1] + "…"


# --- diffs ------------------------------------------------------------------------------------


def diff_json(result: SnapshotDiff, old_id: str, new_id: str) -> dict[str, Any]:
    """A snapshot diff as ``diff --json`` shows it."""
    m = result.messages
    return {
        "old": {"rev": result.old, "id": old_id, "kind": result.old_kind},
        "new": {"rev": result.new, "id": new_id, "kind": result.new_kind},
        "empty": result.is_empty,
        "messages": {
            "common_prefix": m.common_prefix,
            "old_length": m.old_length,
            "new_length": m.new_length,
            "changes": [
                {"index": c.index, "kind": c.kind, "old": c.old, "new": c.new} for c in m.changes
            ],
        },
        "state": [{"key": c.key, "kind": c.kind, "old": c.old, "new": c.new} for c in result.state],
        "extras": [
            {"key": c.key, "kind": c.kind, "old": c.old, "new": c.new} for c in result.extras
        ],
    }


_SIGNS = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow")}


def print_diff(out: Console, result: SnapshotDiff, old: Commit, new: Commit) -> None:
    """Print a snapshot diff in color: message changes by position, then state and extras."""
    out.print(
        text(
            ("diff ", "bold"),
            (f"{result.old} ({old.short_id})", "red"),
            (" → ", "bold"),
            (f"{result.new} ({new.short_id})", "green"),
        )
    )
    if result.old_kind != result.new_kind:
        out.print(text((f"kind: {result.old_kind} → {result.new_kind}", "yellow")))
    m = result.messages
    out.print(
        text(
            (
                f"messages: {m.old_length} → {m.new_length} (common prefix {m.common_prefix}; "
                f"+{len(m.added)} -{len(m.removed)} ~{len(m.changed)})",
                "bold",
            )
        )
    )
    for change in m.changes:
        sign, style = _SIGNS[change.kind]
        line = text((f"  {sign} [{change.index}] ", style))
        shown = change.old if change.kind == "removed" else change.new
        line.append_text(role_text(shown))
        line.append_text(text((": " + preview(shown), style)))
        out.print(line)
        if change.kind == "changed":
            out.print(text(("      was: " + preview(change.old), "dim")))
    for title, changes in (("state", result.state), ("extras", result.extras)):
        if not changes:
            continue
        out.print(text((f"{title}:", "bold")))
        for c in changes:
            sign, style = _SIGNS[c.kind]
            if c.kind == "added":
                out.print(text((f"  {sign} {c.key} = {short(c.new)}", style)))
            elif c.kind == "removed":
                out.print(text((f"  {sign} {c.key} (was {short(c.old)})", style)))
            else:
                out.print(
                    text(
                        (f"  {sign} {c.key}: ", style),
                        (short(c.old, 60), "red"),
                        " → ",
                        (short(c.new, 60), "green"),
                    )
                )
    if result.is_empty:
        out.print(text(("(no differences)", "dim")))


__all__ = [
    "BIDI_FORMATTING",
    "INVISIBLE_FORMATTING",
    "ROLE_STYLES",
    "Decorations",
    "commit_json",
    "diff_json",
    "emit_json",
    "first_line",
    "human_bytes",
    "lines",
    "message_lines",
    "one_line",
    "oneline",
    "plural",
    "preview",
    "print_diff",
    "print_header",
    "role_text",
    "safe_text",
    "short",
    "text",
    "to_plain",
]
