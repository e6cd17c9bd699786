"""An offline OpenAI Agents SDK model for tests, docs and examples: it answers from a script.

    model = ScriptedModel([[tool_call("add", {"a": 2, "b": 3})], [text("5")]])
    agent = Agent(name="calc", model=model, tools=[add])
    await Runner.run(agent, "2 + 3?")

Each ``get_response`` call returns the next scripted turn (a list of output items); a handoff
is a tool call to the handoff's tool name (``transfer_to_<agent name>``). ``inputs`` records what
the model was sent, for assertions.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import (
    ModelResponse,
    TResponseInputItem,
    TResponseOutputItem,
    TResponseStreamEvent,
)
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelTracing
from agents.tool import Tool
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from ...errors import StateVCSError

_counter = iter(range(1, 1 << 62))


def text(content: str) -> ResponseOutputMessage:
    """An assistant message saying ``content``."""
    return ResponseOutputMessage(
        id=f"msg_{next(_counter)}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=content, annotations=[])],
    )


def tool_call(
    name: str, arguments: dict[str, Any] | None = None, call_id: str | None = None
) -> ResponseFunctionToolCall:
    """A call of tool ``name`` (or a handoff, ``transfer_to_<agent>``) with ``arguments``."""
    number = next(_counter)
    return ResponseFunctionToolCall(
        id=f"fc_{number}",
        type="function_call",
        name=name,
        arguments=json.dumps(arguments or {}),
        call_id=call_id or f"call_{number}",
        status="completed",
    )


class ScriptedModel(Model):
    """A model that plays back scripted turns, one per ``get_response`` call."""

    def __init__(self, turns: Sequence[Sequence[TResponseOutputItem]]) -> None:
        """Play back ``turns`` in order; running out raises :class:`StateVCSError`."""
        self.turns = [list(turn) for turn in turns]
        self.inputs: list[str | list[TResponseInputItem]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any | None,
    ) -> ModelResponse:
        """Return the next scripted turn."""
        self.inputs.append(input)
        if not self.turns:
            raise StateVCSError(
                f"the ScriptedModel ran out of turns after {len(self.inputs) - 1} calls; "
                "script one more turn"
            )
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        """Not scripted: use ``Runner.run`` with this model."""
        raise StateVCSError("the ScriptedModel does not stream; use Runner.run, not run_streamed")


__all__ = ["ScriptedModel", "text", "tool_call"]
