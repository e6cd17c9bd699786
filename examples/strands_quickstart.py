"""statevcs + Strands Agents: commit a live agent every turn, travel back, branch, measure.

Run: ``python examples/strands_quickstart.py [REPO_FOLDER]``. By default the repository goes into
a new temporary folder, which is kept so that you can inspect it with the command line (the last
lines printed say how). It runs offline: the agent is a real ``strands.Agent`` whose model is
``ScriptedModel``, which replays scripted replies and tool calls the way a real provider streams
them. To use a real model, pass e.g. ``model=BedrockModel(model_id=...)`` or
``model=OpenAIModel(...)`` instead; nothing else changes.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from strands import Agent, tool
from strands.agent.conversation_manager import NullConversationManager

import statevcs
from statevcs.integrations.strands import StateVCSSessionManager
from statevcs.integrations.strands.testing import ScriptedModel, ToolCall


@tool
def search(query: str) -> str:
    """Search travel guides."""
    return f"Guides for {query}: take tram 28, book the castle early, try pasteis de nata."


def answer(topic: str) -> str:
    """A long-ish scripted answer (real answers are long too, which is what dedup saves)."""
    return f"Here is the plan for {topic}. " + "Walk, eat, look at tiles, repeat. " * 20


QUESTIONS = [
    "Plan three days in Lisbon.",
    "Add a day trip to Sintra.",
    "Which museums are free on Sundays?",
    "Where should we eat near Alfama?",
    "How do we get to the airport?",
]
TURNS = 30


def scripted_model() -> ScriptedModel:
    """Answers every question; on turn 2 it first calls the ``search`` tool, as a model would."""
    script: list[Any] = [answer("three days in Lisbon"), ToolCall("search", {"query": "Sintra"})]
    return ScriptedModel(script, default=lambda messages: answer(f"message {len(messages)}"))


def main(folder: Path) -> None:
    """Run the walkthrough in a repository at ``folder``."""
    repo = statevcs.Repo.init(folder)
    print(f"repository: {repo.url}\n")

    model = scripted_model()  # swap for a real model: BedrockModel(...), OpenAIModel(...)
    agent = Agent(
        model=model,
        tools=[search],
        conversation_manager=NullConversationManager(),  # keep all history (default: 40 msgs)
        callback_handler=None,
        name="planner",
    )
    agent.state.set("city", "Lisbon")

    print(f"$ {TURNS} turns, one commit after each: repo.commit(agent, message=...)")
    for turn in range(1, TURNS + 1):
        question = QUESTIONS[(turn - 1) % len(QUESTIONS)]
        agent(question)
        agent.state.set("turns", turn)
        commit = repo.commit(agent, message=f"turn {turn}: {question}")
        if turn <= 3 or turn > TURNS - 2:
            print(f"  {commit.short_id}  {len(agent.messages):>2} messages  {commit.message}")
        elif turn == 4:
            print("  ...")

    print(f"\n$ repo.checkout(agent, 'main~3')  -> the live agent is back after turn {TURNS - 3}")
    repo.checkout(agent, "main~3")
    print(f"  messages: {len(agent.messages)}, state: {agent.state.get()}")
    print(f"  last answer: {agent.messages[-1]['content'][0]['text'][:60]}...")

    print("\n$ repo.branch('cheaper', rev='main~3'); checkout; one more turn; commit")
    repo.branch("cheaper", rev="main~3")
    repo.checkout(agent, "cheaper")
    agent("Make it cheaper.")
    commit = repo.commit(agent, message="cheaper variant")
    print(f"  {commit.short_id} on {repo.attached_branch(agent)!r}: {len(agent.messages)} messages")
    print(f"  branches: {sorted(repo.branches())}")

    print("\n$ repo.diff('main', 'cheaper')")
    for line in str(repo.diff("main", "cheaper")).splitlines():
        print(f"  {line}")

    print("\n$ a session manager: restart a 'process' and resume the same branch")
    with StateVCSSessionManager(repo, branch="session-42", commit_on="invocation") as session:
        first = Agent(
            model=ScriptedModel([answer("Porto")]), session_manager=session, callback_handler=None
        )
        first("Plan a weekend in Porto.")  # committed when the call ends: 'turn 1'
        first.state.set("booked", False)  # set after the last call: committed on leaving 'with'
    resumed = Agent(
        model=ScriptedModel([]),
        session_manager=StateVCSSessionManager(repo, branch="session-42"),
        callback_handler=None,
    )
    print(f"  a fresh Agent on 'session-42' starts with {len(resumed.messages)} messages")
    print(f"  and state {resumed.state.get()}")
    print(f"  log: {[c.message for c in repo.log('session-42')]}")

    stats = repo.stats()
    print("\n$ repo.stats()")
    print(
        f"  commits {stats.commits}, objects {stats.objects}, bytes stored {stats.bytes_stored:,}"
    )
    print(f"  a full copy per commit would be {stats.naive_bytes:,} bytes")
    print(f"  dedup ratio: {stats.dedup_ratio:.1f}x (every message is stored once)")
    repo.close()
    where = shlex.quote(str(folder))
    print(f"\nThe repository stays in {folder}; inspect it with:")
    print(f"  statevcs -C {where} log --graph          # every branch")
    print(f"  statevcs -C {where} show session-42 --messages")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        main(Path(tempfile.mkdtemp(prefix="statevcs-strands-quickstart-")) / "history")
