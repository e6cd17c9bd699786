"""Command-line start-up benchmark: what a newcomer waits for before each command answers.

Run: ``python benchmarks/bench_cli.py`` (``--quick`` for a short smoke run).

Builds a small repository (10 commits) and a large one (1,000 commits, 2 messages each) in a
temporary folder, then times real ``python -m statevcs`` processes (the median of ``--runs``,
after a warm-up run that leaves the bytecode cache an installed package has) against
``python -c pass``, in wall time and in CPU time (user + system: what a loaded machine distorts
least): ``--version``, ``log -n 10``, ``show``, ``reflog``, ``status`` and ``branch``. Their
output is captured (a pipe), so the hot read commands take the fast path that loads neither
click nor rich (``statevcs/cli/fastpath.py``). ``target`` is the issue's goal for a command:
twice ``python -c pass`` plus the work itself (``cpu/target`` at or below 1.00x meets it).
"work" is the CPU time of the same command run in-process once the modules are loaded (click's
test runner, median of the same count), so ``cpu - work`` is what start-up costs. Then ``gc``
after ``reset main~N`` with the reflog expired: its time, how much the file shrank, and what a
``VACUUM`` of the result costs alone (the part of ``gc`` that gives the space back).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import statevcs
from statevcs.stores.sqlite import DB_FILENAME


def build(path: Path, commits: int) -> None:
    """A repository of ``commits`` commits, each appending a user and an assistant message."""
    with statevcs.Repo.init(path) as repo:
        agent: dict[str, Any] = {"messages": statevcs.tracked_messages([]), "turn": 0}
        for n in range(commits):
            agent["messages"].append({"role": "user", "content": f"question {n} " + "q" * 200})
            agent["messages"].append({"role": "assistant", "content": f"answer {n} " + "a" * 600})
            agent["turn"] = n
            repo.commit(agent, f"turn {n}")
        repo.branch("side", "main~1" if commits > 1 else "main")


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def timed(func: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system of the child processes ``func``
    runs) of ``runs`` calls, after one warm-up call."""
    func()
    walls, cpus = [], []
    for _ in range(runs):
        cpu, start = _children_cpu_ms(), time.perf_counter()
        func()
        walls.append((time.perf_counter() - start) * 1000)
        cpus.append(_children_cpu_ms() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def work_ms(func: Callable[[], object], runs: int) -> float:
    """The median CPU time of this process over ``runs`` in-process calls, after a warm-up."""
    func()
    times = []
    for _ in range(runs):
        start = time.process_time()
        func()
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times)


def process(args: list[str], cwd: Path) -> Callable[[], object]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("STATEVCS_")}
    environment["NO_COLOR"] = "1"
    # As installed: modules load from their cached bytecode (the warm-up run writes it).
    environment.pop("PYTHONDONTWRITEBYTECODE", None)

    def run() -> object:
        return subprocess.run(
            [sys.executable, *args], cwd=cwd, env=environment, capture_output=True, check=True
        )

    return run


def in_process(args: list[str], cwd: Path) -> Callable[[], object]:
    from click.testing import CliRunner

    from statevcs.cli import cli

    def run() -> object:
        previous = os.getcwd()
        os.chdir(cwd)
        try:
            result = CliRunner().invoke(cli, args, env={"NO_COLOR": "1"})
        finally:
            os.chdir(previous)
        if result.exit_code != 0:
            raise RuntimeError(f"statevcs {args} failed: {result.output}")
        return result

    return run


def size_on_disk(path: Path) -> int:
    files = [path / DB_FILENAME, path / (DB_FILENAME + "-wal")]
    return sum(f.stat().st_size for f in files if f.exists())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="short run for smoke testing")
    parser.add_argument("--runs", type=int, default=None, help="runs per row (default 9)")
    parser.add_argument("--commits", type=int, default=1000, help="commits of the large repo")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 9)
    large_commits = min(args.commits, 50) if args.quick else args.commits
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp) / "small", Path(tmp) / "large"
        build(small, 10)
        build(large, large_commits)
        print(f"== start-up: median of {runs} runs (ms); cpu = user + system time ==")
        base = process(["-c", "pass"], small)
        baseline, baseline_cpu = timed(base, runs)
        print(f"{'':<34}{'wall':>9}{'cpu':>9}")
        print(f"{'python -c pass':<34}{baseline:>9.1f}{baseline_cpu:>9.1f}")
        for label, module in (
            ("import click", "click"),
            ("import rich.console", "rich.console"),
            ("import pydantic", "pydantic"),
            ("import statevcs.repo", "statevcs.repo"),
            ("import statevcs.repo, .model", "statevcs.repo, statevcs.model"),
        ):
            importing = process(["-c", f"import {module}"], small)
            wall, cpu = timed(importing, runs)
            print(f"{label:<34}{wall:>9.1f}{cpu:>9.1f}")
        rows = [
            ("--version", ["--version"], small),
            ("log -n 10 (10 commits)", ["log", "-n", "10"], small),
            (f"log -n 10 ({large_commits:,} commits)", ["log", "-n", "10"], large),
            (f"log --oneline ({large_commits:,})", ["log", "--oneline"], large),
            (f"show ({large_commits:,} commits)", ["show"], large),
            (f"reflog ({large_commits:,} commits)", ["reflog"], large),
            (f"status ({large_commits:,} commits)", ["status"], large),
            (f"branch ({large_commits:,} commits)", ["branch"], large),
        ]
        print(
            f"{'command':<34}{'wall':>9}{'cpu':>9}{'work':>9}{'cpu-work':>10}{'cpu/python':>12}"
            f"{'target':>9}{'cpu/target':>12}"
        )
        for label, command, where in rows:
            running = process(["-m", "statevcs", *command], where)
            wall, cpu = timed(running, runs)
            work = work_ms(in_process(command, where), runs)
            # The target: within 2x of `python -c pass`, plus the work itself.
            target = 2 * baseline_cpu + work
            print(
                f"{label:<34}{wall:>9.1f}{cpu:>9.1f}{work:>9.1f}{cpu - work:>10.1f}"
                f"{cpu / baseline_cpu:>11.1f}x{target:>9.1f}{cpu / target:>11.2f}x"
            )
        print()
        back = large_commits // 2
        print(f"== gc after reset main~{back}, reflog expired ({large_commits:,} commits) ==")
        with statevcs.Repo.open(large) as repo:
            repo.reset("main", f"main~{back}")
            repo.delete_branch("side")
            before = size_on_disk(large)
            start = time.perf_counter()
            report = repo.gc("0", expire_reflog="0")
            gc_ms = (time.perf_counter() - start) * 1000
        after = size_on_disk(large)
        import sqlite3

        db = sqlite3.connect(large / DB_FILENAME, isolation_level=None)
        start = time.perf_counter()
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        vacuum_ms = (time.perf_counter() - start) * 1000
        db.close()
        print(f"objects deleted                 {report.deleted:,}")
        print(f"file before / after (bytes)     {before:,} / {after:,}")
        print(f"reclaimed_bytes                 {report.reclaimed_bytes:,}")
        print(f"gc, VACUUM included (ms)        {gc_ms:.1f}")
        print(f"a VACUUM of the result (ms)     {vacuum_ms:.1f}")


if __name__ == "__main__":
    main()
