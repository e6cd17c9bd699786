"""Interleaved A/B of one incremental commit: this tree against an older copy of ``statevcs``.

Run: ``python benchmarks/bench_commit_ab.py --old /tmp/abold_commit`` after
``git archive main statevcs | tar -x -C /tmp/abold_commit``.

Both packages are imported into one process (each keeps its own ``sys.modules`` entries,
swapped in before its turn), each commits the same turns to its own SQLite repository with the
core benchmark's append-only ``Conversation`` adapter, and the two alternate in small batches,
so a busy machine slows both alike. Prints wall and CPU (``process_time``) minimum, median and
mean per commit; the mean includes the commit-graph writes that happen every few commits.
"""

from __future__ import annotations

import argparse
import importlib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by path
import prose

rng = random.Random(42)
WORDS = prose.vocabulary(rng)


def text(chars: int, r: random.Random) -> str:
    """Return pseudo-English text of about ``chars`` characters."""
    return prose.text(r, WORDS, chars)


def turn(i: int) -> list[dict[str, Any]]:
    """Return one user + assistant exchange (the same for a given ``i``)."""
    r = random.Random(i)
    return [
        {"role": "user", "content": [{"text": f"[{i}] " + text(200, r)}]},
        {"role": "assistant", "content": [{"text": text(600, r)}]},
    ]


class Conversation:
    """An append-only conversation object (as in ``bench_core.py``)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.state: dict[str, Any] = {}
        self.synced = 0


def _adapter(statevcs: ModuleType) -> Any:
    class ConversationAdapter:
        kind = "bench.conversation"

        def capture(self, obj: Conversation) -> Any:
            return statevcs.Snapshot.model_construct(
                kind=self.kind, messages=obj.messages, state=obj.state, extras={}
            )

        def restore(self, obj: Conversation, snapshot: Any) -> None:
            obj.messages = snapshot.messages
            obj.state = dict(snapshot.state)

        def unchanged_prefix(self, obj: Conversation) -> int:
            return obj.synced

        def mark_synced(self, obj: Conversation) -> None:
            obj.synced = len(obj.messages)

    return ConversationAdapter()


class Side:
    """One version of ``statevcs`` with its own modules, repository and conversation."""

    def __init__(self, name: str, modules: dict[str, ModuleType], folder: Path) -> None:
        self.name = name
        self.modules = modules
        self.folder = folder
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def enter(self) -> ModuleType:
        for key in [k for k in sys.modules if k == "statevcs" or k.startswith("statevcs.")]:
            del sys.modules[key]
        sys.modules.update(self.modules)
        return self.modules["statevcs"]

    def start(self, length: int) -> None:
        statevcs = self.enter()
        statevcs.register_adapter(Conversation, _adapter(statevcs))
        self.repo = statevcs.Repo.init(self.folder)
        self.conv = Conversation()
        self.conv.messages.extend(m for i in range(length // 2) for m in turn(i))
        self.repo.commit(self.conv, message="base")
        self.next = length // 2

    def batch(self, count: int) -> None:
        self.enter()
        repo, conv = self.repo, self.conv
        for _ in range(count):
            conv.messages.extend(turn(self.next))
            conv.state["step"] = self.next
            self.next += 1
            wall, cpu = time.perf_counter(), time.process_time()
            repo.commit(conv, message=f"turn {self.next}")
            self.cpu.append(time.process_time() - cpu)
            self.wall.append(time.perf_counter() - wall)

    def close(self) -> None:
        self.enter()
        self.repo.close()


def load(path: str | None) -> dict[str, ModuleType]:
    """Import ``statevcs`` (from ``path`` first on ``sys.path``) and return its modules."""
    for key in [k for k in sys.modules if k == "statevcs" or k.startswith("statevcs.")]:
        del sys.modules[key]
    if path is not None:
        sys.path.insert(0, path)
    try:
        importlib.import_module("statevcs")
        importlib.import_module("statevcs.model")
        importlib.import_module("statevcs.commitgraph")
    finally:
        if path is not None:
            sys.path.remove(path)
    return {k: v for k, v in sys.modules.items() if k == "statevcs" or k.startswith("statevcs.")}


def ms(values: list[float], how: Any) -> float:
    return float(how(values)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--old", required=True, help="folder holding the old statevcs package")
    parser.add_argument("--lengths", default="100,10000")
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--batch", type=int, default=10)
    args = parser.parse_args()
    new_modules = load(None)
    old_modules = load(args.old)
    if new_modules["statevcs"].__file__ == old_modules["statevcs"].__file__:
        raise SystemExit("--old names the same package as this tree")
    print(f"new: {Path(new_modules['statevcs'].__file__ or '').parent}")
    print(f"old: {Path(old_modules['statevcs'].__file__ or '').parent}")
    print(
        f"{'messages':>8}  {'side':>4}  {'cpu min':>8}  {'cpu med':>8}  {'cpu mean':>8}"
        f"  {'wall min':>8}  {'wall med':>8}  {'wall mean':>9}   (ms per commit)"
    )
    for length in [int(x) for x in args.lengths.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            sides = [
                Side("old", old_modules, Path(tmp) / "old"),
                Side("new", new_modules, Path(tmp) / "new"),
            ]
            for side in sides:
                side.start(length)
            done = 0
            while done < args.commits:
                count = min(args.batch, args.commits - done)
                order = sides if (done // args.batch) % 2 == 0 else sides[::-1]
                for side in order:
                    side.batch(count)
                done += count
            for side in sides:
                side.close()
            for side in sides:
                print(
                    f"{length:>8}  {side.name:>4}  {ms(side.cpu, min):>8.3f}"
                    f"  {ms(side.cpu, statistics.median):>8.3f}"
                    f"  {ms(side.cpu, statistics.fmean):>8.3f}"
                    f"  {ms(side.wall, min):>8.3f}"
                    f"  {ms(side.wall, statistics.median):>8.3f}"
                    f"  {ms(side.wall, statistics.fmean):>9.3f}"
                )
            old_cpu = statistics.median(sides[0].cpu)
            new_cpu = statistics.median(sides[1].cpu)
            print(f"{length:>8}  new/old cpu median: {new_cpu / old_cpu:.2f}")


if __name__ == "__main__":
    main()
