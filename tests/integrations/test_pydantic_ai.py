"""Pydantic AI on statevcs: message histories committed and checked out exactly, AgentHistory
driving a real ``Agent`` (FunctionModel / TestModel, tool calls, streaming), forks that share
their prefix, and StateVCSStepStore under the harness's real StepPersistence capability."""

from __future__ import annotations

import subprocess
import sys
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from support import run

from statevcs import Repo
from statevcs.errors import RefConflict, UnsupportedObject
from statevcs.integrations.pydantic_ai import KIND, AgentHistory, MessageHistory


def dumped(messages: list[ModelMessage]) -> bytes:
    """pydantic-ai's own JSON form: what "the same history" means."""
    return ModelMessagesTypeAdapter.dump_json(messages)


T0 = datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)


def every_part() -> list[ModelMessage]:
    """One message of each shape, with every part type a history holds."""
    return [
        ModelRequest(
            parts=[
                SystemPromptPart("You add numbers.", timestamp=T0),
                UserPromptPart(
                    [
                        "What is in this picture, and 2 + 3?",
                        BinaryContent(data=b"\x89PNG\r\n\x00\xff" * 10, media_type="image/png"),
                    ],
                    timestamp=T0,
                ),
            ],
            instructions="Be brief.",
        ),
        ModelResponse(
            parts=[
                ThinkingPart("I should call add.", signature="sig-1", id="th_1"),
                TextPart("Let me add."),
                ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="call_1"),
                ToolCallPart("add", '{"a": "two"}', tool_call_id="call_2"),
            ],
            model_name="scripted",
            timestamp=T0 + timedelta(seconds=1),
            provider_details={"finish": "tool_calls", "nested": {"x": [1, 2.5, None]}},
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("add", 5, tool_call_id="call_1", timestamp=T0),
                ToolReturnPart(
                    "add",
                    "a must be an integer",
                    tool_call_id="call_2",
                    outcome="retried",
                    timestamp=T0,
                ),
                RetryFeedbackPart(
                    "answer in one word",
                    retry=RetryInfo("no_output", attempt=1, max_retries=3),
                    timestamp=T0,
                ),
            ]
        ),
        ModelResponse(
            parts=[TextPart("Five. ünïcødé ✓ \x00 nul")],
            timestamp=T0 + timedelta(microseconds=7),
        ),
    ]


def test_every_part_type_round_trips_exactly(repo: Repo) -> None:
    history = every_part()
    commit = repo.commit(history, "one of everything", branch="parts")
    assert repo.show(commit.id).kind == KIND
    back: list[ModelMessage] = []
    repo.checkout(back, "parts")
    assert dumped(back) == dumped(history)
    # equal to what pydantic-ai itself reloads from its JSON (it loads an image as BinaryImage)
    assert back == ModelMessagesTypeAdapter.validate_json(dumped(history))
    image = back[0].parts[1].content[1]  # type: ignore[union-attr,index]
    assert isinstance(image, BinaryContent) and image.data == b"\x89PNG\r\n\x00\xff" * 10
    assert back[1].timestamp == T0 + timedelta(seconds=1)  # type: ignore[union-attr]


def test_a_deprecated_part_comes_back_as_pydantic_ai_reloads_it(repo: Repo) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = [ModelRequest(parts=[RetryPromptPart("bad", tool_name="add", tool_call_id="c")])]
    repo.commit(old, branch="old")
    back: list[ModelMessage] = []
    repo.checkout(back, "old")
    # pydantic-ai itself upgrades RetryPromptPart on load: statevcs loses nothing beyond that.
    assert dumped(back) == dumped(ModelMessagesTypeAdapter.validate_json(dumped(old)))


def test_each_message_is_stored_once_across_commits(repo: Repo) -> None:
    history = every_part()
    repo.commit(history[:2], branch="grow")
    before = repo.stats()
    repo.commit(history, branch="grow")
    again = repo.stats()
    repo.commit(history + history[2:], branch="grow")
    after = repo.stats()
    # the last commit adds no new message bytes: the two repeated messages are stored already
    assert after.bytes_stored - again.bytes_stored < again.bytes_stored - before.bytes_stored


def calculator(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A scripted model: a user prompt gets a tool call, a tool return gets the answer."""
    last = messages[-1].parts[-1]
    if isinstance(last, UserPromptPart):
        return ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": len(messages)})])
    assert isinstance(last, ToolReturnPart)
    return ModelResponse(parts=[TextPart(f"the sum is {last.content}")])


def calculator_agent() -> Agent[None, str]:
    agent = Agent(FunctionModel(calculator), instructions="Add numbers with the tool.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return agent


def test_agent_history_commits_each_run_and_continues_from_the_tip(repo: Repo) -> None:
    agent = calculator_agent()
    history = AgentHistory(repo, "calc")
    assert history.messages() == [] and history.head is None
    first = history.run_sync(agent, "first")
    assert first.output == "the sum is 3"
    second = run(history.run(agent, "second"))
    assert second.output == "the sum is 7"  # the model saw the first run's 4 messages too
    log = list(repo.log("calc"))
    assert [c.metadata["op"] for c in log] == ["run", "run"]
    assert [c.metadata["new_messages"] for c in log] == [4, 4]
    assert log[0].metadata["run_id"] == second.run_id
    assert dumped(history.messages()) == dumped(second.all_messages())
    assert dumped(history.messages("~1")) == dumped(first.all_messages())
    # ~n checkout into a plain list, and into a MessageHistory
    plain: list[ModelMessage] = []
    repo.checkout(plain, "calc~1")
    assert dumped(plain) == dumped(first.all_messages())
    tool_calls = [p for m in plain for p in m.parts if isinstance(p, ToolCallPart)]
    assert [c.args_as_dict() for c in tool_calls] == [{"a": 2, "b": 1}]


def test_run_stream_commits_once_the_stream_is_consumed(repo: Repo) -> None:
    agent = Agent(TestModel(custom_output_text="streamed answer"))
    history = AgentHistory(repo, "stream")

    async def scenario() -> None:
        async with history.run_stream(agent, "tell me") as stream:
            assert await stream.get_output() == "streamed answer"
        async with history.run_stream(agent, "and again") as stream:
            pass  # not consumed: nothing committed

    run(scenario())
    assert len(list(repo.log("stream"))) == 1
    texts = [p.content for m in history.messages() for p in m.parts if isinstance(p, TextPart)]
    assert texts == ["streamed answer"]


def test_fork_restore_and_shared_prefix(repo: Repo) -> None:
    agent = calculator_agent()
    history = AgentHistory(repo, "main-chat")
    for n in range(3):
        history.run_sync(agent, f"turn {n}")
    fork = history.fork("~1")
    assert fork.branch == "main-chat-fork-1"
    assert dumped(fork.messages()) == dumped(history.messages("~1"))
    fork.run_sync(agent, "alternative")
    assert len(fork.messages()) == 12 and len(history.messages()) == 12
    assert dumped(fork.messages()[:8]) == dumped(history.messages()[:8])
    assert fork.messages()[8:] != history.messages()[8:]
    restored = history.restore("~2")
    assert restored.metadata["op"] == "restore"
    assert dumped(history.messages()) == dumped(history.messages("~3"))
    assert len(list(repo.log("main-chat"))) == 4  # the restore is a commit; nothing dropped


def test_ten_forks_of_a_200_turn_history_add_under_ten_percent(repo: Repo) -> None:
    history = AgentHistory(repo, "long")
    messages: list[ModelMessage] = []
    for n in range(200):
        messages = [
            *messages,
            ModelRequest(parts=[UserPromptPart(f"question {n}: " + "context " * 20, timestamp=T0)]),
            ModelResponse(parts=[TextPart(f"answer {n}: " + "details " * 30)], timestamp=T0),
        ]
        history.commit(messages, f"turn {n}")
    before = repo.stats()
    agent = Agent(TestModel(custom_output_text="a fork's answer"))
    forks = [history.fork("~20") for _ in range(10)]
    for fork in forks:
        assert len(fork.messages()) == 360
        fork.run_sync(agent, "a fork asks")
    after = repo.stats()
    assert after.bytes_stored - before.bytes_stored < 0.10 * before.bytes_stored
    assert dumped(forks[3].messages()[:360]) == dumped(messages[:360])


def test_a_run_never_overwrites_what_another_writer_committed(repo: Repo) -> None:
    other = AgentHistory(repo, "shared")
    mine = AgentHistory(repo, "shared")
    other.commit([ModelRequest(parts=[UserPromptPart("hello", timestamp=T0)])])

    def meddling(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        # another handle commits while this run is in flight
        other.commit([*messages, ModelResponse(parts=[TextPart("theirs")])])
        return ModelResponse(parts=[TextPart("mine")])

    tip = repo.resolve("shared")
    with pytest.raises(RefConflict):
        mine.run_sync(Agent(FunctionModel(meddling)), "go")
    assert repo.resolve("shared") != tip  # theirs landed ...
    texts = [p.content for m in mine.messages() for p in m.parts if isinstance(p, TextPart)]
    assert texts == ["theirs"]  # ... and mine did not overwrite it
    mine.run_sync(Agent(TestModel(custom_output_text="retried")), "again")
    assert len(mine.messages()) == 4


def test_message_history_is_attached_to_its_branch(repo: Repo) -> None:
    live = MessageHistory(every_part()[:2])
    repo.commit(live, branch="attached")
    assert repo.attached_branch(live) == "attached"
    repo.commit(every_part(), branch="attached")  # another writer
    live.append(every_part()[2])
    with pytest.raises(RefConflict):
        repo.commit(live)


def test_a_list_of_messages_loads_the_integration_by_itself(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from statevcs import Repo\n"
        "from pydantic_ai.messages import ModelRequest, UserPromptPart\n"
        "assert 'statevcs.integrations.pydantic_ai' not in sys.modules\n"
        f"repo = Repo.init({str(tmp_path / 'fresh')!r})\n"
        "repo.commit([ModelRequest(parts=[UserPromptPart('hi')])], branch='b')\n"
        "print(repo.show('b').kind)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == KIND


def test_checkout_of_another_kind_into_a_list_is_refused(repo: Repo) -> None:
    repo.commit({"messages": [{"role": "user", "content": "hi"}]}, branch="dict")
    target: list[ModelMessage] = list(every_part())
    with pytest.raises(UnsupportedObject, match="dict"):
        repo.checkout(target, "dict")
    assert dumped(target) == dumped(every_part())


hostile = st.lists(
    st.one_of(
        st.none(),
        st.integers(),
        st.text(),
        st.binary(),
        st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
        st.builds(object),
    ),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(items=hostile, position=st.integers(min_value=0, max_value=3))
def test_hostile_lists_are_refused_and_nothing_is_written(
    repo: Repo, items: list[Any], position: int
) -> None:
    messages: list[Any] = list(every_part()[:2])
    messages.insert(min(position, len(messages)), items[0])
    before = repo.branches()
    with pytest.raises(UnsupportedObject, match="ModelRequest and ModelResponse"):
        repo.commit(messages, branch="hostile")
    assert repo.branches() == before


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=st.one_of(st.none(), st.integers(), st.binary(), st.lists(st.text(), max_size=2)))
def test_agent_history_names_the_argument_of_a_wrong_type(repo: Repo, value: Any) -> None:
    with pytest.raises(TypeError, match="branch"):
        AgentHistory(repo, value)
    with pytest.raises(TypeError, match="repo"):
        AgentHistory(value, "typed")
    history = AgentHistory(repo, "typed")
    with pytest.raises(TypeError, match="rev"):
        history.messages(value)
    with pytest.raises(TypeError, match="message_history"):
        history.run_sync(Agent(TestModel()), "x", message_history=[])
    assert "typed" not in repo.branches()
