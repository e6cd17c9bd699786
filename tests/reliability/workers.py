"""Child processes for the reliability suite: ``python workers.py COMMAND ARGS...``.

Each command is one independent process (a writer, a collector, a reader), so the tests see
what a real second program would do to the same repository: no shared caches, no shared HEAD.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import statevcs
from statevcs import Repo, Snapshot
from statevcs.mirror.git import export_git


def dict_digest(state: dict[str, Any]) -> str:
    """Digest of a plain-dict state as ``show`` returns it: messages, and the other keys."""
    content = {
        "messages": state.get("messages", []),
        "state": {k: v for k, v in state.items() if k != "messages"},
    }
    text = json.dumps(content, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def all_refs(repo: Repo) -> dict[str, str]:
    """Return every branch and tag as ``{full ref name: commit id}``."""
    refs = {f"refs/heads/{name}": commit for name, commit in repo.branches().items()}
    refs.update({f"refs/tags/{name}": commit for name, commit in repo.tags().items()})
    return refs


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def commit_loop(folder: str, seed: str) -> None:
    """Commit forever on ``main``; print ``<commit id> <content digest>`` after each commit."""
    rng = random.Random(seed)
    repo = Repo.open(folder)
    state: dict[str, Any] = {"messages": []}
    if repo.branches().get("main"):
        repo.checkout(state, "main")
    state.setdefault("messages", [])
    _say("ready")
    i = 0
    while True:
        i += 1
        state["messages"].append(
            {
                "role": "user" if i % 2 else "assistant",
                "content": f"{seed} {i} " * rng.randint(1, 40),
            }
        )
        state["turn"] = i
        state["seed"] = seed
        # Now and then a value big enough to be chunked, or none, so every path gets killed.
        if rng.random() < 0.1:
            state["big"] = rng.randbytes(70_000).hex()
        elif rng.random() < 0.1:
            state.pop("big", None)
        commit = repo.commit(state, message=f"{seed} {i}", metadata={"i": i})
        _say(f"{commit.id} {dict_digest(state)}")


def retry_writer(folder: str, branch: str, name: str, count: str, start: str) -> None:
    """Append ``count`` messages to ``branch`` with the documented retry on RefConflict."""
    while not Path(start).exists():
        time.sleep(0.005)
    repo = Repo.open(folder)
    state: dict[str, Any] = {"messages": []}
    conflicts = 0
    for i in range(int(count)):
        while True:
            if repo.branches().get(branch):
                repo.checkout(state, branch)
            state["messages"].append({"role": "user", "content": f"{name} {i}"})
            state[name] = i
            try:
                repo.commit(state, message=f"{name} {i}", branch=branch)
                break
            except statevcs.RefConflict:
                conflicts += 1
    repo.close()
    _say(f"conflicts {conflicts}")


def branch_writer(folder: str, branch: str, name: str, count: str, start: str) -> None:
    """Fork ``branch`` from ``main`` and append ``count`` messages to it."""
    while not Path(start).exists():
        time.sleep(0.005)
    repo = Repo.open(folder)
    repo.branch(branch, "main")
    state: dict[str, Any] = {}
    repo.checkout(state, branch)
    for i in range(int(count)):
        state["messages"].append({"role": "assistant", "content": f"{name} {i} " + "z" * 200})
        state["who"] = name
        repo.commit(state, message=f"{name} {i}")
    repo.close()


def set_and_commit(folder: str, key: str, value: str) -> None:
    """Check out ``main``, set ``state[key] = value`` and commit it."""
    repo = Repo.open(folder)
    state: dict[str, Any] = {}
    repo.checkout(state, "main")
    state[key] = int(value)
    _say(repo.commit(state, message=f"set {key}").id)


def delete_and_gc(folder: str, branch: str) -> None:
    """Delete ``branch`` and collect garbage with no grace period."""
    repo = Repo.open(folder)
    repo.delete_branch(branch)
    report = repo.gc(timedelta(0))
    _say(f"deleted {report.deleted}")


def gc_loop(folder: str, stop: str) -> None:
    """Collect garbage with no grace period until ``stop`` exists; print how many sweeps."""
    repo = Repo.open(folder)
    sweeps = deleted = 0
    _say("ready")
    while not Path(stop).exists():
        report = repo.gc(timedelta(0))
        sweeps += 1
        deleted += report.deleted
    _say(f"sweeps {sweeps} deleted {deleted}")


def pure_content(folder: str) -> None:
    """Commit the fixed content of ``test_content_ids`` with a cold handle; print its ids."""
    m = {"role": "user", "content": [{"text": "y" * 10}]}
    repo = Repo.open(folder)
    commit = repo.commit(Snapshot(messages=[m], extras={"last": m}), branch="other-process")
    repo.show("other-process")
    _say(commit.snapshot_id)


def read_everything(folder: str, serializer: str) -> None:
    """Run every reader on every ref; print one JSON line per call with its outcome.

    Exits 0 when only StateVCSError came out; a crash shows as a signal return code.
    """
    chosen: statevcs.StateSerializer | None = None
    if serializer == "msgpack":
        chosen = statevcs.MsgpackSerializer()
    elif serializer == "pickle":
        chosen = statevcs.PickleSerializer(key=b"the reader's own key")
    outcomes: list[tuple[str, str]] = []

    def attempt(what: str, call: Any) -> Any:
        try:
            result = call()
        except statevcs.StateVCSError as exc:
            outcomes.append((what, type(exc).__name__))
            return None
        except BaseException as exc:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{Path(frame.filename).name}:{frame.lineno}"
            outcomes.append((what, f"UNEXPECTED {type(exc).__name__}: {str(exc)[:200]} at {where}"))
            return None
        outcomes.append((what, "ok"))
        return result

    repo = attempt("open", lambda: Repo.open(folder, serializer=chosen))
    if repo is not None:
        history = attempt("log_all", lambda: [c.id for c in repo.log_all()]) or []
        revisions = ["HEAD", *all_refs(repo), *history]
        for rev in revisions:
            attempt(f"show {rev}", lambda rev=rev: repo.show(rev))
            attempt(f"checkout {rev}", lambda rev=rev: repo.checkout({}, rev))
            attempt(f"diff {rev}", lambda rev=rev: repo.diff("HEAD", rev))
            attempt(f"log {rev}", lambda rev=rev: list(repo.log(rev)))
        attempt("fsck", repo.fsck)
        attempt("stats", repo.stats)
        attempt("export_git", lambda: export_git(repo, Path(folder) / "mirror"))
    _say(json.dumps({"outcomes": outcomes}))
    if any(result.startswith("UNEXPECTED") for _what, result in outcomes):
        sys.exit(3)


def repository_digest(repo: Repo) -> str:
    """Return a digest of every ref, commit, snapshot and reflog of ``repo``."""
    everything: list[Any] = [sorted(all_refs(repo).items()), repo.default_branch]
    for commit in sorted(repo.log_all(), key=lambda c: c.id):
        snapshot = repo.show(commit.id)
        everything.append(
            [
                commit.id,
                commit.parents,
                commit.message,
                commit.author,
                commit.timestamp.isoformat(),
                commit.metadata,
                [snapshot.kind, snapshot.messages, snapshot.state, snapshot.extras],
            ]
        )
    for ref in ["HEAD", *sorted(all_refs(repo))]:
        everything.append([[r.old, r.new, r.message] for r in repo.reflog(ref)])
    text = json.dumps(everything, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def print_repository_digest(folder: str) -> None:
    """Print :func:`repository_digest` of the repository at ``folder``."""
    with Repo.open(folder) as repo:
        _say(repository_digest(repo))


COMMANDS: dict[str, Callable[..., None]] = {
    "commit-loop": commit_loop,
    "retry-writer": retry_writer,
    "branch-writer": branch_writer,
    "set-and-commit": set_and_commit,
    "delete-and-gc": delete_and_gc,
    "gc-loop": gc_loop,
    "pure-content": pure_content,
    "read-everything": read_everything,
    "repository-digest": print_repository_digest,
}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
