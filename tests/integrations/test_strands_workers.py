"""Several workers on one session branch: no turn is ever lost, conflicts surface, reload recovers.

Each worker has its own ``Repo`` handle on one folder, as two processes or hosts would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import statevcs
from statevcs.integrations.strands import AutoCommit, StateVCSSessionManager, agent_adapter
from statevcs.integrations.strands.testing import ToolCall

from .conftest import AgentFactory, snapshot_data


def _texts(messages: list[Any]) -> list[str]:
    return [m["content"][0].get("text", "(tool)") for m in messages]


def _head(repo: statevcs.Repo, branch: str = "shared") -> list[str]:
    return _texts(repo.show(branch).messages)


@pytest.fixture
def handles(repo: statevcs.Repo) -> Iterator[tuple[statevcs.Repo, statevcs.Repo]]:
    """Two more handles on the ``repo`` folder: worker A's and worker B's."""
    first, second = statevcs.Repo.open(repo.url), statevcs.Repo.open(repo.url)
    yield first, second
    first.close()
    second.close()


def _worker(
    make_agent: AgentFactory, repo: statevcs.Repo, script: list[Any], **options: Any
) -> tuple[Any, StateVCSSessionManager]:
    session = StateVCSSessionManager(repo, branch="shared", **options)
    return make_agent(script, session_manager=session), session


def test_a_stale_worker_turn_raises_before_it_starts_and_loses_nothing(
    make_agent: AgentFactory, handles: tuple[statevcs.Repo, statevcs.Repo]
) -> None:
    repo_a, repo_b = handles
    agent_a, _ = _worker(make_agent, repo_a, ["Answer A."])
    agent_b, session_b = _worker(make_agent, repo_b, ["Answer B.", "Answer B again."])
    agent_a("Question A")

    with pytest.raises(statevcs.RefConflict, match=r"session_manager\.reload\(\)") as caught:
        agent_b("Question B")
    assert caught.value.actual == repo_a.resolve("shared")
    assert agent_b.model.calls == 0  # type: ignore[attr-defined]
    assert agent_b.messages == []
    assert _head(repo_a) == ["Question A", "Answer A."]

    head = session_b.reload()
    assert head.id == repo_a.resolve("shared")
    assert snapshot_data(agent_b)["messages"] == snapshot_data(agent_a)["messages"]
    agent_b("Question B")
    assert _head(repo_a) == ["Question A", "Answer A.", "Question B", "Answer B."]
    assert [c.message for c in repo_a.log("shared")] == ["turn 2", "turn 1", "start session"]


@pytest.mark.parametrize("commit_on", ["invocation", "message", "tool_call"])
def test_a_conflict_at_the_end_of_a_call_raises_and_the_agent_keeps_its_turn(
    commit_on: str, make_agent: AgentFactory, handles: tuple[statevcs.Repo, statevcs.Repo]
) -> None:
    repo_a, repo_b = handles
    agent_a, _ = _worker(make_agent, repo_a, ["Answer A."], commit_on=commit_on)

    def meanwhile(messages: list[Any]) -> str:
        agent_a("Question A")  # worker A finishes a turn while B's model call streams
        return "Answer B."

    agent_b, session_b = _worker(
        make_agent, repo_b, [meanwhile, "Answer B again."], commit_on=commit_on
    )
    start = repo_b.resolve("shared")
    with pytest.raises(statevcs.RefConflict, match="Nothing was written") as caught:
        agent_b("Question B")
    assert caught.value.expected == start
    assert _head(repo_a) == ["Question A", "Answer A."]
    assert _texts(agent_b.messages)[0] == "Question B"  # the unsaved turn is still in the agent

    session_b.reload()
    assert _texts(agent_b.messages) == ["Question A", "Answer A."]
    agent_b("Question B")
    assert _head(repo_a) == ["Question A", "Answer A.", "Question B", "Answer B again."]
    assert repo_a.fsck().ok


def test_merge_mode_keeps_both_workers_changes_to_different_state_keys(
    make_agent: AgentFactory, handles: tuple[statevcs.Repo, statevcs.Repo]
) -> None:
    repo_a, repo_b = handles
    agent_a, session_a = _worker(make_agent, repo_a, ["Answer A."], on_conflict="merge")
    agent_b, _session_b = _worker(
        make_agent,
        repo_b,
        [ToolCall("remember", {"key": "city", "value": "Lisbon"}), "Noted."],
        on_conflict="merge",
    )
    # Worker A changes only state; worker B runs a whole turn that also sets state.
    agent_a.state.set("budget", 900)
    assert session_a.close() is not None

    agent_b("Remember Lisbon")
    head = repo_b.get_commit("shared")
    assert len(head.parents) == 2  # a merge commit: A's close, then B's turn
    stored = repo_b.show("shared")
    assert stored.state == {"budget": 900, "city": "Lisbon"}
    assert _texts(stored.messages)[0] == "Remember Lisbon"
    assert len(stored.messages) == 4
    # The merged state is loaded into B's live agent, which is now synced with the merge.
    assert agent_b.state.get() == {"budget": 900, "city": "Lisbon"}
    assert repo_b.synced_commit(agent_b) == head.id

    # Worker A is stale now; its next state-only change merges the other way round.
    agent_a.state.set("travellers", 2)
    session_a.close()
    assert repo_a.show("shared").state == {"budget": 900, "city": "Lisbon", "travellers": 2}
    assert len(repo_a.show("shared").messages) == 4

    # A resumed session continues the turn count across merge commits.
    again = make_agent(["Later."], session_manager=StateVCSSessionManager(repo_a, branch="shared"))
    again("And then?")
    assert repo_a.get_commit("shared").metadata["turn"] == 2
    assert repo_a.fsck().ok


def test_merge_mode_raises_merge_conflict_when_both_workers_appended_messages(
    make_agent: AgentFactory, handles: tuple[statevcs.Repo, statevcs.Repo]
) -> None:
    repo_a, repo_b = handles
    agent_a, _ = _worker(make_agent, repo_a, ["Answer A."], on_conflict="merge")
    agent_b, session_b = _worker(make_agent, repo_b, ["Answer B."], on_conflict="merge")
    agent_a("Question A")
    before = repo_a.refs.as_hex()

    with pytest.raises(statevcs.MergeConflict, match="its own branch") as caught:
        agent_b("Question B")
    assert caught.value.messages
    assert repo_a.refs.as_hex() == before
    assert _head(repo_a) == ["Question A", "Answer A."]
    assert _texts(agent_b.messages) == ["Question B", "Answer B."]

    # Keep B's turn on a branch of its own; it forks from the commit B last synced with.
    repo_b.commit(agent_b, "worker B", branch="worker-b")
    assert _texts(repo_b.show("worker-b").messages) == ["Question B", "Answer B."]
    assert _head(repo_a) == ["Question A", "Answer A."]
    assert session_b.on_conflict == "merge"


def test_workers_starting_one_new_session_at_once_share_one_start(
    make_agent: AgentFactory,
    handles: tuple[statevcs.Repo, statevcs.Repo],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo_a, _repo_b = handles
    adapter = agent_adapter()
    capture = adapter.capture
    started: list[Any] = []

    def a_wins_the_race(obj: Any) -> statevcs.Snapshot:
        if not started:
            # Between B finding no branch and B storing its start, A starts the session and
            # finishes a turn.
            started.append(obj)
            agent_a, _ = _worker(make_agent, repo_a, ["Answer A."])
            agent_a("Question A")
        return capture(obj)

    monkeypatch.setattr(adapter, "capture", a_wins_the_race)
    agent_b, _ = _worker(make_agent, _repo_b, ["Answer B."])
    assert started
    assert _texts(agent_b.messages) == ["Question A", "Answer A."]
    assert [c.message for c in repo_a.log("shared")] == ["turn 1", "start session"]
    agent_b("Question B")
    assert _head(repo_a) == ["Question A", "Answer A.", "Question B", "Answer B."]


def test_autocommit_conflicts_say_how_to_recover(
    make_agent: AgentFactory, handles: tuple[statevcs.Repo, statevcs.Repo]
) -> None:
    repo_a, repo_b = handles
    first = make_agent(["One."], hooks=[AutoCommit(repo_a, on="invocation", branch="auto")])
    first("hi")
    second = make_agent(["Two.", "Three."], hooks=[AutoCommit(repo_b, on="invocation")])
    repo_b.checkout(second, "auto")
    first.model = make_agent(["Four."]).model
    first("again")
    with pytest.raises(statevcs.RefConflict, match=r"repo\.checkout\(agent, 'auto'\)"):
        second("hello")
    repo_b.checkout(second, "auto")
    second("hello")
    assert _texts(repo_a.show("auto").messages) == ["hi", "One.", "again", "Four.", "hello", "Two."]


def test_reload_and_option_misuse_give_clear_errors(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    session = StateVCSSessionManager(repo, branch="solo")
    with pytest.raises(statevcs.StateVCSError, match="no agent to reload yet"):
        session.reload()
    agent = make_agent([], session_manager=session)
    with pytest.raises(statevcs.StateVCSError, match="not the object passed"):
        session.reload(make_agent([]))
    assert session.reload(agent).message == "start session"
    with pytest.raises(statevcs.StateVCSError, match="on_conflict must be one of"):
        StateVCSSessionManager(repo, on_conflict="retry")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="on_conflict must be a str"):
        StateVCSSessionManager(repo, on_conflict=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"repo must be a statevcs\.Repo"):
        StateVCSSessionManager("history")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="branch must be a str"):
        StateVCSSessionManager(repo, branch=None)  # type: ignore[arg-type]
    repo.switch("solo")
    repo.branch("elsewhere", rev="solo")
    repo.switch("elsewhere")
    repo.delete_branch("solo")
    with pytest.raises(statevcs.RefNotFound, match="no longer exists"):
        session.reload()


# --- commit on close (commit_on="invocation") -------------------------------------------------


def test_close_commits_state_set_after_the_last_call(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    session = StateVCSSessionManager(repo, branch="s")
    agent = make_agent(["Done."], session_manager=session)
    agent("Plan it")
    agent.state.set("approved", True)

    closed = session.close()
    assert closed is not None and closed.message == "turn 1: close"
    assert closed.metadata == {"event": "close", "turn": 1}
    assert session.close() is None  # nothing changed since

    resumed_session = StateVCSSessionManager(repo, branch="s")
    resumed = make_agent([], session_manager=resumed_session)
    assert resumed.state.get("approved") is True
    assert snapshot_data(resumed) == snapshot_data(agent)
    assert resumed_session.close() is None  # a resume alone changes nothing
    assert [c.message for c in repo.log("s")] == ["turn 1: close", "turn 1", "start session"]


def test_leaving_the_with_block_commits_but_not_after_an_error(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    with StateVCSSessionManager(repo, branch="w") as session:
        agent = make_agent(["Done."], session_manager=session)
        agent("Plan it")
        agent.state.set("note", "after the call")
    assert repo.show("w").state == {"note": "after the call"}

    with pytest.raises(RuntimeError), StateVCSSessionManager(repo, branch="w") as session:
        agent = make_agent([], session_manager=session)
        agent.state.set("note", "half done")
        raise RuntimeError("the worker failed")
    assert repo.show("w").state == {"note": "after the call"}


# --- two real processes -------------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import json, sys
    import statevcs
    from strands import Agent
    from statevcs.integrations.strands import StateVCSSessionManager
    from statevcs.integrations.strands.testing import ScriptedModel

    name = sys.argv[2]
    repo = statevcs.Repo.open(sys.argv[1])
    session = StateVCSSessionManager(repo, branch="shared")
    model = ScriptedModel(default=lambda messages: f"answer from {name}")
    agent = Agent(model=model, session_manager=session, callback_handler=None)

    def texts():
        return [m["content"][0]["text"] for m in agent.messages]

    print(json.dumps({"ready": texts()}), flush=True)
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        try:
            if command == "turn":
                agent(argument)
            elif command == "reload":
                session.reload()
            elif command == "exit":
                break
            print(json.dumps({"ok": texts()}), flush=True)
        except statevcs.StateVCSError as error:
            print(json.dumps({"error": type(error).__name__, "messages": texts()}), flush=True)
    """
)


class _Process:
    def __init__(self, folder: str, name: str, cache: Path) -> None:
        # Its own S3 read cache (``STATEVCS_CACHE_DIR``): each worker is another host.
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(sys.path),
            "STATEVCS_CACHE_DIR": str(cache),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(folder), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.ready = self.read()["ready"]

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"worker exited with {self.process.wait(timeout=60)}"
        return json.loads(line)  # type: ignore[no-any-return]

    def send(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.read()

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # the worker's loop ends at end of input
        self.process.wait(timeout=60)


def test_two_processes_on_one_session_branch_lose_no_turn(
    repo: statevcs.Repo, tmp_path: Path
) -> None:
    folder = repo.url
    first = _Process(folder, "A", tmp_path / "cache-host-a")
    second = _Process(folder, "B", tmp_path / "cache-host-b")
    try:
        assert first.ready == second.ready == []
        assert first.send("turn question-A") == {"ok": ["question-A", "answer from A"]}
        assert second.send("turn question-B") == {"error": "RefConflict", "messages": []}
        assert _head(repo) == ["question-A", "answer from A"]

        assert second.send("reload") == {"ok": ["question-A", "answer from A"]}
        assert second.send("turn question-B")["ok"][-2:] == ["question-B", "answer from B"]
        assert first.send("turn follow-up")["error"] == "RefConflict"
        assert first.send("reload")["ok"][-1] == "answer from B"
        first.send("turn follow-up")
    finally:
        first.stop()
        second.stop()
    assert _head(repo) == [
        "question-A",
        "answer from A",
        "question-B",
        "answer from B",
        "follow-up",
        "answer from A",
    ]
    assert [c.metadata.get("turn") for c in repo.log("shared")] == [3, 2, 1, 0]
    assert repo.fsck().ok
    if repo.url.startswith("s3://"):  # each host kept its own read cache
        for host in ("cache-host-a", "cache-host-b"):
            assert list((tmp_path / host / "s3").glob("*.sqlite3")), host


def test_a_stale_swarm_raises_before_it_starts_and_reload_recovers(
    handles: tuple[statevcs.Repo, statevcs.Repo],
) -> None:
    from strands import Agent
    from strands.multiagent import Swarm

    from statevcs.integrations.strands.testing import ScriptedModel

    def swarm(repo: statevcs.Repo, answer: str) -> tuple[Swarm, StateVCSSessionManager]:
        session = StateVCSSessionManager(repo, branch="swarm")
        node = Agent(name="planner", model=ScriptedModel(default=answer), callback_handler=None)
        return Swarm([node], session_manager=session, id="trip-swarm"), session

    repo_a, repo_b = handles
    first, _ = swarm(repo_a, "Plan A.")
    second, second_session = swarm(repo_b, "Plan B.")
    first("Plan Lisbon")
    head = repo_a.resolve("swarm")

    with pytest.raises(statevcs.RefConflict, match=r"reload\(\)"):
        second("Plan Porto")
    assert repo_a.resolve("swarm") == head
    assert second.nodes["planner"].executor.messages == []

    second_session.reload()
    restored = _texts(second.nodes["planner"].executor.messages)
    assert "Plan Lisbon" in restored[0] and restored[1:] == ["Plan A."]
    assert second_session.close() is None  # freshly reloaded: nothing to commit
    second("Plan Porto")
    stored = _texts(repo_a.show("swarm").messages)
    assert "Plan Porto" in stored[-2] and stored[-1] == "Plan B."
    assert repo_a.get_commit("swarm").metadata == {"event": "invocation", "invocation": 2}
