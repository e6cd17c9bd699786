"""fork, replay and compare on real Strands agents driven by scripted models (issue 19, part 1)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from strands import Agent
from strands.agent.conversation_manager import NullConversationManager
from strands.event_loop import streaming
from strands.types import content
from strands.types.content import Messages

import statevcs
from statevcs.errors import RefExists, UnknownRevision, UnsupportedObject
from statevcs.experiments import (
    REPLAY_KEY,
    Driver,
    NotInHistory,
    compare,
    fork,
    replay,
    turn_commit,
    turns,
)
from statevcs.integrations.strands.experiments import StrandsDriver
from statevcs.integrations.strands.testing import ScriptedModel, ToolCall

from .conftest import search

FILLER = "Alfama, Belem and the tram 28; pasteis de nata at every corner. " * 3


def factory(prompt: str, tag: str, *first: ToolCall) -> Callable[[], Agent]:
    """Agents answering in ``tag``'s voice, after making the ``first`` tool calls."""

    def answer(messages: Messages) -> str:
        return f"[{tag}] reply {len(messages)}: {FILLER}"

    def make() -> Agent:
        return Agent(
            model=ScriptedModel(list(first), default=answer, model_id=f"model-{tag}"),
            tools=[search],
            system_prompt=prompt,
            conversation_manager=NullConversationManager(),
            callback_handler=None,
        )

    return make


def run(repo: statevcs.Repo, agent: Agent, count: int, start: int = 0) -> list[str]:
    """``count`` turns, one commit each; return the commit ids."""
    return [
        repo.commit(agent, f"turn {i + 1}").id
        for i in range(start, start + count)
        if agent(f"Question {i + 1}: what next in Lisbon?") is not None
    ]


@pytest.fixture
def stable_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic messages, so the cost tests measure the same trees on every run: Strands
    draws a uuid4 tracking id per message and records the model's time to first byte."""
    numbers = itertools.count()
    monkeypatch.setattr(content, "_generate_tracking_id", lambda: f"message-{next(numbers)}")
    usage_of = streaming.extract_usage_metrics
    monkeypatch.setattr(streaming, "extract_usage_metrics", lambda event, *_, **__: usage_of(event))


@pytest.fixture
def sqlite_repo(tmp_path: Path) -> Iterator[statevcs.Repo]:
    with statevcs.Repo.init(tmp_path / "repo") as repo:
        yield repo


def test_the_driver_implements_the_protocol() -> None:
    assert isinstance(StrandsDriver(factory("p", "t")), Driver)
    with pytest.raises(TypeError, match="make_agent"):
        StrandsDriver("not callable")  # type: ignore[arg-type]


def test_turns_name_each_prompt_and_the_commit_ending_it(sqlite_repo: statevcs.Repo) -> None:
    repo = sqlite_repo
    agent = factory("base", "base", ToolCall("search", {"query": "Sintra"}))()
    commits = run(repo, agent, 4)
    found = turns(repo, "main")
    assert [t.index for t in found] == [1, 2, 3, 4]
    assert [t.commit for t in found] == commits
    assert found[0].text == "Question 1: what next in Lisbon?"
    assert [c.name for c in found[0].tool_calls] == ["search"]  # tool use, result, answer
    assert found[0].end - found[0].start == 4
    assert [t.index for t in turns(repo, f"{commits[1]}..main")] == [3, 4]
    assert turn_commit(repo, "main", 2) == commits[1]
    with pytest.raises(UnknownRevision, match="turn 9"):
        turn_commit(repo, "main", 9)


def test_fork_restores_a_fresh_agent_on_a_new_branch_sharing_the_prefix(
    sqlite_repo: statevcs.Repo,
) -> None:
    repo = sqlite_repo
    agent = factory("base", "base")()
    commits = run(repo, agent, 8)
    before = repo.stats()
    forked = fork(repo, StrandsDriver(factory("other", "fork")), commits[4], branch="exp/fork")
    assert repo.stats().objects == before.objects  # a new branch: no object written
    assert forked.branch == "exp/fork" and forked.commit == commits[4]
    assert forked.agent.messages == repo.show(commits[4]).messages
    assert forked.agent.system_prompt == "base"  # a fork restores everything the commit holds
    assert repo.attached_branch(forked.agent) == "exp/fork"
    forked.agent("A new direction?")
    commit = repo.commit(forked.agent, "fork turn 6")
    assert commit.parents == (commits[4],)
    assert repo.branches()["main"] == commits[-1]  # the source run never moves
    with pytest.raises(RefExists):
        fork(repo, StrandsDriver(factory("x", "x")), "main", branch="exp/fork")


def test_replay_resends_the_user_turns_to_another_agent_and_names_each_source(
    sqlite_repo: statevcs.Repo,
) -> None:
    repo = sqlite_repo
    agent = factory("You plan trips.", "base")()
    commits = run(repo, agent, 8)
    driver = StrandsDriver(factory("Answer in one line.", "terse", ToolCall("search", {})))
    result = replay(repo, driver, f"{commits[4]}..main", branch="exp/terse", changes={"why": "x"})
    assert result.branches == ("main", "exp/terse")
    assert result.base == commits[4]
    assert [t.index for t in result.turns] == [6, 7, 8]
    assert [t.source for t in result.turns] == commits[5:]
    assert result.changes == {
        "system_prompt": {"from": "You plan trips.", "to": "Answer in one line."},
        "why": "x",
    }
    log = list(repo.log("exp/terse"))
    assert [c.id for c in log[:3]] == [t.commit for t in reversed(result.turns)]
    assert log[3].id == commits[4]  # the replay starts where the range starts
    info = log[0].metadata[REPLAY_KEY]
    assert info["source"] == commits[7] and info["turn"] == 8
    assert info["source_tip"] == commits[7]
    assert info["changes"] == result.changes
    snapshot = repo.show("exp/terse")
    # Same prompts, new answers from the new system prompt.
    prompts = [m for m in snapshot.messages if m["role"] == "user" and "text" in m["content"][0]]
    assert [p["content"][0]["text"] for p in prompts][5:] == [
        f"Question {i}: what next in Lisbon?" for i in (6, 7, 8)
    ]
    assert snapshot.extras["system_prompt"] == [{"text": "Answer in one line."}]
    assert result.agent.system_prompt == "Answer in one line."


def test_replay_of_a_whole_run_starts_from_an_empty_agent(sqlite_repo: statevcs.Repo) -> None:
    repo = sqlite_repo
    run(repo, factory("base", "base")(), 3)
    result = replay(repo, StrandsDriver(factory("new", "new")), "main", branch="again")
    assert result.base is None
    assert [t.index for t in result.turns] == [1, 2, 3]
    root = list(repo.log("again"))[-1]
    assert root.parents == ()
    assert repo.merge_base("main", "again") is None


def test_a_bad_range_or_branch_leaves_nothing_behind(sqlite_repo: statevcs.Repo) -> None:
    repo = sqlite_repo
    commits = run(repo, factory("base", "base")(), 3)
    repo.branch("side", commits[0])
    side = factory("base", "side")()
    repo.checkout(side, "side")
    run(repo, side, 1, start=5)
    driver = StrandsDriver(factory("new", "new"))
    refs = repo.branches()
    with pytest.raises(NotInHistory, match="first-parent"):
        replay(repo, driver, "side..main", branch="bad")
    with pytest.raises(UnknownRevision):
        replay(repo, driver, "nothing..main", branch="bad")
    with pytest.raises(UnknownRevision, match=r"A\.\.B"):
        replay(repo, driver, "main..", branch="bad")
    with pytest.raises(RefExists):
        replay(repo, driver, "main", branch="side")
    with pytest.raises(TypeError, match="revisions"):
        replay(repo, driver, 5, branch="bad")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="branch"):
        fork(repo, driver, "main", branch=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="driver"):
        fork(repo, object(), "main", branch="bad")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="changes"):
        replay(repo, driver, "main", branch="bad", changes=["x"])  # type: ignore[arg-type]
    assert repo.branches() == refs
    # A commit the agent cannot be restored from: the new branch goes again.
    repo.commit(statevcs.Snapshot(kind="other.framework"), "foreign", branch="foreign")
    with pytest.raises(UnsupportedObject):
        fork(repo, driver, "foreign", branch="bad")
    with pytest.raises(UnsupportedObject):
        replay(repo, driver, "foreign..foreign", branch="bad")
    assert "bad" not in repo.branches()


def test_compare_shows_where_two_runs_diverged(sqlite_repo: statevcs.Repo) -> None:
    repo = sqlite_repo
    commits = run(repo, factory("base", "base")(), 8)
    driver = StrandsDriver(factory("terse", "terse", ToolCall("search", {"query": "Porto"})))
    replay(repo, driver, f"{commits[4]}..main", branch="terse")
    result = compare(repo, "main", "terse")
    assert result.merge_base == commits[4]
    assert result.diverged == [6, 7, 8] and result.first_divergence == 6
    assert [t.status for t in result.turns[:5]] == ["same"] * 5
    sixth = result.turns[5]
    assert sixth.tools_only_b == ("search",) and sixth.tools_only_a == ()
    assert sixth.a is not None and sixth.b is not None
    assert sixth.a.text == sixth.b.text  # the same prompt (Strands stamps each message with
    assert sixth.messages.changes[0].kind == "changed"  # its own metadata: a new object)...
    assert len(sixth.messages.changes) == 4  # ...answered differently, with a tool call
    assert [c.key for c in sixth.extras] == ["system_prompt"]
    assert result.common_prefix == 10  # five turns of two messages
    data = result.to_dict(messages=True)
    assert data["diverged"] == [6, 7, 8]
    assert data["turns"][5]["tools_only_b"] == ["search"]
    assert compare(repo, "terse", "terse").diverged == []


def test_ten_forks_of_a_1000_message_conversation_add_under_5_percent(
    sqlite_repo: statevcs.Repo, stable_ids: None
) -> None:
    repo = sqlite_repo
    agent = factory("base", "base")()
    commits = []
    for chunk in range(100):  # 1,000 messages in 100 commits of five exchanges each
        for i in range(chunk * 5, chunk * 5 + 5):
            # As Strands writes them (with a tracking id, which it adds to any message without).
            question = {"text": f"Question {i}?"}
            answer = {"text": f"{i}: {FILLER}"}
            agent.messages += [
                {"role": "user", "content": [question], "tracking_id": f"u{i}"},
                {"role": "assistant", "content": [answer], "tracking_id": f"a{i}"},
            ]
        commits.append(repo.commit(agent, f"turns {chunk * 5 + 1}-{chunk * 5 + 5}").id)
    assert len(repo.show("main").messages) == 1000
    before = repo.stats()
    forks = [
        fork(repo, StrandsDriver(factory("base", f"fork{n}")), commits[9 * n + 9], branch=f"f{n}")
        for n in range(10)
    ]
    assert repo.stats().bytes_stored == before.bytes_stored  # forking itself writes nothing
    for n, forked in enumerate(forks):
        forked.agent(f"Fork {n}: another idea?")
        repo.commit(forked.agent, f"fork {n}")
    after = repo.stats()
    added = after.bytes_stored - before.bytes_stored
    print(f"ten forks added {added} bytes to {before.bytes_stored}")
    assert added < 0.05 * before.bytes_stored, (added, before.bytes_stored)


def test_replaying_50_turns_costs_no_more_per_turn_than_the_original(
    sqlite_repo: statevcs.Repo, stable_ids: None
) -> None:
    repo = sqlite_repo
    agent = factory("base", "base")()
    commits = run(repo, agent, 10)
    start = repo.stats()
    commits += run(repo, agent, 50, start=10)
    original = repo.stats()
    # The original's commits for the same turns (11 to 60), on a conversation as long.
    per_turn_objects = (original.objects - start.objects) / 50
    per_turn_bytes = (original.bytes_stored - start.bytes_stored) / 50
    replay(repo, StrandsDriver(factory("base", "echo")), f"{commits[9]}..main", branch="replay")
    replayed = repo.stats()
    objects = replayed.objects - original.objects
    spent = replayed.bytes_stored - original.bytes_stored
    # The same objects per turn as the original (new messages, the tree's right edge, a
    # snapshot, a commit), plus once the tree path where the two conversations part (<= 4
    # nodes at 120 messages).
    print(f"objects per turn: original {per_turn_objects:.2f}, replay {objects / 50:.2f}")
    assert objects <= 50 * per_turn_objects + 4, (objects / 50, per_turn_objects)
    # Each replayed commit also names its source commit and what changed.
    metadata = len(str(repo.get_commit("replay").metadata))
    print(f"bytes per turn: original {per_turn_bytes:.0f}, replay {spent / 50:.0f}")
    assert spent <= 50 * (per_turn_bytes + metadata) + 4 * 1024, (spent / 50, per_turn_bytes)
