"""The command line as a newcomer meets it (issue 20): start-up, the pager, gc, git's habits.

The pager tests run ``python -m statevcs`` on a pseudo-terminal (the pty module) with a fake
pager script that records what it was given; everything else runs in-process.
"""

from __future__ import annotations

import ast
import json
import math
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from test_cli import _CLEAN_ENV, invoke, run

import statevcs
from statevcs.cli.pager import pager_command
from statevcs.cli.safety import suggest
from statevcs.durations import InvalidDuration, parse_age
from statevcs.mirror.git import import_git
from statevcs.repo import Repo
from statevcs.stores.sqlite import DB_FILENAME

DOCS = Path(__file__).resolve().parent.parent / "docs"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

FAKE_PAGER = """\
import os, sys
out, limit = sys.argv[1], int(sys.argv[2])
data = sys.stdin.buffer.read(limit) if limit else sys.stdin.buffer.read()
with open(out, "wb") as f:
    f.write(data)
with open(out + ".env", "w") as f:
    f.write(os.environ.get("LESS", "<unset>"))
print("[fake pager read", len(data), "bytes]", flush=True)
"""


def state_of(turns: int, size: int = 20) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n} " + "x" * size}
            for n in range(turns)
        ],
        "turn": turns,
    }


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """Three commits on main and a branch."""
    path = tmp_path / "small"
    with Repo.init(path) as repo:
        for n in range(1, 4):
            repo.commit(state_of(n * 2), f"turn {n}")
        repo.branch("feature")
    return path


def on_terminal(
    args: list[str], cwd: Path, env: Mapping[str, str], timeout: float = 60
) -> tuple[int, str]:
    """Run ``python -m statevcs ARGS`` with stdin, stdout and stderr on a pseudo-terminal."""
    environment = {k: v for k, v in os.environ.items() if k not in _CLEAN_ENV}
    environment.update({"TERM": "xterm", "COLUMNS": "100", "LINES": "40"})
    environment.update(env)
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child process
        try:
            os.chdir(cwd)
            os.execve(sys.executable, [sys.executable, "-m", "statevcs", *args], environment)
        finally:
            os._exit(127)
    output = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), output.decode("utf-8", "replace")


def fake_pager(tmp_path: Path, limit: int = 0) -> tuple[str, Path]:
    script = tmp_path / "fake_pager.py"
    script.write_text(FAKE_PAGER, encoding="utf-8")
    out = tmp_path / "paged.txt"
    return f"'{sys.executable}' '{script}' '{out}' {limit}", out


# --- start-up ---------------------------------------------------------------------------------

HEAVY = (
    "rich",
    "dulwich",
    "obstore",
    "pydantic",
    "langgraph",
    "boto3",
    "strands",
    "mcp",
    "starlette",
    "uvicorn",
)


LOADED = """\
import atexit, json, sys
def dump():
    with open(sys.argv.pop(1), "w") as f:
        json.dump(sorted(sys.modules), f)
atexit.register(dump)
from statevcs.cli import main
main(sys.argv[2:])
"""


def loaded(args: list[str], cwd: Path, tmp_path: Path) -> set[str]:
    """The modules a ``statevcs ARGS`` process had loaded when it exited."""
    out = tmp_path / "modules.json"
    result = subprocess.run(
        [sys.executable, "-c", LOADED, str(out), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k not in _CLEAN_ENV},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return set(json.loads(out.read_text(encoding="utf-8")))


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


def test_import_and_version_load_nothing_heavy(small: Path, tmp_path: Path) -> None:
    code = "import sys, statevcs.cli; print(' '.join(sorted(sys.modules)))"
    found = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        ).stdout.split()
    )
    assert heavy(found) == set() and "click" not in found and "statevcs.repo" not in found
    found = loaded(["--version"], small, tmp_path)
    assert heavy(found) == set() and "click" not in found and "statevcs.repo" not in found
    version = run("--version", cwd=small).stdout
    assert version == f"statevcs, version {statevcs.__version__}\n"


def test_log_loads_only_what_it_needs(small: Path, tmp_path: Path) -> None:
    found = loaded(["log", "-n", "10"], small, tmp_path)
    # Piped, log runs on the fast path: the same code as the click command, without click.
    assert "statevcs.cli.reads" in found and "click" not in found
    unwanted = {
        m
        for m in found
        if m.split(".")[0]
        in ("dulwich", "obstore", "langgraph", "mcp", "starlette", "uvicorn", "pydantic")
    }
    # The core reads logs without the Snapshot model; entry points load only for new types.
    unwanted |= {m for m in found if m in ("statevcs.model", "importlib.metadata")}
    unwanted |= {m for m in found if m.startswith(("rich.table", "rich.progress"))}
    unwanted |= {m for m in found if m.startswith(("statevcs.mirror", "statevcs.stores.s3"))}
    unwanted |= {m for m in found if m.startswith("statevcs.cli.commands.") and "history" not in m}
    assert unwanted == set()


def test_opening_a_repository_and_reading_its_log_load_no_pydantic(small: Path) -> None:
    code = (
        "import sys, statevcs\n"
        f"with statevcs.Repo.open({str(small)!r}) as repo:\n"
        "    assert len(list(repo.log('main'))) == 3\n"
        "assert 'pydantic' not in sys.modules, 'log loaded pydantic'\n"
        "with statevcs.Repo.open({!r}) as repo:\n"
        "    snapshot = repo.show('main')\n"
        "from statevcs.snapshot import Snapshot\n"
        "assert type(snapshot) is Snapshot is statevcs.Snapshot\n"
        "assert Snapshot.__module__ == 'statevcs.snapshot'\n"
        "assert repr(Snapshot(kind='k')).startswith('Snapshot(')\n"
    ).replace("{!r}", repr(str(small)))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_package_loads_its_names_on_first_use() -> None:
    code = (
        "import sys, statevcs\n"
        "assert 'statevcs.repo' not in sys.modules\n"
        "from statevcs import Repo, StateVCSError, Snapshot\n"
        "assert Repo.__module__ == 'statevcs.repo'\n"
        "assert set(statevcs.__all__) <= set(dir(statevcs))\n"
        "try:\n    statevcs.Nope\nexcept AttributeError:\n    pass\n"
        "else:\n    raise SystemExit(1)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- the pager ----------------------------------------------------------------------------------


def test_log_and_show_go_through_the_pager_on_a_terminal(small: Path, tmp_path: Path) -> None:
    pager, out = fake_pager(tmp_path)
    for command in (["log"], ["show"]):
        out.unlink(missing_ok=True)
        code, screen = on_terminal(command, small, {"PAGER": pager})
        assert code == 0, screen
        assert "[fake pager read" in screen and "commit " not in screen
        paged = out.read_text(encoding="utf-8")
        assert "commit " in ANSI.sub("", paged)
        assert "\x1b[" in paged  # colors pass through to the pager, as with git and less -R
        assert Path(str(out) + ".env").read_text() == "FRX"


def test_the_pager_is_chosen_like_git() -> None:
    assert pager_command({"STATEVCS_PAGER": "most", "PAGER": "more"}) == "most"
    assert pager_command({"PAGER": "more -s"}) == "more -s"
    assert pager_command({"PAGER": "cat"}) is None and pager_command({"PAGER": ""}) is None
    assert pager_command({"STATEVCS_PAGER": "", "PAGER": "more"}) is None
    assert pager_command({"GIT_PAGER": "delta"}) in ("less", None)


def test_no_pager_when_piped_or_asked(small: Path, tmp_path: Path) -> None:
    pager, out = fake_pager(tmp_path)
    piped = run("log", cwd=small, env={"PAGER": pager})
    assert "commit " in piped.stdout and not out.exists()
    code, screen = on_terminal(["--no-pager", "log"], small, {"PAGER": pager})
    assert code == 0 and "commit " in ANSI.sub("", screen) and not out.exists()
    code, screen = on_terminal(["log"], small, {"PAGER": "cat"})
    assert code == 0 and "commit " in ANSI.sub("", screen)
    code, screen = on_terminal(["branch"], small, {"PAGER": pager})  # not a paged command
    assert code == 0 and "feature" in screen and not out.exists()


def test_quitting_the_pager_early_is_no_error(small: Path, tmp_path: Path) -> None:
    with Repo.open(small) as repo:
        repo.commit(state_of(400, size=2000), "a long conversation")
    pager, out = fake_pager(tmp_path, limit=100)
    code, screen = on_terminal(["show"], small, {"PAGER": pager})
    assert code == 0, screen
    assert "Traceback" not in screen and "error" not in screen
    assert len(out.read_bytes()) == 100


# --- gc frees disk --------------------------------------------------------------------------------


def size_on_disk(path: Path) -> int:
    files = [path / DB_FILENAME, path / (DB_FILENAME + "-wal")]
    return sum(f.stat().st_size for f in files if f.exists())


def test_gc_shrinks_the_file(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    with Repo.init(path) as repo:
        repo.commit(state_of(2), "keep")
        for n in range(20):
            # Random values: nothing dedups, every commit adds ~40 KB.
            repo.commit({**state_of(2), "blob": os.urandom(20_000).hex()}, f"scratch {n}")
        repo.reset("main", "main~20")
    before = size_on_disk(path)
    kept = json.loads(invoke("gc", "--prune=now", "--json", cwd=path).stdout)
    assert kept["deleted"] == 0 and kept["reclaimed_bytes"] == 0  # main's reflog keeps them
    report = json.loads(
        invoke("gc", "--prune=now", "--expire-reflog=now", "--json", cwd=path).stdout
    )
    assert report["deleted"] >= 20 and report["deleted_bytes"] > 400_000
    after = size_on_disk(path)
    assert before - after > 400_000 and report["reclaimed_bytes"] == before - after
    # The file was created without auto_vacuum, as every repository before this one: VACUUM
    # needs no conversion.
    assert invoke("fsck", cwd=path).exit_code == 0
    assert invoke("log", "--oneline", cwd=path).stdout.endswith(" keep\n")
    said = invoke("gc", "--prune=now", cwd=path).stdout
    assert "shrank" not in said  # nothing deleted, nothing to shrink


def test_repo_gc_reports_what_it_reclaimed(tmp_path: Path) -> None:
    with Repo.init(tmp_path / "repo") as repo:
        for n in range(10):
            repo.commit({"blob": os.urandom(30_000).hex()}, f"c{n}")
        repo.reset("main", "main~9")
        report = repo.gc("0", expire_reflog="0")
        # Nine 60,000-character hex strings, stored zstd-compressed (about half their size).
        assert report.deleted >= 9 and report.reclaimed_bytes > 250_000
        assert repo.gc("0", dry_run=True).reclaimed_bytes == 0
    with Repo.init("memory://") as memory:
        memory.commit({"k": 1}, "one")
        memory.commit({"k": 2}, "two")
        memory.reset("main", "main~1")
        assert memory.gc("0", expire_reflog="0").reclaimed_bytes == 0


def test_gc_takes_gits_ages(small: Path) -> None:
    dry = json.loads(
        invoke(
            "gc", "--prune=2.weeks.ago", "--expire-reflog=never", "--dry-run", "--json", cwd=small
        ).stdout
    )
    assert dry["grace_seconds"] == 14 * 86400 and dry["expire_reflog_seconds"] is None
    never = json.loads(invoke("gc", "--prune=never", "--json", cwd=small).stdout)
    assert never["deleted"] == 0
    bad = invoke("gc", "--prune=soon", cwd=small, code=2).stderr
    assert bad.startswith("error: ") and "--prune" in bad and "2.weeks.ago" in bad
    both = invoke("gc", "--prune=now", "--grace=1d", cwd=small, code=2).stderr
    assert "not both" in both


def test_parse_age_reads_approxidates() -> None:
    day = 86400
    assert parse_age("never") is None
    assert parse_age("now") == parse_age("all") == parse_age("0") == parse_age("2w") * 0
    assert parse_age("2.weeks.ago").total_seconds() == 14 * day  # type: ignore[union-attr]
    assert parse_age("3 days ago").total_seconds() == 3 * day  # type: ignore[union-attr]
    assert parse_age("1.month.ago").total_seconds() == 30 * day  # type: ignore[union-attr]
    from datetime import UTC, datetime

    now = datetime(2026, 2, 1, tzinfo=UTC)
    assert parse_age("2026-01-31T00:00:00+00:00", now=now).total_seconds() == day  # type: ignore[union-attr]
    assert parse_age("2027-01-01T00:00:00+00:00", now=now).total_seconds() == 0  # type: ignore[union-attr]
    for bad in ("soon", "2.fortnights.ago", "-1", "2026-13-01", ""):
        with pytest.raises(InvalidDuration, match="not an age"):
            parse_age(bad)
    with pytest.raises(TypeError):
        parse_age(3)  # type: ignore[arg-type]


# --- git's habits --------------------------------------------------------------------------------


def test_switch_dash_goes_back(small: Path) -> None:
    none_yet = invoke("switch", "-", cwd=small, code=1).stderr
    assert none_yet.startswith("error: no previous branch")
    invoke("switch", "feature", cwd=small)
    assert invoke("switch", "-", cwd=small).stdout == "Switched to branch main\n"
    assert invoke("switch", "-", cwd=small).stdout == "Switched to branch feature\n"
    invoke("branch", "-d", "main", cwd=small)
    gone = invoke("switch", "-", cwd=small, code=1).stderr
    assert gone.startswith("error: no previous branch")


def test_status_says_where_things_stand(small: Path) -> None:
    out = invoke("status", cwd=small).stdout.splitlines()
    assert out[0] == "On branch main"
    assert "(HEAD -> main, feature) turn 3" in out[1]
    assert out[2] == "1 other branch: feature" and out[3] == "nothing for gc to delete"
    invoke("reset", "main", "main~2", cwd=small)
    invoke("branch", "-d", "feature", cwd=small)
    data = json.loads(invoke("status", "--json", cwd=small).stdout)
    assert data["branch"] == "main" and not data["detached"] and data["branches"] == 1
    assert data["gc"]["would_delete"] == 0  # the reflog still keeps the commits reset left


def test_status_of_an_empty_repository(tmp_path: Path) -> None:
    invoke("init", tmp_path / "r")
    out = invoke("status", cwd=tmp_path / "r").stdout
    assert out.startswith("On branch main\nNo commits yet on main")


def test_branch_v_and_diff_without_arguments(small: Path) -> None:
    assert invoke("branch", "-v", cwd=small).stdout == invoke("branch", cwd=small).stdout
    assert invoke("branch", "-vv", cwd=small).stdout == invoke("branch", cwd=small).stdout
    last = invoke("diff", cwd=small).stdout
    assert last == invoke("diff", "HEAD~1", "HEAD", cwd=small).stdout
    assert last.startswith("diff HEAD~1 (")
    with Repo.init(small.parent / "one") as repo:
        repo.commit(state_of(1), "first")
    first = invoke("diff", cwd=small.parent / "one", code=1).stderr
    assert "first commit" in first and "`statevcs show HEAD`" in first


def test_log_graph_all_labels_every_tip(small: Path) -> None:
    with Repo.open(small) as repo:
        repo.branch("thread", "main~2")
        agent = state_of(1)
        repo.checkout(agent, "thread")
        side = repo.commit(agent, "thread tip")
        repo.refs.set("refs/langgraph/heads/thread-1", bytes.fromhex(side.id))
        repo.delete_branch("thread")
    out = invoke("log", "--graph", "--all", "--oneline", cwd=small).stdout
    tip = next(line for line in out.splitlines() if "thread tip" in line)
    assert "(refs/langgraph/heads/thread-1)" in tip
    data = json.loads(invoke("log", "--all", "--json", cwd=small).stdout)
    assert ["refs/langgraph/heads/thread-1"] in [c["refs"] for c in data]


def test_show_counts_in_the_singular(tmp_path: Path) -> None:
    with Repo.init(tmp_path / "r") as repo:
        repo.commit({"messages": [{"role": "user", "content": "hi"}], "k": 1}, "one")
    out = invoke("show", cwd=tmp_path / "r").stdout
    assert "1 message  ·  1 state key" in out and "1 messages" not in out


def test_stats_explains_a_ratio_below_one(tmp_path: Path) -> None:
    with Repo.init(tmp_path / "r") as repo:
        repo.commit({"k": 1}, "one")
        ratio = repo.stats().dedup_ratio
    out = invoke("stats", cwd=tmp_path / "r").stdout
    assert ratio < 1 and "a ratio below 1" in out


# --- suggested commands ------------------------------------------------------------------------


def test_suggested_commands_are_shell_quoted() -> None:
    url = "s3://b/p?endpoint_url=http://127.0.0.1:8333&region=us-east-1"
    assert suggest("init", url) == f"`statevcs init '{url}'`"
    assert suggest("log", "main") == "`statevcs log main`"
    assert suggest("tag", "-f", "v 1", then="REV") == "`statevcs tag -f 'v 1' REV`"


def test_a_suggested_path_with_a_space_pastes_as_one_argument(tmp_path: Path) -> None:
    missing = tmp_path / "my repo"
    error = invoke("--repo", missing, "log", code=1).stderr
    assert f"`statevcs init '{missing}'`" in error
    invoke("init", missing)
    again = invoke("init", missing, code=1).stderr
    assert f"`statevcs -C '{missing}' log`" in again


def test_a_suggested_url_never_shows_its_secret(tmp_path: Path) -> None:
    url = "s3://b/p?endpoint_url=http://127.0.0.1:1&secret_access_key=hunter2"
    error = invoke("--repo", url, "log", code=1).stderr
    assert "hunter2" not in error


# --- a newcomer's session, on a terminal --------------------------------------------------------


def test_a_newcomers_session(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    pager, paged = fake_pager(tmp_path)
    code, screen = on_terminal(["init", str(folder)], tmp_path, {})
    assert code == 0 and "Initialized empty statevcs repository" in screen
    with Repo.open(folder) as repo:  # commit from Python, as an agent does
        agent: dict[str, Any] = {"messages": []}
        for n in range(6):
            agent["messages"].append({"role": "user", "content": f"question {n}"})
            agent["scratch"] = os.urandom(30_000).hex()
            repo.commit(agent, f"turn {n}")
        repo.branch("idea", "main~3")
    code, screen = on_terminal(["--no-pager", "log", "--graph", "--oneline"], folder, {})
    assert code == 0 and "(HEAD -> main) turn 5" in ANSI.sub("", screen)
    code, screen = on_terminal(["show"], folder, {"PAGER": pager})
    assert code == 0 and "[fake pager read" in screen
    assert "question 5" in paged.read_text(encoding="utf-8")
    before = size_on_disk(folder)
    invoke("reset", "main", "main~4", cwd=folder)
    code, screen = on_terminal(["gc", "--prune=now", "--expire-reflog=now"], folder, {})
    assert code == 0 and "the repository shrank by" in screen, screen
    assert size_on_disk(folder) < before - 60_000
    code, screen = on_terminal(["status"], folder, {})
    assert code == 0 and "On branch main" in ANSI.sub("", screen)
    # The git mirror, with its progress bar drawn on the terminal (stderr) and then cleared.
    code, screen = on_terminal(["export-git", str(tmp_path / "mirror.git")], folder, {})
    plain = ANSI.sub("", screen)
    assert code == 0 and "exported 3 new commits" in plain, screen
    assert "exporting commits" in plain and "3/3" in plain, screen
    assert "\x1b[?25l" in screen  # rich hid the cursor while the bar was live
    with Repo.init(tmp_path / "copy") as copy, Repo.open(folder) as original:
        import_git(copy, tmp_path / "mirror.git")
        assert copy.show("idea") == original.show("idea")


# --- small design debt ------------------------------------------------------------------------


def test_the_registry_and_the_s3_store_import_no_cycle() -> None:
    stores = Path(statevcs.__file__).parent / "stores"

    def imports(name: str) -> set[str]:
        tree = ast.parse((stores / f"{name}.py").read_text(encoding="utf-8"))
        return {
            node.module or ""
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1
        }

    assert "registry" not in imports("s3") and "s3" not in imports("locations")
    assert "registry" not in imports("locations") and "locations" in imports("s3")


def test_the_cli_and_the_mirror_share_one_json_mapping_of_scalars() -> None:
    from statevcs.cli.rendering import to_plain
    from statevcs.documents import json_scalar
    from statevcs.mirror.git.jsonmap import from_json, to_json

    values = [math.nan, math.inf, -math.inf, b"\x00\xff", bytearray(b"ab"), 1.5, None, True, 7, "s"]
    for value in values:
        assert to_plain(value) == to_json(value) == json_scalar(value)
        back = from_json(to_json([value]))[0]
        assert back == value or (math.isnan(back) and math.isnan(value))


# --- the two disagreements with git ------------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="the git CLI is not installed")
def test_a_branch_named_at_sign_git_makes_and_statevcs_refuses(tmp_path: Path) -> None:
    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, text=True, timeout=60
        )

    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one")
    assert git("branch", "@").returncode == 0
    assert git("rev-parse", "--verify", "-q", "refs/heads/@").returncode == 0
    with Repo.init("memory://") as repo:
        repo.commit({"k": 1}, "one")
        for make in (repo.branch, repo.tag):
            with pytest.raises(statevcs.InvalidRefName, match="'@' alone is reserved"):
                make("@")
        assert repo.branches() == {"main": repo.resolve("HEAD")} and repo.tags() == {}
    assert "A branch or tag named `@` is refused" in (DOCS / "revisions.md").read_text()


def test_head_at_n_while_a_handle_is_elsewhere(tmp_path: Path) -> None:
    with Repo.init(tmp_path / "r") as repo:
        first = repo.commit({"k": 1}, "one")
        repo.commit({"k": 2}, "two")
        repo.branch("x", "main~1")
        repo.checkout({}, "x")
        assert repo.resolve("HEAD@{0}") == first.id  # the handle's HEAD
        assert repo.resolve("HEAD@{1}") == repo.reflog("HEAD")[1].new  # the stored HEAD's log
    out = invoke("reflog", cwd=tmp_path / "r").stdout  # the command line reads the stored one
    assert out.splitlines()[0].split()[1] == "HEAD@{0}:"


def test_gc_that_cannot_shrink_still_reports_what_it_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from statevcs.errors import StoreError
    from statevcs.gc import GCWarning
    from statevcs.stores.sqlite import SQLiteStore

    def full_disk(self: SQLiteStore) -> int:
        raise StoreError("gc deleted the objects but could not shrink it: database or disk is full")

    with Repo.init(tmp_path / "r") as repo:
        repo.commit({"k": 1}, "one")
        repo.commit({"k": 2}, "two")
        repo.reset("main", "main~1")
        monkeypatch.setattr(SQLiteStore, "reclaim_space", full_disk)
        with pytest.warns(GCWarning, match="disk is full"):
            report = repo.gc("0", expire_reflog="0")
        assert report.deleted > 0 and report.reclaimed_bytes == 0
        assert repo.fsck().ok


# --- small things a newcomer saw ------------------------------------------------------------------


def test_the_quickstart_prints_its_diff_once(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, str(root / "examples" / "quickstart.py"), str(tmp_path / "h")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert out.count("diff main cheaper") == 1 and "\n$ diff main cheaper\n  messages:" in out


def test_bench_core_quick_prints_each_window_once() -> None:
    import importlib.util

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("bench_core", root / "benchmarks/bench_core.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.windows(100) == [(1, 10), (90, 100)]
    assert module.windows(1000) == [(1, 10), (90, 100), (990, 1000)]
