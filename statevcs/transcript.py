"""Reading stored messages without a framework: who speaks, what a user asked, which tools ran.

Messages are plain documents. Three shapes are recognised, which covers the integrations and
most chat APIs:

* Strands / Bedrock Converse: ``{"role": "user", "content": [{"text": ...}, {"toolUse": ...}]}``;
  a user message whose blocks are all ``toolResult`` is a tool result, not a prompt;
* LangChain (LangGraph checkpoints): ``{"role": "user" | "assistant" | "tool", "content": ...,
  "tool_calls": [{"name", "args", "id"}]}``;
* OpenAI chat: ``{"role": ..., "content": ..., "tool_calls": [{"function": {"name",
  "arguments"}}]}``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .plain import to_plain

_USER_ROLES = frozenset({"user", "human"})


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call a message asks for: the tool's name and its input as stored."""

    name: str
    input: Any

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible rendering."""
        return {"name": self.name, "input": to_plain(self.input)}


def role_of(message: Any) -> str | None:
    """The message's role (``"user"``, ``"assistant"``, ...), or ``None`` when it has none."""
    if isinstance(message, dict):
        role = message.get("role")
        if isinstance(role, str):
            return role
    return None


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def is_prompt(message: Any) -> bool:
    """Whether ``message`` is something a user said (not a tool result sent back as ``user``)."""
    if role_of(message) not in _USER_ROLES:
        return False
    blocks = _blocks(message)
    return not (blocks and all(isinstance(b, dict) and "toolResult" in b for b in blocks))


def text_of(message: Any) -> str:
    """The message's text: its string content, or its text blocks joined by newlines."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for block in _blocks(message):
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def tool_uses(message: Any) -> list[ToolUse]:
    """The tool calls ``message`` asks for, in order (any of the three shapes)."""
    if not isinstance(message, dict):
        return []
    found: list[ToolUse] = []
    for block in _blocks(message):
        use = block.get("toolUse") if isinstance(block, dict) else None
        if isinstance(use, dict) and isinstance(use.get("name"), str):
            found.append(ToolUse(use["name"], use.get("input")))
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            found.append(ToolUse(function["name"], function.get("arguments")))
        elif isinstance(call.get("name"), str):
            found.append(ToolUse(call["name"], call.get("args")))
    return found


def strings_in(
    message: Any, *, skip_top: frozenset[str] = frozenset({"role", "channel"})
) -> Iterator[str]:
    """Every string value inside ``message`` (not keys), depth first, without recursion.

    The top-level keys in ``skip_top`` (the role and LangGraph's channel name: labels, not
    content) are left out.
    """
    stack: list[Any]
    if isinstance(message, dict):
        stack = [v for k, v in message.items() if k not in skip_top]
        stack.reverse()
    else:
        stack = [message]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))


__all__ = ["ToolUse", "is_prompt", "role_of", "strings_in", "text_of", "tool_uses"]
