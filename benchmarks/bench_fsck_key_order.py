"""What ``fsck`` pays on S3 for snapshots that record a key order (snapshot version 3).

Run: ``python benchmarks/bench_fsck_key_order.py`` (starts ``weed mini`` on free ports).

fsck checks that each recorded order covers its map, reading the map of every ordered snapshot.
For a history of commits whose state map is stored (not inline), with keys committed sorted
(version 2) or not (version 3), prints the requests and round trips (overlapping requests count
as one) and wall time of ``fsck`` from a fresh handle with no local cache (``cache=none``).
"""

from __future__ import annotations

import os
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

COMMITS = [50, 200]


def _case(server: Any, commits: int, ordered: bool) -> list[Any]:
    url = server.url(f"bench/{uuid.uuid4().hex}")
    names = [f"key{i:02d}" for i in range(12)]
    if ordered:
        names.reverse()
    with statevcs.Repo.init(url) as repo:
        for n in range(commits):
            repo.commit(
                {"messages": [], **{k: f"{k} value {n}" * 4 for k in names}}, message=f"{n}"
            )
    with statevcs.Repo.open(f"{url}&cache=none") as cold, REQUESTS.counting() as counted:
        start = time.perf_counter()
        report = cold.fsck()
        elapsed = time.perf_counter() - start
    assert report.ok, report.problems
    order = "unsorted (v3)" if ordered else "sorted (v2)"
    return [commits, order, counted["requests"], counted["round_trips"], ms(elapsed)]


def main() -> None:
    REQUESTS.install()
    os.environ.update(credentials())
    os.environ["STATEVCS_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-fsck-order-")
    with SeaweedFS() as server:
        rows = [_case(server, n, ordered) for n in COMMITS for ordered in (False, True)]
    table(
        "fsck on S3, cold handle: snapshots with stored state maps",
        ["commits", "state keys", "requests", "round trips", "wall time"],
        rows,
    )


if __name__ == "__main__":
    main()
