"""Helpers shared by the repository-level tests."""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
import threading
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any, TypeVar

from statevcs import Commit, Repo, objectdb
from statevcs.hashing import ObjectId
from statevcs.history import CommitGraph, ancestors
from statevcs.stores.memory import MemoryStore

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion in a new event loop (the frameworks' async APIs)."""
    return asyncio.run(coro)


def message(i: int, size: int = 40) -> dict[str, Any]:
    role = "user" if i % 2 == 0 else "assistant"
    return {"role": role, "content": [{"text": f"message {i} " + "x" * size}]}


def object_count(repo: Repo) -> int:
    return sum(1 for _ in repo.store.iter_objects())


def run_threads(
    target: Callable[..., None], args: Iterable[tuple[Any, ...]], *, switch_often: bool = False
) -> None:
    """Run ``target(*a)`` in a thread for each tuple ``a`` of ``args`` and wait for them all;
    ``switch_often``: the interpreter switches threads as often as it can meanwhile."""
    interval = sys.getswitchinterval()
    if switch_often:
        sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=target, args=a) for a in args]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)


def plain(value: Any) -> Any:
    """A plain deep copy (tracked containers become dicts and lists)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


class CountingStore(MemoryStore):
    """A memory store that counts its batched object reads (``get_many`` calls)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get_many(self, ids: Iterable[bytes]) -> dict[bytes, bytes]:
        self.reads += 1
        return super().get_many(ids)


def interrupted_upgrade(
    folder: Path, say: Callable[[str], dict[str, Any]]
) -> tuple[list[dict[str, Any]], Commit]:
    """A repository whose ``statevcs upgrade`` was killed before its last step: refs moved to
    packed (format 2) trees, ``core.format`` still "1". Returns ``main``'s 200 messages and
    its tip (100 from format 1, 100 more committed after the upgrade)."""
    first = [say(f"m{i}") for i in range(100)]
    with Repo.init(folder, storage_format=1) as repo:
        repo.commit({"messages": first}, message="format 1")
    with Repo.open(folder) as upgrader:
        upgrader.upgrade()
        grown = [*first, *(say(f"n{i}") for i in range(100))]
        tip = upgrader.commit({"messages": grown}, message="format 2")
        upgrader.store.config_set(objectdb.FORMAT_KEY, "1")  # as if killed before step 4
    return grown, tip


def reached_commits(repo: Repo) -> set[ObjectId]:
    """Every commit some ref reaches, walked from the commits themselves (no persisted graph)."""
    graph = CommitGraph(repo.objects, persisted=False)
    reached: set[ObjectId] = set()
    for tip in repo.refs.as_dict("refs/").values():
        reached |= ancestors(graph, tip)
    return reached


def langgraph_checkpoint(cid: str, values: dict[str, Any], version: int = 1) -> dict[str, Any]:
    """A LangGraph checkpoint dict with ``values`` as its channels, all at ``version``."""
    return {
        "v": 1,
        "id": cid,
        "ts": "2025-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": {k: version for k in values},
        "versions_seen": {},
        "updated_channels": None,
    }


def in_child(method: str, target: Callable[..., None], *args: Any) -> Any:
    """Run ``target(*args, answers)`` in a new process (``fork`` or ``spawn``); return what it
    sends on ``answers`` (fails when the process ends without sending)."""
    context = multiprocessing.get_context(method)
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=target, args=(*args, sending))
    child.start()
    try:
        assert receiving.poll(120), f"the child process ended (exit code {child.exitcode})"
        return receiving.recv()
    finally:
        child.join(60)
