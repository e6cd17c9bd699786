"""The mirror's layout: format 2 (messages in folders of a hundred, numbered from 0), reading
format 1 mirrors written before it, the cost of an append, progress, and the mirror's HEAD."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import statevcs
from statevcs import GitMirrorError
from statevcs.merge import same
from statevcs.mirror.git import MIRROR_FORMAT, export_git, import_git

pytest.importorskip("dulwich")
from dulwich.objects import Tree
from dulwich.repo import Repo as GitRepo

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git CLI")
FORMAT_1 = Path(__file__).parent / "data" / "git_mirror_format1.tar.gz"
"""A bare mirror written by the format 1 exporter from :func:`format_1_history`."""
FORMAT_1_REFS = {
    "refs/heads/main": "c12ad0e680c6e28730c1baefe3774c77f4ffce3781a1d229dfa275179e89b7e0",
    "refs/heads/side": "c725fdd5e71d51f8dd4e0becac97166698f8784537401b74ec56010abdb16395",
    "refs/tags/v1": "ea928b1dccb4e924a324050026c04e3049b72767044495bb5a98856d902aed40",
}


def git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(cwd),
        "PATH": os.environ.get("PATH", ""),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    result = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return result.stdout


def format_1_history(repo: statevcs.Repo) -> None:
    """The history the format 1 fixture holds: appends, a rewrite, a truncation, a merge."""
    moment = datetime(2025, 1, 1, 12, tzinfo=UTC)

    def clock() -> datetime:
        nonlocal moment
        moment += timedelta(seconds=61, microseconds=7)
        return moment

    agent: dict[str, Any] = {"messages": [], "counter": 0, "system_prompt": "be brief"}
    for n in range(12):
        role = "user" if n % 2 == 0 else "assistant"
        agent["messages"].append(
            {"role": role, "content": [{"text": f"turn {n}"}], "raw": b"\x00\xff" * n}
        )
        agent["counter"] = n
        repo.commit(agent, f"turn {n}", metadata={"n": n}, timestamp=clock())
    repo.tag("v1")
    repo.branch("side", "main~3")
    repo.checkout(agent, "side")
    agent["messages"][-1] = {"role": "tool", "content": "rewritten", 7: {"int": "keys"}}
    agent["messages"].append({"role": "Odd Role!", "content": [{"text": "nan"}], "x": float("nan")})
    agent["side_only"] = [1.5, None, True]
    repo.commit(agent, "side work", author="Ada Lovelace <ada@example.com>", timestamp=clock())
    repo.checkout(agent, "main")
    agent["messages"] = agent["messages"][:2]
    repo.commit(agent, "truncate", timestamp=clock())
    repo.merge("main", "side", strategy="ours", timestamp=clock())


def unpack_format_1(tmp_path: Path) -> Path:
    with tarfile.open(FORMAT_1) as archive:
        archive.extractall(tmp_path, filter="data")
    return tmp_path / "mirror.git"


def info_at(git_repo: GitRepo, sha: bytes) -> dict[str, Any]:
    tree = git_repo[git_repo[sha].tree]
    assert isinstance(tree, Tree)
    loaded: dict[str, Any] = json.loads(git_repo[tree[b"statevcs.json"][1]].data)
    return loaded


def test_the_format_1_fixture_is_what_its_history_exports_to(tmp_path: Path) -> None:
    with statevcs.Repo.init("memory://", storage_format=1) as repo:
        format_1_history(repo)
        assert repo.refs.as_hex() == FORMAT_1_REFS
    with GitRepo(str(unpack_format_1(tmp_path))) as git_repo:
        tip = git_repo.refs[b"refs/heads/main"]
        assert info_at(git_repo, tip)["format"] == 1
        top = git_repo[git_repo[tip].tree]
        assert isinstance(top, Tree)
        flat = git_repo[top[b"messages"][1]]
        assert isinstance(flat, Tree)
        assert sorted(flat) == [b"000001-user.json", b"000002-assistant.json"]


def test_a_format_1_mirror_imports_with_identical_ids(tmp_path: Path) -> None:
    mirror = unpack_format_1(tmp_path)
    with statevcs.Repo.init("memory://", storage_format=1) as original:
        format_1_history(original)
        with statevcs.Repo.init("memory://") as copy:
            report = import_git(copy, mirror)
            assert report.commits_imported == 15
            assert copy.refs.as_hex() == FORMAT_1_REFS
            for name in ("main", "side", "v1", "main~2", "side~1"):
                mine, theirs = copy.show(name), original.show(name)
                for part in ("messages", "state", "extras"):
                    assert same(getattr(mine, part), getattr(theirs, part))


@needs_git
def test_exporting_onto_a_format_1_mirror_writes_format_2_and_imports_both(
    tmp_path: Path,
) -> None:
    mirror = unpack_format_1(tmp_path)
    with statevcs.Repo.init(tmp_path / "repo", storage_format=1) as repo:
        format_1_history(repo)
        agent: dict[str, Any] = {}
        repo.checkout(agent, "main")
        agent["messages"].append({"role": "user", "content": "after the upgrade"})
        repo.commit(agent, "format 2 on top")
        report = export_git(repo, mirror)
        assert report.commits_exported == 1
        git(mirror, "fsck", "--strict")
        with GitRepo(str(mirror)) as git_repo:
            tip = git_repo.refs[b"refs/heads/main"]
            assert info_at(git_repo, tip)["format"] == MIRROR_FORMAT == 2
            assert info_at(git_repo, git_repo[tip].parents[0])["format"] == 1
        assert git(mirror, "ls-tree", "-r", "--name-only", "main", "messages/").split() == [
            "messages/0000/000000-user.json",
            "messages/0000/000001-assistant.json",
            "messages/0000/000002-user.json",
        ]
        with statevcs.Repo.init("memory://") as copy:
            import_git(copy, mirror)
            assert copy.refs.as_hex() == repo.refs.as_hex()


def test_a_format_1_mirror_with_a_gap_is_refused(tmp_path: Path) -> None:
    mirror = unpack_format_1(tmp_path)
    with GitRepo(str(mirror)) as git_repo:
        tip = git_repo[git_repo.refs[b"refs/heads/main"]]
        top = git_repo[tip.tree]
        flat = git_repo[top[b"messages"][1]]
        assert isinstance(top, Tree) and isinstance(flat, Tree)
        gap = Tree()
        gap.add(b"000001-user.json", *flat[b"000001-user.json"])
        gap.add(b"000003-assistant.json", *flat[b"000002-assistant.json"])
        top[b"messages"] = (0o040000, gap.id)
        tip.tree = top.id
        for obj in (gap, top, tip):
            git_repo.object_store.add_object(obj)
        git_repo.refs[b"refs/heads/main"] = tip.id
    with statevcs.Repo.init("memory://") as copy:
        with pytest.raises(GitMirrorError, match="numbered 1 to 2 without gaps"):
            import_git(copy, mirror)
        assert copy.refs.as_dict() == {}


def long_history(repo: statevcs.Repo) -> dict[str, Any]:
    """250 messages over 60 commits, a rewrite in the first folder, a truncation, a branch."""
    agent: dict[str, Any] = {"messages": [], "step": 0}
    for step in range(60):
        for _ in range(1 + step % 7):
            index = len(agent["messages"])
            agent["messages"].append({"role": ("user", "assistant")[index % 2], "n": index})
        agent["step"] = step
        repo.commit(agent, f"step {step}")
    repo.branch("rewritten", "main~5")
    agent["messages"][50] = {"role": "user", "n": "edited"}
    repo.commit(agent, "edit message 50")
    agent["messages"] = agent["messages"][:120]
    repo.commit(agent, "truncate to 120")
    return agent


@needs_git
def test_format_2_layout_round_trips_and_git_reads_it(tmp_path: Path) -> None:
    with statevcs.Repo.init(tmp_path / "repo") as repo:
        agent = long_history(repo)
        total = len(repo.show("main~2").messages)
        assert total > 200
        export_git(repo, tmp_path / "mirror.git")
        mirror = tmp_path / "mirror.git"
        git(mirror, "fsck", "--strict")
        names = git(mirror, "ls-tree", "-r", "--name-only", "main~2", "messages/").split()
        assert names == [
            f"messages/{i // 100:04d}/{i:06d}-{('user', 'assistant')[i % 2]}.json"
            for i in range(total)
        ]
        assert len(git(mirror, "ls-tree", "main~2", "messages/").splitlines()) == 3
        edited = git(mirror, "show", "main~1:messages/0000/000050-user.json")
        assert json.loads(edited) == {"role": "user", "n": "edited"}
        assert len(agent["messages"]) == 120
        with statevcs.Repo.init("memory://") as copy:
            import_git(copy, mirror)
            assert copy.refs.as_hex() == repo.refs.as_hex()


def test_incremental_and_whole_exports_write_the_same_commits(tmp_path: Path) -> None:
    """An export diffs each conversation against its parent's; one that starts cold (from a
    mirror written by an earlier export) must build the very same trees."""
    with statevcs.Repo.init(tmp_path / "repo") as repo:
        long_history(repo)
        whole = export_git(repo, tmp_path / "whole.git")
        steps = tmp_path / "steps.git"
        for back in (40, 20, 7, 1, 0):
            repo.branch("upto", f"main~{back}", force=True)
            export_git(repo, steps, branch="upto")
        export_git(repo, steps)
    with GitRepo(str(tmp_path / "whole.git")) as a, GitRepo(str(steps)) as b:
        for name, sha in whole.refs_updated.items():
            assert a.refs[name.encode()] == b.refs[name.encode()] == sha.encode()


def test_an_append_writes_the_same_few_objects_however_long_the_conversation(
    tmp_path: Path,
) -> None:
    """Linear export: one more message rewrites its folder and the folder list, not a tree
    naming every message."""
    written: dict[int, tuple[int, int]] = {}
    with statevcs.Repo.init(tmp_path / "repo") as repo:
        agent: dict[str, Any] = {"messages": []}
        mirror = tmp_path / "mirror.git"
        for length in (10, 410):  # both append to a folder holding 10 messages
            while len(agent["messages"]) < length:
                agent["messages"].append({"role": "user", "n": len(agent["messages"])})
            repo.commit(agent, f"{length} messages")
            export_git(repo, mirror)
            agent["messages"].append({"role": "assistant", "n": length})
            repo.commit(agent, "one more")
            before = _pack_bytes(mirror)
            report = export_git(repo, mirror)
            written[length] = (report.objects_written, _pack_bytes(mirror) - before)
    # commit, root tree, messages/, one folder, the message, statevcs.json (state unchanged)
    assert written[10][0] == written[410][0] == 6
    # The longer conversation adds only the folder list's four entries, not 400 file names.
    assert written[410][1] - written[10][1] < 400


def _pack_bytes(mirror: Path) -> int:
    return sum(p.stat().st_size for p in (mirror / "objects" / "pack").glob("*.pack"))


def test_progress_is_reported_per_commit(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    with statevcs.Repo.init(tmp_path / "repo") as repo:
        for n in range(3):
            repo.commit({"messages": [{"role": "user", "n": n}]}, f"c{n}")
        export_git(repo, tmp_path / "m.git", progress=lambda *step: seen.append(step))
        assert seen == [("exporting", 1, 3), ("exporting", 2, 3), ("exporting", 3, 3)]
        seen.clear()
        with statevcs.Repo.init("memory://") as copy:
            import_git(copy, tmp_path / "m.git", progress=lambda *step: seen.append(step))
        assert seen == [
            *(("reading", n, 3) for n in (1, 2, 3)),
            *(("importing", n, 3) for n in (1, 2, 3)),
        ]
        with pytest.raises(TypeError, match="progress"):
            export_git(repo, tmp_path / "other.git", progress="bar")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="progress"):
            import_git(repo, tmp_path / "m.git", progress=1)  # type: ignore[arg-type]


@needs_git
def test_the_mirrors_head_is_the_default_branch_not_the_handles(tmp_path: Path) -> None:
    """A clone's HEAD is the remote's default branch, whichever branch one handle is on."""
    with statevcs.Repo.init(tmp_path / "repo") as repo:
        repo.commit({"messages": [], "n": 1}, "on main")
        repo.branch("x")
        agent: dict[str, Any] = {}
        repo.checkout(agent, "x")
        agent["n"] = 2
        repo.commit(agent, "on x")
        assert repo.head_branch == "x" and repo.default_branch == "main"
        remote = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", str(remote))
        export_git(repo, tmp_path / "mirror", push=str(remote))
        export_git(repo, tmp_path / "bare.git")
    assert git(tmp_path / "mirror", "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(tmp_path / "mirror", "log", "-1", "--format=%s").strip() == "on main"
    assert git(tmp_path / "bare.git", "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(remote, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    git(tmp_path, "clone", "-q", str(remote), "clone")
    assert git(tmp_path / "clone", "branch", "--show-current").strip() == "main"


def _run_cli_with_terminal_stderr(*args: str) -> tuple[bytes, str]:
    """Run the CLI with stderr on a pseudo-terminal; return (what the terminal got, stdout)."""
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "statevcs", *args], stdout=subprocess.PIPE, stderr=slave, env=env
    )
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the terminal closes when the process exits (EIO on Linux)
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    return b"".join(chunks), out.decode()


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_the_cli_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    with statevcs.Repo.init(repo_dir) as repo:
        for n in range(12):
            repo.commit({"messages": [{"role": "user", "n": i} for i in range(n)]}, f"c{n}")
    terminal, out = _run_cli_with_terminal_stderr(
        "-C", str(repo_dir), "export-git", str(tmp_path / "m.git")
    )
    assert b"exporting commits" in terminal and b"12/12" in terminal
    assert out.startswith("exported 12 new commits")
    copy = tmp_path / "copy"
    statevcs.Repo.init(copy).close()
    terminal, out = _run_cli_with_terminal_stderr(
        "-C", str(copy), "import-git", str(tmp_path / "m.git")
    )
    assert b"importing commits" in terminal and b"12/12" in terminal
    assert out.startswith("imported 12 commits")
    piped = subprocess.run(
        [sys.executable, "-m", "statevcs", "-C", str(repo_dir), "export-git", str(tmp_path / "p")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert piped.stderr == ""
    assert piped.stdout.startswith("exported 12 new commits")


@needs_git
def test_a_mirror_repacked_by_git_gc_exports_onto_and_imports(tmp_path: Path) -> None:
    """After ``git gc --aggressive`` objects are deltas in git's own pack: an incremental
    export finds what it has, and an import reads through the deltas."""
    mirror = tmp_path / "mirror.git"
    with statevcs.Repo.init(tmp_path / "repo") as repo:
        agent = long_history(repo)
        export_git(repo, mirror)
        git(mirror, "gc", "-q", "--aggressive")
        agent["messages"].append({"role": "user", "n": "after gc"})
        repo.commit(agent, "after gc")
        report = export_git(repo, mirror)
        assert report.commits_exported == 1
        assert report.objects_written == 6  # the unchanged state.json is found in git's pack
        git(mirror, "fsck", "--strict")
        with statevcs.Repo.init("memory://") as copy:
            import_git(copy, mirror)
            assert copy.refs.as_hex() == repo.refs.as_hex()
