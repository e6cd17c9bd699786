"""What a commit stores never changes by accident: a scripted workload (plain dict, tracked dict,
an incremental adapter, forks, large chunked values, edits in the middle, enough messages to
train the zstd dictionary) stores exactly the object ids and bytes recorded in
``tests/data/commit_workload.json``.

Speeding up the commit path (statevcs/snapshot.py, objectdb.py, compression.py, repo.py) must
leave this test green. When the storage format changes on purpose, write the fixture again:
``python tests/test_commit_bytes.py --write`` (and say why in the commit).
"""

from __future__ import annotations

import hashlib
import json
import random
import string
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgpack

import statevcs
from statevcs import Repo
from statevcs.adapters import AdapterRegistry

FIXTURE = Path(__file__).parent / "data" / "commit_workload.json"
START = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = ["".join(random.Random(i).choices(string.ascii_lowercase, k=2 + i % 8)) for i in range(600)]


def _text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def _turn(rng: random.Random, i: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"text": f"[{i}] " + _text(rng, 200)}]},
        {"role": "assistant", "content": [{"text": _text(rng, 600)}], "n": i},
    ]


class Conversation:
    """An append-only conversation whose adapter vouches for what it last synced."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.state: dict[str, Any] = {}
        self.synced = 0


class ConversationAdapter:
    """Captures a :class:`Conversation`; the unchanged prefix is what was last synced."""

    kind = "test.conversation"

    def capture(self, obj: Conversation) -> statevcs.Snapshot:
        return statevcs.Snapshot.model_construct(
            kind=self.kind, messages=obj.messages, state=obj.state, extras={"turns": obj.synced}
        )

    def restore(self, obj: Conversation, snapshot: statevcs.Snapshot) -> None:
        obj.messages = snapshot.messages
        obj.state = dict(snapshot.state)
        obj.synced = len(obj.messages)

    def unchanged_prefix(self, obj: Conversation) -> int:
        return obj.synced

    def mark_synced(self, obj: Conversation) -> None:
        obj.synced = len(obj.messages)


def run_workload(path: Path) -> None:
    """Commit the scripted workload into a new SQLite repository at ``path``."""
    rng = random.Random(2026)
    clock = iter(START + timedelta(seconds=s) for s in range(1_000_000))
    adapters = AdapterRegistry(parent=statevcs.ADAPTERS)
    adapters.register(Conversation, ConversationAdapter())
    with Repo.init(path, author="workload", adapters=adapters) as repo:

        def commit(obj: Any, message: str, **kwargs: Any) -> statevcs.Commit:
            return repo.commit(obj, message, timestamp=next(clock), **kwargs)

        # A plain dict: every message encoded each time, spliced onto the last tree.
        plain: dict[str, Any] = {"messages": [], "step": 0}
        for i in range(30):
            plain["messages"].extend(_turn(rng, i))
            plain["step"] = i
            commit(plain, f"plain {i}")
        plain["messages"][7] = {"role": "user", "content": "edited in the middle"}
        commit(plain, "plain edit")
        del plain["messages"][20:24]
        commit(plain, "plain cut")
        plain["big"] = _text(rng, 90_000)  # a large, chunked state value
        plain["messages"].append({"role": "tool", "content": _text(rng, 80_000)})
        commit(plain, "plain large")
        # A tracked dict: only new messages encoded.
        tracked: dict[str, Any] = {"messages": statevcs.tracked_messages(), "n": 0}
        for i in range(40):
            tracked["messages"].extend(_turn(rng, 100 + i))
            tracked["n"] = i
            commit(tracked, f"tracked {i}", branch="tracked")
        tracked["messages"][3]["content"] = "changed in place"
        commit(tracked, "tracked edit", branch="tracked")
        # The incremental adapter: enough new messages to train the dictionary on the way.
        conv = Conversation()
        for i in range(220):
            conv.messages.extend(_turn(rng, 1000 + i))
            conv.state["step"] = i
            commit(conv, f"conv {i}", branch="conv", metadata={"i": i})
        conv.messages[5] = {"role": "user", "content": "rewritten"}
        conv.synced = 5
        commit(conv, "conv rewrite", branch="conv")
        conv.messages.append({"role": "assistant", "content": _text(rng, 70_000)})
        commit(conv, "conv large message", branch="conv")
        # Forks of the conversation, each growing its own way.
        for f in range(3):
            fork = Conversation()
            repo.branch(f"fork{f}", f"conv~{50 + 10 * f}")
            repo.checkout(fork, f"fork{f}")
            for i in range(12):
                fork.messages.extend(_turn(rng, 5000 + 100 * f + i))
                commit(fork, f"fork {f}.{i}")
        # Back on a plain dict that starts from a checkout (spliced onto its tree).
        again: dict[str, Any] = {}
        repo.checkout(again, "conv~3")
        again["messages"].extend(_turn(rng, 9000))
        commit(again, "dict from a checkout", branch="again")


def stored_objects(path: Path) -> dict[bytes, bytes]:
    """Every object id in the repository at ``path`` and the bytes the store holds for it."""
    with Repo.open(path) as repo:
        ids = [object_id for object_id, _ in repo.store.iter_objects()]
        return repo.store.get_many_stored(ids)


def summary(objects: dict[bytes, bytes]) -> dict[str, Any]:
    """A digest of every (id, stored bytes) pair, and counts per stored kind for diagnosis."""
    digest = hashlib.sha256()
    for object_id in sorted(objects):
        data = objects[object_id]
        digest.update(object_id + len(data).to_bytes(8, "big") + data)
    kinds = Counter(_kind(data) for data in objects.values())
    return {
        "objects": len(objects),
        "sha256": digest.hexdigest(),
        "kinds": dict(sorted(kinds.items())),
    }


def _kind(data: bytes) -> str:
    """The kind a stored object names first ("zstd" for a compressed one)."""
    if data[:4] == b"\x28\xb5\x2f\xfd":
        return "zstd"
    unpacker = msgpack.Unpacker()
    unpacker.feed(data)
    unpacker.read_array_header()
    return str(unpacker.unpack())


def test_the_workload_stores_the_recorded_objects(tmp_path: Path) -> None:
    run_workload(tmp_path / "repo")
    found = summary(stored_objects(tmp_path / "repo"))
    expected = json.loads(FIXTURE.read_text())
    assert found == expected, (
        "the objects a commit stores changed; if on purpose, run "
        "`python tests/test_commit_bytes.py --write` and say why in the commit"
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/test_commit_bytes.py --write")
    with tempfile.TemporaryDirectory() as folder:
        run_workload(Path(folder) / "repo")
        result = summary(stored_objects(Path(folder) / "repo"))
    FIXTURE.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {FIXTURE}: {result['objects']} objects")
