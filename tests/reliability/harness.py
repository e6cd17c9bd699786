"""Helpers for the reliability suite: counts from the environment, table dumps, subprocesses.

Counts default to what CI can afford on two cores; raise them for long runs (see
docs/reliability.md), e.g. ``STATEVCS_RELIABILITY_KILLS=300``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

WORKERS = Path(__file__).with_name("workers.py")


def count(name: str, default: int) -> int:
    """Return the integer in ``STATEVCS_RELIABILITY_<name>``, or ``default``."""
    raw = os.environ.get(f"STATEVCS_RELIABILITY_{name}")
    return int(raw) if raw else default


def digest(content: Any) -> str:
    """Return a digest of JSON-like content that is independent of dict order."""
    text = json.dumps(content, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def snapshot_content(snapshot: Any) -> dict[str, Any]:
    """Return everything a snapshot holds, as one comparable value."""
    return {
        "kind": snapshot.kind,
        "messages": snapshot.messages,
        "state": snapshot.state,
        "extras": snapshot.extras,
    }


def dump_tables(database: Path) -> dict[str, list[tuple[object, ...]]]:
    """Return every row of every statevcs table, read with sqlite3 directly (no statevcs)."""
    db = sqlite3.connect(f"{database.absolute().as_uri()}?mode=ro", uri=True)
    try:
        return {
            table: sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in ("objects", "refs", "reflog", "config")
        }
    finally:
        db.close()


def run_worker(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``workers.py`` with ``args`` in a fresh interpreter; fail the test if it fails."""
    done = subprocess.run(
        [sys.executable, str(WORKERS), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, (
        f"worker {args} exited {done.returncode}:\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    )
    return done


def start_worker(*args: object, **popen: Any) -> subprocess.Popen[str]:
    """Start ``workers.py`` with ``args`` in the background."""
    return subprocess.Popen([sys.executable, str(WORKERS), *map(str, args)], text=True, **popen)
