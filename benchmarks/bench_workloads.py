"""Other agent workloads than the core benchmark's chat: bytes, commit and fresh reads.

Run: ``python benchmarks/bench_workloads.py`` (``--quick`` for a short smoke run).

The core benchmark (``bench_core.py``) commits a chat of ~200 and ~600-character messages. An
agent's state is often shaped otherwise, and the format should not be tuned to one shape. Each
workload here commits a ``dict`` agent (messages in a ``statevcs.tracked_messages`` list) turn
by turn to a SQLite repository, then prints:

- ``objects/distinct`` and ``file/distinct``: bytes stored (all objects; the SQLite file) over
  the distinct bytes the agent produced (each new message's msgpack, plus each turn's edit of a
  state value: the new line's msgpack);
- ``KB/turn``: object bytes stored per turn;
- ``commit ms``: median CPU time of one commit;
- ``checkout ms`` and ``JSON ms``: CPU minima of ``repo.checkout`` of the latest commit in a
  fresh handle, and of reading and parsing one JSON file of the same state.

Workloads: ``chat`` (as ``bench_core.py``: user ~200 and assistant ~600 characters),
``tool calls`` (a tool call and an ~8 KB JSON tool result each turn), ``tiny events`` (ten
5-40 character events a turn, as a streaming log), and ``to-do list`` (one message a turn and
one line of a state value of ``--lines`` lines rewritten). The to-do list runs under both
chunkers a repository may record: ``fastcdc-2020`` (state values chunked above 64 KiB, as in
repositories made by 0.2.0) and ``fastcdc-2020-small-values`` (the default since: from 8 KiB,
~2 KiB chunks).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by path
import prose

import statevcs
from statevcs.structures.chunking import CHUNKER_KEY

rng = random.Random(7)
WORDS = prose.vocabulary(rng)


def text(chars: int) -> str:
    """Pseudo-English text of about ``chars`` characters."""
    return prose.text(rng, WORDS, chars)


def chat(turn: int, agent: dict[str, Any]) -> list[Any]:
    """A user message and an assistant reply."""
    return [
        {"role": "user", "content": [{"text": f"[{turn}] " + text(200)}]},
        {"role": "assistant", "content": [{"text": text(600)}]},
    ]


def tool_calls(turn: int, agent: dict[str, Any]) -> list[Any]:
    """A question, a tool call, its ~8 KB JSON result and the answer."""
    rows = [
        {"id": i, "title": text(20), "score": rng.random(), "tags": [text(8) for _ in range(3)]}
        for i in range(40)
    ]
    call = {"toolUseId": f"t{turn}", "name": "search", "input": {"query": text(40)}}
    result = {"toolUseId": f"t{turn}", "status": "success", "content": [{"json": rows}]}
    return [
        {"role": "user", "content": [{"text": f"[{turn}] " + text(100)}]},
        {"role": "assistant", "content": [{"toolUse": call}]},
        {"role": "user", "content": [{"toolResult": result}]},
        {"role": "assistant", "content": [{"text": text(600)}]},
    ]


def tiny_events(turn: int, agent: dict[str, Any]) -> list[Any]:
    """Ten short events (a streaming log)."""
    return [{"type": "delta", "text": text(rng.randint(5, 40))} for _ in range(10)]


def todo_list(turn: int, agent: dict[str, Any]) -> list[Any]:
    """One message, and one line of the ``todo`` state value rewritten."""
    agent["todo"][rng.randrange(len(agent["todo"]))] = f"[{turn}] " + text(70)
    return [{"role": "user", "content": [{"text": f"[{turn}] " + text(100)}]}]


Workload = Callable[[int, dict[str, Any]], list[Any]]


def measure(
    folder: Path, workload: Workload, turns: int, rounds: int, *, lines: int, chunker: str | None
) -> dict[str, float]:
    """Commit ``turns`` turns of ``workload``; return its row of figures."""
    path = folder / "repo"
    repo = statevcs.Repo.init(path)
    if chunker is not None:
        repo.store.config_set(CHUNKER_KEY, chunker)  # as a repository an older version made
        repo.close()
        repo = statevcs.Repo.open(path)
    agent: dict[str, Any] = {"messages": statevcs.tracked_messages([])}
    if workload is todo_list:
        agent["todo"] = [f"[-] {text(70)}" for _ in range(lines)]
    repo.commit(agent, message="start")
    start_bytes = repo.stats().bytes_stored
    distinct = 0
    commit_cpu: list[float] = []
    for turn in range(turns):
        new = workload(turn, agent)
        distinct += sum(len(msgpack.packb(m)) for m in new)
        if workload is todo_list:
            distinct += len(msgpack.packb(agent["todo"][0]))  # about one line's bytes
        agent["messages"].extend(new)
        started = time.process_time()
        repo.commit(agent, message=f"turn {turn}")
        commit_cpu.append(time.process_time() - started)
    stored = repo.stats().bytes_stored - start_bytes
    repo.close()
    on_disk = sum(f.stat().st_size for f in path.iterdir())
    state_file = folder / "state.json"
    state_file.write_text(json.dumps({**agent, "messages": list(agent["messages"])}))

    def checkout() -> float:
        with statevcs.Repo.open(path) as fresh:
            started = time.process_time()
            fresh.checkout({}, "main")
            return time.process_time() - started

    def json_read() -> float:
        started = time.process_time()
        json.loads(state_file.read_text())
        return time.process_time() - started

    reads, parses = [], []
    for _ in range(rounds):  # alternated, so a busy machine slows both alike
        reads.append(checkout())
        parses.append(json_read())
    return {
        "objects/distinct": stored / distinct,
        "file/distinct": on_disk / distinct,
        "KB/turn": stored / turns / 1000,
        "commit ms": statistics.median(commit_cpu) * 1000,
        "checkout ms": min(reads) * 1000,
        "JSON ms": min(parses) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--lines", type=int, default=250, help="lines of the to-do list")
    parser.add_argument("--quick", action="store_true", help="short run for smoke testing")
    args = parser.parse_args()
    turns, rounds = (30, 3) if args.quick else (args.turns, 15)
    rows = [
        ("chat", "default"),
        ("tool calls", "default"),
        ("tiny events", "default"),
        ("to-do list", "fastcdc-2020"),
        ("to-do list", "default"),
    ]
    workloads: dict[str, Workload] = {
        "chat": chat,
        "tool calls": tool_calls,
        "tiny events": tiny_events,
        "to-do list": todo_list,
    }
    flags = "--quick" if args.quick else f"--turns {turns} --lines {args.lines}"
    print(f"command: python benchmarks/bench_workloads.py {flags}")
    print(f"{turns} turns a workload, SQLite, CPU time; checkout of the latest in a fresh handle\n")
    columns = ["objects/distinct", "file/distinct", "KB/turn", "commit ms", "checkout ms"]
    print(f"| workload | chunker | {' | '.join(columns)} | JSON ms | checkout/JSON |")
    print("|---|---|" + "---|" * (len(columns) + 2))
    for name, chunker in rows:
        with tempfile.TemporaryDirectory(prefix="statevcs-bench-") as tmp:
            row = measure(
                Path(tmp),
                workloads[name],
                turns,
                rounds,
                lines=args.lines,
                chunker=None if chunker == "default" else chunker,
            )
        cells = " | ".join(f"{row[c]:.2f}" for c in columns)
        ratio = row["checkout ms"] / row["JSON ms"]
        shown = "fastcdc-2020-small-values" if chunker == "default" else chunker
        print(f"| {name} | {shown} | {cells} | {row['JSON ms']:.2f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
