"""Writer processes for the S3 fault test (started with the spawn method, one per writer).

A writer appends ``"<name> <i>"`` to one existing branch ``count`` times through the proxy, with
the documented retry: on ``RefConflict`` check out and redo the change; on a ``StoreError``
whose ``landed`` is ``None``, ask ``Repo.has_landed`` (until the store answers) and commit
again only if it did not land. It writes what happened to a JSON file: every acknowledged
commit with a digest of its messages, every error by type, the longest call.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import statevcs
from statevcs import Repo

_T = TypeVar("_T")


def messages_digest(texts: list[str]) -> str:
    """A digest of a conversation's message texts, in order."""
    return hashlib.sha256(json.dumps(texts).encode()).hexdigest()


class _Run:
    def __init__(self) -> None:
        self.errors: Counter[str] = Counter()
        self.samples: dict[str, str] = {}
        self.raw: list[str] = []
        self.longest = 0.0
        self.commit_calls = 0
        self.commit_failures = 0
        self.conflicts = 0

    def call(self, what: str, function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Run one statevcs call, timed; count any error it raises by type (and re-raise)."""
        started = time.monotonic()
        try:
            return function(*args, **kwargs)
        except statevcs.StateVCSError as exc:
            landed = getattr(exc, "landed", "n/a") if isinstance(exc, statevcs.StoreError) else ""
            suffix = f"(landed={landed})" if landed != "" else ""
            kind = f"{what}: {type(exc).__name__}{suffix}"
            self.errors[kind] += 1
            self.samples.setdefault(kind, str(exc)[:2000])
            raise
        except Exception as exc:
            self.raw.append(f"{what}: {type(exc).__name__}: {str(exc)[:300]}")
            raise
        finally:
            self.longest = max(self.longest, time.monotonic() - started)


def write(url: str, branch: str, name: str, count: int, result: str, start: Any) -> None:
    """The writer process (see the module docstring)."""
    start.wait()
    run = _Run()
    acked: list[dict[str, Any]] = []
    repo: Repo | None = None
    try:
        while repo is None:
            try:
                repo = run.call("open", Repo.open, url)
            except statevcs.StoreError:
                continue
        for i in range(count):
            _one_turn(repo, run, branch, f"{name} {i}", acked)
    except Exception as exc:  # reported, not raised: the parent checks the file
        if not run.raw:
            run.raw.append(f"{type(exc).__name__}: {str(exc)[:300]}")
    finally:
        if repo is not None:
            repo.close()
        Path(result).write_text(
            json.dumps(
                {
                    "acked": acked,
                    "errors": dict(run.errors),
                    "samples": run.samples,
                    "raw": run.raw,
                    "longest": run.longest,
                    "commit_calls": run.commit_calls,
                    "commit_failures": run.commit_failures,
                    "conflicts": run.conflicts,
                }
            )
        )


def _one_turn(repo: Repo, run: _Run, branch: str, text: str, acked: list[dict[str, Any]]) -> None:
    """Append ``text`` to ``branch`` until a commit holding it is acknowledged."""
    while True:
        state: dict[str, Any] = {}
        try:
            run.call("checkout", repo.checkout, state, branch)
        except statevcs.StoreError:
            continue
        state["messages"].append({"role": "user", "content": text})
        texts = [m["content"] for m in state["messages"]]
        run.commit_calls += 1
        try:
            commit = run.call("commit", repo.commit, state, message=text, branch=branch)
        except statevcs.RefConflict:
            run.conflicts += 1
            continue
        except statevcs.StoreError as exc:
            run.commit_failures += 1
            if _landed(repo, run, exc, branch):
                acked.append({"id": exc.commit_id, "digest": messages_digest(texts)})
                return
            continue
        except statevcs.StateVCSError:
            run.commit_failures += 1
            continue
        acked.append({"id": commit.id, "digest": messages_digest(texts)})
        return


def _landed(repo: Repo, run: _Run, error: statevcs.StoreError, branch: str) -> bool:
    """Whether the commit ``error`` interrupted landed (asked until the store answers)."""
    landed = getattr(error, "landed", None)
    commit_id = getattr(error, "commit_id", None)
    if landed is not None or commit_id is None or not hasattr(repo, "has_landed"):
        return bool(landed) and commit_id is not None
    while True:
        try:
            return bool(run.call("has_landed", repo.has_landed, commit_id, branch=branch))
        except statevcs.StoreError:
            time.sleep(0.05)
