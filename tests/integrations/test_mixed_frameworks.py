"""One repository, five frameworks: a Strands agent, a LangGraph thread, an OpenAI Agents
session, a Pydantic AI history and an ADK session side by side, read back through
``statevcs log --all --graph``, ``gc``, ``fsck`` and the git mirror."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("google.adk")
pytest.importorskip("dulwich")

from agents import Agent as OpenAIAgent
from agents import Runner as OpenAIRunner
from agents import set_tracing_disabled
from click.testing import CliRunner
from dulwich.repo import Repo as GitRepo
from google.adk.agents import LlmAgent
from google.adk.runners import Runner as AdkRunner
from google.genai import types
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.models.test import TestModel
from strands import Agent as StrandsAgent

from statevcs import Repo
from statevcs.cli import cli
from statevcs.integrations.google_adk import StateVCSSessionService
from statevcs.integrations.google_adk.testing import ScriptedLlm
from statevcs.integrations.google_adk.testing import text as adk_text
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.openai_agents import StateVCSSession
from statevcs.integrations.openai_agents.testing import ScriptedModel as OpenAIScripted
from statevcs.integrations.openai_agents.testing import text as openai_text
from statevcs.integrations.pydantic_ai import AgentHistory
from statevcs.integrations.strands.testing import ScriptedModel as StrandsScripted
from statevcs.mirror.git import export_git

set_tracing_disabled(True)


class Chat(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def reply(state: Chat) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"re: {state['messages'][-1].content}")]}


def langgraph_app(repo: Repo) -> Any:
    graph = StateGraph(Chat)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    graph.add_edge("reply", END)
    return graph.compile(checkpointer=StateVCSSaver(repo))


def fill(repo: Repo) -> dict[str, Any]:
    """Two turns of each framework's agent; return what each holds, as its framework reads it."""
    strands = StrandsAgent(
        model=StrandsScripted(["strands one", "strands two"]), callback_handler=None
    )
    for prompt in ("hello strands", "again"):
        strands(prompt)
        repo.commit(strands, f"strands: {prompt}", branch="strands")

    app = langgraph_app(repo)
    thread = {"configurable": {"thread_id": "graph-thread"}}
    for prompt in ("hello graph", "again"):
        app.invoke({"messages": [HumanMessage(content=prompt)]}, thread)

    session = StateVCSSession(repo, "openai-user")
    openai_agent = OpenAIAgent(
        name="openai", model=OpenAIScripted([[openai_text("oa one")], [openai_text("oa two")]])
    )
    for prompt in ("hello openai", "again"):
        asyncio.run(OpenAIRunner.run(openai_agent, prompt, session=session))

    history = AgentHistory(repo, "pydantic-chat")
    pydantic_agent = PydanticAgent(TestModel(custom_output_text="pydantic says hi"))
    for prompt in ("hello pydantic", "again"):
        history.run_sync(pydantic_agent, prompt)

    service = StateVCSSessionService(repo)
    adk_agent = LlmAgent(name="adk", model=ScriptedLlm([adk_text("adk one"), adk_text("adk two")]))
    runner = AdkRunner(agent=adk_agent, app_name="mixed", session_service=service)

    async def adk() -> str:
        adk_session = await service.create_session(app_name="mixed", user_id="u", session_id="s1")
        for prompt in ("hello adk", "again"):
            message = types.Content(role="user", parts=[types.Part(text=prompt)])
            async for _ in runner.run_async(
                user_id="u", session_id=adk_session.id, new_message=message
            ):
                pass
        return adk_session.id

    asyncio.run(adk())
    return read(repo)


def read(repo: Repo) -> dict[str, Any]:
    """Each framework's state, read back through its own integration."""
    strands = StrandsAgent(model=StrandsScripted([]), callback_handler=None)
    repo.checkout(strands, "strands")
    app = langgraph_app(repo)
    graph_messages = app.get_state({"configurable": {"thread_id": "graph-thread"}}).values[
        "messages"
    ]
    session_items = asyncio.run(StateVCSSession(repo, "openai-user").get_items())
    pydantic = ModelMessagesTypeAdapter.dump_json(AgentHistory(repo, "pydantic-chat").messages())
    adk = asyncio.run(
        StateVCSSessionService(repo).get_session(app_name="mixed", user_id="u", session_id="s1")
    )
    return {
        "strands": [m["content"] for m in strands.messages],
        "langgraph": [m.content for m in graph_messages],
        "openai": session_items,
        "pydantic": pydantic,
        "adk": [e.model_dump(mode="json") for e in adk.events],
    }


def statevcs_cli(path: Path, *args: str) -> str:
    previous = os.getcwd()
    try:
        os.chdir(path)
        result = CliRunner().invoke(cli, list(args), prog_name="statevcs")
    finally:
        os.chdir(previous)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result.stdout


def test_five_frameworks_share_one_repository(tmp_path: Path) -> None:
    path = tmp_path / "mixed"
    with Repo.init(path) as repo:
        before = fill(repo)
        branches = set(repo.branches())
        assert {"strands", "openai-user", "pydantic-chat", "adk/mixed/sessions/u/s1"} <= branches
        assert any("graph-thread" in name for name in branches)
        kinds = {repo.show(name).kind for name in branches}
        assert {"strands.agent", "openai_agents.session", "pydantic_ai.messages"} <= kinds
        assert "google_adk.session" in kinds
        assert len(before["langgraph"]) == 4 and len(before["adk"]) == 4
        assert len(before["openai"]) == 4

        # a scratch fork of every conversation, then deleted: gc takes back only what it added
        for name in sorted(branches):
            repo.branch(f"scratch/{name.replace('/', '-')}", name)
        history = AgentHistory(repo, "scratch/pydantic-chat")
        history.run_sync(PydanticAgent(TestModel(custom_output_text="dropped")), "dropped turn")
        for name in list(repo.branches()):
            if name.startswith("scratch/"):
                repo.delete_branch(name)
        report = repo.gc("0", expire_reflog="0")
        assert report.deleted  # the dropped turn's objects
        fsck = repo.fsck()
        assert fsck.ok, fsck
        assert read(repo) == before

    graph = statevcs_cli(path, "log", "--all", "--graph")
    for name in ("strands", "openai-user", "pydantic-chat", "adk/mixed/sessions/u/s1"):
        assert f"{name})" in graph or f"{name}," in graph, name
    assert "dropped turn" not in graph
    statevcs_cli(path, "fsck")  # exits 0: no problem found

    with Repo.open(path) as repo:
        export = export_git(repo, tmp_path / "mirror.git")
        assert export is not None
        git = GitRepo(str(tmp_path / "mirror.git"))
        refs = {ref.decode() for ref in git.get_refs()}
        for name in repo.branches():
            assert f"refs/heads/{name}" in refs
        tip = git[git.refs[b"refs/heads/pydantic-chat"]]
        tree = git[tip.tree]
        names = {entry.path.decode() for entry in tree.iteritems()}
        assert "messages" in names and "statevcs.json" in names
        git.close()
