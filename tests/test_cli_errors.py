"""Command-line errors, empty branches and `switch` (issue 8, sections 2 and 7).

Errors are one ``error: ...`` line on stderr with command-line advice (never Python's), exit
status 1, or 2 for a command used wrongly, and never a traceback. Every command says the same
thing about an empty branch, and `log` on one lists the branches that have commits.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_cli import invoke

import statevcs
from statevcs.durations import DURATION_HELP
from statevcs.repo import Repo

T0 = datetime(2025, 1, 1, tzinfo=UTC)
PYTHON_ADVICE = re.compile(r"Repo\.(open|init)\(|repo\.\w+\(|force=True|create=True")


def commits(path: Path, branch: str, count: int) -> None:
    """Commit ``count`` turns of a plain-dict agent to ``branch`` of the repository at ``path``."""
    with Repo.open(path) as repo:
        agent: dict[str, Any] = {"messages": []}
        for n in range(count):
            agent["messages"].append({"role": "user", "content": f"turn {n}"})
            repo.commit(agent, f"turn {n}", branch=branch, timestamp=T0 + timedelta(minutes=n))


def one_error_line(stderr: str) -> str:
    assert stderr.startswith("error: ") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    assert PYTHON_ADVICE.search(stderr) is None, stderr
    return stderr


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    invoke("init", tmp_path / "repo")
    return tmp_path / "repo"


# --- errors speak the command line's language ------------------------------------------------


def test_init_on_an_existing_repository_gives_cli_advice(empty: Path) -> None:
    error = one_error_line(invoke("init", empty, code=1).stderr)
    assert "already exists" in error and f"`statevcs -C {empty} log`" in error


def test_opening_a_missing_repository_suggests_statevcs_init(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    error = one_error_line(invoke("--repo", missing, "log", code=1).stderr)
    assert f"`statevcs init {missing}`" in error
    found = one_error_line(invoke("log", cwd=tmp_path, code=1).stderr)
    assert found.startswith("error: not a statevcs repository") and "`statevcs init`" in found


def test_init_refuses_memory_and_unknown_urls(tmp_path: Path) -> None:
    error = one_error_line(invoke("init", "memory://", cwd=tmp_path, code=1).stderr)
    assert "--repo memory://" in error
    error = one_error_line(invoke("init", "gs://bucket/x", cwd=tmp_path, code=1).stderr)
    assert "unsupported repository URL scheme" in error
    assert list(tmp_path.iterdir()) == []


def test_init_creates_a_repository_at_an_s3_url(tmp_path: Path, s3_url: str) -> None:
    typed = urllib.parse.unquote(s3_url)  # endpoint_url=http://host:port&region=...
    created = invoke("init", typed, cwd=tmp_path).stdout
    # Shown as typed (not re-encoded), so that it can be pasted back.
    assert created == f"Initialized empty statevcs repository in {typed}\n"
    with statevcs.Repo.open(s3_url) as repo:
        assert repo.head_branch == "main" and list(repo.log()) == []
    again = one_error_line(invoke("init", typed, cwd=tmp_path, code=1).stderr)
    # Quoted: pasted into a shell, the '&' before region= must not background the command.
    assert "already exists" in again and f"`statevcs -C '{typed}' log`" in again
    assert invoke("-C", typed, "log", cwd=tmp_path).exit_code == 0
    assert list(tmp_path.iterdir()) == []


def test_ref_errors_name_cli_commands(empty: Path) -> None:
    commits(empty, "main", 2)
    no_branch = one_error_line(invoke("branch", "-d", "nope", cwd=empty, code=1).stderr)
    assert "`statevcs branch`" in no_branch
    no_tag = one_error_line(invoke("tag", "-d", "nope", cwd=empty, code=1).stderr)
    assert "`statevcs tag`" in no_tag
    no_reset = one_error_line(invoke("reset", "nope", "main", cwd=empty, code=1).stderr)
    assert "`statevcs branch nope main`" in no_reset
    invoke("tag", "v1", cwd=empty)
    moved = one_error_line(invoke("tag", "v1", cwd=empty, code=1).stderr)
    assert "`statevcs tag -f v1 REV`" in moved
    current = one_error_line(invoke("branch", "-d", "main", cwd=empty, code=1).stderr)
    assert "`statevcs switch OTHER`" in current


def test_walking_past_the_first_commit_says_where_history_ends(empty: Path) -> None:
    commits(empty, "main", 3)
    error = one_error_line(invoke("show", "HEAD~5", cwd=empty, code=1).stderr)
    assert "only 0" not in error and "has only" not in error
    assert "HEAD~2" in error and "first commit" in error
    parents = one_error_line(invoke("show", "main^2", cwd=empty, code=1).stderr)
    assert "main (" in parents and "has 1 parent, so main^2 does not exist" in parents
    root = one_error_line(invoke("log", "main~2~1", cwd=empty, code=1).stderr)
    assert "main~2 (" in root


def test_usage_errors_exit_2_in_the_same_style(empty: Path) -> None:
    for args in (["log", "--bogus"], ["show", "HEAD", "extra"], ["gc", "--grace", "soon"]):
        result = invoke(*args, cwd=empty, code=2)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
        assert f"(see `statevcs {args[0]} --help`)" in result.stderr
    grace = " ".join(invoke("gc", "--grace", "soon", cwd=empty, code=2).stderr.split())
    assert "'soon' is not a duration" in grace and " ".join(DURATION_HELP.split()) in grace
    assert invoke("--colour", "never", "log", cwd=empty, code=2).stderr.startswith("error: ")


def test_library_failures_never_show_a_traceback(
    empty: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise TypeError("stats() got a value of the wrong type")

    monkeypatch.setattr(Repo, "stats", broken)
    error = one_error_line(invoke("stats", cwd=empty, code=1).stderr)
    assert "wrong type" in error
    debug = invoke("--debug", "stats", cwd=empty, code=1).stderr
    assert "Traceback" in debug and debug.rstrip().endswith("wrong type")


def test_unexpected_failures_are_reported_as_internal_errors(
    empty: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(Repo, "fsck", broken)
    error = one_error_line(invoke("fsck", cwd=empty, code=1).stderr)
    assert "internal error (KeyError" in error and "--debug" in error


# --- help ----------------------------------------------------------------------------------------


def test_help_shows_the_revision_syntax() -> None:
    text = invoke("--help").stdout
    for form in ("HEAD", "NAME", "4 hex digits", "REV~N", "REV^N", "NAME@{N}", "@{N}"):
        assert form in text, form
    assert "main~2^2" in text  # the block is shown verbatim, not rewrapped
    for command in ("log", "show", "diff", "branch", "tag", "reset", "merge", "switch"):
        assert "~N" in invoke(command, "--help").stdout, command


def test_gc_help_shows_the_duration_format() -> None:
    # The one description of durations, shared with the library's gc(grace="...").
    text = " ".join(invoke("gc", "--help").stdout.split())
    assert " ".join(DURATION_HELP.split()) in text
    for form in ("2w", "1w2d", "seconds", "0/now"):
        assert form in text, form


# --- empty branches ------------------------------------------------------------------------------


def test_an_empty_repository_gets_one_message_everywhere(empty: Path) -> None:
    said = invoke("log", cwd=empty).stderr.strip()
    assert said.startswith("branch main has no commits yet")
    for args in (
        ["show"],
        ["show", "main~1"],
        ["log", "main"],
        ["diff", "HEAD~1"],
        ["branch", "x"],
        ["tag", "v1"],
        ["reset", "main", "HEAD"],
    ):
        error = one_error_line(invoke(*args, cwd=empty, code=1).stderr)
        assert error.strip() == f"error: {said}", args
    unknown = one_error_line(invoke("merge", "main", "x", cwd=empty, code=1).stderr)
    assert unknown.strip() == f"error: unknown revision 'x': {said}"
    assert json.loads(invoke("log", "--json", cwd=empty).stdout) == []


def test_log_on_an_empty_branch_lists_the_branches_with_commits(empty: Path) -> None:
    commits(empty, "session-42", 8)
    commits(empty, "older", 1)
    result = invoke("log", cwd=empty)
    assert result.stdout == ""
    said = " ".join(result.stderr.split())
    assert said == (
        "branch main has no commits yet; these branches have commits: session-42 (8 commits), "
        "older (1 commit); try `statevcs log session-42` or `statevcs switch session-42`"
    )
    assert one_error_line(invoke("show", cwd=empty, code=1).stderr).strip() == f"error: {said}"
    assert "turn 7" in invoke("log", "--graph", cwd=empty).stdout  # all branches: no notice


# --- switch --------------------------------------------------------------------------------------


def test_switch_moves_the_branch_log_and_new_handles_start_from(empty: Path) -> None:
    commits(empty, "session-42", 3)
    assert invoke("switch", "session-42", cwd=empty).stdout == "Switched to branch session-42\n"
    assert invoke("log", "--oneline", cwd=empty).stdout.count("\n") == 3
    assert json.loads(invoke("branch", "--json", cwd=empty).stdout)["head"] == "session-42"
    with Repo.open(empty) as repo:
        assert repo.head_branch == "session-42"
        assert "switch" in repo.reflog("HEAD")[0].message
    missing = one_error_line(invoke("switch", "nope", cwd=empty, code=1).stderr)
    assert "`statevcs switch -c nope [START]`" in missing


def test_switch_c_creates_the_branch_first(empty: Path) -> None:
    commits(empty, "main", 3)
    created = json.loads(invoke("switch", "-c", "exp", "main~1", "--json", cwd=empty).stdout)
    assert created["branch"] == "exp" and created["created"] is True
    with statevcs.Repo.open(empty) as repo:
        assert repo.head_branch == "exp"
        assert repo.branches()["exp"] == repo.resolve("main~1")
    invoke("switch", "-c", "here", cwd=empty)
    assert json.loads(invoke("branch", "--json", cwd=empty).stdout)["head"] == "here"
    again = one_error_line(invoke("switch", "-c", "exp", cwd=empty, code=1).stderr)
    assert "`statevcs switch exp`" in again
    assert invoke("switch", "exp", "main", cwd=empty, code=2).stderr.startswith("error: ")


def test_library_warnings_print_as_one_warning_line(empty: Path) -> None:
    commits(empty, "main", 2)
    invoke("tag", "main", "main~1", cwd=empty)
    result = invoke("show", "main", cwd=empty)
    assert result.stderr.count("warning: refname 'main' is ambiguous") == 1
    assert "AmbiguousRefWarning" not in result.stderr and ".py:" not in result.stderr


def test_init_durability_is_stored_and_used_by_later_handles(tmp_path: Path) -> None:
    result = invoke("init", tmp_path / "durable", "--durability", "full", "--json")
    assert json.loads(result.stdout)["durability"] == "full"
    with Repo.open(tmp_path / "durable") as repo:
        assert repo.config.get("core.durability") == "full"
        assert repo.store.durability == "full"  # type: ignore[attr-defined]
