"""History browser benchmark: server time and bytes of each page of ``statevcs serve``.

Run: ``python benchmarks/bench_serve.py`` (``--quick`` for a short smoke run).

It builds a SQLite repository of 1,000 commits on 10 branches (main: 100 commits of 20
messages; nine branches forked from main at commits 5, 10, ... 45, 100 commits each), so every
tip holds a conversation of 2,000 to 2,900 messages of ~200 bytes. Then, through the app itself
(Starlette's in-process client, so the times are the server's, without a network), it times
each request the front end makes: cold (a freshly opened repository and app, the first request)
and warm (median of the next runs), and counts the bytes each page transfers (the HTML, script
and style, plus its JSON answers). The issue's targets: the graph's first paint and a commit page
under 300 ms of server time each, no page over 2 MB. The machine may be shared: the process's
CPU time beside the wall time is the steadier figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

import statevcs
from statevcs.cli.web.api import HistoryBrowser
from statevcs.cli.web.app import build_app
from statevcs.serializers import MsgpackSerializer

STATIC = ("/", "/static/app.js", "/static/app.css")


def _message(branch: int, n: int) -> dict[str, Any]:
    role = "user" if n % 2 == 0 else "assistant"
    text = f"branch {branch} message {n}: " + "lorem ipsum dolor sit amet " * 6
    return {"role": role, "content": [{"text": text}]}


def build(path: Path, *, branches: int, commits: int, per_commit: int) -> None:
    """``branches`` branches of ``commits`` commits, ``per_commit`` messages added by each."""
    with statevcs.Repo.init(path) as repo:
        state: dict[str, Any] = {"messages": [], "step": 0}
        for n in range(commits):
            state["messages"].extend(_message(0, n * per_commit + i) for i in range(per_commit))
            state["step"] = n
            repo.commit(state, f"main step {n}")
        for b in range(1, branches):
            fork = 5 * b
            repo.branch(f"exp-{b}", f"main~{commits - fork}")
            forked: dict[str, Any] = {"messages": [], "step": 0}
            repo.checkout(forked, f"exp-{b}")
            for n in range(commits):
                forked["messages"].extend(
                    _message(b, n * per_commit + i) for i in range(per_commit)
                )
                forked["step"] = n
                repo.commit(forked, f"exp-{b} step {n}")


def timed(client: TestClient, url: str) -> tuple[float, int]:
    """Milliseconds and bytes of one GET (which must succeed)."""
    start = time.perf_counter()
    response = client.get(url)
    elapsed = (time.perf_counter() - start) * 1000
    if response.status_code != 200:
        raise SystemExit(f"{url}: HTTP {response.status_code}: {response.text[:200]}")
    return elapsed, len(response.content)


def fresh(path: Path) -> tuple[TestClient, Callable[[], None]]:
    repo = statevcs.Repo.open(path, serializer=MsgpackSerializer())
    client = TestClient(build_app(HistoryBrowser(repo)), base_url="http://127.0.0.1:8000")
    return client, repo.close


def page(path: Path, runs: int, answer: str) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of a page's requests (HTML, script, style, info, ``answer``)
    on a freshly opened repository and app, ``runs`` times."""
    walls, cpus = [], []
    for _ in range(runs):
        client, close = fresh(path)
        wall, cpu = time.perf_counter(), time.process_time()
        for url in (*STATIC, "/api/info", answer):
            timed(client, url)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        close()
    return walls, cpus


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small repository (smoke run)")
    parser.add_argument("--runs", type=int, default=7, help="warm runs per request (median)")
    args = parser.parse_args(argv)
    branches, commits, per_commit = (3, 12, 4) if args.quick else (10, 100, 20)

    with tempfile.TemporaryDirectory(prefix="bench-serve-") as folder:
        path = Path(folder) / "repo"
        start = time.perf_counter()
        build(path, branches=branches, commits=commits, per_commit=per_commit)
        built = time.perf_counter() - start
        with statevcs.Repo.open(path) as repo:
            total = sum(1 for _ in repo.log_all())
            tip_messages = len(repo.show(f"exp-{branches - 1}").messages)
        print(
            f"repository: {total:,} commits on {branches} branches, "
            f"{tip_messages:,} messages at the longest tip (built in {built:.1f} s)"
        )
        far = f"exp-{branches - 1}"
        requests = [
            ("graph, first page", "/api/graph?offset=0&limit=100"),
            ("graph, 5th page", "/api/graph?offset=400&limit=100"),
            ("refs (live poll)", "/api/refs"),
            ("commit, first 50 messages", f"/api/commit?rev={far}&offset=0&limit=50"),
            (
                "commit, last 50 messages",
                f"/api/commit?rev={far}&offset={tip_messages - 50}&limit=50",
            ),
            ("diff of two branch tips", "/api/diff?a=exp-1&b=main&limit=100"),
            ("search, every branch", "/api/search?q=message%2042%3A"),
            ("compare two branches", "/api/compare?a=exp-1&b=main&limit=50"),
        ]
        rows = []
        for name, url in requests:
            client, close = fresh(path)
            timed(client, "/api/info")
            cold, size = timed(client, url)
            warm = statistics.median(timed(client, url)[0] for _ in range(args.runs))
            close()
            rows.append((name, cold, warm, size))

        client, close = fresh(path)
        static = sum(timed(client, url)[1] for url in (*STATIC, "/api/info"))
        first_paint = page(path, args.runs, "/api/graph?offset=0&limit=100")
        commit_page = page(path, args.runs, f"/api/commit?rev={far}&limit=50")
        close()

    print()
    print(f"{'request':<28} {'cold ms':>9} {'warm ms':>9} {'bytes':>11}")
    for name, cold, warm, size in rows:
        print(f"{name:<28} {cold:>9.1f} {warm:>9.1f} {size:>11,}")
    print()
    graph_bytes = static + rows[0][3]
    commit_bytes = static + rows[3][3]
    print(f"{'page (fresh server)':<28} {'median ms':>9} {'max ms':>9} {'CPU ms':>9} {'bytes':>11}")
    for name, (walls, cpus), size in (
        ("graph: first paint", first_paint, graph_bytes),
        ("commit page", commit_page, commit_bytes),
    ):
        print(
            f"{name:<28} {statistics.median(walls):>9.1f} {max(walls):>9.1f} "
            f"{statistics.median(cpus):>9.1f} {size:>11,}"
        )
    print(f"(static: {static:,} bytes of HTML, script, style and /api/info)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
