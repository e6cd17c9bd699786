"""Restore latest, OpenAI Agents SDK, Pydantic AI and Google ADK: each framework's store against
statevcs.

The peer benchmark's W1 conversation (``--turns`` turns, two items a turn) is written once into
``SQLiteSession`` and ``StateVCSSession``, into a ``ModelMessagesTypeAdapter`` JSON file and
``AgentHistory``, and as two ADK events a turn into ``SqliteSessionService`` and
``StateVCSSessionService``; then each read is timed on a fresh handle (a new connection /
``Repo.open`` / session service, not timed; ADK's SQLite service first reads a missing session,
untimed, so its schema check is not counted), interleaved, wall time and CPU time
(``time.process_time``, which other processes on a shared machine disturb less), minimum over
``--repeat`` reads. The "long-lived" rows read through one handle kept open across reads (as a
server keeps its session objects), the SDK's ``SQLiteSession`` through its one connection. One
command, one table::

    python benchmarks/bench_session_reads.py                  # 1,000 turns, 15 reads each
    python benchmarks/bench_session_reads.py --turns 200 --repeat 5
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import SQLiteSession
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types
from peers import assistant_text, dict_turn, user_text  # this folder: sys.path[0]
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)

import statevcs
from statevcs.integrations.google_adk import StateVCSSessionService
from statevcs.integrations.openai_agents import StateVCSSession
from statevcs.integrations.pydantic_ai import AgentHistory

LIMIT = 20
Read = Callable[[], tuple[float, float, int]]
ADK_SESSION = {"app_name": "bench", "user_id": "u", "session_id": "bench"}


def pydantic_turn(turn: int) -> list[ModelMessage]:
    """The two messages of one turn, as the peer benchmark's Pydantic AI rows write them."""
    return [
        ModelRequest(parts=[UserPromptPart(user_text(turn))]),
        ModelResponse(parts=[TextPart(assistant_text(turn))], model_name="bench"),
    ]


def adk_turn(turn: int) -> list[Event]:
    """The two events of one turn, as the peer benchmark's ADK rows append them."""
    return [
        Event(
            invocation_id=f"inv-{turn}",
            author=author,
            content=types.Content(role=role, parts=[types.Part(text=words)]),
        )
        for author, role, words in (
            ("user", "user", user_text(turn)),
            ("agent", "model", assistant_text(turn)),
        )
    ]


def _timed(call: Callable[[], Any]) -> tuple[float, float, int]:
    """Wall and CPU seconds of ``call()``, and the length of what it returned."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    return time.perf_counter() - wall, time.process_time() - cpu, len(result)


def build(folder: Path, turns: int) -> None:
    """Write the conversation into all four stores."""
    loop = asyncio.new_event_loop()
    history: list[ModelMessage] = []
    with statevcs.Repo.init(folder / "repo") as repo:
        ours = StateVCSSession(repo, "bench")
        theirs = SQLiteSession("bench", db_path=folder / "sessions.db")
        agent_history = AgentHistory(repo, "pydantic")
        adk_ours = StateVCSSessionService(repo)
        adk_theirs = SqliteSessionService(str(folder / "adk.db"))
        ours_session = loop.run_until_complete(adk_ours.create_session(**ADK_SESSION))
        theirs_session = loop.run_until_complete(adk_theirs.create_session(**ADK_SESSION))
        for turn in range(1, turns + 1):
            items = dict_turn(turn)
            loop.run_until_complete(ours.add_items(items))
            loop.run_until_complete(theirs.add_items(items))  # type: ignore[arg-type]
            history.extend(pydantic_turn(turn))
            agent_history.commit(history)
            for event in adk_turn(turn):
                loop.run_until_complete(adk_ours.append_event(ours_session, event))
                loop.run_until_complete(
                    adk_theirs.append_event(theirs_session, event.model_copy(deep=True))
                )
        theirs.close()
        loop.run_until_complete(adk_theirs.close())
    (folder / "history.json").write_bytes(ModelMessagesTypeAdapter.dump_json(history))
    loop.close()


def reads(folder: Path, stack: ExitStack) -> dict[str, Read]:
    """Each read on a fresh handle (the long-lived rows: on handles that ``stack`` closes), by
    row label."""
    loop = asyncio.new_event_loop()
    stack.callback(loop.close)

    def sdk(limit: int | None) -> Read:
        def read() -> tuple[float, float, int]:
            session = SQLiteSession("bench", db_path=folder / "sessions.db")
            try:
                return _timed(lambda: loop.run_until_complete(session.get_items(limit)))
            finally:
                session.close()

        return read

    def ours(limit: int | None) -> Read:
        def read() -> tuple[float, float, int]:
            with statevcs.Repo.open(folder / "repo") as repo:
                session = StateVCSSession(repo, "bench")
                return _timed(lambda: loop.run_until_complete(session.get_items(limit)))

        return read

    def json_file() -> tuple[float, float, int]:
        return _timed(
            lambda: ModelMessagesTypeAdapter.validate_json((folder / "history.json").read_bytes())
        )

    def agent_history() -> tuple[float, float, int]:
        with statevcs.Repo.open(folder / "repo") as repo:
            history = AgentHistory(repo, "pydantic")
            return _timed(history.messages)

    def adk_events(service: Any, config: GetSessionConfig | None) -> list[Event]:
        session = loop.run_until_complete(service.get_session(**ADK_SESSION, config=config))
        return list(session.events)

    def adk_theirs(config: GetSessionConfig | None) -> Read:
        def read() -> tuple[float, float, int]:
            service = SqliteSessionService(str(folder / "adk.db"))
            try:
                missing = {**ADK_SESSION, "session_id": "missing"}
                loop.run_until_complete(service.get_session(**missing))  # schema check
                return _timed(lambda: adk_events(service, config))
            finally:
                loop.run_until_complete(service.close())

        return read

    def adk_ours(config: GetSessionConfig | None) -> Read:
        def read() -> tuple[float, float, int]:
            with statevcs.Repo.open(folder / "repo") as repo:
                return _timed(lambda: adk_events(StateVCSSessionService(repo), config))

        return read

    long_lived = StateVCSSessionService(stack.enter_context(statevcs.Repo.open(folder / "repo")))
    kept_repo = stack.enter_context(statevcs.Repo.open(folder / "repo"))
    kept_ours = StateVCSSession(kept_repo, "bench")
    kept_history = AgentHistory(kept_repo, "pydantic")
    kept_theirs = SQLiteSession("bench", db_path=folder / "sessions.db")
    stack.callback(kept_theirs.close)

    def kept(session: Any) -> Read:
        return lambda: _timed(lambda: loop.run_until_complete(session.get_items()))

    recent = GetSessionConfig(num_recent_events=LIMIT)
    return {
        "OpenAI Agents SQLiteSession get_items()": sdk(None),
        "OpenAI Agents StateVCSSession get_items()": ours(None),
        f"OpenAI Agents SQLiteSession get_items({LIMIT})": sdk(LIMIT),
        f"OpenAI Agents StateVCSSession get_items({LIMIT})": ours(LIMIT),
        "OpenAI Agents SQLiteSession get_items(), long-lived session": kept(kept_theirs),
        "OpenAI Agents StateVCSSession get_items(), long-lived session": kept(kept_ours),
        "Pydantic AI JSON history file (validate_json)": json_file,
        "Pydantic AI AgentHistory messages()": agent_history,
        "Pydantic AI AgentHistory messages(), long-lived handle": lambda: _timed(
            kept_history.messages
        ),
        "Google ADK SqliteSessionService get_session()": adk_theirs(None),
        "Google ADK StateVCSSessionService get_session()": adk_ours(None),
        f"Google ADK SqliteSessionService get_session(num_recent_events={LIMIT})": adk_theirs(
            recent
        ),
        f"Google ADK StateVCSSessionService get_session(num_recent_events={LIMIT})": adk_ours(
            recent
        ),
        "Google ADK StateVCSSessionService get_session(), long-lived handle": lambda: _timed(
            lambda: adk_events(long_lived, None)
        ),
    }


def main() -> None:
    """Parse the arguments, build the stores, time the reads and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000, help="turns (default 1,000)")
    parser.add_argument("--repeat", type=int, default=15, help="reads of each (default 15)")
    args = parser.parse_args()
    if args.turns < 1 or args.repeat < 1:
        parser.error("--turns and --repeat must be at least 1")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        build(folder, args.turns)
        with ExitStack() as stack:
            table = reads(folder, stack)
            walls: dict[str, list[float]] = {label: [] for label in table}
            cpus: dict[str, list[float]] = {label: [] for label in table}
            counts: dict[str, int] = {}
            for _ in range(args.repeat):
                for label, read in table.items():
                    wall, cpu, count = read()
                    walls[label].append(wall)
                    cpus[label].append(cpu)
                    counts[label] = count
    print(f"# Restore latest on a fresh handle: {args.turns:,} turns, min of {args.repeat}\n")
    width = max(map(len, table))
    print(f"| {'read':{width}} | items | wall (ms) | CPU (ms) |")
    print(f"|{'-' * (width + 2)}|-------|-----------|----------|")
    for label in table:
        print(
            f"| {label:{width}} | {counts[label]:5,} | {min(walls[label]) * 1000:9.2f} "
            f"| {min(cpus[label]) * 1000:8.2f} |"
        )


if __name__ == "__main__":
    main()
