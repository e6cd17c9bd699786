"""Time travel in a long-lived LangGraph saver: lookups of old checkpoints by id.

A 1,000-turn ``add_messages`` thread (the peer benchmark's W1 graph) is written through
``StateVCSSaver`` to a SQLite repository; then one saver, as a server process would keep it,
answers ``graph.get_state`` for old checkpoints. The thread's head names a lineage index of
its history (statevcs.idindex): a lookup reads a few objects, on this saver, after another
handle's step, and on a new handle alike. ``--walk`` turns the lineage index off (the
commit graph's labels and the saver's in-memory index of a walk answer instead). One
command, one table::

    python benchmarks/bench_langgraph_lookup.py            # 1,000 turns, about 20 s
    python benchmarks/bench_langgraph_lookup.py --turns 50
    python benchmarks/bench_langgraph_lookup.py --walk     # without lineage indexes
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers  # the W1 graph, texts and scripted model
from langchain_core.messages import HumanMessage

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver

THREAD = {"configurable": {"thread_id": "bench"}}


def _at(checkpoint_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": "bench", "checkpoint_id": checkpoint_id}}


def _ms(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000, help="turns in the thread")
    parser.add_argument("--lookups", type=int, default=20, help="later lookups to time")
    parser.add_argument("--walk", action="store_true", help="without lineage indexes")
    args = parser.parse_args()
    if args.walk:
        from statevcs.integrations.langgraph import store as lg_store

        lg_store.find_by_index = lambda *_: None  # type: ignore[assignment]
    random.seed(7)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "repo"
        with statevcs.Repo.init(path) as repo:
            graph = peers.build_graph("add_messages", StateVCSSaver(repo))
            for turn in range(1, args.turns + 1):
                message = HumanMessage(content=peers.user_text(turn), id=f"u{turn}")
                graph.invoke({"messages": [message]}, THREAD, durability="sync")
            history = graph.get_state_history(THREAD)
            ids = [state.config["configurable"]["checkpoint_id"] for state in history]
        with statevcs.Repo.open(path) as repo, statevcs.Repo.open(path) as other_repo:
            saver = StateVCSSaver(repo)
            graph = peers.build_graph("add_messages", saver)
            graph.get_state(THREAD)  # warm up: imports, the latest checkpoint
            old = ids[-min(len(ids), 30)]  # about turn 10
            first = _ms(lambda: graph.get_state(_at(old)))
            later = statistics.median(
                _ms(lambda: graph.get_state(_at(random.choice(ids[len(ids) // 2 :]))))
                for _ in range(args.lookups)
            )
            again = _ms(lambda: graph.get_state(_at(old)))
            # Another handle (another process, as far as the saver can tell) takes a step.
            other = peers.build_graph("add_messages", StateVCSSaver(other_repo))
            message = HumanMessage(content=peers.user_text(args.turns + 1), id="u-other")
            other.invoke({"messages": [message]}, THREAD, durability="sync")
            moved = _ms(lambda: graph.get_state(_at(old)))
            fresh_graph = peers.build_graph("add_messages", StateVCSSaver(repo))
            fresh = _ms(lambda: fresh_graph.get_state(_at(old)))
        with statevcs.Repo.open(path) as new_repo:
            new_graph = peers.build_graph("add_messages", StateVCSSaver(new_repo))
            new_handle = _ms(lambda: new_graph.get_state(_at(old)))
    rows = [
        (f"first lookup of an early checkpoint ({len(ids):,} checkpoints)", first),
        (f"later lookups of older half, median of {args.lookups}", later),
        ("the early checkpoint again", again),
        ("after another handle's step", moved),
        ("a new saver on the same handle", fresh),
        ("a new saver on a new handle", new_handle),
    ]
    print("# Time travel in one long-lived StateVCSSaver (graph.get_state by checkpoint id)")
    walk = " --walk" if args.walk else ""
    print(f"command: python benchmarks/bench_langgraph_lookup.py --turns {args.turns}{walk}")
    print()
    width = max(len(name) for name, _ in rows)
    print(f"| {'lookup'.ljust(width)} | time (ms) |")
    print(f"|{'-' * (width + 2)}|-----------|")
    for name, ms in rows:
        print(f"| {name.ljust(width)} | {ms:9.2f} |")


if __name__ == "__main__":
    main()
