"""The experiments driver for a LangGraph compiled graph: fork, replay and compare threads.

A run is a thread (branch ``threads/<thread id>``), so ``fork(repo, driver, rev,
branch="trip-b")`` starts thread ``trip-b`` at any checkpoint of another thread (a new branch:
no object written), and ``replay(repo, LangGraphDriver(other_graph), "A..B", branch="trip-c")``
sends the user messages of ``A..B`` to another graph on a new thread. The graph must be compiled
with a :class:`~statevcs.integrations.langgraph.StateVCSSaver` on the same repository: the
saver commits every step, so a turn is the checkpoints one ``invoke`` writes.

LangGraph keeps only flat values of ``config["metadata"]`` in a checkpoint's metadata, so a
replayed turn's checkpoints record ``replay_source``, ``replay_source_tip``, ``replay_turn``
and ``replay_changes`` (JSON text) there (``commit.metadata["metadata"]``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel

from ...errors import StateVCSError
from ...experiments import Turn, turns
from ...refs import short_name
from .codec import item_value
from .names import BRANCH_ROOT, ThreadKey, decode, parse_branch
from .saver import StateVCSSaver

if TYPE_CHECKING:
    from ...repo import Commit, Repo


@dataclass(frozen=True, slots=True)
class Thread:
    """A LangGraph run: the graph and the config naming its thread."""

    graph: Pregel[Any, Any, Any, Any]
    thread_id: str

    @property
    def config(self) -> RunnableConfig:
        """``{"configurable": {"thread_id": ...}}`` for ``invoke`` and ``get_state``."""
        return {"configurable": {"thread_id": self.thread_id}}

    def invoke(self, value: Any) -> Any:
        """Run the graph on this thread."""
        return self.graph.invoke(value, self.config)


class LangGraphDriver:
    """A :class:`statevcs.experiments.Driver` for a graph compiled with a ``StateVCSSaver``."""

    def __init__(self, graph: Pregel[Any, Any, Any, Any], *, input_key: str = "messages") -> None:
        """Drive ``graph``; each user turn is sent as ``{input_key: [HumanMessage(...)]}``."""
        if not isinstance(graph, Pregel):
            raise TypeError(f"graph must be a compiled LangGraph graph, got {type(graph).__name__}")
        if not isinstance(graph.checkpointer, StateVCSSaver):
            raise TypeError(
                "graph must be compiled with checkpointer=StateVCSSaver(repo) on the repository "
                f"the experiment uses, got {type(graph.checkpointer).__name__}"
            )
        if not isinstance(input_key, str):
            raise TypeError(f"input_key must be a str, got {type(input_key).__name__}")
        self.graph = graph
        self.saver: StateVCSSaver = graph.checkpointer
        self.input_key = input_key

    def _check_repo(self, repo: Repo) -> None:
        if repo.store.identity != self.saver.repo.store.identity:
            raise StateVCSError(
                "the graph's StateVCSSaver writes to another repository than the one given; "
                "compile the graph with StateVCSSaver(repo) on this repository"
            )

    def branch(self, name: str) -> str:
        """Thread ``name``'s branch: ``threads/<name, percent-encoded>``."""
        return short_name(ThreadKey.of(name, "").branch)

    def restore(self, repo: Repo, branch: str, *, keep_settings: bool) -> Thread:
        """The thread of ``branch``: the graph reads its checkpoints through the saver."""
        self._check_repo(repo)
        parsed = parse_branch("refs/heads/" + branch)
        if (
            parsed is None
            or parsed[1] != ""
            or not ("refs/heads/" + branch).startswith(BRANCH_ROOT)
        ):
            raise StateVCSError(f"{branch!r} is not a LangGraph thread's branch (threads/<id>)")
        return Thread(self.graph, decode(parsed[0]))

    def user_turns(self, repo: Repo, revisions: str) -> list[Turn]:
        """The user turns of the range (the ``user`` messages of the list channels)."""
        return turns(repo, revisions)

    def run_turn(self, agent: Thread, turn: Turn, metadata: Mapping[str, Any]) -> None:
        """Invoke the graph with the turn's user message (rebuilt as the same LangChain message)."""
        message = item_value(turn.prompt, self.saver.serde)
        if not isinstance(message, HumanMessage):
            message = HumanMessage(turn.text)
        config: RunnableConfig = {**agent.config, "metadata": _flat(metadata)}
        agent.graph.invoke({self.input_key: [message]}, config)

    def commit(
        self, repo: Repo, agent: Thread, branch: str, message: str, metadata: Mapping[str, Any]
    ) -> Commit:
        """The saver committed every step: the turn's commit is the thread's newest checkpoint."""
        return repo.get_commit(branch)

    def settings(self, agent: Thread) -> dict[str, Any]:
        """The graph's name and nodes."""
        return {"graph": agent.graph.get_name(), "nodes": sorted(agent.graph.nodes)}

    def stored_settings(self, repo: Repo, commit: str) -> dict[str, Any]:
        """A checkpoint does not record which graph wrote it."""
        return {}


def _flat(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Replay metadata as the flat values LangGraph keeps in checkpoint metadata."""
    found: dict[str, Any] = {}
    for key, value in metadata.items():
        if not isinstance(value, Mapping):
            continue
        for name, item in value.items():
            flat = f"{key}_{name}"
            if isinstance(item, (str, int, bool, float)) or item is None:
                found[flat] = "" if item is None else item
            else:
                found[flat] = json.dumps(item, sort_keys=True)
    return found


__all__ = ["LangGraphDriver", "Thread"]
