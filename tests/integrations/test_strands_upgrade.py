"""The Strands session manager across ``Repo.upgrade``: a session written in storage format 1
resumes exactly after the upgrade, and a running session keeps committing through it."""

from __future__ import annotations

from pathlib import Path

import pytest

import statevcs
from statevcs.errors import RefConflict
from statevcs.integrations.strands import StateVCSSessionManager
from statevcs.integrations.strands.testing import ToolCall

from .conftest import AgentFactory, snapshot_data

SCRIPT = [
    *(f"Day {i}: " + "museums and lunch by the river. " * 8 for i in range(12)),
    ToolCall("search", {"query": "Sintra"}),
    "Sintra added.",
]


def _turns(agent: object, count: int) -> None:
    for i in range(count):
        agent(f"Plan day {i} of the trip to Lisbon")  # type: ignore[operator]


def test_a_format_1_session_resumes_exactly_after_the_upgrade(
    tmp_path: Path, make_agent: AgentFactory
) -> None:
    folder = tmp_path / "repo"
    statevcs.Repo.init(folder, storage_format=1).close()
    with statevcs.Repo.open(folder) as repo:
        agent = make_agent(
            SCRIPT, session_manager=StateVCSSessionManager(repo, branch="s", commit_on="message")
        )
        _turns(agent, 10)
        before = snapshot_data(agent)
    with statevcs.Repo.open(folder) as repo:
        assert repo.upgrade().commits_rewritten > 0
    with statevcs.Repo.open(folder) as repo:
        resumed = make_agent(
            SCRIPT[10:],
            session_manager=StateVCSSessionManager(repo, branch="s", commit_on="message"),
        )
        assert snapshot_data(resumed) == before
        _turns(resumed, 2)
        after = snapshot_data(resumed)
        assert repo.fsck().ok
    with statevcs.Repo.open(folder) as repo:
        again = make_agent([], session_manager=StateVCSSessionManager(repo, branch="s"))
        assert snapshot_data(again) == after


def test_a_running_session_reloads_after_the_upgrade_and_loses_nothing(
    tmp_path: Path, make_agent: AgentFactory
) -> None:
    """The upgrade moves the branch to an equal commit with another id: a session synced
    before it is told so (``RefConflict``, nothing written, the model not called), reloads,
    and goes on with the same conversation."""
    folder = tmp_path / "repo"
    statevcs.Repo.init(folder, storage_format=1).close()
    with statevcs.Repo.open(folder) as repo:
        session = StateVCSSessionManager(repo, branch="s", commit_on="message")
        agent = make_agent(SCRIPT, session_manager=session)
        _turns(agent, 6)
        committed = snapshot_data(agent)
        with statevcs.Repo.open(folder) as other:
            other.upgrade()
        with pytest.raises(RefConflict):
            _turns(agent, 1)
        session.reload()
        assert snapshot_data(agent) == committed
        _turns(agent, 3)
        expected = snapshot_data(agent)
    with statevcs.Repo.open(folder) as repo:
        assert repo.fsck().ok
        resumed = make_agent([], session_manager=StateVCSSessionManager(repo, branch="s"))
        assert snapshot_data(resumed) == expected
