"""Strands agents and the committed key order: a reorder-only change of ``agent.state`` is a
change (``is_clean`` says so, so the session manager commits it), as it is for a plain dict."""

from __future__ import annotations

import statevcs
from statevcs.integrations.strands import StateVCSSessionManager
from statevcs.integrations.strands.adapters import agent_adapter

from .conftest import AgentFactory


def test_a_reordered_agent_state_is_not_clean(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(["ok"])
    agent.state.set("a", 1)
    agent.state.set("b", {"p": 1, "q": 2})
    agent("hello")
    repo.commit(agent, "first")
    assert agent_adapter().is_clean(agent, repo)
    agent.state.delete("a")
    agent.state.set("a", 1)  # the same values, "a" now last
    assert not agent_adapter().is_clean(agent, repo)
    repo.commit(agent, "reordered")
    assert agent_adapter().is_clean(agent, repo)
    agent.state.set("b", {"q": 2, "p": 1})  # a nested reorder is stored too
    assert not agent_adapter().is_clean(agent, repo)


def test_the_session_manager_commits_a_reorder_only_change(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    session = StateVCSSessionManager(repo, branch="s", commit_on="invocation")
    agent = make_agent(["ok"], session_manager=session)
    agent.state.set("a", 1)
    agent.state.set("b", 2)
    agent("hello")
    agent.state.delete("a")
    agent.state.set("a", 1)
    closed = session.close()
    assert closed is not None  # before: "nothing changed", and the order was lost
    fresh = make_agent([])
    repo.checkout(fresh, "s")
    assert list(fresh.state.get()) == ["b", "a"]


def test_a_checked_out_ordered_agent_is_clean(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(["ok"])
    for key in ("zone", "budget", "Arrival"):
        agent.state.set(key, {"set": key})
    agent("hello")
    repo.commit(agent, "ordered")
    fresh = make_agent([])
    repo.checkout(fresh, "main")
    assert agent_adapter().is_clean(fresh, repo)
    assert list(fresh.state.get()) == ["zone", "budget", "Arrival"]
