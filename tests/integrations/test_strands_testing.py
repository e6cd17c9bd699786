"""ScriptedModel streams scripted replies the way real providers do, deterministically."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel
from strands import Agent

from statevcs.integrations.strands.testing import Reply, ScriptedModel, ScriptExhausted, ToolCall

from .conftest import search


def _stream(model: ScriptedModel, messages: list[Any]) -> list[dict[str, Any]]:
    async def collect() -> list[dict[str, Any]]:
        return [dict(event) async for event in model.stream(messages)]

    return asyncio.run(collect())


def test_text_reply_streams_provider_events_in_order() -> None:
    model = ScriptedModel(["Hello there, traveller!"], chunk_size=5)
    events = _stream(model, [{"role": "user", "content": [{"text": "hi"}]}])
    kinds = [next(iter(event)) for event in events]
    assert kinds[0] == "messageStart"
    assert kinds[1] == "contentBlockStart"
    assert kinds[-3:] == ["contentBlockStop", "messageStop", "metadata"]
    text = "".join(
        e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e
    )
    assert text == "Hello there, traveller!"
    assert events[-2]["messageStop"]["stopReason"] == "end_turn"
    assert events[-1]["metadata"]["usage"]["totalTokens"] > 0


def test_tool_calls_stream_json_input_and_stop_for_tool_use() -> None:
    model = ScriptedModel([[ToolCall("search", {"query": "Sintra"}), ToolCall("search", {})]])
    events = _stream(model, [{"role": "user", "content": [{"text": "go"}]}])
    starts = [e["contentBlockStart"]["start"] for e in events if "contentBlockStart" in e]
    assert [s["toolUse"]["toolUseId"] for s in starts] == ["tooluse_00000_0", "tooluse_00000_1"]
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"


def test_a_real_agent_runs_tools_and_answers_deterministically() -> None:
    def run() -> list[Any]:
        agent = Agent(
            model=ScriptedModel([ToolCall("search", {"query": "Lisbon"}), "Day 1: Alfama."]),
            tools=[search],
            callback_handler=None,
        )
        result = agent("Plan Lisbon")
        assert str(result).strip() == "Day 1: Alfama."
        messages = [{k: v for k, v in m.items() if k != "tracking_id"} for m in agent.messages]
        for message in messages:
            # Strands times the first byte itself (wall clock); only that may differ.
            message.get("metadata", {}).get("metrics", {}).pop("timeToFirstByteMs", None)
        return messages

    first, second = run(), run()
    assert first == second
    assert [m["role"] for m in first] == ["user", "assistant", "user", "assistant"]
    assert first[2]["content"][0]["toolResult"]["content"][0]["text"].startswith("Guides about")


def test_callable_items_see_the_conversation() -> None:
    seen: list[int] = []

    def reply(messages: list[Any]) -> str:
        seen.append(len(messages))
        return f"you sent {len(messages)} messages"

    agent = Agent(model=ScriptedModel([], default=reply), callback_handler=None)
    agent("one")
    agent("two")
    assert seen == [1, 3]
    assert agent.messages[-1]["content"][0]["text"] == "you sent 3 messages"


def test_exhausted_script_raises_a_clear_error_and_cycle_restarts() -> None:
    model = ScriptedModel(["only"])
    _stream(model, [])
    with pytest.raises(ScriptExhausted, match="add replies"):
        _stream(model, [])
    cycling = ScriptedModel(["a", "b"], cycle=True)
    texts = [
        "".join(
            e["contentBlockDelta"]["delta"]["text"]
            for e in _stream(cycling, [])
            if "contentBlockDelta" in e
        )
        for _ in range(3)
    ]
    assert texts == ["a", "b", "a"]
    assert cycling.calls == 3


def test_guardrail_redaction_replaces_the_user_message() -> None:
    agent = Agent(
        model=ScriptedModel([Reply("I cannot help with that.", redact_user="[redacted]")]),
        callback_handler=None,
    )
    agent("my card number is 4111")
    assert agent.messages[0]["content"] == [{"text": "[redacted]"}]


def test_structured_output_parses_the_scripted_json() -> None:
    class Plan(BaseModel):
        city: str
        days: int

    model = ScriptedModel(['{"city": "Lisbon", "days": 3}'])

    async def collect() -> list[Any]:
        return [event async for event in model.structured_output(Plan, [])]

    assert asyncio.run(collect())[-1]["output"] == Plan(city="Lisbon", days=3)


def test_response_ids_fill_model_state_and_bad_items_are_rejected() -> None:
    agent = Agent(model=ScriptedModel(["ok"], response_ids=True), callback_handler=None)
    agent("hi")
    assert agent.take_snapshot(include=["model_state"]).data["model_state"] == {
        "response_id": "scripted-response-00001"
    }
    with pytest.raises(TypeError, match="script item"):
        _stream(ScriptedModel([42]), [])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="chunk_size"):
        ScriptedModel(chunk_size=0)


def test_old_strands_testing_module_reexports_the_package_module() -> None:
    import statevcs.integrations.strands.testing as new
    import statevcs.integrations.strands_testing as old

    assert old.__all__ == new.__all__
    for name in new.__all__:
        assert getattr(old, name) is getattr(new, name)


def test_package_exports_every_public_name_and_registers_the_adapters() -> None:
    import statevcs.integrations.strands as package
    from statevcs.adapters import adapter_for

    for name in package.__all__:
        assert getattr(package, name) is not None
    agent = Agent(model=ScriptedModel(["hi"]), callback_handler=None)
    assert adapter_for(agent) is package.agent_adapter()
