"""An offline Google ADK model for tests, docs and examples: it answers from a script.

    model = ScriptedLlm([tool_call("add", {"a": 2, "b": 3}), text("5")])
    agent = LlmAgent(name="calc", model=model, tools=[add])

Each model call returns the next scripted response; ``requests`` records what it was sent.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field

from ...errors import StateVCSError


def text(content: str) -> LlmResponse:
    """A model turn saying ``content``."""
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=content)]))


def tool_call(name: str, arguments: dict[str, Any] | None = None) -> LlmResponse:
    """A model turn calling tool ``name`` with ``arguments``."""
    call = types.FunctionCall(name=name, args=arguments or {})
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


class ScriptedLlm(BaseLlm):
    """A model that plays back scripted responses, one per call."""

    model: str = "scripted"
    script: list[LlmResponse] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)

    def __init__(self, script: list[LlmResponse], **kwargs: Any) -> None:
        """Play back ``script`` in order; running out raises :class:`StateVCSError`."""
        super().__init__(**kwargs)
        self.script = list(script)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Yield the next scripted response."""
        self.requests.append(llm_request)
        if not self.script:
            raise StateVCSError(
                f"the ScriptedLlm ran out of responses after {len(self.requests) - 1} calls; "
                "script one more"
            )
        yield self.script.pop(0)


__all__ = ["ScriptedLlm", "text", "tool_call"]
