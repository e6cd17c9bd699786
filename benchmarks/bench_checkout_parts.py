"""Where a fresh handle's checkout of a long dict conversation spends its time (issue 18).

The "checkout latest" of ``bench_core.py``'s storage-formats table, taken apart: a format-2
SQLite repository holding ``--turns`` turns of ``bench_core.turn`` (2 messages each), read by
``repo.checkout(target, "main")`` on a new handle, next to one JSON file read + parse of the
same state. Stages: ``Repo.open``; reading the conversation's tree (``prolly.leaves``: the
store query, zstd, the hash checks and decoding of every node); decoding its messages (the
rest of ``snapshot.read_messages``); the rest of the checkout (commit, snapshot, maps, restore);
``close``. CPU time (``time.process_time``), the minimum of ``--rounds``::

    python benchmarks/bench_checkout_parts.py              # 1,000 turns
    python benchmarks/bench_checkout_parts.py --quick      # 50 turns, a smoke run

``--against DIR`` runs the same checkouts with the ``statevcs`` package under ``DIR`` and with
this checkout's, alternating in one process, and prints both columns::

    mkdir /tmp/old && git archive main statevcs | tar -x -C /tmp/old
    python benchmarks/bench_checkout_parts.py --against /tmp/old

Every checkout restores into one dict, emptied before the clock starts: a repository
remembers the plain dicts it restored (``repo.DICT_MEMORY``), and a new dict each round would
keep hundreds of conversations alive, whose garbage collections would land in the figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_core  # the conversation's turns
from trees import install, load_tree, loaded  # the A/B's second statevcs tree

STAGES = ("open", "checkout", "- tree (prolly.leaves)", "- messages", "- the rest", "close")


def _load_tree(root: str | None) -> dict[str, Any]:
    """Import ``statevcs`` (and what is timed) from ``root`` (``None``: as installed)."""
    return load_tree(root, "statevcs.repo", "statevcs.snapshot", "statevcs.structures.prolly")


def _timed(owner: Any, name: str, into: dict[str, float]) -> None:
    """Add the CPU time of every call of ``owner.name`` to ``into[name]`` from now on."""
    real = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return real(*args, **kwargs)
        finally:
            into[name] = into.get(name, 0.0) + time.process_time() - start

    setattr(owner, name, wrapper)


def build(folder: Path, turns: int) -> tuple[Path, Path, int]:
    """The repository and the JSON file of ``turns`` turns; the number of messages."""
    import statevcs

    path = folder / "repo"
    agent: dict[str, Any] = {"messages": [], "turn": 0}
    with statevcs.Repo.init(path, storage_format=2) as repo:
        for i in range(turns):
            agent["messages"].extend(bench_core.turn(i))
            agent["turn"] = i
            repo.commit(agent, message=f"turn {i}")
    state = folder / "state.json"
    state.write_text(json.dumps(agent))
    return path, state, len(agent["messages"])


def checkout_parts(modules: dict[str, Any], path: Path, target: dict[str, Any]) -> dict[str, float]:
    """One fresh-handle checkout of ``main`` into ``target``, by stage (seconds of CPU)."""
    install(modules)
    calls: dict[str, float] = modules["statevcs.snapshot"].__dict__.setdefault("_bench_calls", {})
    calls.clear()
    target.clear()
    clock = time.process_time
    start = clock()
    repo = modules["statevcs"].Repo.open(path)
    opened = clock()
    repo.checkout(target, "main")
    done = clock()
    repo.close()
    closed = clock()
    # What the checkout imported lazily (pydantic's model, the adapters) stays with its tree.
    modules.update(loaded())
    leaves, messages = calls.get("leaves", 0.0), calls.get("read_messages", 0.0)
    return {
        "open": opened - start,
        "checkout": done - opened,
        "- tree (prolly.leaves)": leaves,
        "- messages": messages - leaves,
        "- the rest": done - opened - messages,
        "close": closed - done,
    }


def instrument(modules: dict[str, Any]) -> None:
    """Time the tree walk and the message decoding of ``modules``' checkouts."""
    calls: dict[str, float] = modules["statevcs.snapshot"].__dict__.setdefault("_bench_calls", {})
    _timed(modules["statevcs.structures.prolly"], "leaves", calls)
    _timed(modules["statevcs.snapshot"], "read_messages", calls)


def json_read(state: Path) -> float:
    """CPU seconds of one read + parse of the JSON file."""
    start = time.process_time()
    json.loads(state.read_text())
    return time.process_time() - start


def minima(runs: list[dict[str, float]]) -> dict[str, float]:
    """The least time of each stage over ``runs``."""
    return {stage: min(run[stage] for run in runs) for stage in runs[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="50 turns, 5 rounds")
    parser.add_argument("--against", metavar="DIR", help="A/B against the statevcs under DIR")
    args = parser.parse_args()
    turns, rounds = (50, 5) if args.quick else (args.turns, args.rounds)
    trees: dict[str, dict[str, Any]] = {}
    if args.against is not None:
        trees["old"] = _load_tree(args.against)
        if not str(trees["old"]["statevcs"].__file__).startswith(str(Path(args.against).resolve())):
            parser.error(f"--against {args.against}: no statevcs package there")
    trees["new"] = _load_tree(None)
    folder = Path(tempfile.mkdtemp(prefix="statevcs-checkout-parts-"))
    try:
        path, state, count = build(folder, turns)
        for modules in trees.values():
            instrument(modules)
        targets: dict[str, dict[str, Any]] = {name: {} for name in trees}
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        json_runs: list[float] = []
        for number in range(rounds + 1):  # the first round warms up
            order = list(trees) if number % 2 else list(reversed(trees))
            for name in order:
                parts = checkout_parts(trees[name], path, targets[name])
                if number:
                    runs[name].append(parts)
            if number:
                json_runs.append(json_read(state))
            assert all(len(t["messages"]) == count for t in targets.values())
        install(trees["new"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    best = {name: minima(found) for name, found in runs.items()}
    json_best = min(json_runs)
    print(f"## Fresh-handle checkout of a dict agent, {count:,} messages ({turns:,} turns), SQLite")
    print(f"CPU ms, minimum of {rounds} rounds; JSON read + parse of the same state: ", end="")
    print(f"{json_best * 1000:.3f} ms\n")
    columns = list(best)
    print(
        "| stage | "
        + " | ".join(f"{name} ms" for name in columns)
        + " |"
        + (" new / old |" if len(columns) == 2 else "")
    )
    print("|---" * (len(columns) + 1 + (len(columns) == 2)) + "|")

    def total(parts: dict[str, float]) -> float:
        return parts["open"] + parts["checkout"] + parts["close"]

    rows: list[tuple[str, Callable[[dict[str, float]], float]]] = [
        (stage, lambda parts, stage=stage: parts[stage]) for stage in STAGES
    ]
    rows.append(("open + checkout + close", total))
    rows.append(("checkout / JSON", lambda parts: parts["checkout"] / json_best))
    rows.append(("open + checkout + close / JSON", lambda parts: total(parts) / json_best))
    for label, value in rows:
        ratio = label.endswith("JSON")
        cells = [
            f"{value(best[name]):.2f}x" if ratio else f"{value(best[name]) * 1000:.3f}"
            for name in columns
        ]
        line = f"| {label} | " + " | ".join(cells) + " |"
        if len(columns) == 2:
            line += f" {value(best['new']) / value(best['old']):.2f} |"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
