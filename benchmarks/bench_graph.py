"""The persisted commit graph: walks and lookups by id from a fresh handle, without and with it.

Run: ``python benchmarks/bench_graph.py`` (``--commits 1000 --turns 1000``; ``--no-s3`` skips
the SeaweedFS part, ``--no-langgraph`` the LangGraph one).

Each figure is the best of a few runs, each on a new ``Repo`` handle (nothing cached in the
process): "no graph" removes the graph's chain from the config (what every version before the
graph did: read commits one batch at a time), "graph" is the chain as written.

* SQLite, a ``--commits`` history on ``main`` with a side branch from its 10th commit:
  resolving ``main~(n-10)``, ``log`` of every commit, ``merge_base(main, side)``,
  ``is_ancestor(main~(n-10), main)``, checkout of a commit by its id (how a Strands session
  restores a snapshot: the id needs no walk);
* LangGraph, a ``--turns`` thread on ``StateVCSSaver``: ``graph.get_state`` of turn 10 by
  checkpoint id on a new saver and handle, through the heads' lineage indexes, through the
  graph's labels alone and by a walk, against ``SqliteSaver`` doing the same (interleaved);
  on S3 (``--s3-turns``, default 200), the requests and round trips of the same lookup;
* S3 (a local SeaweedFS): requests and round trips of a cold ``log`` of every commit
  (``cache=none``), and per commit while writing (median and the highest, the commits that
  also wrote the graph).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import statevcs
from statevcs.commitgraph import CHAIN_KEY

ROUNDS = 5


def best_ms(call: Callable[[], float]) -> float:
    """The best of :data:`ROUNDS` runs of ``call`` (which returns its own seconds), in ms."""
    return min(call() for _ in range(ROUNDS)) * 1000


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    """Print a markdown table."""
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def without_graph(path: str) -> Callable[[], None]:
    """Remove the chain (returning a function that puts it back)."""
    with statevcs.Repo.open(path) as repo:
        chain = repo.store.config_get(CHAIN_KEY)
        repo.store.config_set(CHAIN_KEY, None)

    def restore() -> None:
        with statevcs.Repo.open(path) as repo:
            repo.store.config_set(CHAIN_KEY, chain)

    return restore


# --- walks on SQLite ----------------------------------------------------------------------


def bench_walks(folder: Path, commits: int) -> None:
    path = str(folder / "walks")
    with statevcs.Repo.init(path) as repo:
        state: dict[str, Any] = {"n": 0, "messages": []}
        ids = []
        for i in range(commits):
            state["n"] = i
            state["messages"].append({"role": "user", "content": f"message {i}"})
            ids.append(repo.commit(state, f"commit {i}").id)
        side: dict[str, Any] = {}
        repo.branch("side", ids[9])
        repo.checkout(side, "side")
        side["n"] = -1
        repo.commit(side, "on the side")
        repo.write_commit_graph()
    deep = commits - 10

    def op(call: Callable[[statevcs.Repo], Any]) -> Callable[[], float]:
        def run() -> float:
            with statevcs.Repo.open(path) as fresh:
                start = time.perf_counter()
                call(fresh)
                return time.perf_counter() - start

        return run

    cases: list[tuple[str, Callable[[statevcs.Repo], Any]]] = [
        (f"resolve main~{deep}", lambda r: r.resolve(f"main~{deep}")),
        (f"log of {commits + 0:,} commits", lambda r: sum(1 for _ in r.log("main"))),
        ("merge_base(main, side)", lambda r: r.merge_base("main", "side")),
        (f"is_ancestor(main~{deep}, main)", lambda r: r.is_ancestor(f"main~{deep}", "main")),
        ("checkout a commit by its id (10th)", lambda r: r.checkout({}, ids[9])),
    ]
    op(lambda r: r.resolve("main~1"))()  # imports
    measured: dict[str, dict[str, float]] = {"graph": {}, "no graph": {}}
    for name, call in cases:
        measured["graph"][name] = best_ms(op(call))
    restore = without_graph(path)
    for name, call in cases:
        measured["no graph"][name] = best_ms(op(call))
    restore()
    rows = []
    for name, _ in cases:
        before, after = measured["no graph"][name], measured["graph"][name]
        rows.append([name, f"{before:.2f}", f"{after:.2f}", f"{before / after:.1f}x"])
    table(
        f"SQLite, {commits:,} commits, fresh handle (ms, best of {ROUNDS})",
        ["operation", "no graph", "graph", "speed-up"],
        rows,
    )


# --- LangGraph ----------------------------------------------------------------------------


def bench_langgraph(folder: Path, turns: int) -> None:
    import peers
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver

    from statevcs.integrations.langgraph import StateVCSSaver

    thread = {"configurable": {"thread_id": "bench"}}
    path = str(folder / "langgraph")
    sqlite_path = str(folder / "checkpoints.sqlite")
    connection = sqlite3.connect(sqlite_path, check_same_thread=False)
    checkpoints: dict[str, list[str]] = {}
    with statevcs.Repo.init(path) as repo:
        for name, saver in (("statevcs", StateVCSSaver(repo)), ("sqlite", SqliteSaver(connection))):
            graph = peers.build_graph("add_messages", saver)
            ids = []
            for turn in range(1, turns + 1):
                message = HumanMessage(content=peers.user_text(turn), id=f"u{turn}")
                out = graph.invoke({"messages": [message]}, thread, durability="sync")
                assert out
                ids.append(graph.get_state(thread).config["configurable"]["checkpoint_id"])
            checkpoints[name] = ids
    connection.close()

    def at(checkpoint_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": "bench", "checkpoint_id": checkpoint_id}}

    def statevcs_lookup() -> float:
        with statevcs.Repo.open(path) as fresh:
            graph = peers.build_graph("add_messages", StateVCSSaver(fresh))
            start = time.perf_counter()
            values = graph.get_state(at(checkpoints["statevcs"][9])).values
            took = time.perf_counter() - start
        assert len(values["messages"]) == 20
        return took

    def sqlite_lookup() -> float:
        conn = sqlite3.connect(sqlite_path, check_same_thread=False)
        try:
            graph = peers.build_graph("add_messages", SqliteSaver(conn))
            start = time.perf_counter()
            values = graph.get_state(at(checkpoints["sqlite"][9])).values
            took = time.perf_counter() - start
        finally:
            conn.close()
        assert len(values["messages"]) == 20
        return took

    statevcs_lookup()
    sqlite_lookup()
    # Interleaved, best of each: the machine is shared, so ratios come from one stretch.
    index, peer = [], []
    for _ in range(3 * ROUNDS):
        index.append(statevcs_lookup())
        peer.append(sqlite_lookup())
    with without_lineage_index():
        labels = best_ms(statevcs_lookup)
        restore = without_graph(path)
        walk = best_ms(statevcs_lookup)
        restore()
    best, peer_ms = min(index) * 1000, min(peer) * 1000
    table(
        f"LangGraph get_state of turn 10 by checkpoint id, {turns:,} turns, fresh saver (ms)",
        ["saver", "time", "vs SqliteSaver"],
        [
            [
                "StateVCSSaver, walk (no lineage index, no graph)",
                f"{walk:.2f}",
                f"{walk / peer_ms:.2f}x",
            ],
            ["StateVCSSaver, graph labels", f"{labels:.2f}", f"{labels / peer_ms:.2f}x"],
            ["StateVCSSaver, lineage index", f"{best:.2f}", f"{best / peer_ms:.2f}x"],
            ["SqliteSaver", f"{peer_ms:.2f}", "1.00x"],
        ],
    )


@contextlib.contextmanager
def without_lineage_index() -> Iterator[None]:
    """Lookups by checkpoint id without the heads' lineage indexes (what the graph alone does)."""
    from statevcs.integrations.langgraph import store as lg_store

    real = lg_store.find_by_index
    lg_store.find_by_index = lambda *_: None  # type: ignore[assignment]
    try:
        yield
    finally:
        lg_store.find_by_index = real


def bench_langgraph_s3(folder: Path, turns: int) -> None:
    """A fresh handle's get_state of turn 10 by checkpoint id on S3, cache=none: requests and
    round trips with the lineage index, the graph's labels alone, and a walk."""
    import peers
    from bench_s3 import REQUESTS
    from langchain_core.messages import HumanMessage
    from seaweedfs import SeaweedFS, credentials

    from statevcs.integrations.langgraph import StateVCSSaver

    os.environ.update(credentials())
    os.environ["STATEVCS_CACHE_DIR"] = str(folder / "cache-langgraph")
    REQUESTS.install()
    server = SeaweedFS()
    server.start()
    thread = {"configurable": {"thread_id": "bench"}}
    try:
        url = server.url(f"bench/{uuid.uuid4().hex}")
        ids = []
        with statevcs.Repo.init(url) as repo:
            graph = peers.build_graph("add_messages", StateVCSSaver(repo))
            for turn in range(1, turns + 1):
                message = HumanMessage(content=peers.user_text(turn), id=f"u{turn}")
                graph.invoke({"messages": [message]}, thread, durability="sync")
                ids.append(graph.get_state(thread).config["configurable"]["checkpoint_id"])
        config = {"configurable": {"thread_id": "bench", "checkpoint_id": ids[9]}}

        def cold() -> dict[str, float]:
            with statevcs.Repo.open(f"{url}&cache=none") as fresh:
                graph = peers.build_graph("add_messages", StateVCSSaver(fresh))
                with REQUESTS.counting() as counted:
                    start = time.perf_counter()
                    values = graph.get_state(config).values
                    counted["time"] = time.perf_counter() - start
            assert len(values["messages"]) == 20
            return counted

        rows = []
        found = cold()
        rows.append(["lineage index", found])
        with without_lineage_index():
            rows.append(["graph labels", cold()])
            restore = without_graph(url)
            rows.append(["walk", cold()])
            restore()
        table(
            f"S3 (SeaweedFS) get_state of turn 10 by checkpoint id, {turns:,} turns, new "
            "handle, cache=none",
            ["StateVCSSaver", "requests", "round trips", "ms"],
            [
                [
                    name,
                    f"{c['requests']:.0f}",
                    f"{c['round_trips']:.0f}",
                    f"{c['time'] * 1000:.0f}",
                ]
                for name, c in rows
            ],
        )
    finally:
        server.stop()


# --- S3 -----------------------------------------------------------------------------------


def bench_s3(folder: Path, commits: int) -> None:
    from bench_s3 import REQUESTS
    from seaweedfs import SeaweedFS, credentials

    os.environ.update(credentials())
    os.environ["STATEVCS_CACHE_DIR"] = str(folder / "cache")
    REQUESTS.install()
    server = SeaweedFS()
    server.start()
    try:
        url = server.url(f"bench/{uuid.uuid4().hex}")
        samples = []
        with statevcs.Repo.init(url) as repo:
            state: dict[str, Any] = {"messages": []}
            for i in range(commits):
                state["messages"].append({"role": "user", "content": f"message {i}"})
                with REQUESTS.counting() as counted:
                    repo.commit(state, f"commit {i}")
                samples.append(counted["round_trips"])
        rows = []

        def cold_log() -> dict[str, float]:
            with statevcs.Repo.open(f"{url}&cache=none") as fresh, REQUESTS.counting() as counted:
                start = time.perf_counter()
                count = sum(1 for _ in fresh.log("main"))
                counted["time"] = time.perf_counter() - start
            assert count == commits
            return counted

        with_graph = cold_log()
        restore = without_graph(url)
        no_graph = cold_log()
        restore()
        for name, found in (("no graph", no_graph), ("graph", with_graph)):
            rows.append(
                [
                    name,
                    f"{found['requests']:.0f}",
                    f"{found['round_trips']:.0f}",
                    f"{found['time'] * 1000:.0f}",
                ]
            )
        table(
            f"S3 (SeaweedFS) cold log of {commits:,} commits, new handle, cache=none",
            ["", "requests", "round trips", "ms"],
            rows,
        )
        table(
            f"S3 round trips per commit while writing those {commits:,} commits",
            ["median", "highest (commits that also wrote the graph)", "mean"],
            [
                [
                    f"{statistics.median(samples):.0f}",
                    f"{max(samples):.0f}",
                    f"{statistics.mean(samples):.2f}",
                ]
            ],
        )
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--no-s3", action="store_true")
    parser.add_argument("--no-langgraph", action="store_true")
    parser.add_argument(
        "--s3-turns", type=int, default=200, help="turns of the LangGraph thread on S3"
    )
    args = parser.parse_args()
    if args.commits < 20 or args.turns < 10:
        parser.error("--commits must be at least 20 and --turns at least 10")
    print("## Commit graph")
    print(
        f"command: python benchmarks/bench_graph.py --commits {args.commits} --turns {args.turns}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        bench_walks(folder, args.commits)
        if not args.no_langgraph:
            bench_langgraph(folder, args.turns)
        if not args.no_s3:
            bench_s3(folder, args.commits)
            if not args.no_langgraph:
                bench_langgraph_s3(folder, min(args.turns, args.s3_turns))


if __name__ == "__main__":
    main()
