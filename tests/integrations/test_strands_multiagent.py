"""Swarm and Graph: one commit per node call holds the orchestrator and all its node agents."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from strands import Agent
from strands.multiagent import GraphBuilder, Status, Swarm

import statevcs
from statevcs.integrations.strands import KIND_GRAPH, KIND_SWARM, StateVCSSessionManager
from statevcs.integrations.strands.testing import ScriptedModel, ToolCall

from .conftest import snapshot_data


def _agent(name: str, script: list[Any]) -> Agent:
    return Agent(name=name, model=ScriptedModel(script), callback_handler=None)


def _swarm(session: StateVCSSessionManager | None, planner: list[Any], booker: list[Any]) -> Swarm:
    return Swarm(
        [_agent("planner", planner), _agent("booker", booker)],
        session_manager=session,
        id="trip-swarm",
    )


HANDOFF = [ToolCall("handoff_to_agent", {"agent_name": "booker", "message": "book it"}), "Over."]


def test_swarm_commits_every_node_and_restores_as_a_whole(repo: statevcs.Repo) -> None:
    swarm = _swarm(StateVCSSessionManager(repo, branch="swarm"), HANDOFF, ["Booked Baixa."])
    result = swarm("Plan and book Lisbon")
    assert result.status == Status.COMPLETED
    log = [c.message for c in reversed(list(repo.log("swarm")))]
    assert log == ["start session", "node planner", "node booker", "invocation 1"]
    stored = repo.show("swarm")
    assert stored.kind == KIND_SWARM
    assert list(stored.extras["nodes"]) == ["planner", "booker"]
    nodes = swarm.nodes

    restored = _swarm(StateVCSSessionManager(repo, branch="swarm"), [], [])
    for name in ("planner", "booker"):
        assert snapshot_data(restored.nodes[name].executor) == snapshot_data(nodes[name].executor)


def test_swarm_killed_after_the_first_node_resumes_at_the_next_node(repo: statevcs.Repo) -> None:
    swarm = _swarm(StateVCSSessionManager(repo, branch="swarm"), HANDOFF, ["Booked Baixa."])
    swarm("Plan and book Lisbon")
    # Pretend the process died right after the planner node was committed.
    repo.branch("after-planner", rev="swarm~2")
    assert repo.get_commit("after-planner").message == "node planner"

    resumed = _swarm(
        StateVCSSessionManager(repo, branch="after-planner"), [], ["Booked on resume."]
    )
    state = resumed.serialize_state()
    assert state["status"] == "executing"
    assert state["next_nodes_to_execute"] == ["booker"]
    assert len(resumed.nodes["planner"].executor.messages) == 4
    result = resumed("Plan and book Lisbon")  # the planner's model has no script: not re-run
    assert result.status == Status.COMPLETED
    assert str(result.results["booker"].result).strip() == "Booked on resume."
    assert [c.message for c in repo.log("after-planner", limit=2)] == [
        "invocation 1",
        "node booker",
    ]


def test_checkout_of_any_swarm_commit_into_a_live_swarm(repo: statevcs.Repo) -> None:
    swarm = _swarm(None, HANDOFF, ["Booked Baixa."])
    repo.commit(swarm, "before")
    swarm("Plan and book Lisbon")
    repo.commit(swarm, "after")
    after_planner = snapshot_data(swarm.nodes["planner"].executor)
    repo.checkout(swarm, "main~1")
    assert swarm.nodes["planner"].executor.messages == []
    repo.checkout(swarm, "main")
    assert snapshot_data(swarm.nodes["planner"].executor) == after_planner
    with pytest.raises(statevcs.UnsupportedObject, match=r"strands\.swarm"):
        repo.checkout(_agent("planner", []), "main")


def _graph(session: StateVCSSessionManager | None, research: list[Any], write: list[Any]) -> Any:
    builder = GraphBuilder()
    builder.add_node(_agent("research", research), "research")
    builder.add_node(_agent("write", write), "write")
    builder.add_edge("research", "write")
    builder.set_graph_id("article")
    if session is not None:
        builder.set_session_manager(session)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "execution is unbounded": fine for two nodes
        return builder.build()


def test_graph_commits_every_node_and_resumes_mid_run(repo: statevcs.Repo) -> None:
    graph = _graph(
        StateVCSSessionManager(repo, branch="graph"), ["Lisbon has trams."], ["Article."]
    )
    result = graph("Write about Lisbon")
    assert result.status == Status.COMPLETED
    log = [c.message for c in reversed(list(repo.log("graph")))]
    assert log == ["start session", "node research", "node write", "invocation 1"]
    assert repo.show("graph").kind == KIND_GRAPH

    repo.branch("after-research", rev="graph~2")
    resumed = _graph(StateVCSSessionManager(repo, branch="after-research"), [], ["Resumed."])
    assert resumed.serialize_state()["next_nodes_to_execute"] == ["write"]
    research = resumed.nodes["research"].executor
    assert [m["content"][0]["text"] for m in research.messages][-1] == "Lisbon has trams."
    result = resumed("Write about Lisbon")
    assert result.status == Status.COMPLETED
    assert str(result.results["write"].result).strip() == "Resumed."


def test_orchestrator_id_mismatch_is_refused(repo: statevcs.Repo) -> None:
    swarm = _swarm(None, [], [])
    repo.commit(swarm, "one")
    other = Swarm([_agent("planner", []), _agent("booker", [])], id="another-swarm")
    with pytest.raises(statevcs.StateVCSError, match="trip-swarm"):
        repo.checkout(other, "main")
