"""S3 cost of ``fastcdc-2020-small-values`` against ``fastcdc-2020`` for one large state value.

Run: ``python benchmarks/bench_small_values_s3.py`` (starts ``weed mini`` on free ports).

For a state value of each size, in a new repository of each chunker on a local SeaweedFS
server, prints the requests and round trips (overlapping requests count as one) and wall time
of: the first commit of the value, a commit after a one-line edit, and a checkout from a fresh
handle with no local cache (``cache=none``). Small chunks mean more objects: more PUTs for the
first commit, fewer bytes per edit, and more GETs for a cold read.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bench_s3 import REQUESTS, ms, table
from seaweedfs import SeaweedFS, credentials

import statevcs
from statevcs.structures.chunking import CHUNKER_KEY

SIZES = [20_000, 100_000, 1_000_000]
CHUNKERS = ["fastcdc-2020-small-values", "fastcdc-2020"]


def _lines(size: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    lines, total = [], 0
    while total < size:
        line = f"{len(lines)}: " + "".join(rng.choice("abcdefgh ") for _ in range(70))
        lines.append(line)
        total += len(line) + 4
    return lines


def _measure(call: Any) -> tuple[float, float, float]:
    with REQUESTS.counting() as counted:
        start = time.perf_counter()
        call()
        elapsed = time.perf_counter() - start
    return counted["requests"], counted["round_trips"], elapsed


def _case(server: SeaweedFS, size: int, chunker: str) -> list[Any]:
    """One row: the first commit, a one-line edit and a cold checkout of a ``size`` value."""
    url = server.url(f"bench/{uuid.uuid4().hex}")
    with statevcs.Repo.init(url) as new:
        new.store.config_set(CHUNKER_KEY, chunker)
    repo = statevcs.Repo.open(url)
    assert repo.objects.chunker.name == chunker
    state: dict[str, Any] = {"messages": [], "todo": _lines(size, 1)}
    first = _measure(lambda: repo.commit(state, message="first"))
    state["todo"][len(state["todo"]) // 2] = "edited line"
    edit = _measure(lambda: repo.commit(state, message="edit"))
    repo.close()
    restored: dict[str, Any] = {}

    def cold() -> None:
        with statevcs.Repo.open(f"{url}&cache=none") as fresh:
            fresh.checkout(restored, "main")

    read = _measure(cold)
    assert restored["todo"] == state["todo"]
    cells = [f"{r:.0f} / {t:.0f} / {ms(s)}" for r, t, s in (first, edit, read)]
    return [f"{size // 1000} KB", chunker, *cells]


def main() -> None:
    REQUESTS.install()
    os.environ.update(credentials())
    os.environ["STATEVCS_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-small-values-")
    with SeaweedFS() as server:
        with statevcs.Repo.init(server.url(f"bench/{uuid.uuid4().hex}")) as warm:
            warm.commit({"messages": [], "todo": _lines(50_000, 2)}, message="warm-up")
        rows = [_case(server, size, chunker) for size in SIZES for chunker in CHUNKERS]
    table(
        "One large state value on S3 (requests / round trips / wall time)",
        ["value", "chunker", "first commit", "one-line edit", "cold checkout"],
        rows,
    )


if __name__ == "__main__":
    main()
