"""Where a fresh handle's restore of turn 10 spends its time, next to the peer doing the same.

The peer run's "restore turn 10" rows (``benchmarks/peers.py``) for LangGraph and Strands,
taken apart: each stage is timed by a wrapper around the function that does it, in the same
calls as the totals (best of ``--rounds``, each system interleaved with its peer, a new
handle every time). One command, two tables::

    python benchmarks/bench_restore_parts.py                # 300 turns, about a minute
    python benchmarks/bench_restore_parts.py --turns 1000   # the peer run's size

``--against DIR`` times instead the LangGraph restores (turn 10 by checkpoint id, and the
latest) with the ``statevcs`` package under ``DIR`` and with this checkout's, alternating in
one process (each round runs both, in turns first), next to ``SqliteSaver``::

    mkdir /tmp/old && git archive main statevcs | tar -x -C /tmp/old
    python benchmarks/bench_restore_parts.py --against /tmp/old --turns 1000

Stages of ``StateVCSSaver`` (``graph.get_state`` of turn 10 by checkpoint id): finding the
commit (the heads' lineage indexes), reading the checkpoint (refs, snapshot, messages,
values), and LangGraph's own work around ``get_tuple``. Stages of ``repo.checkout(agent,
commit id)`` (how the peer run restores a Strands snapshot): resolving the hex id, reading
the snapshot (core), tracking the restored messages, Strands' ``load_snapshot`` and
``take_snapshot``, and recording the sync. ``Repo.open`` is outside every figure, as in the
peer run.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers  # the W1 graph and agent, texts and scripted models
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from trees import install, load_tree  # the A/B's second statevcs tree

import statevcs
from statevcs import repo as repo_module
from statevcs import tracking
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.strands import adapters as strands_adapters

STAGES: dict[str, float] = {}


@contextmanager
def timed(owner: Any, name: str, label: str) -> Iterator[None]:
    """Add the time of every call of ``owner.name`` to ``STAGES[label]`` while inside."""
    real = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            STAGES[label] = STAGES.get(label, 0.0) + time.perf_counter() - start

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, real)


def best(runs: list[tuple[float, dict[str, float]]]) -> tuple[float, dict[str, float]]:
    """The fastest run with its stages."""
    return min(runs, key=lambda run: run[0])


def print_table(title: str, rows: list[tuple[str, float]], peer: tuple[str, float]) -> None:
    """A markdown table of stages in ms, with each share of the peer's total."""
    print(f"\n### {title}\n")
    print("| stage | ms | x peer |")
    print("|---|---|---|")
    for name, seconds in [*rows, peer]:
        print(f"| {name} | {seconds * 1000:.3f} | {seconds / peer[1]:.2f}x |")


# --- LangGraph ----------------------------------------------------------------------------


def langgraph(folder: Path, turns: int, rounds: int) -> None:
    folder.mkdir(parents=True)
    thread = {"configurable": {"thread_id": "bench"}}
    path, sqlite_path = folder / "repo", str(folder / "checkpoints.sqlite")
    connection = sqlite3.connect(sqlite_path, check_same_thread=False)
    ids: dict[str, list[str]] = {}
    with statevcs.Repo.init(path) as repo:
        for name, saver in (("statevcs", StateVCSSaver(repo)), ("sqlite", SqliteSaver(connection))):
            graph = peers.build_graph("add_messages", saver)
            for turn in range(1, turns + 1):
                message = HumanMessage(content=peers.user_text(turn), id=f"u{turn}")
                graph.invoke({"messages": [message]}, thread, durability="sync")
                ids.setdefault(name, []).append(
                    graph.get_state(thread).config["configurable"]["checkpoint_id"]
                )
    connection.close()

    def at(checkpoint_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": "bench", "checkpoint_id": checkpoint_id}}

    def ours() -> tuple[float, dict[str, float]]:
        with statevcs.Repo.open(path) as fresh:
            graph = peers.build_graph("add_messages", StateVCSSaver(fresh))
            STAGES.clear()
            with (
                timed(StateVCSSaver, "get_tuple", "get_tuple"),
                timed(StateVCSSaver, "_find", "find the commit (lineage index)"),
            ):
                start = time.perf_counter()
                values = graph.get_state(at(ids["statevcs"][9])).values
                took = time.perf_counter() - start
        assert len(values["messages"]) == 20
        return took, dict(STAGES)

    def theirs() -> tuple[float, dict[str, float]]:
        conn = sqlite3.connect(sqlite_path, check_same_thread=False)
        try:
            graph = peers.build_graph("add_messages", SqliteSaver(conn))
            start = time.perf_counter()
            values = graph.get_state(at(ids["sqlite"][9])).values
            took = time.perf_counter() - start
        finally:
            conn.close()
        assert len(values["messages"]) == 20
        return took, {}

    ours(), theirs()
    runs_ours, runs_theirs = [], []
    for _ in range(rounds):
        runs_ours.append(ours())
        runs_theirs.append(theirs())
    total, stages = best(runs_ours)
    peer = best(runs_theirs)[0]
    find = stages["find the commit (lineage index)"]
    get_tuple = stages["get_tuple"]
    print_table(
        f"LangGraph get_state of turn 10 by checkpoint id, {turns:,} turns, fresh handle",
        [
            ("StateVCSSaver, total", total),
            ("- find the commit (lineage index)", find),
            ("- read the checkpoint (refs, snapshot, messages, values)", get_tuple - find),
            ("- LangGraph around get_tuple", total - get_tuple),
        ],
        ("SqliteSaver, total", peer),
    )


# --- Strands ------------------------------------------------------------------------------


def strands(folder: Path, turns: int, rounds: int) -> None:
    systems = {
        kind: peers.StrandsSystem(folder / kind, turns, kind) for kind in ("snapshot", "statevcs")
    }
    for system in systems.values():
        system.folder.mkdir(parents=True)
        system.start()
        for turn in range(1, turns + 1):
            system.turn(turn)
        system.close()
    ours_path = systems["statevcs"].path
    snapshot_path = str(systems["snapshot"].path)
    adapter = strands_adapters.StrandsAgentAdapter

    def ours() -> tuple[float, dict[str, float]]:
        agent = peers.make_agent(None)
        with statevcs.Repo.open(ours_path) as repo:
            rev = repo.resolve(f"bench~{turns - 10}")
            STAGES.clear()
            with (
                timed(repo_module, "_branch_named", "resolve the hex id"),
                timed(repo_module, "resolve_revision", "resolve the hex id"),
                timed(repo_module.Repo, "_load_commit", "read the commit"),
                timed(repo_module.Repo, "_read", "read the snapshot (core)"),
                timed(tracking, "new_tracked", "track the messages (core tracking)"),
                timed(adapter, "restore_parts", "Strands load_snapshot"),
                timed(adapter, "capture_parts", "Strands take_snapshot (for is_clean)"),
                timed(repo_module.Repo, "_after_write", "record the sync"),
            ):
                start = time.perf_counter()
                repo.checkout(agent, rev)
                took = time.perf_counter() - start
        assert len(agent.messages) == 20
        return took, dict(STAGES)

    def theirs() -> tuple[float, dict[str, float]]:
        agent = peers.make_agent(None)
        session = peers.SnapshotSessionManager(
            "bench", storage=peers.LocalFileStorage(snapshot_path)
        )
        snapshot = asyncio.run(session.list_snapshot_ids(peers.make_agent(None)))[9]

        async def restore() -> float:
            start = time.perf_counter()
            await session.restore_snapshot(agent, snapshot_id=snapshot)
            return time.perf_counter() - start

        took = asyncio.run(restore())
        assert len(agent.messages) == 20
        return took, {}

    ours(), theirs()
    runs_ours, runs_theirs = [], []
    for _ in range(rounds):
        runs_ours.append(ours())
        runs_theirs.append(theirs())
    total, stages = best(runs_ours)
    peer = best(runs_theirs)[0]
    rows = [("StateVCS repo.checkout(agent, commit id), total", total)]
    rows += [(f"- {name}", seconds) for name, seconds in stages.items()]
    rows.append(("- the rest (adapter lookup, locks, Commit)", total - sum(stages.values())))
    print_table(
        f"Strands restore of turn 10 by snapshot id, {turns:,} turns, fresh handle",
        rows,
        ("SnapshotSessionManager.restore_snapshot, total", peer),
    )


# --- A/B against another statevcs tree ----------------------------------------------------


def _load_tree(root: str | None) -> dict[str, Any]:
    """Import ``statevcs`` (and what is timed) from ``root`` (``None``: as installed)."""
    return load_tree(root, "statevcs.integrations.langgraph")


def langgraph_ab(folder: Path, turns: int, rounds: int, against: str) -> None:
    trees = {"old": _load_tree(against), "new": _load_tree(None)}
    if not trees["old"]["statevcs"].__file__.startswith(str(Path(against).resolve())):
        raise SystemExit(f"--against {against}: no statevcs package there")
    folder.mkdir(parents=True)
    thread = {"configurable": {"thread_id": "bench"}}
    path, sqlite_path = folder / "repo", str(folder / "checkpoints.sqlite")
    connection = sqlite3.connect(sqlite_path, check_same_thread=False)
    ids: dict[str, str] = {}
    install(trees["new"])
    new = trees["new"]
    with new["statevcs"].Repo.init(path) as repo:
        savers = (
            ("statevcs", new["statevcs.integrations.langgraph"].StateVCSSaver(repo)),
            ("sqlite", SqliteSaver(connection)),
        )
        for name, saver in savers:
            graph = peers.build_graph("add_messages", saver)
            for turn in range(1, turns + 1):
                message = HumanMessage(content=peers.user_text(turn), id=f"u{turn}")
                graph.invoke({"messages": [message]}, thread, durability="sync")
                if turn == 10:
                    ids[name] = graph.get_state(thread).config["configurable"]["checkpoint_id"]
    connection.close()

    def config(name: str, latest: bool) -> dict[str, Any]:
        if latest:
            return thread
        return {"configurable": {"thread_id": "bench", "checkpoint_id": ids[name]}}

    def ours(tree: str, latest: bool) -> float:
        modules = trees[tree]
        install(modules)
        saver_class = modules["statevcs.integrations.langgraph"].StateVCSSaver
        with modules["statevcs"].Repo.open(path) as fresh:
            graph = peers.build_graph("add_messages", saver_class(fresh))
            start = time.perf_counter()
            values = graph.get_state(config("statevcs", latest)).values
            took = time.perf_counter() - start
        assert len(values["messages"]) == (2 * turns if latest else 20)
        return took

    def theirs(latest: bool) -> float:
        conn = sqlite3.connect(sqlite_path, check_same_thread=False)
        try:
            graph = peers.build_graph("add_messages", SqliteSaver(conn))
            start = time.perf_counter()
            values = graph.get_state(config("sqlite", latest)).values
            took = time.perf_counter() - start
        finally:
            conn.close()
        assert len(values["messages"]) == (2 * turns if latest else 20)
        return took

    print(f"\n### LangGraph get_state on a fresh handle, {turns:,} turns: A/B, best of {rounds}\n")
    print(f"old: {against}; new: this checkout\n")
    print("| restore | old ms | new ms | new / old | SqliteSaver ms | new / SqliteSaver |")
    print("|---|---|---|---|---|---|")
    for latest in (False, True):
        best: dict[str, float] = {}
        for number in range(rounds + 1):  # the first round warms up
            order = ("old", "new") if number % 2 else ("new", "old")
            times = {tree: ours(tree, latest) for tree in order}
            times["sqlite"] = theirs(latest)
            if number:
                for name, took in times.items():
                    best[name] = min(best.get(name, took), took)
        old, ours_best, peer = best["old"], best["new"], best["sqlite"]
        label = f"latest ({2 * turns:,} messages)" if latest else "turn 10 by checkpoint id"
        print(
            f"| {label} | {old * 1000:.3f} | {ours_best * 1000:.3f} | {ours_best / old:.2f}x "
            f"| {peer * 1000:.3f} | {ours_best / peer:.2f}x |"
        )
    install(trees["new"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--against",
        metavar="DIR",
        help="A/B the LangGraph restores against the statevcs package under DIR",
    )
    args = parser.parse_args()
    if args.turns < 10:
        parser.error("--turns must be at least 10")
    folder = Path(tempfile.mkdtemp())
    if args.against is not None:
        print("## LangGraph restores, A/B")
        print(
            "command: python benchmarks/bench_restore_parts.py "
            f"--against {args.against} --turns {args.turns} --rounds {args.rounds}"
        )
        try:
            langgraph_ab(folder / "ab", args.turns, args.rounds, args.against)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    print("## Restore turn 10, taken apart")
    print(f"command: python benchmarks/bench_restore_parts.py --turns {args.turns}")
    try:
        langgraph(folder / "langgraph", args.turns, args.rounds)
        strands(folder / "strands", args.turns, args.rounds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
