"""One statevcs commit gives one git commit, whichever process exports it (a differential check
against the git CLI: `git rev-list --all` of mirrors written by separate processes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dulwich")
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git CLI")

# Builds a history whose metadata dicts are not in sorted key order (and merges, whose metadata
# statevcs builds unsorted), then exports it from the same, warm process.
BUILD = """
import sys
from datetime import datetime, timedelta, timezone

import statevcs
from statevcs.mirror.git import export_git

path, target = sys.argv[1], sys.argv[2]
clock = [datetime(2025, 1, 1, tzinfo=timezone.utc)]


def tick():
    clock[0] += timedelta(seconds=61, microseconds=7)
    return clock[0]


repo = statevcs.Repo.init(path, author="agent <agent@example.com>")
agent = {"messages": [{"role": "user", "content": "plan a trip", "z": 1, "a": 2}], "zz": 1, "aa": 2}
meta = {"zeta": 1, "alpha": {"yy": [{"q": 1, "c": 2}], "bb": None}, "mid": "x", "ünï": True}
repo.commit(agent, "start", metadata=meta, timestamp=tick())
for n in range(3):
    reply = {"role": "assistant", "content": f"step {n}", "tool": {"z": n, "a": 0}}
    agent["messages"].append(reply)
    repo.commit(agent, f"step {n}", metadata={"z": n, "b": {"y": 1, "a": 2}}, timestamp=tick())
repo.branch("side", "main~1")
repo.checkout(agent, "side")
agent["side"] = {"k": 1, "b": 2}
repo.commit(agent, "side work", metadata={"source": "side", "base": "x"}, timestamp=tick())
repo.checkout(agent, "main")
repo.merge("main", "side", strategy="ours", timestamp=tick())
repo.checkout(agent, "main")
agent["after"] = 1
repo.commit(agent, "after the merge", timestamp=tick())
repo.tag("v1")
export_git(repo, target)
repo.close()
"""

EXPORT = """
import sys

import statevcs
from statevcs.mirror.git import export_git

with statevcs.Repo.open(sys.argv[1]) as repo:
    export_git(repo, sys.argv[2])
"""


def python(code: str, *args: Path) -> None:
    # A fresh interpreter: nothing cached from this process or from the one that built it.
    subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], cwd=args[0].parent, check=True, timeout=120
    )


def rev_list(mirror: Path) -> list[str]:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(mirror), "PATH": os.environ.get("PATH", "")}
    out = subprocess.run(
        ["git", "rev-list", "--all", "--topo-order"],
        cwd=mirror,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    return out.split()


def test_exports_from_two_processes_give_identical_git_commits(tmp_path: Path) -> None:
    repo, warm, cold = tmp_path / "repo", tmp_path / "warm.git", tmp_path / "cold.git"
    python(BUILD, repo, warm)
    python(EXPORT, repo, cold)

    warm_ids, cold_ids = rev_list(warm), rev_list(cold)
    assert len(warm_ids) == 7
    assert warm_ids == cold_ids


def test_statevcs_json_is_canonical(tmp_path: Path) -> None:
    repo, mirror = tmp_path / "repo", tmp_path / "mirror.git"
    python(BUILD, repo, mirror)
    from dulwich.repo import Repo as GitRepo

    with GitRepo(str(mirror)) as git_repo:
        first = git_repo[git_repo.refs[b"refs/tags/v1"]]
        while first.parents:
            first = git_repo[first.parents[0]]
        tree = git_repo[first.tree]
        raw = git_repo[tree[b"statevcs.json"][1]].data
        messages = git_repo[tree[b"messages"][1]]
        folder = git_repo[messages[b"0000"][1]]
        message = git_repo[folder[b"000000-user.json"][1]].data
    info = json.loads(raw)
    # Sorted keys, two-space indent, UTF-8 text: the one encoding of this value.
    expected = json.dumps(
        info, indent=2, separators=(",", ": "), ensure_ascii=False, sort_keys=True
    )
    assert raw == (expected + "\n").encode()
    assert list(info["metadata"]) == ["alpha", "mid", "zeta", "ünï"]
    assert info["metadata"]["alpha"] == {"bb": None, "yy": [{"c": 2, "q": 1}]}
    # Documents keep the stored key order, which is part of their content.
    assert list(json.loads(message)) == ["role", "content", "z", "a"]
