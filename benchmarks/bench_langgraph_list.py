"""Listing a LangGraph thread's newest checkpoints: ``list(limit=...)`` and paging with ``before``.

``get_state_history(limit=k)`` and its next pages (``before=`` the last one seen) call the
saver's ``list``. One thread of small checkpoints is written through ``StateVCSSaver`` (a
SQLite repository) and ``SqliteSaver`` (a SQLite file); then each answers ``list(limit=1)``
and a page of 10 from the middle of the thread, on a long-lived handle and on a fresh one.
One command, one table::

    python benchmarks/bench_langgraph_list.py                   # 250 and 4,000 checkpoints
    python benchmarks/bench_langgraph_list.py --sizes 100 1000
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver

THREAD = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
PAGE = 10


def _ms(call: Callable[[], Any], repeat: int = 1) -> float:
    """The median time of ``call`` in milliseconds."""
    times = []
    gc.collect()
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _fill(saver: Any, count: int) -> list[str]:
    """Put ``count`` checkpoints in a line, as a graph's steps do; return their ids."""
    config: Any = THREAD
    ids = []
    for step in range(count):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"step": step, "note": f"step {step} of the benchmark"}
        checkpoint["channel_versions"] = {"step": step + 1, "note": step + 1}
        config = saver.put(
            config, checkpoint, {"source": "loop", "step": step}, {"step": step + 1, "note": 1}
        )
        ids.append(checkpoint["id"])
    return ids


def _before(checkpoint_id: str) -> dict[str, Any]:
    return {"configurable": {"checkpoint_id": checkpoint_id}}


def _row(count: int, scratch: Path, repeat: int) -> list[float]:
    path = scratch / f"repo-{count}"
    with statevcs.Repo.init(path) as repo:
        ids = _fill(StateVCSSaver(repo), count)
    with sqlite3.connect(scratch / f"sqlite-{count}.db", check_same_thread=False) as conn:
        sqlite = SqliteSaver(conn)
        _fill(sqlite, count)
        middle = _before(ids[count // 2])
        sqlite_first = _ms(lambda: list(sqlite.list(THREAD, limit=1)), repeat)
        sqlite_page = _ms(lambda: list(sqlite.list(THREAD, before=middle, limit=PAGE)), repeat)

    def fresh(call: Callable[[StateVCSSaver], Any]) -> float:
        times = []
        for _ in range(max(3, repeat // 3)):
            with statevcs.Repo.open(path) as repo:
                saver = StateVCSSaver(repo)
                gc.collect()  # the filling's garbage is not the call's cost
                start = time.perf_counter()
                call(saver)
                times.append((time.perf_counter() - start) * 1000)
        return statistics.median(times)

    with statevcs.Repo.open(path) as repo:
        saver = StateVCSSaver(repo)
        list(saver.list(THREAD, limit=1))  # warm up: imports, the first reads
        first = _ms(lambda: list(saver.list(THREAD, limit=1)), repeat)
        list(saver.list(THREAD, before=middle, limit=PAGE))  # the first deep page
        page = _ms(lambda: list(saver.list(THREAD, before=middle, limit=PAGE)), repeat)
    fresh_first = fresh(lambda s: list(s.list(THREAD, limit=1)))
    fresh_page = fresh(lambda s: list(s.list(THREAD, before=middle, limit=PAGE)))
    return [first, fresh_first, sqlite_first, page, fresh_page, sqlite_page]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[250, 4000], help="checkpoints in the thread"
    )
    parser.add_argument("--repeat", type=int, default=50, help="timed calls per cell (median)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        rows = [(size, _row(size, Path(scratch), args.repeat)) for size in args.sizes]
    columns = [
        "list(limit=1)",
        "fresh handle",
        "SqliteSaver",
        f"page of {PAGE} mid-thread",
        "fresh handle",
        "SqliteSaver",
    ]
    print("# Newest checkpoints of one thread: StateVCSSaver (SQLite repository) vs SqliteSaver")
    sizes = " ".join(str(size) for size in args.sizes)
    print(f"command: python benchmarks/bench_langgraph_list.py --sizes {sizes}")
    print("(ms, median; a page is list(before=<a mid-thread checkpoint>, limit=10))")
    print()
    print("| checkpoints | " + " | ".join(columns) + " |")
    print("|------------:|" + "|".join("-" * (len(c) + 1) + ":" for c in columns) + "|")
    for size, cells in rows:
        print(
            f"| {size:>11,} | "
            + " | ".join(f"{cell:>{len(c)}.2f}" for cell, c in zip(cells, columns, strict=True))
            + " |"
        )


if __name__ == "__main__":
    main()
