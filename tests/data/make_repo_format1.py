"""Build tests/data/repo_format1.tar.gz: a repository written by statevcs 0.1 (format 1).

The fixture must come from the old code, not from ``Repo.init(storage_format=1)``::

    git worktree add /tmp/old 9e65585   # the last commit that wrote only format 1
    PYTHONPATH=/tmp/old python tests/data/make_repo_format1.py tests/data/repo_format1.tar.gz

It holds appends, a fork, a tag, a large binary message (chunked), an edit in the middle, a
truncation, a snapshot with extras, a merge and resets, plus what statevcs 0.1 read back for
every commit (expected.msgpack) and its refs (expected.json).
"""

import datetime as dt
import json
import sys
import tarfile
import tempfile
from pathlib import Path

import statevcs
from statevcs import Snapshot

out = Path(sys.argv[1])
work = Path(tempfile.mkdtemp())
folder = work / "repo"
moment = dt.datetime(2025, 6, 1, 12, tzinfo=dt.UTC)
repo = statevcs.Repo.init(folder)


def msg(i, role="user"):
    return {
        "role": role,
        "content": [{"text": f"message {i}: " + "lorem ipsum dolor sit amet " * (i % 7 + 1)}],
    }


agent = {"messages": [], "state": {"turn": 0, "notes": "n" * 200}}
ids = []
for i in range(60):
    agent["messages"].append(msg(2 * i))
    agent["messages"].append(msg(2 * i + 1, "assistant"))
    agent["state"]["turn"] = i
    ids.append(repo.commit(agent, message=f"turn {i}", metadata={"turn": i}).id)
    if i == 20:
        repo.tag("v1", "main")
        side = {"messages": list(agent["messages"]), "state": {"turn": -1}}
        side["messages"].append(
            {"role": "user", "content": [{"text": "a fork"}], "blob": b"\x00\x01" * 40000}
        )
        ids.append(repo.commit(side, message="fork", branch="side").id)
# a rewrite in the middle, a truncation, a large message, extras
agent["messages"][5] = {"role": "user", "content": [{"text": "edited"}]}
ids.append(repo.commit(agent, message="edit").id)
del agent["messages"][100:]
ids.append(repo.commit(agent, message="truncate").id)
snap = Snapshot(
    kind="snapshot",
    messages=[msg(1)],
    state={"k": [1, 2, 3]},
    extras={"system_prompt": "be brief", "cm": {"window": 40}},
)
ids.append(repo.commit(snap, message="snapshot", branch="snap").id)
merged = repo.merge("main", "side", message="merge side", fallback="ours")
ids.append(merged.id)
repo.reset("main", "main~1")
repo.reset("main", ids[-1])
import msgpack

shows = {}
for c in ids:
    s = repo.show(c)
    shows[c] = [s.kind, s.messages, s.state, s.extras]
(folder / "expected.msgpack").write_bytes(msgpack.packb(shows, use_bin_type=True))
refs = repo.refs.as_hex()
repo.close()
(folder / "expected.json").write_text(json.dumps({"refs": refs, "commits": ids}, indent=1))
with tarfile.open(out, "w:gz") as tar:
    tar.add(folder, arcname="repo_format1")
print(out, out.stat().st_size, len(ids), refs)
