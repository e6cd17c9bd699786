"""Experiments at scale on SQLite: ``compare`` of two 200-turn runs, ``search`` over a long history.

* compare: run ``a`` has 200 turns; run ``b`` forks it at turn 100 and answers 100 more turns
  differently (a tool call every tenth turn); ``compare(repo, "a", "b")``.
* search: one conversation grown to 2,000 messages over 1,000 commits (a turn per commit);
  ``repo.search`` for plain text and a regex over the whole history.

Each figure is the median of ``--repeat`` runs on a fresh handle (nothing cached: the
"cold" column) and on the handle that already answered once ("warm"). One command, one table::

    python benchmarks/bench_experiments.py                 # about a minute: building is most
    python benchmarks/bench_experiments.py --turns 100 --commits 50
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import statevcs
from statevcs.experiments import compare

FILLER = "Alfama, Belem and the tram 28; pasteis de nata at every corner. "


def user(turn: int, tag: str = "") -> dict[str, Any]:
    text = f"{tag}Question {turn}: what should we see next in Lisbon, day {turn % 7}?"
    return {"role": "user", "content": [{"text": text}]}


def answer(turn: int, tag: str, tool: bool = False) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"text": f"[{tag}] Answer {turn}: " + FILLER * 3}]
    if tool:
        blocks.append({"toolUse": {"toolUseId": f"t{turn}", "name": "weather", "input": {}}})
    return {"role": "assistant", "content": blocks}


def grow(repo: statevcs.Repo, run: dict[str, Any], turns: range, tag: str, branch: str) -> None:
    for turn in turns:
        run["messages"] += [user(turn), answer(turn, tag, tool=tag == "b" and turn % 10 == 0)]
        run["turn"] = turn
        repo.commit(run, f"turn {turn}", branch=branch)


def median_ms(path: Path, repeat: int, call: Callable[[statevcs.Repo], Any]) -> tuple[float, float]:
    """(cold, warm) median milliseconds of ``call`` on fresh handles and on a used one."""
    cold, warm = [], []
    for _ in range(repeat):
        with statevcs.Repo.open(path) as repo:
            start = time.perf_counter()
            call(repo)
            cold.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            call(repo)
            warm.append((time.perf_counter() - start) * 1000)
    return statistics.median(cold), statistics.median(warm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns in each compared run")
    parser.add_argument("--commits", type=int, default=1000, help="commits in the searched run")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median)")
    args = parser.parse_args()
    rows: list[tuple[str, str, float, float, str]] = []
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "compare"
        half = args.turns // 2
        with statevcs.Repo.init(path) as repo:
            grow(repo, {"messages": []}, range(1, args.turns + 1), "a", "a")
            fork: dict[str, Any] = {}
            repo.branch("b", f"a~{args.turns - half}")
            repo.checkout(fork, "b")
            grow(repo, fork, range(half + 1, args.turns + 1), "b", "b")
            found = compare(repo, "a", "b")
            shape = f"{len(found.turns)} turns, {len(found.diverged)} diverged"
        cold, warm = median_ms(path, args.repeat, lambda r: compare(r, "a", "b"))
        rows.append(("compare", f"two {args.turns}-turn runs, fork at {half}", cold, warm, shape))

        path = Path(scratch) / "search"
        with statevcs.Repo.init(path) as repo:
            grow(repo, {"messages": []}, range(1, args.commits + 1), "a", "main")
            length = len(repo.show("main").messages)
        where = f"{args.commits:,} commits x {length:,} messages"
        for label, pattern, regex in (
            ("search text", "Question 999:", False),
            ("search regex", r"Question 9\d\d: .* day [06]", True),
            ("search text, no match", "Porto", False),
        ):
            hits = 0

            def run(repo: statevcs.Repo, pattern: str = pattern, regex: bool = regex) -> None:
                nonlocal hits
                hits = len(repo.search(pattern, rev="main", regex=regex).messages)

            cold, warm = median_ms(path, args.repeat, run)
            rows.append((label, where, cold, warm, f"{hits} matching messages"))
    print("| operation | workload | cold (ms) | warm (ms) | result |")
    print("| --- | --- | ---: | ---: | --- |")
    for operation, workload, cold, warm, result in rows:
        print(f"| {operation} | {workload} | {cold:,.0f} | {warm:,.0f} | {result} |")


if __name__ == "__main__":
    main()
