"""Smoke test of ``benchmarks/bench_commit_ab.py``: it imports two copies of statevcs into one
process and prints a row per side and length (no timing is asserted)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_commit_ab.py"


def test_the_ab_benchmark_runs_both_trees(tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(
        ROOT / "statevcs", old / "statevcs", ignore=shutil.ignore_patterns("__pycache__")
    )
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--old",
            str(old),
            "--lengths",
            "10,40",
            "--commits",
            "6",
            "--batch",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == f"old: {old / 'statevcs'}"
    rows = [line.split() for line in lines if line.split()[:1] in (["10"], ["40"])]
    assert [(r[0], r[1]) for r in rows if r[1] in ("old", "new")] == [
        ("10", "old"),
        ("10", "new"),
        ("40", "old"),
        ("40", "new"),
    ]
    assert all(float(x) > 0 for r in rows if r[1] in ("old", "new") for x in r[2:])
