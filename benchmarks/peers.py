"""Peer benchmark: statevcs against LangGraph, Strands, OpenAI Agents, Pydantic AI and ADK stores.

One command, one process, the same workloads for every system:

* W1: one conversation of ``--turns`` turns (default 1,000; user ~200 characters, assistant
  ~600 characters of deterministic pseudo-random words), a checkpoint/commit per turn;
* W2: from turn ``turns // 2``, ``--forks`` forks (default 10) of 10 turns each;
* W3: the per-turn persistence time of one more turn at 100 / 1,000 / 10,000 messages.

Systems: statevcs ``repo.commit`` of a dict holding ``statevcs.tracked_messages()``; a real
LangGraph ``StateGraph`` (one node appending the scripted assistant reply) on ``SqliteSaver``
and on statevcs's ``StateVCSSaver``, each with a plain ``add_messages`` channel and with
LangGraph's (beta) ``DeltaChannel``; a scripted Strands ``Agent`` with Strands'
``SnapshotSessionManager`` (an immutable snapshot per turn) and with statevcs's
``StateVCSSessionManager``; a plain JSON file per turn; and, each against its statevcs
counterpart fed the same items per turn, the OpenAI Agents SDK's ``SQLiteSession``
(``StateVCSSession``), Pydantic AI's own persistence, a ``ModelMessagesTypeAdapter`` JSON file
per turn (``AgentHistory``), pydantic-ai-harness's ``SqliteStepStore`` (``StateVCSStepStore``)
and Google ADK's ``SqliteSessionService`` (``StateVCSSessionService``). A framework store
without history or forks gets them the way its users do: restore turn 10 reads the log's
prefix, and a fork copies the conversation into a new session.

Printed: bytes on disk with every connection closed and the WAL while open; per-turn
persistence time (the saver's / session manager's own time) and whole-turn time around turn 50
and at the last turns; full history listing; restore latest and restore turn 10 (a fresh
connection each time); bytes per forked turn; W3; then every figure as a ratio to its statevcs
counterpart, and the targets of issues 11 and 21. Scratch files live in a temp dir removed at exit.

    python benchmarks/peers.py                     # the full workload (a few minutes)
    python benchmarks/peers.py --quick             # 200 turns, 3 forks, W3 at 100 / 1,000
    python benchmarks/peers.py --turns 20 --forks 2 --sizes 50   # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import reduce
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from strands import Agent
from strands.agent.conversation_manager import NullConversationManager
from strands.hooks import AfterInvocationEvent, HookProvider, HookRegistry
from strands.session import SessionManager, SnapshotSessionManager
from strands.storage import LocalFileStorage
from strands.types.content import Messages

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by path
import prose
from agents import SQLiteSession
from google.adk.events.event import Event as AdkEvent
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types as genai_types
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)
from pydantic_ai_harness.step_persistence import ContinuableSnapshot, RunRecord, SqliteStepStore

import statevcs
from statevcs.integrations.google_adk import StateVCSSessionService
from statevcs.integrations.openai_agents import StateVCSSession
from statevcs.integrations.pydantic_ai import AgentHistory
from statevcs.integrations.pydantic_ai.steps import StateVCSStepStore
from statevcs.integrations.strands import StateVCSSessionManager
from statevcs.integrations.strands.testing import Reply, ScriptedModel

StateVCSSaver: type[Any] | None
try:
    from statevcs.integrations.langgraph import StateVCSSaver
except ImportError as exc:  # the integration is still being built
    StateVCSSaver = None
    SAVER_MISSING = f"not available yet ({exc})"
else:
    SAVER_MISSING = ""

FORK_TURNS = 10
NOT_AVAILABLE = "not available yet"

# --- the conversation ---------------------------------------------------------------------

_rng = random.Random(1234)
_WORDS = tuple(prose.vocabulary(_rng, size=4000, longest=10))


def _text(seed: int, chars: int) -> str:
    """Pseudo-random words (a 4,000-word vocabulary), so no two messages share long runs."""
    return prose.text(random.Random(seed), _WORDS, chars)


def user_text(turn: int) -> str:
    """The user message of ``turn`` (~200 characters, starting with ``[turn]``)."""
    return f"[{turn}] " + _text(turn * 7919 + 1, 200)


def assistant_text(turn: int) -> str:
    """The assistant reply of ``turn`` (~600 characters)."""
    return _text(turn * 104729 + 2, 600)


def turn_of(text: str) -> int:
    """The turn number a user message starts with."""
    return int(text[1 : text.index("]")])


def fork_turn(fork: int, step: int) -> int:
    """A turn number of fork ``fork`` no main-line turn uses (distinct text per fork)."""
    return 1_000_000 + fork * 1_000 + step


def dict_turn(turn: int) -> list[dict[str, Any]]:
    """One exchange as plain dicts (statevcs repo.commit and the JSON baseline)."""
    return [
        {"role": "user", "content": user_text(turn)},
        {"role": "assistant", "content": assistant_text(turn)},
    ]


# --- measurements -------------------------------------------------------------------------


@dataclass
class Row:
    """One system's figures."""

    name: str
    reference: str = ""
    bytes_closed: int | None = None
    wal_open: int | None = None
    persist: list[float] = field(default_factory=list)
    whole: list[float] = field(default_factory=list)
    persist_write: list[float] = field(default_factory=list)
    listing: float | None = None
    listing_note: str = ""
    saver_listing: float | None = None
    saver_listing_note: str = ""
    restore_latest: float | None = None
    restore_10: float | None = None
    fork_bytes: float | None = None
    w3_persist: dict[int, float] = field(default_factory=dict)
    w3_whole: dict[int, float] = field(default_factory=dict)
    status: str = ""
    notes: list[str] = field(default_factory=list)


def disk_bytes(path: Path, suffix: str = "") -> int:
    """Total size of the files below ``path`` (only names ending in ``suffix`` if given)."""
    total = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            if name.endswith(suffix):
                total += os.path.getsize(os.path.join(root, name))
    return total


def best_of(fn: Callable[[], float], repeat: int = 3) -> float:
    """The fastest of ``repeat`` runs of ``fn`` (which times itself and returns seconds)."""
    return min(fn() for _ in range(repeat))


def timed_listing(items: Iterator[Any], budget: float) -> tuple[float, int, bool]:
    """Consume ``items`` until exhausted or ``budget`` seconds pass: (seconds, count, done)."""
    start = time.perf_counter()
    count = 0
    for _ in items:
        count += 1
        if time.perf_counter() - start > budget:
            return time.perf_counter() - start, count, False
    return time.perf_counter() - start, count, True


def capped_listing(items: Callable[[], Iterator[Any]], budget: float) -> tuple[float, int, bool]:
    """:func:`timed_listing` in a forked child killed after ``budget`` seconds.

    A listing can spend its whole budget before its first item (SqliteSaver sorts every
    checkpoint blob of the thread before returning one), which a check between items cannot
    stop. ``items`` is called in the child, untimed (it opens the store).
    """
    context = multiprocessing.get_context("fork")
    count = context.Value("q", 0, lock=False)
    elapsed = context.Value("d", -1.0, lock=False)

    def child() -> None:
        iterator = items()
        start = time.perf_counter()
        for _ in iterator:
            count.value += 1
        elapsed.value = time.perf_counter() - start

    process = context.Process(target=child, daemon=True)
    process.start()
    process.join(budget)
    if process.is_alive():
        process.kill()
        process.join()
        return budget, count.value, False
    if process.exitcode != 0 or elapsed.value < 0:
        raise RuntimeError(f"the listing failed in its child process (exit {process.exitcode})")
    return elapsed.value, count.value, True


class System:
    """One persistence layer, driven through W1, W2 and W3."""

    name = ""
    reference = ""

    def __init__(self, folder: Path, turns: int) -> None:
        self.folder = folder
        self.turns = turns

    def start(self) -> None:
        """Create the store and whatever drives it."""
        raise NotImplementedError

    def turn(self, turn: int) -> tuple[float, float]:
        """Run and persist one turn: (persistence seconds, whole-turn seconds)."""
        raise NotImplementedError

    def wal_bytes(self) -> int | None:
        """Bytes in SQLite write-ahead logs while the store is open (``None``: no WAL)."""
        wal = disk_bytes(self.folder, "-wal")
        return wal if wal or self.uses_sqlite else None

    uses_sqlite = True

    def close(self) -> None:
        """Close every connection."""
        raise NotImplementedError

    def listing(self, budget: float) -> tuple[float, int, bool]:
        """Time listing the full history from a fresh connection."""
        raise NotImplementedError

    def saver_listing(self, budget: float) -> tuple[float, int, bool] | None:
        """The store's own listing (as :meth:`listing`) when it differs from :meth:`listing`."""
        return None

    def restore(self, turn: int | None) -> float:
        """Seconds to load the latest state (``None``) or the state after ``turn``, cold."""
        raise NotImplementedError

    def forks(self, at: int, forks: int) -> None:
        """Run ``forks`` forks of :data:`FORK_TURNS` turns from the state after turn ``at``."""
        raise NotImplementedError

    def per_turn_at(self, folder: Path, size: int, samples: int) -> tuple[float, float]:
        """Median (persistence, whole-turn) seconds of one turn at ``size`` messages."""
        raise NotImplementedError


# --- statevcs repo.commit -----------------------------------------------------------------


class StatevcsCommit(System):
    """``repo.commit(state)`` of a dict whose messages are ``statevcs.tracked_messages()``."""

    name = "statevcs repo.commit (dict)"
    reference = name

    def start(self) -> None:
        self.path = self.folder / "repo"
        self.repo = statevcs.Repo.init(self.path)
        self.state: dict[str, Any] = {"messages": statevcs.tracked_messages(), "turn": 0}
        self.commits: dict[int, str] = {}

    def turn(self, turn: int) -> tuple[float, float]:
        begin = time.perf_counter()
        self.state["messages"].extend(dict_turn(turn))
        self.state["turn"] = turn
        start = time.perf_counter()
        self.commits[turn] = self.repo.commit(self.state, f"turn {turn}").id
        end = time.perf_counter()
        return end - start, end - begin

    def close(self) -> None:
        self.repo.close()

    def listing(self, budget: float) -> tuple[float, int, bool]:
        with statevcs.Repo.open(self.path) as repo:
            return timed_listing(repo.log("main"), budget)

    def _rev(self, turn: int | None) -> str:
        # By commit id, as LangGraph restores by checkpoint id (``main~k`` walks k commits).
        return "main" if turn is None else self.commits[turn]

    def restore(self, turn: int | None) -> float:
        with statevcs.Repo.open(self.path) as repo:
            state: dict[str, Any] = {}
            start = time.perf_counter()
            repo.checkout(state, self._rev(turn))
            took = time.perf_counter() - start
        expected = 2 * (self.turns if turn is None else turn)
        assert len(state["messages"]) == expected, (len(state["messages"]), expected)
        return took

    def forks(self, at: int, forks: int) -> None:
        with statevcs.Repo.open(self.path) as repo:
            for fork in range(forks):
                repo.branch(f"fork-{fork}", rev=self._rev(at))
                state: dict[str, Any] = {}
                repo.checkout(state, f"fork-{fork}")
                state["messages"] = statevcs.tracked_messages(state["messages"])
                for step in range(FORK_TURNS):
                    state["messages"].extend(dict_turn(fork_turn(fork, step)))
                    repo.commit(state, f"fork {fork} turn {step}")

    def per_turn_at(self, folder: Path, size: int, samples: int) -> tuple[float, float]:
        with statevcs.Repo.init(folder) as repo:
            state: dict[str, Any] = {
                "messages": statevcs.tracked_messages(prebuilt_dicts(size)),
                "turn": 0,
            }
            repo.commit(state, "base")
            times = []
            for sample in range(samples):
                state["messages"].extend(dict_turn(fork_turn(9, sample)))
                start = time.perf_counter()
                repo.commit(state, f"sample {sample}")
                times.append(time.perf_counter() - start)
        median = statistics.median(times)
        return median, median


def prebuilt_dicts(size: int) -> list[dict[str, Any]]:
    """``size`` messages of alternating user/assistant dicts."""
    return [m for turn in range(1, size // 2 + 2) for m in dict_turn(turn)][:size]


# --- a JSON file per turn -----------------------------------------------------------------


class JsonFiles(System):
    """``json.dumps`` of the whole state into a new file after every turn."""

    name = "JSON file per turn"
    reference = StatevcsCommit.name
    uses_sqlite = False

    def start(self) -> None:
        self.path = self.folder / "json"
        self.path.mkdir(parents=True)
        self.state: dict[str, Any] = {"messages": [], "turn": 0}

    def turn(self, turn: int) -> tuple[float, float]:
        begin = time.perf_counter()
        self.state["messages"].extend(dict_turn(turn))
        self.state["turn"] = turn
        start = time.perf_counter()
        (self.path / f"{turn:07d}.json").write_text(json.dumps(self.state))
        end = time.perf_counter()
        return end - start, end - begin

    def close(self) -> None:
        pass

    def listing(self, budget: float) -> tuple[float, int, bool]:
        def entries() -> Iterator[tuple[str, float]]:
            # A history listing with a timestamp per entry, as the other systems give.
            names = sorted(os.listdir(self.path), reverse=True)
            for name in names:
                yield name, os.stat(self.path / name).st_mtime

        return timed_listing(entries(), budget)

    def restore(self, turn: int | None) -> float:
        start = time.perf_counter()
        name = sorted(os.listdir(self.path))[-1] if turn is None else f"{turn:07d}.json"
        state = json.loads((self.path / name).read_text())
        took = time.perf_counter() - start
        assert len(state["messages"]) == 2 * (self.turns if turn is None else turn)
        return took

    def forks(self, at: int, forks: int) -> None:
        base = json.loads((self.path / f"{at:07d}.json").read_text())
        for fork in range(forks):
            folder = self.path / f"fork-{fork}"
            folder.mkdir()
            state: dict[str, Any] = {"messages": list(base["messages"]), "turn": at}
            for step in range(FORK_TURNS):
                state["messages"].extend(dict_turn(fork_turn(fork, step)))
                (folder / f"{step:07d}.json").write_text(json.dumps(state))

    def per_turn_at(self, folder: Path, size: int, samples: int) -> tuple[float, float]:
        folder.mkdir(parents=True)
        state: dict[str, Any] = {"messages": prebuilt_dicts(size), "turn": 0}
        times = []
        for sample in range(samples):
            state["messages"].extend(dict_turn(fork_turn(9, sample)))
            start = time.perf_counter()
            (folder / f"{sample:07d}.json").write_text(json.dumps(state))
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        return median, median


# --- LangGraph ----------------------------------------------------------------------------


def add_messages_batch(state: list[AnyMessage], writes: Sequence[Any]) -> list[AnyMessage]:
    """``add_messages`` folded over a batch of writes: the batch reducer ``DeltaChannel`` takes.

    ``add_messages`` merges by message id, so folding it is batching-invariant, as
    ``DeltaChannel`` requires.
    """
    merged: list[AnyMessage] = reduce(add_messages, writes, state)  # type: ignore[arg-type]
    return merged


class PlainState(TypedDict):
    """A graph state whose messages are an ``add_messages`` channel."""

    messages: Annotated[list[AnyMessage], add_messages]


class DeltaState(TypedDict):
    """The same state with LangGraph's (beta) ``DeltaChannel`` (a snapshot every 100 updates)."""

    messages: Annotated[list[AnyMessage], DeltaChannel(add_messages_batch)]


def reply_node(state: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: reply to the last user message of the turn it names."""
    last = state["messages"][-1]
    turn = turn_of(str(last.content))
    return {"messages": [AIMessage(content=assistant_text(turn), id=f"a{turn}")]}


def build_graph(channel: str, checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """A ``START -> agent -> END`` graph with ``channel`` messages, compiled on ``checkpointer``."""
    builder: StateGraph[Any] = StateGraph(PlainState if channel == "add_messages" else DeltaState)
    builder.add_node("agent", reply_node)  # type: ignore[type-var]
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder.compile(checkpointer=checkpointer)


def timed_saver(base: type[Any]) -> type[Any]:
    """A subclass of ``base`` that adds the time of its checkpoint calls to ``self.clock``.

    Nested calls (the default ``get_delta_channel_history`` walks ``get_tuple``) count once.
    """

    class Timed(base):  # type: ignore[misc]
        clock = 0.0
        write_clock = 0.0
        depth = 0
        last_id: str | None = None

        def _timed(self, call: Callable[[], Any], *, write: bool = False) -> Any:
            self.depth += 1
            start = time.perf_counter()
            try:
                return call()
            finally:
                self.depth -= 1
                if self.depth == 0:
                    took = time.perf_counter() - start
                    self.clock += took
                    if write:
                        self.write_clock += took

        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            result = self._timed(
                lambda: super(Timed, self).put(config, checkpoint, metadata, new_versions),
                write=True,
            )
            self.last_id = result["configurable"]["checkpoint_id"]
            return result

        def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            self._timed(
                lambda: super(Timed, self).put_writes(config, writes, task_id, task_path),
                write=True,
            )

        def get_tuple(self, config: Any) -> Any:
            return self._timed(lambda: super(Timed, self).get_tuple(config))

        def get_delta_channel_history(self, *, config: Any, channels: Any) -> Any:
            return self._timed(
                lambda: super(Timed, self).get_delta_channel_history(
                    config=config, channels=channels
                )
            )

    Timed.__name__ = f"Timed{base.__name__}"
    return Timed


TimedSqliteSaver = timed_saver(SqliteSaver)
TimedStateVCSSaver = timed_saver(StateVCSSaver) if StateVCSSaver is not None else None


def prebuilt_langchain(size: int) -> list[AnyMessage]:
    """``size`` LangChain messages (alternating user/assistant), ending with a user message."""
    out: list[AnyMessage] = []
    for turn in range(1, size // 2 + 2):
        out.append(HumanMessage(content=user_text(turn), id=f"u{turn}"))
        out.append(AIMessage(content=assistant_text(turn), id=f"a{turn}"))
    return [*out[: size - 1], HumanMessage(content=user_text(size), id=f"u{size}")]


class LangGraphSystem(System):
    """A real ``StateGraph`` on a checkpointer; ``durability="sync"`` so each saver call is
    on the caller's path and timed alone."""

    def __init__(self, folder: Path, turns: int, saver: str, channel: str) -> None:
        super().__init__(folder, turns)
        self.saver_kind = saver
        self.channel = channel
        label = "SqliteSaver" if saver == "sqlite" else "StateVCSSaver"
        self.name = (
            f"LangGraph {label} ({'add_messages' if channel == 'add_messages' else 'DeltaChannel'})"
        )
        self.reference = f"LangGraph StateVCSSaver ({self.name.split('(')[1]}"
        self.checkpoints: dict[int, str] = {}
        self.write_samples: list[float] = []
        self.thread = {"configurable": {"thread_id": "bench"}}

    def _open(self, path: Path, *, create: bool = False) -> tuple[Any, Callable[[], None]]:
        """A timed saver on ``path`` and the function closing it."""
        if self.saver_kind == "sqlite":
            conn = sqlite3.connect(str(path), check_same_thread=False)
            return TimedSqliteSaver(conn), conn.close
        assert TimedStateVCSSaver is not None
        repo = statevcs.Repo.init(path) if create else statevcs.Repo.open(path)
        return TimedStateVCSSaver(repo), repo.close

    def start(self) -> None:
        suffix = "sqlite" if self.saver_kind == "sqlite" else "repo"
        self.path = self.folder / f"checkpoints.{suffix}"
        self.saver, self._close = self._open(self.path, create=True)
        self.graph = build_graph(self.channel, self.saver)

    def _invoke(
        self, graph: Any, saver: Any, turn: int, config: dict[str, Any]
    ) -> tuple[float, float]:
        saver.clock = saver.write_clock = 0.0
        start = time.perf_counter()
        graph.invoke(
            {"messages": [HumanMessage(content=user_text(turn), id=f"u{turn}")]},
            config,
            durability="sync",
        )
        return saver.clock, time.perf_counter() - start

    def turn(self, turn: int) -> tuple[float, float]:
        result = self._invoke(self.graph, self.saver, turn, self.thread)
        self.checkpoints[turn] = self.saver.last_id
        self.write_samples.append(self.saver.write_clock)
        return result

    def close(self) -> None:
        self._close()

    def listing(self, budget: float) -> tuple[float, int, bool]:
        def items() -> Iterator[Any]:
            saver, _close = self._open(self.path)
            history: Iterator[Any] = build_graph(self.channel, saver).get_state_history(self.thread)
            return history

        return capped_listing(items, budget)

    def saver_listing(self, budget: float) -> tuple[float, int, bool] | None:
        def items() -> Iterator[Any]:
            saver, _close = self._open(self.path)
            checkpoints: Iterator[Any] = saver.list(self.thread)
            return checkpoints

        return capped_listing(items, budget)

    def _config(self, turn: int | None) -> dict[str, Any]:
        if turn is None:
            return self.thread
        return {"configurable": {"thread_id": "bench", "checkpoint_id": self.checkpoints[turn]}}

    def restore(self, turn: int | None) -> float:
        saver, close = self._open(self.path)
        try:
            graph = build_graph(self.channel, saver)
            start = time.perf_counter()
            values = graph.get_state(self._config(turn)).values
            took = time.perf_counter() - start
        finally:
            close()
        expected = 2 * (self.turns if turn is None else turn)
        assert len(values["messages"]) == expected, (len(values["messages"]), expected)
        return took

    def forks(self, at: int, forks: int) -> None:
        saver, close = self._open(self.path)
        try:
            graph = build_graph(self.channel, saver)
            for fork in range(forks):
                parent = self.checkpoints[at]
                for step in range(FORK_TURNS):
                    config = {"configurable": {"thread_id": "bench", "checkpoint_id": parent}}
                    self._invoke(graph, saver, fork_turn(fork, step), config)
                    parent = saver.last_id
        finally:
            close()

    def per_turn_at(self, folder: Path, size: int, samples: int) -> tuple[float, float]:
        folder.mkdir(parents=True)
        saver, close = self._open(folder / "store", create=True)
        try:
            graph = build_graph(self.channel, saver)
            graph.invoke({"messages": prebuilt_langchain(size)}, self.thread, durability="sync")
            persist, whole = [], []
            for sample in range(samples):
                took = self._invoke(graph, saver, fork_turn(9, sample), self.thread)
                persist.append(took[0])
                whole.append(took[1])
        finally:
            close()
        return statistics.median(persist), statistics.median(whole)


# --- Strands ------------------------------------------------------------------------------


def strands_reply(messages: Messages) -> Reply:
    """The scripted model: reply to the turn the last user message names."""
    return Reply(text=assistant_text(turn_of(messages[-1]["content"][0]["text"])))


class PersistTimer(HookProvider):
    """Brackets every AfterInvocationEvent callback (where both managers persist) with a clock."""

    def __init__(self) -> None:
        self.last = 0.0
        self._start = 0.0

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """Run first and last among AfterInvocationEvent callbacks."""
        registry.add_callback(AfterInvocationEvent, self._begin, order=-1_000_000)
        registry.add_callback(AfterInvocationEvent, self._end, order=1_000_000)

    def _begin(self, event: AfterInvocationEvent) -> None:
        self._start = time.perf_counter()

    def _end(self, event: AfterInvocationEvent) -> None:
        self.last = time.perf_counter() - self._start


def make_agent(
    session: SessionManager | None,
    timer: PersistTimer | None = None,
    messages: Messages | None = None,
) -> Agent:
    """A scripted agent keeping its whole history (``NullConversationManager``)."""
    return Agent(
        model=ScriptedModel([], default=strands_reply, chunk_size=256),
        messages=messages,
        system_prompt="You are a travel planner.",
        conversation_manager=NullConversationManager(),
        session_manager=session,
        hooks=[timer] if timer is not None else [],
        callback_handler=None,
        agent_id="planner",
    )


def prebuilt_strands(size: int) -> Messages:
    """``size`` Strands messages (alternating user/assistant)."""
    return [
        {"role": message["role"], "content": [{"text": message["content"]}]}
        for message in prebuilt_dicts(size)
    ]


def always(**_: Any) -> bool:
    """A ``snapshot_trigger`` taking an immutable snapshot after every invocation."""
    return True


class StrandsSystem(System):
    """A scripted Strands ``Agent`` persisted by a session manager after every turn."""

    def __init__(self, folder: Path, turns: int, kind: str) -> None:
        super().__init__(folder, turns)
        self.kind = kind
        self.name = (
            "Strands SnapshotSessionManager"
            if kind == "snapshot"
            else "Strands StateVCSSessionManager"
        )
        self.reference = "Strands StateVCSSessionManager"
        self.uses_sqlite = kind == "statevcs"

    def start(self) -> None:
        self.timer = PersistTimer()
        if self.kind == "snapshot":
            self.path = self.folder / "strands"
            self.session: SessionManager = SnapshotSessionManager(
                "bench", storage=LocalFileStorage(str(self.path)), snapshot_trigger=always
            )
        else:
            self.path = self.folder / "repo"
            self.repo = statevcs.Repo.init(self.path)
            self.session = StateVCSSessionManager(self.repo, branch="bench")
        self.agent = make_agent(self.session, self.timer)

    def turn(self, turn: int) -> tuple[float, float]:
        start = time.perf_counter()
        self.agent(user_text(turn))
        return self.timer.last, time.perf_counter() - start

    def close(self) -> None:
        if self.kind == "statevcs":
            self.repo.close()

    def _snapshot_ids(self, session: SnapshotSessionManager) -> list[str]:
        return asyncio.run(session.list_snapshot_ids(make_agent(None)))

    def listing(self, budget: float) -> tuple[float, int, bool]:
        if self.kind == "snapshot":
            session = SnapshotSessionManager("bench", storage=LocalFileStorage(str(self.path)))
            start = time.perf_counter()
            ids = self._snapshot_ids(session)
            return time.perf_counter() - start, len(ids), True
        with statevcs.Repo.open(self.path) as repo:
            return timed_listing(repo.log("bench"), budget)

    def restore(self, turn: int | None) -> float:
        agent = make_agent(None)
        if self.kind == "snapshot":
            session = SnapshotSessionManager("bench", storage=LocalFileStorage(str(self.path)))
            snapshot = None if turn is None else self._snapshot_ids(session)[turn - 1]

            async def timed() -> float:
                start = time.perf_counter()
                await session.restore_snapshot(agent, snapshot_id=snapshot)
                return time.perf_counter() - start

            took = asyncio.run(timed())
        else:
            with statevcs.Repo.open(self.path) as repo:
                # A commit id, as Strands restores a snapshot id (``bench~k`` walks k commits).
                rev = "bench" if turn is None else repo.resolve(f"bench~{self.turns - turn}")
                start = time.perf_counter()
                repo.checkout(agent, rev)
                took = time.perf_counter() - start
        expected = 2 * (self.turns if turn is None else turn)
        assert len(agent.messages) == expected, (len(agent.messages), expected)
        return took

    def forks(self, at: int, forks: int) -> None:
        if self.kind == "snapshot":
            storage = str(self.path)
            main = SnapshotSessionManager("bench", storage=LocalFileStorage(storage))
            snapshot = self._snapshot_ids(main)[at - 1]
            for fork in range(forks):
                session = SnapshotSessionManager(
                    f"fork-{fork}", storage=LocalFileStorage(storage), snapshot_trigger=always
                )
                agent = make_agent(session)
                asyncio.run(main.restore_snapshot(agent, snapshot_id=snapshot))
                for step in range(FORK_TURNS):
                    agent(user_text(fork_turn(fork, step)))
            return
        with statevcs.Repo.open(self.path) as repo:
            start = repo.resolve(f"bench~{self.turns - at}")
            for fork in range(forks):
                vcs_session = StateVCSSessionManager(repo, branch=f"fork-{fork}", start=start)
                agent = make_agent(vcs_session)
                for step in range(FORK_TURNS):
                    agent(user_text(fork_turn(fork, step)))

    def per_turn_at(self, folder: Path, size: int, samples: int) -> tuple[float, float]:
        timer = PersistTimer()
        repo = None
        if self.kind == "snapshot":
            session: SessionManager = SnapshotSessionManager(
                "w3", storage=LocalFileStorage(str(folder)), snapshot_trigger=always
            )
        else:
            repo = statevcs.Repo.init(folder)
            session = StateVCSSessionManager(repo, branch="w3")
        try:
            agent = make_agent(session, timer, prebuilt_strands(size))
            persist, whole = [], []
            for sample in range(samples):
                start = time.perf_counter()
                agent(user_text(fork_turn(9, sample)))
                whole.append(time.perf_counter() - start)
                persist.append(timer.last)
        finally:
            if repo is not None:
                repo.close()
        return statistics.median(persist), statistics.median(whole)


# --- OpenAI Agents SDK, Pydantic AI, Google ADK (issue 21) -------------------------------------


class _Loop:
    """One event loop per system, so async stores are timed without ``asyncio.run``'s setup."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __call__(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)

    def close(self) -> None:
        self.loop.close()


class FrameworkSystem(System):
    """A framework's own store (``kind`` ``"theirs"``) or statevcs's (``"statevcs"``), fed the
    same items per turn; persistence time is the store call, a turn builds the items too."""

    framework = ""
    theirs = ""
    ours = ""

    def __init__(self, folder: Path, turns: int, kind: str) -> None:
        super().__init__(folder, turns)
        self.kind = kind
        self.name = f"{self.framework} {self.theirs if kind == 'theirs' else self.ours}"
        self.reference = f"{self.framework} {self.ours}"
        self.run = _Loop()
        self.commits: dict[int, str] = {}

    @property
    def statevcs(self) -> bool:
        return self.kind == "statevcs"

    def items(self, turn: int) -> list[Any]:
        """The items one turn adds."""
        raise NotImplementedError

    def open(self, folder: Path, session: str) -> Any:
        """A handle on the store in ``folder`` for conversation ``session``."""
        raise NotImplementedError

    def add(self, handle: Any, items: list[Any], so_far: list[Any]) -> None:
        """Persist one turn (``so_far`` already holds ``items`` at its end)."""
        raise NotImplementedError

    def load(self, handle: Any, turn: int | None) -> list[Any]:
        """The conversation after ``turn`` (``None``: the latest), as its framework's objects."""
        raise NotImplementedError

    def fork(self, handle: Any, at: int, name: str, so_far: list[Any]) -> Any:
        """A handle on a new conversation ``name`` holding ``so_far`` (the state after ``at``)."""
        raise NotImplementedError

    def shut(self, handle: Any) -> None:
        """Close ``handle``'s connections."""

    def start(self) -> None:
        self.path = self.folder / "store"
        self.path.mkdir(parents=True)
        self.handle = self.open(self.path, "bench")
        self.so_far: list[Any] = []

    def turn(self, turn: int) -> tuple[float, float]:
        begin = time.perf_counter()
        items = self.items(turn)
        self.so_far.extend(items)
        start = time.perf_counter()
        self.add(self.handle, items, self.so_far)
        end = time.perf_counter()
        if self.statevcs:
            self.commits[turn] = self.repo.resolve(self.branch_of("bench"))
        return end - start, end - begin

    def close(self) -> None:
        self.shut(self.handle)

    def listing(self, budget: float) -> tuple[float, int, bool]:
        if not self.statevcs:
            start = time.perf_counter()
            handle = self.open(self.path, "bench")
            count = len(self.load(handle, None))
            took = time.perf_counter() - start
            self.shut(handle)
            return took, count, True
        with statevcs.Repo.open(self.path / "repo") as repo:
            return timed_listing(repo.log(self.branch_of("bench")), budget)

    def restore(self, turn: int | None) -> float:
        handle = self.open(self.path, "bench")
        start = time.perf_counter()
        loaded = self.load(handle, turn)
        took = time.perf_counter() - start
        self.shut(handle)
        expected = self.per_turn * (self.turns if turn is None else turn)
        assert len(loaded) == expected, (self.name, len(loaded), expected)
        return took

    per_turn = 2

    def forks(self, at: int, forks: int) -> None:
        handle = self.open(self.path, "bench")
        base = self.load(handle, at)
        for fork in range(forks):
            so_far = list(base)
            branch = self.fork(handle, at, f"fork-{fork}", so_far)
            for step in range(FORK_TURNS):
                items = self.items(fork_turn(fork, step))
                so_far.extend(items)
                self.add(branch, items, so_far)
            if not self.statevcs:  # a statevcs fork shares the repository of ``handle``
                self.shut(branch)
        self.shut(handle)

    def per_turn_at(self, folder: Path, size: int, samples: int) -> tuple[float, float]:
        folder.mkdir(parents=True)
        handle = self.open(folder, "w3")
        so_far: list[Any] = []
        for turn in range(1, size // self.per_turn + 1):
            so_far.extend(self.items(turn))
        self.add(handle, so_far, so_far)  # the prebuilt conversation, in one write
        times = []
        for sample in range(samples):
            items = self.items(fork_turn(9, sample))
            so_far.extend(items)
            start = time.perf_counter()
            self.add(handle, items, so_far)
            times.append(time.perf_counter() - start)
        self.shut(handle)
        median = statistics.median(times)
        return median, median

    def branch_of(self, session: str) -> str:
        """The statevcs branch of conversation ``session``."""
        return session


class OpenAIAgentsSystem(FrameworkSystem):
    """The OpenAI Agents SDK's ``SQLiteSession`` (file) against ``StateVCSSession``."""

    framework = "OpenAI Agents"
    theirs = "SQLiteSession"
    ours = "StateVCSSession"

    def items(self, turn: int) -> list[Any]:
        return dict_turn(turn)

    def open(self, folder: Path, session: str) -> Any:
        if self.statevcs:
            self.repo = (
                statevcs.Repo.init(folder / "repo")
                if not (folder / "repo").exists()
                else (statevcs.Repo.open(folder / "repo"))
            )
            return StateVCSSession(self.repo, session)
        return SQLiteSession(session, db_path=folder / "sessions.db")

    def add(self, handle: Any, items: list[Any], so_far: list[Any]) -> None:
        self.run(handle.add_items(items))

    def load(self, handle: Any, turn: int | None) -> list[Any]:
        if self.statevcs and turn is not None:
            return list(self.repo.show(self.commits[turn]).messages)
        items: list[Any] = self.run(handle.get_items())
        # The SDK's log of items: the state after a turn is its prefix.
        return items if turn is None else items[: 2 * turn]

    def fork(self, handle: Any, at: int, name: str, so_far: list[Any]) -> Any:
        if self.statevcs:
            return handle.fork(self.commits[at], branch=name)
        fork = SQLiteSession(name, db_path=self.path / "sessions.db")
        self.run(fork.add_items(so_far))  # the SDK copies the rows (as AdvancedSQLiteSession)
        return fork

    def shut(self, handle: Any) -> None:
        if self.statevcs:
            handle.repo.close()
        else:
            handle.close()


class PydanticAIHistorySystem(FrameworkSystem):
    """Pydantic AI's own persistence (``ModelMessagesTypeAdapter`` JSON, a file per turn)
    against ``AgentHistory`` (a commit per turn)."""

    framework = "Pydantic AI"
    theirs = "JSON history file per turn"
    ours = "AgentHistory"

    def items(self, turn: int) -> list[Any]:
        return [
            ModelRequest(parts=[UserPromptPart(user_text(turn))]),
            ModelResponse(parts=[TextPart(assistant_text(turn))], model_name="bench"),
        ]

    def open(self, folder: Path, session: str) -> Any:
        if self.statevcs:
            path = folder / "repo"
            self.repo = statevcs.Repo.open(path) if path.exists() else statevcs.Repo.init(path)
            return AgentHistory(self.repo, session)
        (folder / session).mkdir(exist_ok=True)
        return folder / session

    def add(self, handle: Any, items: list[Any], so_far: list[Any]) -> None:
        if self.statevcs:
            handle.commit(so_far)
        else:
            count = len(os.listdir(handle))
            (handle / f"{count:07d}.json").write_bytes(ModelMessagesTypeAdapter.dump_json(so_far))

    def load(self, handle: Any, turn: int | None) -> list[Any]:
        if self.statevcs:
            return list(handle.messages() if turn is None else handle.messages(self.commits[turn]))
        name = sorted(os.listdir(handle))[-1] if turn is None else f"{turn - 1:07d}.json"
        return list(ModelMessagesTypeAdapter.validate_json((handle / name).read_bytes()))

    def fork(self, handle: Any, at: int, name: str, so_far: list[Any]) -> Any:
        if self.statevcs:
            return handle.fork(self.commits[at], branch=name)
        (self.path / name).mkdir()
        return self.path / name

    def shut(self, handle: Any) -> None:
        if self.statevcs:
            handle.repo.close()


class PydanticAIStepsSystem(FrameworkSystem):
    """pydantic-ai-harness's ``SqliteStepStore`` against ``StateVCSStepStore``: a step snapshot
    (the run's whole message list) saved per turn, as ``StepPersistence`` does."""

    framework = "Pydantic AI harness"
    theirs = "SqliteStepStore"
    ours = "StateVCSStepStore"

    items = PydanticAIHistorySystem.items

    def open(self, folder: Path, session: str) -> Any:
        if self.statevcs:
            path = folder / "repo"
            self.repo = statevcs.Repo.open(path) if path.exists() else statevcs.Repo.init(path)
            store: Any = StateVCSStepStore(self.repo)
        else:
            store = SqliteStepStore(database=str(folder / "runs.db"))
        if self.run(store.get_run(run_id=session)) is None:
            self.run(store.register_run(RunRecord(run_id=session)))
        return store, session, [0]

    def add(self, handle: Any, items: list[Any], so_far: list[Any]) -> None:
        store, run_id, steps = handle
        steps[0] += 1
        snapshot = ContinuableSnapshot(run_id=run_id, step_index=steps[0], messages=list(so_far))
        self.run(store.save_snapshot(snapshot))

    def load(self, handle: Any, turn: int | None) -> list[Any]:
        store, run_id, _ = handle
        if turn is None:
            return list(self.run(store.latest_snapshot(run_id=run_id)).messages)
        if self.statevcs:
            fields = self.repo.get_commit(self.commits[turn]).metadata["snapshot"]
            return list(store._snapshot_at(self.commits[turn], fields).messages)
        snapshots = self.run(store.list_snapshots(run_id=run_id))
        return list(snapshots[turn - 1].messages)

    def fork(self, handle: Any, at: int, name: str, so_far: list[Any]) -> Any:
        store, run_id, _ = handle
        if self.statevcs:
            # the latest snapshot here is the main run's last: fork at turn ``at`` by branch
            self.repo.branch(store.branch_of(name), self.commits[at])
            return store, name, [at]
        self.run(store.register_run(RunRecord(run_id=name, parent_run_id=run_id)))
        return store, name, [at]

    def shut(self, handle: Any) -> None:
        if self.statevcs:
            handle[0].repo.close()

    def branch_of(self, session: str) -> str:
        return f"runs/{session}"


class GoogleADKSystem(FrameworkSystem):
    """Google ADK's ``SqliteSessionService`` against ``StateVCSSessionService``: two events
    (the user's and the model's) appended per turn."""

    framework = "Google ADK"
    theirs = "SqliteSessionService"
    ours = "StateVCSSessionService"

    def items(self, turn: int) -> list[Any]:
        return [
            AdkEvent(
                invocation_id=f"inv-{turn}",
                author="user",
                content=genai_types.Content(
                    role="user", parts=[genai_types.Part(text=user_text(turn))]
                ),
            ),
            AdkEvent(
                invocation_id=f"inv-{turn}",
                author="agent",
                content=genai_types.Content(
                    role="model", parts=[genai_types.Part(text=assistant_text(turn))]
                ),
            ),
        ]

    def open(self, folder: Path, session: str) -> Any:
        if self.statevcs:
            path = folder / "repo"
            self.repo = statevcs.Repo.open(path) if path.exists() else statevcs.Repo.init(path)
            service: Any = StateVCSSessionService(self.repo)
        else:
            service = SqliteSessionService(str(folder / "sessions.db"))
        found = self.run(service.get_session(app_name="bench", user_id="u", session_id=session))
        if found is None:
            found = self.run(
                service.create_session(app_name="bench", user_id="u", session_id=session)
            )
        return service, found

    def add(self, handle: Any, items: list[Any], so_far: list[Any]) -> None:
        service, session = handle

        async def append() -> None:
            for item in items:
                await service.append_event(session, item)

        self.run(append())

    def load(self, handle: Any, turn: int | None) -> list[Any]:
        service, session = handle
        key = {"app_name": "bench", "user_id": "u", "session_id": session.id}
        if self.statevcs and turn is not None:
            return list(self.run(service.get_session_at(**key, rev=self.commits[turn])).events)
        events = list(self.run(service.get_session(**key)).events)
        # ADK keeps one log of events: the session after a turn is its prefix.
        return events if turn is None else events[: 2 * turn]

    def fork(self, handle: Any, at: int, name: str, so_far: list[Any]) -> Any:
        service, session = handle
        if self.statevcs:
            forked = self.run(
                service.fork_session(
                    app_name="bench",
                    user_id="u",
                    session_id=session.id,
                    new_session_id=name,
                    at_event_id=so_far[-1].id,
                )
            )
            return service, forked
        # ADK cannot fork: a new session, the events copied into it
        fresh = self.run(service.create_session(app_name="bench", user_id="u", session_id=name))
        copy_of = [event.model_copy() for event in so_far]
        self.add((service, fresh), copy_of, copy_of)
        return service, fresh

    def shut(self, handle: Any) -> None:
        service, _ = handle
        if self.statevcs:
            service.repo.close()
        else:
            self.run(service.close())

    def branch_of(self, session: str) -> str:
        return f"adk/bench/sessions/u/{session}"


FRAMEWORKS: tuple[type[FrameworkSystem], ...] = (
    OpenAIAgentsSystem,
    PydanticAIHistorySystem,
    PydanticAIStepsSystem,
    GoogleADKSystem,
)


# --- running ------------------------------------------------------------------------------


def systems(folder: Path, turns: int) -> Iterator[System | str]:
    """Every system in table order, one at a time; a string names one that cannot run.

    One at a time, so no system runs with another's objects alive (a bigger heap slows
    Python's garbage collector, and so every later system).
    """
    yield StatevcsCommit(folder / "statevcs", turns)
    for channel in ("add_messages", "delta"):
        yield LangGraphSystem(folder / f"lg-sqlite-{channel}", turns, "sqlite", channel)
    for channel in ("add_messages", "delta"):
        system = LangGraphSystem(folder / f"lg-statevcs-{channel}", turns, "statevcs", channel)
        yield system if StateVCSSaver is not None else system.name
    yield StrandsSystem(folder / "strands-snapshot", turns, "snapshot")
    yield StrandsSystem(folder / "strands-statevcs", turns, "statevcs")
    yield JsonFiles(folder / "json", turns)
    for framework in (
        OpenAIAgentsSystem,
        PydanticAIHistorySystem,
        PydanticAIStepsSystem,
        GoogleADKSystem,
    ):
        for kind in ("theirs", "statevcs"):
            yield framework(folder / f"{framework.__name__}-{kind}", turns, kind)


def windows(turns: int) -> tuple[slice, slice, str, str]:
    """The early (around turn 50) and late (the last turns) sample windows, with labels."""
    if turns >= 100:
        early = slice(40, 60)
        late = slice(turns - 20, turns)
    else:
        width = max(1, turns // 4)
        early = slice(0, width)
        late = slice(turns - width, turns)
    return early, late, f"t{early.start + 1}-{early.stop}", f"t{late.start + 1}-{late.stop}"


def run_system(
    system: System, args: argparse.Namespace, sizes: list[int], log: Callable[[str], None]
) -> Row:
    """W1, the listing and restores, W2 and W3 for one system; errors end up in the row."""
    row = Row(system.name, system.reference)
    system.folder.mkdir(parents=True)
    began = time.perf_counter()
    try:
        system.start()
        for turn in range(1, args.turns + 1):
            persist, whole = system.turn(turn)
            row.persist.append(persist)
            row.whole.append(whole)
        row.wal_open = system.wal_bytes()
        row.persist_write = list(getattr(system, "write_samples", []))
        system.close()
        gc.collect()
        row.bytes_closed = disk_bytes(system.folder)
        log(f"{system.name}: W1 {time.perf_counter() - began:.1f} s")

        took, count, done = system.listing(args.list_budget)
        row.listing = took
        if not done:
            row.listing_note = f"stopped after {count:,} entries"
        elif took < 1:
            row.listing = min(took, *(system.listing(args.list_budget)[0] for _ in range(2)))
        saver_listing = system.saver_listing(args.list_budget)
        if saver_listing is not None:
            row.saver_listing, count, done = saver_listing
            if not done:
                row.saver_listing_note = f"stopped after {count:,} entries"
        row.restore_latest = best_of(lambda: system.restore(None))
        row.restore_10 = best_of(lambda: system.restore(min(10, args.turns)))
        log(f"{system.name}: listing and restores {time.perf_counter() - began:.1f} s")

        if args.forks:
            system.forks(args.turns // 2, args.forks)
            gc.collect()
            row.fork_bytes = (disk_bytes(system.folder) - row.bytes_closed) / (
                args.forks * FORK_TURNS
            )
        shutil.rmtree(system.folder, ignore_errors=True)
        for size in sizes:
            persist, whole = system.per_turn_at(system.folder / f"w3-{size}", size, args.samples)
            row.w3_persist[size] = persist
            row.w3_whole[size] = whole
            shutil.rmtree(system.folder / f"w3-{size}", ignore_errors=True)
        log(f"{system.name}: done in {time.perf_counter() - began:.1f} s")
    except Exception as exc:  # a broken peer must not hide the other rows
        traceback.print_exc()
        row.status = f"error: {type(exc).__name__}: {exc}"[:200]
    finally:
        shutil.rmtree(system.folder, ignore_errors=True)
    return row


# --- printing -----------------------------------------------------------------------------


def human_bytes(size: float | None) -> str:
    """``1.5 MB`` style."""
    if size is None:
        return "-"
    for unit in ("B", "KB", "MB", "GB"):
        if abs(size) < 1024 or unit == "GB":
            return f"{size:,.0f} B" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def ms(seconds: float | None) -> str:
    """Milliseconds with 3 significant-ish digits."""
    if seconds is None:
        return "-"
    value = seconds * 1000
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 1:
        return f"{value:.1f} ms"
    return f"{value:.3f} ms"


def median(samples: list[float], window: slice) -> float | None:
    """Median of ``samples[window]`` (``None`` when empty)."""
    chosen = samples[window]
    return statistics.median(chosen) if chosen else None


def print_table(header: list[str], rows: list[list[str]]) -> None:
    """A Markdown table, first column left-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]

    def line(cells: list[str]) -> str:
        parts = [cells[0].ljust(widths[0])] + [
            cell.rjust(width) for cell, width in zip(cells[1:], widths[1:])
        ]
        return "| " + " | ".join(parts) + " |"

    print(line(header))
    print("|" + "|".join("-" * (width + 2) for width in widths) + "|")
    for row in rows:
        print(line(row))


def figures(row: Row, turns: int) -> dict[str, float | None]:
    """The comparable figures of a row, by column name."""
    early, late, _, _ = windows(turns)
    out: dict[str, float | None] = {
        "bytes": row.bytes_closed,
        "persist early": median(row.persist, early),
        "persist late": median(row.persist, late),
        "turn early": median(row.whole, early),
        "turn late": median(row.whole, late),
        "listing": row.listing,
        "restore latest": row.restore_latest,
        "restore 10": row.restore_10,
        "bytes/forked turn": row.fork_bytes,
    }
    for size, value in row.w3_persist.items():
        out[f"W3 {size}"] = value
    return out


def report(rows: list[Row], args: argparse.Namespace, sizes: list[int]) -> None:
    """Print the main table, the W3 table, the ratios and the issue's targets."""
    _, _, early_label, late_label = windows(args.turns)
    at = args.turns // 2
    print(
        f"\n## W1: {args.turns:,} turns, a checkpoint per turn; W2: {args.forks} forks x "
        f"{FORK_TURNS} turns from turn {at}\n"
    )
    header = [
        "system",
        "bytes (closed)",
        "WAL (open)",
        f"persist {early_label}",
        f"persist {late_label}",
        "late/early",
        f"turn {early_label}",
        f"turn {late_label}",
        "history listing",
        "restore latest",
        "restore turn 10",
        "bytes/forked turn",
    ]
    table = []
    for row in rows:
        if row.status:
            table.append([row.name, row.status] + [""] * (len(header) - 2))
            continue
        fig = figures(row, args.turns)
        early, late = fig["persist early"], fig["persist late"]
        listing = ms(row.listing)
        if row.listing_note:
            listing = f"> {listing} ({row.listing_note})"
        table.append(
            [
                row.name,
                human_bytes(row.bytes_closed),
                human_bytes(row.wal_open) if row.wal_open is not None else "n/a",
                ms(early),
                ms(late),
                f"{late / early:.2f}x" if early and late else "-",
                ms(fig["turn early"]),
                ms(fig["turn late"]),
                listing,
                ms(row.restore_latest),
                ms(row.restore_10),
                human_bytes(row.fork_bytes),
            ]
        )
    print_table(header, table)
    print(
        "\npersist: the store's own time per turn (LangGraph: the checkpointer's put, put_writes, "
        "get_tuple and get_delta_channel_history calls; Strands: the AfterInvocationEvent hooks; "
        "statevcs: repo.commit; JSON: dumps + write), median over the window. turn: the whole "
        "turn (graph.invoke, agent(prompt)). history listing: LangGraph graph.get_state_history, "
        "statevcs repo.log, Strands list_snapshot_ids, JSON a sorted directory listing with "
        f"stat; each capped at {args.list_budget:.0f} s."
    )
    saver_rows = [row for row in rows if row.saver_listing is not None]
    if saver_rows:
        print(
            "checkpointer.list() alone: "
            + "; ".join(
                f"{row.name} "
                + (
                    f"> {ms(row.saver_listing)} ({row.saver_listing_note})"
                    if row.saver_listing_note
                    else ms(row.saver_listing)
                )
                for row in saver_rows
            )
        )

    split = [row for row in rows if row.persist_write and not row.status]
    if split:
        first, last, _, _ = windows(args.turns)
        print(
            "LangGraph persist split, writes (put + put_writes) / reads (get_tuple + delta "
            "history), early -> late:"
        )
        for row in split:
            reads = [a - b for a, b in zip(row.persist, row.persist_write)]
            print(
                f"  {row.name}: writes {ms(median(row.persist_write, first))} -> "
                f"{ms(median(row.persist_write, last))}; reads {ms(median(reads, first))} -> "
                f"{ms(median(reads, last))}"
            )

    if sizes:
        print(
            f"\n## W3: one more turn at {' / '.join(f'{s:,}' for s in sizes)} messages "
            f"(median of {args.samples})\n"
        )
        w3_header = (
            ["system"]
            + [f"persist @{s:,}" for s in sizes]
            + [f"turn @{s:,}" for s in sizes]
            + [f"persist @{sizes[-1]:,} / @{sizes[0]:,}"]
        )
        w3_rows = []
        for row in rows:
            if row.status or not row.w3_persist:
                w3_rows.append([row.name, row.status or "-"] + [""] * (len(w3_header) - 2))
                continue
            smallest, largest = row.w3_persist[sizes[0]], row.w3_persist[sizes[-1]]
            w3_rows.append(
                [row.name]
                + [ms(row.w3_persist[s]) for s in sizes]
                + [ms(row.w3_whole[s]) for s in sizes]
                + [f"{largest / smallest:.1f}x"]
            )
        print_table(w3_header, w3_rows)

    print_ratios(rows, args.turns, sizes)
    print_targets(rows, args.turns)
    print_framework_targets(rows)


def ratio(a: float | None, b: float | None) -> str:
    """``a / b`` as ``12.3x`` (two decimals below 1), ``-`` when either is missing."""
    if a is None or not b:
        return "-"
    value = a / b
    return f"{value:,.1f}x" if value >= 1 else f"{value:.2f}x"


def print_ratios(rows: list[Row], turns: int, sizes: list[int]) -> None:
    """Every figure divided by its statevcs counterpart's (``x`` times statevcs)."""
    by_name = {row.name: row for row in rows if not row.status}
    columns = [
        "bytes",
        "persist late",
        "turn late",
        "listing",
        "restore latest",
        "restore 10",
        "bytes/forked turn",
    ] + [f"W3 {size}" for size in sizes]
    print("\n## Ratios: each figure / its statevcs counterpart's (higher: statevcs better)\n")
    table = []
    for row in rows:
        reference = by_name.get(row.reference)
        if reference is None and row.reference.startswith("LangGraph StateVCSSaver"):
            reference = by_name.get(StatevcsCommit.name)
        if row.status or reference is None or reference is row:
            continue
        mine, theirs = figures(row, turns), figures(reference, turns)
        cells = []
        for column in columns:
            a, b = mine.get(column), theirs.get(column)
            capped = column == "listing" and (row.listing_note or reference.listing_note)
            # A capped listing is a lower bound: so is its ratio (unless both are capped).
            if capped and reference.listing_note:
                cells.append("-")
            else:
                cells.append((">" if capped else "") + ratio(a, b))
        table.append([row.name, reference.name, *cells])
    print_table(["system", "vs", *columns], table)


def print_targets(rows: list[Row], turns: int) -> None:
    """Issue 11's W1/W2 targets for StateVCSSaver, met or missed."""
    by_name = {row.name: row for row in rows if not row.status}
    sqlite = by_name.get("LangGraph SqliteSaver (add_messages)")
    delta = by_name.get("LangGraph SqliteSaver (DeltaChannel)")
    ours = [
        by_name[name]
        for name in (
            "LangGraph StateVCSSaver (add_messages)",
            "LangGraph StateVCSSaver (DeltaChannel)",
        )
        if name in by_name
    ]
    print(
        "\n## Issue 11 targets (StateVCSSaver against SqliteSaver and SqliteSaver + DeltaChannel)\n"
    )
    if not ours or sqlite is None or delta is None:
        print(f"- StateVCSSaver: {SAVER_MISSING or 'no result'}; targets not checked")
        return
    early, late, early_label, late_label = windows(turns)

    def check(label: str, ok: bool, detail: str) -> None:
        print(f"- [{'met' if ok else 'MISSED'}] {label}: {detail}")

    for row in ours:
        print(f"{row.name}:")
        for peer, bound in ((sqlite, 100), (delta, 4)):
            assert row.bytes_closed is not None and peer.bytes_closed is not None
            ratio = peer.bytes_closed / row.bytes_closed
            check(f"W1 bytes <= 1/{bound} of {peer.name}", ratio >= bound, f"1/{ratio:,.1f}")
        for peer in (sqlite, delta):
            if row.listing is None or peer.listing is None:
                continue
            if row.listing_note:
                check(
                    f"W1 listing <= 1/100 of {peer.name}",
                    False,
                    f"ours did not finish in {ms(row.listing)} ({row.listing_note})",
                )
                continue
            ratio = peer.listing / row.listing
            capped = " (theirs capped: at least this)" if peer.listing_note else ""
            check(f"W1 listing <= 1/100 of {peer.name}", ratio >= 100, f"1/{ratio:,.1f}{capped}")
        for peer in (sqlite, delta):
            if row.restore_latest is None or peer.restore_latest is None:
                continue
            check(
                f"W1 restore latest no slower than {peer.name}",
                row.restore_latest <= peer.restore_latest,
                f"{ms(row.restore_latest)} vs {ms(peer.restore_latest)}",
            )
        first, last = median(row.persist, early), median(row.persist, late)
        if first and last:
            check(
                f"W1 saver time {late_label} within 1.5x of {early_label}",
                last / first <= 1.5,
                f"{ms(last)} / {ms(first)} = {last / first:.2f}x",
            )
            wfirst, wlast = median(row.persist_write, early), median(row.persist_write, late)
            if wfirst and wlast:
                print(
                    f"  (writes alone, put + put_writes: {ms(wlast)} / {ms(wfirst)} = "
                    f"{wlast / wfirst:.2f}x; the rest is get_tuple loading the thread's state)"
                )
        for peer, bound in ((sqlite, 100), (delta, 10)):
            if row.fork_bytes is None or peer.fork_bytes is None:
                continue
            ratio = peer.fork_bytes / row.fork_bytes if row.fork_bytes > 0 else float("inf")
            check(
                f"W2 bytes per forked turn <= 1/{bound} of {peer.name}",
                ratio >= bound,
                f"{human_bytes(row.fork_bytes)} vs {human_bytes(peer.fork_bytes)} (1/{ratio:,.1f})",
            )


def print_framework_targets(rows: list[Row]) -> None:
    """Issue 21's targets: W1 bytes <= 1/20 of each framework's own store, restore latest no
    slower."""
    by_name = {row.name: row for row in rows if not row.status}
    print("\n## Issue 21 targets (each framework's own store against its statevcs counterpart)\n")
    for framework in FRAMEWORKS:
        theirs = by_name.get(f"{framework.framework} {framework.theirs}")
        ours = by_name.get(f"{framework.framework} {framework.ours}")
        if theirs is None or ours is None:
            print(f"- {framework.framework}: not run")
            continue
        assert theirs.bytes_closed is not None and ours.bytes_closed is not None
        share = theirs.bytes_closed / ours.bytes_closed
        print(
            f"- [{'met' if share >= 20 else 'MISSED'}] {ours.name}: W1 bytes <= 1/20 of "
            f"{theirs.name}: 1/{share:,.1f}"
        )
        if ours.restore_latest is not None and theirs.restore_latest is not None:
            print(
                f"- [{'met' if ours.restore_latest <= theirs.restore_latest else 'MISSED'}] "
                f"{ours.name}: restore latest no slower than {theirs.name}: "
                f"{ms(ours.restore_latest)} vs {ms(theirs.restore_latest)}"
            )


def machine() -> str:
    """One line naming the machine, Python and the peers' versions."""
    versions = []
    for package in (
        "langgraph",
        "langgraph-checkpoint",
        "langgraph-checkpoint-sqlite",
        "strands-agents",
        "openai-agents",
        "pydantic-ai-slim",
        "pydantic-ai-harness",
        "google-adk",
        "statevcs",
    ):
        try:
            versions.append(f"{package} {importlib_metadata.version(package)}")
        except importlib_metadata.PackageNotFoundError:
            versions.append(f"{package} (not installed)")
    return (
        f"{os.cpu_count()} cores, Python {platform.python_version()}, SQLite "
        f"{sqlite3.sqlite_version}, {platform.system()} {platform.machine()}; "
        + ", ".join(versions)
    )


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run every system, print the tables; 1 if any system failed."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=None, help="W1 turns (default 1,000)")
    parser.add_argument("--forks", type=int, default=None, help="W2 forks (default 10)")
    parser.add_argument(
        "--sizes",
        default=None,
        help="W3 conversation lengths, comma-separated (default 100,1000,10000)",
    )
    parser.add_argument("--samples", type=int, default=5, help="W3 turns timed per size")
    parser.add_argument(
        "--list-budget",
        type=float,
        default=10.0,
        help="seconds after which a history listing is stopped (reported as a lower bound)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="200 turns, 3 forks, W3 at 100 and 1,000"
    )
    parser.add_argument(
        "--only", default=None, help="run only systems whose name contains this text"
    )
    args = parser.parse_args(argv)
    args.turns = args.turns or (200 if args.quick else 1000)
    args.forks = args.forks if args.forks is not None else (3 if args.quick else 10)
    if args.sizes is None:
        args.sizes = "100,1000" if args.quick else "100,1000,10000"
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    if args.turns < 10:
        parser.error("--turns must be at least 10 (restore turn 10)")
    if any(size < 2 for size in sizes):
        parser.error("--sizes must be at least 2 messages each")

    print("# Peer benchmark: statevcs, LangGraph checkpointers, Strands session managers, JSON")
    print(f"machine: {machine()}")
    print("command: python benchmarks/peers.py " + " ".join(sys.argv[1:] if argv is None else argv))

    def log(line: str) -> None:
        print(f"  [{line}]", file=sys.stderr, flush=True)

    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="statevcs-peers-") as tmp:
        for system in systems(Path(tmp), args.turns):
            if isinstance(system, str):
                rows.append(Row(system, status=NOT_AVAILABLE))
                continue
            if args.only and args.only.lower() not in system.name.lower():
                continue
            rows.append(run_system(system, args, sizes, log))
            del system
            gc.collect()
    report(rows, args, sizes)
    return 1 if any(row.status.startswith("error") for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
