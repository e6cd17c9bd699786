"""examples/langgraph_quickstart.py runs offline and shows what it claims."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

import statevcs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_langgraph_quickstart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main = runpy.run_path(str(EXAMPLES / "langgraph_quickstart.py"))["main"]
    main(tmp_path / "history")
    out = capsys.readouterr().out
    assert "thread 'trip': 9 checkpoints" in out
    assert "4 messages, turns=2" in out
    assert "Answer 11: you asked 'Porto instead?'" in out
    assert "(threads/trip, threads/trip-copy) loop step" in out
    assert "|/" in out  # the fork and the replay branch off the graph
    with statevcs.Repo.open(tmp_path / "history") as repo:
        branches = repo.branches()
        assert branches["threads/trip"] == branches["threads/trip-copy"]
        assert repo.fsck().ok
