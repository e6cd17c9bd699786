"""An evaluation from a shared prefix: one conversation forked at turn 5 into two system prompts.

Run: ``python examples/eval_fork.py [REPO_FOLDER]``. By default the repository goes into a new
temporary folder, which is kept for the command line (the last lines printed say how).

A travel agent talks for eight turns on ``main``. Then ``statevcs.experiments.replay`` sends
turns 6 to 8 again, from the commit ending turn 5, to two new agents -- one told to be terse,
one told to be thorough (and to check the weather) -- each on its own branch, one commit per
turn naming the turn it replays. ``compare`` shows the runs side by side, and ``repo.stats()``
how few bytes each fork added: the prefix is shared. It runs offline on ``ScriptedModel``;
pass a real Strands model (``BedrockModel``, ``OpenAIModel``, ...) as ``model=`` to run it for
real.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from strands import Agent, tool
from strands.agent.conversation_manager import NullConversationManager
from strands.types.content import Messages

import statevcs
from statevcs.experiments import compare, replay, turn_commit
from statevcs.integrations.strands.experiments import StrandsDriver
from statevcs.integrations.strands.testing import ScriptedModel, ToolCall


@tool
def weather(city: str) -> str:
    """Today's weather in ``city``."""
    return f"Sunny in {city}, 24 C."


QUESTIONS = [
    "Plan three days in Lisbon.",
    "We like museums.",
    "And good food.",
    "Add a day trip.",
    "Summarise the plan so far.",
    "What should we pack?",
    "Is Sintra worth it?",
    "Final plan, please.",
]

PROMPTS = {
    "base": "You plan trips to Portugal.",
    "terse": "You plan trips to Portugal. Answer in one short line.",
    "thorough": "You plan trips to Portugal. Check the weather, then answer in detail.",
}


def agent_for(name: str) -> Callable[[], Agent]:
    """A factory of agents with ``name``'s system prompt and scripted voice."""

    def answer(messages: Messages) -> str:
        detail = " Museums, food and trams, hour by hour." * (4 if name == "thorough" else 1)
        return f"[{name}] reply to message {len(messages)}.{detail}"

    first = [ToolCall("weather", {"city": "Lisbon"})] if name == "thorough" else []

    def make() -> Agent:
        return Agent(
            model=ScriptedModel(first, default=answer, model_id=f"scripted-{name}"),
            tools=[weather],
            system_prompt=PROMPTS[name],
            conversation_manager=NullConversationManager(),
            callback_handler=None,
        )

    return make


def main(folder: Path) -> None:
    """Run the conversation, the two replays and the comparison in a repository at ``folder``."""
    repo = statevcs.Repo.init(folder)
    print(f"repository: {repo.url}\n")

    agent = agent_for("base")()
    for number, question in enumerate(QUESTIONS, 1):
        agent(question)
        repo.commit(agent, f"turn {number}")
    prefix = repo.stats().bytes_stored
    print(f"$ main: {len(QUESTIONS)} turns, {len(agent.messages)} messages, {prefix:,} bytes\n")

    at = turn_commit(repo, "main", 5)
    added = {}
    for name in ("terse", "thorough"):
        before = repo.stats().bytes_stored
        result = replay(repo, StrandsDriver(agent_for(name)), f"{at}..main", branch=f"exp/{name}")
        added[name] = repo.stats().bytes_stored - before
        change = result.changes["system_prompt"]
        print(
            f"$ replay {at[:12]}..main -> {result.branch}: turns", [t.index for t in result.turns]
        )
        print(f"  system prompt {change['from']!r}\n             -> {change['to']!r}")
        print(f"  added {added[name]:,} bytes\n")

    for a, b in (("main", "exp/terse"), ("exp/terse", "exp/thorough")):
        result = compare(repo, a, b)
        print(f"$ compare({a!r}, {b!r}): merge base {(result.merge_base or '')[:12]}, ", end="")
        print(f"{result.common_prefix} messages shared, turns {result.diverged} diverged")
        for turn in result.turns:
            if turn.status == "same":
                continue
            tools = ", ".join(
                f"only {side}: {' '.join(names)}"
                for side, names in (("A", turn.tools_only_a), ("B", turn.tools_only_b))
                if names
            )
            changed = [c.key for c in turn.extras]
            print(
                f"  turn {turn.index}: {turn.status}; {len(turn.messages.changes)} message(s) "
                f"differ; extras {changed}" + (f"; {tools}" if tools else "")
            )
        print()

    stats = repo.stats()
    print("$ repo.stats()")
    print(f"  {stats.commits} commits, {stats.bytes_stored:,} bytes stored; the two forks added")
    print(
        f"  {added['terse']:,} and {added['thorough']:,} bytes on top of the {prefix:,}-byte "
        "run they share"
    )
    repo.close()
    where = shlex.quote(str(folder))
    print(f"\nThe repository stays in {folder}; inspect it with:")
    print(f"  statevcs -C {where} log --graph")
    print(f"  statevcs -C {where} compare exp/terse exp/thorough")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        main(Path(tempfile.mkdtemp(prefix="statevcs-eval-fork-")) / "history")
