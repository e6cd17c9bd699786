"""Where a LangGraph thread's bytes go: ``StateVCSSaver``'s objects by kind, per turn.

Run: ``python benchmarks/bench_langgraph_bytes.py`` (``--turns N``; ``--quick`` for a smoke run).

The peer benchmark's W1 graph (``benchmarks/peers.py``: ``START -> agent -> END``, one user
message and one scripted reply a turn, ``durability="sync"``) runs ``--turns`` turns on a
``StateVCSSaver`` twice in one process: once as statevcs writes today, and once with commits
left uncompressed (the handle never trains its commit dictionary), so the two columns differ by
that alone. For each it prints the object bytes per turn by kind, as written and after
``gc("0")`` (what stays reachable: a turn's pending writes live in side commits until the next
checkpoint folds them), and the SQLite file. A turn writes three checkpoints (the input, and
one per superstep) and two sets of pending writes, so a turn is five commits and snapshots.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by path
import peers  # the W1 graph and its texts
from bench_core import bytes_by_kind
from langchain_core.messages import HumanMessage

import statevcs
from statevcs import objectdb
from statevcs.integrations.langgraph import StateVCSSaver

Kinds = dict[str, tuple[int, int]]


def run_thread(folder: Path, turns: int, *, commit_dictionary: bool) -> tuple[Kinds, Kinds, int]:
    """Objects by kind as written and after gc, and the SQLite file's bytes after gc."""
    saved = objectdb.COMMIT_TRAIN_AFTER
    if not commit_dictionary:
        objectdb.COMMIT_TRAIN_AFTER = 2**62  # read by each new handle: this one never trains
    try:
        repo = statevcs.Repo.init(folder)
    finally:
        objectdb.COMMIT_TRAIN_AFTER = saved
    graph = peers.build_graph("add_messages", StateVCSSaver(repo))
    config = {"configurable": {"thread_id": "bench"}}
    for turn in range(turns):
        message = HumanMessage(content=peers.user_text(turn), id=f"u{turn}")
        graph.invoke({"messages": [message]}, config, durability="sync")
    written = bytes_by_kind(repo)
    repo.gc("0")
    kept = bytes_by_kind(repo)
    repo.close()
    on_disk = sum(f.stat().st_size for f in folder.iterdir())
    return written, kept, on_disk


def per_turn(kinds: Kinds, kind: str, turns: int) -> str:
    return f"{kinds.get(kind, (0, 0))[1] / turns:,.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="200 turns")
    args = parser.parse_args(argv)
    turns = 200 if args.quick else args.turns
    if turns < 100:
        parser.error("--turns must be at least 100 (the dictionary trains after ~50 commits)")
    print(f"command: python benchmarks/bench_langgraph_bytes.py --turns {turns}")
    print(f"StateVCSSaver, {turns} turns of the peer graph, bytes per turn (SQLite)")
    print()
    with tempfile.TemporaryDirectory(prefix="statevcs-bench-") as tmp:
        runs = {
            name: run_thread(Path(tmp) / name, turns, commit_dictionary=flag)
            for name, flag in (("plain commits", False), ("commit dictionary", True))
        }
    kinds = sorted(
        {k for written, kept, _ in runs.values() for k in (*written, *kept)},
        key=lambda k: -runs["plain commits"][0].get(k, (0, 0))[1],
    )
    names = list(runs)
    header = ["kind", *(f"{n}: written" for n in names), *(f"{n}: after gc" for n in names)]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for kind in kinds:
        cells = [per_turn(runs[n][0], kind, turns) for n in names]
        cells += [per_turn(runs[n][1], kind, turns) for n in names]
        print(f"| {kind} | " + " | ".join(cells) + " |")
    totals = [f"{sum(v[1] for v in runs[n][0].values()) / turns:,.0f}" for n in names]
    totals += [f"{sum(v[1] for v in runs[n][1].values()) / turns:,.0f}" for n in names]
    print("| **all objects** | " + " | ".join(totals) + " |")
    files = ["", ""] + [f"{runs[n][2] / turns:,.0f}" for n in names]
    print("| SQLite file (after gc and its VACUUM) | " + " | ".join(files) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
