"""A LangGraph chat persisted with StateVCSSaver: history, time travel, a fork, and the log.

Runs offline: the "model" is a node that answers from the conversation. Replace ``reply`` with
a real chat model call (``ChatOpenAI(...).invoke(state["messages"])``); nothing else changes.

    python examples/langgraph_quickstart.py          # prints the temporary folder it used
"""

import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

from click.testing import CliRunner
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

import statevcs
from statevcs.cli import cli
from statevcs.integrations.langgraph import StateVCSSaver


class Chat(TypedDict, total=False):
    """The graph's state: the conversation and a turn counter."""

    messages: Annotated[list[AnyMessage], add_messages]
    turns: int


def reply(state: Chat) -> dict[str, Any]:
    """Answer the last user message (a stand-in for a chat model)."""
    question = str(state["messages"][-1].content)
    turn = state.get("turns", 0) + 1
    answer = AIMessage(content=f"Answer {turn}: you asked {question!r}", id=f"ai-{turn}")
    return {"messages": [answer], "turns": turn}


def build(saver: StateVCSSaver) -> Any:
    """A one-node chat graph that checkpoints every step into ``saver``'s repository."""
    graph = StateGraph(Chat)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    graph.add_edge("reply", END)
    return graph.compile(checkpointer=saver)


def main(folder: Path) -> None:
    """Run the demo in ``folder`` (a new statevcs repository)."""
    repo = statevcs.Repo.init(folder)
    saver = StateVCSSaver(repo)
    app = build(saver)
    config = {"configurable": {"thread_id": "trip"}}
    for index, question in enumerate(["Plan a trip to Lisbon", "Which museums?", "And food?"]):
        app.invoke({"messages": [HumanMessage(content=question, id=f"user-{index}")]}, config)

    history = list(app.get_state_history(config))
    print(f"thread 'trip': {len(history)} checkpoints, branch {sorted(repo.branches())}")

    # Time travel: resume from the checkpoint taken before the second answer.
    before = next(s for s in history if s.next == ("reply",) and s.values.get("turns") == 1)
    replayed = app.invoke(None, before.config)
    print(
        f"time travel to {before.config['configurable']['checkpoint_id'][:13]}...: "
        f"{len(replayed['messages'])} messages, turns={replayed['turns']}"
    )

    # A fork: change the state of that earlier checkpoint and continue from there.
    forked = app.update_state(before.config, {"turns": 10})
    result = app.invoke({"messages": [HumanMessage(content="Porto instead?", id="user-x")]}, forked)
    print(f"fork: last answer {result['messages'][-1].content!r}")

    # Any thread is a branch: copying one is O(1) and shares every object.
    saver.copy_thread("trip", "trip-copy")
    print(f"branches after copy_thread: {sorted(repo.branches())}")

    log = CliRunner().invoke(cli, ["-C", str(folder), "log", "--graph", "--oneline", "--all"])
    print("$ statevcs log --graph --oneline --all")
    print(log.output, end="")
    repo.close()
    print(f"inspect it: statevcs -C {folder} log --graph threads/trip")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        main(Path(tempfile.mkdtemp(prefix="statevcs-langgraph-quickstart-")) / "history")
