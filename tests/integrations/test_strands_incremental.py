"""Incremental commits: appends cost O(k + log n) objects; any in-place edit is still committed."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strands.agent.conversation_manager import (
    NullConversationManager,
    SlidingWindowConversationManager,
)
from strands.agent.conversation_manager.compression.pin_message import pin_message

import statevcs
from statevcs.integrations.strands import StrandsAgentAdapter, agent_adapter
from statevcs.integrations.strands.testing import ScriptedModel

from .conftest import AgentFactory


def _answer(messages: list[Any]) -> str:
    return f"Answer number {len(messages)}: take the 28 tram up to the castle."


def _long_agent(make_agent: AgentFactory, turns: int) -> Any:
    agent = make_agent(
        model=ScriptedModel([], default=_answer), conversation_manager=NullConversationManager()
    )
    for turn in range(turns):
        agent(f"Question {turn}: what next?")
    return agent


@pytest.fixture
def prefixes(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """Record every prefix the adapter vouches for."""
    seen: list[int | None] = []
    original = StrandsAgentAdapter.unchanged_prefix

    def spy(self: StrandsAgentAdapter, obj: Any) -> int | None:
        result = original(self, obj)
        seen.append(result)
        return result

    monkeypatch.setattr(StrandsAgentAdapter, "unchanged_prefix", spy)
    return seen


def _plain(messages: list[Any]) -> Any:
    return json.loads(json.dumps(messages))


def test_an_appended_turn_writes_o_k_plus_log_n_objects(
    make_agent: AgentFactory, repo: statevcs.Repo, prefixes: list[int | None]
) -> None:
    agent = _long_agent(make_agent, 200)
    repo.commit(agent, "400 messages")
    added: list[int] = []
    for extra in range(20):
        before = repo.stats().objects
        n = len(agent.messages)
        agent(f"One more question ({extra})")
        repo.commit(agent, f"turn +{extra}")
        added.append(repo.stats().objects - before)
        assert prefixes[-1] == n  # only the 2 new messages were encoded
    depth = math.ceil(math.log(len(agent.messages), 32)) + 1
    # Each commit: k = 2 messages, the snapshot and the commit; when a leaf of the prolly tree
    # closes (about every 16 commits here) one path of at most a few nodes per level is new.
    assert max(added) <= 2 + 2 + 4 * depth, added
    assert sum(added) / len(added) <= 2 + 2 + depth, added
    assert _plain(repo.show("main").messages) == _plain(agent.messages)


def test_first_commit_and_checkout_vouch_for_nothing_then_everything(
    make_agent: AgentFactory, repo: statevcs.Repo, prefixes: list[int | None]
) -> None:
    agent = _long_agent(make_agent, 3)
    repo.commit(agent, "first")
    assert prefixes == []  # nothing synced yet: the repository does not even ask
    repo.commit(agent, "unchanged")
    assert prefixes == [6]
    fresh = make_agent(
        model=ScriptedModel([], default=_answer), conversation_manager=NullConversationManager()
    )
    repo.checkout(fresh, "main")
    fresh("after checkout")
    repo.commit(fresh, "continued")
    assert prefixes[-1] == 6
    assert len(repo.show("main").messages) == 8


EDITS: dict[str, tuple[int, Any]] = {
    # name: (first index the edit touches, edit)
    "nested text, in place": (3, lambda m: m[3]["content"][0].__setitem__("text", "[REDACTED]")),
    "content replaced (as Strands' redaction does)": (
        5,
        lambda m: m[5].__setitem__("content", [{"text": "[redacted]"}]),
    ),
    "a key deleted": (1, lambda m: m[1].pop("metadata")),
    "a block appended": (2, lambda m: m[2]["content"].append({"text": "P.S."})),
    "blocks sorted": (4, lambda m: m[4]["content"].sort(key=str)),
    "update()": (7, lambda m: m[7].update(role="user")),
    "setdefault() of a new key": (0, lambda m: m[0].setdefault("metadata", {"custom": {}})),
    "pinned (metadata.custom in place)": (1, lambda m: pin_message(m, 1)),
    "list += ": (6, lambda m: m[6]["content"].__iadd__([{"text": "more"}])),
    "message deleted": (2, lambda m: m.__delitem__(2)),
    "message inserted": (
        4,
        lambda m: m.insert(4, {"role": "user", "content": [{"text": "x"}], "tracking_id": "t-4"}),
    ),
    "message replaced": (3, lambda m: m.__setitem__(3, copy.deepcopy(m[3]) | {"role": "user"})),
    "list cleared": (0, lambda m: m.clear()),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_in_place_edits_of_old_messages_are_committed(
    name: str, make_agent: AgentFactory, repo: statevcs.Repo, prefixes: list[int | None]
) -> None:
    agent = _long_agent(make_agent, 6)
    repo.commit(agent, "before")
    first, edit = EDITS[name]
    edit(agent.messages)
    repo.commit(agent, name)
    assert _plain(repo.show("main").messages) == _plain(agent.messages)
    assert prefixes[-1] is not None and prefixes[-1] <= first
    # The edited state is tracked again: the next append is incremental.
    agent("and then?")
    repo.commit(agent, "after")
    assert prefixes[-1] == len(agent.messages) - 2
    assert _plain(repo.show("main").messages) == _plain(agent.messages)


def test_replacing_the_whole_list_or_a_reference_taken_after_commit(
    make_agent: AgentFactory, repo: statevcs.Repo, prefixes: list[int | None]
) -> None:
    agent = _long_agent(make_agent, 4)
    repo.commit(agent, "one")
    block = agent.messages[2]["content"][0]
    block["text"] = "edited through a reference"
    repo.commit(agent, "two")
    assert repo.show("main").messages[2]["content"][0]["text"] == "edited through a reference"
    assert prefixes[-1] == 2

    agent.messages = copy.deepcopy(agent.messages)  # what load_snapshot or a Swarm reset does
    agent.messages[0]["content"][0]["text"] = "new first question"
    repo.commit(agent, "three")
    assert prefixes[-1] is None  # a replaced list vouches for nothing
    assert repo.show("main").messages[0]["content"][0]["text"] == "new first question"


def test_sliding_window_trimming_is_committed(
    make_agent: AgentFactory, repo: statevcs.Repo
) -> None:
    agent = make_agent(
        model=ScriptedModel([], default=_answer),
        conversation_manager=SlidingWindowConversationManager(window_size=6),
    )
    for turn in range(8):
        agent(f"Question {turn}")
        repo.commit(agent, f"turn {turn}")
        assert _plain(repo.show("main").messages) == _plain(agent.messages)
    assert len(agent.messages) == 6
    state = repo.show("main").extras["conversation_manager_state"]
    assert state["removed_message_count"] == 10


@st.composite
def _edit_scripts(draw: st.DrawFn) -> list[tuple[str, int, str]]:
    ops = st.sampled_from(["append", "edit", "delete", "replace", "commit", "checkout"])
    return draw(
        st.lists(
            st.tuples(ops, st.integers(0, 40), st.text("abc", max_size=3)),
            min_size=1,
            max_size=25,
        )
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=_edit_scripts())
def test_any_sequence_of_edits_commits_exactly_the_live_messages(
    make_agent: AgentFactory, script: list[tuple[str, int, str]]
) -> None:
    repo = statevcs.Repo.init()
    agent = make_agent([])
    commits: list[tuple[str, Any]] = []
    for op, where, text in script:
        messages = agent.messages
        index = where % len(messages) if messages else 0
        if op == "append" or not messages:
            messages.append({"role": "user", "content": [{"text": text}], "n": len(messages)})
        elif op == "edit":
            messages[index]["content"][0]["text"] += text or "!"
        elif op == "delete":
            del messages[index]
        elif op == "replace":
            messages[index] = {"role": "assistant", "content": [{"text": text}]}
        elif op == "commit":
            commit = repo.commit(agent, op)
            commits.append((commit.id, _plain(agent.messages)))
            assert _plain(repo.show(commit.id).messages) == _plain(agent.messages)
        elif op == "checkout" and commits:
            commit_id, expected = commits[where % len(commits)]
            repo.checkout(agent, commit_id)
            repo.branch(f"b{len(commits)}-{where}", rev=commit_id, force=True)
            repo.checkout(agent, f"b{len(commits)}-{where}")
            assert _plain(agent.messages) == expected
    repo.commit(agent, "final", branch="final")
    assert _plain(repo.show("final").messages) == _plain(agent.messages)
    assert agent_adapter() is not None


def test_one_agent_committed_to_two_repositories_keeps_both_exact(
    make_agent: AgentFactory,
) -> None:
    agent = _long_agent(make_agent, 2)
    first, second = statevcs.Repo.init(), statevcs.Repo.init()
    first.commit(agent, "first repo")
    agent.messages[0]["content"][0]["text"] = "EDITED"
    second.commit(agent, "second repo sees the edit")
    agent("q3")
    first.commit(agent, "first repo again")  # its last sync predates the edit
    second.commit(agent, "second repo again")
    for repository in (first, second):
        assert _plain(repository.show("main").messages) == _plain(agent.messages)
