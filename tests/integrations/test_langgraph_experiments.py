"""fork, replay and compare on real LangGraph graphs with the StateVCSSaver (issue 19, part 1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

import statevcs
from statevcs.errors import RefExists, StateVCSError
from statevcs.experiments import Driver, compare, fork, replay, turn_commit, turns
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph.experiments import LangGraphDriver

from .langgraph_support import ChatState, chat_graph

QUESTIONS = [
    "Plan a day in Lisbon",
    "weather in Lisbon?",
    "Which museums?",
    "weather in Porto?",
    "And food?",
    "weather in Faro?",
]


def terse_graph(saver: StateVCSSaver) -> CompiledStateGraph[Any]:
    """Another graph for the same thread: one line per question, no tools."""

    def answer(state: ChatState) -> dict[str, Any]:
        turn = state.get("turns", 0) + 1
        return {"messages": [AIMessage(f"terse {turn}", id=f"terse-{turn}")], "turns": turn}

    graph = StateGraph(ChatState)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer=saver)


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[StateVCSSaver]:
    with statevcs.Repo.init(tmp_path / "repo") as repo:
        yield StateVCSSaver(repo)


def run_source(saver: StateVCSSaver) -> CompiledStateGraph[Any]:
    app = chat_graph(saver)
    config = {"configurable": {"thread_id": "trip"}}
    for i, question in enumerate(QUESTIONS):
        app.invoke({"messages": [HumanMessage(question, id=f"user-{i}")]}, config)
    return app


def test_turns_of_a_thread_end_at_the_step_adding_the_last_reply(saver: StateVCSSaver) -> None:
    repo = saver.repo
    run_source(saver)
    found = turns(repo, "threads/trip")
    assert [t.text for t in found] == QUESTIONS
    assert [c.name for c in found[1].tool_calls] == ["weather"]
    for turn in found:
        assert turn.commit is not None
        commit = repo.get_commit(turn.commit)
        assert commit.metadata["metadata"]["source"] == "loop"  # not the next input step
        assert len(repo.show(turn.commit).messages) >= turn.end


def test_fork_starts_a_new_thread_at_any_checkpoint(saver: StateVCSSaver) -> None:
    repo = saver.repo
    app = run_source(saver)
    at = turn_commit(repo, "threads/trip", 3)
    before = repo.stats().objects
    forked = fork(repo, LangGraphDriver(app), at, branch="trip-b")
    assert repo.stats().objects == before  # a new branch, no object
    assert forked.branch == "threads/trip-b"
    values = app.get_state(forked.agent.config).values
    assert values["turns"] == 4  # agent steps: one per question, two for the tool call
    assert [m.content for m in values["messages"] if isinstance(m, HumanMessage)] == QUESTIONS[:3]
    forked.agent.invoke({"messages": [HumanMessage("Somewhere else?", id="user-x")]})
    assert repo.merge_base("threads/trip", "threads/trip-b") == at
    assert app.get_state({"configurable": {"thread_id": "trip"}}).values["turns"] == 9
    with pytest.raises(RefExists):
        fork(repo, LangGraphDriver(app), at, branch="trip-b")


def test_replay_sends_the_user_turns_to_another_graph(saver: StateVCSSaver) -> None:
    repo = saver.repo
    run_source(saver)
    at = turn_commit(repo, "threads/trip", 2)
    driver = LangGraphDriver(terse_graph(saver))
    assert isinstance(driver, Driver)
    result = replay(
        repo, driver, f"{at}..threads/trip", branch="trip-terse", changes={"graph": "terse"}
    )
    assert result.branches == ("threads/trip", "threads/trip-terse")
    assert [t.index for t in result.turns] == [3, 4, 5, 6]
    sources = [t.commit for t in turns(repo, f"{at}..threads/trip")]
    assert [t.source for t in result.turns] == sources
    meta = repo.get_commit("threads/trip-terse").metadata["metadata"]
    assert meta["replay_source"] == sources[-1] and meta["replay_turn"] == 6
    assert meta["replay_changes"] == '{"graph": "terse"}'
    state = driver.graph.get_state(result.agent.config).values
    humans = [m for m in state["messages"] if isinstance(m, HumanMessage)]
    assert [m.content for m in humans] == QUESTIONS
    assert [m.id for m in humans] == [f"user-{i}" for i in range(6)]  # the same messages

    result_cmp = compare(repo, "threads/trip", "threads/trip-terse")
    assert result_cmp.diverged == [3, 4, 5, 6]
    fourth = result_cmp.turns[3]
    assert fourth.tools_only_a == ("weather",) and fourth.tools_only_b == ()
    assert fourth.messages.changes[0].index == 1  # the same question, another answer
    assert [c.key for c in fourth.state] == ["turns"]


def test_the_driver_refuses_a_graph_it_cannot_drive(saver: StateVCSSaver) -> None:
    with pytest.raises(TypeError, match="compiled"):
        LangGraphDriver("graph")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="StateVCSSaver"):
        LangGraphDriver(chat_graph(InMemorySaver()))
    other = StateVCSSaver(statevcs.Repo.init("memory://"))
    run_source(saver)
    with pytest.raises(StateVCSError, match="another repository"):
        fork(saver.repo, LangGraphDriver(terse_graph(other)), "threads/trip", branch="x")
    with pytest.raises(StateVCSError, match="thread"):
        LangGraphDriver(chat_graph(saver)).restore(saver.repo, "main", keep_settings=False)
