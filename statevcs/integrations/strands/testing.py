"""An offline, deterministic Strands model for tests, examples and benchmarks.

:class:`ScriptedModel` is a real :class:`strands.models.Model`: the agent streams from it exactly
as it streams from Bedrock or OpenAI (``messageStart``, ``contentBlockStart``/``Delta``/``Stop``,
``messageStop``, ``metadata``, optional guardrail ``redactContent``), but every reply comes from a
script, so runs need no network and always produce the same conversation::

    from strands import Agent
    from statevcs.integrations.strands.testing import Reply, ScriptedModel, ToolCall

    model = ScriptedModel(
        [
            ToolCall("search", {"query": "Lisbon"}),     # first model call: ask for a tool
            "Day 1: Alfama. Day 2: Belem.",              # after the tool result: answer
        ]
    )
    agent = Agent(model=model, tools=[search], callback_handler=None)

Swap in a real model (``BedrockModel``, ``OpenAIModel``, ...) by passing it as ``model=``;
nothing else changes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from pydantic import BaseModel
from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from ...errors import StateVCSError

_T = TypeVar("_T", bound=BaseModel)


@dataclass(frozen=True)
class ToolCall:
    """One tool call the scripted model asks for (a ``toolUse`` content block)."""

    name: str
    """Name of the tool, as registered with the agent."""
    input: Mapping[str, Any] = field(default_factory=dict)
    """JSON-compatible tool input; streamed as JSON text in chunks, as providers do."""
    tool_use_id: str | None = None
    """Fixed ``toolUseId``; by default a deterministic id derived from the call number."""


@dataclass(frozen=True)
class Reply:
    """One scripted model response: text, tool calls, or both."""

    text: str = ""
    """Assistant text (streamed in ``chunk_size`` pieces)."""
    tool_calls: Sequence[ToolCall] = ()
    """Tool calls to request after the text; the agent runs them and calls the model again."""
    stop_reason: str | None = None
    """Override the stop reason (default ``"tool_use"`` with tool calls, else ``"end_turn"``)."""
    redact_user: str | None = None
    """Emit a guardrail ``redactContent`` event that replaces the latest user message's content."""


ScriptItem = (
    str
    | ToolCall
    | Reply
    | Sequence[ToolCall]
    | Callable[[Messages], str | ToolCall | Reply | Sequence[ToolCall]]
)
"""A script entry: text, one tool call, several parallel tool calls, a :class:`Reply`, or a
callable that receives the conversation (read it, do not modify it) and returns one of those."""


class ScriptExhausted(StateVCSError):
    """The scripted model was called more often than its script has replies."""


class ScriptedModel(Model):
    """A :class:`strands.models.Model` that replays scripted replies and tool calls, offline.

    Each model call consumes the next script item. When the script runs out the model uses
    ``default`` if given, restarts from the top if ``cycle=True``, and otherwise raises
    :class:`ScriptExhausted`. ``calls`` counts model calls; ``add()`` appends replies later.
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        default: ScriptItem | None = None,
        cycle: bool = False,
        chunk_size: int = 24,
        model_id: str = "scripted-model",
        context_window_limit: int | None = None,
        response_ids: bool = False,
    ) -> None:
        """Create a model that answers with ``script``, one item per model call.

        With ``response_ids=True`` each call stores ``model_state["response_id"]`` the way
        providers with server-side state do, so ``agent.take_snapshot()`` has model state.
        """
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        self._script: list[ScriptItem] = list(script)
        self._default = default
        self._cycle = cycle
        self._chunk_size = chunk_size
        self._position = 0
        self._response_ids = response_ids
        self._lock = threading.Lock()
        self.calls = 0
        """Number of model calls served so far."""
        self.config: dict[str, Any] = {"model_id": model_id}
        if context_window_limit is not None:
            self.config["context_window_limit"] = context_window_limit

    # -- script management ---------------------------------------------------------

    def add(self, *items: ScriptItem) -> None:
        """Append replies to the end of the script."""
        with self._lock:
            self._script.extend(items)

    @property
    def remaining(self) -> int:
        """Script items not yet used (ignoring ``default`` and ``cycle``)."""
        with self._lock:
            return max(0, len(self._script) - self._position)

    def _next_reply(self, messages: Messages) -> tuple[int, Reply]:
        with self._lock:
            call = self.calls
            self.calls += 1
            if self._position >= len(self._script) and self._cycle and self._script:
                self._position = 0
            if self._position < len(self._script):
                item: ScriptItem | None = self._script[self._position]
                self._position += 1
            else:
                item = self._default
        if item is None:
            raise ScriptExhausted(
                f"ScriptedModel has no reply left for model call #{call + 1} "
                f"(script has {len(self._script)} items); add replies with model.add(...), "
                "or pass default=... or cycle=True"
            )
        return call, _as_reply(item(messages) if callable(item) else item)

    # -- strands.models.Model ------------------------------------------------------

    def update_config(self, **model_config: Any) -> None:
        """Merge ``model_config`` into the model's configuration."""
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        """Return the model's configuration (``model_id`` and any updates)."""
        return self.config

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Stream the next scripted reply as provider-style events."""
        call, reply = self._next_reply(messages)
        model_state = kwargs.get("model_state")
        if self._response_ids and isinstance(model_state, dict):
            model_state["response_id"] = f"scripted-response-{call + 1:05d}"
        for event in self.events_for(reply, call=call, messages=messages):
            yield event

    async def structured_output(
        self,
        output_model: type[_T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, _T | Any], None]:
        """Parse the next scripted reply's text as JSON for ``output_model``."""
        _call, reply = self._next_reply(prompt)
        yield {"output": output_model.model_validate_json(reply.text)}

    # -- event rendering -------------------------------------------------------------

    def events_for(
        self, reply: Reply, *, call: int = 0, messages: Messages | None = None
    ) -> list[StreamEvent]:
        """Return the provider-style stream events for ``reply`` (model call number ``call``)."""
        events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
        size = self._chunk_size
        if reply.text:
            events.append({"contentBlockStart": {"start": {}}})
            for start in range(0, len(reply.text), size):
                piece = reply.text[start : start + size]
                events.append({"contentBlockDelta": {"delta": {"text": piece}}})
            events.append({"contentBlockStop": {}})
        for index, tool_call in enumerate(reply.tool_calls):
            tool_use_id = tool_call.tool_use_id or f"tooluse_{call:05d}_{index}"
            start_block = {"toolUse": {"name": tool_call.name, "toolUseId": tool_use_id}}
            events.append({"contentBlockStart": {"start": start_block}})
            payload = json.dumps(dict(tool_call.input), sort_keys=True)
            for start in range(0, len(payload), size):
                piece = payload[start : start + size]
                events.append({"contentBlockDelta": {"delta": {"toolUse": {"input": piece}}}})
            events.append({"contentBlockStop": {}})
        stop_reason = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        events.append({"messageStop": {"stopReason": stop_reason}})
        if reply.redact_user is not None:
            events.append({"redactContent": {"redactUserContentMessage": reply.redact_user}})
        output_tokens = len(reply.text) // 4 + 8 * len(reply.tool_calls) + 1
        input_tokens = _input_tokens(messages or [])
        events.append(
            {
                "metadata": {
                    "usage": {
                        "inputTokens": input_tokens,
                        "outputTokens": output_tokens,
                        "totalTokens": input_tokens + output_tokens,
                    },
                    "metrics": {"latencyMs": 0},
                }
            }
        )
        return cast(list[StreamEvent], events)


def _as_reply(item: object) -> Reply:
    if isinstance(item, Reply):
        return item
    if isinstance(item, str):
        return Reply(text=item)
    if isinstance(item, ToolCall):
        return Reply(tool_calls=(item,))
    if isinstance(item, Sequence) and all(isinstance(call, ToolCall) for call in item):
        return Reply(tool_calls=tuple(cast(Sequence[ToolCall], item)))
    raise TypeError(
        f"a ScriptedModel script item must be a str, ToolCall, list of ToolCall, Reply or a "
        f"callable returning one of those; got {type(item).__name__}"
    )


def _input_tokens(messages: Messages) -> int:
    # Deterministic and O(1) per call: a fixed cost per message plus the newest message's text.
    if not messages:
        return 0
    last = messages[-1]
    text = sum(len(block.get("text", "")) for block in last.get("content", []))
    return 12 * len(messages) + text // 4


__all__ = ["Reply", "ScriptExhausted", "ScriptItem", "ScriptedModel", "ToolCall"]
