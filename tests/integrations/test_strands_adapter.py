"""repo.commit / repo.checkout on live Strands agents: every snapshot field, every commit."""

from __future__ import annotations

import copy
import json
import math
import pickle
from datetime import UTC, datetime
from typing import Any

import pytest
from strands import Agent
from strands import Snapshot as StrandsSnapshot
from strands.agent.conversation_manager import SlidingWindowConversationManager
from strands.bidi import BidiAgent
from strands.bidi.models.model import BidiModel

import statevcs
from statevcs.integrations.strands import (
    KIND_AGENT,
    TrackedDict,
    from_strands_snapshot,
    to_strands_snapshot,
)
from statevcs.integrations.strands.testing import Reply, ToolCall

from .conftest import ALL_FIELDS, AgentFactory, snapshot_data

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def _trip_script() -> list[Any]:
    return [
        "Day 1: Alfama and the castle.",
        ToolCall("search", {"query": "Sintra"}),
        "Day 2: Sintra's palaces.",
        ToolCall("remember", {"key": "hotel", "value": "Baixa"}),
        "Noted: hotel in Baixa.",
        "That photo is the Belem tower.",
        ToolCall("approve", {"amount": 120}),
    ]


def _run_trip(agent: Agent, repo: statevcs.Repo) -> list[tuple[str, dict[str, Any]]]:
    """Run a varied conversation, committing after each step; return (commit id, data)."""
    history: list[tuple[str, dict[str, Any]]] = []

    def commit(message: str) -> None:
        history.append((repo.commit(agent, message).id, snapshot_data(agent)))

    commit("empty")
    agent("Plan three days in Lisbon")
    commit("turn 1")
    agent("Add Sintra")
    commit("turn 2")
    agent.state.set("budget", {"eur": 1200, "flex": True, "ratio": 0.25})
    agent("Remember the hotel")
    commit("turn 3")
    agent([{"text": "What is this?"}, {"image": {"format": "png", "source": {"bytes": PNG}}}])
    commit("turn 4 (image)")
    agent.system_prompt = [{"text": "You plan cheap trips."}, {"cachePoint": {"type": "default"}}]
    result = agent("Book the hotel")
    assert result.stop_reason == "interrupt"
    commit("turn 5 (interrupted)")
    return history


def test_checkout_of_every_commit_reproduces_take_snapshot(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(
        _trip_script(), conversation_manager=SlidingWindowConversationManager(per_turn=True)
    )
    history = _run_trip(agent, repo)
    final = history[-1][1]
    assert final["interrupt_state"]["activated"] is True
    assert final["model_state"]["response_id"].startswith("scripted-response-")
    assert final["conversation_manager_state"]["model_call_count"] > 0
    assert final["state"]["hotel"] == "Baixa"

    # Back in time on the same live agent, newest to oldest and then out of order ...
    order = [*reversed(history), history[2], history[4], history[0], history[3]]
    for commit_id, data in order:
        repo.checkout(agent, commit_id)
        assert snapshot_data(agent) == data
    # ... and into brand-new agents, as a restarted process would.
    for commit_id, data in history:
        fresh = make_agent([])
        repo.checkout(fresh, commit_id)
        assert snapshot_data(fresh) == data


def test_restored_interrupted_agent_resumes(make_agent: AgentFactory, repo: statevcs.Repo) -> None:
    agent = make_agent([ToolCall("approve", {"amount": 50})])
    interrupted = agent("Book the hotel")
    repo.commit(agent, "waiting for approval")

    fresh = make_agent(["Booked, thanks."])
    repo.checkout(fresh, "main")
    answer = [
        {"interruptResponse": {"interruptId": interrupted.interrupts[0].id, "response": "ok"}}
    ]
    assert str(fresh(answer)).strip() == "Booked, thanks."
    tool_result = fresh.messages[-2]["content"][0]["toolResult"]
    assert tool_result["content"] == [{"text": "approved: ok"}]


def test_images_are_stored_as_bytes_and_ids_and_names_kept(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(["A tower."], agent_id="planner-7", name="Planner")
    agent([{"text": "What is this?"}, {"image": {"format": "png", "source": {"bytes": PNG}}}])
    repo.commit(agent, "with image")
    stored = repo.show("main")
    assert stored.kind == KIND_AGENT
    image = stored.messages[0]["content"][1]["image"]["source"]["bytes"]
    assert isinstance(image, bytes) and image == PNG
    assert stored.extras["agent_id"] == "planner-7"
    assert stored.extras["name"] == "Planner"
    assert stored.extras["system_prompt"] == [{"text": "You plan trips."}]
    assert "state" not in stored.extras and "messages" not in stored.extras


def test_branches_from_a_shared_prefix(make_agent: AgentFactory, repo: statevcs.Repo) -> None:
    agent = make_agent(["Lisbon plan.", "Sintra added.", "Cheaper plan.", "Luxury plan."])
    agent("Plan a trip to Lisbon")
    repo.commit(agent, message="after first answer")
    agent("Add a day in Sintra")
    repo.commit(agent, message="after second answer")
    repo.checkout(agent, "main~1")
    assert len(agent.messages) == 2
    repo.branch("cheaper", rev="main~1")
    repo.checkout(agent, "cheaper")
    agent("Make it cheaper")
    cheaper = repo.commit(agent)
    assert repo.branches()["cheaper"] == cheaper.id
    assert repo.get_commit("main").message == "after second answer"

    other = make_agent([])
    repo.checkout(other, "main")
    repo.branch("luxury", rev="main~1")
    repo.checkout(other, "luxury")
    other.model = agent.model
    other("Make it luxurious")
    repo.commit(other)
    assert [m["content"][0]["text"] for m in repo.show("luxury").messages[-2:]] == [
        "Make it luxurious",
        "Luxury plan.",
    ]
    diff = repo.diff("cheaper", "luxury")
    assert diff.messages.common_prefix == 2


def test_transient_keys_are_never_committed_and_survive_checkout(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(["ok", "ok"])
    agent.state.set("db_url", "postgres://localhost/live")
    agent.state.set("city", "Lisbon")
    statevcs.transient(agent, "db_url")
    agent("hello")
    repo.commit(agent, "one")
    assert repo.show("main").state == {"city": "Lisbon"}

    agent.state.set("city", "Porto")
    agent.state.set("db_url", "postgres://localhost/other")
    repo.checkout(agent, "main")
    assert agent.state.get("city") == "Lisbon"
    assert agent.state.get("db_url") == "postgres://localhost/other"

    fresh = make_agent([])
    statevcs.transient(fresh, "db_url")
    fresh.state.set("db_url", "sqlite://fresh")
    repo.checkout(fresh, "main")
    assert fresh.state.get() == {"city": "Lisbon", "db_url": "sqlite://fresh"}


@pytest.mark.parametrize("value", [(1, 2), math.nan, {1: "one"}])
def test_non_json_state_raises_serialization_error_and_writes_nothing(
    make_agent: AgentFactory, repo: statevcs.Repo, value: Any
) -> None:
    agent = make_agent(["ok", "ok"])
    agent("hello")
    repo.commit(agent, "clean")
    before_objects = repo.stats().objects
    before_refs = repo.refs.as_hex()
    agent("more")
    agent.state.set("bad", value)  # Strands accepts it: json.dumps is looser than strict JSON
    with pytest.raises(statevcs.SerializationError, match=r"state\['bad'\]"):
        repo.commit(agent, "should fail")
    assert repo.stats().objects == before_objects
    assert repo.refs.as_hex() == before_refs

    agent.state.delete("bad")
    repo.commit(agent, "fixed")
    assert repo.show("main").messages == json.loads(json.dumps(repo.show("main").messages))
    assert len(repo.show("main").messages) == 4


def test_rich_state_values_need_the_msgpack_serializer(
    make_agent: AgentFactory, tmp_path: Any
) -> None:
    agent = make_agent(["ok"])
    with pytest.raises(ValueError, match="JSON serializable"):
        agent.state.set("when", datetime.now(UTC))  # Strands itself refuses it
    agent.state.set("pair", (1, 2))
    agent.state.set("by_id", {7: "seven"})
    repo = statevcs.Repo.init(tmp_path / "rich", serializer=statevcs.MsgpackSerializer())
    repo.commit(agent, "rich")
    fresh = make_agent([])
    repo.checkout(fresh, "main")
    assert fresh.state.get("pair") == (1, 2)
    assert fresh.state.get("by_id") == {7: "seven"}
    repo.close()


def test_strands_snapshot_objects_keep_app_data(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(["Lisbon plan."])
    agent("Plan Lisbon")
    original = agent.take_snapshot(preset="session", app_data={"ticket": "T-1"})
    repo.commit(original, "a strands snapshot")
    stored = repo.show("main")
    assert stored.kind == KIND_AGENT
    back = to_strands_snapshot(stored)
    assert back.app_data == {"ticket": "T-1"}
    assert back.created_at == original.created_at
    assert back.to_dict() == json.loads(json.dumps(original.to_dict()))

    holder = StrandsSnapshot(scope="agent", schema_version="1.0", data={}, app_data={})
    repo.checkout(holder, "main")
    assert holder.data == original.data and holder.app_data == {"ticket": "T-1"}

    # The session preset has no system prompt: checking it out leaves the agent's own.
    other = make_agent([], system_prompt="Keep me.")
    repo.checkout(other, "main")
    assert other.system_prompt == "Keep me."
    assert other.messages == agent.messages
    assert from_strands_snapshot(original).messages == original.data["messages"]


def test_committed_messages_behave_as_plain_dicts(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(["Lisbon plan."])
    agent("Plan Lisbon")
    repo.commit(agent, "one")
    message = agent.messages[1]
    assert isinstance(message, dict) and isinstance(message, TrackedDict)
    plain = copy.deepcopy(agent.messages)
    assert plain == agent.messages and type(plain[1]) is dict
    assert type(plain[1]["content"]) is list
    assert type(copy.copy(message)) is dict
    assert pickle.loads(pickle.dumps(agent.messages)) == agent.messages
    assert type(pickle.loads(pickle.dumps(message))) is dict
    assert json.loads(json.dumps(agent.messages)) == agent.messages
    assert type(agent.take_snapshot(include=["messages"]).data["messages"][1]) is dict


def test_checkout_of_an_orchestrator_commit_into_an_agent_is_refused(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    repo.commit(statevcs.Snapshot(kind="strands.swarm"), "not an agent")
    with pytest.raises(statevcs.UnsupportedObject, match=r"strands\.swarm"):
        repo.checkout(make_agent([]), "main")
    repo.commit({"messages": [{"role": "user", "content": [{"text": "hi"}]}], "n": 1}, "dict")
    agent = make_agent([])
    repo.checkout(agent, "main")
    assert agent.messages == [{"role": "user", "content": [{"text": "hi"}]}]
    assert agent.state.get("n") == 1


class _SilentBidiModel(BidiModel):
    """A BidiModel that never connects: enough to construct a BidiAgent offline."""

    def __init__(self) -> None:
        self.config = {"model_id": "silent"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    async def start(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def receive(self) -> Any:  # pragma: no cover - never started
        yield None

    async def send(self, content: Any) -> None:  # pragma: no cover - never started
        return None


def test_bidi_agent_round_trips_its_snapshot_fields(repo: statevcs.Repo) -> None:
    agent = BidiAgent(model=_SilentBidiModel(), system_prompt="Speak softly.", agent_id="voice")
    agent.messages.append({"role": "user", "content": [{"text": "hola"}]})
    agent.state.set("lang", "es")
    repo.commit(agent, "voice")
    fresh = BidiAgent(model=_SilentBidiModel(), agent_id="voice")
    repo.checkout(fresh, "main")
    fields: list[Any] = ["messages", "state", "system_prompt"]
    assert fresh.take_snapshot(include=fields).data == agent.take_snapshot(include=fields).data
    assert repo.show("main").extras["fields"] == fields


def test_scripted_redaction_of_a_committed_prompt_is_committed(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(["First.", Reply("Sorry.", redact_user="[redacted]")])
    agent("hello")
    # A prompt is committed, then the model is re-invoked on it and a guardrail redacts it.
    agent.messages.append({"role": "user", "content": [{"text": "card 4111 1111"}]})
    repo.commit(agent, "prompt")
    agent()
    repo.commit(agent, "answer")
    texts = [m["content"][0]["text"] for m in repo.show("main").messages]
    assert texts == ["hello", "First.", "[redacted]", "Sorry."]
    assert ALL_FIELDS[0] == "messages"


def test_bidi_agent_session_resumes(repo: statevcs.Repo) -> None:
    from statevcs.integrations.strands import StateVCSSessionManager

    session = StateVCSSessionManager(repo, branch="voice", commit_on="message")
    agent = BidiAgent(model=_SilentBidiModel(), session_manager=session, agent_id="voice")
    agent.messages.append({"role": "user", "content": [{"text": "hola"}]})
    session.sync_agent(agent)
    fresh = BidiAgent(
        model=_SilentBidiModel(),
        session_manager=StateVCSSessionManager(repo, branch="voice"),
        agent_id="voice",
    )
    assert fresh.messages == [{"role": "user", "content": [{"text": "hola"}]}]
    assert [c.message for c in repo.log("voice")] == ["turn 0: sync", "start session"]
