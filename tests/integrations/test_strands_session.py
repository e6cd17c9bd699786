"""StateVCSSessionManager and AutoCommit: commit on lifecycle events, resume after restarts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from strands.agent.conversation_manager import NullConversationManager

import statevcs
from statevcs.integrations.strands import AutoCommit, StateVCSSessionManager
from statevcs.integrations.strands.testing import Reply, ToolCall

from .conftest import AgentFactory, snapshot_data

SCRIPT = ["Lisbon plan.", ToolCall("search", {"query": "Sintra"}), "Sintra added."]


def _messages(repo: statevcs.Repo, branch: str) -> list[str]:
    return [commit.message for commit in reversed(list(repo.log(branch)))]


def _run(agent: Any) -> None:
    agent("Plan a trip to Lisbon")
    agent("Add a day in Sintra")


@pytest.mark.parametrize(
    ("commit_on", "expected"),
    [
        ("invocation", ["start session", "turn 1", "turn 2"]),
        (
            "message",
            [
                "start session",
                "turn 1: user",
                "turn 1: assistant",
                "turn 2: user",
                "turn 2: assistant",
                "turn 2: tool search",
                "turn 2: assistant",
            ],
        ),
        ("tool_call", ["start session", "turn 1: end", "tool search", "turn 2: end"]),
    ],
)
def test_commit_on_modes(
    commit_on: Any, expected: list[str], make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    session = StateVCSSessionManager(repo, branch="session-42", commit_on=commit_on)
    agent = make_agent(SCRIPT, session_manager=session)
    _run(agent)
    assert _messages(repo, "session-42") == expected
    head = repo.get_commit("session-42")
    assert head.metadata["turn"] == 2
    assert snapshot_data(
        make_agent([], session_manager=StateVCSSessionManager(repo, branch="session-42"))
    ) == snapshot_data(agent)


def test_every_message_commit_is_a_consistent_checkpoint(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    session = StateVCSSessionManager(repo, branch="s", commit_on="message")
    agent = make_agent(SCRIPT, session_manager=session)
    _run(agent)
    for commit in repo.log("s"):
        messages = repo.show(commit.id).messages
        if commit.metadata["event"] == "message":
            # The checkpoint ends with the message it is named after.
            assert messages[-1]["role"] == commit.metadata["role"]


def test_resume_in_a_fresh_agent_and_a_fresh_repo_object(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(SCRIPT, session_manager=StateVCSSessionManager(repo, branch="s"))
    _run(agent)
    expected = snapshot_data(agent)

    resumed = make_agent(["Porto too."], session_manager=StateVCSSessionManager(repo, branch="s"))
    assert snapshot_data(resumed) == expected
    resumed("And Porto?")
    assert _messages(repo, "s")[-1] == "turn 3"
    expected = snapshot_data(resumed)

    folder = repo.url
    repo.close()
    with statevcs.Repo.open(folder) as reopened:
        again = make_agent([], session_manager=StateVCSSessionManager(reopened, branch="s"))
        assert snapshot_data(again) == expected
        assert reopened.fsck().ok


CHILD = textwrap.dedent(
    """
    import json, os, sys
    import statevcs
    from strands import Agent, tool
    from statevcs.integrations.strands import StateVCSSessionManager
    from statevcs.integrations.strands.testing import ScriptedModel, ToolCall

    @tool
    def search(query: str) -> str:
        '''Search.'''
        return "results for " + query

    repo = statevcs.Repo.open(sys.argv[1])
    session = StateVCSSessionManager(repo, branch="crash", commit_on=sys.argv[2])
    agent = Agent(
        model=ScriptedModel(["Plan.", ToolCall("search", {"query": "Sintra"}), "Sintra."],
                            response_ids=True),
        tools=[search],
        session_manager=session,
        callback_handler=None,
        system_prompt="You plan trips.",
    )
    agent("Plan Lisbon")
    agent("Add Sintra")
    fields = ["messages", "state", "conversation_manager_state", "interrupt_state",
              "system_prompt", "model_state"]
    data = agent.take_snapshot(include=fields).data
    with open(sys.argv[3], "w") as out:
        json.dump(data, out)
    os._exit(0)  # no atexit, no close(), no flushing of anything statevcs might buffer
    """
)


@pytest.mark.parametrize("commit_on", ["invocation", "message"])
def test_a_killed_process_loses_nothing(
    commit_on: str, make_agent: AgentFactory, tmp_path: Path, repo: statevcs.Repo
) -> None:
    out = tmp_path / f"child-{commit_on}.json"
    folder = repo.url
    subprocess.run(
        [sys.executable, "-c", CHILD, folder, commit_on, str(out)],
        check=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    expected = json.loads(out.read_text())
    with statevcs.Repo.open(folder) as reopened:
        resumed = make_agent([], session_manager=StateVCSSessionManager(reopened, branch="crash"))
        assert snapshot_data(resumed) == expected
        assert len(resumed.messages) == 6


def test_guardrail_redaction_never_reaches_the_repository(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    for commit_on in ("message", "tool_call", "invocation"):
        session = StateVCSSessionManager(repo, branch=f"redact-{commit_on}", commit_on=commit_on)
        agent = make_agent(
            ["Hello.", Reply("I removed that.", redact_user="[redacted]")], session_manager=session
        )
        agent("hello")
        agent("my card is 4111 1111 1111 1111")
        assert agent.messages[2]["content"] == [{"text": "[redacted]"}]
        for commit in repo.log(f"redact-{commit_on}"):
            stored = json.dumps(repo.show(commit.id).messages)
            assert "4111 1111" not in stored, (commit_on, commit.message)
        assert "[redacted]" in json.dumps(repo.show(f"redact-{commit_on}").messages)


def test_new_branch_can_start_from_a_revision(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(SCRIPT, session_manager=StateVCSSessionManager(repo, branch="main"))
    _run(agent)
    fork = make_agent(
        ["Cheaper."], session_manager=StateVCSSessionManager(repo, branch="fork", start="main~1")
    )
    assert len(fork.messages) == 2
    fork("Make it cheaper")
    assert [m["content"][0]["text"] for m in repo.show("fork").messages] == [
        "Plan a trip to Lisbon",
        "Lisbon plan.",
        "Make it cheaper",
        "Cheaper.",
    ]
    assert len(repo.show("main").messages) == 6


def test_misuse_gives_clear_errors(make_agent: AgentFactory, repo: statevcs.Repo) -> None:
    session = StateVCSSessionManager(repo, branch="one")
    first = make_agent([], session_manager=session)
    with pytest.raises(statevcs.StateVCSError, match="own StateVCSSessionManager"):
        make_agent([], session_manager=session)
    with pytest.raises(statevcs.StateVCSError, match="commit_on must be one of"):
        StateVCSSessionManager(repo, branch="x", commit_on="sometimes")  # type: ignore[arg-type]
    with pytest.raises(statevcs.InvalidRefName):
        StateVCSSessionManager(repo, branch="bad name")
    other = make_agent([], conversation_manager=NullConversationManager())
    with pytest.raises(statevcs.StateVCSError, match="conversation_manager=Sliding"):
        repo.checkout(other, "one")
    assert first.messages == []


def test_autocommit_keeps_your_own_session_manager(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(SCRIPT, hooks=[AutoCommit(repo, on="tool_call")])
    _run(agent)
    assert _messages(repo, "main") == ["turn 1: end", "tool search", "turn 2: end"]
    assert repo.show("main").messages[-1]["content"][0]["text"] == "Sintra added."

    repo.branch("experiment", rev="main~1")
    repo.checkout(agent, "experiment")  # AutoCommit follows the branch the agent is on
    agent.model = make_agent(["Experiment answer."]).model
    agent("Try something else")
    assert _messages(repo, "experiment")[-1] == "turn 3: end"
    assert len(repo.show("main").messages) == 6

    pinned = make_agent(["Pinned."], hooks=[AutoCommit(repo, on="invocation", branch="pinned")])
    pinned("hi")
    assert _messages(repo, "pinned") == ["turn 1"]


def test_a_retried_model_call_that_redacts_still_keeps_the_prompt_out(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    from strands import ModelRetryStrategy
    from strands.types.exceptions import ModelThrottledException

    def throttled(messages: list[Any]) -> str:
        raise ModelThrottledException("slow down")

    session = StateVCSSessionManager(repo, branch="retry", commit_on="message")
    agent = make_agent(
        [throttled, Reply("Removed.", redact_user="[redacted]")],
        session_manager=session,
        retry_strategy=ModelRetryStrategy(max_attempts=2, initial_delay=0, max_delay=0),
    )
    agent("card 4111 1111 1111 1111")
    for commit in repo.log("retry"):
        assert "4111 1111" not in json.dumps(repo.show(commit.id).messages), commit.message
    assert repo.show("retry").messages[0]["content"] == [{"text": "[redacted]"}]
