"""Git mirror benchmark: export and import time and mirror size against history length.

Run: ``python benchmarks/bench_mirror.py`` (``--quick`` for a short smoke run, ``--sizes`` to
choose the lengths).

It commits one message at a time (user ~200 chars, assistant ~600 chars, a small state) to a
SQLite repository, marks the history at each length with a branch, then for each length exports
that branch into a new git mirror (``export_git``), imports the mirror into a new SQLite
repository (``import_git``), and measures the mirror's bytes on disk as written, after
``git gc`` and after ``git gc --aggressive`` (when the ``git`` CLI is installed) against the
statevcs repository's bytes. Time per commit staying flat as the history grows is what
"linear" means here. Times are wall clock, with the process's CPU time in brackets (on a busy
machine the CPU time is the steadier figure).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by path
import prose

import statevcs
from statevcs.mirror.git import export_git, import_git

rng = random.Random(42)
WORDS = prose.vocabulary(rng)


def text(chars: int) -> str:
    """Return pseudo-English text of about ``chars`` characters."""
    return prose.text(rng, WORDS, chars)


def folder_bytes(path: Path) -> int:
    """Bytes of every file under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def build(path: Path, sizes: list[int]) -> None:
    """Commit ``max(sizes)`` turns, one message each; branch ``n<size>`` marks each length."""
    with statevcs.Repo.init(path) as repo:
        agent: dict[str, Any] = {"messages": [], "step": 0, "notes": text(100)}
        for n in range(1, max(sizes) + 1):
            user = n % 2 == 1
            agent["messages"].append(
                {
                    "role": "user" if user else "assistant",
                    "content": [{"text": text(200 if user else 600)}],
                }
            )
            agent["step"] = n
            repo.commit(agent, f"turn {n}", author="bench <bench@example.com>")
            if n in sizes:
                repo.branch(f"n{n}")


def git_gc(mirror: Path, *options: str) -> int | None:
    """Bytes of ``mirror`` after ``git gc`` (``None`` without the git CLI)."""
    if shutil.which("git") is None:
        return None
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(mirror)}
    subprocess.run(["git", "-C", str(mirror), "gc", "-q", *options], check=True, env=env)
    return folder_bytes(mirror)


def mib(size: int | None) -> str:
    return "—" if size is None else f"{size / 2**20:.2f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--sizes", type=int, nargs="+", help="history lengths to measure")
    args = parser.parse_args()
    sizes = sorted(set(args.sizes or ([20, 40] if args.quick else [250, 500, 1000, 2000])))

    import dulwich.object_store
    import dulwich.repo

    del dulwich  # imported here so the first row does not pay for loading them
    print("# Git mirror benchmark")
    print(f"python {sys.version.split()[0]}, statevcs {statevcs.__version__}")
    print()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        build(work / "repo", sizes)
        print(f"built {max(sizes):,} commits in {time.perf_counter() - started:.1f} s")
        print()
        print(
            "| commits | export (CPU) | per commit | import (CPU) | per commit | mirror "
            "| after git gc | after git gc --aggressive | statevcs repository |"
        )
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        with statevcs.Repo.open(work / "repo") as repo:
            for size in sizes:
                mirror = work / f"mirror-{size}.git"
                started, cpu = time.perf_counter(), time.process_time()
                report = export_git(repo, mirror, branch=f"n{size}")
                export_s = time.perf_counter() - started
                export_cpu = time.process_time() - cpu
                assert report.commits_exported == size, report
                before = folder_bytes(mirror)
                copy = work / f"copy-{size}"
                started, cpu = time.perf_counter(), time.process_time()
                with statevcs.Repo.init(copy) as target:
                    back = import_git(target, mirror)
                import_s = time.perf_counter() - started
                import_cpu = time.process_time() - cpu
                assert back.commits_imported == size, back
                after = git_gc(mirror)
                aggressive = git_gc(mirror, "--aggressive")
                print(
                    f"| {size:,} | {export_s:.2f} s ({export_cpu:.2f} s) "
                    f"| {export_s / size * 1000:.2f} ms | {import_s:.2f} s ({import_cpu:.2f} s) "
                    f"| {import_s / size * 1000:.2f} ms | {mib(before)} | {mib(after)} "
                    f"| {mib(aggressive)} | {mib(folder_bytes(copy))} |"
                )


if __name__ == "__main__":
    main()
