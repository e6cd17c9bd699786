"""The Strands examples run offline and show what they claim."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

import statevcs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _main(name: str) -> object:
    return runpy.run_path(str(EXAMPLES / name))["main"]


def test_quickstart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _main("strands_quickstart.py")(tmp_path / "history")  # type: ignore[operator]
    out = capsys.readouterr().out
    assert "repo.checkout(agent, 'main~3')" in out
    assert "on 'cheaper'" in out
    assert "dedup ratio" in out
    with statevcs.Repo.open(tmp_path / "history") as repo:
        assert set(repo.branches()) == {"main", "cheaper", "session-42"}
        assert repo.stats().dedup_ratio > 5
        assert repo.diff("main", "cheaper").messages.common_prefix == 56


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
