"""Workers for tests/reliability/test_format2_processes.py (importable by spawned children)."""

from __future__ import annotations

from typing import Any

import statevcs.objectdb as objectdb
from statevcs import Repo, tracked_messages

TRAIN_AFTER = 16 * 1024
"""Small, so that every writer trains a dictionary of its own within a few commits."""


def message(writer: int, i: int) -> dict[str, Any]:
    """The ``i``-th message of a writer: distinct, compressible, about 600 bytes."""
    words = " ".join(f"w{writer}-{i}-{k} the agent called the tool" for k in range(15))
    return {"role": "user" if i % 2 else "assistant", "content": [{"text": words}]}


def expected(writer: int, commits: int, per_commit: int) -> list[Any]:
    """What a writer's branch holds at the end."""
    return [message(writer, i) for i in range(commits * per_commit)]


def write(location: str, writer: int, commits: int, per_commit: int) -> None:
    """Commit ``commits`` times to branch ``w<writer>``, training the dictionary on the way."""
    objectdb.TRAIN_AFTER = TRAIN_AFTER
    with Repo.open(location) as repo:
        obj: dict[str, Any] = {"messages": tracked_messages()}
        n = 0
        for _ in range(commits):
            obj["messages"].extend(message(writer, n + k) for k in range(per_commit))
            n += per_commit
            repo.commit(obj, message=f"{n}", branch=f"w{writer}")


def collect(location: str, rounds: int) -> None:
    """Collect garbage over and over while the writers run."""
    with Repo.open(location) as repo:
        for _ in range(rounds):
            repo.gc(grace="0")


def read_all(location: str, writers: int, commits: int, per_commit: int) -> None:
    """In a process that has registered no dictionary yet: every branch reads back exactly."""
    with Repo.open(location) as repo:
        for writer in range(writers):
            shown = repo.show(f"w{writer}").messages
            assert shown == expected(writer, commits, per_commit), f"branch w{writer} differs"
        report = repo.fsck()
        assert report.ok, report.problems
