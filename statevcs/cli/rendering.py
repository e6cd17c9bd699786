"""How the command line shows repository data: safe text, JSON, commit headers, messages, diffs.

Everything read from a repository (messages, authors, keys, ref names, metadata) is printed as
plain text through :func:`safe_text`, never as rich markup, with terminal control characters
shown as visible escapes; ``--json`` output goes through :func:`emit_json`. Lines are
:class:`~.styled.Styled`: plain text where no colour applies, rich ``Text`` on a terminal.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import StateVCSError
from ..plain import to_plain
from .safety import UNSAFE_IN_JSON, json_escape, one_line, safe_text
from .styled import Styled

if TYPE_CHECKING:
    from ..diff import SnapshotDiff
    from ..repo import Commit, Repo
    from .console import Printer

ROLE_STYLES = {
    "user": "bold green",
    "assistant": "bold blue",
    "system": "bold magenta",
    "tool": "bold yellow",
}
"""The style of each message role's name."""


def _json_text(text: str) -> str:
    # These characters only ever occur inside JSON string literals, so a \uXXXX escape keeps
    # the document valid and the value unchanged for a JSON reader.
    return UNSAFE_IN_JSON.sub(json_escape, text)


def text(*parts: object | tuple[object, str]) -> Styled:
    """Build one ``Styled`` line from parts (a value, or ``(value, style)``), all made safe."""
    line = Styled()
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


def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout, terminal-safe and lossless."""
    # What click.echo did: the text and a newline, flushed (JSON holds no escape sequence for
    # it to strip: the encoder escapes every control character).
    sys.stdout.write(_json_text(json.dumps(to_plain(value), indent=2, ensure_ascii=False)) + "\n")
    sys.stdout.flush()


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
        # Every other ref (a LangGraph thread's refs/langgraph/heads/...) by its full name, as
        # git shows a ref outside refs/heads and refs/tags: log --all draws their tips too.
        for name, commit_id in sorted(repo.refs.as_hex("refs/").items()):
            if not name.startswith(("refs/heads/", "refs/tags/")):
                self._add(commit_id, name, "bold magenta")

    def _add(self, commit_id: str, label: str, style: str) -> None:
        self.by_commit.setdefault(commit_id, []).append((label, style))

    def labels(self, commit_id: str) -> list[str]:
        """The labels of ``commit_id`` as plain strings (for ``--json``)."""
        return [label for label, _ in self.by_commit.get(commit_id, [])]

    def text(self, commit_id: str) -> Styled:
        """`` (HEAD -> main, tag: v1)`` in color, or nothing when no ref points at the commit."""
        found = self.by_commit.get(commit_id)
        if not found:
            return Styled()
        shown = text((" (", "yellow"))
        for index, (label, style) in enumerate(found):
            if index:
                shown.append(", ", style="yellow")
            shown.append_text(text((label, style)))
        shown.append(")", style="yellow")
        return shown


def oneline(commit: Commit, decorations: Decorations) -> Styled:
    """``1a2b3c4d5e6f (main) first line`` as ``log --oneline`` shows a commit."""
    line = text((commit.short_id, "yellow"))
    line.append_text(decorations.text(commit.id))
    line.append_text(text(" " + first_line(commit.message)))
    return line


def print_header(out: Printer, commit: Commit, decorations: Decorations) -> None:
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


def _text_lines(value: str, style: str = "", indent: str = "") -> list[Styled]:
    return [text((indent + line, style)) for line in lines(value)]


def _block_lines(block: Any) -> list[Styled]:
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


def message_lines(message: Any) -> list[Styled]:
    """Render one message readably: text, tool uses (→) and tool results (←), all made safe."""
    if not isinstance(message, dict):
        return [text(short(message, 400))]
    content = message.get("content")
    found: list[Styled] = []
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


def role_text(message: Any) -> Styled:
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
        "order": [{"field": c.field, "old": list(c.old), "new": list(c.new)} for c in result.order],
    }


_SIGNS = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow")}


def print_diff(out: Printer, result: SnapshotDiff, old: Commit, new: Commit) -> None:
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
    for reordered in result.order:
        out.print(
            text(
                (f"{reordered.field} key order: ", "bold"),
                (short(list(reordered.old), 60), "red"),
                " → ",
                (short(list(reordered.new), 60), "green"),
            )
        )
    if result.is_empty:
        out.print(text(("(no differences)", "dim")))


__all__ = [
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
