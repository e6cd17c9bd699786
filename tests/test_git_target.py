"""Where export_git may write: real git repositories made with the git CLI, and pushed remotes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import statevcs
from statevcs import GitMirrorError, StateVCSError
from statevcs.mirror.git import export_git, import_git

pytest.importorskip("dulwich")
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git CLI")


def run_git(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(cwd),
        "PATH": os.environ.get("PATH", ""),
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
    }
    return subprocess.run(
        ["git", *map(str, args)], cwd=cwd, capture_output=True, text=True, env=env, check=True
    )


def git_out(*args: str | Path, cwd: Path) -> str:
    return run_git(*args, cwd=cwd).stdout


@pytest.fixture
def history(tmp_path: Path) -> statevcs.Repo:
    repo = statevcs.Repo.init(tmp_path / "agent", author="agent <agent@example.com>")
    agent = {"messages": [{"role": "user", "content": "hello"}], "step": 1}
    repo.commit(agent, "first")
    agent["step"] = 2
    repo.commit(agent, "second")
    yield repo
    repo.close()


def make_project(path: Path) -> None:
    """A developer's own repository: one commit on main."""
    path.mkdir()
    run_git("init", "-q", "-b", "main", cwd=path)
    (path / "README.md").write_text("# my project\n")
    (path / "app.py").write_text("print('hello')\n")
    run_git("add", ".", cwd=path)
    run_git("commit", "-q", "-m", "my work", cwd=path)


def fingerprint(path: Path) -> tuple[str, dict[str, bytes], str, str]:
    """main's commit, every file outside .git, `git status --porcelain` and every ref."""
    files = {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(path).parts
    }
    return (
        git_out("rev-parse", "main", cwd=path),
        files,
        git_out("status", "--porcelain", "--untracked-files=all", cwd=path),
        git_out("for-each-ref", cwd=path),
    )


def test_export_refuses_a_projects_repository_with_local_edits(
    history: statevcs.Repo, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    make_project(project)
    (project / "app.py").write_text("print('edited, not committed')\n")
    (project / "scratch.txt").write_text("untracked notes\n")
    before = fingerprint(project)
    assert before[2]  # the working tree really is dirty

    with pytest.raises(GitMirrorError, match="not a statevcs mirror") as refused:
        export_git(history, project)
    assert "--force" in str(refused.value)
    assert fingerprint(project) == before
    # Even forced: local edits are never overwritten.
    with pytest.raises(GitMirrorError, match="local changes") as dirty:
        export_git(history, project, force=True)
    assert "app.py" in str(dirty.value)
    assert fingerprint(project) == before
    config = (project / ".git" / "config").read_text()
    assert "statevcs" not in config
    assert not (project / ".git" / "statevcs-map").exists()


def test_export_refuses_a_clean_projects_repository_unless_forced(
    history: statevcs.Repo, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    make_project(project)
    before = fingerprint(project)
    with pytest.raises(StateVCSError, match="not a statevcs mirror"):
        export_git(history, project)
    assert fingerprint(project) == before

    report = export_git(history, project, force=True)
    assert report.refs_updated.keys() == {"refs/heads/main"}
    assert git_out("log", "-1", "--format=%s", "main", cwd=project).strip() == "second"
    assert git_out("config", "--get", "statevcs.mirror", cwd=project).strip() == "true"
    # The old main is still in git's reflog, so the forced overwrite can be undone.
    assert "my work" in git_out("log", "-g", "--format=%s", "main", cwd=project)
    # Marked as a mirror now: the next export needs no force.
    export_git(history, project)


def test_export_refuses_a_bare_repository_with_history(
    history: statevcs.Repo, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    make_project(project)
    bare = tmp_path / "project.git"
    run_git("clone", "-q", "--bare", project, bare, cwd=tmp_path)
    before = git_out("for-each-ref", cwd=bare)
    with pytest.raises(GitMirrorError, match="not a statevcs mirror"):
        export_git(history, bare)
    assert git_out("for-each-ref", cwd=bare) == before


def test_new_mirrors_are_marked_and_empty_repositories_accepted(
    history: statevcs.Repo, tmp_path: Path
) -> None:
    export_git(history, tmp_path / "new")
    assert git_out("config", "--get", "statevcs.mirror", cwd=tmp_path / "new").strip() == "true"
    export_git(history, tmp_path / "new.git")
    assert git_out("config", "--get", "statevcs.mirror", cwd=tmp_path / "new.git") == "true\n"

    # `git init` with nothing in it (HEAD on master) is empty: exported into, HEAD on main.
    empty = tmp_path / "empty"
    empty.mkdir()
    run_git("init", "-q", "-b", "master", cwd=empty)
    report = export_git(history, empty)
    assert report.worktree_updated
    assert git_out("branch", "--show-current", cwd=empty).strip() == "main"
    assert git_out("status", "--porcelain", cwd=empty) == ""
    assert (empty / "state.json").is_file()

    # `git init` in a folder of files is not empty.
    with_files = tmp_path / "with_files"
    with_files.mkdir()
    run_git("init", "-q", cwd=with_files)
    (with_files / "notes.md").write_text("mine\n")
    with pytest.raises(GitMirrorError, match=r"not a statevcs mirror.*notes\.md"):
        export_git(history, with_files)
    assert (with_files / "notes.md").read_text() == "mine\n"


def test_unmarked_mirrors_and_clones_of_mirrors_are_still_mirrors(
    history: statevcs.Repo, tmp_path: Path
) -> None:
    # A mirror written before mirrors were marked: no config entry, but the id map is there.
    old = tmp_path / "old"
    export_git(history, old)
    run_git("config", "--unset", "statevcs.mirror", cwd=old)
    export_git(history, old)
    assert git_out("config", "--get", "statevcs.mirror", cwd=old).strip() == "true"
    # A clone carries neither the config nor the map; its statevcs.json files tell.
    clone = tmp_path / "clone"
    run_git("clone", "-q", old, clone, cwd=tmp_path)
    agent: dict[str, object] = {}
    history.checkout(agent, "main")
    agent["step"] = 3
    history.commit(agent, "third")
    report = export_git(history, clone)
    assert report.commits_exported == 1
    assert git_out("log", "-1", "--format=%s", cwd=clone).strip() == "third"


def test_pushed_bare_remote_clones_with_a_checked_out_branch(
    history: statevcs.Repo, tmp_path: Path
) -> None:
    remote = tmp_path / "remote.git"
    # A remote created as most servers do: HEAD names a branch the mirror does not have.
    run_git("init", "-q", "--bare", "-b", "master", remote, cwd=tmp_path)
    report = export_git(history, tmp_path / "mirror", push=str(remote))
    assert report.remote_head == "refs/heads/main"
    cloned = run_git("clone", remote, tmp_path / "clone", cwd=tmp_path)
    assert "warning" not in cloned.stderr.lower(), cloned.stderr
    assert git_out("branch", "--show-current", cwd=tmp_path / "clone").strip() == "main"
    assert (tmp_path / "clone" / "state.json").is_file()

    # A remote whose HEAD already names a pushed branch keeps it.
    run_git("symbolic-ref", "HEAD", "refs/heads/side", cwd=remote)
    history.branch("side")
    again = export_git(history, tmp_path / "mirror", push=remote.as_uri())
    assert again.remote_head is None
    assert git_out("symbolic-ref", "HEAD", cwd=remote).strip() == "refs/heads/side"


def test_import_refuses_an_ordinary_git_repository(history: statevcs.Repo, tmp_path: Path) -> None:
    project = tmp_path / "project"
    make_project(project)
    before = history.refs.as_hex()
    with pytest.raises(GitMirrorError, match=r"not a statevcs mirror.*export"):
        import_git(history, project)
    empty = tmp_path / "empty.git"
    run_git("init", "-q", "--bare", empty, cwd=tmp_path)
    with pytest.raises(GitMirrorError, match="not a statevcs mirror"):
        import_git(history, empty)
    assert history.refs.as_hex() == before
