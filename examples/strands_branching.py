"""Three experiments branched from one Strands conversation, compared with ``repo.diff``.

Run: ``python examples/strands_branching.py [REPO_FOLDER]``. By default the repository goes into a
new temporary folder, which is kept for the command line (the last lines printed say how).

A planner agent talks for six turns on ``main``. Then three experiments -- ``exp/budget``,
``exp/luxury`` and ``exp/family`` -- each start a fresh agent from that shared prefix with
``StateVCSSessionManager(repo, branch=..., start="main")``, give it a different instruction and
run three more turns. ``repo.diff`` shows where they part ways; ``repo.stats`` shows that the
shared prefix is stored once. It runs offline on ``ScriptedModel``; pass a real Strands model
(``BedrockModel``, ``OpenAIModel``, ...) as ``model=`` to run it for real.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path

from strands import Agent, ToolContext, tool
from strands.agent.conversation_manager import NullConversationManager
from strands.types.content import Messages

import statevcs
from statevcs.integrations.strands import StateVCSSessionManager
from statevcs.integrations.strands.testing import ScriptedModel, ToolCall


@tool(context=True)
def set_budget(eur: int, tool_context: ToolContext) -> str:
    """Record the trip budget in the agent's state."""
    tool_context.agent.state.set("budget_eur", eur)
    return f"budget set to {eur} EUR"


def planner(model: ScriptedModel, session: StateVCSSessionManager) -> Agent:
    """The same agent configuration for the prefix and every experiment."""
    return Agent(
        model=model,
        tools=[set_budget],
        system_prompt="You plan trips to Portugal.",
        conversation_manager=NullConversationManager(),
        session_manager=session,
        callback_handler=None,
    )


PREFIX = [
    "Plan a week in Portugal for two.",
    "Start in Lisbon.",
    "Add two days in Porto.",
    "We like museums.",
    "And good food.",
    "Summarise the plan so far.",
]

EXPERIMENTS = {
    "budget": (600, ["Cut every cost you can.", "Hostels are fine.", "Final plan, please."]),
    "luxury": (6000, ["Make it luxurious.", "Add a spa day.", "Final plan, please."]),
    "family": (2500, ["We bring two kids.", "Add a beach day.", "Final plan, please."]),
}


def scripted(tag: str, *first: ToolCall) -> ScriptedModel:
    """A scripted model: makes the ``first`` tool calls, then answers in ``tag``'s voice."""

    def answer(messages: Messages) -> str:
        return f"[{tag}] Plan v{len(messages)}: " + "Lisbon, Porto, museums and food. " * 8

    return ScriptedModel(list(first), default=answer)


def main(folder: Path) -> None:
    """Run the prefix and the three experiments in a repository at ``folder``."""
    repo = statevcs.Repo.init(folder)
    print(f"repository: {repo.url}\n")

    print(f"$ the shared prefix: {len(PREFIX)} turns on 'main' (one commit per turn)")
    agent = planner(scripted("base"), StateVCSSessionManager(repo, branch="main"))
    for question in PREFIX:
        agent(question)
    prefix_bytes = repo.stats().bytes_stored
    print(f"  {len(agent.messages)} messages, {prefix_bytes:,} bytes stored\n")

    for name, (budget, questions) in EXPERIMENTS.items():
        branch = f"exp/{name}"
        model = scripted(name, ToolCall("set_budget", {"eur": budget}))
        session = StateVCSSessionManager(repo, branch=branch, start="main")
        experiment = planner(model, session)  # restored: the whole prefix, nothing re-run
        print(f"$ {branch}: a fresh agent starts from 'main' with {len(experiment.messages)} msgs")
        for question in questions:
            experiment(question)
        print(f"  budget {experiment.state.get('budget_eur')} EUR, {len(experiment.messages)} msgs")
    print()

    print("$ repo.diff('exp/budget', 'exp/luxury')")
    for line in str(repo.diff("exp/budget", "exp/luxury")).splitlines()[:8]:
        print(f"  {line}")
    print("  ...\n")
    for a, b in [("main", "exp/family"), ("exp/luxury", "exp/family")]:
        diff = repo.diff(a, b)
        print(
            f"$ repo.diff({a!r}, {b!r}): common prefix {diff.messages.common_prefix} messages, "
            f"{len(diff.state)} state change(s)"
        )

    stats = repo.stats()
    print("\n$ repo.stats()")
    print(f"  branches: {', '.join(sorted(stats.branches))}")
    print(f"  {stats.commits} commits, {stats.bytes_stored:,} bytes stored")
    print(f"  the three experiments added {stats.bytes_stored - prefix_bytes:,} bytes on top of")
    print(
        f"  the {prefix_bytes:,}-byte prefix (shared, stored once); dedup {stats.dedup_ratio:.1f}x"
    )
    repo.close()
    where = shlex.quote(str(folder))
    print(f"\nThe repository stays in {folder}; inspect it with:")
    print(f"  statevcs -C {where} log --graph")
    print(f"  statevcs -C {where} diff exp/budget exp/luxury")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        main(Path(tempfile.mkdtemp(prefix="statevcs-strands-branching-")) / "history")
