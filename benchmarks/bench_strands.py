"""statevcs vs Strands' SnapshotSessionManager: the same scripted agent, side by side.

Runs one deterministic conversation (``--turns``, default 1,000) through two persistence layers:

* Strands' ``SnapshotSessionManager(storage=LocalFileStorage(...), snapshot_trigger=always)``:
  one immutable JSON snapshot of the whole agent per turn, plus ``snapshot_latest``;
* statevcs's ``StateVCSSessionManager(repo, branch=..., commit_on="invocation")``: one commit per
  turn into a SQLite repository.

and prints, for full history (``NullConversationManager``) and for Strands' default sliding
window: bytes on disk, files, the median per-turn persistence overhead over the first and the last
50 turns, and the time to restore the latest state and the state after turn 10 into a fresh agent.
It also prints the msgpack size of the distinct messages, the floor any store must pay, and
(``--scenario micro``) ``repo.commit(agent)`` of one new message at 100 and 100,000 messages and
a cold checkout of 10,000 messages into an ``Agent`` against one into a dict.

    python benchmarks/bench_strands.py                 # 1,000 turns (about a minute)
    python benchmarks/bench_strands.py --turns 200     # quick run
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import hashlib
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
from strands import Agent, tool
from strands.agent.conversation_manager import (
    ConversationManager,
    NullConversationManager,
    SlidingWindowConversationManager,
)
from strands.hooks import AfterInvocationEvent, HookProvider, HookRegistry
from strands.session import SessionManager, SnapshotSessionManager
from strands.storage import LocalFileStorage
from strands.types.content import Messages

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import statevcs
from statevcs.integrations.strands import StateVCSSessionManager
from statevcs.integrations.strands.testing import Reply, ScriptedModel, ToolCall

WINDOW = 50
_TEXT = (
    "Lisbon Porto Sintra Cascais Alfama Belem tram tile pastel nata fado miradouro river Tagus "
    "castle monastery museum tower bridge market seafood sardine wine port cellar train bus ferry "
    "ticket budget hotel hostel apartment breakfast lunch dinner sunset viewpoint beach surf hike "
    "palace garden chapel azulejo bakery cafe plaza street alley harbour lighthouse cliff valley "
    "morning afternoon evening night early late quiet busy cheap pricey free guided self walk"
)
_WORDS = tuple(_TEXT.split())


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def user_prompt(turn: int) -> str:
    """The deterministic user prompt of ``turn`` (about 120 characters)."""
    rng = random.Random(turn * 7919)
    return f"Turn {turn}: " + _sentence(rng, 16)


def assistant_text(turn: int) -> str:
    """The deterministic final answer of ``turn`` (about 800 characters)."""
    rng = random.Random(turn * 104729 + 1)
    return " ".join(_sentence(rng, rng.randint(10, 16)) for _ in range(10))


@tool
def lookup(topic: str) -> str:
    """Look up travel facts about a topic."""
    rng = random.Random(sum(map(ord, topic)))
    return f"Facts about {topic}: " + " ".join(_sentence(rng, 12) for _ in range(4))


class TurnScript:
    """Model script: every 4th turn asks for the ``lookup`` tool first, then answers."""

    def __init__(self) -> None:
        self.turn = 0

    def __call__(self, messages: Messages) -> Reply:
        last = messages[-1]
        if any("toolResult" in block for block in last["content"]):
            return Reply(text=assistant_text(self.turn))
        self.turn += 1
        if self.turn % 4 == 0:
            return Reply(tool_calls=(ToolCall("lookup", {"topic": f"day {self.turn}"}),))
        return Reply(text=assistant_text(self.turn))


def make_agent(
    conversation_manager: ConversationManager,
    session_manager: SessionManager | None = None,
    hooks: list[Any] | None = None,
) -> Agent:
    """A scripted agent with the benchmark's tool and conversation manager."""
    model = ScriptedModel([], default=TurnScript(), chunk_size=256)
    return Agent(
        model=model,
        tools=[lookup],
        system_prompt="You are a travel planner.",
        conversation_manager=conversation_manager,
        session_manager=session_manager,
        hooks=hooks or [],
        callback_handler=None,
        agent_id="planner",
    )


class PersistTimer(HookProvider):
    """Brackets every AfterInvocationEvent callback (where both managers persist) with a clock."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._start = 0.0

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """Run first and last among AfterInvocationEvent callbacks."""
        registry.add_callback(AfterInvocationEvent, self._begin, order=-1_000_000)
        registry.add_callback(AfterInvocationEvent, self._end, order=1_000_000)

    def _begin(self, event: AfterInvocationEvent) -> None:
        self._start = time.perf_counter()

    def _end(self, event: AfterInvocationEvent) -> None:
        self.samples.append(time.perf_counter() - self._start)


def disk_usage(path: Path) -> tuple[int, int]:
    """Total file bytes and file count below ``path``."""
    total = files = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            total += os.path.getsize(os.path.join(root, name))
            files += 1
    return total, files


def distinct_message_bytes(seen: dict[str, bytes]) -> int:
    """msgpack size of every distinct message the conversation ever held."""
    return sum(len(data) for data in seen.values())


class MessageRecorder(HookProvider):
    """Records the msgpack encoding of every message version, keyed by content."""

    def __init__(self) -> None:
        self.seen: dict[bytes, int] = {}

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """Sample the conversation at the end of every invocation."""
        registry.add_callback(AfterInvocationEvent, self._record, order=2_000_000)

    def _record(self, event: AfterInvocationEvent) -> None:
        # Only the last few messages can be new in this benchmark; the tail is enough.
        for message in event.agent.messages[-6:]:
            data = msgpack.packb(message, use_bin_type=True)
            self.seen[data] = len(data)

    @property
    def total(self) -> int:
        """Bytes of the distinct messages."""
        return sum(self.seen.values())


@dataclass
class Result:
    """One persistence layer's numbers for one scenario."""

    name: str
    bytes_on_disk: int = 0
    files: int = 0
    first: float = 0.0
    last: float = 0.0
    restore_latest: float = 0.0
    restore_10: float = 0.0
    run_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000 if samples else float("nan")


def _run_turns(agent: Agent, turns: int) -> None:
    for turn in range(1, turns + 1):
        agent(user_prompt(turn))


def _timed(fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_strands(folder: Path, turns: int, manager: Callable[[], ConversationManager]) -> Result:
    """Strands' SnapshotSessionManager with one immutable snapshot per turn."""
    storage_dir = folder / "strands"
    session = SnapshotSessionManager(
        "bench",
        storage=LocalFileStorage(str(storage_dir)),
        snapshot_trigger=lambda **_: True,
    )
    timer = PersistTimer()
    agent = make_agent(manager(), session, [timer])
    start = time.perf_counter()
    _run_turns(agent, turns)
    result = Result("strands SnapshotSessionManager", run_seconds=time.perf_counter() - start)
    result.bytes_on_disk, result.files = disk_usage(storage_dir)
    result.first = _median_ms(timer.samples[:WINDOW])
    result.last = _median_ms(timer.samples[-WINDOW:])

    fresh_session = SnapshotSessionManager("bench", storage=LocalFileStorage(str(storage_dir)))
    fresh = make_agent(manager())
    ids = asyncio.run(fresh_session.list_snapshot_ids(fresh))

    def restore(snapshot_id: str | None) -> float:
        async def timed() -> float:
            start = time.perf_counter()
            await fresh_session.restore_snapshot(fresh, snapshot_id=snapshot_id)
            return time.perf_counter() - start

        return min(asyncio.run(timed()) for _ in range(3))

    result.restore_latest = restore(None)
    result.extra["messages_latest"] = len(fresh.messages)
    result.restore_10 = restore(ids[9])
    result.extra["messages_turn_10"] = len(fresh.messages)
    return result


def bench_statevcs(folder: Path, turns: int, manager: Callable[[], ConversationManager]) -> Result:
    """statevcs's StateVCSSessionManager, one commit per turn into a SQLite repository."""
    repo_dir = folder / "statevcs"
    repo = statevcs.Repo.init(repo_dir)
    session = StateVCSSessionManager(repo, branch="bench", commit_on="invocation")
    timer = PersistTimer()
    recorder = MessageRecorder()
    agent = make_agent(manager(), session, [timer, recorder])
    start = time.perf_counter()
    _run_turns(agent, turns)
    result = Result("statevcs StateVCSSessionManager", run_seconds=time.perf_counter() - start)
    result.extra["stats"] = repo.stats()
    result.extra["kinds"] = object_breakdown(repo)
    repo.close()
    result.extra["warm"] = [
        (count, warm_commit_cost(agent.messages[:count], manager, folder / f"probe-{count}"))
        for count in sorted({min(100, len(agent.messages)), len(agent.messages)})
    ]
    result.bytes_on_disk, result.files = disk_usage(repo_dir)
    result.first = _median_ms(timer.samples[:WINDOW])
    result.last = _median_ms(timer.samples[-WINDOW:])
    result.extra["distinct_message_bytes"] = recorder.total

    with statevcs.Repo.open(repo_dir) as probe:
        turn_10 = next(c.id for c in probe.log("bench") if c.metadata.get("turn") == 10)

    def restore(rev: str) -> Callable[[], Any]:
        fresh = make_agent(manager())

        def run() -> None:
            with statevcs.Repo.open(repo_dir) as cold:  # no warm in-process caches
                start = time.perf_counter()
                cold.checkout(fresh, rev)
                timings.append(time.perf_counter() - start)
            result.extra[f"messages_{rev}"] = len(fresh.messages)

        return run

    timings: list[float] = []
    _timed(restore("bench"))
    result.restore_latest = min(timings)
    result.extra["messages_latest"] = result.extra.pop("messages_bench")
    timings = []
    _timed(restore(turn_10))
    result.restore_10 = min(timings)
    result.extra["messages_turn_10"] = result.extra.pop(f"messages_{turn_10}")
    return result


def warm_commit_cost(
    messages: list[Any], manager: Callable[[], ConversationManager], folder: Path
) -> float:
    """Median time of ``repo.commit(agent)`` after appending one message, caches kept warm.

    Separates what a commit costs at a given conversation length from what the agent's own
    per-turn work (which grows with the conversation) does to the CPU caches in the real run.
    """
    agent = make_agent(manager())
    agent.messages = copy.deepcopy(messages)
    with statevcs.Repo.init(folder) as repo:
        repo.commit(agent, "base")
        samples = []
        for index in range(100):
            agent.messages.append(
                {"role": "user", "content": [{"text": f"probe {index}"}], "tracking_id": str(index)}
            )
            start = time.perf_counter()
            repo.commit(agent, "probe")
            samples.append(time.perf_counter() - start)
    shutil.rmtree(folder, ignore_errors=True)
    return statistics.median(samples)


def object_breakdown(repo: statevcs.Repo) -> dict[str, tuple[int, int]]:
    """``{kind: (objects, bytes)}`` of everything in the repository."""
    from statevcs.objects import Doc, decode

    sizes = dict(repo.store.iter_objects())
    kinds: dict[str, tuple[int, int]] = {}
    ids = list(sizes)
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        for object_id, data in repo.store.get_many(batch).items():
            obj = decode(object_id, data, check_hash=False)
            kind = type(obj).__name__
            if isinstance(obj, Doc):
                value = obj.value
                kind = "message" if isinstance(value, dict) and "role" in value else "extras value"
            count, total = kinds.get(kind, (0, 0))
            kinds[kind] = (count + 1, total + sizes[object_id])
    return kinds


class ControlWork(HookProvider):
    """Constant work (encode and hash a fixed 2 KB document) timed where the managers persist.

    Its growth from the first to the last turns is what the machine alone adds: the agent's
    own per-turn work grows with the conversation and leaves colder caches behind it.
    """

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._doc = {f"key{i}": [f"value {i} {j}" for j in range(8)] for i in range(16)}

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """Run among the AfterInvocationEvent callbacks."""
        registry.add_callback(AfterInvocationEvent, self._work)

    def _work(self, event: AfterInvocationEvent) -> None:
        start = time.perf_counter()
        for _ in range(4):
            data = msgpack.packb(self._doc)
            hashlib.blake2b(data).digest()
            msgpack.unpackb(data)
        self.samples.append(time.perf_counter() - start)


def bench_control(turns: int, manager: Callable[[], ConversationManager]) -> Result:
    """The same agent with no persistence, timing a constant workload in the same hook."""
    control = ControlWork()
    agent = make_agent(manager(), None, [control])
    start = time.perf_counter()
    _run_turns(agent, turns)
    result = Result("control: constant work, no store", run_seconds=time.perf_counter() - start)
    result.first = _median_ms(control.samples[:WINDOW])
    result.last = _median_ms(control.samples[-WINDOW:])
    return result


def _human(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:,.1f} {unit}" if unit != "B" else f"{size:,.0f} B"
        size /= 1024
    raise AssertionError("unreachable")


def print_table(title: str, turns: int, rows: list[Result]) -> None:
    """Print one scenario's side-by-side table."""
    last_label = f"turns {max(1, turns - WINDOW + 1)}-{turns}"
    print(f"\n## {title} ({turns} turns)\n")
    header = (
        f"| {'store':<32} | {'bytes on disk':>14} | {'files':>6} | {'turns 1-50':>10} "
        f"| {last_label:>14} | {'last/first':>10} | {'restore latest':>14} "
        f"| {'restore turn 10':>15} |"
    )
    print(header)
    print("|" + "|".join("-" * (len(cell)) for cell in header.split("|")[1:-1]) + "|")
    for row in rows:
        ratio = row.last / row.first if row.first else float("nan")
        print(
            f"| {row.name:<32} | {_human(row.bytes_on_disk):>14} | {row.files:>6} "
            f"| {row.first:>7.3f} ms | {row.last:>11.3f} ms | {ratio:>9.2f}x "
            f"| {row.restore_latest * 1000:>11.2f} ms | {row.restore_10 * 1000:>12.2f} ms |"
        )


def run_scenario(
    title: str, folder: Path, turns: int, manager: Callable[[], ConversationManager]
) -> list[Result]:
    """Run both stores and the control on one scenario and print its tables."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        bench_strands(folder, turns, manager),
        bench_statevcs(folder, turns, manager),
        bench_control(turns, manager),
    ]
    print_table(title, turns, rows)
    strands_row, vcs_row, control_row = rows
    stats = vcs_row.extra["stats"]
    kinds: dict[str, tuple[int, int]] = vcs_row.extra["kinds"]
    distinct = vcs_row.extra["distinct_message_bytes"]
    structure = sum(size for kind, (_, size) in kinds.items() if kind != "message")
    stored_messages = kinds.get("message", (0, 0))[1]

    print("\nstatevcs objects by kind:")
    for kind, (count, size) in sorted(kinds.items(), key=lambda item: -item[1][1]):
        print(f"  {kind:<16} {count:>7,} objects {_human(size):>12}")
    print(
        f"  commits {stats.commits:,}; objects per commit {stats.objects / stats.commits:.1f}; "
        f"structure per commit {_human(structure / stats.commits)}"
    )
    print()
    print(f"- msgpack size of the distinct messages: {_human(distinct)}")
    print(f"- message objects stored by statevcs:    {_human(stored_messages)}")
    shrink = strands_row.bytes_on_disk / vcs_row.bytes_on_disk
    print(f"- bytes on disk, statevcs / strands: 1 / {shrink:,.0f}")
    floor = distinct + structure
    print(
        f"- statevcs on disk / (distinct messages + tree/snapshot/commit objects): "
        f"{vcs_row.bytes_on_disk / floor:.2f}  ({_human(vcs_row.bytes_on_disk)} / "
        f"{_human(floor)}; the rest is SQLite's pages and index)"
    )
    vcs_ratio = vcs_row.last / vcs_row.first
    control_ratio = control_row.last / control_row.first
    print(
        f"- per-turn overhead, last/first 50 turns: statevcs {vcs_ratio:.2f}x; a constant "
        f"workload in the same hook {control_ratio:.2f}x; statevcs relative to it "
        f"{vcs_ratio / control_ratio:.2f}x"
    )
    warm = vcs_row.extra["warm"]
    if len(warm) == 2:
        (small, small_cost), (large, large_cost) = warm
        print(
            f"- repo.commit(agent) with warm caches, same process: {small} messages "
            f"{small_cost * 1e6:.0f} us, {large:,} messages {large_cost * 1e6:.0f} us "
            f"({large_cost / small_cost:.2f}x)"
        )
    for row in rows[:2]:
        print(
            f"- {row.name}: run {row.run_seconds:.1f} s; restored latest = "
            f"{row.extra['messages_latest']} messages, turn 10 = {row.extra['messages_turn_10']}"
        )
    return rows


def _big_messages(count: int) -> list[dict[str, Any]]:
    """``count`` Strands-shaped messages (user prompts and assistant replies alternating)."""
    return [
        {"role": "user", "content": [{"text": user_prompt(i)}]}
        if i % 2 == 0
        else {"role": "assistant", "content": [{"text": assistant_text(i)}]}
        for i in range(count)
    ]


def agent_commit_cost(folder: Path, count: int, samples: int = 50) -> float:
    """Median ``repo.commit(agent)`` after appending one message to ``count`` messages."""
    agent = make_agent(NullConversationManager())
    agent.messages = _big_messages(count)
    with statevcs.Repo.init(folder) as repo:
        repo.commit(agent, "base")
        times = []
        for index in range(samples):
            agent.messages.append({"role": "user", "content": [{"text": f"probe {index}"}]})
            start = time.perf_counter()
            repo.commit(agent, "probe")
            times.append(time.perf_counter() - start)
    shutil.rmtree(folder, ignore_errors=True)
    return statistics.median(times)


def checkout_cost(folder: Path, count: int, rounds: int = 5) -> tuple[float, float]:
    """Median cold checkout (seconds) of a ``count``-message agent commit: into an Agent, a dict."""
    agent = make_agent(NullConversationManager())
    agent.messages = _big_messages(count)
    with statevcs.Repo.init(folder) as repo:
        repo.commit(agent, "base", branch="main")
    into_agent, into_dict = [], []
    for _ in range(rounds):
        for target, times in ((make_agent(NullConversationManager()), into_agent), ({}, into_dict)):
            with statevcs.Repo.open(folder) as cold:  # no warm in-process caches
                start = time.perf_counter()
                cold.checkout(target, "main")
                times.append(time.perf_counter() - start)
    shutil.rmtree(folder, ignore_errors=True)
    return statistics.median(into_agent), statistics.median(into_dict)


def run_micro(folder: Path, large: int) -> None:
    """Print the per-commit cost at 100 and ``large`` messages and the checkout comparison."""
    folder.mkdir(parents=True, exist_ok=True)
    small_cost = agent_commit_cost(folder / "commit-small", 100)
    large_cost = agent_commit_cost(folder / "commit-large", large)
    print("\n## repo.commit(agent) of one new message, and checkout into an Agent\n")
    print(f"- commit at 100 messages:      {small_cost * 1e3:.3f} ms")
    print(f"- commit at {large:,} messages: {large_cost * 1e3:.3f} ms")
    print(f"- commit at {large:,} / at 100: {large_cost / small_cost:.2f}x")
    to_agent, to_dict = checkout_cost(folder / "checkout", 10_000)
    print(f"- checkout of 10,000 messages into an Agent: {to_agent * 1e3:.1f} ms")
    print(f"- checkout of 10,000 messages into a dict:   {to_dict * 1e3:.1f} ms")
    print(f"- Agent / dict: {to_agent / to_dict:.2f}x")


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run both scenarios, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000, help="turns per scenario (default 1000)")
    parser.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--scenario",
        choices=("all", "full", "window", "micro"),
        default="all",
        help="full history, sliding window, the per-commit and checkout micro benchmarks "
        "(micro), or all (default)",
    )
    parser.add_argument(
        "--large",
        type=int,
        default=100_000,
        help="conversation length of the large per-commit micro benchmark (default 100,000)",
    )
    args = parser.parse_args(argv)
    if args.turns < 20:
        parser.error("--turns must be at least 20 (restore-turn-10 needs history)")
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench-strands-"))
    print(f"# statevcs vs Strands SnapshotSessionManager - work folder {root}")
    try:
        if args.scenario in ("all", "full"):
            run_scenario(
                "full history (NullConversationManager)",
                root / "full",
                args.turns,
                NullConversationManager,
            )
        if args.scenario in ("all", "window"):
            run_scenario(
                "default sliding window (SlidingWindowConversationManager, 40 messages)",
                root / "window",
                args.turns,
                SlidingWindowConversationManager,
            )
        if args.scenario in ("all", "micro"):
            run_micro(root / "micro", args.large)
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
