"""The examples run offline, show what they claim, and leave an inspectable repository behind."""

from __future__ import annotations

import re
import runpy
import shlex
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import statevcs
from statevcs.cli import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _main(name: str) -> object:
    return runpy.run_path(str(EXAMPLES / name))["main"]


def test_quickstart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _main("strands_quickstart.py")(tmp_path / "history")  # type: ignore[operator]
    out = capsys.readouterr().out
    assert "repo.checkout(agent, 'main~3')" in out
    assert "on 'cheaper'" in out
    assert "dedup ratio" in out
    assert "and state {'booked': False}" in out  # set after the last call, committed on close
    with statevcs.Repo.open(tmp_path / "history") as repo:
        assert set(repo.branches()) == {"main", "cheaper", "session-42"}
        assert repo.stats().dedup_ratio > 5
        assert repo.diff("main", "cheaper").messages.common_prefix == 56
        assert [c.message for c in repo.log("session-42")] == [
            "turn 1: close",
            "turn 1",
            "start session",
        ]


def test_branching(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _main("strands_branching.py")(tmp_path / "history")  # type: ignore[operator]
    out = capsys.readouterr().out
    assert "common prefix 12" in out
    with statevcs.Repo.open(tmp_path / "history") as repo:
        assert set(repo.branches()) == {"main", "exp/budget", "exp/luxury", "exp/family"}
        budgets = {name: repo.show(f"exp/{name}").state["budget_eur"] for name in ("budget",)}
        assert budgets == {"budget": 600}
        for name in ("budget", "luxury", "family"):
            assert repo.diff("main", f"exp/{name}").messages.common_prefix == 12


def test_eval_fork(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _main("eval_fork.py")(tmp_path / "history")  # type: ignore[operator]
    out = capsys.readouterr().out
    assert "-> exp/terse: turns [6, 7, 8]" in out
    assert "turns [6, 7, 8] diverged" in out
    assert "only B: weather" in out
    added = [int(n.replace(",", "")) for n in re.findall(r"added ([\d,]+) bytes", out)]
    with statevcs.Repo.open(tmp_path / "history") as repo:
        assert set(repo.branches()) == {"main", "exp/terse", "exp/thorough"}
        fifth = repo.resolve("main~3")
        assert repo.merge_base("exp/terse", "exp/thorough") == fifth
        for branch in ("exp/terse", "exp/thorough"):
            assert repo.get_commit(branch).metadata["replay"]["source"] == repo.resolve("main")
        stats = repo.stats()
        assert len(added) == 2 and sum(added) < stats.bytes_stored
    result = CliRunner().invoke(
        cli, ["-C", str(tmp_path / "history"), "compare", "main", "exp/terse"]
    )
    assert result.exit_code == 0 and "3 turns differ (first: turn 6)" in result.output


@pytest.mark.parametrize(
    ("script", "branch"),
    [
        ("quickstart.py", "main"),
        ("strands_quickstart.py", "session-42"),
        ("strands_branching.py", "exp/budget"),
        ("branching_demo.py", "review"),
        ("eval_fork.py", "exp/terse"),
    ],
)
def test_an_example_without_arguments_keeps_its_repository_in_a_temp_folder(
    script: str,
    branch: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    temp, work = tmp_path / "temp", tmp_path / "work"
    temp.mkdir()
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "argv", [script])
    try:
        runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    except SystemExit as done:
        assert done.code in (0, None)
    out = capsys.readouterr().out

    assert list(work.iterdir()) == []  # nothing written where it was run from
    command = re.search(r"statevcs -C (.+) log --graph", out)
    assert command is not None, out
    folder = Path(shlex.split(command.group(1))[0])
    assert folder.is_relative_to(temp)
    assert folder.name in ("history", "demo-repo")
    assert folder.parent.name.startswith("statevcs-")
    result = CliRunner().invoke(cli, ["-C", str(folder), "log", "--graph", "--oneline"])
    assert result.exit_code == 0, result.output
    assert re.search(rf"[( ]{re.escape(branch)}[),]", result.output), result.output
