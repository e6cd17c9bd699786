"""Build tests/data/repo_format1.tar.gz: a repository written by statevcs 0.1 (format 1).

The fixture must come from the old code, not from ``Repo.init(storage_format=1)``::

    git worktree add /tmp/old 9e65585   # the last commit that wrote only format 1
    PYTHONPATH=/tmp/old python tests/data/make_repo_format1.py tests/data/repo_format1.tar.gz

It holds appends, a fork, a tag, a large binary message (chunked), an edit in the middle, a
truncation, a snapshot with extras, a merge and resets, plus what statevcs 0.1 read back for
every commit (expected.msgpack) and its refs (expected.json).
"""

from __future__ import annotations

import json
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import msgpack

import statevcs
from statevcs import Snapshot


def msg(i: int, role: str = "user") -> dict[str, Any]:
    text = f"message {i}: " + "lorem ipsum dolor sit amet " * (i % 7 + 1)
    return {"role": role, "content": [{"text": text}]}


def main(out: Path) -> None:
    folder = Path(tempfile.mkdtemp()) / "repo"
    repo = statevcs.Repo.init(folder)
    agent: dict[str, Any] = {"messages": [], "state": {"turn": 0, "notes": "n" * 200}}
    ids = []
    for i in range(60):
        agent["messages"].append(msg(2 * i))
        agent["messages"].append(msg(2 * i + 1, "assistant"))
        agent["state"]["turn"] = i
        ids.append(repo.commit(agent, message=f"turn {i}", metadata={"turn": i}).id)
        if i == 20:
            repo.tag("v1", "main")
            side = {"messages": list(agent["messages"]), "state": {"turn": -1}}
            large = {"role": "user", "content": [{"text": "a fork"}], "blob": b"\x00\x01" * 40000}
            side["messages"].append(large)
            ids.append(repo.commit(side, message="fork", branch="side").id)
    agent["messages"][5] = {"role": "user", "content": [{"text": "edited"}]}
    ids.append(repo.commit(agent, message="edit").id)
    del agent["messages"][100:]
    ids.append(repo.commit(agent, message="truncate").id)
    extras = {"system_prompt": "be brief", "cm": {"window": 40}}
    snap = Snapshot(messages=[msg(1)], state={"k": [1, 2, 3]}, extras=extras)
    ids.append(repo.commit(snap, message="snapshot", branch="snap").id)
    ids.append(repo.merge("main", "side", message="merge side", fallback="ours").id)
    repo.reset("main", "main~1")
    repo.reset("main", ids[-1])
    shows = {}
    for commit_id in ids:
        shown = repo.show(commit_id)
        shows[commit_id] = [shown.kind, shown.messages, shown.state, shown.extras]
    refs = repo.refs.as_hex()
    repo.close()
    (folder / "expected.msgpack").write_bytes(msgpack.packb(shows, use_bin_type=True))
    (folder / "expected.json").write_text(json.dumps({"refs": refs, "commits": ids}, indent=1))
    with tarfile.open(out, "w:gz") as tar:
        tar.add(folder, arcname="repo_format1")
    print(out, out.stat().st_size, len(ids), refs)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
