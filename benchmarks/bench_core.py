"""Core benchmark: storage and commit cost of a long synthetic conversation.

Run: ``python benchmarks/bench_core.py`` (``--quick`` for a short smoke run).

It commits one turn at a time (user ~200 chars, assistant ~600 chars) for 1,000 turns to a
SQLite repository, forks 10 branches of 10 turns from turn 500, and prints bytes stored, objects
written per commit, median commit time at several conversation lengths (full capture of a dict,
and the incremental path an adapter enables), checkout time of ``main~k``, and the physical
limits measured in the same run (msgpack + blake3 of the same messages, one SQLite transaction).
Then the cost of committing a plain dict after appending one message at 100 and 100,000
messages, ``merge_base`` against ``log`` over the same 2,000 commits, and the two storage
formats side by side (bytes, and reads in a fresh handle against one JSON file read + parse of
the same state).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by path
import prose
from blake3 import blake3

import statevcs
from statevcs.adapters import register_adapter
from statevcs.objectdb import unpack_stored

rng = random.Random(42)
WORDS = prose.vocabulary(rng)


def text(chars: int) -> str:
    """Return pseudo-English text of about ``chars`` characters."""
    return prose.text(rng, WORDS, chars)


def turn(i: int) -> list[dict[str, Any]]:
    """Return one user + assistant exchange."""
    return [
        {"role": "user", "content": [{"text": f"[{i}] " + text(200)}]},
        {"role": "assistant", "content": [{"text": text(600)}]},
    ]


class Conversation:
    """An append-only conversation object, to show the incremental path adapters enable."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.state: dict[str, Any] = {}
        self.synced = 0

    def append(self, *messages: dict[str, Any]) -> None:
        self.messages.extend(messages)


class ConversationAdapter:
    """Vouches that messages before the last sync are unchanged (only ``append`` exists)."""

    kind = "bench.conversation"

    def capture(self, obj: Conversation) -> statevcs.Snapshot:
        return statevcs.Snapshot.model_construct(
            kind=self.kind, messages=obj.messages, state=obj.state, extras={}
        )

    def restore(self, obj: Conversation, snapshot: statevcs.Snapshot) -> None:
        obj.messages = snapshot.messages
        obj.state = dict(snapshot.state)

    def unchanged_prefix(self, obj: Conversation) -> int:
        return obj.synced

    def mark_synced(self, obj: Conversation) -> None:
        obj.synced = len(obj.messages)


register_adapter(Conversation, ConversationAdapter())


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def objects_written(repo: statevcs.Repo, before: int) -> int:
    return sum(1 for _ in repo.store.iter_objects()) - before


def sqlite_txn_ms(folder: Path, rounds: int = 200) -> float:
    """Median time of one WAL transaction inserting 8 ~700-byte objects + a ref update."""
    db = sqlite3.connect(str(folder / "raw.sqlite3"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE o (rowid INTEGER PRIMARY KEY, id BLOB UNIQUE, data BLOB, c REAL)")
    db.execute("CREATE TABLE r (name TEXT PRIMARY KEY, target BLOB)")
    db.execute("INSERT INTO r VALUES ('main', NULL)")
    samples = []
    for i in range(rounds):
        rows = [(blake3(b"%d-%d" % (i, j)).digest(), rng.randbytes(700), 0.0) for j in range(8)]
        start = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT OR IGNORE INTO o (id, data, c) VALUES (?, ?, ?)", rows)
        db.execute("UPDATE r SET target = ? WHERE name = 'main'", (rows[0][0],))
        db.execute("COMMIT")
        samples.append(time.perf_counter() - start)
    db.close()
    return median_ms(samples)


def encode_hash_ms(messages: list[dict[str, Any]], rounds: int = 5) -> float:
    """Median time to msgpack-encode and blake3-hash every message once."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for message in messages:
            blake3(msgpack.packb(message)).digest()
        samples.append(time.perf_counter() - start)
    return median_ms(samples)


def grow(repo: statevcs.Repo, target_messages: int, obj: Any, add: Any) -> None:
    """Append turns without committing until the conversation has ``target_messages``."""
    while len(obj["messages"] if isinstance(obj, dict) else obj.messages) < target_messages:
        add(turn(len(obj["messages"] if isinstance(obj, dict) else obj.messages)))


def commit_timing(folder: Path, lengths: list[int], samples: int) -> list[tuple[Any, ...]]:
    """Median commit time of one 2-message turn at several conversation lengths."""
    rows = []
    for length in lengths:
        base_messages = [m for i in range(length // 2) for m in turn(i)]
        # Full capture of a plain dict whose messages list is new each time: every message is
        # encoded and hashed again.
        # A new list each time, so nothing can vouch for an unchanged prefix.
        repo = statevcs.Repo.init(folder / f"full-{length}")
        messages = list(base_messages)
        repo.commit({"messages": list(messages), "step": 0}, message="base")
        full = []
        for i in range(samples):
            messages.extend(turn(length + i))
            state: dict[str, Any] = {"messages": list(messages), "step": i}
            start = time.perf_counter()
            repo.commit(state, message=f"turn {i}")
            full.append(time.perf_counter() - start)
        limit = encode_hash_ms(messages)
        repo.close()
        # Incremental: an adapter vouches for the unchanged prefix.
        repo = statevcs.Repo.init(folder / f"incr-{length}")
        conv = Conversation()
        conv.append(*base_messages)
        repo.commit(conv, message="base")
        incremental = []
        for i in range(samples):
            conv.append(*turn(length + i))
            conv.state["step"] = i
            start = time.perf_counter()
            repo.commit(conv, message=f"turn {i}")
            incremental.append(time.perf_counter() - start)
        repo.close()
        rows.append((length, median_ms(full), limit, median_ms(incremental)))
    return rows


def dict_commit_timing(
    folder: Path, lengths: list[int], samples: int, *, tracked: bool
) -> list[tuple[int, float]]:
    """Median ``repo.commit(d)`` after appending one message, per length.

    ``tracked``: ``d["messages"]`` is a ``statevcs.tracked_messages`` list (the O(new messages)
    opt-in); otherwise a plain list, which statevcs never swaps, so every message is encoded.
    """
    rows = []
    for length in lengths:
        repo = statevcs.Repo.init(folder / f"dict-{length}-{tracked}")
        messages = [m for i in range(length // 2) for m in turn(i)]
        state: dict[str, Any] = {
            "messages": statevcs.tracked_messages(messages) if tracked else messages,
            "step": 0,
        }
        repo.commit(state, message="base")
        times = []
        for i in range(samples):
            state["messages"].append(turn(length + i)[0])
            state["step"] = i
            start = time.perf_counter()
            repo.commit(state, message=f"message {i}")
            times.append(time.perf_counter() - start)
        repo.close()
        rows.append((length, median_ms(times)))
    return rows


def history_timing(folder: Path, commits: int, rounds: int = 5) -> tuple[float, float]:
    """Median ``merge_base`` and ``list(log)`` (ms) over a ``commits``-long first-parent line.

    A side branch forks from the root commit, so the merge base is found only after walking
    the whole line, the same commits ``log`` reads.
    """
    repo = statevcs.Repo.init(folder / "history")
    conv = Conversation()
    for i in range(commits):
        conv.state["i"] = i
        repo.commit(conv, message=f"c{i}")
    root = list(repo.log("main"))[-1].id
    repo.branch("side", rev=root)
    side = Conversation()
    repo.checkout(side, "side")
    side.state["side"] = True
    repo.commit(side, message="side")
    bases, logs = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        found = repo.merge_base("main", "side")
        bases.append(time.perf_counter() - start)
        assert found == root
        start = time.perf_counter()
        walked = list(repo.log("main"))
        logs.append(time.perf_counter() - start)
        assert len(walked) == commits
    repo.close()
    return median_ms(bases), median_ms(logs)


def format_comparison(folder: Path, turns: int, rounds: int) -> list[tuple[Any, ...]]:
    """Per storage format: bytes, files on disk, and fresh-handle reads of a dict agent.

    Each row: (format, distinct message bytes, object bytes, SQLite file bytes, median commit
    ms, checkout latest ms, checkout of turn 10 ms, JSON read ms). Reads alternate between the
    formats and the JSON file round by round, so a busy machine slows all of them alike.
    """
    repos: dict[int, Path] = {}
    written: dict[int, tuple[int, float]] = {}
    agent: dict[str, Any] = {}
    distinct = 0
    for storage_format in (1, 2):
        path = folder / f"format-{storage_format}"
        repo = statevcs.Repo.init(path, storage_format=storage_format)
        agent = {"messages": [], "turn": 0}
        times: list[float] = []
        distinct = 0
        for i in range(turns):
            exchange = turn(i)
            distinct += sum(len(msgpack.packb(m)) for m in exchange)
            agent["messages"].extend(exchange)
            agent["turn"] = i
            start = time.perf_counter()
            repo.commit(agent, message=f"turn {i}")
            times.append(time.perf_counter() - start)
        written[storage_format] = (repo.stats().bytes_stored, statistics.median(times) * 1000)
        repo.close()
        repos[storage_format] = path
    state_file = folder / "state.json"
    state_file.write_text(json.dumps(agent))
    samples: dict[str, list[float]] = {}

    def sample(name: str, call: Any) -> None:
        start = time.perf_counter()
        call()
        samples.setdefault(name, []).append((time.perf_counter() - start) * 1000)

    def checkout(path: Path, rev: str) -> None:
        with statevcs.Repo.open(path) as fresh:
            fresh.checkout({}, rev)

    for _ in range(rounds):
        for storage_format, path in repos.items():
            sample(f"latest-{storage_format}", lambda p=path: checkout(p, "main"))
            sample(f"turn10-{storage_format}", lambda p=path: checkout(p, f"main~{turns - 11}"))
        sample("json", lambda: json.loads(state_file.read_text()))
    rows = []
    for storage_format, path in repos.items():
        on_disk = sum(f.stat().st_size for f in path.iterdir())
        objects, commit_ms = written[storage_format]
        rows.append(
            (
                storage_format,
                distinct,
                objects,
                on_disk,
                commit_ms,
                statistics.median(samples[f"latest-{storage_format}"]),
                statistics.median(samples[f"turn10-{storage_format}"]),
                statistics.median(samples["json"]),
            )
        )
    return rows


def bytes_by_kind(repo: statevcs.Repo) -> dict[str, tuple[int, int]]:
    """``{object kind: (objects, stored bytes)}`` over every object of ``repo``."""
    ids = [object_id for object_id, _size in repo.store.iter_objects()]
    found: dict[str, tuple[int, int]] = {}
    for start in range(0, len(ids), 500):
        for object_id, data in repo.store.get_many(ids[start : start + 500]).items():
            plain = unpack_stored(repo.store, object_id, data)
            kind = str(msgpack.unpackb(plain, raw=False, strict_map_key=False)[0])
            count, size = found.get(kind, (0, 0))
            found[kind] = (count + 1, size + len(data))
    return found


def windows(turns: int) -> list[tuple[int, int]]:
    """The turn windows of the objects-per-commit table, each once (with ``--quick``'s 100
    turns the middle one is the last one)."""
    return list(dict.fromkeys(((1, 10), (90, 100), (turns - 10, turns))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="short run for smoke testing")
    args = parser.parse_args()
    turns = 100 if args.quick else args.turns
    fork_at = turns // 2
    lengths = [100, 1000] if args.quick else [100, 1000, 10000]
    samples = 10 if args.quick else 30
    dict_lengths = [100, 10_000] if args.quick else [100, 100_000]

    with tempfile.TemporaryDirectory(prefix="statevcs-bench-") as tmp:
        folder = Path(tmp)
        repo = statevcs.Repo.init(folder / "conversation")
        conv = Conversation()
        per_commit: list[int] = []
        distinct = 0
        count = sum(1 for _ in repo.store.iter_objects())
        for i in range(turns):
            exchange = turn(i)
            distinct += sum(len(msgpack.packb(m)) for m in exchange)
            conv.append(*exchange)
            conv.state["turn"] = i
            repo.commit(conv, message=f"turn {i}")
            now = sum(1 for _ in repo.store.iter_objects())
            per_commit.append(now - count)
            count = now
        single = repo.stats()
        kinds = bytes_by_kind(repo)
        # Ten forks of 10 turns each from turn `fork_at`.
        fork_bytes = 0
        for f in range(10):
            repo.branch(f"fork-{f}", rev=f"main~{turns - 1 - fork_at}")
            fork = Conversation()
            repo.checkout(fork, f"fork-{f}")
            for t in range(10):
                exchange = turn(100_000 + f * 100 + t)
                fork_bytes += sum(len(msgpack.packb(m)) for m in exchange)
                fork.append(*exchange)
                fork.state["turn"] = t
                repo.commit(fork, message=f"fork {f} turn {t}")
        forked = repo.stats()
        checkout_rows = []
        for k in sorted({0, 10, 100, turns - 1} & set(range(turns))):
            target = Conversation()
            start = time.perf_counter()
            repo.checkout(target, f"main~{k}")
            first = time.perf_counter() - start
            checkout_rows.append((k, len(target.messages), first * 1000))
        repo.close()
        on_disk = sum(f.stat().st_size for f in (folder / "conversation").iterdir())

        print("== storage: one conversation, then 10 forks x 10 turns ==")
        print(f"turns committed                 {turns}")
        print(f"distinct message bytes (msgpack) {distinct:,}")
        print(f"bytes stored, single branch      {single.bytes_stored:,}")
        print(f"naive copy-per-commit bytes      {single.naive_bytes:,}")
        print(f"dedup ratio                      {single.dedup_ratio:.1f}x")
        print(f"bytes stored with 10 forks       {forked.bytes_stored:,}")
        print(f"SQLite files on disk, with forks {on_disk:,}")
        print(f"fork messages' bytes             {fork_bytes:,}")
        ratio = forked.bytes_stored / (single.bytes_stored + fork_bytes)
        print(f"forked / (single + fork msgs)    {ratio:.3f}")
        per_fork = (forked.bytes_stored - single.bytes_stored) / fork_bytes
        print(f"bytes per forked turn / its msgs {per_fork:.2f}x")
        print()
        print("== bytes stored by object kind, single branch ==")
        print("kind       objects     bytes  per object  / distinct")
        for kind, (count, size) in sorted(kinds.items(), key=lambda item: -item[1][1]):
            print(
                f"{kind:<9} {count:>8,} {size:>9,} {size / count:>11.0f} {size / distinct:>11.2f}"
            )
        print()
        print("== objects written per commit (2 new messages) ==")
        print("turns      median  max")
        for lo, hi in windows(turns):
            window = per_commit[lo - 1 : hi]
            print(f"{lo:>4}-{hi:<5} {statistics.median(window):>6} {max(window):>4}")
        print()
        print("== median commit time of one turn (ms) ==")
        print("messages  full-capture  msgpack+blake3  ratio  incremental")
        rows = commit_timing(folder, lengths, samples)
        for length, full, limit, incremental in rows:
            print(
                f"{length:>8}  {full:>12.3f}  {limit:>14.3f}  {full / limit:>5.2f}"
                f"  {incremental:>11.3f}"
            )
        base = rows[0][3]
        largest = rows[-1][3]
        print(f"incremental at {rows[-1][0]} / at {rows[0][0]}: {largest / base:.2f}x")
        txn = sqlite_txn_ms(folder)
        print(f"one SQLite WAL transaction, 8 objects (same run): {txn:.3f} ms")
        print(f"incremental commit at {rows[-1][0]} / SQLite transaction: {largest / txn:.2f}x")
        print()
        print("== dict commit of one message: repo.commit(d) after d['messages'].append ==")
        print("messages  tracked list ms  plain list ms")
        tracked_rows = dict_commit_timing(folder, dict_lengths, samples, tracked=True)
        plain_rows = dict_commit_timing(folder, dict_lengths, samples, tracked=False)
        for (length, ms), (_, plain_ms) in zip(tracked_rows, plain_rows):
            print(f"{length:>8}  {ms:>15.3f}  {plain_ms:>13.3f}")
        print(
            f"tracked dict commit at {tracked_rows[-1][0]:,} / at {tracked_rows[0][0]:,}: "
            f"{tracked_rows[-1][1] / tracked_rows[0][1]:.2f}x (plain list: "
            f"{plain_rows[-1][1] / plain_rows[0][1]:.0f}x, every message encoded)"
        )
        print()
        history = 200 if args.quick else 2000
        base_ms, log_ms = history_timing(folder, history)
        print(f"== history over {history:,} commits (ms) ==")
        print(f"merge_base (fork at the root)  {base_ms:.2f}")
        print(f"list(log)                      {log_ms:.2f}")
        print(f"merge_base / log               {base_ms / log_ms:.2f}x")
        print()
        print("== checkout of main~k into a fresh object (ms) ==")
        print("k      messages  time")
        for k, n, ms in checkout_rows:
            print(f"{k:<6} {n:>8}  {ms:.2f}")
        print()
        rows_f = format_comparison(folder, turns, 5 if args.quick else 21)
        print(f"== storage formats: {turns} turns of a dict agent, fresh handle (SQLite) ==")
        print(
            "format  objects/distinct  file/distinct  commit ms  checkout latest ms  "
            "checkout turn 10 ms  JSON read ms  latest/JSON"
        )
        for fmt, distinct_bytes, objects, on_disk, commit_ms, latest, early, js in rows_f:
            print(
                f"{fmt:>6}  {objects / distinct_bytes:>16.2f}  {on_disk / distinct_bytes:>13.2f}"
                f"  {commit_ms:>9.3f}  {latest:>18.2f}  {early:>19.2f}  {js:>12.2f}"
                f"  {latest / js:>11.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
