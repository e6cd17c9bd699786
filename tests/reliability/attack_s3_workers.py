"""Child processes for the S3 attack tests: ``python attack_s3_workers.py COMMAND ARGS...``.

Each command is one independent program on the same ``s3://`` repository (credentials come
from the environment the test process set up), so the tests see what agents on other hosts
would do to it. A ``cache=`` parameter in the URL gives a process its own "machine".
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import statevcs
from statevcs import Repo


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _wait_for(start: str) -> None:
    while not Path(start).exists():
        time.sleep(0.005)


def state_digest(state: dict[str, Any]) -> str:
    """Digest of a plain-dict state (order-independent)."""
    text = json.dumps(state, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def writer(url: str, branch: str, name: str, count: str, start: str) -> None:
    """Append ``count`` messages ``"<name> <i>"`` to ``branch`` with the documented retry.

    The retry is "checkout, redo, commit" on RefConflict. Prints one line per acknowledged
    commit (``ack <commit id>``) and ``conflicts N`` at the end.
    """
    _wait_for(start)
    repo = Repo.open(url)
    state: dict[str, Any] = {"messages": []}
    conflicts = 0
    for i in range(int(count)):
        while True:
            if repo.branches().get(branch):
                repo.checkout(state, branch)
            state.setdefault("messages", [])
            state["messages"].append({"role": "user", "content": f"{name} {i}"})
            state[name] = i
            try:
                commit = repo.commit(state, message=f"{name} {i}", branch=branch)
                break
            except statevcs.RefConflict:
                conflicts += 1
        _say(f"ack {commit.id}")
    repo.close()
    _say(f"conflicts {conflicts}")


def gc_loop(url: str, stop: str) -> None:
    """Collect garbage with no grace period until ``stop`` exists; print the sweeps."""
    repo = Repo.open(url)
    sweeps = deleted = 0
    _say("ready")
    while not Path(stop).exists():
        report = repo.gc(timedelta(0), expire_reflog=timedelta(0) if sweeps % 3 == 2 else None)
        sweeps += 1
        deleted += report.deleted
        time.sleep(0.05)
    repo.close()
    _say(f"sweeps {sweeps} deleted {deleted}")


def churn(url: str, count: str, start: str) -> None:
    """Create and delete throwaway branches so gc always has something to sweep."""
    _wait_for(start)
    repo = Repo.open(url)
    for i in range(int(count)):
        state: dict[str, Any] = {"messages": [{"role": "user", "content": f"junk {i} " * 30}]}
        repo.commit(state, message=f"junk {i}", branch=f"junk{i}")
        repo.delete_branch(f"junk{i}")
    repo.close()
    _say("done")


def init(url: str, start: str) -> None:
    """Race ``Repo.init`` on ``url``; print ``created``, or the error's class name."""
    _wait_for(start)
    try:
        repo = Repo.init(url)
    except statevcs.StateVCSError as exc:
        _say(type(exc).__name__)
        return
    state: dict[str, Any] = {"messages": [{"role": "user", "content": "first"}]}
    commit = repo.commit(state, message="first")
    repo.close()
    _say(f"created {commit.id}")


def commit_loop(url: str, seed: str) -> None:
    """Commit forever on ``main`` (retrying on conflicts); print ``<id> <digest>`` per commit."""
    repo = Repo.open(url)
    state: dict[str, Any] = {"messages": []}
    # The snapshot model (pydantic) loads with the first commit: load it before the parent's
    # timed window starts, so a kill lands mid-commit rather than mid-import.
    assert statevcs.Snapshot is not None
    _say("ready")
    i = 0
    while True:
        i += 1
        while True:
            if repo.branches().get("main"):
                repo.checkout(state, "main")
            state.setdefault("messages", [])
            state["messages"].append({"role": "user", "content": f"{seed} {i} " * 20})
            state["seed"] = seed
            try:
                commit = repo.commit(state, message=f"{seed} {i}")
                break
            except statevcs.RefConflict:
                continue
        _say(f"{commit.id} {state_digest(state)}")


COMMANDS: dict[str, Callable[..., None]] = {
    "writer": writer,
    "gc-loop": gc_loop,
    "churn": churn,
    "init": init,
    "commit-loop": commit_loop,
}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
