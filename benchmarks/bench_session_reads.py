"""Restore latest, OpenAI Agents SDK and Pydantic AI: each framework's store against statevcs.

The peer benchmark's W1 conversation (``--turns`` turns, two items a turn) is written once into
``SQLiteSession`` and ``StateVCSSession``, and into a ``ModelMessagesTypeAdapter`` JSON file and
``AgentHistory``; then each read is timed on a fresh handle (a new connection / ``Repo.open``
not timed), interleaved, wall time and CPU time (``time.process_time``, which other processes
on a shared machine disturb less), minimum over ``--repeat`` reads. One command, one table::

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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import SQLiteSession
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
from statevcs.integrations.openai_agents import StateVCSSession
from statevcs.integrations.pydantic_ai import AgentHistory

LIMIT = 20
Read = Callable[[], tuple[float, float, int]]


def pydantic_turn(turn: int) -> list[ModelMessage]:
    """The two messages of one turn, as the peer benchmark's Pydantic AI rows write them."""
    return [
        ModelRequest(parts=[UserPromptPart(user_text(turn))]),
        ModelResponse(parts=[TextPart(assistant_text(turn))], model_name="bench"),
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
        for turn in range(1, turns + 1):
            items = dict_turn(turn)
            loop.run_until_complete(ours.add_items(items))
            loop.run_until_complete(theirs.add_items(items))  # type: ignore[arg-type]
            history.extend(pydantic_turn(turn))
            agent_history.commit(history)
        theirs.close()
    (folder / "history.json").write_bytes(ModelMessagesTypeAdapter.dump_json(history))
    loop.close()


def reads(folder: Path) -> dict[str, Read]:
    """Each read on a fresh handle, by row label."""
    loop = asyncio.new_event_loop()

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

    return {
        "OpenAI Agents SQLiteSession get_items()": sdk(None),
        "OpenAI Agents StateVCSSession get_items()": ours(None),
        f"OpenAI Agents SQLiteSession get_items({LIMIT})": sdk(LIMIT),
        f"OpenAI Agents StateVCSSession get_items({LIMIT})": ours(LIMIT),
        "Pydantic AI JSON history file (validate_json)": json_file,
        "Pydantic AI AgentHistory messages()": agent_history,
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
        table = reads(folder)
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
