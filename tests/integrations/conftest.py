"""Shared fixtures for the Strands integration tests: real agents, scripted models, no network."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, ToolContext, tool

import statevcs
from statevcs.integrations.strands.testing import ScriptedModel, ScriptItem

ALL_FIELDS: list[Any] = [
    "messages",
    "state",
    "conversation_manager_state",
    "interrupt_state",
    "system_prompt",
    "model_state",
]


@tool
def search(query: str) -> str:
    """Search travel guides for ``query``."""
    return f"Guides about {query}: trams, tiles and pastries."


@tool(context=True)
def remember(key: str, value: str, tool_context: ToolContext) -> str:
    """Store a fact in the agent's state."""
    tool_context.agent.state.set(key, value)
    return f"remembered {key}"


@tool(context=True)
def approve(amount: int, tool_context: ToolContext) -> str:
    """Ask a human to approve a spend (interrupts the agent)."""
    answer = tool_context.interrupt("approval", reason={"amount": amount})
    return f"approved: {answer}"


def snapshot_data(agent: Any) -> dict[str, Any]:
    """Everything ``take_snapshot`` captures (``created_at`` lives outside ``data``)."""
    return dict(agent.take_snapshot(include=ALL_FIELDS).data)


AgentFactory = Callable[..., Agent]


@pytest.fixture
def make_agent() -> AgentFactory:
    """Build a real Strands agent on a ScriptedModel."""

    def factory(script: list[ScriptItem] | None = None, **kwargs: Any) -> Agent:
        model = kwargs.pop("model", None) or ScriptedModel(script or [], response_ids=True)
        kwargs.setdefault("tools", [search, remember, approve])
        kwargs.setdefault("callback_handler", None)
        kwargs.setdefault("system_prompt", "You plan trips.")
        return Agent(model=model, **kwargs)

    return factory


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every Strands test that takes ``repo`` on SQLite and on S3."""
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if "repo" in metafunc.fixturenames and module.startswith("test_strands"):
        metafunc.parametrize("repo", ["sqlite", "s3"], indirect=True)


@pytest.fixture
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[statevcs.Repo]:
    """A fresh repository: for the Strands tests on SQLite and on S3 (a SeaweedFS server);
    for the other integrations' tests a SQLite one at ``tmp_path / "repo"``."""
    where = getattr(request, "param", None)
    target: str | Path = (
        request.getfixturevalue("s3_url")
        if where == "s3"
        else tmp_path / ("history" if where == "sqlite" else "repo")
    )
    repository = statevcs.Repo.init(target)
    yield repository
    repository.close()
