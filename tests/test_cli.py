"""The ``statevcs`` command line (the statevcs.cli package), through click's CliRunner.

A few end-to-end runs start a real ``python -m statevcs`` (or the installed console script);
everything else runs in-process, which is much faster. ``invoke`` is shared with the other
``test_cli_*`` modules.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import statevcs
from statevcs.cli import cli, message_lines, to_plain

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "branching_demo.py"
# Variables that change what the command line does; every run starts without them.
_CLEAN_ENV: dict[str, str | None] = {
    "STATEVCS_REPO": None,
    "STATEVCS_SERIALIZER": None,
    "STATEVCS_PICKLE_KEY": None,
    "NO_COLOR": None,
    "FORCE_COLOR": None,
    "TTY_COMPATIBLE": None,
    "TTY_INTERACTIVE": None,
}


def invoke(
    *args: str | Path,
    cwd: Path | None = None,
    code: int | None = 0,
    env: Mapping[str, str | None] | None = None,
) -> Result:
    """Run ``statevcs ARGS`` in-process (in ``cwd``); check the exit status unless ``code=None``.

    The working directory is restored afterwards (``-C`` changes it, as in a real process).
    """
    environment = {**_CLEAN_ENV, **(env or {})}
    previous = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = CliRunner().invoke(
            cli, [str(a) for a in args], env=environment, prog_name="statevcs"
        )
    finally:
        os.chdir(previous)
    if code is not None:
        assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"statevcs {args} raised {result.exception!r}") from result.exception
    return result


def run(
    *args: str | Path,
    cwd: Path,
    code: int | None = 0,
    env: dict[str, str] | None = None,
    program: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m statevcs ARGS`` as a real process; check the exit status unless None."""
    environment = {k: v for k, v in os.environ.items() if k not in _CLEAN_ENV}
    environment.update(env or {})
    command = program or [sys.executable, "-m", "statevcs"]
    result = subprocess.run(
        [*command, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=environment,
        timeout=60,
    )
    if code is not None:
        assert result.returncode == code, (result.stdout, result.stderr)
    return result


def load_demo() -> Any:
    spec = importlib.util.spec_from_file_location("branching_demo", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example repository (read-only for the tests that use it)."""
    path = tmp_path_factory.mktemp("cli") / "demo-repo"
    load_demo().build(path).close()
    return path


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A writable copy of the example repository."""
    path = tmp_path / "demo-repo"
    load_demo().build(path).close()
    return path


# --- pure helpers -----------------------------------------------------------------------


def test_gc_grace_takes_the_core_durations(scratch: Path) -> None:
    for grace, seconds in (
        ("2w", 14 * 86_400),
        ("1w2d", 9 * 86_400),
        ("90m", 5400),
        ("3.5", 3.5),
        ("1.month", 30 * 86_400),
        ("2 weeks", 14 * 86_400),
        ("30min", 1800),
    ):
        result = invoke("gc", "--dry-run", "--grace", grace, "--json", cwd=scratch)
        assert json.loads(result.stdout)["grace_seconds"] == seconds, grace
    for bad in ("two weeks", "-5", "nan", "inf", "1000000w"):
        error = invoke("gc", "--dry-run", "--grace", bad, cwd=scratch, code=2).stderr
        assert error.startswith("error: ") and "is not a duration" in error, bad
        assert "--grace" in error and "Traceback" not in error


def test_gc_grace_1M_is_refused_not_read_as_a_minute(scratch: Path) -> None:
    error = " ".join(invoke("gc", "--dry-run", "--grace", "1M", cwd=scratch, code=2).stderr.split())
    assert "'1M' is ambiguous" in error and "1month or 1min" in error
    assert "month(s) (30 days)" in error and "--grace" in error


def test_message_rendering_covers_strands_and_plain_dicts() -> None:
    strands = {
        "role": "assistant",
        "content": [
            {"text": "Looking it up."},
            {"toolUse": {"toolUseId": "t1", "name": "search", "input": {"q": "lisbon"}}},
            {"toolResult": {"toolUseId": "t1", "status": "error", "content": [{"text": "boom"}]}},
            {"image": {"format": "png"}},
        ],
    }
    plain = [line.plain for line in message_lines(strands)]
    assert plain[0] == "Looking it up."
    assert plain[1] == '→ search({"q": "lisbon"})  [t1]'
    assert plain[2].startswith("← result error") and plain[3] == "  boom"
    assert plain[4].startswith("[image]")
    assert [line.plain for line in message_lines({"role": "user", "content": "hi"})] == ["hi"]
    openai = {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f"}}]}
    assert message_lines(openai)[0].plain.startswith("→ f(")


def test_multiline_text_is_indented_line_by_line() -> None:
    lines = [line.plain for line in message_lines({"role": "user", "content": "one\r\ntwo"})]
    assert lines == ["one", "two"]


def test_to_plain_handles_any_value() -> None:
    # The same markers as the git mirror: "nan" the string and NaN the float stay distinct.
    assert to_plain({"b": b"\x00", "f": float("nan"), "s": "nan", "set": {2, 1}}) == {
        "b": {"__bytes__": "AA=="},
        "f": {"__float__": "nan"},
        "s": "nan",
        "set": [1, 2],
    }
    assert to_plain({1: "one"}) == {"__map__": [[1, "one"]]}
    deep: object = "x"
    for _ in range(5000):
        deep = [deep]
    assert to_plain(deep) is not None  # no RecursionError


# --- reading ------------------------------------------------------------------------------


def test_log_graph_draws_three_branches_as_git_does(demo: Path) -> None:
    out = invoke("log", "--graph", cwd=demo).stdout
    lines = out.splitlines()
    assert lines[0].startswith("*   ") and "(HEAD -> main) Merge review into main" in lines[0]
    assert lines[1] == "|\\"
    assert lines[2].startswith("| * ") and "(review)" in lines[2]
    assert any(line.startswith("| * ") and "(budget)" in line for line in lines)
    assert lines.count("|/") == 2
    assert "(tag: draft-1)" in out
    assert "\x1b[" not in out  # no colors when piped


def test_log_formats(demo: Path) -> None:
    oneline = invoke("log", "--oneline", "--all", cwd=demo).stdout.splitlines()
    with statevcs.Repo.open(demo) as repo:
        assert len(oneline) == repo.stats().commits == 9
        head = repo.get_commit("main")
    assert invoke("log", "-n", "2", "--oneline", cwd=demo).stdout.count("\n") == 2
    assert invoke("log", "-2", "--oneline", cwd=demo).stdout.count("\n") == 2
    full = invoke("log", "-n", "1", cwd=demo).stdout
    assert full.startswith(f"commit {head.id} (HEAD -> main)")
    assert "Merge:" in full and "Author: trip-agent <agent@example.com>" in full
    first_parent = invoke("log", "--first-parent", "--oneline", cwd=demo).stdout
    assert "reviewer approves" not in first_parent
    data = json.loads(invoke("log", "--json", "budget", cwd=demo).stdout)
    assert data[0]["refs"] == ["budget"] and len(data) == 5
    assert data[0]["parents"] == [data[1]["id"]]


def test_show_renders_messages_and_state(demo: Path) -> None:
    out = invoke("show", "budget", cwd=demo).stdout
    assert "Messages (8)" in out
    assert "→ search_hotels(" in out and "← result success  [t2]" in out
    assert "budget_eur" in out and "800" in out
    only_state = invoke("show", "budget", "--state", cwd=demo).stdout
    assert "Messages" not in only_state and "budget_eur" in only_state
    data = json.loads(invoke("show", "main", "--json", cwd=demo).stdout)
    assert data["commit"]["refs"] == ["HEAD -> main"]
    assert data["snapshot"]["state"]["approved_by"] == "ana@example.com"
    assert data["snapshot"]["messages"][1]["content"][0]["toolUse"]["name"] == "search_flights"
    messages_only = json.loads(invoke("show", "main", "--messages", "--json", cwd=demo).stdout)
    assert "state" not in messages_only["snapshot"]


def test_diff_is_structural(demo: Path) -> None:
    out = invoke("diff", "draft-1", "budget", cwd=demo).stdout
    assert "messages: 4 → 8 (common prefix 4; +4 -0 ~0)" in out
    assert "+ [4] user: Can we do it for 800 EUR instead?" in out
    assert "~ budget_eur: 1200 → 800" in out
    assert '+ hotel = {"name": "Hostel Alfama Patio", "price_eur": 54}' in out
    data = json.loads(invoke("diff", "main", "budget", "--json", cwd=demo).stdout)
    changed = {c["key"]: c for c in data["state"]}
    assert changed["budget_eur"] == {
        "key": "budget_eur",
        "kind": "changed",
        "old": 1200,
        "new": 800,
    }
    assert changed["approved_by"]["kind"] == "removed"
    assert data["messages"]["common_prefix"] == 4
    invoke("diff", "main", "main", "--exit-code", cwd=demo)
    invoke("diff", "main", "budget", "--exit-code", cwd=demo, code=1)


def test_branch_tag_reflog_stats_listings(demo: Path) -> None:
    branches = invoke("branch", cwd=demo).stdout.splitlines()
    assert [b.split()[0] for b in branches] == ["budget", "*", "review"]
    assert json.loads(invoke("branch", "--json", cwd=demo).stdout)["head"] == "main"
    assert invoke("tag", cwd=demo).stdout.split()[0] == "draft-1"
    reflog = json.loads(invoke("reflog", "main", "--json", cwd=demo).stdout)
    assert reflog[0]["message"].startswith("merge review")
    assert "main@{0}: merge review" in invoke("reflog", "main", cwd=demo).stdout
    stats = json.loads(invoke("stats", "--json", cwd=demo).stdout)
    assert stats["commits"] == 9 and set(stats["branches"]) == {"main", "budget", "review"}
    assert "dedup ratio" in invoke("stats", cwd=demo).stdout


def test_colors_follow_the_options(demo: Path) -> None:
    colored = invoke("--color", "always", "log", "--oneline", cwd=demo).stdout
    assert "\x1b[" in colored
    plain = invoke("--color", "always", "log", "--oneline", cwd=demo, env={"NO_COLOR": "1"}).stdout
    assert "\x1b[3" not in plain  # NO_COLOR drops colors (bold may stay)


@pytest.fixture(scope="module")
def msgpack_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two commits whose state was written with msgpack (a datetime JSON cannot hold)."""
    path = tmp_path_factory.mktemp("msgpack") / "repo"
    with statevcs.Repo.init(path, serializer=statevcs.MsgpackSerializer()) as repo:
        agent: dict[str, Any] = {"messages": [], "when": datetime(2025, 1, 1, tzinfo=UTC)}
        repo.commit(agent, "first", timestamp=datetime(2025, 1, 1, tzinfo=UTC))
        agent["when"] = datetime(2025, 2, 1, tzinfo=UTC)
        repo.commit(agent, "second", timestamp=datetime(2025, 1, 2, tzinfo=UTC))
    return path


def test_serializer_auto_reads_msgpack_state(msgpack_repo: Path) -> None:
    shown = json.loads(invoke("show", "--json", cwd=msgpack_repo).stdout)
    assert shown["snapshot"]["state_codec"] == "msgpack"
    assert shown["snapshot"]["state"]["when"] == "2025-02-01T00:00:00+00:00"
    assert "codec msgpack" in invoke("show", cwd=msgpack_repo).stdout
    changed = json.loads(invoke("diff", "HEAD~1", "HEAD", "--json", cwd=msgpack_repo).stdout)
    assert [c["key"] for c in changed["state"]] == ["when"]


def test_a_serializer_that_cannot_read_the_state_gives_cli_advice(msgpack_repo: Path) -> None:
    error = invoke("--serializer", "json", "show", cwd=msgpack_repo, code=1).stderr
    assert error.startswith("error: ") and error.count("\n") == 1
    assert "`--serializer msgpack`" in error and "statevcs.MsgpackSerializer" not in error


# --- finding the repository ------------------------------------------------------------------


def test_repository_is_found_like_git(demo: Path, tmp_path: Path) -> None:
    nested = tmp_path / "work" / "deep"
    nested.mkdir(parents=True)
    invoke("init", tmp_path / "work", cwd=tmp_path)
    assert "branch main has no commits yet" in invoke("log", cwd=nested).stderr
    assert invoke("-C", demo, "log", "--oneline", "-n", "1", cwd=tmp_path).stdout
    assert invoke("--repo", demo, "log", "--oneline", "-n", "1", cwd=tmp_path).stdout
    via_env = invoke("log", "--oneline", "-n", "1", cwd=tmp_path, env={"STATEVCS_REPO": str(demo)})
    assert via_env.stdout
    hidden = tmp_path / "project"
    invoke("init", hidden / ".statevcs", cwd=tmp_path)
    (hidden / "src").mkdir()
    assert json.loads(invoke("log", "--json", cwd=hidden / "src").stdout) == []


def test_memory_url_opens_an_empty_repository(tmp_path: Path) -> None:
    assert json.loads(invoke("--repo", "memory://", "branch", "--json", cwd=tmp_path).stdout) == {
        "branches": {},
        "head": "main",
    }


# --- writing -------------------------------------------------------------------------------


def test_branch_tag_reset_merge_cycle(scratch: Path) -> None:
    invoke("branch", "exp", "main~2", cwd=scratch)
    assert "exp" in invoke("branch", cwd=scratch).stdout
    exists = invoke("branch", "exp", cwd=scratch, code=1)
    assert "`statevcs branch -f exp REV`" in exists.stderr
    invoke("branch", "-f", "exp", "draft-1", cwd=scratch)
    invoke("tag", "v1", "main", cwd=scratch)
    assert "v1" in invoke("tag", cwd=scratch).stdout
    invoke("tag", "-d", "v1", cwd=scratch)
    assert "Deleted branch exp" in invoke("branch", "-d", "exp", cwd=scratch).stdout

    conflict = invoke("merge", "main", "budget", cwd=scratch, code=1)
    assert "conversations diverged" in conflict.stderr and "'hotel'" in conflict.stderr
    assert "`--strategy theirs`" in conflict.stderr and "strategy='ours'" not in conflict.stderr
    before = invoke("log", "--json", "-n", "1", cwd=scratch).stdout
    assert json.loads(before)[0]["message"] == "Merge review into main"
    merged = json.loads(
        invoke("merge", "main", "budget", "--strategy", "theirs", "--json", cwd=scratch).stdout
    )
    assert merged["outcome"] == "merge"
    assert merged["commit"]["metadata"]["merge"]["resolved"]["messages"] == "theirs"
    state = json.loads(invoke("show", "main", "--state", "--json", cwd=scratch).stdout)
    assert state["snapshot"]["state"]["budget_eur"] == 800
    assert state["snapshot"]["state"]["approved_by"] == "ana@example.com"
    assert "Already up to date." in invoke("merge", "main", "budget", cwd=scratch).stdout
    assert "Fast-forward" in invoke("merge", "review", "main", cwd=scratch).stdout

    out = invoke("reset", "main", "main~1", cwd=scratch).stdout
    assert out.startswith("main is now at")
    assert "reset: moving to main~1" in invoke("reflog", "main", cwd=scratch).stdout


def test_gc_and_fsck(scratch: Path) -> None:
    invoke("reset", "budget", "draft-1", cwd=scratch)
    report = json.loads(invoke("gc", "--dry-run", "--grace", "0", "--json", cwd=scratch).stdout)
    assert report["dry_run"] and report["grace_seconds"] == 0
    assert "would delete" in invoke("gc", "--dry-run", cwd=scratch).stdout
    fsck = invoke("fsck", cwd=scratch)
    assert fsck.stdout == "" and fsck.stderr.startswith("ok: checked")
    assert json.loads(invoke("fsck", "--json", cwd=scratch).stdout)["ok"] is True
    # Damage one object: fsck lists each problem on its own line and exits 1.
    with sqlite3.connect(scratch / "statevcs.sqlite3") as db:
        db.execute("UPDATE objects SET data = X'00' WHERE rowid = (SELECT MIN(rowid) FROM objects)")
    damaged = invoke("fsck", cwd=scratch, code=1)
    problems = damaged.stdout.splitlines()
    assert problems and all("corrupt" in p or "missing" in p or "object" in p for p in problems)
    assert json.loads(invoke("fsck", "--json", cwd=scratch, code=1).stdout)["ok"] is False


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git CLI")
def test_export_and_import_git(scratch: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    out = invoke("export-git", tmp_path / "mirror", "--push", remote, cwd=scratch).stdout
    assert "exported 9 new commits" in out and f"pushed 4 refs to {remote}" in out
    log = subprocess.run(
        ["git", "-C", str(remote), "log", "--oneline", "--all"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert len(log.stdout.splitlines()) == 9
    again = json.loads(invoke("export-git", tmp_path / "mirror", "--json", cwd=scratch).stdout)
    assert (again["commits_exported"], again["objects_written"]) == (0, 0)
    invoke("init", tmp_path / "copy", cwd=tmp_path)
    imported = json.loads(
        invoke("-C", tmp_path / "copy", "import-git", remote, "--json", cwd=tmp_path).stdout
    )
    assert imported["commits_imported"] == 9
    original = invoke("log", "--graph", cwd=scratch).stdout
    assert invoke("log", "--graph", cwd=tmp_path / "copy").stdout == original
    only = invoke("export-git", tmp_path / "budget.git", "--branch", "budget", cwd=scratch).stdout
    assert "refs/heads/budget" in only and "refs/heads/main" not in only


def test_the_git_mirror_without_dulwich_says_what_to_install(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As without the git extra: dulwich cannot be imported.
    for name in list(sys.modules):
        if name.partition(".")[0] == "dulwich":
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "dulwich", None)
    for command in ("export-git", "import-git"):
        error = invoke(command, tmp_path / "mirror", cwd=demo, code=1).stderr
        assert error.startswith("error: ") and error.count("\n") == 1
        assert "dulwich" in error and "pip install 'statevcs[git]'" in error
    assert not (tmp_path / "mirror").exists()
    # Every other command works without the mirror.
    assert invoke("log", "--oneline", "-n", "1", cwd=demo).stdout.count("\n") == 1


# --- end to end: real processes ----------------------------------------------------------------


def test_python_dash_m_runs_the_command_line(demo: Path, tmp_path: Path) -> None:
    assert run("log", "--graph", cwd=demo).stdout == invoke("log", "--graph", cwd=demo).stdout
    missing = run("log", cwd=tmp_path, code=1)
    assert missing.stderr.startswith("error: not a statevcs repository")
    assert missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr


def test_broken_pipe_stops_quietly(demo: Path) -> None:
    reader = subprocess.Popen(
        [sys.executable, "-m", "statevcs", "log", "--all"],
        cwd=demo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.read(10)
    reader.stdout.close()
    reader.wait(timeout=60)
    assert b"Traceback" not in reader.stderr.read()


@pytest.mark.skipif(shutil.which("statevcs") is None, reason="statevcs is not installed on PATH")
def test_installed_entry_point(demo: Path) -> None:
    program = [shutil.which("statevcs") or "statevcs"]
    version = run("--version", cwd=demo, program=program).stdout
    assert version.strip() == f"statevcs, version {statevcs.__version__}"
    assert (
        run("log", "--graph", cwd=demo, program=program).stdout
        == invoke("log", "--graph", cwd=demo).stdout
    )
    assert "Usage: statevcs" in run("--help", cwd=demo, program=program).stdout


def test_example_script_runs(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(DEMO), str(tmp_path / "r")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"created {tmp_path / 'r'} with branches budget, main, review"
