"""A Pydantic AI agent and a Google ADK agent on one statevcs repository: runs, forks, rewind.

Run: ``python examples/frameworks_one_repo.py [REPO_FOLDER]``. By default the repository goes
into a new temporary folder, which is kept for the command line (the last line printed says how).

A Pydantic AI calculator answers two questions through ``AgentHistory`` (a commit per run), then
a fork retries the second question from one run back. An ADK agent answers two questions through
``StateVCSSessionService`` (a commit per event), is rewound before the second, and a fork starts
from its first answer. Both live in one repository: ``repo.log_all`` and ``statevcs log --all
--graph`` show them side by side, and ``repo.stats`` that forks share their prefix. It runs
offline (Pydantic AI's ``FunctionModel``, statevcs's ``ScriptedLlm``); pass real models to run
it for real.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.genai import types
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import statevcs
from statevcs.integrations.google_adk import StateVCSSessionService
from statevcs.integrations.google_adk.testing import ScriptedLlm, text, tool_call
from statevcs.integrations.pydantic_ai import AgentHistory


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def calculator(messages: list[Any], info: AgentInfo) -> ModelResponse:
    """Pydantic AI's scripted model: a question gets a tool call, the result an answer."""
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart(f"That makes {last.content}.")])
    return ModelResponse(parts=[ToolCallPart("add", {"a": 40, "b": len(messages)})])


def pydantic_ai_part(repo: statevcs.Repo) -> None:
    agent = Agent(FunctionModel(calculator), tools=[add])
    history = AgentHistory(repo, "pydantic/calc")
    for question in ["What is 40 + 1?", "And 40 plus the messages so far?"]:
        print(f"pydantic-ai: {question} -> {history.run_sync(agent, question).output}")
    before = repo.stats().bytes_stored
    retry = history.fork("~1", branch="pydantic/calc-retry")
    print(f"pydantic-ai: retry -> {retry.run_sync(agent, 'Try that again').output}")
    print(
        f"pydantic-ai: the fork holds {len(retry.messages())} messages and added "
        f"{repo.stats().bytes_stored - before:,} bytes"
    )


async def adk_part(repo: statevcs.Repo) -> None:
    service = StateVCSSessionService(repo)
    model = ScriptedLlm([tool_call("add", {"a": 2, "b": 3}), text("5"), text("7"), text("6")])
    agent = LlmAgent(name="calc", model=model, tools=[add], output_key="answer")
    runner = Runner(agent=agent, app_name="calc", session_service=service)
    session = await service.create_session(app_name="calc", user_id="ana", session_id="s1")

    async def ask(session_id: str, question: str) -> None:
        message = types.Content(role="user", parts=[types.Part(text=question)])
        async for _ in runner.run_async(user_id="ana", session_id=session_id, new_message=message):
            pass

    await ask(session.id, "What is 2 + 3?")
    await ask(session.id, "And 3 + 4?")
    now = await service.get_session(app_name="calc", user_id="ana", session_id="s1")
    print(f"adk: {len(now.events)} events, answer {now.state['answer']!r}")
    await runner.rewind_async(
        user_id="ana", session_id="s1", rewind_before_invocation_id=now.events[-2].invocation_id
    )
    rewound = await service.get_session(app_name="calc", user_id="ana", session_id="s1")
    print(f"adk: rewound, answer {rewound.state['answer']!r} ({len(rewound.events)} events kept)")
    fork = await service.fork_session(
        app_name="calc",
        user_id="ana",
        session_id="s1",
        new_session_id="s1-alt",
        at_event_id=now.events[3].id,
    )
    await ask(fork.id, "And 2 + 4?")
    alt = await service.get_session(app_name="calc", user_id="ana", session_id="s1-alt")
    print(f"adk: fork s1-alt answers {alt.state['answer']!r} after {len(alt.events)} events")


def main(folder: Path) -> None:
    """Run both agents into a new repository in ``folder``."""
    with statevcs.Repo.init(folder) as repo:
        pydantic_ai_part(repo)
        asyncio.run(adk_part(repo))
        print(f"branches: {', '.join(sorted(repo.branches()))}")
        print(f"{sum(1 for _ in repo.log_all())} commits; fsck ok: {repo.fsck().ok}")
    print(f"inspect it: statevcs -C {shlex.quote(str(folder))} log --all --graph --oneline")


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "repo"
    main(target)
