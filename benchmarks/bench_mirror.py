"""Git mirror benchmark: export and import time and mirror size against history length.

Run: ``python benchmarks/bench_mirror.py`` (``--quick`` for a short smoke run, ``--sizes`` to
choose the lengths).

It commits one message at a time (user ~200 chars, assistant ~600 chars, a small state) to a
SQLite repository, marks the history at each length with a branch, then for each length exports
that branch into a new git mirror (``export_git``), imports the mirror into a new SQLite
repository (``import_git``), and measures the mirror's bytes on disk before and after
``git gc`` (when the ``git`` CLI is installed) against the statevcs repository's bytes. Time per
commit staying flat as the history grows is what "linear" means here.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import statevcs
from statevcs.mirror.git import export_git, import_git

rng = random.Random(42)
WORDS = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in range(3000)]


def text(chars: int) -> str:
    """Return pseudo-English text of about ``chars`` characters."""
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


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


def git_gc(mirror: Path) -> int | None:
    """Bytes of ``mirror`` after ``git gc`` (``None`` without the git CLI)."""
    if shutil.which("git") is None:
        return None
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(mirror)}
    subprocess.run(["git", "-C", str(mirror), "gc", "-q"], check=True, env=env)
    return folder_bytes(mirror)


def mib(size: int | None) -> str:
    return "—" if size is None else f"{size / 2**20:.1f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--sizes", type=int, nargs="+", help="history lengths to measure")
    args = parser.parse_args()
    sizes = sorted(set(args.sizes or ([20, 40] if args.quick else [250, 500, 1000, 2000])))

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
            "| commits | export | per commit | import | per commit | mirror | after git gc "
            "| statevcs repository |"
        )
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        with statevcs.Repo.open(work / "repo") as repo:
            for size in sizes:
                mirror = work / f"mirror-{size}.git"
                started = time.perf_counter()
                report = export_git(repo, mirror, branch=f"n{size}")
                export_s = time.perf_counter() - started
                assert report.commits_exported == size, report
                before = folder_bytes(mirror)
                copy = work / f"copy-{size}"
                started = time.perf_counter()
                with statevcs.Repo.init(copy) as target:
                    back = import_git(target, mirror)
                import_s = time.perf_counter() - started
                assert back.commits_imported == size, back
                after = git_gc(mirror)
                print(
                    f"| {size:,} | {export_s:.2f} s | {export_s / size * 1000:.2f} ms "
                    f"| {import_s:.2f} s | {import_s / size * 1000:.2f} ms | {mib(before)} "
                    f"| {mib(after)} | {mib(folder_bytes(copy))} |"
                )


if __name__ == "__main__":
    main()
