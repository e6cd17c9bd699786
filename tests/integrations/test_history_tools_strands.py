"""History tools on a real ``strands.Agent``, driven by the scripted model (no network)."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strands import Agent
from strands.hooks import AfterInvocationEvent, BeforeToolCallEvent
from strands.types.tools import ToolContext

import statevcs
from statevcs.integrations.strands import AutoCommit, StateVCSSessionManager
from statevcs.integrations.strands.testing import Reply, ScriptedModel, ToolCall
from statevcs.integrations.strands.tools import HistoryTools

HYPOTHESIS_EXAMPLES = int(os.environ.get("STATEVCS_HISTORY_TOOLS_EXAMPLES", "30"))


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[statevcs.Repo]:
    with statevcs.Repo.init(tmp_path / "repo") as opened:
        yield opened


def _tool_results(messages: list[Any]) -> list[str]:
    return [
        block["toolResult"]["content"][0]["text"]
        for message in messages
        for block in message["content"]
        if "toolResult" in block
    ]


def _refs(repo: statevcs.Repo) -> dict[str, str]:
    return repo.refs.as_hex()


def test_rollback_head_2_is_applied_after_the_invocation_and_loses_nothing(
    repo: statevcs.Repo,
) -> None:
    during: list[tuple[str, dict[str, str]]] = []

    def after_tool(messages: Any) -> str:
        # The model is called again inside the same invocation: nothing has moved yet.
        during.append((repo.resolve("main"), repo.tags()))
        return "I went back two turns."

    model = ScriptedModel(
        [
            "one",
            "two",
            "three",
            Reply(
                text="Let me undo that.",
                tool_calls=[
                    ToolCall(
                        "rollback",
                        {"revision": "HEAD~2", "reason": "the plan went wrong"},
                        tool_use_id="undo-1",
                    )
                ],
            ),
            after_tool,
            "five",
        ]
    )
    history = HistoryTools(repo)
    session = StateVCSSessionManager(repo, branch="main")
    agent = Agent(model=model, plugins=[history], session_manager=session, callback_handler=None)
    ended: list[Any] = []
    agent.add_hook(
        lambda event: ended.append(copy.deepcopy(event.agent.messages)), AfterInvocationEvent
    )

    agent("a")
    after_first = copy.deepcopy(agent.messages)
    agent("b")
    agent("c")
    tip_before = repo.resolve("main")
    target = repo.resolve("main~2")
    agent("d")

    # During the tool loop the branch stayed at the previous turn's commit, with no tag.
    assert during == [(tip_before, {})]
    # After it: the agent holds the state two commits back (the end of the first turn).
    assert agent.messages == after_first
    assert repo.show(target).messages == after_first
    # The abandoned timeline: exactly the invocation's final state, on top of the old tip.
    abandoned = repo.get_commit("abandoned/main/1")
    assert abandoned.parents == (tip_before,)
    assert repo.show("abandoned/main/1").messages == ended[-1]
    assert len(ended[-1]) == 6 + 4 and ended[-1][-1]["content"] == [
        {"text": "I went back two turns."}
    ]
    assert "scheduled" in _tool_results(ended[-1])[0]
    # The rollback commit: the target's snapshot, the target as its parent, who asked and why.
    rollback = repo.get_commit("main")
    assert rollback.parents == (target,)
    assert rollback.snapshot_id == repo.get_commit(target).snapshot_id
    assert rollback.metadata == {
        "event": "rollback",
        "requested_by": {
            "by": "model",
            "tool": "rollback",
            "tool_call_id": "undo-1",
            "agent_name": agent.name,
            "agent_id": agent.agent_id,
        },
        "reason": "the plan went wrong",
        "revision": "HEAD~2",
        "target": target,
        "abandoned": "abandoned/main/1",
        "abandoned_commit": abandoned.id,
    }
    assert "the plan went wrong" in rollback.message
    # The conversation goes on from the rolled-back state, on the same branch.
    agent("e")
    assert [m["content"][0]["text"] for m in agent.messages] == ["a", "one", "e", "five"]
    assert repo.get_commit("main").parents == (rollback.id,)
    # A fresh session resumes the rolled-back conversation.
    resumed = Agent(
        model=ScriptedModel([]),
        session_manager=StateVCSSessionManager(repo, branch="main"),
        callback_handler=None,
    )
    assert resumed.messages == agent.messages


def _agent(repo: statevcs.Repo, **kwargs: Any) -> tuple[Agent, ScriptedModel, HistoryTools]:
    """An agent with no commit policy, committed once on main."""
    model = ScriptedModel([])
    history = HistoryTools(repo, **kwargs)
    agent = Agent(model=model, plugins=[history], callback_handler=None)
    agent.messages.append({"role": "user", "content": [{"text": "hi"}]})
    repo.commit(agent, "start")
    return agent, model, history


def _call(agent: Agent, model: ScriptedModel, *calls: ToolCall) -> list[str]:
    """Run one invocation in which the model makes ``calls``; return the tool answers."""
    before = len(agent.messages)
    answers: list[str] = []

    def finish(messages: Any) -> str:
        # Read here, inside the invocation: a rollback replaces the messages when it ends.
        answers.extend(_tool_results(messages[before:]))
        return "done"

    model.add(list(calls), finish)
    agent("go")
    return answers


def test_list_checkpoints_lists_the_branch_newest_first_with_tags_and_bounded(
    repo: statevcs.Repo,
) -> None:
    agent, model, _history = _agent(repo)
    for index in range(3):
        agent.state.set("n", index)
        repo.commit(agent, f"step {index}\x1b[31m")
    repo.tag("checkpoints/main/1", "main~1")
    (listing,) = _call(agent, model, ToolCall("list_checkpoints", {"limit": 3}))
    lines = listing.splitlines()
    assert lines[0].startswith("branch main")
    assert [line.split()[0] for line in lines[1:]] == ["HEAD~0", "HEAD~1", "HEAD~2"]
    assert "step 2\\x1b[31m" in lines[1] and "\x1b" not in listing
    assert "[checkpoints/main/1]" in lines[2]
    small, _ = HistoryTools(repo, max_output=200), None
    agent2 = Agent(model=ScriptedModel([]), plugins=[small], callback_handler=None)
    repo.checkout(agent2, "main")
    (cut,) = _call(agent2, agent2.model, ToolCall("list_checkpoints", {"limit": 50}))  # type: ignore[arg-type]
    assert len(cut) <= 200 and "cut" in cut
    errors = _call(
        agent,
        model,
        ToolCall("list_checkpoints", {"limit": 0}),
        ToolCall("list_checkpoints", {"limit": 51}),
    )
    assert all(answer.startswith("error: limit must be") for answer in errors)


def test_diff_shows_changes_as_escaped_text(repo: statevcs.Repo) -> None:
    agent, model, _history = _agent(repo)
    agent.messages.append(
        {"role": "assistant", "content": [{"text": "evil \x1b]0;title\x07 text"}]}
    )
    agent.state.set("city", "Lisbon")
    repo.commit(agent, "second")
    (shown,) = _call(agent, model, ToolCall("diff", {"a": "HEAD~1", "b": "HEAD"}))
    assert "messages: 1 -> 2" in shown
    assert "+ city = 'Lisbon'" in shown
    assert "\\x1b]0;title\\x07" in shown and "\x1b" not in shown
    (missing,) = _call(agent, model, ToolCall("diff", {"a": "HEAD~9", "b": "HEAD"}))
    assert missing.startswith("error: ") and "list_checkpoints" in missing


def test_checkpoint_and_start_branch_are_written_when_the_invocation_ends(
    repo: statevcs.Repo,
) -> None:
    agent, model, history = _agent(repo)
    seen: list[dict[str, str]] = []

    def during(messages: Any) -> str:
        seen.append(_refs(repo))
        return "saved"

    before = _refs(repo)
    model.add(
        [
            ToolCall("checkpoint", {"message": "before the risky part"}, tool_use_id="cp-1"),
            ToolCall("start_branch", {"name": "try/other-plan"}),
        ],
        during,
    )
    agent("go")
    assert seen == [before]  # nothing written inside the loop
    tagged = repo.get_commit("checkpoints/main/1")
    assert tagged.message == "before the risky part"
    assert tagged.metadata["requested_by"]["tool_call_id"] == "cp-1"
    assert repo.show("checkpoints/main/1").messages == agent.messages
    assert repo.resolve("try/other-plan") == repo.resolve("main")
    assert repo.attached_branch(agent) == "main"
    assert history.pending(agent) == []
    (again,) = _call(agent, model, ToolCall("start_branch", {"name": "try/other-plan"}))
    assert again.startswith("error: branch 'try/other-plan' already exists")


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("rollback", {"revision": "no-such-branch", "reason": "x"}, "no-such-branch"),
        ("rollback", {"revision": "HEAD~40", "reason": "x"}, "error: "),
        ("rollback", {"revision": "HEAD", "reason": ""}, "reason cannot be empty"),
        ("rollback", {"revision": "HEAD", "reason": "y" * 501}, "at most 500"),
        ("rollback", {"revision": "main\x00", "reason": "x"}, "control character"),
        ("start_branch", {"name": "../evil"}, "error: "),
        ("start_branch", {"name": "a..b"}, "error: "),
        ("start_branch", {"name": "-x"}, "cannot start with '-'"),
        ("start_branch", {"name": "HEAD"}, "error: "),
        ("start_branch", {"name": "x" * 2000}, "error: "),
        ("checkpoint", {"message": " "}, "message cannot be empty"),
        ("diff", {"a": "HEAD", "b": "zzzz"}, "error: "),
    ],
)
def test_bad_arguments_answer_an_error_and_write_nothing(
    repo: statevcs.Repo, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    agent, model, history = _agent(repo)
    before = _refs(repo)
    (answer,) = _call(agent, model, ToolCall(tool, arguments))
    assert answer.startswith("error: ") and expected in answer
    assert _refs(repo) == before
    assert history.pending(agent) == []


def test_a_second_rollback_in_one_invocation_is_refused(repo: statevcs.Repo) -> None:
    agent, model, _history = _agent(repo)
    repo.commit(agent, "second")
    first, second = _call(
        agent,
        model,
        ToolCall("rollback", {"revision": "HEAD~1", "reason": "one"}),
        ToolCall("rollback", {"revision": "HEAD", "reason": "two"}),
    )
    # Strands runs the two tool calls concurrently: whichever asks first is scheduled.
    answers = {"one": first, "two": second}
    scheduled = [r for r, answer in answers.items() if answer.startswith("rollback to")]
    refused = [r for r, answer in answers.items() if answer.startswith("error: a rollback to")]
    assert len(scheduled) == 1 and len(refused) == 1, answers
    assert repo.get_commit("main").metadata["reason"] == scheduled[0]


def test_an_invocation_that_fails_drops_its_requests(repo: statevcs.Repo) -> None:
    agent, model, history = _agent(repo)
    before = _refs(repo)

    def fail(messages: Any) -> str:
        raise RuntimeError("model down")

    model.add(ToolCall("rollback", {"revision": "HEAD", "reason": "x"}), fail)
    with pytest.raises(Exception, match="model down"):
        agent("go")
    assert _refs(repo) == before
    assert history.pending(agent) == []


def test_an_agent_without_a_commit_policy_keeps_its_end_state_in_the_abandoned_tag(
    repo: statevcs.Repo,
) -> None:
    agent, model, _history = _agent(repo)
    start = repo.resolve("main")
    _call(agent, model, ToolCall("rollback", {"revision": "HEAD", "reason": "undo this turn"}))
    # The turn was never committed by a policy: the tools committed it before leaving it.
    abandoned = repo.get_commit("abandoned/main/1")
    assert abandoned.parents == (start,) and abandoned.metadata == {"event": "end"}
    assert [m["content"][0].get("text") for m in repo.show("abandoned/main/1").messages][
        -1
    ] == "done"
    assert agent.messages == repo.show(start).messages
    assert repo.get_commit("main").parents == (start,)


_HOSTILE = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["HEAD~99999999999", "@{-1}", "main^^^^^^", "..", "refs/heads/", "@", "HEAD@{9}"]
    ),
)


@settings(
    max_examples=HYPOTHESIS_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(revision=_HOSTILE, reason=st.text(max_size=20), name=_HOSTILE)
def test_hostile_arguments_give_answers_never_exceptions(
    repo: statevcs.Repo, revision: str, reason: str, name: str
) -> None:
    history = HistoryTools(repo)
    agent = Agent(model=ScriptedModel([]), callback_handler=None)
    if repo.refs.get("refs/heads/main") is None:
        repo.commit(agent, "start")
    repo.checkout(agent, "main")
    before = _refs(repo)
    context = ToolContext(
        tool_use={"toolUseId": "t", "name": "x", "input": {}}, agent=agent, invocation_state={}
    )
    answers = [
        history.rollback(revision=revision, reason=reason, tool_context=context),
        history.start_branch(name=name, tool_context=context),
        history.checkpoint(message=reason, tool_context=context),
        history.diff(a=revision, b=name, tool_context=context),
        history.list_checkpoints(limit=len(name), tool_context=context),
    ]
    assert all(isinstance(a, str) and len(a) <= history.max_output for a in answers)
    assert _refs(repo) == before  # nothing is written before the invocation ends
    queued = history.pending(agent)
    assert len(queued) == sum(not a.startswith("error: ") for a in answers[:3])


@pytest.mark.parametrize(
    "policy",
    [
        "session:invocation",
        "session:message",
        "session:tool_call",
        "auto:tool_call",
        "auto:message",
        "none",
    ],
)
def test_rollback_under_every_commit_policy(repo: statevcs.Repo, policy: str) -> None:
    kind, _, on = policy.partition(":")
    model = ScriptedModel(
        [
            "one",
            "two",
            ToolCall("rollback", {"revision": "HEAD~2", "reason": "undo"}, tool_use_id="r"),
            "after",
        ]
    )
    kwargs: dict[str, Any] = {}
    if kind == "session":
        kwargs["session_manager"] = StateVCSSessionManager(repo, branch="main", commit_on=on)  # type: ignore[arg-type]
    elif kind == "auto":
        kwargs["hooks"] = [AutoCommit(repo, on=on)]  # type: ignore[arg-type]
    agent = Agent(model=model, plugins=[HistoryTools(repo)], callback_handler=None, **kwargs)
    if kind != "session":
        repo.commit(agent, "start")
    heads: list[str] = []
    ended: list[Any] = []
    agent.add_hook(lambda event: heads.append(repo.resolve("main")), BeforeToolCallEvent)
    agent.add_hook(
        lambda event: ended.append(copy.deepcopy(event.agent.messages)), AfterInvocationEvent
    )
    for prompt in ["a", "b"]:
        agent(prompt)
        if kind == "none":
            repo.commit(agent, prompt)  # by hand: no policy commits
    agent("c")
    target = repo.resolve(f"{heads[0]}~2")
    rollback = repo.get_commit("main")
    assert rollback.parents == (target,)
    assert rollback.metadata["target"] == target
    assert rollback.metadata["requested_by"]["tool_call_id"] == "r"
    assert agent.messages == repo.show(target).messages
    assert repo.show("abandoned/main/1").messages == ended[-1]
    assert heads[0] in {c.id for c in repo.log("abandoned/main/1")}
    agent.messages.append({"role": "user", "content": [{"text": "more"}]})
    assert repo.commit(agent, "next").parents == (rollback.id,)


def test_rollback_to_a_commit_that_holds_no_agent_is_refused(repo: statevcs.Repo) -> None:
    agent, model, _history = _agent(repo)
    repo.commit({"plain": "dict"}, "a dict", branch="notes")
    before = _refs(repo)
    (answer,) = _call(agent, model, ToolCall("rollback", {"revision": "notes", "reason": "x"}))
    assert answer.startswith("error: ") and "'dict' snapshot" in answer
    assert _refs(repo) == before
