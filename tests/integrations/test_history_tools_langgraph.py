"""History tools in a real LangGraph graph (a ToolNode), driven by a scripted chat model."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph.tools import HistoryTools


class CommandModel(BaseChatModel):
    """``call <tool> <json args>`` from the user asks that tool; a tool result is echoed."""

    on_tool_result: Callable[[], None] | None = None

    @property
    def _llm_type(self) -> str:
        return "scripted-commands"

    def bind_tools(self, tools: Any, **kwargs: Any) -> CommandModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last, count = messages[-1], len(messages)
        if isinstance(last, ToolMessage):
            if self.on_tool_result is not None:
                self.on_tool_result()
            reply = AIMessage(content=f"tool said: {last.content}", id=f"ai-{count}")
        elif str(last.content).startswith("call "):
            _call, name, arguments = str(last.content).split(" ", 2)
            reply = AIMessage(
                content="",
                id=f"ai-{count}",
                tool_calls=[{"name": name, "args": json.loads(arguments), "id": f"call-{count}"}],
            )
        elif str(last.content) == "fail":
            raise RuntimeError("model down")
        else:
            reply = AIMessage(content=f"echo {last.content}", id=f"ai-{count}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[statevcs.Repo]:
    with statevcs.Repo.init(tmp_path / "repo") as opened:
        yield opened


CONFIG: Any = {"configurable": {"thread_id": "chat"}}


def _app(repo: statevcs.Repo, model: CommandModel) -> tuple[Any, HistoryTools]:
    saver = StateVCSSaver(repo)
    history = HistoryTools(saver)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(history.tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=saver), history


def _ask(history: HistoryTools, app: Any, text: str, index: int) -> dict[str, Any]:
    result: dict[str, Any] = history.invoke(
        app, {"messages": [HumanMessage(text, id=f"user-{index}")]}, CONFIG
    )
    return result


def _contents(messages: list[Any]) -> list[Any]:
    """Message texts, whether stored documents or LangChain messages."""
    return [m["content"] if isinstance(m, dict) else m.content for m in messages]


def test_rollback_head_2_is_applied_after_the_run_and_loses_nothing(repo: statevcs.Repo) -> None:
    during: list[tuple[str, dict[str, str]]] = []
    model = CommandModel(
        on_tool_result=lambda: during.append((repo.resolve("threads/chat"), repo.tags()))
    )
    app, history = _app(repo, model)
    _ask(history, app, "hello", 0)
    _ask(history, app, "plan a trip", 1)
    request = 'call rollback {"revision": "HEAD~2", "reason": "the plan went wrong"}'
    final = _ask(history, app, request, 2)

    # The model was called again after the tool, inside the run: no tag, nothing rolled back.
    assert len(during) == 1 and during[0][1] == {}
    # The abandoned timeline: exactly the run's final state.
    abandoned = repo.get_commit("abandoned/threads/chat/1")
    assert during[0][0] in {c.id for c in repo.log("abandoned/threads/chat/1")}
    assert _contents(repo.show(abandoned.id).messages) == _contents(final["messages"])
    # HEAD when the tool ran: the checkpoint holding the model's rollback call.
    asked = next(
        c
        for c in repo.log("abandoned/threads/chat/1")
        if (repo.show(c.id).messages or [{}])[-1].get("tool_calls")
    )
    target = repo.resolve(f"{asked.id}~2")
    # The thread's latest checkpoint now holds the target's state, with who asked and why.
    tip = repo.get_commit("threads/chat")
    assert tip.parents == (target,)
    state = app.get_state(CONFIG)
    target_id = repo.get_commit(target).metadata["langgraph"]["checkpoint_id"]
    saved = history.saver.get_tuple(
        {"configurable": {"thread_id": "chat", "checkpoint_ns": "", "checkpoint_id": target_id}}
    )
    assert saved is not None
    assert state.values["messages"] == saved.checkpoint["channel_values"]["messages"]
    assert _contents(state.values["messages"]) == [
        "hello",
        "echo hello",
        "plan a trip",
        "echo plan a trip",
    ]
    assert state.metadata is not None
    assert state.metadata["statevcs"] == {
        "event": "rollback",
        "requested_by": {
            "by": "model",
            "tool": "rollback",
            "tool_call_id": "call-5",
            "thread_id": "chat",
        },
        "reason": "the plan went wrong",
        "revision": "HEAD~2",
        "target": target,
        "abandoned": "abandoned/threads/chat/1",
        "abandoned_commit": abandoned.id,
    }
    assert tip.metadata["metadata"]["statevcs"] == state.metadata["statevcs"]
    # The next run goes on from the rolled-back state.
    after = _ask(history, app, "and now?", 3)
    assert _contents(after["messages"])[-2:] == ["and now?", "echo and now?"]
    assert len(after["messages"]) == 6


def _tool(history: HistoryTools, name: str, arguments: dict[str, Any], call_id: str = "c1") -> str:
    tool = next(t for t in history.tools if t.name == name)
    message = tool.invoke(
        {"type": "tool_call", "name": name, "args": arguments, "id": call_id}, CONFIG
    )
    return str(message.content)


def test_list_checkpoints_and_diff_answer_bounded_escaped_text(repo: statevcs.Repo) -> None:
    app, history = _app(repo, CommandModel())
    _ask(history, app, "hello \x1b[2J", 0)
    _ask(history, app, "again", 1)
    listing = _tool(history, "list_checkpoints", {"limit": 3})
    lines = listing.splitlines()
    assert lines[0].startswith("branch threads/chat")
    assert [line.split()[0] for line in lines[1:]] == ["HEAD~0", "HEAD~1", "HEAD~2"]
    shown = _tool(history, "diff", {"a": "HEAD~4", "b": "HEAD"})
    assert "\\x1b[2J" in _tool(history, "diff", {"a": "HEAD~5", "b": "HEAD"})
    missing = _tool(history, "diff", {"a": "HEAD~9", "b": "HEAD"})
    assert missing.startswith("error: unknown revision 'HEAD~9'")
    assert "+ [3] assistant: echo again" in shown and "\x1b" not in shown
    small = HistoryTools(history.saver, max_output=200)
    assert len(_tool(small, "list_checkpoints", {"limit": 50})) <= 200
    assert _tool(history, "list_checkpoints", {"limit": 99}).startswith("error: limit")


def test_checkpoint_and_start_branch_are_written_after_the_run(repo: statevcs.Repo) -> None:
    app, history = _app(repo, CommandModel())
    _ask(history, app, "hello", 0)
    final = _ask(history, app, 'call checkpoint {"message": "greeted"}', 1)
    assert repo.tags() == {"checkpoints/threads/chat/1": repo.resolve("threads/chat")}
    state = app.get_state(CONFIG)
    assert state.metadata is not None
    assert state.metadata["statevcs"]["label"] == "greeted"
    assert state.values["messages"] == final["messages"]
    _ask(history, app, 'call start_branch {"name": "other-plan"}', 2)
    other = app.get_state({"configurable": {"thread_id": "other-plan"}})
    assert other.values["messages"] == app.get_state(CONFIG).values["messages"]
    again = _ask(history, app, 'call start_branch {"name": "other-plan"}', 3)
    assert "already exists" in again["messages"][-2].content


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("rollback", {"revision": "nope", "reason": "x"}, "nope"),
        ("rollback", {"revision": "HEAD~99", "reason": "x"}, "error: "),
        ("rollback", {"revision": "HEAD", "reason": ""}, "cannot be empty"),
        ("rollback", {"revision": "threads/other", "reason": "x"}, "not a checkpoint of this"),
        ("start_branch", {"name": "../x"}, "error: "),
        ("start_branch", {"name": "a b\x00"}, "error: "),
        ("checkpoint", {"message": "x" * 600}, "at most 500"),
        ("diff", {"a": "HEAD", "b": "@{-1}"}, "error: "),
    ],
)
def test_bad_arguments_answer_an_error_and_write_nothing(
    repo: statevcs.Repo, name: str, arguments: dict[str, Any], expected: str
) -> None:
    app, history = _app(repo, CommandModel())
    _ask(history, app, "hello", 0)
    history.invoke(
        app, {"messages": [HumanMessage("x", id="o")]}, {"configurable": {"thread_id": "other"}}
    )
    before = repo.refs.as_hex()
    answer = _tool(history, name, arguments)
    assert answer.startswith("error: ") and expected in answer
    assert history.pending(CONFIG) == []
    history.apply(CONFIG)
    assert repo.refs.as_hex() == before


def test_a_run_that_fails_drops_its_requests(repo: statevcs.Repo) -> None:
    app, history = _app(repo, CommandModel())
    _ask(history, app, "hello", 0)
    assert "scheduled" in _tool(history, "rollback", {"revision": "HEAD~1", "reason": "x"})
    before = repo.refs.as_hex()
    with pytest.raises(RuntimeError, match="model down"):
        _ask(history, app, "fail", 1)
    assert history.pending(CONFIG) == []
    assert not repo.tags()
    assert repo.refs.as_hex().keys() >= before.keys()


def test_ainvoke_applies_the_rollback_after_the_run(repo: statevcs.Repo) -> None:
    app, history = _app(repo, CommandModel())
    _ask(history, app, "hello", 0)
    request = 'call rollback {"revision": "HEAD~1", "reason": "async"}'

    async def run() -> Any:
        return await history.ainvoke(app, {"messages": [HumanMessage(request, id="u1")]}, CONFIG)

    final = asyncio.run(run())
    assert _contents(repo.show("abandoned/threads/chat/1").messages) == _contents(final["messages"])
    state = app.get_state(CONFIG)
    assert state.metadata is not None and state.metadata["statevcs"]["reason"] == "async"


_HOSTILE = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["HEAD~99999999999", "@{-1}", "HEAD^^^^", "..", "threads/", "@", "HEAD@{3}"]),
)


@settings(
    max_examples=int(os.environ.get("STATEVCS_HISTORY_TOOLS_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(revision=_HOSTILE, text=st.text(max_size=20), name=_HOSTILE, thread=st.text(max_size=20))
def test_hostile_arguments_give_answers_never_exceptions(
    repo: statevcs.Repo, revision: str, text: str, name: str, thread: str
) -> None:
    saver = StateVCSSaver(repo)
    history = HistoryTools(saver)
    if repo.refs.get("refs/heads/threads/chat") is None:
        app, _ = _app(repo, CommandModel())
        _ask(history, app, "hello", 0)
    before = repo.refs.as_hex()
    config: Any = {"configurable": {"thread_id": thread}}
    calls = [
        ("rollback", {"revision": revision, "reason": text}),
        ("start_branch", {"name": name}),
        ("checkpoint", {"message": text}),
        ("diff", {"a": revision, "b": name}),
        ("list_checkpoints", {"limit": len(name)}),
    ]
    for config_used in (CONFIG, config):
        for tool_name, arguments in calls:
            tool = next(t for t in history.tools if t.name == tool_name)
            message = tool.invoke(
                {"type": "tool_call", "name": tool_name, "args": arguments, "id": "x"},
                config_used,
            )
            assert isinstance(message.content, str) and len(message.content) <= 4000
    assert repo.refs.as_hex() == before  # nothing is written before a run ends


def test_head_waits_for_the_step_checkpoint_and_says_so_when_it_never_comes(
    repo: statevcs.Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from statevcs.integrations.langgraph import tools

    monkeypatch.setattr(tools, "_WAIT_SECONDS", 0.2)
    app, history = _app(repo, CommandModel())
    _ask(history, app, "hello", 0)
    ask = 'call rollback {"revision": "HEAD~1", "reason": "x"}'
    before = repo.tags()
    # durability="exit" stores checkpoints only when the run ends: HEAD cannot be named.
    final = history.invoke(
        app, {"messages": [HumanMessage(ask, id="u1")]}, CONFIG, durability="exit"
    )
    answer = final["messages"][-2].content
    assert answer.startswith("error: the checkpoint this step started from is not stored yet")
    assert repo.tags() == before
    # "sync" and the default ("async") name it exactly.
    for index, durability in enumerate(["sync", "async"]):
        final = history.invoke(
            app, {"messages": [HumanMessage(ask, id=f"d{index}")]}, CONFIG, durability=durability
        )
        assert "scheduled" in final["messages"][-2].content
    assert sorted(repo.tags()) == ["abandoned/threads/chat/1", "abandoned/threads/chat/2"]
