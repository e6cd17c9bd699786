"""Writer processes through a proxy that injects random faults into S3 requests.

Several processes (spawn start method) append to one branch through tests/faultproxy.py at 10%
and 30% faults (every kind: 503 SlowDown, 500 before and after the write, resets before and
after, delays, stalls, 409 on conditional writes), with the documented retry. Afterwards,
read straight from the server with no cache: ``fsck`` is clean, every acknowledged commit
restores with exactly its messages, every writer's every acknowledged message is at the tip
exactly once, no call outlasted its bound, and only ``StateVCSError`` subclasses reached the
writers. ``STATEVCS_RELIABILITY_FAULT_COMMITS`` and ``..._FAULT_WRITERS`` scale it up; run
with ``-s`` to see the figures (docs/reliability.md has a long run's).
"""

from __future__ import annotations

import json
import multiprocessing
import time
import urllib.parse
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from faultproxy import FaultProxy
from seaweedfs import BUCKET, REGION, SeaweedFS

from statevcs import Repo
from statevcs.stores.s3_retry import RetryPolicy

from . import fault_workers
from .harness import count

COMMITS = count("FAULT_COMMITS", 3)
"""Commits per writer at 10% faults (two thirds of that at 30%, at least 2)."""
WRITERS = count("FAULT_WRITERS", 3)
TIMEOUT_MS = count("FAULT_TIMEOUT_MS", 700)
"""Each stalled request costs one timeout: short in CI, so the run stays short (the default,
used when this is 0, is for real networks)."""


def run_writers(
    server: SeaweedFS, tmp_path: Path, rate: float, seed: str, commits: int
) -> tuple[dict[str, Any], Counter[str], str]:
    """Run the writers through a proxy at ``rate``; return their merged results, the faults
    injected by kind, and the repository's direct URL."""
    prefix = f"t/{uuid.uuid4().hex}"
    direct = server.url(prefix) + "&cache=none"
    with Repo.init(direct) as repo:  # the writers check out and extend this branch
        repo.commit({"messages": [{"role": "user", "content": "start"}]}, message="start")
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    with FaultProxy(server.endpoint) as proxy:
        proxy.randomly(rate, seed=seed, delay=0.1)
        processes = []
        for n in range(WRITERS):
            query = {
                "endpoint_url": proxy.endpoint,
                "region": REGION,
                "cache": str(tmp_path / f"cache{n}"),
            }
            if TIMEOUT_MS:
                query["timeout_ms"] = str(TIMEOUT_MS)
            url = f"s3://{BUCKET}/{prefix}?" + urllib.parse.urlencode(query)
            result = tmp_path / f"result{n}.json"
            process = context.Process(
                target=fault_workers.write,
                args=(url, "main", f"w{n}", commits, str(result), start),
            )
            process.start()
            processes.append((process, result))
        start.set()
        # A writer that hangs is a failure: every call is bounded by the request timeouts.
        deadline = time.monotonic() + 60 + commits * WRITERS * 10
        hung = 0
        for process, _ in processes:
            process.join(max(deadline - time.monotonic(), 1))
            if process.is_alive():
                hung += 1
                process.kill()
                process.join()
        faults = proxy.faults
    merged: dict[str, Any] = {
        "acked": [],
        "errors": Counter(),
        "raw": [],
        "longest": 0.0,
        "commit_calls": 0,
        "commit_failures": 0,
        "conflicts": 0,
        "hung": hung,
    }
    for n, (_, result) in enumerate(processes):
        if not result.exists():
            merged["raw"].append(f"writer {n} left no result")
            continue
        found = json.loads(result.read_text())
        for entry in found["acked"]:
            merged["acked"].append({**entry, "writer": f"w{n}"})
        merged["errors"].update(found["errors"])
        merged["raw"].extend(found["raw"])
        merged["longest"] = max(merged["longest"], found["longest"])
        for key in ("commit_calls", "commit_failures", "conflicts"):
            merged[key] += found[key]
    return merged, faults, direct


@pytest.mark.parametrize("rate", [0.1, 0.3])
def test_writers_through_random_faults_lose_nothing_and_duplicate_nothing(
    seaweedfs: SeaweedFS, tmp_path: Path, rate: float
) -> None:
    started = time.monotonic()
    commits = COMMITS if rate < 0.2 else max(2, COMMITS * 2 // 3)
    results, faults, direct = run_writers(seaweedfs, tmp_path, rate, f"faults-{rate}", commits)
    assert results["raw"] == [], results["raw"]  # only StateVCSError subclasses
    assert results["hung"] == 0
    # No single call outlasted what its requests' timeouts and retries allow.
    policy = RetryPolicy(timeout_ms=TIMEOUT_MS) if TIMEOUT_MS else RetryPolicy()
    assert results["longest"] < 4 * policy.request_bound, results["longest"]
    with Repo.open(direct) as repo:
        report = repo.fsck()
        assert report.problems == (), report.problems
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        tip = [m["content"] for m in state["messages"]]
        for entry in results["acked"]:
            restored: dict[str, Any] = {}
            repo.checkout(restored, entry["id"])
            texts = [m["content"] for m in restored["messages"]]
            assert fault_workers.messages_digest(texts) == entry["digest"], entry
    expected = {f"w{n} {i}" for n in range(WRITERS) for i in range(commits)}
    duplicated = sorted(t for t, k in Counter(tip).items() if k > 1)
    lost = sorted(expected - set(tip))
    assert len(results["acked"]) == WRITERS * commits
    assert duplicated == [] and lost == []
    assert tip[0] == "start" and set(tip[1:]) == expected
    for n in range(WRITERS):  # each writer's messages in its own order
        mine = [t for t in tip if t.startswith(f"w{n} ")]
        assert mine == [f"w{n} {i}" for i in range(commits)]
    calls, failures = results["commit_calls"], results["commit_failures"]
    print(
        f"\nfaults {rate:.0%}: {WRITERS} writers x {commits} commits in "
        f"{time.monotonic() - started:.1f} s; commit calls {calls}, acknowledged "
        f"{len(results['acked'])}, failed {failures} ({failures / max(calls, 1):.1%}), "
        f"conflicts retried {results['conflicts']}; faults {dict(sorted(faults.items()))} "
        f"(total {sum(faults.values())}); errors {dict(sorted(results['errors'].items()))}; "
        f"lost {len(lost)}, duplicated {len(duplicated)}, hangs {results['hung']}; longest call "
        f"{results['longest']:.2f} s"
    )
